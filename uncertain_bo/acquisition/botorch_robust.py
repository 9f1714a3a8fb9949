r"""``botorch_robust``: the robust BO loop a BoTorch user would write (a baseline, real BoTorch code).

Each decision after the planner's initial design (the explorer's own, so comparisons are paired):

1. a ``SingleTaskGP`` on the **localisation means** :math:`\hat{\mathbf x}_t` of the readings (what a BoTorch
   user has; BoTorch takes training inputs as exact, so per-reading pose covariances are not used) scaled to
   the unit square, outcomes standardised (``Standardize``), BoTorch's default priors, fitted with
   ``fit_gpytorch_mll``;
2. an ``InputPerturbation`` input transform whose perturbation set is ``n_w = 32`` draws of the
   execution-noise model :math:`\hat P_{\mathbf x}` (scrambled Sobol normal samples times
   :math:`\hat\Sigma^{1/2}` for Gaussian noise), without ``bounds`` so perturbed points are not clamped;
3. ``qLogNoisyExpectedImprovement`` with the ``Expectation(n_w)`` risk measure as objective, i.e. expected
   improvement of the robust objective :math:`\mathbb E[f(\mathbf x + \boldsymbol\xi)]`;
4. ``optimize_acqf`` (``q = 1``) with the planner's optimiser settings (by default 10 restarts, 512 raw samples).

The recommendation is the measured place (a past reading's location mean, where its model has the reading) whose
risk-measure posterior mean (the posterior mean averaged over the perturbation set) is largest.

Randomness (Sobol scrambling, MC base samples, raw samples, fit retries) is seeded from the planner's seed
and the step, so runs are reproducible. Tensors live on the device and dtype of the planner's bounds.
"""
from __future__ import annotations

import contextlib
import logging

import torch
from botorch.exceptions.warnings import BadInitialCandidatesWarning, InputDataWarning, OptimizationWarning
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from ..caught_warnings import logged_warnings
from ..models.target_model import perturbation_set
from ..seeds import decision_seed
from .method import DecisionContext, Method, Recommendation, register

__all__ = ['BoTorchRobust']

N_W = 32

log = logging.getLogger(__name__)


@register
class BoTorchRobust(Method):
    """SingleTaskGP + InputPerturbation + Expectation + qLogNEI (see the module docstring); the planner's
    initial design first, as for every method.

    Args:
        n_w: size of the perturbation set.
        num_restarts, raw_samples: ``optimize_acqf`` settings that replace the planner's ``optimizer`` ones (None:
            the planner's, as for every method; its ``maxiter`` too).

    Example:
        The robust loop's first decision (the method examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('botorch_robust', measurements=4,
        ...                                         settings=BenchSettings.quick(beta=2.0))
        >>> target, (lower, upper) = planner.targets[-1], planner.bounds
        >>> planner.decisions[-1].phase, target.shape, bool(((lower <= target) & (target <= upper)).all())
        ('acquisition', torch.Size([2]), True)
    """

    name = 'botorch_robust'
    description = ("baseline: BoTorch's robust BO (SingleTaskGP on localisation means + InputPerturbation + "
                   'Expectation risk measure + qLogNEI via optimize_acqf)')
    baseline = True
    fantasize_pending = False       # its own model; qLogNEI takes the pending targets (X_pending)
    unit_inputs = True              # its model and qLogNEI work on the unit cube of the search box

    def __init__(self, n_w: int = N_W, num_restarts: int | None = None, raw_samples: int | None = None):
        self.n_w, self.num_restarts, self.raw_samples = n_w, num_restarts, raw_samples
        self._cache: tuple[int, object, Tensor] | None = None  # (n, model, unit inputs)

    def _model(self, ctx: DecisionContext):
        """The fitted model on the planner's ``n`` observations (one fit per ``n``: the recommendation after
        measurement ``n`` and the decision of target ``n + 1`` share it). Seeded from the seed and ``n``."""
        n = len(ctx.y)
        if self._cache is not None and self._cache[0] == n:
            return self._cache[1], self._cache[2]
        bounds = ctx.bounds
        seed = decision_seed(ctx.run_seed, n)
        with torch.random.fork_rng(devices=[bounds.device] if bounds.is_cuda else []):
            torch.manual_seed(seed)
            model, x = self._fit(ctx, seed)
        self._cache = (n, model, x)
        return model, x

    def _fit(self, ctx: DecisionContext, seed: int):
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms.input import InputPerturbation
        from botorch.models.transforms.outcome import Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        bounds = ctx.bounds
        span = bounds[1] - bounds[0]
        x = ((ctx.locations.mean.to(bounds) - bounds[0]) / span)
        y = ctx.y.to(bounds).reshape(-1, 1)
        xi = perturbation_set(ctx.execution_noise, self.n_w, seed, at=bounds.mean(0), like=bounds)   # at the box centre
        tf = InputPerturbation(xi / span)           # unit-cube units, as the model's inputs
        # routine: BoTorch's data checks on the perturbed inputs, L-BFGS-B at its cap, jitter in a Cholesky
        with logged_warnings(log, InputDataWarning, OptimizationWarning, NumericalWarning):
            model = SingleTaskGP(x, y, outcome_transform=Standardize(m=1), input_transform=tf)
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return model, x

    def decision_scope(self, ctx: DecisionContext):
        """qLogNEI's baseline samples, its MC sampler and ``optimize_acqf`` draw from one stream seeded with the
        decision's seed; BoTorch's routine warnings are logged."""
        bounds = ctx.bounds
        scope = contextlib.ExitStack()
        scope.enter_context(torch.random.fork_rng(devices=[bounds.device] if bounds.is_cuda else []))
        torch.manual_seed(ctx.seed)
        scope.enter_context(logged_warnings(log, RuntimeWarning, level=logging.INFO))
        scope.enter_context(logged_warnings(log, OptimizationWarning, BadInitialCandidatesWarning, NumericalWarning))
        return scope

    def acquisition(self, ctx: DecisionContext):
        """qLogNEI of the ``Expectation`` risk measure on the fitted model, over the unit cube of ``ctx.bounds``
        (:attr:`unit_inputs`); pending targets are its ``X_pending``."""
        from botorch.acquisition.logei import qLogNoisyExpectedImprovement
        from botorch.acquisition.risk_measures import Expectation

        bounds = ctx.bounds
        model, x = self._model(ctx)
        pending = None if ctx.pending is None else (ctx.pending.to(bounds) - bounds[0]) / (bounds[1] - bounds[0])
        # the baseline's posterior samples (prune_baseline) need a Cholesky too: inside the decision scope
        return qLogNoisyExpectedImprovement(model, X_baseline=x, objective=Expectation(n_w=self.n_w),
                                            prune_baseline=True, X_pending=pending)

    def maximize(self, acq, ctx: DecisionContext) -> tuple[Tensor, float]:
        """``optimize_acqf`` over the unit cube (``q = 1``), mapped back into ``ctx.bounds``."""
        from botorch.optim import optimize_acqf

        bounds = ctx.bounds
        unit = torch.stack([torch.zeros_like(bounds[0]), torch.ones_like(bounds[0])])
        opt = ctx.optimizer
        cand, value = optimize_acqf(acq, bounds=unit, q=1, num_restarts=self.num_restarts or opt.num_restarts,
                                    raw_samples=self.raw_samples or opt.raw_samples,
                                    options={'seed': ctx.seed, 'maxiter': opt.maxiter})
        target = bounds[0] + cand.detach().reshape(-1) * (bounds[1] - bounds[0])
        return torch.minimum(torch.maximum(target, bounds[0]), bounds[1]), float(value)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        if rule is not None:
            return None  # the caller asked for one of the planner's rules
        bounds = ctx.bounds
        places = ctx.places.to(bounds)
        if len(places) == 1:
            return ctx.measured_recommendation(0, float(ctx.y[0]), float('nan'))
        model, _ = self._model(ctx)
        unit_places = (places - bounds[0]) / (bounds[1] - bounds[0])
        model.eval()
        with torch.no_grad():
            post = model.posterior(unit_places.unsqueeze(-2))  # n x 1 x d -> n x n_w perturbed points
            mean = post.mean.reshape(len(places), -1).mean(-1)
            var = post.variance.reshape(len(places), -1).mean(-1)  # mean variance over the set (a summary)
        i = int(torch.argmax(mean))
        return ctx.measured_recommendation(i, float(mean[i]), float(var[i].clamp_min(0).sqrt()))

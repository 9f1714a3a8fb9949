r"""Distributionally robust Bayesian quadrature optimisation (DRBQO) and its Bayesian-quadrature baselines
(Nguyen, Gupta, Ha, Rana & Venkatesh, AISTATS 2020).

The problem: maximise :math:`\mathbb E_{P_0}[f(\mathbf x, w)]` when :math:`P_0` is known only through ``n``
fixed samples :math:`S_n = \{w_i\}` and :math:`f` may be evaluated only on :math:`\mathcal X \times S_n`. All
methods here share one GP on the joint space (the planner's GP on Dirac inputs at the commanded
:math:`(\mathbf x, w)`; the expected SE kernel on points is the SE-ARD kernel of the paper, fitted by marginal
likelihood per the planner's schedule) and decide in the joint space: the planner's bounds are
:math:`\mathcal X \times \operatorname{box}(S_n)`, the last ``m`` coordinates are the context. Settings
(``Planner(method_settings=...)``; the quadrature benchmarks pass them):

- ``contexts``: ``(n, m)`` the samples :math:`S_n` (required);
- ``rho``: radius ρ ≥ 0 of the χ² ambiguity set (:mod:`uncertain_bo.acquisition.ambiguity`; default 1);
- ``n_features``: random Fourier features of the Thompson sample's prior part (default 1000, the authors' code);
- ``random_context``: choose :math:`w_t` uniformly from :math:`S_n` (the paper's RandW ablation, Fig. 5).

================== ===================================================== ====================================
method             :math:`\mathbf x_t`                                    recommendation over past
                                                                          :math:`\mathbf x`
================== ===================================================== ====================================
``drbqo``          :math:`\arg\max_{\mathbf x}\min_{p\in\mathcal P_{n,\rho}} :math:`\max\min_p \sum_i p_i
                   \sum_i p_i\tilde f_t(\mathbf x, w_i)` (Alg. 1)          \mu_t(\mathbf x, w_i)`
``emp_drbqo``      as ``drbqo``                                           empirical mean of :math:`\mu_t`
``bqo_ts``         :math:`\arg\max \frac1n\sum_i\tilde f_t(\mathbf x, w_i)` empirical mean
``maximin_bqo_ts`` as ``bqo_ts``                                          :math:`\max\min_p` as ``drbqo``
``bqo_ei``         EI on :math:`g(f, \mathbf x, \hat P_n)` (Eqs. 5-6)     empirical mean
``maximin_bqo_ei`` as ``bqo_ei``                                          :math:`\max\min_p`
``mtbo``           EI on :math:`g(f, \mathbf x, \hat P_n)` with a         empirical mean
                   multi-task (ICM) kernel (Swersky et al. 2013;
                   :mod:`~uncertain_bo.acquisition.mtbo`)
================== ===================================================== ====================================

**Context.** :math:`w_t = \arg\max_{w \in S_n} \sigma^2_{t-1}(\mathbf x_t, w)` (Alg. 1 line 4; the theory's
choice), uniformly at random for the ``*_randw`` variants, and for ``mtbo`` the task with the highest
single-task EI at :math:`\mathbf x_t` (incumbent: the best reading).

**EI** (the authors' code): :math:`s\,(u\Phi(u) + \varphi(u))`, :math:`u = (m - \tau - \xi)/s`, with the
incumbent :math:`\tau = \max_{\mathbf x \in \mathbf x_{1:t}} \mu_t(\mathbf x, \hat P_n)` and
:math:`\xi = 0.1 \times` the range of the readings (0.1 on the code's min-max-normalised outputs).

**Initial design.** The planner's space-filling design for :math:`\mathbf x`; the context of initial point ``i``
is drawn uniformly from :math:`S_n` by a stream seeded with (run seed, ``i``), so every method with the same
seed starts from the same points.

**On the rover** (``drbqo`` without ``contexts``). A rover cannot choose its perturbation, but its execution
noise is known only through samples: the offsets :math:`\mathbf e_i = \hat{\mathbf x}_i - \mathbf x_i` between
where it ended up (the location estimate's mean) and the commanded targets. DRBQO then chooses the target
:math:`\mathbf x_t = \arg\max_{\mathbf x} \min_{p \in \mathcal P_{n,\rho}} \sum_i p_i \tilde f_t(\mathbf x +
\mathbf e_i)` with a posterior sample path of the shared GP on location distributions, and recommends the past
target maximising the same worst case of the posterior mean. It never reads the configured execution-noise
model, so a wrong ``execution_noise_std`` does not mislead it. **The paper's regret bound (Theorem 2) does not
carry over**: it rests on choosing :math:`w_t` by maximum posterior variance, and a rover cannot choose its
execution error; the offsets also mix controller error with localisation error.

Not implemented from the authors' code: ε-greedy exploration (ε = 0.1) and re-fitting with 100 restarts.
The paper's regret bound (Theorem 2) assumes :math:`w_t` is chosen by maximum variance; the RandW variants have
no such guarantee.
"""
from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import ExpectedImprovement
from botorch.acquisition.objective import PosteriorTransform
from botorch.exceptions.warnings import NumericsWarning
from botorch.models.transforms.input import AppendFeatures
from botorch.posteriors.gpytorch import GPyTorchPosterior
from botorch.utils.transforms import t_batch_mode_transform
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from .ambiguity import worst_case_mean, worst_case_weights
from ..caught_warnings import logged_warnings
from ..kernels import se_kernel
from ..models import TargetModel
from ..models.sample_paths import PosteriorSamplePaths
from .optimize import maximize
from .base import incumbent
from .method import DecisionContext, Method, Proposal, Recommendation, register

__all__ = ['QuadratureMethod', 'DistributionallyRobustThompson', 'QuadratureMean', 'quadrature_expected_improvement',
           'joint_points', 'path_on_contexts', 'EIQuadrature']

log = logging.getLogger(__name__)


def joint_points(x: Tensor, contexts: Tensor) -> Tensor:
    """The points :math:`(\\mathbf x_j, w_i)`: ``x`` ``(b, d)``, ``contexts`` ``(n, m)`` -> ``(b, n, d + m)``."""
    b, n = x.shape[0], contexts.shape[0]
    return torch.cat([x.unsqueeze(-2).expand(b, n, -1), contexts.to(x).unsqueeze(0).expand(b, n, -1)], -1)


def path_on_contexts(paths: PosteriorSamplePaths, x: Tensor, contexts: Tensor) -> Tensor:
    """:math:`\\tilde f(\\mathbf x_j, w_i)` of one sample path for decision parts ``x`` ``(b, d)`` and ``contexts``
    ``(n, m)`` (the last ``m`` coordinates) -> ``(b, n)``: the values of ``paths.at_points(joint_points(x, contexts))``
    with the context half of the random features and of the squared distances computed once (training inputs that
    are points; otherwise the joint points themselves)."""
    if not paths.points_only:
        return paths.at_points(joint_points(x, contexts))[..., 0]
    d = x.shape[-1]
    lo, hi = paths.model.bounds
    span = hi - lo
    w, b, ell = paths.features.w, paths.features.b, paths.ell
    ux = (x - lo[:d]) / span[:d]
    uw = (contexts.to(x) - lo[d:]) / span[d:]
    arg = (ux @ w[:, :d].T).unsqueeze(-2) + (uw @ w[:, d:].T + b).unsqueeze(0)
    prior = torch.cos(arg) @ (paths.features.amplitude * paths.theta[:, 0])          # (b, n)
    train = paths.train.mean / ell
    k = (se_kernel(ux / ell[:d], train[:, :d]).unsqueeze(-2)                        # SE: a product over
         * se_kernel(uw / ell[d:], train[:, d:]).unsqueeze(0))                      # the axes, (b, n, N)
    return paths._output(prior + paths.outputscale * k @ paths.weights[:, 0])


class DistributionallyRobustThompson(AcquisitionFunction):
    """:math:`\\tilde h_t(\\mathbf x) = \\min_{p \\in \\mathcal P_{n,\\rho}} \\sum_i p_i \\tilde f_t(\\mathbf x, w_i)`
    (Alg. 1 line 3; ρ = 0: BQO-TS's :math:`\\frac1n \\sum_i \\tilde f_t(\\mathbf x, w_i)`).

    Args:
        model: the GP (BoTorch bookkeeping only).
        paths: one posterior sample path :math:`\\tilde f_t` on the joint space.
        contexts: ``(n, m)`` samples.
        rho: ambiguity radius.

    Example:
        The worst case of a sample path that ``drbqo`` maximises over the decision part :math:`\\mathbf x` (after
        three measurements, the method examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('drbqo', measurements=3,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        ('DistributionallyRobustThompson', torch.Size([5]))
    """

    def __init__(self, model, paths: PosteriorSamplePaths, contexts: Tensor, rho: float):
        super().__init__(model=model)
        self.paths, self.contexts, self.rho = paths, contexts, rho

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """``X`` ``(b, 1, d)`` decision parts -> ``(b,)``."""
        values = path_on_contexts(self.paths, X.reshape(-1, X.shape[-1]), self.contexts)
        return worst_case_mean(values, self.rho).reshape(X.shape[:-2])


class QuadratureMean(PosteriorTransform):
    """The empirical quadrature :math:`g(f, \\mathbf x, \\hat P_n) = \\frac1n\\sum_i f(\\mathbf x, w_i)` of a joint
    posterior over ``q`` groups of ``n`` points (each candidate with its ``n`` contexts appended, BoTorch's
    ``AppendFeatures``): mean :math:`\\frac1n\\sum_i \\mu_t(\\mathbf x, w_i)`, covariance
    :math:`\\frac1{n^2}\\sum_{i,j} C_t(\\mathbf x, w_i; \\mathbf x', w_j)` (paper Eqs. 5-6 with :math:`p = \\frac1n`).

    Args:
        n: points per group (the number of contexts).

    Example:
        Two candidates, each with its ``n = 2`` contexts:

        >>> import torch
        >>> Y = torch.tensor([[1.0], [3.0], [10.0], [20.0]])            # f(x_1, w_1), f(x_1, w_2), f(x_2, w_1), ...
        >>> QuadratureMean(n=2).evaluate(Y)
        tensor([ 2., 15.])
    """

    scalarize = True

    def __init__(self, n: int):
        super().__init__()
        self.n = int(n)

    def evaluate(self, Y: Tensor, X: Tensor | None = None) -> Tensor:
        """Outcomes ``batch x q n x 1`` -> ``batch x q``."""
        return Y.squeeze(-1).unflatten(-1, (-1, self.n)).mean(-1)

    def forward(self, posterior: GPyTorchPosterior, X: Tensor | None = None) -> GPyTorchPosterior:
        mvn = posterior.distribution
        mean = self.evaluate(mvn.mean.unsqueeze(-1))
        cov = mvn.covariance_matrix
        cov = cov.unflatten(-1, (-1, self.n)).mean(-1).unflatten(-2, (-1, self.n)).mean(-2)
        return GPyTorchPosterior(MultivariateNormal(mean, DenseLinearOperator(cov)))


def quadrature_expected_improvement(model, contexts: Tensor, best: Tensor | float, xi: float) -> ExpectedImprovement:
    """BoTorch's ``ExpectedImprovement`` of the empirical quadrature (:class:`QuadratureMean`) over the decision
    parts ``x`` (each joined with every context), with the authors' incumbent :math:`\\tau + \\xi`:
    :math:`s(u\\Phi(u) + \\varphi(u))`, :math:`u = (m - \\tau - \\xi)/s`."""
    view = TargetModel(model, perturbation=AppendFeatures(feature_set=contexts))
    with logged_warnings(log, NumericsWarning):    # EI, not log-EI: the authors' acquisition and its values
        return ExpectedImprovement(view, best_f=incumbent(best, contexts) + xi,
                                   posterior_transform=QuadratureMean(contexts.shape[0]))


class QuadratureMethod(Method):
    """Base of the quadrature methods (module docstring): joint-space decisions, context choice and the
    recommendation over past decision points.

    Raises:
        TypeError: ``contexts`` missing or not ``(n, m)``, ``rho`` negative, unknown settings.

    Example:
        The samples :math:`S_n` are required; the joint box has the context coordinates last:

        >>> import torch
        >>> BQOTS()
        Traceback (most recent call last):
        ...
        TypeError: method 'bqo_ts' needs the sample set: method_settings contexts=(n, m) samples
        >>> BQOTS(contexts=torch.rand(10, 2), rho=0.5).split(torch.zeros(2, 5))    # (x, w) in 3 + 2 dimensions
        3
    """

    inputs: ClassVar[str] = 'target'
    robust_candidates: ClassVar[bool] = False
    #: ρ of the decision rule: the method's ρ (True) or 0 (BQO)
    robust_decision: ClassVar[bool] = True
    #: ρ of the recommendation: the method's ρ (True) or 0, the empirical mean
    robust_recommendation: ClassVar[bool] = True
    #: the default of the ``random_context`` setting
    random_context_default: ClassVar[bool] = False
    #: whether the method needs ``contexts`` (DRBQO without them works on the execution-noise offsets)
    needs_contexts: ClassVar[bool] = True

    def __init__(self, contexts: Any = None, rho: float = 1.0, n_features: int = 1000,
                 random_context: bool | None = None, **settings: Any):
        super().__init__(**settings)
        if not (isinstance(rho, (int, float)) and not isinstance(rho, bool) and 0 <= rho < math.inf):
            raise TypeError(f'rho must be a number >= 0, got {rho!r}')
        if contexts is None:
            if self.needs_contexts:
                raise TypeError(f'method {self.name!r} needs the sample set: method_settings contexts=(n, m) samples')
        else:
            contexts = torch.as_tensor(contexts)
            if contexts.ndim != 2 or contexts.shape[0] < 1 or not torch.isfinite(contexts).all():
                raise TypeError(f'contexts must be finite (n, m) samples, got shape {tuple(contexts.shape)}')
        self.contexts = contexts
        self.rho = float(rho)
        self.n_features = int(n_features)
        self.random_context = self.random_context_default if random_context is None else bool(random_context)

    # ------------------------------------------------------------------ helpers
    def split(self, bounds: Tensor) -> int:
        """Number ``d`` of decision coordinates of a ``(2, d + m)`` joint box.

        Raises:
            ValueError: the box has no room for the ``m`` context coordinates.
        """
        d = bounds.shape[-1] - self.contexts.shape[1]
        if d < 1:
            raise ValueError(f'method {self.name!r}: the search box ({bounds.shape[-1]}-D) must be the joint '
                             f'(x, w) space with {self.contexts.shape[1]} context coordinates last')
        return d

    def _generator(self, bounds: Tensor, *keys: int) -> torch.Generator:
        seed = 0
        for k in keys:
            seed = (seed * 1_000_003 + int(k)) % (2 ** 63)
        return torch.Generator(device=bounds.device).manual_seed(seed)

    def _contexts(self, like: Tensor) -> Tensor:
        return self.contexts.to(like)

    def choose_x(self, ctx: DecisionContext, d: int) -> tuple[Tensor, float]:
        """Maximise :meth:`acquisition` over the decision box, less the travel cost over the decision coordinates
        (:meth:`~uncertain_bo.acquisition.Method.travel_aware`)."""
        acq = self.travel_aware(self.acquisition(ctx), ctx, dims=d)
        return maximize(acq, ctx.bounds[:, :d], ctx.optimizer, seed=ctx.seed)

    def choose_context(self, ctx: DecisionContext, x: Tensor) -> int:
        """Index of :math:`w_t`: highest posterior variance at :math:`(\\mathbf x_t, w)` (Alg. 1 line 4), or
        uniform with ``random_context``."""
        contexts = self._contexts(ctx.bounds)
        if self.random_context:
            gen = self._generator(ctx.bounds, ctx.seed, 7)
            return int(torch.randint(contexts.shape[0], (1,), generator=gen, device=ctx.bounds.device))
        model = ctx.model  # (fitted outside no_grad)
        with torch.no_grad():
            _, var = model.marginals(joint_points(x.reshape(1, -1), contexts)[0])
        return int(torch.argmax(var))

    # ------------------------------------------------------------------ protocol
    def decide_one(self, ctx: DecisionContext) -> Proposal:
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        if ctx.index < ctx.n_initial:
            gen = self._generator(ctx.bounds, ctx.run_seed, ctx.index, 3)
            j = int(torch.randint(contexts.shape[0], (1,), generator=gen, device=ctx.bounds.device))
            return Proposal(torch.cat([ctx.initial_design[ctx.index][:d], contexts[j]]), 'initial')
        x, value = self.choose_x(ctx, d)
        j = self.choose_context(ctx, x)
        return Proposal(torch.cat([x.to(contexts), contexts[j]]), 'acquisition', value)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        """:math:`\\hat{\\mathbf x}_t = \\arg\\max_{\\mathbf x \\in \\mathbf x_{1:t}} \\min_{p}
        \\sum_i p_i \\mu_t(\\mathbf x, w_i)` (ρ = 0 for the empirical-mean rule) over the places measured
        (:attr:`~uncertain_bo.acquisition.DecisionContext.places`), as that place (with the context it was measured
        at); None when the caller asks for a planner rule."""
        if rule is not None:
            return None
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        rho = self.rho if self.robust_recommendation else 0.0
        model = ctx.model  # a due hyperparameter fit needs autograd: read it outside no_grad
        with torch.no_grad():
            post = model.posterior(joint_points(ctx.places[:, :d].to(contexts), contexts))
            mean, cov = post.mean.squeeze(-1), post.distribution.covariance_matrix
            p = worst_case_weights(mean, rho)
            score = (p * mean).sum(-1)
            i = int(torch.argmax(score))
            var = (p[i] @ cov[i] @ p[i]).clamp_min(0)
        return ctx.measured_recommendation(i, float(score[i]), float(var.sqrt()))


class ThompsonQuadrature(QuadratureMethod):
    """:math:`\\mathbf x_t` by a posterior sample path and the (DR) quadrature of it.

    Example:
        BQO-TS's acquisition: the sample path's mean over the samples (ρ = 0) (after three measurements, the method
        examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ts', measurements=3,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq.rho
        ('DistributionallyRobustThompson', 0.0)
    """

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        gen = self._generator(ctx.bounds, ctx.seed, 5)
        paths = PosteriorSamplePaths(model, 1, self.n_features, gen)
        return DistributionallyRobustThompson(model, paths, self._contexts(ctx.bounds),
                                              self.rho if self.robust_decision else 0.0)


class EIQuadrature(QuadratureMethod):
    """:math:`\\mathbf x_t` by EI on the empirical quadrature (no ρ in the decision).

    Example:
        BQO-EI's acquisition: BoTorch's EI on the empirical quadrature (after three measurements, the method
        examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ei', measurements=3,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, type(acq.posterior_transform).__name__
        ('ExpectedImprovement', 'QuadratureMean')
    """

    robust_decision = False

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        with torch.no_grad():
            mean = model.posterior(joint_points(ctx.targets[:, :d].to(contexts), contexts)).mean.squeeze(-1)
        y = ctx.y
        xi = 0.1 * float(y.max() - y.min()) if y.numel() > 1 else 0.0
        return quadrature_expected_improvement(model, contexts, mean.mean(-1).max(), xi)


class OffsetRobustThompson(AcquisitionFunction):
    """:math:`\\min_{p \\in \\mathcal P_{n,\\rho}} \\sum_i p_i \\tilde f_t(\\mathbf x + \\mathbf e_i)` over the observed
    execution offsets :math:`\\mathbf e_i` (DRBQO on the rover; module docstring).

    Args:
        model: the GP (BoTorch bookkeeping only).
        paths: one posterior sample path :math:`\\tilde f_t` (evaluated at points).
        offsets: ``(n, d)`` offsets between where the rover ended up and its targets.
        rho: ambiguity radius.

    Example:
        DRBQO without ``contexts`` (the rover's: the paper's 2-D RKHS problem gives none) scores targets by the
        worst case over the observed execution offsets (after three measurements, the method examples' set-up of
        :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('drbqo', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq.offsets.shape, acq(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        ('OffsetRobustThompson', torch.Size([3, 2]), torch.Size([5]))
    """

    def __init__(self, model, paths: PosteriorSamplePaths, offsets: Tensor, rho: float):
        super().__init__(model=model)
        self.paths, self.offsets, self.rho = paths, offsets, rho

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        """``X`` ``(b, 1, d)`` targets -> ``(b,)``."""
        x = X.reshape(-1, X.shape[-1])
        values = self.paths.at_points(x.unsqueeze(-2) + self.offsets.to(x))[..., 0]
        return worst_case_mean(values, self.rho).reshape(X.shape[:-2])


def execution_offsets(ctx: DecisionContext) -> Tensor:
    """``(n, d)`` offsets :math:`\\hat{\\mathbf x}_i - \\mathbf x_i` between the location estimates' means and the
    commanded targets of the past measurements (goal timeouts included: the context does not tell them apart)."""
    return (ctx.locations.mean.to(ctx.targets) - ctx.targets).detach()


@register
class DRBQO(ThompsonQuadrature):
    """DRBQO (Algorithm 1). Without ``contexts`` (the rover): the samples are the execution offsets observed so
    far and the method decides only the target (module docstring, "On the rover").

    Example:
        DRBQO's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('drbqo', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'drbqo'
    description = ('DRBQO: Thompson sample on the joint GP, worst case over the chi-square ball of radius rho around '
                   'the empirical distribution of the samples (Nguyen et al. 2020, Alg. 1); on the rover the samples '
                   'are the observed execution offsets')
    inputs = 'gaussian'        # points in the quadrature problems (their locations are Diracs), EKF poses on the rover
    needs_contexts = False

    def decide_one(self, ctx: DecisionContext) -> Proposal:
        if self.contexts is None:   # initial design, then the acquisition's maximiser (travel cost included)
            return Method.decide_one(self, ctx)
        return super().decide_one(ctx)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        if self.contexts is not None:
            return super().acquisition(ctx)
        model = ctx.model
        gen = self._generator(ctx.bounds, ctx.seed, 5)
        paths = PosteriorSamplePaths(model, 1, self.n_features, gen)
        return OffsetRobustThompson(model, paths, execution_offsets(ctx), self.rho)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        if self.contexts is not None or rule is not None:
            return super().recommend(ctx, rule)
        model = ctx.model
        offsets = execution_offsets(ctx)
        with torch.no_grad():
            points = ctx.places.to(offsets).unsqueeze(-2) + offsets.unsqueeze(0)          # (N, n, d)
            post = model.posterior(points)
            mean, cov = post.mean.squeeze(-1), post.distribution.covariance_matrix
            p = worst_case_weights(mean, self.rho)
            score = (p * mean).sum(-1)
            i = int(torch.argmax(score))
            var = (p[i] @ cov[i] @ p[i]).clamp_min(0)
        return ctx.measured_recommendation(i, float(score[i]), float(var.sqrt()))


@register
class EmpDRBQO(ThompsonQuadrature):
    """Emp-DRBQO: DRBQO decisions, recommendation by the empirical mean (Nguyen et al. 2020, §6).

    Example:
        EmpDRBQO's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('emp_drbqo', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'emp_drbqo'
    description = 'Emp-DRBQO: DRBQO decisions, recommendation by the empirical mean (Nguyen et al. 2020, §6)'
    robust_recommendation = False


@register
class BQOTS(ThompsonQuadrature):
    """BQO-TS: Thompson sample of the empirical quadrature, empirical-mean recommendation (Nguyen et al. 2020).

    Example:
        BQOTS's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ts', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'bqo_ts'
    description = ('BQO-TS: Thompson sample of the empirical quadrature, empirical-mean recommendation '
                   '(Nguyen et al. 2020)')
    robust_decision = False
    robust_recommendation = False


@register
class MaximinBQOTS(ThompsonQuadrature):
    """Maximin-BQO-TS: BQO-TS decisions, max-min (rho) recommendation (Nguyen et al. 2020).

    Example:
        MaximinBQOTS's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('maximin_bqo_ts', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'maximin_bqo_ts'
    description = 'Maximin-BQO-TS: BQO-TS decisions, max-min (rho) recommendation (Nguyen et al. 2020)'
    robust_decision = False


@register
class BQOEI(EIQuadrature):
    """BQO-EI: EI on the empirical quadrature of the joint GP, empirical-mean recommendation (Nguyen et al. 2020).

    Example:
        BQOEI's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ei', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'bqo_ei'
    description = ('BQO-EI: EI on the empirical quadrature of the joint GP, empirical-mean recommendation '
                   '(Nguyen et al. 2020)')
    robust_recommendation = False


@register
class MaximinBQOEI(EIQuadrature):
    """Maximin-BQO-EI: BQO-EI decisions, max-min (rho) recommendation (Nguyen et al. 2020).

    Example:
        MaximinBQOEI's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('maximin_bqo_ei', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'maximin_bqo_ei'
    description = 'Maximin-BQO-EI: BQO-EI decisions, max-min (rho) recommendation (Nguyen et al. 2020)'


@register
class DRBQORandW(DRBQO):
    """DRBQO with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5).

    Example:
        DRBQORandW's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('drbqo_randw', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'drbqo_randw'
    description = 'DRBQO with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True


@register
class BQOTSRandW(BQOTS):
    """BQO-TS with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5).

    Example:
        BQOTSRandW's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ts_randw', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'bqo_ts_randw'
    description = 'BQO-TS with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True


@register
class BQOEIRandW(BQOEI):
    """BQO-EI with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5).

    Example:
        BQOEIRandW's first decision on DRBQO's Beale problem, a point and a context (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-beale').planner('bqo_ei_randw', measurements=4,
        ...                                              settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, w): w is one of the samples S_n
        >>> samples = planner.method_object.contexts
        >>> planner.decisions[-1].phase, target.shape, bool((samples == target[2:]).all(-1).any())
        ('acquisition', torch.Size([4]), True)
    """

    name = 'bqo_ei_randw'
    description = 'BQO-EI with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True

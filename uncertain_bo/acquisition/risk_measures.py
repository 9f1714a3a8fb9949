r"""``ugp_risk``: BoTorch's risk measures over the execution noise, on the shared GP over location distributions.

The robust objective of uGP-UCB is the expectation :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]`. A
rover that must not end up in a bad spot may rather want a **risk measure** of :math:`f(\mathbf x + \boldsymbol\xi)`:
the value at risk :math:`\mathrm{VaR}_\alpha` (the :math:`(1-\alpha)`-quantile from below) or the conditional value at
risk :math:`\mathrm{CVaR}_\alpha` (the mean below it) (Cakmak et al. 2020, "Bayesian optimization of risk measures",
NeurIPS). Each decision after the planner's initial design:

1. the perturbation set: ``n_w`` draws of the execution noise :math:`\hat P_{\mathbf x} - \mathbf x` (scrambled Sobol
   normal samples times :math:`\hat\Sigma^{1/2}` for Gaussian noise; :func:`~uncertain_bo.models.target_model.
   perturbation_set`), seeded per decision;
2. the shared :class:`~uncertain_bo.models.DistributionGP` — trained on the location distributions (EKF poses with
   their covariances, reading variances, en-route readings) — seen over targets through BoTorch's
   ``InputPerturbation`` (:class:`~uncertain_bo.models.TargetModel`): the joint posterior of :math:`f` at the
   ``n_w`` perturbed points of each target;
3. BoTorch's ``qLogExpectedImprovement`` with the risk measure as objective (BoTorch's ``Expectation`` or ``VaR``, or
   :class:`EmpiricalCVaR`, the CVaR of exactly the worst :math:`1 - \alpha` share, over the ``n_w`` points), the
   incumbent the best risk measure of the posterior mean at a past target (the plug-in incumbent for noisy readings),
   pending targets as ``X_pending``;
4. the planner's maximiser.

It recommends the measured place (a past reading's location mean) whose risk measure of the posterior mean over the
perturbation set is largest.
(BoTorch's ``qLogNoisyExpectedImprovement``, which integrates over the incumbent instead, needs its cached-root path
for a one-to-many input transform, and that path needs a ``GPyTorchModel``'s internals; its other path splits the
perturbed samples on the wrong dimension in BoTorch 0.18. ``qLogNoisyExpectedImprovement`` on the model without a
perturbation works: the tests run it.)

**Why a method next to ``botorch_robust``, not a replacement of its model.** ``botorch_robust`` is the baseline
"what a BoTorch user would do": a ``SingleTaskGP`` on the localisation means, which drops the location covariances,
the reading variances and the en-route readings. Running it on the shared model would make it this method and
leave no baseline for that user; so the baseline stays as it is, and this method is the same BoTorch machinery on
the model that holds the location distributions.
"""
from __future__ import annotations

import logging
import math
from typing import ClassVar

import torch
from botorch.acquisition.logei import qLogExpectedImprovement
from botorch.acquisition.risk_measures import CVaR, Expectation, RiskMeasureMCObjective, VaR
from botorch.models.transforms.input import InputPerturbation
from torch import Tensor

from ..models import TargetModel
from ..models.target_model import perturbation_set
from ..seeds import decision_seed
from .base import incumbent
from .method import DecisionContext, Method, Recommendation, register

__all__ = ['RISK_MEASURES', 'risk_measure', 'EmpiricalCVaR', 'RiskMeasureLogEI']

log = logging.getLogger(__name__)

#: risk measures over the ``n_w`` perturbed points (BoTorch's ``botorch.acquisition.risk_measures``)
RISK_MEASURES = {
    'expectation': 'the mean of f over the perturbation set (the robust objective g, by Monte Carlo)',
    'cvar': 'CVaR_alpha: the mean of the worst (1 - alpha) share of f over the perturbation set (the draw on the '
            'share\'s boundary weighted by its fraction: EmpiricalCVaR)',
    'var': 'VaR_alpha: the (1 - alpha)-quantile from below of f over the perturbation set',
}


class EmpiricalCVaR(CVaR):
    r""":math:`\mathrm{CVaR}_\alpha` of the ``n_w`` equally weighted perturbed values: the mean of their worst
    :math:`t = (1 - \alpha) n_w` draws, the draw on the boundary weighted by the fractional part of :math:`t`
    (the CVaR of the empirical distribution, :math:`\sup_z \{z - \mathbb E[(z - Y)^+]/(1 - \alpha)\}`, Rockafellar
    & Uryasev 2002). So :math:`\alpha = 0.8` is the worst 20 % for any ``n_w``; BoTorch's ``CVaR`` averages
    :math:`n_w - \lceil \alpha n_w \rceil + 1` whole draws, the worst 4 of 16 (25 %) at :math:`\alpha = 0.8`.
    :math:`\alpha = 1` is the minimum.

    Example:
        >>> import torch
        >>> values = torch.arange(1.0, 17.0).reshape(1, 16, 1)           # 16 draws of one target
        >>> round(float(EmpiricalCVaR(alpha=0.8, n_w=16)(values)), 9)    # (1 + 2 + 3 + 0.2 * 4) / 3.2
        2.125
    """

    def forward(self, samples: Tensor, X: Tensor | None = None) -> Tensor:
        """``sample_shape x batch_shape x q`` CVaR of ``sample_shape x batch_shape x (q * n_w) x 1`` samples (each
        ``n_w`` block one target's perturbed values), as BoTorch's ``CVaR.forward``."""
        prepared = self._prepare_samples(samples)
        tail = (1.0 - self.alpha) * self.n_w
        if tail <= 0:
            return prepared.min(dim=-1).values
        k = min(math.ceil(tail), self.n_w)
        worst = torch.topk(prepared, k=k, largest=False, dim=-1).values
        weights = torch.ones(k, dtype=worst.dtype, device=worst.device)
        weights[-1] = tail - (k - 1)
        return (worst * weights).sum(-1) / tail


def risk_measure(name: str, n_w: int, alpha: float) -> RiskMeasureMCObjective:
    """The BoTorch objective :data:`RISK_MEASURES` names.

    Raises:
        ValueError: an unknown name, or ``alpha`` outside (0, 1] for CVaR and VaR.
    """
    if name == 'expectation':
        return Expectation(n_w=n_w)
    if name not in RISK_MEASURES:
        raise ValueError(f'unknown risk measure {name!r}; known: {", ".join(RISK_MEASURES)}')
    if not 0 < alpha <= 1:
        raise ValueError(f'alpha must be in (0, 1], got {alpha}')
    return (EmpiricalCVaR if name == 'cvar' else VaR)(alpha=alpha, n_w=n_w)


@register
class RiskMeasureLogEI(Method):
    """qLogEI of a risk measure over the execution noise on the shared model (module docstring).

    Args:
        risk: a key of :data:`RISK_MEASURES` (default ``'cvar'``).
        alpha: the risk level of CVaR and VaR (default 0.8: the worst 20 % of the executed positions).
        n_w: size of the perturbation set (default 16).

    Example:
        The first decision by the CVaR of the worst 20 % (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_risk', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> target, (lower, upper) = planner.targets[-1], planner.bounds
        >>> planner.decisions[-1].phase, target.shape, bool(((lower <= target) & (target <= upper)).all())
        ('acquisition', torch.Size([2]), True)
    """

    name = 'ugp_risk'
    description = ("BoTorch's qLogEI of a risk measure (setting risk: cvar (default), var, expectation; alpha 0.8; "
                   'n_w 16) over the execution noise, on the GP over location distributions')
    inputs: ClassVar[str] = 'gaussian'
    robust_candidates: ClassVar[bool] = True
    fantasize_pending: ClassVar[bool] = False       # qLogEI takes the pending targets jointly (X_pending)

    def __init__(self, risk: str = 'cvar', alpha: float = 0.8, n_w: int = 16):
        self.objective = risk_measure(risk, int(n_w), float(alpha))
        self.risk, self.alpha, self.n_w = risk, float(alpha), int(n_w)

    def view(self, ctx: DecisionContext, seed: int) -> TargetModel:
        """The shared model over targets, each replaced by the perturbation set drawn from ``seed``."""
        xi = perturbation_set(ctx.execution_noise, self.n_w, seed, at=ctx.bounds.mean(0), like=ctx.bounds)
        return TargetModel(ctx.model, perturbation=InputPerturbation(xi))

    def scores(self, view: TargetModel, targets: Tensor) -> Tensor:
        """``(N,)`` the risk measure of the posterior mean over the perturbation set at each target ``(N, d)``."""
        with torch.no_grad():
            mean = view.posterior(targets.unsqueeze(-2)).mean           # (N, n_w, 1)
            return self.objective(mean.unsqueeze(0)).reshape(-1)        # the mean as one "sample"

    def acquisition(self, ctx: DecisionContext) -> qLogExpectedImprovement:
        view = self.view(ctx, ctx.seed)
        best = incumbent(self.scores(view, ctx.targets.to(ctx.bounds)).max(), ctx.bounds)
        with torch.random.fork_rng(devices=[ctx.bounds.device] if ctx.bounds.is_cuda else []):
            torch.manual_seed(ctx.seed)          # the MC sampler's seed comes from the global stream
            return qLogExpectedImprovement(view, best_f=best, objective=self.objective, X_pending=ctx.pending)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        """The measured place (:attr:`~uncertain_bo.acquisition.DecisionContext.places`) with the largest risk
        measure of the posterior mean over a perturbation set (seeded by the measurement count), with the posterior
        standard deviation of the robust objective there; None when the caller asks for a planner rule."""
        if rule is not None:
            return None
        places = ctx.places.to(ctx.bounds)
        score = self.scores(self.view(ctx, decision_seed(ctx.run_seed, len(places))), places)
        i = int(torch.argmax(score))
        with torch.no_grad():
            _, var = ctx.model.marginals(ctx.candidates(places[i:i + 1]))
        return ctx.measured_recommendation(i, float(score[i]), float(var[0].sqrt()))

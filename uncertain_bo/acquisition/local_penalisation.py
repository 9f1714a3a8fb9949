r"""Local penalisation (González, Dai, Hennig & Lawrence, AISTATS 2016, "Batch Bayesian optimization via local
penalization") over uGP-UCB's robust objective: a batch rule that decides with pending targets without fantasies.

The robust objective is :math:`g(\mathbf x) = \mathbb E_{\hat P_{\mathbf x}} f`, the field averaged over the
execution-noise model around the target; the shared model's posterior of it at :math:`\hat P_{\mathbf x}` has mean
:math:`\hat\mu(\hat P_{\mathbf x})` and standard deviation :math:`\hat\sigma(\hat P_{\mathbf x})` (the posterior
uGP-UCB scores). Each pending target :math:`\mathbf x_j` (another rover's, or an earlier pick of a batch) penalises
the ball where, if :math:`g` is :math:`L`-Lipschitz and :math:`M` is its maximum, no maximiser can lie
(paper §3, Eq. 3 and Lemma 1):

.. math::
    \varphi(\mathbf x; \mathbf x_j) = \tfrac12\operatorname{erfc}(-z), \qquad
    z = \frac{L\lVert\mathbf x_j - \mathbf x\rVert - M + \hat\mu(\hat P_{\mathbf x_j})}
             {\sqrt{2\hat\sigma^2(\hat P_{\mathbf x_j})}},

and the next target maximises the soft-plus transformed acquisition times the penalisers (paper Eq. 5 with
:math:`g(\alpha) = \log(1 + e^\alpha)`, §3.3):

.. math::
    \tilde\alpha(\mathbf x) = \log\big(1 + e^{\alpha(\mathbf x)}\big)\prod_j \varphi(\mathbf x; \mathbf x_j),
    \qquad \alpha(\mathbf x) = \hat\mu(\hat P_{\mathbf x}) + \beta_t\hat\sigma(\hat P_{\mathbf x})
    \text{ (uGP-UCB).}

As in the paper (§3.2), :math:`L = \max_{\mathbf x}\lVert\nabla\hat\mu(\hat P_{\mathbf x})\rVert` over the search
box, estimated here by autograd at ``n_lipschitz`` scrambled Sobol points (field units per metre), and :math:`M` is
the largest posterior mean of the robust objective at the past targets, :math:`\max_t\hat\mu(\hat P_{\mathbf x_t})`
(the quantity the planner's default recommendation maximises). Both are computed on the shared model without any
pending target: local penalisation takes the pending targets itself (:attr:`LocalPenalisation.fantasize_pending` is
False), so the model is never conditioned on hallucinated readings. With no pending target (one rover, ``q = 1``)
:math:`\tilde\alpha` is a monotone transform of uGP-UCB's score and decides as uGP-UCB does.
"""
from __future__ import annotations

import math
from typing import Any, Callable, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor
from torch.nn.functional import softplus

from ..distributions import LocationDistributions
from ..planning.initial_design import sobol_points
from ..models import DistributionGP
from .base import TargetAcquisition
from .method import DecisionContext, UCBMethod, register
from .ucb import TargetUpperConfidenceBound

__all__ = ['local_penaliser', 'lipschitz_constant', 'LocallyPenalisedUCB', 'LocalPenalisation']


def local_penaliser(targets: Tensor, centres: Tensor, mean: Tensor, std: Tensor, lipschitz: float,
                    best: float) -> Tensor:
    r"""The penaliser :math:`\varphi(\mathbf x; \mathbf x_j) = \tfrac12\operatorname{erfc}(-z_j)` of each target
    for each centre (González et al. 2016, Eq. 3; module docstring), computed as :math:`\Phi(\sqrt2 z_j)`.

    Args:
        targets: ``(N, d)`` candidate targets :math:`\mathbf x` (m).
        centres: ``(p, d)`` pending targets :math:`\mathbf x_j` (m).
        mean, std: ``(p,)`` posterior mean and standard deviation of the objective at the centres (field units).
        lipschitz: :math:`L \ge 0` (field units per metre).
        best: :math:`M` (field units).

    Returns:
        ``(N, p)`` values in [0, 1]: near 0 in the ball of radius :math:`(M - \hat\mu_j)/L` around a centre, 1/2 on its
        edge, towards 1 far away.

    Raises:
        ValueError: negative ``lipschitz`` or a non-positive ``std``.
    """
    if not lipschitz >= 0:
        raise ValueError(f'the Lipschitz constant must be >= 0, got {lipschitz}')
    if not bool((std > 0).all()):
        raise ValueError(f'the posterior standard deviations at the pending targets must be > 0, got {std.tolist()}')
    dist = torch.cdist(targets, centres.to(targets))                            # (N, p)
    z = (lipschitz * dist - best + mean.to(targets)) / (math.sqrt(2.0) * std.to(targets))
    return torch.special.ndtr(math.sqrt(2.0) * z)


def lipschitz_constant(model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions], bounds: Tensor,
                       n: int = 512, seed: int = 0) -> float:
    r""":math:`L = \max_{\mathbf x}\lVert\nabla_{\mathbf x}\hat\mu(\hat P_{\mathbf x})\rVert` (González et al. 2016,
    §3.2) over ``n`` scrambled Sobol points of ``bounds`` (the box's corners too), by autograd through the
    candidates' distributions; field units per metre. A flat mean gives a tiny :math:`L` (floored at 1e-12)."""
    lo, hi = bounds[0], bounds[1]
    corners = torch.cartesian_prod(*[torch.tensor([0.0, 1.0], dtype=bounds.dtype)] * bounds.shape[1])
    corners = lo + (hi - lo) * corners.reshape(-1, bounds.shape[1]).to(bounds)
    x = torch.cat([sobol_points(n, bounds, int(seed) % (2 ** 31)), corners]).requires_grad_(True)
    with torch.enable_grad():
        mean, _ = model.marginals(candidates(x))
        (grad,) = torch.autograd.grad(mean.sum(), x)
    return max(float(grad.norm(dim=-1).max()), 1e-12)


class LocallyPenalisedUCB(TargetAcquisition):
    r""":math:`\log(1 + e^{\alpha(\mathbf x)})\prod_j\varphi(\mathbf x; \mathbf x_j)` with :math:`\alpha`
    uGP-UCB's score (module docstring). The pending targets (``X_pending``) are penalised, never fantasised: the
    score's model is the model as it is.

    Args:
        model: the shared GP (fitted).
        candidates: targets ``(q, d)`` -> location distributions (the execution-noise model).
        beta: BoTorch's :math:`\beta \ge 0` (:class:`~uncertain_bo.acquisition.ugp_ucb.TargetUpperConfidenceBound`'s:
            the exploration term is :math:`\sqrt\beta\,\hat\sigma`, so :math:`\beta = \beta_t^2`).
        lipschitz: :math:`L` (field units per metre); best: :math:`M` (field units).
        in_box: uGP-UCB's in-box weighting of the exploration term.
        X_pending: ``(p, d)`` pending targets, or None.

    Raises:
        ValueError: ``beta < 0``, ``lipschitz < 0``.

    Example:
        The acquisition ``ugp_lp`` maximises at its first decision, then with a pending target (after three
        measurements, the method examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_lp', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> x = torch.rand(1, 1, 2, dtype=torch.float64)
        >>> alone = acq(x)
        >>> acq.set_X_pending(x[0])                          # penalised near a pending target
        >>> type(acq).__name__, bool(acq(x) < alone)
        ('LocallyPenalisedUCB', True)
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions], beta: float,
                 lipschitz: float, best: float, in_box: bool = False, X_pending: Tensor | None = None):
        if not lipschitz >= 0:
            raise ValueError(f'the Lipschitz constant must be >= 0, got {lipschitz}')
        self.lipschitz, self.best = float(lipschitz), float(best)
        AcquisitionFunction.__init__(self, model=model)
        self.candidates = candidates
        self.ucb = TargetUpperConfidenceBound(model, candidates, beta, in_box=in_box)
        self.beta = self.ucb.beta
        self.set_X_pending(X_pending)

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Set (or clear) the pending targets ``(p, d)`` and the robust posterior at them (no fantasy)."""
        self.scoring_model = self.model
        if X_pending is None or len(X_pending) == 0:
            self.X_pending = self.pending_mean = self.pending_std = None
            return
        self.X_pending = X_pending.detach().reshape(-1, X_pending.shape[-1])
        with torch.no_grad():
            mean, var = self.model.marginals(self.candidates(self.X_pending))
        self.pending_mean, self.pending_std = mean, var.sqrt()

    def penalty(self, targets: Tensor) -> Tensor:
        """:math:`\\prod_j\\varphi(\\mathbf x; \\mathbf x_j)` ``(N,)`` at ``targets (N, d)`` (1 without pending
        targets)."""
        if self.X_pending is None:
            return torch.ones(targets.shape[0], dtype=targets.dtype, device=targets.device)
        return local_penaliser(targets, self.X_pending, self.pending_mean, self.pending_std, self.lipschitz,
                               self.best).prod(-1)

    def score(self, targets: Tensor) -> Tensor:
        return softplus(self.ucb.score(targets)) * self.penalty(targets)


@register
class LocalPenalisation(UCBMethod):
    """uGP-UCB whose pending targets are locally penalised (module docstring), not fantasised.

    Args:
        n_lipschitz: Sobol points at which the gradient norm of the robust posterior mean is evaluated for
            :math:`L` (default 512).

    Raises:
        TypeError: unknown settings. ValueError: ``n_lipschitz < 1``.

    Example:
        The first decision (one target: uGP-UCB's) (the method examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_lp', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> target, (lower, upper) = planner.targets[-1], planner.bounds
        >>> planner.decisions[-1].phase, target.shape, bool(((lower <= target) & (target <= upper)).all())
        ('acquisition', torch.Size([2]), True)
    """

    name = 'ugp_lp'
    description = ('uGP-UCB deciding with pending targets by local penalisation (González et al. 2016) of the robust '
                   'objective instead of fantasies')
    fantasize_pending: ClassVar[bool] = False

    def __init__(self, n_lipschitz: int = 512, **settings: Any):
        super().__init__(**settings)
        self.n_lipschitz = self.count_setting('n_lipschitz', n_lipschitz)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        beta = ctx.beta(ctx.index, model) ** 2      # the schedule's beta_t weights sigma; BoTorch's is its square
        if ctx.pending is None:
            return LocallyPenalisedUCB(model, ctx.candidates, beta, 0.0, 0.0, ctx.in_box_exploration)
        bounds = ctx.target_bounds.to(model.bounds)
        lipschitz = lipschitz_constant(model, ctx.candidates, bounds, self.n_lipschitz, ctx.seed)
        with torch.no_grad():
            best = float(model.marginals(ctx.candidates(ctx.targets.to(bounds)))[0].max())
        return LocallyPenalisedUCB(model, ctx.candidates, beta, lipschitz, best, ctx.in_box_exploration,
                                   X_pending=ctx.pending.to(bounds))

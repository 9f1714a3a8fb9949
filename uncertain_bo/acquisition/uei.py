r"""UEI: unscented expected improvement (Nogueira et al. 2016), the paper's input-noise-aware EI baseline.

A standard GP on the commanded targets (Dirac inputs; with
:class:`~uncertain_bo.distributions.unscented.UnscentedRBFKernel` that is the plain SE kernel) scores a candidate target
by expected improvement averaged over the sigma points of the execution-noise model :math:`\mathcal N(\mathbf x,
\hat\Sigma)`:

.. math::
    \alpha_{UEI}(\mathbf x) = \sum_{i=0}^{2d} \omega^{(i)}\, \mathrm{EI}(\mathbf x^{(i)}), \qquad
    \mathrm{EI}(\mathbf z) = \sigma(\mathbf z)\,[u \Phi(u) + \varphi(u)], \quad
    u = \frac{\mu(\mathbf z) - \tau}{\sigma(\mathbf z)},

with the incumbent :math:`\tau` = the best posterior mean at the past targets (the plug-in incumbent for
noisy observations; ``max y`` would be biased upward by the input-induced noise). The method recommends
the past target with the best unscented mean :math:`\sum_i \omega^{(i)}\mu(\mathbf x^{(i)})` — which is the
planner's usual recommendation, because the kernel's posterior mean at :math:`\mathcal N(\mathbf x,
\hat\Sigma)` is exactly that sum.
"""
from __future__ import annotations

from typing import Callable

import torch
from botorch.acquisition.analytic import ExpectedImprovement, LogExpectedImprovement
from gpytorch.priors import GammaPrior
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from ..distributions.unscented import UnscentedRBFKernel, sigma_points
from .base import TargetAcquisition, incumbent
from .method import DecisionContext, Method, register

__all__ = ['UnscentedExpectedImprovement', 'UEI']


class UnscentedExpectedImprovement(TargetAcquisition):
    """Expected improvement averaged over the sigma points of each candidate's execution-noise model.

    EI and log-EI at the sigma points are BoTorch's (``ExpectedImprovement``, ``LogExpectedImprovement``) on the
    model's posterior at points; the sigma points and their weighted sum are UEI's.

    Args:
        model: GP trained on point targets.
        candidates: targets ``(q, d)`` -> Gaussian location distributions :math:`\\mathcal N(\\mathbf x,
            \\hat\\Sigma)` (their means and covariances define the sigma points).
        kappa: sigma-point spread κ (``d + κ > 0``).
        best: incumbent τ; default: the best posterior mean at the model's training inputs.

        clip: project sigma points into the model's bounds (as the reference UEI does).
        log: return :math:`\\log \\alpha_{UEI}` (same maximiser, better-conditioned; needs all weights > 0,
            i.e. κ > 0). With ``log=False`` or κ <= 0 the plain weighted sum is returned.

    Example:
        The acquisition ``uei`` maximises at its first decision (after three measurements, the method examples'
        set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('uei', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq.log, acq(torch.rand(5, 1, 2, dtype=torch.float64)).shape      # log-UEI
        ('UnscentedExpectedImprovement', True, torch.Size([5]))
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions],
                 kappa: float = 1.0, best: Tensor | float | None = None, clip: bool = True, log: bool = True):
        super().__init__(model, candidates)
        self.kappa = float(kappa)
        self.clip = clip
        self.log = log and self.kappa > 0
        if best is None:
            with torch.no_grad():
                best = model.marginals(model.train_locations)[0].max()
        self.best = incumbent(best, getattr(model, 'bounds', None))
        # the model's tensor inputs are points: EI of f at each sigma point
        self.ei = (LogExpectedImprovement if self.log else ExpectedImprovement)(model, best_f=self.best)

    def score(self, targets: Tensor) -> Tensor:
        dists = self.candidates(targets)
        pts, w = sigma_points(dists.mean, dists.covariance, self.kappa)  # (q, P, d)
        if self.clip:
            lo, hi = self.model.bounds
            pts = torch.maximum(torch.minimum(pts, hi), lo)
        q, p, d = pts.shape
        ei = self.ei(pts.reshape(q * p, 1, d)).reshape(q, p)
        if self.log:
            return torch.logsumexp(w.log() + ei, dim=-1)
        return (w * ei).sum(-1)


@register
class UEI(Method):
    """UEI on the protocol: a GP on the commanded targets with the unscented kernel, candidates
    :math:`\\hat P_{\\mathbf x}` scored by :class:`UnscentedExpectedImprovement`.

    Args:
        kappa: sigma-point spread :math:`\\kappa` (default 1, the paper's).

    Example:
        UEI's first decision (the method examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('uei', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> target, (lower, upper) = planner.targets[-1], planner.bounds
        >>> planner.decisions[-1].phase, target.shape, bool(((lower <= target) & (target <= upper)).all())
        ('acquisition', torch.Size([2]), True)
    """

    name = 'uei'
    description = ('UEI: EI of a GP on targets averaged over unscented sigma points (Nogueira et al. 2016); '
                   'setting kappa (default 1)')
    inputs = 'target'
    robust_candidates = True

    def __init__(self, kappa: float = 1.0):
        self.kappa = float(kappa)

    def kernel(self, dim: int) -> UnscentedRBFKernel:
        return UnscentedRBFKernel(dim, kappa=self.kappa, lengthscale_prior=GammaPrior(3.0, 6.0))

    def acquisition(self, ctx: DecisionContext) -> UnscentedExpectedImprovement:
        return UnscentedExpectedImprovement(ctx.model, ctx.candidates, self.kappa)

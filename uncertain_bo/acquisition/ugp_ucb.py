r"""uGP-UCB: upper confidence bound over location distributions (Oliveira et al. 2019, Algorithm 1).

.. math::
    \mathbf x_t = \operatorname{argmax}_{\mathbf x \in S}\ \hat\mu_{t-1}(\hat P_{\mathbf x})
    + \beta_t\, \hat\sigma_{t-1}(\hat P_{\mathbf x}),

where :math:`\hat P_{\mathbf x}` is the execution-noise model centred on the candidate target and the GP
is trained on the location estimates :math:`P^L_t`.

**Batches** (``ugp_bucb``): GP-BUCB (Desautels, Krause & Burdick 2014, JMLR 15, Alg. 1 and Eq. 6) over
:math:`\hat P_{\mathbf x}`: the ``q`` targets of a batch are picked one after the other, each by uGP-UCB on the model
conditioned on the earlier picks (and any pending targets) with readings hallucinated at the posterior mean, so
:math:`\hat\mu` is unchanged and :math:`\hat\sigma` shrinks where a pick will measure. It is deterministic, has a
regret bound of the batch size's order (Desautels et al., Thm. 2, with an inflated :math:`\beta_t`; here the planner's
:math:`\beta_t` as it is) and costs one :math:`O(n^2)` fantasy update per pick on the shared model's prediction
strategy. With ``q = 1`` it is uGP-UCB exactly. :meth:`TargetUpperConfidenceBound.joint_score` gives the same batch
value in closed form for a joint maximisation over ``q x d``.

Two other rules for deciding with pending targets are registered beside it: local penalisation of the robust
objective (``ugp_lp``, :mod:`~uncertain_bo.acquisition.local_penalisation`) and pathwise Thompson sampling of it
(``ugp_ts``, :mod:`~uncertain_bo.acquisition.thompson`). Measured on the 3-rover team bench (docs/benchmarks.md,
"Which batch rule": 16 paired seeds on each of three fields), neither is better than fantasies in final regret or in
regret at equal team mission time: local penalisation differs in no comparison (Wilcoxon p >= 0.17); Thompson
sampling's missions are 25-50 % longer in time and distance (p <= 0.015) and its regret at equal time is worse in one
of 12 comparisons (p = 0.011). Fantasies stay the default on those grounds (no measured gain from another rule, no
randomness, the regret bound).
"""
from __future__ import annotations

import math
from typing import Callable, ClassVar

import torch
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from .base import TargetAcquisition
from .method import UCBMethod, register

__all__ = ['TargetUpperConfidenceBound', 'in_box_fraction', 'UGPUCB', 'UGPBUCB']


class TargetUpperConfidenceBound(TargetAcquisition):
    r"""UCB :math:`\hat\mu(P) + \sqrt{\beta}\,\hat\sigma(P)` of the candidate targets' location distributions: BoTorch's
    ``UpperConfidenceBound`` (same ``beta``: it weights :math:`\sigma` by :math:`\sqrt\beta`) over the distributions
    :math:`P` the targets are scored through, with the in-box weighting and the batch value.

    With ``candidates`` = execution-noise model this is uGP-UCB (paper Alg. 1); with Dirac candidates and a
    GP on point targets it is IGP-UCB (Chowdhury & Gopalan 2017). The papers' (and the planner's) :math:`\beta_t`
    multiplies :math:`\sigma`: pass ``beta`` :math:`= \beta_t^2` (the methods do, where they read the schedule).

    A batch ``x_1 .. x_q`` is worth :math:`\sum_j \hat\mu(P_j) + \sqrt\beta\,\hat\sigma(P_j \mid \tilde y_{<j})`,
    each :math:`\hat\sigma` conditioned on hallucinated readings :math:`\tilde y_i` at the earlier picks (GP-BUCB,
    Desautels et al. 2014, Eq. 6), from the joint posterior :math:`C` and the readings' noise :math:`\Lambda`:
    :math:`\hat\sigma^2(P_j \mid \tilde y_{<j}) = L_{jj}^2 - \Lambda_{jj}` with :math:`LL^\top = C + \Lambda`.

    Args:
        model: fitted GP.
        candidates: targets ``(q, d)`` -> location distributions.
        beta: BoTorch's :math:`\beta \ge 0` (the exploration term is :math:`\sqrt\beta\,\hat\sigma`).
        in_box: weight the exploration term by :func:`in_box_fraction`.
        X_pending: ``(p, d)`` pending targets (:class:`~uncertain_bo.acquisition.base.TargetAcquisition`).

    Raises:
        ValueError: ``beta < 0``.

    Example:
        uGP-UCB's score with the papers' :math:`\beta_t = 3` (``beta`` = 9) at three targets:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64))
        >>> gp.set_data(Dirac(X), (3 * X).sin().sum(-1))
        >>> noise = GaussianExecutionNoise(0.01 * torch.eye(2, dtype=torch.float64))
        >>> ucb = TargetUpperConfidenceBound(gp, noise, beta=3.0 ** 2)
        >>> targets = torch.rand(3, 1, 2, dtype=torch.float64)
        >>> mean, var = gp.marginals(noise(targets[:, 0]))
        >>> torch.allclose(ucb(targets), mean + 3.0 * var.sqrt())
        True
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions],
                 beta: float, in_box: bool = False, X_pending: Tensor | None = None):
        super().__init__(model, candidates, X_pending)
        if not beta >= 0:
            raise ValueError(f'beta must be >= 0, got {beta}')
        self.beta = float(beta)
        self.sigma_weight = math.sqrt(self.beta)     # sqrt(b_t ** 2) == b_t exactly in floating point
        self.in_box = in_box

    def score(self, targets: Tensor) -> Tensor:
        mean, var = self.marginals(self.candidates(targets))
        bonus = self.sigma_weight * var.sqrt()
        if self.in_box:
            bonus = bonus * in_box_fraction(self.model, targets)
        return mean + bonus

    def joint_score(self, X: Tensor) -> Tensor:
        model = self.scoring_model
        batch, q, d = X.shape[:-2], X.shape[-2], X.shape[-1]
        dists = self.candidates(X.reshape(-1, d))
        post = model.posterior(dists, batch_shape=batch)
        mean = post.mean.squeeze(-1)                                        # batch x q
        cov = post.distribution.covariance_matrix                           # batch x q x q
        noise = model.noise_at(dists).to(cov).reshape(*batch, q)
        chol = torch.linalg.cholesky(cov + torch.diag_embed(noise))
        var = (chol.diagonal(dim1=-2, dim2=-1).pow(2) - noise).clamp_min(cov.diagonal(dim1=-2, dim2=-1) * 1e-12)
        bonus = self.sigma_weight * var.sqrt()
        if self.in_box:
            bonus = bonus * in_box_fraction(self.model, X.reshape(-1, d)).reshape(*batch, q)
        return (mean + bonus).sum(-1)


def in_box_fraction(model: DistributionGP, targets: Tensor) -> Tensor:
    r"""Share of the kernel's footprint around each target that lies inside the search box,
    :math:`\phi(\mathbf x) = \prod_i [\Phi((u_i - x_i)/\ell_i) - \Phi((l_i - x_i)/\ell_i)]` for an SE kernel
    with lengthscales :math:`\ell_i` on the box :math:`[\mathbf l, \mathbf u]` (1 in the middle, 1/2 on an edge,
    1/4 in a corner of a 2-D box when :math:`\ell` is small).

    Posterior uncertainty grows towards the box edge because data lie on one side only, so UCB's exploration
    term :math:`\beta\hat\sigma` alone sends targets to the edge, where half of what a measurement teaches
    lies outside the area of interest. Weighting the exploration term by :math:`\phi` counts only what is
    learnt inside the box; the mean term is unchanged, so an optimum on the edge stays reachable.

    Args:
        model: the GP (its kernel's lengthscales, in unit-cube units of its bounds).
        targets: ``(q, d)`` targets in physical units.

    Returns:
        ``(q,)`` fractions in (0, 1].
    """
    lo, hi = model.bounds[0], model.bounds[1]
    u = (targets - lo) / (hi - lo)
    ell = model.kernel.lengthscale.reshape(-1).to(u)
    normal = torch.distributions.Normal(torch.zeros((), dtype=u.dtype, device=u.device), 1.0)
    return (normal.cdf((1.0 - u) / ell) - normal.cdf(-u / ell)).prod(-1).clamp_min(1e-12)


@register
class UGPUCB(UCBMethod):
    """uGP-UCB: the GP on the location distributions :math:`P^L_t`, UCB over :math:`\\hat P_{\\mathbf x}`."""

    name = 'ugp_ucb'
    description = ('uGP-UCB: GP over location distributions, UCB over the execution-noise model '
                   '(Oliveira et al. 2019)')


@register
class UGPBUCB(UGPUCB):
    """uGP-UCB deciding ``batch_size`` targets at a time by GP-BUCB (module docstring); the rover visits them along
    the shortest route from where it is (:mod:`uncertain_bo.planning.route`). ``Planner.suggest(q=...)`` decides batches
    of any size with any UCB method; this name makes the batch the default, for the explorer and ``uncertain-bo
    bench``."""

    name = 'ugp_bucb'
    description = ('uGP-UCB in batches of 3 targets by GP-BUCB (hallucinated readings at the posterior mean; '
                   'Desautels et al. 2014); the rover visits each batch along its shortest route')
    batch_size: ClassVar[int] = 3

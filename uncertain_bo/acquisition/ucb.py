"""The UCB acquisition over location distributions that every UCB method decides with
(:class:`TargetUpperConfidenceBound`) and its in-box weighting (:func:`in_box_fraction`).

It lies below :mod:`uncertain_bo.acquisition.method` (whose ``UCBMethod`` builds it) and the registered UCB methods
(:mod:`~uncertain_bo.acquisition.ugp_ucb` and the others); :mod:`~uncertain_bo.acquisition.ugp_ucb`'s docstring
describes the rule and its batches.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from .base import TargetAcquisition

__all__ = ['TargetUpperConfidenceBound', 'in_box_fraction']


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

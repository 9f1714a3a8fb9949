r"""uGP-UCB: upper confidence bound over location distributions (Oliveira et al. 2019, Algorithm 1).

.. math::
    \mathbf x_t = \operatorname{argmax}_{\mathbf x \in S}\ \hat\mu_{t-1}(\hat P_{\mathbf x})
    + \beta_t\, \hat\sigma_{t-1}(\hat P_{\mathbf x}),

where :math:`\hat P_{\mathbf x}` is the execution-noise model centred on the candidate target and the GP
is trained on the location estimates :math:`P^L_t`.
"""
from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from .base import TargetAcquisition
from .method import UCBMethod, register

__all__ = ['UpperConfidenceBound', 'in_box_fraction', 'UGPUCB']


class UpperConfidenceBound(TargetAcquisition):
    r"""UCB :math:`\hat\mu(P) + \beta\,\hat\sigma(P)` of the candidates' location distributions.

    With ``candidates`` = execution-noise model this is uGP-UCB (paper Alg. 1); with Dirac candidates and a
    GP on point targets it is IGP-UCB (Chowdhury & Gopalan 2017).

    Args:
        model: fitted GP.
        candidates: targets ``(q, d)`` -> location distributions.
        beta: :math:`\beta_t \ge 0` (note: BoTorch's ``UpperConfidenceBound(beta=b)`` uses
            :math:`\sqrt b`; here ``beta`` multiplies :math:`\sigma` directly, as in the paper).
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions],
                 beta: float, in_box: bool = False):
        super().__init__(model, candidates)
        if not beta >= 0:
            raise ValueError(f'beta must be >= 0, got {beta}')
        self.beta = float(beta)
        self.in_box = in_box

    def score(self, targets: Tensor) -> Tensor:
        mean, var = self.model.posterior(self.candidates(targets))
        bonus = self.beta * var.sqrt()
        if self.in_box:
            bonus = bonus * in_box_fraction(self.model, targets)
        return mean + bonus


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

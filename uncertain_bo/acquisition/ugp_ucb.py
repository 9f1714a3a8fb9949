r"""uGP-UCB: upper confidence bound over location distributions (Oliveira et al. 2019, Algorithm 1).

.. math::
    \mathbf x_t = \operatorname{argmax}_{\mathbf x \in S}\ \hat\mu_{t-1}(\hat P_{\mathbf x})
    + \beta_t\, \hat\sigma_{t-1}(\hat P_{\mathbf x}),

where :math:`\hat P_{\mathbf x}` is the execution-noise model centred on the candidate target and the GP
is trained on the location estimates :math:`P^L_t`.
"""
from __future__ import annotations

from typing import Callable

from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from .base import TargetAcquisition

__all__ = ['UpperConfidenceBound']


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
                 beta: float):
        super().__init__(model, candidates)
        if not beta >= 0:
            raise ValueError(f'beta must be >= 0, got {beta}')
        self.beta = float(beta)

    def score(self, targets: Tensor) -> Tensor:
        mean, var = self.model.posterior(self.candidates(targets))
        return mean + self.beta * var.sqrt()

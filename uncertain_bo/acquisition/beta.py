r"""Exploration schedules :math:`\beta_t` for UCB-type acquisitions.

- :class:`FixedBeta`: a constant (the paper's experiments §6.2-6.3 use :math:`\beta_t = 3`).
- :class:`TheoryBeta`: Theorem 5 (uGP-UCB) / Theorem 2 (IGP-UCB) of Oliveira et al. 2019,
  :math:`\beta_t = b + \sigma_\nu \sqrt{2(\gamma_{t-1} + 1 + \log(1/\delta))}`, with the current
  information gain :math:`\gamma_{t-1} = \tfrac12\log|I + \lambda^{-1}\hat K_{t-1}|` (Eq. 18).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..models import DistributionGP

__all__ = ['FixedBeta', 'TheoryBeta', 'make_beta']


@dataclass(frozen=True)
class FixedBeta:
    """Constant :math:`\\beta_t`."""

    value: float

    def __call__(self, t: int, model: DistributionGP) -> float:
        return self.value


@dataclass(frozen=True)
class TheoryBeta:
    r""":math:`\beta_t = b + \sigma_\nu\sqrt{2(I_{t-1} + 1 + \log(1/\delta))}` (paper Theorems 2 and 5).

    Attributes:
        b: RKHS norm bound :math:`\|f\|_k \le b`.
        delta: failure probability :math:`\delta \in (0, 1)`.
        sigma_nu: sub-Gaussian parameter of the effective noise; for uGP-UCB with i.i.d. output noise
            :math:`\sigma_\nu = \sigma_\zeta`, for IGP-UCB under input noise
            :math:`\sigma_\nu = \sqrt{\sigma_F^2 + \sigma_\zeta^2}` (Prop. 3).
    """

    b: float
    delta: float
    sigma_nu: float

    def __post_init__(self):
        if not 0 < self.delta < 1:
            raise ValueError(f'delta must be in (0, 1), got {self.delta}')
        if self.b < 0 or self.sigma_nu < 0:
            raise ValueError('b and sigma_nu must be non-negative')

    def __call__(self, t: int, model: DistributionGP) -> float:
        gain = model.information_gain() if model.n else 0.0
        return self.b + self.sigma_nu * math.sqrt(2.0 * (gain + 1.0 + math.log(1.0 / self.delta)))


def make_beta(beta: float | FixedBeta | TheoryBeta):
    """A schedule from a number (fixed) or a schedule object."""
    if isinstance(beta, (FixedBeta, TheoryBeta)):
        return beta
    return FixedBeta(float(beta))

r"""Exploration schedules :math:`\beta_t` for UCB-type acquisitions.

- :class:`FixedBeta`: a constant (the paper's experiments §6.2-6.3 use :math:`\beta_t = 3`).
- :class:`TheoryBeta`: Theorem 5 (uGP-UCB) / Theorem 2 (IGP-UCB) of Oliveira et al. 2019,
  :math:`\beta_t = b + \sigma_\nu \sqrt{2(\gamma_{t-1} + 1 + \log(1/\delta))}`, with the current
  information gain :math:`\gamma_{t-1} = \tfrac12\log|I + \lambda^{-1}\hat K_{t-1}|` (Eq. 18).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from ..models import DistributionGP

__all__ = ['FixedBeta', 'TheoryBeta', 'make_beta', 'se_lipschitz_constant', 'prop3_sigma_f',
           'effective_noise_std']


@dataclass(frozen=True)
class FixedBeta:
    """Constant :math:`\\beta_t`.

    Example:
        >>> beta = FixedBeta(3.0)                 # the paper's experiments, §6.2-6.3
        >>> beta(t=10, model=None)
        3.0
    """

    value: float

    def __call__(self, t: int, model: DistributionGP) -> float:
        return self.value


@dataclass(frozen=True)
class TheoryBeta:
    r""":math:`\beta_t = b + \sigma_\nu\sqrt{2(I_{t-1} + 1 + \log(1/\delta))}` (paper Theorems 2 and 5).

    Attributes:
        b: RKHS norm bound :math:`\|f\|_k \le b`.
        delta: failure probability :math:`\delta \in (0, 1)`.
        sigma_nu: sub-Gaussian parameter of the effective noise: Theorems 2 (IGP-UCB) and 5 (uGP-UCB) both
            take :math:`\sigma_\nu = \sqrt{\sigma_E^2 + \sigma_\zeta^2}`, :math:`\sigma_E` the input-noise
            induced part (Prop. 3, :func:`prop3_sigma_f`) and :math:`\sigma_\zeta` the output noise.

    Example:
        Before any observation the information gain is 0, so
        :math:`\beta_1 = b + \sigma_\nu\sqrt{2(1 + \log(1/\delta))}`:

        >>> import math, torch
        >>> from uncertain_bo.models import DistributionGP
        >>> gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64))
        >>> beta = TheoryBeta(b=2.0, delta=0.1, sigma_nu=0.5)
        >>> round(beta(1, gp), 6) == round(2.0 + 0.5 * math.sqrt(2 * (1 + math.log(10))), 6)
        True
        >>> TheoryBeta(b=2.0, delta=1.5, sigma_nu=0.5)
        Traceback (most recent call last):
        ...
        ValueError: delta must be in (0, 1), got 1.5
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


def se_lipschitz_constant(lengthscale: float | Sequence[float], outputscale: float = 1.0) -> float:
    r""":math:`\ell_k` of Proposition 3 for the SE kernel :math:`\sigma_f^2 \exp(-\tfrac12\|(x - x')/\ell\|^2)`.

    :math:`\partial^2 k / \partial x_i \partial x'_i` at :math:`x = x'` equals :math:`\sigma_f^2/\ell_i^2`, so
    :math:`\ell_k = \sigma_f / \min_i \ell_i`; every :math:`f \in \mathcal H_k` is
    :math:`\|f\|_k \ell_k`-Lipschitz.

    Args:
        lengthscale: scalar or per-axis lengthscales (same units as the covariances used with it).
        outputscale: signal variance :math:`\sigma_f^2`.
    """
    ell = torch.as_tensor(lengthscale, dtype=torch.float64).reshape(-1)
    if (ell <= 0).any() or outputscale <= 0:
        raise ValueError('lengthscale and outputscale must be positive')
    return math.sqrt(outputscale) / float(ell.min())


def prop3_sigma_f(norm_bound: float, covariance: Tensor, *, lengthscale: float | Sequence[float],
                  outputscale: float = 1.0) -> float:
    r"""Sub-Gaussian parameter of :math:`f(\tilde x) - \mathbb E_P[f]` for Gaussian :math:`P` (paper Prop. 3.1).

    .. math:: \sigma_F = \|f\|_k\, \ell_k\, \mathrm{tr}(\Sigma)^{1/2}.

    Args:
        norm_bound: :math:`b \ge \|f\|_k`.
        covariance: ``(d, d)`` covariance :math:`\Sigma` of :math:`P` (e.g. the execution-noise model
            :math:`\hat\Sigma`, or a localisation covariance).
        lengthscale: SE lengthscale(s) in the covariance's units.
        outputscale: signal variance :math:`\sigma_f^2`.
    """
    cov = torch.as_tensor(covariance, dtype=torch.float64)
    return float(norm_bound) * se_lipschitz_constant(lengthscale, outputscale) * math.sqrt(
        float(torch.diagonal(cov, dim1=-2, dim2=-1).sum()))


def effective_noise_std(sigma_zeta: float, sigma_f: float = 0.0) -> float:
    r""":math:`\sigma_\nu = \sqrt{\sigma_F^2 + \sigma_\zeta^2}` (Theorem 2: output noise plus input-noise
    induced noise; ``sigma_f = 0`` gives the output noise alone)."""
    return math.sqrt(sigma_f ** 2 + sigma_zeta ** 2)

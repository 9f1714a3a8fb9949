r"""The sampled execution-noise models of AIRBO's experiments (Yang et al., NeurIPS 2023, §5 and App. C):
one-sided beta, step-changing :math:`\chi^2`, target-dependent beta, Gaussian mixtures, the circle and products
of independent components. What each is, the paper's use of it, and how the fixed base samples (common random
numbers) work: :mod:`uncertain_bo.noise`.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch
from scipy import stats
from torch import Tensor

from ..distributions import (DEFAULT_N_SAMPLES, DTYPE, GaussianExecutionNoise, NoiseConfigError,
                             SampledExecutionNoise, check_covariance, weights_problem)
from ..distributions.execution_noise import _generator_device
from ..linalg import psd_sqrt

__all__ = ['BetaNoise', 'StepChi2Noise', 'VaryingBetaNoise', 'GaussianMixtureNoise', 'CircularNoise', 'ConcatNoise',
           'circular_gaussian']


def _uniform(shape: tuple[int, ...], generator: torch.Generator | None) -> Tensor:
    # open interval (0, 1): ppf(0) of a beta/chi2 is fine, but ppf(1) of chi2 is inf
    u = torch.rand(shape, dtype=DTYPE, device=_generator_device(generator), generator=generator)
    return u.clamp(1e-16, 1.0 - 1e-16)


def _ppf(dist, u: Tensor) -> Tensor:
    """Inverse-CDF transform of uniforms through a frozen scipy distribution (no gradient; scipy works on the
    CPU, the result goes back to ``u``'s device)."""
    return torch.from_numpy(np.asarray(dist.ppf(u.cpu().numpy()), dtype=np.float64)).to(u.device)


# ---------------------------------------------------------------------- models
class _InverseCdfNoise(SampledExecutionNoise):
    """Models whose base sample is one variate of ``self.distribution`` (a frozen scipy law) per axis, drawn by
    the inverse-CDF transform of uniforms."""

    distribution: Any

    @property
    def base_dim(self) -> int:
        return self.dim

    def _draw_base(self, shape, generator):
        return _ppf(self.distribution, _uniform((*shape, self.dim), generator))


class BetaNoise(_InverseCdfNoise):
    r"""One-sided beta noise :math:`\delta_i = \sigma B_i`, :math:`B_i \sim \mathrm{Beta}(\alpha, \beta)` i.i.d.
    per axis (scipy ``beta(a=α, b=β, loc=0, scale=σ)``, "parametrisation used throughout").

    ``beta(0.4, 0.2, 0.1)`` is the double-peak benchmark's input and Table 1's inputs.

    Args:
        alpha, beta: shape parameters (> 0).
        scale: :math:`\sigma > 0`, input units; the shift lies in ``[loc, loc + scale]``.
        dim: number of axes (default 1).
        loc: constant added to every offset (default 0, as in the paper).

    Raises:
        NoiseConfigError: a non-positive shape or scale (the message names the field).

    Example:
        The double-peak benchmark's input noise: one-sided offsets in ``[0, 0.1]``:

        >>> import torch
        >>> noise = BetaNoise(0.4, 0.2, 0.1, n_samples=500)
        >>> offsets = noise(torch.tensor([[0.3]], dtype=torch.float64)).samples[0, :, 0] - 0.3
        >>> bool(offsets.min() >= 0 and offsets.max() <= 0.1), round(float(offsets.mean()), 2)    # E = 0.1 * 0.4 / 0.6
        (True, 0.07)
    """

    kind = 'beta'

    def __init__(self, alpha: float, beta: float, scale: float, dim: int = 1, loc: float = 0.0,
                 n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        _positive(alpha=alpha, beta=beta, scale=scale)
        super().__init__(dim, n_samples, seed)
        self.alpha, self.beta, self.scale, self.loc = float(alpha), float(beta), float(scale), float(loc)
        self.distribution = stats.beta(self.alpha, self.beta, loc=self.loc, scale=self.scale)

    def _offsets(self, base, targets):
        return base

    def to_config(self) -> dict[str, Any]:
        return {**self._common_config(), 'alpha': self.alpha, 'beta': self.beta, 'scale': self.scale,
                'dim': self.dim, 'loc': self.loc}


class StepChi2Noise(SampledExecutionNoise):
    r"""Step-changing :math:`\chi^2` noise :math:`\delta_i = \sigma\,\chi^2(g(x_i))` (AIRBO Fig. 2d, Fig. 7).

    :math:`g(x) =` ``df_below`` for :math:`x <` ``threshold`` and ``df_above`` otherwise (paper: 0.5 and
    7.0, threshold 0.6, :math:`\sigma = 0.01`): sharply peaked left of the threshold, flat and long-tailed
    right of it. The two :math:`\chi^2` variates share one uniform per sample (quantile coupling), so the
    offsets change only at the threshold.

    Raises:
        NoiseConfigError: non-positive degrees of freedom or scale.

    Example:
        The same base samples give far wider offsets right of the threshold (7 degrees of freedom) than left of it:

        >>> import torch
        >>> noise = StepChi2Noise(n_samples=500)
        >>> clouds = noise(torch.tensor([[0.3], [0.8]], dtype=torch.float64))
        >>> spread = (clouds.samples[..., 0] - clouds.mean).std(-1)
        >>> bool(spread[1] > 3 * spread[0])
        True
    """

    kind = 'step_chi2'

    def __init__(self, df_below: float = 0.5, df_above: float = 7.0, threshold: float = 0.6,
                 scale: float = 0.01, dim: int = 1, n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        _positive(df_below=df_below, df_above=df_above, scale=scale)
        super().__init__(dim, n_samples, seed)
        self.df_below, self.df_above = float(df_below), float(df_above)
        self.threshold, self.scale = float(threshold), float(scale)
        self.below = stats.chi2(self.df_below, scale=self.scale)
        self.above = stats.chi2(self.df_above, scale=self.scale)

    @property
    def base_dim(self) -> int:
        return 2 * self.dim

    def _draw_base(self, shape, generator):
        u = _uniform((*shape, self.dim), generator)
        return torch.cat([_ppf(self.below, u), _ppf(self.above, u)], dim=-1)

    def _offsets(self, base, targets):
        d = self.dim
        below = (targets < self.threshold).unsqueeze(-2)  # (q, 1, d)
        return torch.where(below, base[..., :d], base[..., d:])

    def to_config(self) -> dict[str, Any]:
        return {**self._common_config(), 'df_below': self.df_below, 'df_above': self.df_above,
                'threshold': self.threshold, 'scale': self.scale, 'dim': self.dim}


class VaryingBetaNoise(_InverseCdfNoise):
    r"""Target-dependent beta noise :math:`\delta_i = a(\sin(2\pi f x_i) + 1)\,B_i`, :math:`B_i \sim
    \mathrm{Beta}(\alpha, \beta)` (AIRBO Fig. 2c).

    Defaults are the reference code's: :math:`\alpha = \beta = 0.5` (U-shaped, bimodal), ``amplitude``
    :math:`a = 0.09`, ``frequency`` :math:`f = 2` (i.e. :math:`\sin 4\pi x`). The paper prints
    :math:`0.9(\cdot)`, a typo: scales up to 1.8 do not fit the domain [0, 1].
    The offsets are differentiable in :math:`x` through the scale.

    Raises:
        NoiseConfigError: non-positive shapes or amplitude.

    Example:
        The scale :math:`a(\sin 4\pi x + 1)` is largest at :math:`x = 1/8` and vanishes at :math:`x = 3/8`:

        >>> import torch
        >>> noise = VaryingBetaNoise()
        >>> scale = noise.scale_at(torch.tensor([[0.125], [0.375]], dtype=torch.float64))
        >>> [round(s, 6) for s in scale.reshape(-1).tolist()]
        [0.18, 0.0]
    """

    kind = 'varying_beta'

    def __init__(self, alpha: float = 0.5, beta: float = 0.5, amplitude: float = 0.09, frequency: float = 2.0,
                 dim: int = 1, n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        _positive(alpha=alpha, beta=beta, amplitude=amplitude)
        super().__init__(dim, n_samples, seed)
        self.alpha, self.beta = float(alpha), float(beta)
        self.amplitude, self.frequency = float(amplitude), float(frequency)
        self.distribution = stats.beta(self.alpha, self.beta)

    def scale_at(self, targets: Tensor) -> Tensor:
        """Noise scale :math:`a(\\sin(2\\pi f x) + 1)` at ``targets`` (same shape)."""
        return self.amplitude * (torch.sin(2 * math.pi * self.frequency * targets) + 1.0)

    def _offsets(self, base, targets):
        return self.scale_at(targets).unsqueeze(-2) * base

    def to_config(self) -> dict[str, Any]:
        return {**self._common_config(), 'alpha': self.alpha, 'beta': self.beta, 'amplitude': self.amplitude,
                'frequency': self.frequency, 'dim': self.dim}


class GaussianMixtureNoise(SampledExecutionNoise):
    r"""Gaussian-mixture noise :math:`\delta \sim \sum_k w_k \mathcal N(\boldsymbol\mu_k, \Sigma_k)` (AIRBO App. D).

    The AIRBO code's 1-D default is means ``[-0.017, 0.03]``, stds ``[0.010, 0.017]``, weights
    ``[0.5, 0.5]``. Every :math:`\Sigma_k` must be PSD: the robot-push covariance of the paper (Eq. 34) is
    indefinite and is rejected (the authors' sampler silently altered it).

    Args:
        weights: ``(K,)`` non-negative mixture weights (normalised here).
        means: ``(K, d)`` component means (input units).
        covariances: ``(K, d, d)`` component covariances, or ``(K,)``/``(K, d)`` standard deviations via
            :meth:`from_stds`.

    Raises:
        NoiseConfigError: shape mismatch, negative or all-zero weights, an invalid covariance.

    Example:
        AIRBO's 1-D default, and its moments (:math:`\sum_k w_k\mu_k` = 0.0065):

        >>> noise = GaussianMixtureNoise.from_stds([0.5, 0.5], [[-0.017], [0.03]], [0.010, 0.017])
        >>> mean, cov = noise.mean_and_covariance()
        >>> round(float(mean[0]), 6)
        0.0065
    """

    kind = 'gaussian_mixture'

    def __init__(self, weights: Sequence[float], means: Tensor, covariances: Tensor,
                 n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        w = torch.as_tensor(weights, dtype=DTYPE).reshape(-1)
        mu = torch.as_tensor(means, dtype=DTYPE)
        if mu.ndim == 1:
            mu = mu.unsqueeze(-1)
        cov = torch.as_tensor(covariances, dtype=DTYPE)
        k = w.numel()
        if weights_problem(w):
            raise NoiseConfigError(f'field weights must be non-negative with a positive sum, got {w.tolist()}')
        if mu.ndim != 2 or mu.shape[0] != k:
            raise NoiseConfigError(f'field means must have shape ({k}, d), got {tuple(mu.shape)}')
        d = mu.shape[1]
        if cov.shape != (k, d, d):
            raise NoiseConfigError(f'field covariances must have shape ({k}, {d}, {d}), got {tuple(cov.shape)}')
        for i in range(k):
            reason = check_covariance(cov[i])
            if reason:
                raise NoiseConfigError(f'field covariances: component {i} is invalid: {reason}')
        super().__init__(d, n_samples, seed)
        self.weights, self.means, self.covariances = w / w.sum(), mu, cov
        self._sqrt = psd_sqrt(cov)  # (K, d, d)
        self._cdf = torch.cumsum(self.weights, 0)

    @classmethod
    def from_stds(cls, weights: Sequence[float], means, stds, **kwargs) -> 'GaussianMixtureNoise':
        """Diagonal components from standard deviations ``(K,)`` (isotropic) or ``(K, d)``."""
        mu = torch.as_tensor(means, dtype=DTYPE)
        if mu.ndim == 1:
            mu = mu.unsqueeze(-1)
        k = len(weights)
        if mu.ndim != 2 or mu.shape[0] != k:
            raise NoiseConfigError(f'field means must have shape ({k}, d), got {tuple(mu.shape)}')
        s = torch.as_tensor(stds, dtype=DTYPE)
        if (s < 0).any():
            raise NoiseConfigError(f'field stds must be >= 0, got {s.tolist()}')
        if s.ndim == 1:
            s = s.unsqueeze(-1).expand(-1, mu.shape[-1])
        if s.shape != mu.shape:
            raise NoiseConfigError(f'field stds must have shape {tuple(mu.shape[:1])} or {tuple(mu.shape)}, '
                                   f'got {tuple(s.shape)}')
        return cls(weights, mu, torch.diag_embed(s ** 2), **kwargs)

    @property
    def base_dim(self) -> int:
        return 1 + self.dim

    def _draw_base(self, shape, generator):
        dev = _generator_device(generator)
        u = torch.rand(*shape, 1, dtype=DTYPE, device=dev, generator=generator)
        comp = torch.searchsorted(self._cdf.to(dev), u, right=True).clamp(max=len(self.weights) - 1).to(DTYPE)
        return torch.cat([comp, torch.randn(*shape, self.dim, dtype=DTYPE, device=dev, generator=generator)], dim=-1)

    def _offsets(self, base, targets):
        comp = base[..., 0].long()
        eps = base[..., 1:]
        means, sqrt = self.means.to(base.device), self._sqrt.to(base.device)
        return means[comp] + (sqrt[comp] @ eps.unsqueeze(-1)).squeeze(-1)

    def mean_and_covariance(self) -> tuple[Tensor, Tensor]:
        """Exact mixture moments of :math:`\\delta`: ``(mean (d,), covariance (d, d))``."""
        mean = self.weights @ self.means
        c = self.means - mean
        cov = torch.einsum('k,kij->ij', self.weights, self.covariances + c.unsqueeze(-1) * c.unsqueeze(-2))
        return mean, cov

    def to_config(self) -> dict[str, Any]:
        return {**self._common_config(), 'weights': self.weights.tolist(), 'means': self.means.tolist(),
                'covariances': self.covariances.tolist()}


class CircularNoise(SampledExecutionNoise):
    r"""2-D noise on a circle: :math:`\delta = \mathbf c + r(\cos\theta, \sin\theta)`, :math:`\theta \sim U[0, 2\pi)`.

    The first two axes of the 10-D bumped bowl's input uncertainty (AIRBO App. D.3; reference code
    ``Circular2Distribution``: the point lies *on* the circle of radius ``radius``).

    Raises:
        NoiseConfigError: negative radius, ``center`` not 2 numbers.

    Example:
        Every offset lies on the circle of radius 0.5:

        >>> import torch
        >>> noise = CircularNoise(radius=0.5, n_samples=100)
        >>> offsets = noise(torch.zeros(1, 2, dtype=torch.float64)).samples[0]
        >>> torch.allclose(offsets.norm(dim=-1), torch.full((100,), 0.5, dtype=torch.float64))
        True
    """

    kind = 'circular'

    def __init__(self, radius: float = 0.5, center: Sequence[float] = (0.0, 0.0),
                 n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        if not float(radius) >= 0:
            raise NoiseConfigError(f'field radius must be >= 0, got {radius}')
        c = torch.as_tensor(center, dtype=DTYPE).reshape(-1)
        if c.numel() != 2:
            raise NoiseConfigError(f'field center must have 2 entries, got {c.tolist()}')
        super().__init__(2, n_samples, seed)
        self.radius, self.center = float(radius), c

    @property
    def base_dim(self) -> int:
        return 1

    def _draw_base(self, shape, generator):
        dev = _generator_device(generator)
        return 2 * math.pi * torch.rand(*shape, 1, dtype=DTYPE, device=dev, generator=generator)

    def _offsets(self, base, targets):
        return self.center.to(base) + self.radius * torch.cat([torch.cos(base), torch.sin(base)], dim=-1)

    def to_config(self) -> dict[str, Any]:
        return {**self._common_config(), 'radius': self.radius, 'center': self.center.tolist()}


class ConcatNoise(SampledExecutionNoise):
    r"""Independent noise components on consecutive axes: :math:`\delta = (\delta^{(1)}, \delta^{(2)}, \dots)`.

    AIRBO's ``ConcatDistribution``. The components' own base samples are not used: this model draws one
    joint base (``n_samples``, ``seed``) and hands each component its columns.

    Args:
        components: sampled noise models; the target space is the product of theirs.

    Raises:
        NoiseConfigError: no components.

    Example:
        The bumped bowl's first axes: a circle on axes 1-2 and beta noise on axis 3:

        >>> import torch
        >>> noise = ConcatNoise([CircularNoise(radius=0.5), BetaNoise(0.4, 0.2, 0.1)], n_samples=100)
        >>> clouds = noise(torch.zeros(1, 3, dtype=torch.float64))
        >>> on_circle = clouds.samples[0, :, :2].norm(dim=-1)
        >>> clouds.samples.shape, torch.allclose(on_circle, torch.tensor(0.5, dtype=torch.float64))
        (torch.Size([1, 100, 3]), True)
    """

    kind = 'concat'

    def __init__(self, components: Sequence[SampledExecutionNoise], n_samples: int = DEFAULT_N_SAMPLES,
                 seed: int = 0):
        if not components:
            raise NoiseConfigError('field components must list at least one noise model')
        super().__init__(sum(c.dim for c in components), n_samples, seed)
        self.components = list(components)

    @property
    def base_dim(self) -> int:
        return sum(c.base_dim for c in self.components)

    def _draw_base(self, shape, generator):
        return torch.cat([c._draw_base(shape, generator) for c in self.components], dim=-1)

    def _offsets(self, base, targets):
        out, b0, d0 = [], 0, 0
        for c in self.components:
            out.append(c._offsets(base[..., b0:b0 + c.base_dim], targets[..., d0:d0 + c.dim]))
            b0, d0 = b0 + c.base_dim, d0 + c.dim
        return torch.cat(out, dim=-1)

    def to_config(self) -> dict[str, Any]:
        comps = []
        for c in self.components:
            cfg = c.to_config()
            cfg.pop('n_samples'), cfg.pop('seed')
            comps.append(cfg)
        return {**self._common_config(), 'components': comps}


def circular_gaussian(dim: int = 10, radius: float = 0.5, std: float = 0.1, **kwargs) -> ConcatNoise:
    """Circle of radius ``radius`` on the first two axes x isotropic :math:`\\mathcal N(0, s^2 I)` on the rest.

    The 10-D bumped bowl's input uncertainty (AIRBO App. D.3: :math:`r = 0.5`, :math:`\\mathcal N(0,
    0.01 I)`, i.e. ``std`` 0.1).

    Raises:
        NoiseConfigError: ``dim < 3``.
    """
    if int(dim) < 3:
        raise NoiseConfigError(f'field dim must be >= 3 for circular_gaussian, got {dim}')
    return ConcatNoise([CircularNoise(radius), GaussianExecutionNoise.isotropic(std, int(dim) - 2,
                                                                                n_samples=DEFAULT_N_SAMPLES)],
                       **kwargs)


def _positive(**values: float) -> None:
    for name, v in values.items():
        try:
            ok = math.isfinite(float(v)) and float(v) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise NoiseConfigError(f'field {name} must be a positive number, got {v!r}')

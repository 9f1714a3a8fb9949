r"""Execution-noise models :math:`\hat P_{\mathbf x}`: where the rover ends up when sent to :math:`\mathbf x`.

:class:`ExecutionNoise` is the interface (targets in, location distributions out, differentiable in the targets);
:class:`SampledExecutionNoise` the base of every model we can sample, with fixed base samples (common random
numbers); :class:`GaussianExecutionNoise` the one Gaussian model of the library, in closed form or sampled. The
other sampled models (AIRBO's beta, step-:math:`\chi^2`, mixtures, ...) and their configuration are in
:mod:`uncertain_bo.noise`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

import torch
from torch import Tensor

from ..linalg import psd_sqrt
from .batches import Empirical, Gaussian, LocationDistributions
from .checks import DTYPE, InvalidDistributionError, check_covariance

__all__ = ['ExecutionNoise', 'SampledExecutionNoise', 'GaussianExecutionNoise', 'NoiseConfigError',
           'DEFAULT_N_SAMPLES']


class ExecutionNoise(ABC):
    r"""Model of execution noise :math:`\hat P_{\mathbf x}`: where the rover ends up when sent to ``x``.

    Calling the model on a batch of targets returns their location distributions; it must be
    differentiable w.r.t. the targets (acquisition maximisation takes gradients through it).

    Example:
        The rover sent to two targets ends up within 1 m (std) of each:

        >>> import torch
        >>> noise = GaussianExecutionNoise.isotropic(1.0, 2)
        >>> where = noise(torch.tensor([[0.0, 0.0], [5.0, 5.0]], dtype=torch.float64))
        >>> type(where).__name__, where.mean.tolist(), where.covariance[0].tolist()
        ('Gaussian', [[0.0, 0.0], [5.0, 5.0]], [[1.0, 0.0], [0.0, 1.0]])
    """

    @abstractmethod
    def __call__(self, targets: Tensor) -> LocationDistributions:
        """Location distributions for ``targets`` of shape ``(q, d)``."""


DEFAULT_N_SAMPLES = 160
"""Samples per distribution by default (AIRBO's sampling size, App. D.2)."""


class NoiseConfigError(InvalidDistributionError):
    """An execution-noise configuration is invalid; the message names the offending field.

    Example:
        >>> GaussianExecutionNoise.isotropic(-0.5, 2)
        Traceback (most recent call last):
        ...
        uncertain_bo.distributions.execution_noise.NoiseConfigError: field std must be >= 0, got -0.5
    """


class SampledExecutionNoise(ExecutionNoise):
    r"""Execution noise we can sample: :math:`\tilde{\mathbf x} = \mathbf x + \delta(\mathbf x; \xi)` (abstract).

    Subclasses define the base randomness :math:`\xi` (:meth:`_draw_base`, not differentiable) and the map
    to offsets :math:`\delta(\mathbf x; \xi)` (:meth:`_offsets`, differentiable in :math:`\mathbf x`).

    Args:
        dim: dimension ``d`` of the target space.
        n_samples: number ``m`` of fixed base samples (samples per returned distribution).
        seed: seed of the fixed base samples.

    Raises:
        NoiseConfigError: ``dim < 1`` or ``n_samples < 1``.

    Example:
        A sampled model returns :class:`Empirical` batches of its fixed base samples shifted to each target (common
        random numbers: the same offsets at every target):

        >>> import torch
        >>> noise = GaussianExecutionNoise.isotropic(0.1, 2, n_samples=64, seed=1)
        >>> clouds = noise(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64))
        >>> offsets = clouds.samples - clouds.mean.unsqueeze(-2)
        >>> clouds.samples.shape, torch.allclose(offsets[0], offsets[1])
        (torch.Size([2, 64, 2]), True)
    """

    kind: str = ''

    def __init__(self, dim: int, n_samples: int = DEFAULT_N_SAMPLES, seed: int = 0):
        if int(dim) < 1:
            raise NoiseConfigError(f'field dim must be >= 1, got {dim}')
        if int(n_samples) < 1:
            raise NoiseConfigError(f'field n_samples must be >= 1, got {n_samples}')
        self._dim = int(dim)
        self.n_samples = int(n_samples)
        self.seed = int(seed)
        self._base: Tensor | None = None
        self._base_on: tuple[Tensor, Tensor] | None = None

    # ------------------------------------------------------------ interface
    @property
    def dim(self) -> int:
        """Dimension ``d`` of the target space."""
        return self._dim

    @property
    def base_samples(self) -> Tensor:
        """``(m, k)`` fixed base samples :math:`\\xi_j` (drawn lazily from ``seed``)."""
        if self._base is None:
            gen = torch.Generator().manual_seed(self.seed)
            self._base = self._draw_base((self.n_samples,), gen)
        return self._base

    def base_samples_like(self, ref: Tensor) -> Tensor:
        """:attr:`base_samples` on the device of ``ref`` (drawn once on the CPU from ``seed``, so every device
        sees the same numbers; copied to each device once)."""
        base = self.base_samples
        if base.device == ref.device:
            return base
        cached = self._base_on
        if cached is None or cached[0] is not base or cached[1].device != ref.device:
            self._base_on = cached = (base, base.to(ref.device))
        return cached[1]

    def refresh(self, seed: int | None = None) -> None:
        """Draw new fixed base samples (from ``seed``, or the next seed ``self.seed + 1``)."""
        self.seed = self.seed + 1 if seed is None else int(seed)
        self._base = None

    def __call__(self, targets: Tensor) -> Empirical:
        """Location distributions of ``targets`` with the fixed base samples (common random numbers).

        Args:
            targets: ``(q, d)`` commanded targets (input units). Gradients flow to them.

        Returns:
            :class:`~uncertain_bo.distributions.Empirical` with samples ``(q, m, d)``
            :math:`= \\mathbf x_i + \\delta(\\mathbf x_i; \\xi_j)`, uniform weights.

        Raises:
            ValueError: ``targets`` is not ``(q, d)``.
        """
        targets = self._check_targets(targets)
        base = self.base_samples_like(targets).unsqueeze(0).expand(targets.shape[0], -1, -1)
        return Empirical(targets.unsqueeze(-2) + self._offsets(base, targets), validate=False)

    def sample_locations(self, targets: Tensor, m: int, generator: torch.Generator | None = None) -> Tensor:
        """Fresh draws of executed positions: ``(q, m, d)``, independent across targets and samples.

        The randomness comes from ``generator`` on its device (default: the CPU's default generator) and is
        moved to the targets' device."""
        targets = self._check_targets(targets)
        base = self._draw_base((targets.shape[0], int(m)), generator).to(targets.device)
        return targets.unsqueeze(-2) + self._offsets(base, targets)

    def sample_executed(self, targets: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """One true executed position per target, ``(q, d)`` (what the simulated world uses)."""
        return self.sample_locations(targets, 1, generator).squeeze(-2)

    @abstractmethod
    def to_config(self) -> dict[str, Any]:
        """Configuration dict accepted by :func:`noise_from_config` (round trip, same base samples)."""

    # ------------------------------------------------------------ subclass API
    @property
    @abstractmethod
    def base_dim(self) -> int:
        """Number ``k`` of base columns per sample."""

    @abstractmethod
    def _draw_base(self, shape: tuple[int, ...], generator: torch.Generator | None) -> Tensor:
        """``(*shape, k)`` base randomness (float64, no gradient), on ``generator``'s device (CPU if None)."""

    @abstractmethod
    def _offsets(self, base: Tensor, targets: Tensor) -> Tensor:
        """Offsets ``(q, m, d)`` from base ``(q, m, k)`` and targets ``(q, d)``; differentiable in targets."""

    # ------------------------------------------------------------ helpers
    def _check_targets(self, targets: Tensor) -> Tensor:
        targets = torch.as_tensor(targets, dtype=DTYPE)  # keeps a tensor's device
        if targets.ndim != 2 or targets.shape[-1] != self.dim:
            raise ValueError(f'targets must have shape (q, {self.dim}), got {tuple(targets.shape)}')
        return targets

    def _common_config(self) -> dict[str, Any]:
        return {'kind': self.kind, 'n_samples': self.n_samples, 'seed': self.seed}

    def __repr__(self) -> str:
        fields = ', '.join(f'{k}={v}' for k, v in self.to_config().items() if k != 'kind')
        return f'{type(self).__name__}({fields})'


def _generator_device(generator: torch.Generator | None) -> torch.device:
    """Where draws from ``generator`` are made (the CPU for the default generator)."""
    return torch.device('cpu') if generator is None else generator.device


class GaussianExecutionNoise(SampledExecutionNoise):
    r"""Gaussian execution noise :math:`\hat P_{\mathbf x} = \mathcal N(\mathbf x, \hat\Sigma)` (Oliveira et al.
    2019, Algorithm 1; AIRBO's Gaussian inputs), in closed form or sampled.

    Args:
        covariance: ``(d, d)`` covariance :math:`\hat\Sigma` (input units squared, e.g. m²). A zero matrix
            gives Dirac targets (standard BO).
        n_samples: None (default): calling the model returns :class:`Gaussian` batches (the closed-form
            kernels use :math:`\hat\Sigma` exactly; sample-based kernels draw their own fixed base samples).
            An integer ``m``: returns :class:`Empirical` batches of ``m`` fixed base samples
            :math:`\mathbf x + L\boldsymbol\varepsilon_j`, :math:`L L^\top = \hat\Sigma` (common random
            numbers, as every model of :mod:`uncertain_bo.noise`).
        seed: seed of the fixed base samples.

    :meth:`sample_locations` and :meth:`sample_executed` draw fresh positions in both modes.

    Raises:
        NoiseConfigError: ``covariance`` is not a symmetric PSD ``(d, d)`` matrix (an
            :class:`InvalidDistributionError`).

    Example:
        >>> import torch
        >>> noise = GaussianExecutionNoise(torch.tensor([[0.04, 0.0], [0.0, 0.01]], dtype=torch.float64))    # m²
        >>> noise(torch.tensor([[2.0, 3.0]], dtype=torch.float64)).covariance[0].diagonal().tolist()
        [0.04, 0.01]
        >>> config = GaussianExecutionNoise.isotropic(0.2, 2).to_config()       # what a journal header records
        >>> config['kind'], [[round(c, 6) for c in row] for row in config['covariance']]
        ('gaussian', [[0.04, 0.0], [0.0, 0.04]])
    """

    kind = 'gaussian'

    def __init__(self, covariance: Tensor, n_samples: int | None = None, seed: int = 0):
        cov = torch.as_tensor(covariance, dtype=DTYPE)
        reason = check_covariance(cov) if cov.ndim == 2 else 'not a (d, d) matrix'
        if reason:
            raise NoiseConfigError(f'field covariance is invalid: {reason}')
        super().__init__(cov.shape[0], DEFAULT_N_SAMPLES if n_samples is None else n_samples, seed)
        self.closed_form = n_samples is None
        self.covariance = cov
        self._sqrt = psd_sqrt(cov)  # L Lᵀ = Σ
        self._on: dict[tuple[torch.device, torch.dtype], tuple[Tensor, Tensor]] = {}

    @classmethod
    def isotropic(cls, std: float | Sequence[float], dim: int | None = None, **kwargs) -> 'GaussianExecutionNoise':
        """Diagonal noise from per-axis standard deviations (a scalar needs ``dim``); ``kwargs``: ``n_samples``,
        ``seed``.

        Raises:
            NoiseConfigError: negative std, or scalar std without ``dim``.
        """
        s = torch.as_tensor(std, dtype=DTYPE)
        if (s < 0).any():
            raise NoiseConfigError(f'field std must be >= 0, got {s.tolist()}')
        if s.ndim == 0:
            if dim is None:
                raise NoiseConfigError('field dim is required when std is a scalar')
            s = s.expand(int(dim))
        return cls(torch.diag(s ** 2), **kwargs)

    def _moments_like(self, ref: Tensor) -> tuple[Tensor, Tensor]:
        """``(covariance, sqrt)`` in ``ref``'s dtype and on its device (copied once per device)."""
        key = (ref.device, ref.dtype)
        if key not in self._on:
            self._on[key] = (self.covariance.to(ref), self._sqrt.to(ref))
        return self._on[key]

    def __call__(self, targets: Tensor) -> LocationDistributions:
        """Location distributions of ``targets`` ``(q, d)``: :class:`Gaussian` (closed form) or
        :class:`Empirical` (``n_samples`` fixed base samples). Gradients flow to the targets."""
        if not self.closed_form:
            return super().__call__(targets)
        targets = self._check_targets(targets)
        return Gaussian(targets, self._moments_like(targets)[0], validate=False)

    @property
    def base_dim(self) -> int:
        return self.dim

    def _draw_base(self, shape, generator):
        return torch.randn(*shape, self.dim, dtype=DTYPE, device=_generator_device(generator), generator=generator)

    def _offsets(self, base, targets):
        return base @ self._moments_like(base)[1].T

    def to_config(self) -> dict[str, Any]:
        cfg = {**self._common_config(), 'covariance': self.covariance.tolist()}
        if self.closed_form:
            cfg['n_samples'] = None
        return cfg

    def __repr__(self) -> str:
        mode = 'closed form' if self.closed_form else f'n_samples={self.n_samples}, seed={self.seed}'
        return f'{type(self).__name__}(std={torch.diagonal(self.covariance).sqrt().tolist()}, {mode})'

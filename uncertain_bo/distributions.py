r"""Location distributions: batches of probability distributions over :math:`\mathbb R^d`.

A measurement taken by a rover is a pair (location distribution :math:`P^L_t`, reading :math:`y_t`): the
rover's localisation filter only knows *where* the reading was taken up to a distribution (Oliveira et
al. 2019, §3). Candidate targets during acquisition are also distributions: the execution-noise model
:math:`\hat P_{\mathbf x}` centred on the commanded target (paper Algorithm 1).

Three batched types share one interface (:class:`LocationDistributions`):

- :class:`Dirac` — exactly known points, ``mean (n, d)``;
- :class:`Gaussian` — per-point mean and covariance, ``mean (n, d)``, ``covariance (n, d, d)``;
  each point carries its own covariance (heteroscedastic, e.g. from an EKF);
- :class:`Empirical` — sample-based (optionally weighted), ``samples (n, m, d)``, ``weights (n, m)``
  (particle filters, arbitrary execution noise).

Kernels over distributions (``uncertain_bo.kernels``) turn a batch into the flat tensor they consume with
their own ``encode`` method, so every model and acquisition works on these types only.

The module also holds the execution-noise models :math:`\hat P_{\mathbf x}`, the conversions from
ROS 2 covariance layouts, and the checks shared with the NumPy (torch-free) layer: covariances, sample
weights, and the moment matching of particle clouds (:func:`particle_moments`, from
:mod:`uncertain_bo.covariance`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence

import torch
from torch import Tensor

from .covariance import (WEIGHTS_NO_TOTAL, WEIGHTS_NOT_FINITE, WEIGHTS_TOTAL_OVERFLOWS, covariance_problem,
                         particle_moments)
from .covariance import weights_problem as _np_weights_problem
from .linalg import psd_sqrt

__all__ = [
    'InvalidDistributionError', 'LocationDistributions', 'Dirac', 'Gaussian', 'Empirical',
    'ExecutionNoise', 'SampledExecutionNoise', 'GaussianExecutionNoise', 'NoiseConfigError', 'check_covariance',
    'ros_covariance_to_xy', 'cat', 'DEFAULT_N_SAMPLES', 'weights_problem', 'particle_moments',
]

DTYPE = torch.float64


class InvalidDistributionError(ValueError):
    """A distribution's parameters are not valid (NaN/inf, wrong shape, covariance not PSD)."""


def check_covariance(cov: Tensor, *, atol: float = 1e-9) -> str | None:
    """Why ``cov`` is not a valid covariance, or None if it is.

    Args:
        cov: ``(..., d, d)`` candidate covariance matrices: a tensor on any device, or anything NumPy reads.
        atol: tolerance on asymmetry and on negative eigenvalues, relative to the largest absolute entry
            (absolute for matrices whose largest entry is below 1).

    Returns:
        None when every matrix is finite, symmetric and positive semi-definite (the zero matrix is valid:
        a Dirac location); otherwise a short reason such as ``'not positive semi-definite (min eigenvalue
        -3.1)'``. Tensors are checked where they live, in float64, each ``(d, d)`` matrix against tolerances
        relative to its own entries, with one device-to-host transfer of a few numbers; other inputs go to
        the NumPy :func:`uncertain_bo.covariance.covariance_problem` (the ROS message layer's check; the same
        reasons, tolerances relative to the whole array).
    """
    if not isinstance(cov, Tensor):
        return covariance_problem(cov, atol=atol)
    return _first_covariance_problem(cov, atol)[1]


def _first_covariance_problem(cov: Tensor, atol: float = 1e-9) -> tuple[int | None, str | None]:
    """``(flat index of the first invalid matrix, its reason)``, or ``(None, None)``: every ``(d, d)`` matrix of
    ``cov`` judged on its own (tolerances relative to its own largest entry), on ``cov``'s device, with one
    device-to-host transfer of seven numbers."""
    c = cov.detach()
    if c.ndim < 2 or c.shape[-1] != c.shape[-2]:
        return 0, f'expected square (..., d, d) matrices, got shape {tuple(c.shape)}'
    if c.numel() == 0:
        return None, None
    d = c.shape[-1]
    c = c.to(DTYPE).reshape(-1, d, d)
    finite = torch.isfinite(c).flatten(1).all(-1)
    c = torch.where(torch.isfinite(c), c, torch.zeros((), dtype=c.dtype, device=c.device))
    scale = c.abs().flatten(1).amax(-1)                                # (N,)
    tol = atol * scale.clamp_min(1.0)
    diag_min = torch.diagonal(c, dim1=-2, dim2=-1).amin(-1)
    asym = (c - c.transpose(-1, -2)).abs().flatten(1).amax(-1)
    u = c / scale.clamp_min(torch.finfo(DTYPE).tiny)[:, None, None]   # entries <= 1: no overflow
    emin = torch.linalg.eigvalsh(0.5 * (u + u.transpose(-1, -2))).amin(-1)
    bad = ~finite | (diag_min < -tol) | (asym > tol) | ((scale > 0) & ~(emin >= -tol / scale.clamp_min(1e-300)))
    first = torch.argmax(bad.to(torch.uint8))
    stats = torch.stack([bad.any().to(DTYPE), first.to(DTYPE), finite[first].to(DTYPE), diag_min[first], tol[first],
                         asym[first], emin[first] * scale[first]]).tolist()   # the one sync
    any_bad, i, ok_finite, dmin, tol_i, asym_i, emin_i = stats
    if not any_bad:
        return None, None
    i = int(i)
    if not ok_finite:
        return i, 'contains NaN or inf'
    if dmin < -tol_i:
        return i, f'negative variance ({dmin:.3g})'
    if asym_i > tol_i:
        return i, 'not symmetric'
    return i, f'not positive semi-definite (min eigenvalue {emin_i:.3g})'


def weights_problem(weights) -> str | None:
    """Why ``weights`` ``(..., m)`` are not usable sample weights (per row: finite, non-negative, a positive
    finite total), or None.

    Tensors are checked on their device with one device-to-host transfer; anything else goes to the NumPy
    :func:`uncertain_bo.covariance.weights_problem` (the particle clouds of the ROS layer), which gives the
    same reasons.

    Returns:
        None, ``'weights must be finite and non-negative'``, ``'weights must have a positive total (per
        distribution)'`` (also for ``m = 0``) or ``'weights overflow (their total is not finite)'``.
    """
    if not isinstance(weights, Tensor):
        return _np_weights_problem(weights)
    w = weights.detach()
    if w.shape[-1] == 0:
        return WEIGHTS_NO_TOTAL
    total = w.sum(-1)
    bad_entries = ~(torch.isfinite(w) & (w >= 0)).all()
    bad_total, total_overflows = (total <= 0).any(), ~torch.isfinite(total).all()
    bad_entries, bad_total, total_overflows = torch.stack([bad_entries, bad_total, total_overflows]).tolist()
    if bad_entries:
        return WEIGHTS_NOT_FINITE
    if bad_total:
        return WEIGHTS_NO_TOTAL
    if total_overflows:
        return WEIGHTS_TOTAL_OVERFLOWS
    return None


def ros_covariance_to_xy(cov36: Sequence[float]) -> Tensor:
    """Planar (x, y) block of a ROS 6x6 pose covariance.

    Args:
        cov36: 36 floats, row-major over (x, y, z, rot-X, rot-Y, rot-Z), as in
            ``geometry_msgs/PoseWithCovariance.covariance`` (REP-103 units: m², rad²).

    Returns:
        ``(2, 2)`` float64 tensor ``[[xx, xy], [yx, yy]]`` (entries 0, 1, 6, 7), m².

    Raises:
        InvalidDistributionError: not 36 numbers.
    """
    c = torch.as_tensor(list(cov36), dtype=DTYPE)
    if c.numel() != 36:
        raise InvalidDistributionError(f'a ROS pose covariance has 36 entries, got {c.numel()}')
    return c.reshape(6, 6)[:2, :2].clone()


def _as_tensor(x, name: str, ndim: int) -> Tensor:
    t = torch.as_tensor(x, dtype=DTYPE)
    if t.ndim != ndim:
        raise InvalidDistributionError(f'{name} must have {ndim} dimensions, got shape {tuple(t.shape)}')
    return t


class LocationDistributions(ABC):
    """A batch of ``n`` distributions over ``R^d`` (abstract base).

    Subclasses are immutable containers of tensors; operations return new batches. All tensors are
    float64. Gradients flow through the parameters (e.g. through a candidate target's mean during
    acquisition maximisation).
    """

    @property
    @abstractmethod
    def mean(self) -> Tensor:
        """``(n, d)`` means."""

    @property
    @abstractmethod
    def covariance(self) -> Tensor:
        """``(n, d, d)`` covariances (moment matching for sample-based batches)."""

    @abstractmethod
    def sample(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        """``(n, m, d)`` samples, ``m`` per distribution."""

    @abstractmethod
    def __getitem__(self, index) -> 'LocationDistributions':
        """Sub-batch (index by int, slice, boolean mask or index tensor); always keeps the batch dim."""

    @abstractmethod
    def affine(self, scale: Tensor, shift: Tensor) -> 'LocationDistributions':
        """Distribution of ``scale * x + shift`` (elementwise, ``scale``/``shift`` shape ``(d,)``)."""

    @classmethod
    @abstractmethod
    def cat(cls, batches: Sequence['LocationDistributions']) -> 'LocationDistributions':
        """Concatenate batches of this type along the batch dimension."""

    def __len__(self) -> int:
        return self.mean.shape[0]

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the space."""
        return self.mean.shape[-1]

    @staticmethod
    def _index(index) -> object:
        if isinstance(index, int):
            return slice(index, index + 1) if index != -1 else slice(-1, None)
        return index


class Dirac(LocationDistributions):
    """Exactly known locations (point masses).

    Args:
        mean: ``(n, d)`` locations.

    Raises:
        InvalidDistributionError: wrong shape or non-finite values.
    """

    def __init__(self, mean: Tensor):
        self._mean = _as_tensor(mean, 'mean', 2)
        if not torch.isfinite(self._mean).all():
            raise InvalidDistributionError('Dirac locations contain NaN or inf')

    @property
    def mean(self) -> Tensor:
        return self._mean

    @property
    def covariance(self) -> Tensor:
        n, d = self._mean.shape
        return self._mean.new_zeros(n, d, d)

    def sample(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        return self._mean.unsqueeze(-2).expand(-1, m, -1)

    def __getitem__(self, index) -> 'Dirac':
        return Dirac(self._mean[self._index(index)])

    def affine(self, scale: Tensor, shift: Tensor) -> 'Dirac':
        return Dirac(self._mean * scale + shift)

    @classmethod
    def cat(cls, batches: Sequence['Dirac']) -> 'Dirac':
        return Dirac(torch.cat([b.mean for b in batches]))

    def __repr__(self) -> str:
        return f'Dirac(n={len(self)}, d={self.dim})'


class Gaussian(LocationDistributions):
    """Gaussian location distributions :math:`\\mathcal N(\\hat{\\mathbf x}_i, \\Sigma_i)`, one covariance per point.

    Args:
        mean: ``(n, d)`` means.
        covariance: ``(n, d, d)`` covariances, or ``(d, d)`` shared by all points (broadcast).
        validate: check finiteness, symmetry and positive semi-definiteness (default True). Disable only
            on hot paths where the covariance is known to be valid (e.g. a fixed execution-noise model).

    Raises:
        InvalidDistributionError: wrong shapes, non-finite values, or a covariance that is not symmetric
            positive semi-definite; the message says which point failed and why.
    """

    def __init__(self, mean: Tensor, covariance: Tensor, *, validate: bool = True):
        self._mean = _as_tensor(mean, 'mean', 2)
        cov = torch.as_tensor(covariance, dtype=DTYPE, device=self._mean.device)
        n, d = self._mean.shape
        if cov.ndim == 2:
            cov = cov.expand(n, d, d)
        if cov.shape != (n, d, d):
            raise InvalidDistributionError(
                f'covariance must have shape ({n}, {d}, {d}) or ({d}, {d}), got {tuple(cov.shape)}')
        if validate:
            if not torch.isfinite(self._mean).all():
                raise InvalidDistributionError('Gaussian means contain NaN or inf')
            i, reason = _first_covariance_problem(cov)
            if reason:
                raise InvalidDistributionError(f'covariance of point {i} is invalid: {reason}' if n <= 64 else
                                               f'a covariance in the batch is invalid: {reason}')
        self._cov = cov

    @property
    def mean(self) -> Tensor:
        return self._mean

    @property
    def covariance(self) -> Tensor:
        return self._cov

    def sample(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        n, d = self._mean.shape
        eps = torch.randn(n, m, d, dtype=self._mean.dtype, device=self._mean.device, generator=generator)
        return self._mean.unsqueeze(-2) + eps @ psd_sqrt(self._cov).transpose(-1, -2)

    def __getitem__(self, index) -> 'Gaussian':
        i = self._index(index)
        return Gaussian(self._mean[i], self._cov[i], validate=False)

    def affine(self, scale: Tensor, shift: Tensor) -> 'Gaussian':
        scale = torch.as_tensor(scale, dtype=DTYPE, device=self._mean.device)
        s = scale.unsqueeze(-1) * scale.unsqueeze(-2)  # (d, d): S Σ S for diagonal S
        return Gaussian(self._mean * scale + shift, self._cov * s, validate=False)

    @classmethod
    def cat(cls, batches: Sequence['Gaussian']) -> 'Gaussian':
        return Gaussian(torch.cat([b.mean for b in batches]),
                        torch.cat([b.covariance for b in batches]), validate=False)

    @classmethod
    def from_dirac(cls, d: Dirac) -> 'Gaussian':
        """Zero-covariance Gaussians at the Dirac locations (the Dirac limit of Eq. 80)."""
        return cls(d.mean, d.covariance, validate=False)

    def __repr__(self) -> str:
        return f'Gaussian(n={len(self)}, d={self.dim})'


class Empirical(LocationDistributions):
    """Sample-based location distributions (particles), optionally weighted.

    Args:
        samples: ``(n, m, d)`` samples, ``m`` per distribution.
        weights: ``(n, m)`` non-negative weights (normalised to sum to 1 per distribution), or None for
            uniform weights.

    Raises:
        InvalidDistributionError: wrong shapes, non-finite samples, negative or all-zero weights.
    """

    def __init__(self, samples: Tensor, weights: Tensor | None = None, *, validate: bool = True):
        self._samples = _as_tensor(samples, 'samples', 3)
        n, m, _ = self._samples.shape
        if weights is not None:
            w = _as_tensor(weights, 'weights', 2)
            if w.shape != (n, m):
                raise InvalidDistributionError(f'weights must have shape ({n}, {m}), got {tuple(w.shape)}')
            reason = weights_problem(w) if validate else None
            if reason:
                raise InvalidDistributionError(reason)
            weights = w / w.sum(-1, keepdim=True)
        if validate and not torch.isfinite(self._samples).all():
            raise InvalidDistributionError('samples contain NaN or inf')
        self._weights = weights

    @property
    def samples(self) -> Tensor:
        """``(n, m, d)`` samples."""
        return self._samples

    @property
    def weights(self) -> Tensor:
        """``(n, m)`` normalised weights (uniform ``1/m`` when none were given)."""
        if self._weights is None:
            n, m, _ = self._samples.shape
            return self._samples.new_full((n, m), 1.0 / m)
        return self._weights

    @property
    def is_weighted(self) -> bool:
        return self._weights is not None

    @property
    def mean(self) -> Tensor:
        return (self.weights.unsqueeze(-1) * self._samples).sum(-2)

    @property
    def covariance(self) -> Tensor:
        c = self._samples - self.mean.unsqueeze(-2)
        return torch.einsum('nm,nmi,nmj->nij', self.weights, c, c)

    def __len__(self) -> int:
        return self._samples.shape[0]

    @property
    def dim(self) -> int:
        return self._samples.shape[-1]

    def sample(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        n, k, _ = self._samples.shape
        idx = torch.multinomial(self.weights, m, replacement=True, generator=generator)  # (n, m)
        return torch.gather(self._samples, 1, idx.unsqueeze(-1).expand(-1, -1, self.dim))

    def __getitem__(self, index) -> 'Empirical':
        i = self._index(index)
        w = None if self._weights is None else self._weights[i]
        return Empirical(self._samples[i], w, validate=False)

    def affine(self, scale: Tensor, shift: Tensor) -> 'Empirical':
        return Empirical(self._samples * scale + shift, self._weights, validate=False)

    @classmethod
    def cat(cls, batches: Sequence['Empirical']) -> 'Empirical':
        sizes = {b.samples.shape[1] for b in batches}
        if len(sizes) != 1:
            raise InvalidDistributionError(f'cannot concatenate empirical batches with different sample '
                                           f'counts {sorted(sizes)}; resample to a common m first')
        weighted = any(b.is_weighted for b in batches)
        w = torch.cat([b.weights for b in batches]) if weighted else None
        return Empirical(torch.cat([b.samples for b in batches]), w, validate=False)

    def __repr__(self) -> str:
        n, m, d = self._samples.shape
        return f'Empirical(n={n}, m={m}, d={d}, weighted={self.is_weighted})'


def cat(batches: Sequence[LocationDistributions]) -> LocationDistributions:
    """Concatenate batches; Dirac and Gaussian batches mix into a Gaussian batch.

    Raises:
        InvalidDistributionError: empty input, or sample-based batches mixed with parametric ones.
    """
    if not batches:
        raise InvalidDistributionError('nothing to concatenate')
    types = {type(b) for b in batches}
    if types == {Dirac}:
        return Dirac.cat(batches)
    if types <= {Dirac, Gaussian}:
        return Gaussian.cat([Gaussian.from_dirac(b) if isinstance(b, Dirac) else b for b in batches])
    if types == {Empirical}:
        return Empirical.cat(batches)
    raise InvalidDistributionError(f'cannot mix {sorted(t.__name__ for t in types)} in one batch')


class ExecutionNoise(ABC):
    r"""Model of execution noise :math:`\hat P_{\mathbf x}`: where the rover ends up when sent to ``x``.

    Calling the model on a batch of targets returns their location distributions; it must be
    differentiable w.r.t. the targets (acquisition maximisation takes gradients through it).
    """

    @abstractmethod
    def __call__(self, targets: Tensor) -> LocationDistributions:
        """Location distributions for ``targets`` of shape ``(q, d)``."""


DEFAULT_N_SAMPLES = 160
"""Samples per distribution by default (AIRBO's sampling size, App. D.2)."""


class NoiseConfigError(InvalidDistributionError):
    """An execution-noise configuration is invalid; the message names the offending field."""


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

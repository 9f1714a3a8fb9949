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

The module also holds the execution-noise models :math:`\hat P_{\mathbf x}` and the conversions from
ROS 2 covariance layouts.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import torch
from torch import Tensor

from .covariance import covariance_problem

__all__ = [
    'InvalidDistributionError', 'LocationDistributions', 'Dirac', 'Gaussian', 'Empirical',
    'ExecutionNoise', 'GaussianExecutionNoise', 'check_covariance', 'ros_covariance_to_xy', 'cat',
]

DTYPE = torch.float64


class InvalidDistributionError(ValueError):
    """A distribution's parameters are not valid (NaN/inf, wrong shape, covariance not PSD)."""


def check_covariance(cov: Tensor, *, atol: float = 1e-9) -> str | None:
    """Why ``cov`` is not a valid covariance, or None if it is.

    Args:
        cov: ``(..., d, d)`` candidate covariance matrices.
        atol: tolerance on asymmetry and on negative eigenvalues, relative to the largest absolute entry
            (absolute for an all-zero matrix).

    Returns:
        None when every matrix is finite, symmetric and positive semi-definite (the zero matrix is valid:
        a Dirac location); otherwise a short reason such as ``'not positive semi-definite (min eigenvalue
        -3.1)'``. (The work is done by the torch-free :func:`uncertain_bo.covariance.covariance_problem`,
        which the ROS message layer uses too.)
    """
    if isinstance(cov, Tensor):
        cov = cov.detach().to(device='cpu', dtype=DTYPE).numpy()
    return covariance_problem(cov, atol=atol)


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
        cov = torch.as_tensor(covariance, dtype=DTYPE)
        n, d = self._mean.shape
        if cov.ndim == 2:
            cov = cov.expand(n, d, d)
        if cov.shape != (n, d, d):
            raise InvalidDistributionError(
                f'covariance must have shape ({n}, {d}, {d}) or ({d}, {d}), got {tuple(cov.shape)}')
        if validate:
            if not torch.isfinite(self._mean).all():
                raise InvalidDistributionError('Gaussian means contain NaN or inf')
            for i in range(n) if n <= 64 else []:
                reason = check_covariance(cov[i].detach())
                if reason:
                    raise InvalidDistributionError(f'covariance of point {i} is invalid: {reason}')
            if n > 64:
                reason = check_covariance(cov.detach())
                if reason:
                    raise InvalidDistributionError(f'a covariance in the batch is invalid: {reason}')
        self._cov = cov

    @property
    def mean(self) -> Tensor:
        return self._mean

    @property
    def covariance(self) -> Tensor:
        return self._cov

    def sample(self, m: int, generator: torch.Generator | None = None) -> Tensor:
        n, d = self._mean.shape
        eps = torch.randn(n, m, d, dtype=DTYPE, generator=generator)
        return self._mean.unsqueeze(-2) + eps @ _psd_sqrt(self._cov).transpose(-1, -2)

    def __getitem__(self, index) -> 'Gaussian':
        i = self._index(index)
        return Gaussian(self._mean[i], self._cov[i], validate=False)

    def affine(self, scale: Tensor, shift: Tensor) -> 'Gaussian':
        scale = torch.as_tensor(scale, dtype=DTYPE)
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
            if validate and (not torch.isfinite(w).all() or (w < 0).any()):
                raise InvalidDistributionError('weights must be finite and non-negative')
            total = w.sum(-1, keepdim=True)
            if validate and (total <= 0).any():
                raise InvalidDistributionError('each distribution needs a positive total weight')
            weights = w / total
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


def _psd_sqrt(cov: Tensor) -> Tensor:
    """Matrix square root ``L`` with ``L Lᵀ = cov`` for PSD (possibly singular) ``cov``."""
    evals, evecs = torch.linalg.eigh(cov)
    return evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)


class ExecutionNoise(ABC):
    r"""Model of execution noise :math:`\hat P_{\mathbf x}`: where the rover ends up when sent to ``x``.

    Calling the model on a batch of targets returns their location distributions; it must be
    differentiable w.r.t. the targets (acquisition maximisation takes gradients through it).
    """

    @abstractmethod
    def __call__(self, targets: Tensor) -> LocationDistributions:
        """Location distributions for ``targets`` of shape ``(q, d)``."""


class GaussianExecutionNoise(ExecutionNoise):
    r"""Gaussian execution noise :math:`\hat P_{\mathbf x} = \mathcal N(\mathbf x, \hat\Sigma)` (paper Alg. 1).

    Args:
        covariance: ``(d, d)`` covariance :math:`\hat\Sigma` (input units squared, e.g. m²). A zero matrix
            gives Dirac targets (standard BO).

    Raises:
        InvalidDistributionError: ``covariance`` is not a valid covariance.
    """

    def __init__(self, covariance: Tensor):
        cov = torch.as_tensor(covariance, dtype=DTYPE)
        reason = check_covariance(cov)
        if reason or cov.ndim != 2:
            raise InvalidDistributionError(f'execution-noise covariance is invalid: {reason or "not (d, d)"}')
        self.covariance = cov

    @classmethod
    def isotropic(cls, std: float | Sequence[float], dim: int | None = None) -> 'GaussianExecutionNoise':
        """Diagonal noise from per-axis standard deviations (a scalar needs ``dim``)."""
        s = torch.as_tensor(std, dtype=DTYPE)
        if s.ndim == 0:
            if dim is None:
                raise ValueError('a scalar std needs dim')
            s = s.expand(dim)
        return cls(torch.diag(s ** 2))

    @property
    def dim(self) -> int:
        return self.covariance.shape[-1]

    def __call__(self, targets: Tensor) -> Gaussian:
        return Gaussian(targets, self.covariance, validate=False)

    def __repr__(self) -> str:
        return f'GaussianExecutionNoise(std={torch.diagonal(self.covariance).sqrt().tolist()})'

r"""Batches of location distributions over :math:`\mathbb R^d`, all behind one interface
(:class:`LocationDistributions`): :class:`Dirac` (exact points), :class:`Gaussian` (mean and covariance per point)
and :class:`Empirical` (weighted samples, e.g. particles); :func:`cat` concatenates batches, mixing Dirac and
Gaussian ones. Shapes and the paper each comes from: :mod:`uncertain_bo.distributions`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import torch
from torch import Tensor

from ..linalg import psd_sqrt
from .checks import DTYPE, InvalidDistributionError, _as_tensor, _first_covariance_problem, weights_problem

__all__ = ['LocationDistributions', 'Dirac', 'Gaussian', 'Empirical', 'cat', 'replace_rows']


class LocationDistributions(ABC):
    """A batch of ``n`` distributions over ``R^d`` (abstract base).

    Subclasses are immutable containers of tensors; operations return new batches. All tensors are
    float64. Gradients flow through the parameters (e.g. through a candidate target's mean during
    acquisition maximisation).

    Example:
        Every batch has means, covariances and samples, whatever it is made of; :func:`cat` joins batches of
        different kinds (a Dirac is a Gaussian of zero covariance):

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, Gaussian
        >>> x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
        >>> batch = cat([Gaussian(x, 0.25 * torch.eye(2, dtype=torch.float64)), Dirac(x)])
        >>> type(batch).__name__, len(batch), batch.covariance[:, 0, 0].tolist(), batch.sample(3).shape
        ('Gaussian', 2, [0.25, 0.0], torch.Size([2, 3, 2]))
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

    Example:
        >>> import torch
        >>> points = Dirac(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
        >>> points.covariance.abs().max().item(), points.sample(5).shape               # (n, m, d) samples
        (0.0, torch.Size([2, 5, 2]))
        >>> Dirac(torch.tensor([1.0, float('nan')]))
        Traceback (most recent call last):
        ...
        uncertain_bo.distributions.checks.InvalidDistributionError: ...
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

    Example:
        An EKF pose estimate, 0.5 m std along x and 0.2 m along y, and where the rover may really be:

        >>> import torch
        >>> pose = Gaussian(torch.tensor([[10.0, 5.0]], dtype=torch.float64), torch.diag(torch.tensor([0.25, 0.04])))
        >>> draws = pose.sample(20000, torch.Generator().manual_seed(0))[0]
        >>> [round(s, 1) for s in draws.std(0).tolist()]
        [0.5, 0.2]
        >>> Gaussian(torch.zeros(1, 2), torch.tensor([[1.0, 2.0], [2.0, 1.0]]))       # not PSD
        Traceback (most recent call last):
        ...
        uncertain_bo.distributions.checks.InvalidDistributionError: ...
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

    Example:
        A particle cloud of three weighted particles; its mean is the weighted mean:

        >>> import torch
        >>> cloud = Empirical(torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64),
        ...                   weights=torch.tensor([[2.0, 1.0, 1.0]], dtype=torch.float64))
        >>> cloud.weights.tolist(), cloud.mean.tolist()
        ([[0.5, 0.25, 0.25]], [[0.25, 0.25]])
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


def replace_rows(batch: LocationDistributions, rows: Tensor, new: LocationDistributions) -> LocationDistributions:
    """``batch`` with the distributions at ``rows`` replaced by ``new`` (one per row, in order); the kinds mix as in
    :func:`cat` (a Gaussian replacing a Dirac makes a Gaussian batch).

    Raises:
        InvalidDistributionError: kinds that :func:`cat` cannot mix, or ``len(new) != len(rows)``.
    """
    rows = torch.as_tensor(rows, dtype=torch.long, device=batch.mean.device).reshape(-1)
    if len(new) != rows.numel():
        raise InvalidDistributionError(f'{rows.numel()} rows but {len(new)} distributions to put there')
    n = len(batch)
    order = torch.arange(n, device=rows.device)
    order[rows] = n + torch.arange(rows.numel(), device=rows.device)
    return cat([batch, new])[order]


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

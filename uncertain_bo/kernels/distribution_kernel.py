r"""Base classes of the kernels over location distributions.

A kernel over distributions consumes a flat tensor encoding of a :class:`~uncertain_bo.distributions.
LocationDistributions` batch: each kernel class knows its encoding (:meth:`DistributionKernel.encode`),
so a model only ever hands it distribution batches. Inside a GPyTorch model the encoded tensor is the
"input", and the kernel behaves like any GPyTorch kernel (``forward(x1, x2, diag=False)``, constrained
hyperparameters, priors, ``ScaleKernel`` for the signal variance).

- :class:`DistributionKernel`: any distribution kernel (closed-form ones such as the expected SE kernel);
- :class:`SampleDistributionKernel`: kernels that see distributions through weighted samples (kernel mean
  embedding, MMD).
"""
from __future__ import annotations

from abc import abstractmethod

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from ..distributions import DTYPE, Dirac, Empirical, Gaussian, InvalidDistributionError, LocationDistributions
from ..linalg import psd_sqrt

__all__ = ['DistributionKernel', 'SampleDistributionKernel', 'DEFAULT_MAX_BLOCK', 'DEVICE_MAX_BLOCK']

DEFAULT_MAX_BLOCK = 1 << 18
"""Largest base-kernel block (entries) materialised at once by the sample-based kernels on the CPU (2 MiB, so
the scratch buffers stay in cache; with one thread on the 2-core development machine 2^16-2^18 entries ran
about 2x faster than 2^23). Set per kernel with ``max_block``."""

DEVICE_MAX_BLOCK = 1 << 24
"""Default ``max_block`` on an accelerator (CUDA, MPS): 2^24 entries (128 MiB in float64 per scratch block),
so a Table-1 size kernel matrix takes a handful of launches instead of thousands of cache-sized ones."""


class DistributionKernel(Kernel):
    """Base class of kernels whose inputs are location distributions.

    Subclasses define :meth:`encode` (distribution batch -> ``(n, D)`` tensor) and ``forward`` on the
    encoded tensors. ``dim`` is the dimension ``d`` of the space the distributions live in; lengthscales
    (if any) have one entry per space dimension (ARD), not per encoded column.

    Example:
        A subclass encodes a batch of location distributions into the tensor GPyTorch passes to ``forward``:

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.kernels import DistributionKernel, ExpectedRBFKernel
        >>> kernel = ExpectedRBFKernel(2)
        >>> isinstance(kernel, DistributionKernel), kernel.lengthscale.shape   # one lengthscale per dimension of R^d
        (True, torch.Size([1, 2]))
        >>> P = Gaussian(torch.zeros(3, 2, dtype=torch.float64),
        ...              0.01 * torch.eye(2, dtype=torch.float64).expand(3, 2, 2))
        >>> kernel.encode(P).shape                                              # [mean (d), vec(covariance) (d²)]
        torch.Size([3, 6])
    """

    def __init__(self, dim: int, **kwargs):
        super().__init__(ard_num_dims=dim, **kwargs)
        self.dim = dim
        # GPyTorch's debug check compares ard_num_dims with the encoded width (d + d² for Gaussians);
        # the lengthscale shape is already set, so switch the check off.
        self.ard_num_dims = None

    @abstractmethod
    def encode(self, distributions: LocationDistributions) -> Tensor:
        """``(n, D)`` encoding of a distribution batch consumed by ``forward``."""

    def check_dim(self, distributions: LocationDistributions) -> None:
        """Raise :class:`~uncertain_bo.distributions.InvalidDistributionError` unless ``distributions`` live in
        ``R^dim``."""
        if distributions.dim != self.dim:
            raise InvalidDistributionError(
                f'kernel expects distributions over R^{self.dim}, got R^{distributions.dim}')


def _standard_normals(m: int, d: int, seed: int) -> Tensor:
    """``(m, d)`` fixed normal draws, centred and whitened (exact first two sample moments) when ``m > d``."""
    gen = torch.Generator().manual_seed(int(seed))
    eps = torch.randn(m, d, dtype=DTYPE, generator=gen)
    if m > d + 1:
        eps = eps - eps.mean(0)
        chol = torch.linalg.cholesky(eps.T @ eps / m)
        eps = torch.linalg.solve_triangular(chol, eps.T, upper=False).T
    return eps


class SampleDistributionKernel(DistributionKernel):
    r"""Base class of kernels that see distributions through (weighted) samples.

    **Encoding** (``(n, m (d + 1))``): ``[samples (m d, row-major), weights (m)]`` per distribution, so any
    distribution type works with any sample-based kernel:

    - :class:`~uncertain_bo.distributions.Empirical`: its samples and normalised weights (the first
      ``max_samples`` when set, weights renormalised);
    - :class:`~uncertain_bo.distributions.Gaussian`: :math:`\boldsymbol\mu + L\boldsymbol\varepsilon_j`
      with ``n_samples`` fixed base normal draws :math:`\boldsymbol\varepsilon_j` (seeded, centred and
      whitened, shared by all distributions: deterministic, common random numbers);
    - :class:`~uncertain_bo.distributions.Dirac`: one sample of weight 1 (exact).

    ``m`` may differ between the two arguments of ``forward`` (it is read off the encoded width;
    GPyTorch's ``Kernel.__call__`` insists on equal widths, :class:`~uncertain_bo.models.DistributionGP`
    calls ``forward``).

    Args:
        dim: dimension ``d`` of the input space.
        n_samples: samples per Gaussian input.
        seed: seed of the base normal draws.
        max_samples: cap on the samples used per empirical input (None: all).
        max_block: largest base-kernel block materialised at once (entries); None: the class's CPU default
            (``cpu_max_block``) for CPU tensors, :data:`DEVICE_MAX_BLOCK` for tensors on an accelerator.
        **kwargs: GPyTorch ``Kernel`` arguments.

    Example:
        Every distribution is encoded as ``m`` weighted samples (a Gaussian by ``n_samples`` fixed base draws):

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, Gaussian
        >>> from uncertain_bo.kernels import KernelMeanEmbeddingKernel, SampleDistributionKernel
        >>> kernel = KernelMeanEmbeddingKernel(2, n_samples=16)
        >>> isinstance(kernel, SampleDistributionKernel)
        True
        >>> P = Gaussian(torch.zeros(3, 2, dtype=torch.float64),
        ...              0.01 * torch.eye(2, dtype=torch.float64).expand(3, 2, 2))
        >>> kernel.encode(P).shape, kernel.encode(Dirac(torch.zeros(3, 2, dtype=torch.float64))).shape   # m (d + 1)
        (torch.Size([3, 48]), torch.Size([3, 3]))
    """

    _ard_lengthscale = True
    cpu_max_block = DEFAULT_MAX_BLOCK

    def block_size(self, ref: Tensor) -> int:
        """Largest base-kernel block (entries) for tensors like ``ref``: ``max_block`` if set, else the CPU
        or accelerator default."""
        if self.max_block is not None:
            return self.max_block
        return self.cpu_max_block if ref.device.type == 'cpu' else DEVICE_MAX_BLOCK

    def __init__(self, dim: int, *, n_samples: int = 64, seed: int = 0, max_samples: int | None = None,
                 max_block: int | None = None, **kwargs):
        if self._ard_lengthscale:
            super().__init__(dim, **kwargs)
        else:
            Kernel.__init__(self, **kwargs)
            self.dim = dim
        if n_samples < 1 or (max_samples is not None and max_samples < 1):
            raise ValueError('n_samples and max_samples must be >= 1')
        self.n_samples, self.max_samples = int(n_samples), max_samples
        self.max_block = None if max_block is None else int(max_block)
        self.register_buffer('base_normals', _standard_normals(int(n_samples), dim, seed))
        self._normals_cache: tuple[Tensor, Tensor] | None = None

    def base_normals_like(self, ref: Tensor) -> Tensor:
        """``base_normals`` ``(n_samples, d)`` in the dtype and on the device of ``ref``.

        The draws are made once, on the CPU from ``seed``, so every device sees the same numbers (a CUDA
        posterior equals the CPU one); the copy for another device or dtype is made once and kept.
        """
        buf = self.base_normals
        if buf.device == ref.device and buf.dtype == ref.dtype:
            return buf
        cached = self._normals_cache
        if cached is None or cached[0] is not buf or cached[1].device != ref.device or cached[1].dtype != ref.dtype:
            self._normals_cache = cached = (buf, buf.to(device=ref.device, dtype=ref.dtype))
        return cached[1]

    def encode(self, distributions: LocationDistributions) -> Tensor:
        self.check_dim(distributions)
        if isinstance(distributions, Empirical):
            samples, weights = distributions.samples, distributions.weights
            if self.max_samples is not None and samples.shape[1] > self.max_samples:
                samples, weights = samples[:, :self.max_samples], weights[:, :self.max_samples]
                weights = weights / weights.sum(-1, keepdim=True)
        elif isinstance(distributions, Gaussian):
            cov = distributions.covariance
            root = psd_sqrt(cov, method='jittered_cholesky' if cov.requires_grad else 'eigh')
            samples = distributions.mean.unsqueeze(-2) + self.base_normals_like(cov) @ root.transpose(-1, -2)
            weights = samples.new_full(samples.shape[:-1], 1.0 / samples.shape[-2])
        elif isinstance(distributions, Dirac):
            samples = distributions.mean.unsqueeze(-2)
            weights = samples.new_ones(samples.shape[:-1])
        else:  # pragma: no cover - future types
            raise InvalidDistributionError(f'unsupported distribution type {type(distributions).__name__}')
        n, m, d = samples.shape
        return torch.cat([samples.reshape(n, m * d), weights], dim=-1)

    def decode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Encoded ``(..., n, m (d + 1))`` -> ``(samples (..., n, m, d), weights (..., n, m))``.

        Raises:
            InvalidDistributionError: the width is not a multiple of ``d + 1``.
        """
        d = self.dim
        width = x.shape[-1]
        if width % (d + 1):
            raise InvalidDistributionError(
                f'{type(self).__name__}(dim={d}) expects encoded inputs of width m*(d+1), got {width}; '
                f'encode distributions with kernel.encode()')
        m = width // (d + 1)
        return x[..., :m * d].reshape(*x.shape[:-1], m, d), x[..., m * d:]

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError(f'last_dim_is_batch is not supported by {type(self).__name__}')
        if x1.ndim == 2 and x2.ndim == 2:
            return self._forward_2d(x1, x2, diag)
        batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        a = x1.expand(*batch, *x1.shape[-2:]).reshape(-1, *x1.shape[-2:])
        b = x2.expand(*batch, *x2.shape[-2:]).reshape(-1, *x2.shape[-2:])
        out = torch.stack([self._forward_2d(a[i], b[i], diag) for i in range(a.shape[0])])
        return out.reshape(*batch, *out.shape[1:])

    @abstractmethod
    def _forward_2d(self, x1: Tensor, x2: Tensor, diag: bool) -> Tensor:
        """Kernel on unbatched encoded inputs ``(n1, D1), (n2, D2)``."""

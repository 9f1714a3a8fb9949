r"""Kernels over location distributions, as GPyTorch kernels.

A kernel over distributions consumes a flat tensor encoding of a :class:`~uncertain_bo.distributions.
LocationDistributions` batch: each kernel class knows its encoding (:meth:`DistributionKernel.encode`),
so a model only ever hands it distribution batches. Inside a GPyTorch model the encoded tensor is the
"input", and the kernel behaves like any GPyTorch kernel (``forward(x1, x2, diag=False)``, constrained
hyperparameters, priors, ``ScaleKernel`` for the signal variance).
"""
from __future__ import annotations

from abc import abstractmethod

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from .distributions import DTYPE, Dirac, Empirical, Gaussian, InvalidDistributionError, LocationDistributions

__all__ = ['DistributionKernel', 'ExpectedRBFKernel']


class DistributionKernel(Kernel):
    """Base class of kernels whose inputs are location distributions.

    Subclasses define :meth:`encode` (distribution batch -> ``(n, D)`` tensor) and ``forward`` on the
    encoded tensors. ``dim`` is the dimension ``d`` of the space the distributions live in; lengthscales
    (if any) have one entry per space dimension (ARD), not per encoded column.
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


class ExpectedRBFKernel(DistributionKernel):
    r"""Expected squared-exponential kernel between Gaussian location distributions (closed form).

    The kernel mean embedding inner product of the SE kernel (Oliveira et al. 2019, Eq. 9) for Gaussian
    inputs, App. A.8 Eq. 80 (= Girard 2004, Eq. 3.53), without the signal variance (wrap it in
    ``gpytorch.kernels.ScaleKernel`` for :math:`\sigma_f^2`):

    .. math::
        \hat k(\mathcal N(\hat{\mathbf x}, \Sigma), \mathcal N(\hat{\mathbf x}', \Sigma')) =
        |I + W^{-1}(\Sigma + \Sigma')|^{-1/2}
        \exp\!\big(-\tfrac12 (\hat{\mathbf x} - \hat{\mathbf x}')^\top (W + \Sigma + \Sigma')^{-1}
        (\hat{\mathbf x} - \hat{\mathbf x}')\big),

    with :math:`W = \mathrm{diag}(\ell_1^2, \dots, \ell_d^2)` (ARD lengthscales). Both arguments may carry
    their own covariance; Dirac inputs (:math:`\Sigma = 0`) give the plain SE kernel
    :math:`\exp(-\tfrac12 \|(\mathbf x - \mathbf x') / \ell\|^2)`. Note
    :math:`\hat k(P, P) = |I + 2 W^{-1}\Sigma|^{-1/2} < 1`: the two arguments are independent copies.

    Encoding: ``[mean (d), vec(covariance) (d²)]`` per distribution, i.e. ``(n, d + d²)``. Sample-based
    distributions are moment-matched (a Gaussian approximation; use a sample-based kernel to keep their
    shape).

    Args:
        dim: dimension ``d`` of the input space.
        **kwargs: GPyTorch ``Kernel`` arguments (``lengthscale_prior``, ``lengthscale_constraint``,
            ``batch_shape``).
    """

    has_lengthscale = True

    def encode(self, distributions: LocationDistributions) -> Tensor:
        if distributions.dim != self.dim:
            raise InvalidDistributionError(
                f'kernel expects distributions over R^{self.dim}, got R^{distributions.dim}')
        if isinstance(distributions, (Dirac, Gaussian, Empirical)):
            mean, cov = distributions.mean, distributions.covariance
        else:  # pragma: no cover - future types
            raise InvalidDistributionError(f'unsupported distribution type {type(distributions).__name__}')
        return torch.cat([mean, cov.reshape(*cov.shape[:-2], self.dim * self.dim)], dim=-1)

    def _split(self, x: Tensor) -> tuple[Tensor, Tensor]:
        d = self.dim
        if x.shape[-1] != d + d * d:
            raise InvalidDistributionError(
                f'ExpectedRBFKernel(dim={d}) expects encoded inputs of width {d + d * d} '
                f'(mean, vec(cov)), got {x.shape[-1]}; encode distributions with kernel.encode()')
        return x[..., :d], x[..., d:].reshape(*x.shape[:-1], d, d)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError('last_dim_is_batch is not supported by ExpectedRBFKernel')
        ell = self.lengthscale  # (*batch, 1, d)
        m1, s1 = self._split(x1)
        m2, s2 = self._split(x2)
        # Work in lengthscale units: x/ℓ, Σ/(ℓℓᵀ); then A = I + Σ̃1 + Σ̃2 and
        # k = |A|^{-1/2} exp(-½ Δ̃ᵀ A⁻¹ Δ̃), identical to Eq. 80.
        inv_ell = ell.reciprocal()
        m1, m2 = m1 * inv_ell, m2 * inv_ell
        outer = inv_ell.unsqueeze(-1) * inv_ell.unsqueeze(-2)  # (*batch, 1, d, d)
        s1, s2 = s1 * outer, s2 * outer
        eye = torch.eye(self.dim, dtype=x1.dtype, device=x1.device)
        if not diag and m1.ndim == 2 and m2.ndim == 2:
            fast = _shared_covariance_kernel(m1, s1, m2, s2, eye)
            if fast is not None:
                return fast
        if diag:
            a = eye + s1 + s2
            delta = m1 - m2
        else:
            a = eye + s1.unsqueeze(-3) + s2.unsqueeze(-4)  # (..., n1, n2, d, d)
            delta = m1.unsqueeze(-2) - m2.unsqueeze(-3)   # (..., n1, n2, d)
        quad, half_logdet = gaussian_quadratic_and_logdet(a, delta)
        return torch.exp(-0.5 * quad - half_logdet)


def _common(s: Tensor) -> Tensor | None:
    """The covariance shared by every row of ``s`` ``(n, d, d)``, or None if they differ."""
    return s[0] if s.shape[0] > 0 and bool((s == s[:1]).all()) else None


def _shared_covariance_kernel(m1: Tensor, s1: Tensor, m2: Tensor, s2: Tensor, eye: Tensor) -> Tensor | None:
    r"""Eq. 80 (lengthscale units, unbatched ``(n, d)`` / ``(n, d, d)`` inputs) when at least one side's
    covariances are all equal — e.g. candidates from one execution-noise model — or None otherwise.

    Same values as the pairwise path, fewer operations: with both sides shared every pair has the same
    :math:`A = I + \tilde\Sigma_1 + \tilde\Sigma_2`, so both means are whitened by one Cholesky factor and the
    kernel is an SE kernel of the whitened means; with one side shared, :math:`A_j` depends on the other
    side's row only and is factored once per row instead of once per pair. Gradients w.r.t. means,
    lengthscales and a covariance parameter shared by the rows are those of the pairwise path; rows whose
    covariances are equal but are separate leaf tensors get their covariance gradient lumped into row 0
    (covariances are data here, never per-row optimisation variables).
    """
    c1, c2 = _common(s1), _common(s2)
    if c1 is not None and c2 is not None:
        chol = torch.linalg.cholesky(eye + c1 + c2)
        w1 = torch.linalg.solve_triangular(chol, m1.T, upper=False).T
        w2 = torch.linalg.solve_triangular(chol, m2.T, upper=False).T
        sq = (w1.unsqueeze(-2) - w2.unsqueeze(-3)).pow(2).sum(-1)
        return torch.exp(-0.5 * sq - torch.diagonal(chol).log().sum())
    if c1 is None and c2 is None or m1.shape[-1] > _UNROLL_MAX_DIM:
        return None
    if c1 is not None:  # factors indexed by the rows of x2: broadcast over x1's rows
        lower = _unrolled_cholesky(eye + c1 + s2)
    else:               # factors indexed by the rows of x1: broadcast over x2's rows
        lower = [[None if v is None else v.unsqueeze(-1) for v in row] for row in _unrolled_cholesky(eye + s1 + c2)]
    delta = m1.unsqueeze(-2) - m2.unsqueeze(-3)  # (n1, n2, d)
    quad, half_logdet = None, None
    z: list[Tensor] = []
    for j in range(len(lower)):
        r = delta[..., j]
        for k in range(j):
            r = r - lower[j][k] * z[k]
        zj = r / lower[j][j]
        z.append(zj)
        quad = zj * zj if quad is None else quad + zj * zj
        ljj = lower[j][j].log()
        half_logdet = ljj if half_logdet is None else half_logdet + ljj
    return torch.exp(-0.5 * quad - half_logdet)


def _unrolled_cholesky(a: Tensor) -> list[list[Tensor | None]]:
    """Lower Cholesky entries of ``(..., d, d)`` SPD matrices as a nested list of ``(...)`` tensors."""
    d = a.shape[-1]
    lower: list[list[Tensor | None]] = [[None] * d for _ in range(d)]
    for j in range(d):
        s = a[..., j, j]
        for k in range(j):
            s = s - lower[j][k] * lower[j][k]
        lower[j][j] = s.sqrt()
        for i in range(j + 1, d):
            s = a[..., i, j]
            for k in range(j):
                s = s - lower[i][k] * lower[j][k]
            lower[i][j] = s / lower[j][j]
    return lower


def gaussian_quadratic_and_logdet(a: Tensor, delta: Tensor) -> tuple[Tensor, Tensor]:
    r"""Batched :math:`\Delta^\top A^{-1} \Delta` and :math:`\tfrac12 \log|A|` for SPD ``A``.

    Args:
        a: ``(..., d, d)`` symmetric positive-definite matrices.
        delta: ``(..., d)`` vectors.

    Returns:
        ``(quad (...), half_logdet (...))``.

    For small ``d`` the Cholesky factorisation is unrolled over the matrix indices and vectorised over
    the batch: kernel matrices need one tiny factorisation per *pair* of inputs, where LAPACK's per-matrix
    overhead dominates (about 7x faster than ``torch.linalg.cholesky`` + ``solve_triangular`` for
    160 000 2x2 matrices). Larger ``d`` uses ``torch.linalg``.
    """
    d = a.shape[-1]
    if d > _UNROLL_MAX_DIM:
        chol = torch.linalg.cholesky(a)
        z = torch.linalg.solve_triangular(chol, delta.unsqueeze(-1), upper=False).squeeze(-1)
        return z.pow(2).sum(-1), torch.diagonal(chol, dim1=-2, dim2=-1).log().sum(-1)
    lower: list[list[Tensor]] = [[None] * d for _ in range(d)]  # type: ignore[list-item]
    z: list[Tensor] = []
    half_logdet = quad = None
    for j in range(d):
        s = a[..., j, j]
        for k in range(j):
            s = s - lower[j][k] * lower[j][k]
        ljj = s.sqrt()
        lower[j][j] = ljj
        for i in range(j + 1, d):
            s = a[..., i, j]
            for k in range(j):
                s = s - lower[i][k] * lower[j][k]
            lower[i][j] = s / ljj
        r = delta[..., j]
        for k in range(j):
            r = r - lower[j][k] * z[k]
        zj = r / ljj
        z.append(zj)
        quad = zj * zj if quad is None else quad + zj * zj
        half_logdet = ljj.log() if half_logdet is None else half_logdet + ljj.log()
    return quad, half_logdet


_UNROLL_MAX_DIM = 6


# =====================================================================================================
# Sample-based kernels: kernel mean embedding (uGP), MMD (AIRBO) and the symmetrised-KL baseline.
# =====================================================================================================

import math  # noqa: E402
import weakref  # noqa: E402

from gpytorch.constraints import Interval, Positive  # noqa: E402
from gpytorch.kernels import GaussianSymmetrizedKLKernel  # noqa: E402
from gpytorch.priors import Prior  # noqa: E402

__all__ += ['squared_distances', 'AdditiveRQKernel', 'SampleDistributionKernel', 'KernelMeanEmbeddingKernel',
            'MMDKernel', 'SymmetrizedKLKernel', 'embedding_inner_products', 'embedding_self_inner_products',
            'embedding_paired_inner_products']

DEFAULT_MAX_BLOCK = 1 << 18
"""Largest base-kernel block (entries) materialised at once by the sample-based kernels (2 MiB, so the
scratch buffers stay in cache; with one thread on the 2-core development machine 2^16-2^18 entries ran
about 2x faster than 2^23). Set per kernel with ``max_block``."""


MMD_MAX_BLOCK = 1 << 16
"""Default ``max_block`` of :class:`MMDKernel`: with the additive-RQ base kernel (four scratch blocks) 2^16
entries keep the working set in the 2 MiB per-core L2 cache; AIRBO's Table-1 posterior (Nyström m = 1000,
h = 100, one thread, shared 2-core machine) ran about 1.5x faster than with 2^18."""


def squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """Pairwise squared Euclidean distances ``(..., N, d), (..., M, d) -> (..., N, M)``.

    Exact differences for ``d <= 2`` (no cancellation for tightly clustered samples); the Gram-matrix
    expansion (clamped at 0) above.
    """
    d = a.shape[-1]
    if d == 1:
        return (a - b.transpose(-1, -2)).pow(2)
    if d == 2:
        return (a.unsqueeze(-2) - b.unsqueeze(-3)).pow(2).sum(-1)
    a2 = a.pow(2).sum(-1, keepdim=True)
    b2 = b.pow(2).sum(-1, keepdim=True).transpose(-1, -2)
    return (a2 + b2 - 2.0 * (a @ b.transpose(-1, -2))).clamp_min(0.0)


def _rq_term(z: Tensor, alpha: float) -> Tensor:
    r""":math:`(1 + z)^{-\alpha}` with cheap special cases for AIRBO's alphas (no ``pow`` for 0.5, 1, 2, 5)."""
    base = 1.0 + z
    if alpha == 1.0:
        return base.reciprocal()
    if alpha == 0.5:
        return base.rsqrt()
    if alpha == 2.0:
        return base.reciprocal().square()
    if alpha == 5.0:
        r = base.reciprocal()
        r2 = r.square()
        return r2.square() * r
    return torch.exp(-alpha * torch.log1p(z))


def _rq_sum_inplace(r2: Tensor, coefs: list[float], alphas: tuple[float, ...]) -> Tensor:
    r""":math:`\sum_i (1 + c_i r^2)^{-a_i}` without autograd, in place (two scratch buffers).

    For :math:`a \in \{0.5, 1, 2, 5\}` uses :math:`(1 + c r^2)^{-a} = c^{-a} (r^2 + 1/c)^{-a}` (shift,
    ``rsqrt``/``reciprocal``, scaled accumulate); other :math:`a` as :math:`\exp(-a \log(1 + c r^2))`, which
    is what the differentiable path computes and about half the cost of ``pow_`` (float64, measured).
    ``r2`` is left unchanged.
    """
    out = None
    tmp = torch.empty_like(r2)
    tmp2 = None
    for c, a in zip(coefs, alphas):
        if a not in (0.5, 1.0, 2.0, 5.0):
            torch.mul(r2, c, out=tmp).log1p_().mul_(-a).exp_()
            if out is None:
                out, tmp = tmp, torch.empty_like(r2)
            else:
                out.add_(tmp)
            continue
        torch.add(r2, 1.0 / c, out=tmp)
        scale = c ** -a
        if a == 0.5:
            tmp.rsqrt_()
        elif a == 1.0:
            tmp.reciprocal_()
        else:
            tmp.reciprocal_()
            if a == 5.0:
                tmp2 = torch.mul(tmp, tmp, out=tmp2 if tmp2 is not None else torch.empty_like(r2))
                tmp2.square_()
            if out is None:
                out = torch.mul(tmp2 if a == 5.0 else tmp, tmp).mul_(scale)
            else:
                out.addcmul_(tmp2 if a == 5.0 else tmp, tmp, value=scale)
            continue
        if out is None:
            out = tmp.mul(scale)
        else:
            out.add_(tmp, alpha=scale)
    return out


class AdditiveRQKernel(Kernel):
    r"""Sum of rational-quadratic kernels, AIRBO's base kernel inside the MMD (App. C.1, Eq. 32).

    .. math::
        k(\mathbf x, \mathbf x') = \sum_{i} \Big(1 + \frac{\|\mathbf x - \mathbf x'\|^2}{2 a_i l_i^2}\Big)^{-a_i},
        \qquad a_i \in \{0.2, 0.5, 1, 2, 5\},

    with one learnable lengthscale :math:`l_i` per term (initial value 1.0, unit-cube units, as in the
    reference code) and **fixed** :math:`a_i` (the paper's choice; the reference code also trains them,
    digest §6 item 8). Each term is GPyTorch's ``RQKernel`` with ``alpha = a_i``; this class computes the
    squared distances once for all terms and avoids ``pow`` for :math:`a_i \in \{0.5, 1, 2, 5\}`.
    :math:`k(\mathbf x, \mathbf x) = ` number of terms.

    Args:
        alphas: the :math:`a_i` (> 0).
        lengthscale: initial :math:`l_i` (scalar or one per term).
        lengthscale_constraint: constraint on each :math:`l_i` (default ``Positive()``).
        lengthscale_prior: optional prior on the ``(len(alphas),)`` lengthscales.

    Raises:
        ValueError: empty or non-positive ``alphas``.
    """

    def __init__(self, alphas: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 5.0), lengthscale: float | Tensor = 1.0,
                 lengthscale_constraint: Interval | None = None, lengthscale_prior: Prior | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        alphas = tuple(float(a) for a in alphas)
        if not alphas or min(alphas) <= 0:
            raise ValueError(f'alphas must be a non-empty tuple of positive numbers, got {alphas}')
        self._alpha_values = alphas
        self.register_buffer('alphas', torch.tensor(alphas, dtype=DTYPE))
        self.register_parameter('raw_lengthscales', torch.nn.Parameter(torch.zeros(len(alphas), dtype=DTYPE)))
        self.register_constraint('raw_lengthscales', lengthscale_constraint or Positive())
        if lengthscale_prior is not None:
            self.register_prior('lengthscales_prior', lengthscale_prior, lambda m: m.lengthscales,
                                lambda m, v: m._set_lengthscales(v))
        self._set_lengthscales(lengthscale)

    @property
    def lengthscales(self) -> Tensor:
        """``(len(alphas),)`` lengthscales :math:`l_i`."""
        return self.raw_lengthscales_constraint.transform(self.raw_lengthscales)

    @lengthscales.setter
    def lengthscales(self, value) -> None:
        self._set_lengthscales(value)

    def _set_lengthscales(self, value) -> None:
        v = torch.as_tensor(value, dtype=self.raw_lengthscales.dtype).expand(len(self._alpha_values))
        self.initialize(raw_lengthscales=self.raw_lengthscales_constraint.inverse_transform(v))

    def from_squared_distances(self, r2: Tensor) -> Tensor:
        """:math:`\\sum_i (1 + r^2 / (2 a_i l_i^2))^{-a_i}` elementwise on squared distances ``r2``.

        Without autograd (``torch.no_grad()``) the terms are accumulated in place in two scratch buffers,
        about 2-3x faster on large blocks than the differentiable path.
        """
        coef = 1.0 / (2.0 * self.alphas.to(r2) * self.lengthscales.to(r2).pow(2))
        if torch.is_grad_enabled() and (r2.requires_grad or coef.requires_grad):
            out = None
            for i, a in enumerate(self._alpha_values):
                t = _rq_term(r2 * coef[i], a)
                out = t if out is None else out + t
            return out
        return _rq_sum_inplace(r2, coef.tolist(), self._alpha_values)

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError('last_dim_is_batch is not supported by AdditiveRQKernel')
        r2 = (x1 - x2).pow(2).sum(-1) if diag else squared_distances(x1, x2)
        return self.from_squared_distances(r2)


# ------------------------------------------------------------------------ kernel mean embeddings
def _chunks(n: int, size: int):
    size = max(1, int(size))
    return [(i, min(n, i + size)) for i in range(0, n, size)]


def embedding_inner_products(u: Tensor, w: Tensor, v: Tensor, z: Tensor, kernel_fn,
                             max_block: int = DEFAULT_MAX_BLOCK, symmetric: bool = False) -> Tensor:
    r"""Inner products of (weighted) kernel mean embeddings, :math:`\langle\hat\mu_P, \hat\mu_Q\rangle =
    \sum_{i,j} w_i z_j\, k(u_i, v_j)`, for all pairs.

    Args:
        u: ``(n1, m1, d)`` points of the first batch; ``w``: ``(n1, m1)`` their weights (any sign: Nyström
            coefficients are signed).
        v: ``(n2, m2, d)``, ``z``: ``(n2, m2)``: the second batch.
        kernel_fn: base kernel ``(..., N, d), (..., M, d) -> (..., N, M)``.
        max_block: largest kernel block materialised at once (entries); pairs are processed in blocks of
            distributions, so memory is bounded whatever ``n1``, ``n2``.
        symmetric: the two batches are the same (``u is v``, ``w is z``): compute the blocks on and above
            the diagonal only and mirror them (half the cost).

    Returns:
        ``(n1, n2)`` matrix. Cost :math:`O(n_1 n_2 m_1 m_2)` kernel evaluations.
    """
    n1, m1, d = u.shape
    n2, m2, _ = v.shape
    per_block = max(1, max_block // max(1, m1 * m2))  # distribution pairs per block

    def block(i0, i1, j0, j1):
        k = kernel_fn(u[i0:i1].reshape(-1, d), v[j0:j1].reshape(-1, d))  # (c1 m1, c2 m2)
        t = (w[i0:i1].unsqueeze(1) @ k.reshape(i1 - i0, m1, (j1 - j0) * m2)).reshape(i1 - i0, j1 - j0, m2)
        return (t * z[j0:j1]).sum(-1)

    if symmetric:
        chunks = _chunks(n1, max(1, math.isqrt(per_block)))
        upper = {(a, b): block(*chunks[a], *chunks[b]) for a in range(len(chunks)) for b in range(a, len(chunks))}
        return torch.cat([torch.cat([upper[(a, b)] if b >= a else upper[(b, a)].transpose(-1, -2)
                                     for b in range(len(chunks))], dim=-1) for a in range(len(chunks))], dim=0)
    c2 = min(n2, per_block)
    c1 = max(1, per_block // c2)
    return torch.cat([torch.cat([block(i0, i1, j0, j1) for j0, j1 in _chunks(n2, c2)], dim=-1)
                      for i0, i1 in _chunks(n1, c1)], dim=0)


def embedding_paired_inner_products(u: Tensor, w: Tensor, v: Tensor, z: Tensor, kernel_fn,
                                    max_block: int = DEFAULT_MAX_BLOCK) -> Tensor:
    r""":math:`\langle\hat\mu_{P_i}, \hat\mu_{Q_i}\rangle` for matched pairs ``i`` (kernel diagonal), ``(n,)``.

    Shapes as :func:`embedding_inner_products` with ``n1 == n2 == n``; ``kernel_fn`` must accept a leading
    batch dimension.
    """
    n, m1, _ = u.shape
    m2 = v.shape[1]
    out = []
    for i0, i1 in _chunks(n, max_block // max(1, m1 * m2)):
        k = kernel_fn(u[i0:i1], v[i0:i1])  # (c, m1, m2)
        out.append((w[i0:i1].unsqueeze(1) @ k @ z[i0:i1].unsqueeze(-1)).reshape(-1))
    return torch.cat(out)


def embedding_self_inner_products(u: Tensor, w: Tensor, kernel_fn, max_block: int = DEFAULT_MAX_BLOCK) -> Tensor:
    r""":math:`\|\hat\mu_{P_i}\|^2 = \sum_{j,l} w_j w_l k(u_j, u_l)` per distribution, ``(n,)``."""
    return embedding_paired_inner_products(u, w, u, w, kernel_fn, max_block)


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
        max_block: largest base-kernel block materialised at once (entries).
        **kwargs: GPyTorch ``Kernel`` arguments.
    """

    _ard_lengthscale = True

    def __init__(self, dim: int, *, n_samples: int = 64, seed: int = 0, max_samples: int | None = None,
                 max_block: int = DEFAULT_MAX_BLOCK, **kwargs):
        if self._ard_lengthscale:
            super().__init__(dim, **kwargs)
        else:
            Kernel.__init__(self, **kwargs)
            self.dim = dim
        if n_samples < 1 or (max_samples is not None and max_samples < 1):
            raise ValueError('n_samples and max_samples must be >= 1')
        self.n_samples, self.max_samples, self.max_block = int(n_samples), max_samples, int(max_block)
        self.register_buffer('base_normals', _standard_normals(int(n_samples), dim, seed))

    def encode(self, distributions: LocationDistributions) -> Tensor:
        if distributions.dim != self.dim:
            raise InvalidDistributionError(
                f'kernel expects distributions over R^{self.dim}, got R^{distributions.dim}')
        if isinstance(distributions, Empirical):
            samples, weights = distributions.samples, distributions.weights
            if self.max_samples is not None and samples.shape[1] > self.max_samples:
                samples, weights = samples[:, :self.max_samples], weights[:, :self.max_samples]
                weights = weights / weights.sum(-1, keepdim=True)
        elif isinstance(distributions, Gaussian):
            cov = distributions.covariance
            if cov.requires_grad:
                scale = cov.detach().diagonal(dim1=-2, dim2=-1).amax().clamp_min(1e-300)
                root = torch.linalg.cholesky(cov + 1e-12 * scale * torch.eye(self.dim, dtype=cov.dtype))
            else:
                evals, evecs = torch.linalg.eigh(cov)
                root = evecs * evals.clamp_min(0).sqrt().unsqueeze(-2)
            samples = distributions.mean.unsqueeze(-2) + self.base_normals.to(cov) @ root.transpose(-1, -2)
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


class KernelMeanEmbeddingKernel(SampleDistributionKernel):
    r"""Integral (kernel mean embedding) kernel of uGP-UCB, estimated from samples (Oliveira et al. 2019,
    Eq. 9; AIRBO §5.3 baseline "uGP").

    .. math::
        \hat k(P, Q) = \langle \hat\mu_P, \hat\mu_Q \rangle = \sum_{i,j} w_i z_j\,
        k(\mathbf u_i, \mathbf v_j), \qquad
        k(\mathbf u, \mathbf v) = \exp\!\big(-\tfrac12 \|(\mathbf u - \mathbf v) / \boldsymbol\ell\|^2\big),

    for :math:`P = \sum_i w_i \delta_{\mathbf u_i}`, :math:`Q = \sum_j z_j \delta_{\mathbf v_j}` (weights
    respected; uniform weights give the plain average :math:`\frac{1}{m^2}\sum_{i,j}`). SE base kernel with
    ARD lengthscales :math:`\boldsymbol\ell` (one per input dimension), no signal variance (wrap in
    ``ScaleKernel``). For Gaussian inputs this converges to :class:`ExpectedRBFKernel` (its closed form).
    Cost :math:`O(m_1 m_2)` per pair; the diagonal uses the same (V-statistic) estimate, so the kernel
    matrix is PSD. Encoding and arguments: :class:`SampleDistributionKernel`.
    """

    has_lengthscale = True

    def _forward_2d(self, x1, x2, diag):
        u, w = self.decode(x1)
        v, z = self.decode(x2)
        inv_ell = self.lengthscale.reshape(-1).reciprocal()
        u, v = u * inv_ell, v * inv_ell

        def se(a, b):
            return torch.exp(-0.5 * squared_distances(a, b))

        if diag:
            return embedding_paired_inner_products(u, w, v, z, se, self.max_block)
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        return embedding_inner_products(u, w, v, z, se, self.max_block, symmetric=same)


class MMDKernel(SampleDistributionKernel):
    r"""MMD kernel over distributions, AIRBO's surrogate kernel (Yang et al. 2023, Eqs. 8, 9, 12).

    .. math::
        \hat k(P, Q) = \exp\!\big(-\mathrm{MMD}^2(P, Q) / (2\ell^2)\big)

    (the reference code's form; paper Eq. 9 with :math:`\alpha = 1/(2\ell^2)`; wrap in ``ScaleKernel`` for
    the output scale :math:`s`). :math:`\ell` is a single learnable lengthscale in MMD units. The base
    kernel :math:`k` inside the MMD defaults to :class:`AdditiveRQKernel` (Eq. 32).

    **Estimators** of :math:`\mathrm{MMD}^2` from samples :math:`\{\mathbf u_i\}_{i=1}^{m_1} \sim P` (weights
    :math:`w`) and :math:`\{\mathbf v_j\}_{j=1}^{m_2} \sim Q` (weights :math:`z`):

    - ``'empirical'``: Eq. 8. With ``unbiased=True`` (default) the U-statistic
      :math:`\hat U_P + \hat U_Q - 2\sum_{ij} w_i z_j k(\mathbf u_i, \mathbf v_j)`, with the weighted
      within-sample term :math:`\hat U_P = (\sum_{i \ne j} w_i w_j k(\mathbf u_i, \mathbf u_j)) / (1 -
      \sum_i w_i^2)` (:math:`= \frac{1}{m(m-1)}\sum_{i \ne j}` for uniform weights; a single-sample input,
      e.g. a Dirac, uses its exact value). It can be negative. ``unbiased=False`` is the V-statistic
      (diagonal terms kept), :math:`\|\hat\mu_P - \hat\mu_Q\|^2 \ge 0`.
    - ``'nystrom'``: Eq. 12 in its exact implementable form (digest §2.3; Chatalic et al. 2022): ``h =
      n_landmarks`` landmarks :math:`\tilde U` per distribution,
      :math:`a_P = (K(\tilde U, \tilde U) + \lambda I)^{-1} K(\tilde U, U)\,\mathbf w`, and
      :math:`\mathrm{MMD}^2 = a_P^\top K(\tilde U, \tilde U) a_P + a_Q^\top K(\tilde V, \tilde V) a_Q - 2\,
      a_P^\top K(\tilde U, \tilde V) a_Q`. :math:`a_P` costs :math:`O(mh + h^3)` once per distribution,
      each pair :math:`O(h^2)`. The jitter :math:`\lambda` (``jitter`` x mean diagonal) replaces the
      reference code's ``pinv`` (same limit, differentiable and stable for clustered samples). With
      ``h >= m`` it equals the V-statistic up to the jitter.

    **Determinism and PSD.** Landmark indices are drawn once per sample count ``m`` from
    ``landmark_seed`` (the same indices for every distribution, as in the reference code) and kept until
    :meth:`resample_landmarks`; with fixed base samples of the execution-noise model the kernel is a
    deterministic function of the targets. The V-statistic and Nyström estimates are squared RKHS
    distances between (approximate) mean embeddings, so :math:`\hat k` is positive semi-definite; the
    U-statistic differs from the V-statistic by per-distribution constants :math:`c_P + c_Q`, which makes
    :math:`\hat K_U = \mathrm{diag}(f) \hat K_V \mathrm{diag}(f)` (:math:`f_P = e^{-c_P/(2\ell^2)}`), also
    PSD when the diagonal uses the same estimator (it does here; :math:`\hat k_U(P, P) \ge 1`). The
    estimated distance matrix of a set with itself is symmetrised, :math:`D \leftarrow (D + D^\top)/2`.

    Args:
        dim: input dimension ``d``.
        estimator: ``'nystrom'`` or ``'empirical'``.
        n_landmarks: Nyström sub-sample size ``h`` (``min(h, m)`` is used).
        base_kernel: a GPyTorch kernel on points accepting batch dimensions (default
            :class:`AdditiveRQKernel`).
        unbiased: U-statistic (True) or V-statistic for ``'empirical'``.
        landmark_seed: seed of the landmark indices.
        jitter: relative ridge added to :math:`K(\tilde U, \tilde U)` (Nyström).
        **kwargs: :class:`SampleDistributionKernel` arguments (``n_samples``, ``seed``, ``max_samples``,
            ``max_block``) and GPyTorch ``Kernel`` arguments (``lengthscale_prior``,
            ``lengthscale_constraint``).

    Raises:
        ValueError: unknown estimator, ``n_landmarks < 1``.
    """

    has_lengthscale = True
    _ard_lengthscale = False

    def __init__(self, dim: int, estimator: str = 'nystrom', n_landmarks: int = 100,
                 base_kernel: Kernel | None = None, *, unbiased: bool = True, landmark_seed: int = 0,
                 jitter: float = 1e-10, **kwargs):
        if estimator not in ('nystrom', 'empirical'):
            raise ValueError(f"estimator must be 'nystrom' or 'empirical', got {estimator!r}")
        if int(n_landmarks) < 1:
            raise ValueError(f'n_landmarks must be >= 1, got {n_landmarks}')
        kwargs.setdefault('max_block', MMD_MAX_BLOCK)
        super().__init__(dim, **kwargs)
        self.estimator, self.n_landmarks, self.unbiased = estimator, int(n_landmarks), bool(unbiased)
        self.landmark_seed, self.jitter = int(landmark_seed), float(jitter)
        self.base_kernel = base_kernel if base_kernel is not None else AdditiveRQKernel()
        self._landmarks: dict[int, Tensor] = {}
        self._memo: list[tuple[weakref.ref, tuple, tuple[Tensor, ...]]] = []

    # --------------------------------------------------------------- landmarks
    def landmark_indices(self, m: int) -> Tensor:
        """Indices of the ``min(h, m)`` landmarks among ``m`` samples (fixed until :meth:`resample_landmarks`)."""
        if m not in self._landmarks:
            gen = torch.Generator().manual_seed(self.landmark_seed * 1_000_003 + m)
            self._landmarks[m] = torch.randperm(m, generator=gen)[:min(self.n_landmarks, m)].sort().values
        return self._landmarks[m]

    def resample_landmarks(self, seed: int | None = None) -> None:
        """Draw new landmark indices (from ``seed``, or ``landmark_seed + 1``)."""
        self.landmark_seed = self.landmark_seed + 1 if seed is None else int(seed)
        self._landmarks = {}

    # --------------------------------------------------------------- estimator pieces
    def _base(self, a: Tensor, b: Tensor) -> Tensor:
        return self.base_kernel.forward(a, b)

    def embed(self, samples: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        r"""Per-distribution embedding used by the estimator.

        Args:
            samples: ``(n, m, d)``; weights: ``(n, m)``.

        Returns:
            ``(points (n, h, d), coefficients (n, h), self_term (n,))`` with the embedding
            :math:`\sum_j c_j \phi(\mathbf p_j)` and the within-distribution term of the estimator
            (:math:`\|\tilde\mu_P\|^2` for Nyström and the V-statistic, :math:`\hat U_P` for the U-statistic).
        """
        return self._embed_full(samples, weights)[:3]

    def _embed_full(self, samples: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        r""":meth:`embed` plus :math:`\langle\tilde\mu_P, \tilde\mu_P\rangle` as the cross term computes it
        (the V-statistic for ``'empirical'``, ``self_term`` for Nyström): the diagonal of ``mmd2(x, x)``."""
        n, m, d = samples.shape
        if self.estimator == 'empirical':
            v_self = embedding_self_inner_products(samples, weights, self._base, self.max_block)
            if not self.unbiased:
                return samples, weights, v_self, v_self
            w2 = weights.pow(2)
            s2 = w2.sum(-1)
            k_diag = self.base_kernel.forward(samples, samples, diag=True)  # (n, m)
            u_self = (v_self - (w2 * k_diag).sum(-1)) / (1.0 - s2).clamp_min(1e-300)
            return samples, weights, torch.where(s2 < 1.0 - 1e-12, u_self, v_self), v_self
        idx = self.landmark_indices(m)
        h = idx.numel()
        marks = samples[:, idx]  # (n, h, d)
        eye = torch.eye(h, dtype=samples.dtype, device=samples.device)
        coefs, selfs = [], []
        for i0, i1 in _chunks(n, self.max_block // max(1, h * (m + h))):
            k_hh = self._base(marks[i0:i1], marks[i0:i1])  # (c, h, h)
            k_hm = self._base(marks[i0:i1], samples[i0:i1])  # (c, h, m)
            ridge = self.jitter * k_hh.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-300)
            chol, info = torch.linalg.cholesky_ex(k_hh + ridge[:, None, None] * eye)
            if bool((info > 0).any()):  # pragma: no cover - extreme conditioning; ridge x 1e4
                chol = torch.linalg.cholesky(k_hh + 1e4 * ridge[:, None, None] * eye)
            a = torch.cholesky_solve(k_hm @ weights[i0:i1].unsqueeze(-1), chol)  # (c, h, 1)
            coefs.append(a.squeeze(-1))
            selfs.append((a.transpose(-1, -2) @ k_hh @ a).reshape(-1))
        selfs = torch.cat(selfs)
        return marks, torch.cat(coefs), selfs, selfs

    def _memo_key(self, x: Tensor) -> tuple:
        params = tuple(tuple(p.detach().reshape(-1).tolist()) for p in self.base_kernel.parameters())
        return (x._version, tuple(x.shape), x.dtype, x.device, self.estimator, self.unbiased, self.n_landmarks,
                self.landmark_seed, self.jitter, self.max_block, id(self.base_kernel), params)

    def _embedding(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """:meth:`_embed_full` of an encoded batch, memoised without autograd.

        Under ``torch.no_grad()`` the embeddings of the last few encoded tensors are kept (keyed by the tensor
        object, its in-place version counter and the base kernel's parameter values, landmarks and
        estimator settings), so a GP posterior embeds its training set once per cache and each test batch
        once for the cross-covariances and the prior variances. With autograd on nothing is kept.
        """
        if torch.is_grad_enabled():
            return self._embed_full(*self.decode(x))
        key = self._memo_key(x)
        self._memo = [e for e in self._memo if e[0]() is not None]
        for ref, k, emb in self._memo:
            if ref() is x and k == key:
                return emb
        emb = self._embed_full(*self.decode(x))
        self._memo = (self._memo + [(weakref.ref(x), key, emb)])[-4:]
        return emb

    def mmd2(self, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """Estimated :math:`\\mathrm{MMD}^2` between encoded batches: ``(n1, n2)`` (or ``(n,)`` with ``diag``)."""
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        e1 = self._embedding(x1)
        e2 = e1 if same else self._embedding(x2)
        (p1, c1, s1, v1), (p2, c2, s2, _) = e1, e2
        if diag:
            # a batch against itself: the cross term <mu_P, mu_P> is already known from the embedding
            cross = v1 if same else embedding_paired_inner_products(p1, c1, p2, c2, self._base, self.max_block)
            dist = s1 + s2 - 2.0 * cross
        else:
            cross = embedding_inner_products(p1, c1, p2, c2, self._base, self.max_block, symmetric=same)
            dist = s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2.0 * cross
            if same:
                dist = 0.5 * (dist + dist.transpose(-1, -2))
        if self.estimator == 'nystrom' or not self.unbiased:
            dist = dist.clamp_min(0.0)  # squared RKHS distances; negative only by rounding
        return dist

    def _forward_2d(self, x1, x2, diag):
        ell2 = self.lengthscale.reshape(()).pow(2)
        return torch.exp(-self.mmd2(x1, x2, diag) / (2.0 * ell2))


class SymmetrizedKLKernel(DistributionKernel):
    r"""Symmetrised-KL kernel between diagonal Gaussians (Moreno et al. 2003; AIRBO §5.3 baseline "SKL").

    An adapter that lets GPyTorch's ``GaussianSymmetrizedKLKernel`` take location distributions:
    :math:`\hat k(P, Q) = \exp(-\mathrm{SKL}(P, Q)/\ell)` with

    .. math::
        \mathrm{SKL} = \sum_{i=1}^d \tfrac12\Big[\tfrac{\sigma_{P,i}^2}{\sigma_{Q,i}^2} +
        \tfrac{\sigma_{Q,i}^2}{\sigma_{P,i}^2} + (\mu_{P,i} - \mu_{Q,i})^2
        \big(\tfrac{1}{\sigma_{P,i}^2} + \tfrac{1}{\sigma_{Q,i}^2}\big) - 2\Big]

    (note :math:`\ell` divides SKL itself, GPyTorch's convention). Every input is moment-matched to a
    diagonal Gaussian (sample mean and per-axis variance for empirical inputs), which is exactly the
    Gaussian assumption that makes this baseline miss non-Gaussian inputs (AIRBO Fig. 4d, 10).

    Encoding: ``[mean (d), log variance (d)]``; variances are floored at ``variance_floor`` (Dirac inputs).

    The SKL between neighbouring inputs is of order :math:`(\Delta\mu/\sigma)^2`, often hundreds in
    unit-cube units, where GPyTorch's initial :math:`\ell \approx 0.69` makes the kernel matrix the identity
    and the likelihood flat in :math:`\ell`. With ``median_init`` (default) the first batch of two or more
    distributions passed to :meth:`encode` (in :class:`~uncertain_bo.models.DistributionGP`: the first
    training set, before any fit) sets :math:`\ell` to the median off-diagonal SKL of that batch (median
    heuristic), once; setting ``lengthscale`` explicitly switches it off. (Doing this inside ``forward``
    would change a parameter under the running L-BFGS-B, which then stops at its first step.)

    Args:
        dim: input dimension ``d``.
        variance_floor: smallest variance used (input units squared, after normalisation).
        median_init: initialise :math:`\ell` by the median heuristic on the first encoded batch.
        **kwargs: passed to ``GaussianSymmetrizedKLKernel`` (``lengthscale_prior``, ...).
    """

    def __init__(self, dim: int, *, variance_floor: float = 1e-10, median_init: bool = True, **kwargs):
        super().__init__(dim)
        self.skl = GaussianSymmetrizedKLKernel(**kwargs)
        self.variance_floor = float(variance_floor)
        self.median_init = bool(median_init)
        self.register_buffer('lengthscale_initialized', torch.tensor(False))

    @property
    def lengthscale(self) -> Tensor:
        """:math:`\\ell` of the wrapped kernel, shape ``(1, 1)`` (SKL units)."""
        return self.skl.lengthscale

    @lengthscale.setter
    def lengthscale(self, value) -> None:
        self.skl.lengthscale = value
        self.lengthscale_initialized.fill_(True)

    def encode(self, distributions: LocationDistributions) -> Tensor:
        if distributions.dim != self.dim:
            raise InvalidDistributionError(
                f'kernel expects distributions over R^{self.dim}, got R^{distributions.dim}')
        var = torch.diagonal(distributions.covariance, dim1=-2, dim2=-1)
        enc = torch.cat([distributions.mean, var.clamp_min(self.variance_floor).log()], dim=-1)
        if self.median_init and not bool(self.lengthscale_initialized) and enc.shape[0] > 1:
            with torch.no_grad():
                x = enc.detach()
                skl = self.skl.distance_function(x, x)
                off = skl[~torch.eye(x.shape[0], dtype=torch.bool, device=x.device)]
                self.skl.lengthscale = off.median().clamp_min(1e-6)
                self.lengthscale_initialized.fill_(True)
        return enc

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError('last_dim_is_batch is not supported by SymmetrizedKLKernel')
        if x1.shape[-1] != 2 * self.dim:
            raise InvalidDistributionError(
                f'SymmetrizedKLKernel(dim={self.dim}) expects encoded inputs of width {2 * self.dim} '
                f'(mean, log variance), got {x1.shape[-1]}; encode distributions with kernel.encode()')
        return self.skl.forward(x1, x2, diag=diag)

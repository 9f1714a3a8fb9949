r"""Kernel mean embeddings from weighted samples (Oliveira et al. 2019, Eq. 9; Muandet et al. 2017).

:func:`embedding_inner_products` and its paired/self variants compute
:math:`\langle\hat\mu_P, \hat\mu_Q\rangle = \sum_{i,j} w_i z_j k(\mathbf u_i, \mathbf v_j)` for batches of
sample sets with any base kernel, in bounded memory; :class:`KernelMeanEmbeddingKernel` is uGP's integral
kernel built on them (SE base kernel).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .distribution_kernel import DEFAULT_MAX_BLOCK, SampleDistributionKernel
from .expected_rbf import se_kernel

__all__ = ['KernelMeanEmbeddingKernel', 'embedding_inner_products', 'embedding_paired_inner_products',
           'embedding_self_inner_products']


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

    Example:
        From 256 samples per Gaussian, close to :class:`ExpectedRBFKernel`'s closed form (0.9259, 0.7838):

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.kernels import KernelMeanEmbeddingKernel
        >>> kernel = KernelMeanEmbeddingKernel(2, n_samples=256)
        >>> kernel.lengthscale = 0.5
        >>> P = Gaussian(torch.tensor([[0.2, 0.2], [0.5, 0.2]], dtype=torch.float64),
        ...              0.01 * torch.eye(2, dtype=torch.float64).expand(2, 2, 2))
        >>> encoded = kernel.encode(P)
        >>> kernel.forward(encoded, encoded).detach().numpy().round(4)
        array([[0.9258, 0.7837],
                [0.7837, 0.9258]])
    """

    has_lengthscale = True

    def _forward_2d(self, x1, x2, diag):
        u, w = self.decode(x1)
        v, z = self.decode(x2)
        inv_ell = self.lengthscale.reshape(-1).to(x1.dtype).reciprocal()
        u, v = u * inv_ell, v * inv_ell
        if diag:
            return embedding_paired_inner_products(u, w, v, z, se_kernel, self.block_size(u))
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        return embedding_inner_products(u, w, v, z, se_kernel, self.block_size(u), symmetric=same)

r"""The unscented transform: sigma points of Gaussians, and the SE kernel's expectation through them.

Unscented BO (Nogueira et al. 2016) replaces integrals over the input distribution
:math:`\mathcal N(\mathbf x, \Sigma)` by a weighted sum over :math:`2d + 1` sigma points
(Julier & Uhlmann; NES paper App. C.4):

.. math::
    \mathbf x^{(0)} = \mathbf x, \qquad
    \mathbf x^{(i)}_\pm = \mathbf x \pm \big(\sqrt{(d + \kappa)\Sigma}\big)_i, \qquad
    \omega^{(0)} = \frac{\kappa}{d + \kappa}, \quad \omega^{(i)}_\pm = \frac{1}{2(d + \kappa)},

where :math:`(\sqrt{A})_i` is the :math:`i`-th column of a matrix square root :math:`L L^\top = A` (the
Cholesky factor; for a diagonal :math:`\Sigma` this is the element-wise square root). The weights sum to 1
and the weighted points reproduce the mean and covariance of :math:`\mathcal N(\mathbf x, \Sigma)` exactly.

:class:`UnscentedRBFKernel` is the distribution kernel that goes with it: the SE kernel's expectation over
both arguments computed with sigma points instead of in closed form (cf.
:class:`~uncertain_bo.kernels.ExpectedRBFKernel`). On Dirac inputs it *is* the SE kernel, so a GP trained
on point targets with it is a standard GP, while its posterior mean at :math:`\mathcal N(\mathbf x,
\hat\Sigma)` is the unscented mean :math:`\sum_i \omega^{(i)} \mu(\mathbf x^{(i)})` that UEI recommends with.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from . import DTYPE
from ..kernels import ExpectedRBFKernel
from ..linalg import psd_sqrt

__all__ = ['sigma_points', 'sigma_weights', 'UnscentedRBFKernel']


def sigma_weights(dim: int, kappa: float = 1.0, *, dtype=DTYPE, device=None) -> Tensor:
    """``(2d + 1,)`` sigma-point weights ``[κ/(d+κ), 1/(2(d+κ)) × 2d]`` (``dtype``, ``device``: of the tensor).

    Raises:
        ValueError: ``d + κ <= 0``.
    """
    if not dim + kappa > 0:
        raise ValueError(f'the unscented transform needs d + kappa > 0, got d={dim}, kappa={kappa}')
    w = torch.full((2 * dim + 1,), 1.0 / (2.0 * (dim + kappa)), dtype=dtype, device=device)
    w[0] = kappa / (dim + kappa)
    return w


def matrix_sqrt(cov: Tensor) -> Tensor:
    """Lower-triangular ``L`` with ``L Lᵀ = cov`` for ``(..., d, d)`` PSD ``cov``; falls back to an
    eigendecomposition square root when a matrix is singular (e.g. zero: a Dirac input);
    :func:`uncertain_bo.linalg.psd_sqrt` with ``method='cholesky'``."""
    return psd_sqrt(cov, method='cholesky')


def sigma_points(mean: Tensor, cov: Tensor, kappa: float = 1.0) -> tuple[Tensor, Tensor]:
    """Sigma points of Gaussians :math:`\\mathcal N(\\mathbf x_j, \\Sigma_j)`.

    Args:
        mean: ``(q, d)`` means (gradients flow through them).
        cov: ``(q, d, d)`` or shared ``(d, d)`` covariances.
        kappa: spread parameter κ (``d + κ > 0``).

    Returns:
        ``(points (q, 2d + 1, d), weights (2d + 1,))``; point 0 is the mean, points ``1..d`` are
        ``mean + sqrt(d+κ) L[:, i]`` and points ``d+1..2d`` are ``mean - sqrt(d+κ) L[:, i]``.
    """
    d = mean.shape[-1]
    w = sigma_weights(d, kappa, dtype=mean.dtype, device=mean.device)
    cov = torch.as_tensor(cov, dtype=mean.dtype, device=mean.device)
    scaled = math.sqrt(d + kappa) * matrix_sqrt(cov)  # (.., d, d)
    cols = scaled.transpose(-1, -2)  # row i = column i of the square root
    if cols.ndim == 2:
        cols = cols.expand(mean.shape[0], d, d)
    centre = mean.unsqueeze(-2)
    points = torch.cat([centre, centre + cols, centre - cols], dim=-2)
    return points, w


class UnscentedRBFKernel(ExpectedRBFKernel):
    r"""SE kernel between Gaussian location distributions with the expectations taken by the unscented transform.

    .. math::
        k_{UT}(P, P') = \sum_{i, j} \omega^{(i)} \omega'^{(j)}
        \exp\!\big(-\tfrac12 \|(\mathbf x^{(i)} - \mathbf x'^{(j)})/\ell\|^2\big),

    with :math:`\{\mathbf x^{(i)}, \omega^{(i)}\}` the sigma points of :math:`P` (a single point of weight 1
    when :math:`P` is a Dirac). It is the inner product of the unscented kernel mean embeddings, hence
    positive semi-definite; Dirac inputs give exactly the SE kernel. Same encoding as
    :class:`~uncertain_bo.kernels.ExpectedRBFKernel` (``[mean, vec(cov)]``).

    Args:
        dim: input dimension ``d``.
        kappa: sigma-point spread κ (default 1.0, as in NES's UEI study).
        clip_to_unit_cube: project sigma points into ``[0, 1]^d`` — the model's normalised search box — as
            the reference UEI implementation projects sigma points into the domain (default True).
        **kwargs: GPyTorch ``Kernel`` arguments (``lengthscale_prior``, ...). Batched kernels are not
            supported.

    Example:
        Between Dirac inputs it is the SE kernel itself:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> kernel = UnscentedRBFKernel(dim=2)
        >>> x = torch.tensor([[0.2, 0.3], [0.5, 0.1]], dtype=torch.float64)
        >>> k = kernel(kernel.encode(Dirac(x))).to_dense()
        >>> ell = kernel.lengthscale.detach()
        >>> torch.allclose(k[0, 1], torch.exp(-0.5 * (((x[0] - x[1]) / ell) ** 2).sum()))
        True
    """

    def __init__(self, dim: int, kappa: float = 1.0, clip_to_unit_cube: bool = True, **kwargs):
        super().__init__(dim, **kwargs)
        sigma_weights(dim, kappa)  # validate
        self.kappa = float(kappa)
        self.clip_to_unit_cube = clip_to_unit_cube

    def _points(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, cov = self._split(x)
        if not bool((cov != 0).any()):
            pts, w = mean.unsqueeze(-2), mean.new_ones(1)
        else:
            pts, w = sigma_points(mean, cov, self.kappa)
        if self.clip_to_unit_cube:
            pts = pts.clamp(0.0, 1.0)
        return pts, w

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError('last_dim_is_batch is not supported by UnscentedRBFKernel')
        if x1.ndim != 2 or x2.ndim != 2:
            raise NotImplementedError('UnscentedRBFKernel supports (n, D) inputs only')
        inv_ell = self.lengthscale.reshape(-1).to(x1.dtype).reciprocal()
        p1, w1 = self._points(x1)
        p2, w2 = self._points(x2)
        p1, p2 = p1 * inv_ell, p2 * inv_ell
        if diag:
            sq = (p1.unsqueeze(-2) - p2.unsqueeze(-3)).pow(2).sum(-1)  # (n, P1, P2)
            return (torch.exp(-0.5 * sq) * w1[:, None] * w2[None, :]).sum((-1, -2))
        if p1.shape[1] == 1 and p2.shape[1] == 1:  # Dirac x Dirac: plain SE
            sq = (p1[:, 0].unsqueeze(1) - p2[:, 0].unsqueeze(0)).pow(2).sum(-1)
            return torch.exp(-0.5 * sq)
        sq = (p1[:, None, :, None, :] - p2[None, :, None, :, :]).pow(2).sum(-1)  # (n1, n2, P1, P2)
        return (torch.exp(-0.5 * sq) * w1[:, None] * w2[None, :]).sum((-1, -2))

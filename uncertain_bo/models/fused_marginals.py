r"""Posterior marginals of the exact GP with the expected SE kernel at candidates that share one covariance, in one
autograd node: the hot path of uGP-UCB, whose candidates :math:`\hat P_{\mathbf x} = \mathcal N(\mathbf x, \hat\Sigma)`
all carry the execution-noise covariance.

The values are those of the generic path (:meth:`~uncertain_bo.models.prediction.Prediction.marginals` with
:class:`~uncertain_bo.kernels.ExpectedRBFKernel`'s one-side-shared branch), computed by the same operations in the
same order, so they agree to the bit. Where the training inputs share one covariance too (point readings: Dirac
inputs, zero covariance), the generic path whitens both sides with one Cholesky factor instead; the fused path
applies there as well and agrees with it to rounding (1e-12 relative). What changes is the cost: the training side
of the kernel (the Cholesky factors of :math:`A_j = I + \tilde\Sigma + \tilde\Sigma_j`,
:math:`\tilde\Sigma = \Sigma / \ell\ell^\top`, and the training means in lengthscale units)
depends on the candidates only through :math:`\tilde\Sigma`, so it is computed once per prediction strategy, data size
and hyperparameters (:class:`_TrainingSide`) instead of once per call, and the gradient w.r.t. the candidates' means
is written out (:class:`_Marginals`) instead of recorded op by
op. With :math:`\mathbf u` the candidate mean in lengthscale units, :math:`\delta_j = \mathbf u - \mathbf u_j`,
:math:`\mathbf z_j = L_j^{-1}\delta_j` (:math:`L_j L_j^\top = A_j`), :math:`LL^\top = \hat K + \Lambda` and
:math:`k_j = \sigma_f^2 |A_j|^{-1/2} e^{-\|\mathbf z_j\|^2/2}`:

.. math::
    \mu = m + \mathbf k^\top\alpha, \quad \sigma^2 = k_{**} - \|L^{-1}\mathbf k\|^2, \qquad
    \frac{\partial \ell}{\partial \mathbf u} = \sum_j g_j\, k_j\, (-A_j^{-1}\delta_j), \quad
    g = \bar\mu\,\alpha - 2\bar\sigma^2 L^{-\top} L^{-1}\mathbf k,

where :math:`\bar\mu, \bar\sigma^2` are the incoming gradients, each product and sum taken in the order autograd
takes the generic path's, so the gradients w.r.t. the candidates also agree to the bit and an acquisition
maximisation makes the same decisions (``test/models/test_fused_marginals.py``). Hyperparameters are constants here,
as everywhere in a prediction strategy: no gradient flows to them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .. import linalg
from ..distributions import Gaussian, LocationDistributions

if TYPE_CHECKING:
    from .distribution_gp import DistributionGP
    from .prediction import ExactPrediction

__all__ = ['fused_marginals']


@dataclass
class _TrainingSide:
    """What the expected SE kernel needs of the ``n`` training inputs for one shared candidate covariance.

    Attributes:
        key: ``(n, 1 / lengthscales, candidate covariance in lengthscale units, signal variance)`` it was built
            for.
        means: ``(n, d)`` training means in lengthscale units.
        lower: Cholesky entries of :math:`A_j` (:func:`uncertain_bo.linalg.unrolled_cholesky`, each ``(n,)``).
        half_logdet: ``(n,)`` :math:`\\tfrac12 \\log|A_j|`.
        columns: the ``d`` columns of ``means``, contiguous ``(n,)`` each.
        kss: prior variances of ``N`` candidates by ``N`` (the generic path's diagonal, standardised units).
    """

    key: tuple
    means: Tensor
    lower: list
    half_logdet: Tensor
    columns: list = field(default_factory=list)
    kss: dict = field(default_factory=dict)


def fused_marginals(gp: 'DistributionGP', cache: 'ExactPrediction',
                    dists: LocationDistributions) -> tuple[Tensor, Tensor] | None:
    """Posterior mean and variance ``(N,)`` (standardised units) of ``dists`` on the exact strategy ``cache``, or
    None where the fused path does not apply: the kernel is not the expected SE kernel, the candidates are not
    Gaussians sharing one covariance that needs no gradient, the dimension is above
    :data:`~uncertain_bo.linalg.UNROLL_MAX_DIM` or the lengthscales are batched. Gradients flow to the candidates'
    means only."""
    from ..kernels import ExpectedRBFKernel
    kernel = gp.kernel
    if type(kernel) is not ExpectedRBFKernel or not isinstance(dists, Gaussian) or len(dists) == 0:
        return None
    cov = dists.covariance
    d = kernel.dim
    if cov.requires_grad or d > linalg.UNROLL_MAX_DIM or kernel.lengthscale.shape != (1, d):
        return None
    if cov.stride(0) != 0 and not bool((cov == cov[:1]).all()):
        return None
    normed = gp.normalize(dists)
    with torch.no_grad():
        ell = kernel.lengthscale.to(normed.mean.dtype)
        inv_ell = ell.reciprocal()
        outer = inv_ell.unsqueeze(-1) * inv_ell.unsqueeze(-2)
        c1 = (normed.covariance[:1] * outer)[0]                    # as ExpectedRBFKernel.forward scales it
        outputscale = gp.covar_module.outputscale.reshape(1, 1)
        side = _training_side(kernel, cache, inv_ell, outer, c1, float(outputscale))
        n_cand = len(dists)
        kss = side.kss.get(n_cand)
        if kss is None:   # the generic path's diagonal, computed as it does (its values are equal for all N)
            enc = kernel.encode(Gaussian(normed.mean.detach(), normed.covariance, validate=False))
            if len(side.kss) >= 8:
                side.kss.clear()
            kss = side.kss.setdefault(n_cand, gp.covar_module.forward(enc, enc, diag=True))
    u = normed.mean * inv_ell
    return _Marginals.apply(u, side, kss, outputscale, cache.mean, cache.alpha, cache.linv)


def _training_side(kernel, cache: 'ExactPrediction', inv_ell: Tensor, outer: Tensor, c1: Tensor,
                   outputscale: float) -> _TrainingSide:
    """The cache's :class:`_TrainingSide` for ``c1``, built (and kept on the cache) when the data (more readings, or
    revised inputs: :attr:`~uncertain_bo.models.prediction.ExactPrediction.revised`), the hyperparameters or ``c1``
    changed."""
    key = (cache.enc.shape[0], cache.revised, tuple(inv_ell.reshape(-1).tolist()), tuple(c1.reshape(-1).tolist()),
           outputscale)
    kept = getattr(cache, '_training_side', None)
    if kept is not None and kept[0] == key:
        return kept[1]
    m2, s2 = kernel._split(cache.enc)
    s2 = s2 * outer
    eye = torch.eye(kernel.dim, dtype=c1.dtype, device=c1.device)
    lower = linalg.unrolled_cholesky(eye + c1 + s2)
    half_logdet = None
    for j in range(kernel.dim):       # as linalg.unrolled_quadratic_and_half_logdet sums it
        ljj = lower[j][j].log()
        half_logdet = ljj if half_logdet is None else half_logdet + ljj
    means = m2 * inv_ell
    side = _TrainingSide(key, means, lower, half_logdet, [means[:, j].contiguous() for j in range(kernel.dim)])
    cache._training_side = (key, side)
    return side


class _Marginals(torch.autograd.Function):
    """``(mean, var)`` from candidate means in lengthscale units ``u`` ``(N, d)``; the module docstring's algebra."""

    @staticmethod
    def forward(ctx, u: Tensor, side: _TrainingSide, kss: Tensor, outputscale: Tensor, prior_mean: float,
                alpha: Tensor, linv: Tensor) -> tuple[Tensor, Tensor]:
        lower = side.lower
        z: list[Tensor] = []
        quad = None
        for j in range(len(lower)):      # linalg.unrolled_quadratic_and_half_logdet, keeping z; each op as there,
            # on contiguous (N, n) columns instead of slices of the (N, n, d) differences, in place where it can
            r = u[..., j].unsqueeze(-1) - side.columns[j]            # δ_j
            for k in range(j):
                r.sub_(lower[j][k] * z[k])
            zj = r.div_(lower[j][j])
            z.append(zj)
            quad = zj * zj if quad is None else quad.add_(zj * zj)
        k_base = quad.mul_(-0.5).sub_(side.half_logdet).exp_()
        k_star = k_base.mul(outputscale)                           # (N, n), as ScaleKernel
        mean = prior_mean + k_star @ alpha
        a = k_star @ linv.T
        var = kss - a.pow(2).sum(-1)
        ctx.side, ctx.z = side, z
        ctx.save_for_backward(k_base, outputscale, a, alpha, linv)
        return mean, var

    @staticmethod
    def backward(ctx, g_mean: Tensor, g_var: Tensor):
        # the generic path's backward, node by node and summed in autograd's order: the gradients agree to the bit
        # (checked for d = 1 .. UNROLL_MAX_DIM in test/models/test_fused_marginals.py)
        k_base, outputscale, a, alpha, linv = ctx.saved_tensors
        g_k = g_mean.unsqueeze(-1) * alpha                                     # mv: grad.ger(alpha)
        g_k = g_k + ((-2.0 * g_var).unsqueeze(-1) * a).mm(linv)             # pow(2).sum, then mm
        g_quad = g_k * outputscale * k_base * -0.5                            # mul, exp, scale
        lower, z = ctx.side.lower, ctx.z
        d = len(lower)
        g_delta: list[Tensor | None] = [None] * d
        for j in reversed(range(d)):     # δ̄ = L^{-T} z̄ with z̄ = 2 z quad̄, by back substitution
            # summed in the order autograd sums the generic path's terms: rows d-1 .. j+1, then z_j z_j's two
            terms = [(-g_delta[i]) * lower[i][j] for i in range(d - 1, j, -1)]
            half = g_quad * z[j]
            r = None
            for t in terms + [half, half]:
                r = t if r is None else r + t
            g_delta[j] = r / lower[j][j]
        g_u = torch.stack(g_delta, dim=-1).sum(-2)                           # (N, n, d) summed over n
        return g_u, None, None, None, None, None, None

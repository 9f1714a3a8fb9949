r"""Expected squared-exponential kernel between Gaussian location distributions, in closed form.

Oliveira et al. 2019 (uGP-UCB), App. A.8 Eq. 80 (= Girard 2004, Eq. 3.53): the kernel mean embedding inner
product of the SE kernel for Gaussian inputs, with fast paths for batches whose covariances are shared.
"""
from __future__ import annotations

import torch
from torch import Tensor

from .. import linalg
from ..distributions import Dirac, Empirical, Gaussian, InvalidDistributionError, LocationDistributions
from .additive_rq import squared_distances
from .distribution_kernel import DistributionKernel

__all__ = ['ExpectedRBFKernel', 'se_kernel', 'gaussian_quadratic_and_logdet']


def se_kernel(x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
    r"""The SE kernel :math:`\exp(-\tfrac12\|\mathbf x - \mathbf x'\|^2)` between points in lengthscale units
    (divide by the lengthscales first; gradients flow through that division; multiply by :math:`\sigma_f^2` after):
    :class:`ExpectedRBFKernel` on Dirac inputs, written once for the code that evaluates it on points (sample paths,
    kernel mean embeddings, quadrature).

    Args:
        x1, x2: points ``(..., n1, d)`` and ``(..., n2, d)`` (``(..., n, d)`` both with ``diag``).
        diag: only the paired values :math:`k(\mathbf x_{1,i}, \mathbf x_{2,i})`.

    Returns:
        ``(..., n1, n2)``, or ``(..., n)`` with ``diag``; squared distances as
        :func:`~uncertain_bo.kernels.squared_distances` computes them (exact differences for ``d <= 2``).

    Example:
        >>> import torch
        >>> from uncertain_bo.kernels import se_kernel
        >>> x = torch.tensor([[0.0, 0.0], [1.0, 2.0]], dtype=torch.float64)
        >>> se_kernel(x, x)[0, 1].item() == torch.tensor(-2.5, dtype=torch.float64).exp().item()
        True
    """
    if diag:
        return torch.exp(-0.5 * (x1 - x2).pow(2).sum(-1))
    return torch.exp(-0.5 * squared_distances(x1, x2))


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

    Example:
        Two Gaussians 0.3 apart, :math:`\Sigma = 0.01 I`, :math:`\ell = 0.5`: on the diagonal
        :math:`|I + 2\Sigma/\ell^2|^{-1/2} = 1/1.08`:

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.kernels import ExpectedRBFKernel
        >>> kernel = ExpectedRBFKernel(2)
        >>> kernel.lengthscale = 0.5
        >>> P = Gaussian(torch.tensor([[0.2, 0.2], [0.5, 0.2]], dtype=torch.float64),
        ...              0.01 * torch.eye(2, dtype=torch.float64).expand(2, 2, 2))
        >>> encoded = kernel.encode(P)
        >>> kernel.forward(encoded, encoded).detach().numpy().round(4)
        array([[0.9259, 0.7838],
                [0.7838, 0.9259]])
    """

    has_lengthscale = True

    def encode(self, distributions: LocationDistributions) -> Tensor:
        self.check_dim(distributions)
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
        ell = self.lengthscale.to(x1.dtype)  # (*batch, 1, d); evaluate in the inputs' dtype
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
        if not diag and m1.ndim == 3 and m2.ndim == 3 and ell.ndim == 2:   # batches of groups (joint posteriors)
            c1, c2 = _common(s1.reshape(-1, self.dim, self.dim)), _common(s2.reshape(-1, self.dim, self.dim))
            if c1 is not None and c2 is not None:
                return _whitened_se(m1, m2, eye + c1 + c2)
        if diag:
            a = eye + s1 + s2
            delta = m1 - m2
        else:
            a = eye + s1.unsqueeze(-3) + s2.unsqueeze(-4)  # (..., n1, n2, d, d)
            delta = m1.unsqueeze(-2) - m2.unsqueeze(-3)   # (..., n1, n2, d)
        quad, half_logdet = linalg.quadratic_and_half_logdet(a, delta)
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
        return _whitened_se(m1, m2, eye + c1 + c2)
    if c1 is None and c2 is None or m1.shape[-1] > linalg.UNROLL_MAX_DIM:
        return None
    if c1 is not None:  # factors indexed by the rows of x2: broadcast over x1's rows
        lower = linalg.unrolled_cholesky(eye + c1 + s2)
    else:               # factors indexed by the rows of x1: broadcast over x2's rows
        lower = [[None if v is None else v.unsqueeze(-1) for v in row]
                 for row in linalg.unrolled_cholesky(eye + s1 + c2)]
    quad, half_logdet = linalg.unrolled_quadratic_and_half_logdet(lower, m1.unsqueeze(-2) - m2.unsqueeze(-3))
    return torch.exp(-0.5 * quad - half_logdet)


def _whitened_se(m1: Tensor, m2: Tensor, a: Tensor) -> Tensor:
    r"""Eq. 80 when every pair shares :math:`A = I + \tilde\Sigma_1 + \tilde\Sigma_2` ``(d, d)``: an SE kernel of the
    means ``(..., n1, d)``, ``(..., n2, d)`` whitened by one Cholesky factor of :math:`A`."""
    chol = torch.linalg.cholesky(a)
    w1 = torch.linalg.solve_triangular(chol, m1.transpose(-1, -2), upper=False).transpose(-1, -2)
    w2 = torch.linalg.solve_triangular(chol, m2.transpose(-1, -2), upper=False).transpose(-1, -2)
    sq = (w1.unsqueeze(-2) - w2.unsqueeze(-3)).pow(2).sum(-1)
    return torch.exp(-0.5 * sq - torch.diagonal(chol).log().sum())


gaussian_quadratic_and_logdet = linalg.quadratic_and_half_logdet
"""Alias of :func:`uncertain_bo.linalg.quadratic_and_half_logdet` (its name before the kernels package)."""

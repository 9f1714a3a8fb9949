r"""Symmetrised-KL kernel between moment-matched diagonal Gaussians (Moreno et al. 2003), AIRBO's "SKL"
baseline, as an adapter around GPyTorch's ``GaussianSymmetrizedKLKernel``.
"""
from __future__ import annotations

import torch
from gpytorch.kernels import GaussianSymmetrizedKLKernel
from torch import Tensor

from ..distributions import InvalidDistributionError, LocationDistributions
from .distribution_kernel import DistributionKernel

__all__ = ['SymmetrizedKLKernel']


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

    Example:
        Two Gaussians at the same mean, variances 0.01 and 0.04 per axis: SKL = 2 x ½ (4 + ¼ - 2) = 2.25, which the
        median heuristic takes as :math:`\ell`, so :math:`\hat k = e^{-1}` between them:

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.kernels import SymmetrizedKLKernel
        >>> kernel = SymmetrizedKLKernel(2)
        >>> eye = torch.eye(2, dtype=torch.float64)
        >>> P = Gaussian(torch.full((2, 2), 0.2, dtype=torch.float64), torch.stack([0.01 * eye, 0.04 * eye]))
        >>> encoded = kernel.encode(P)                      # [mean (d), log variance (d)]
        >>> K = kernel.forward(encoded, encoded).detach()
        >>> round(float(kernel.lengthscale), 4), round(float(K[0, 1]), 4), round(float(K[1, 1]), 4)
        (2.25, 0.3679, 1.0)
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
        self.check_dim(distributions)
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
        # GPyTorch's kernel computes in its parameters' dtype; the result comes back in the inputs' dtype
        return self.skl.forward(x1, x2, diag=diag).to(x1.dtype)

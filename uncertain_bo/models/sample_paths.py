r"""Posterior sample paths of the shared GP: random Fourier features for the prior, the model's own posterior for
the data (pathwise conditioning), over points and Gaussian location distributions alike.

**Random features for Gaussian inputs** (:class:`RandomFeatures`). For the SE kernel
:math:`\sigma_f^2\exp(-\tfrac12\|(\mathbf x - \mathbf x')/\boldsymbol\ell\|^2)` (Rahimi & Recht 2007),
:math:`\phi_i(\mathbf x) = \sqrt{2\sigma_f^2/M}\cos(\mathbf w_i^\top\mathbf x + b_i)`,
:math:`\mathbf w_i \sim \mathcal N(0, \operatorname{diag}(\boldsymbol\ell)^{-2})`, :math:`b_i \sim U(0, 2\pi)`; for a
Gaussian input :math:`\mathcal N(\boldsymbol\mu, \Sigma)` the expected feature is
:math:`\phi_i(\boldsymbol\mu)\, e^{-\frac12\mathbf w_i^\top\Sigma\mathbf w_i}` (Fröhlich et al. 2020, Eq. 6: the
identity :math:`\mathbb E\cos(\theta + \mathbf w^\top\boldsymbol\xi) = \cos\theta\, e^{-\frac12\mathbf w^\top\Sigma
\mathbf w}`), so inner products of expected features approximate the expected SE kernel the model trains with
(:class:`~uncertain_bo.kernels.ExpectedRBFKernel`, each input with its own covariance).

**Pathwise conditioning** (:class:`PosteriorSamplePaths`; Matheron's rule, Wilson et al. 2020, Eq. 13):

.. math::
    \tilde f(P) = m + \boldsymbol\phi(P)^\top\boldsymbol\theta + \hat k(P, \mathcal X)(\hat K + \Lambda)^{-1}
    \big(\mathbf y - m - \Phi_{\mathcal X}\boldsymbol\theta - \Lambda^{1/2}\boldsymbol\varepsilon\big), \qquad
    \boldsymbol\theta \sim \mathcal N(0, I_M),\ \boldsymbol\varepsilon \sim \mathcal N(0, I_n).

The solve is the model's prediction strategy (:meth:`~uncertain_bo.models.DistributionGP.exact_prediction`) and
:math:`\Lambda` its noise diagonal (learned noise, reported variances, input-induced variances): the paths' mean
and covariance are the model's posterior up to the random-feature error of the prior term only. BoTorch's
``draw_matheron_paths`` is the same construction for point inputs and GPyTorch kernels; here the features and
the update act on distributions. DRBQO draws Thompson samples from these paths, NES its robust max-values and
NES-RS its conditioned function samples.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ..distributions import Dirac, LocationDistributions
from ..kernels import ExpectedRBFKernel, se_kernel

__all__ = ['RandomFeatures', 'PosteriorSamplePaths']


@dataclass
class RandomFeatures:
    r"""Random Fourier features of the SE kernel, expected under Gaussian inputs (module docstring).

    Attributes:
        w: ``(M, d)`` frequencies, :math:`\mathcal N(0, \mathrm{diag}(\boldsymbol\ell)^{-2})` (units of the inputs
            they are applied to).
        b: ``(M,)`` phases, :math:`U(0, 2\pi)`.
        amplitude: :math:`\sqrt{2\sigma_f^2/M}`.

    Example:
        Inner products of 4000 features approach the SE kernel, here :math:`\exp(-0.05 / 0.18) = 0.757`:

        >>> import torch
        >>> from uncertain_bo.models.sample_paths import RandomFeatures
        >>> lengthscale = torch.tensor([0.3, 0.3], dtype=torch.float64)
        >>> features = RandomFeatures.draw(lengthscale, 1.0, 4000, torch.Generator().manual_seed(0))
        >>> phi = features(torch.tensor([[0.1, 0.2], [0.2, 0.4]], dtype=torch.float64))
        >>> phi.shape, abs(float(phi[0] @ phi[1]) - 0.757) < 0.05
        (torch.Size([2, 4000]), True)
    """

    w: Tensor
    b: Tensor
    amplitude: float

    @classmethod
    def draw(cls, lengthscale: Tensor, outputscale: float, m: int, generator: torch.Generator | None = None
             ) -> 'RandomFeatures':
        """``m`` features for lengthscales ``(d,)`` (dtype and device of ``lengthscale``); draws the frequencies,
        then the phases, from ``generator``."""
        d = lengthscale.numel()
        kw = dict(generator=generator, dtype=lengthscale.dtype, device=lengthscale.device)
        z = torch.randn(m, d, **kw)
        b = 2 * math.pi * torch.rand(m, **kw)
        return cls(z / lengthscale.reshape(1, d), b, math.sqrt(2.0 * outputscale / m))

    def __call__(self, mean: Tensor, cov: Tensor | None = None) -> Tensor:
        """Features ``(n, M)`` of Gaussians ``mean (n, d)``, ``cov (n, d, d)`` (None: points)."""
        feats = self.amplitude * torch.cos(mean @ self.w.T + self.b)
        if cov is not None:
            feats = feats * torch.exp(-0.5 * torch.einsum('md,nde,me->nm', self.w, cov, self.w))
        return feats


class PosteriorSamplePaths:
    """``num`` posterior sample paths of the model's latent :math:`\\hat f` (module docstring), evaluated at any
    location distributions (:meth:`__call__`) or points (:meth:`at_points`). Everything is drawn at construction
    from ``generator`` in a fixed order (frequencies, phases, prior weights :math:`\\boldsymbol\\theta` ``(M, num)``,
    noise :math:`\\boldsymbol\\varepsilon` ``(n, num)``), so equal seeds give equal paths.

    Args:
        model: the shared :class:`~uncertain_bo.models.DistributionGP` with the expected SE kernel (with data).
        num: number of paths.
        n_features: ``M`` random features of the prior term.
        generator: the draws' random stream (on the model's device).

    Attributes:
        features: the :class:`RandomFeatures` (unit-cube units). theta: ``(M, num)``. weights: ``(n, num)`` the
            update's :math:`(\\hat K + \\Lambda)^{-1}(\\dots)` (standardised units). scale, shift: the model's output
            standardisation; mean0: its constant mean (standardised).

    Raises:
        TypeError: another kernel (no random-feature expansion is defined for it here).
        RuntimeError: the model has no data.

    Example:
        Four paths through two readings taken at uncertain locations (noise 1e-4), each evaluated at the readings'
        location distributions, where every path passes close to the reading:

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.models import DistributionGP
        >>> from uncertain_bo.models.sample_paths import PosteriorSamplePaths
        >>> where = Gaussian(torch.tensor([[0.2, 0.3], [0.7, 0.6]], dtype=torch.float64),
        ...                  1e-4 * torch.eye(2, dtype=torch.float64).expand(2, 2, 2))
        >>> gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64), standardize=False)
        >>> gp.set_data(where, torch.tensor([0.5, -0.5], dtype=torch.float64))
        >>> gp.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=1e-4)
        >>> values = PosteriorSamplePaths(gp, num=4, generator=torch.Generator().manual_seed(0))(where)
        >>> values.shape, bool(((values - gp.train_y.unsqueeze(-1)).abs() < 0.05).all())
        (torch.Size([2, 4]), True)
    """

    def __init__(self, model, num: int = 1, n_features: int = 1000, generator: torch.Generator | None = None):
        kernel = model.kernel
        if not isinstance(kernel, ExpectedRBFKernel):
            raise TypeError(f'posterior sample paths need the expected SE kernel, got {type(kernel).__name__}')
        strategy = model.exact_prediction()
        self.model = model
        like = strategy.enc
        ell = kernel.lengthscale.detach().reshape(-1).to(like)
        outputscale = float(model.covar_module.outputscale.detach())
        self.features = RandomFeatures.draw(ell, outputscale, int(n_features), generator)
        kw = dict(generator=generator, dtype=like.dtype, device=like.device)
        self.theta = torch.randn(int(n_features), int(num), **kw)
        eps = torch.randn(model.n, int(num), **kw)
        self.train = model.normalize(model.train_locations)
        self.points_only = bool((self.train.covariance == 0).all())
        self.ell, self.outputscale = ell, outputscale
        self.mean0 = float(model.mean_module.constant.detach())
        self.scale, self.shift = model._y_scale, model._y_shift
        self.train_enc = strategy.enc
        with torch.no_grad():
            cov = None if self.points_only else self.train.covariance.to(like)
            prior_train = self.features(self.train.mean.to(like), cov) @ self.theta      # (n, num)
            noise = model.noise_diagonal().to(like)
            resid = model._standardized_y().to(like)[:, None] - self.mean0 - prior_train - noise.sqrt()[:, None] * eps
            self.weights = strategy.solve(resid)

    @property
    def num(self) -> int:
        return self.theta.shape[1]

    def __call__(self, distributions: LocationDistributions) -> Tensor:
        """:math:`\\tilde f_s(P)` ``(N, num)`` at ``N`` location distributions (output units); differentiable in their
        parameters."""
        u = self.model.normalize(distributions)
        cov = None if isinstance(distributions, Dirac) else u.covariance
        prior = self.features(u.mean, cov) @ self.theta
        cross = self.model.covar_module.forward(self.model.kernel.encode(u), self.train_enc)
        return self._output(prior + cross @ self.weights)

    def at_points(self, points: Tensor) -> Tensor:
        """:math:`\\tilde f_s` at points ``(..., d)`` (physical units) -> ``(..., num)``; differentiable."""
        flat = points.reshape(-1, points.shape[-1])
        lo, hi = self.model.bounds
        u = (flat - lo) / (hi - lo)
        prior = self.features(u) @ self.theta
        if self.points_only:       # the SE kernel between points, without the encoding's covariance part
            cross = self.outputscale * se_kernel(u / self.ell, self.train.mean / self.ell)
        else:
            cross = self.model.covar_module.forward(self.model.kernel.encode(Dirac(u)), self.train_enc)
        return self._output(prior + cross @ self.weights).reshape(*points.shape[:-1], self.num)

    def _output(self, standardised: Tensor) -> Tensor:
        return (self.mean0 + standardised) * self.scale + self.shift

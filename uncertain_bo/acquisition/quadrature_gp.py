r"""The GP on the joint space :math:`\mathcal X \times \Omega` seen as a Bayesian quadrature model, and posterior
sample paths for Thompson sampling (Nguyen, Gupta, Ha, Rana & Venkatesh, AISTATS 2020, §3 and Algorithm 1).

For a weight vector :math:`p` on the samples :math:`S_n = \{w_i\}` the quadrature
:math:`g(f, \mathbf x, p) = \sum_i p_i f(\mathbf x, w_i)` is Gaussian under the GP posterior with (paper Eqs. 5-6)

.. math::
    \mu_t(\mathbf x, p) = \sum_i p_i \mu_t(\mathbf x, w_i), \qquad
    \sigma_t^2(\mathbf x, p) = \sum_{i,j} p_i p_j C_t(\mathbf x, w_i; \mathbf x, w_j),

so :meth:`JointPosterior.mean_covariance` returns the joint posterior over the ``n`` points
:math:`(\mathbf x, w_i)` of each candidate.

**Posterior sample paths** (:class:`PosteriorPath`). DRBQO needs a sample :math:`\tilde f_t` it can evaluate
anywhere in :math:`\mathcal X \times S_n` and differentiate. The paper uses random Fourier features in weight
space (Hernández-Lobato et al. 2014); here the prior part is the same random-feature draw (Rahimi & Recht 2007,
``M`` features) and the data part is exact, by Matheron's rule (pathwise conditioning; Wilson et al. 2020,
Eq. 13):

.. math::
    \tilde f(\mathbf z) = m + \phi(\mathbf z)^\top\boldsymbol\theta + k(\mathbf z, Z)(K + \sigma^2 I)^{-1}
    \big(\mathbf y - m - \Phi\boldsymbol\theta - \sigma\boldsymbol\varepsilon\big), \qquad
    \boldsymbol\theta \sim \mathcal N(0, I_M),\ \boldsymbol\varepsilon \sim \mathcal N(0, I_t),

with :math:`\phi(\mathbf z) = \sqrt{2\sigma_f^2/M}\cos(\Omega\mathbf u + \mathbf b)`,
:math:`\Omega_{j\cdot} \sim \mathcal N(0, \operatorname{diag}(\ell^{-2}))`, :math:`b_j \sim U[0, 2\pi]` and
:math:`\mathbf u` the point in the model's unit cube. Its mean and covariance are the GP posterior's up to the
random-feature error of the prior term only.

Both work on the shared :class:`~uncertain_bo.models.DistributionGP` through its public interface (data,
hyperparameters, kernel), in the model's dtype and device. The sample paths need its default expected-SE
kernel; its training inputs may be points (the quadrature problems) or Gaussian location distributions (the
rover): a Gaussian input's random feature is its expectation :math:`e^{-\omega^\top\Sigma\omega/2}
\cos(\omega^\top\mathbf m + b)`, so the prior draw is consistent with the expected SE kernel the GP
trains with. The path itself is a function of points (test inputs are Diracs).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..distributions import Dirac
from ..kernels import ExpectedRBFKernel
from ..models import DistributionGP

__all__ = ['JointPosterior', 'PosteriorPath']


class JointPosterior:
    """Exact GP posterior over groups of points, from the model's data and hyperparameters.

    Args:
        model: the shared GP (any kernel; inputs are Diracs at the points).

    Raises:
        RuntimeError: the model has no data.
    """

    def __init__(self, model: DistributionGP):
        locations = model.train_locations
        if locations is None or model.n == 0:
            raise RuntimeError('the GP has no data yet')
        hp = model.hyperparameters()
        self.model = model
        self.mean0 = float(hp['mean'])
        self.outputscale = float(hp['outputscale'])
        self.noise = float(hp['noise'])
        with torch.no_grad():
            self.train_enc = model.encode(locations).detach()
            k = self.kernel(self.train_enc, self.train_enc)
            # λ plus each reading's reported variance, as the model's own posterior
            self.noise_diag = self.noise + model.reading_noise.to(k)
            k = k + torch.diag(self.noise_diag)
            self.chol = torch.linalg.cholesky(k)
            self.train_y = model.train_y.to(k)
            self.alpha = torch.cholesky_solve((self.train_y - self.mean0).unsqueeze(-1), self.chol).squeeze(-1)

    def kernel(self, a: Tensor, b: Tensor) -> Tensor:
        """Prior covariance (output units) between encodings ``a`` ``(..., p, E)`` and ``b`` ``(..., q, E)``."""
        return self.outputscale * self.model.kernel.forward(a, b)

    def encode(self, points: Tensor) -> Tensor:
        """Encodings of points ``(..., D)`` (physical units) -> ``(..., E)``."""
        flat = points.reshape(-1, points.shape[-1])
        return self.model.encode(Dirac(flat)).reshape(*points.shape[:-1], -1)

    def mean_covariance(self, points: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(b, n)`` and covariance ``(b, n, n)`` of :math:`f` at ``points`` ``(b, n, D)``
        (differentiable w.r.t. ``points``)."""
        enc = self.encode(points)                                  # (b, n, E)
        k_star = self.kernel(enc, self.train_enc)                  # (b, n, N)
        mean = self.mean0 + k_star @ self.alpha
        v = torch.linalg.solve_triangular(self.chol, k_star.transpose(-1, -2), upper=False)  # (b, N, n)
        cov = self.kernel(enc, enc) - v.transpose(-1, -2) @ v
        return mean, cov

    def variance(self, points: Tensor) -> Tensor:
        """Posterior variance at ``points`` ``(q, D)`` -> ``(q,)``."""
        _, cov = self.mean_covariance(points.unsqueeze(-2))
        return cov[..., 0, 0].clamp_min(0)


class PosteriorPath:
    """One posterior sample path :math:`\\tilde f` of the GP (module docstring).

    Args:
        posterior: the model's :class:`JointPosterior`; its kernel must be the expected SE kernel (the plain
            SE kernel on points).
        n_features: number ``M`` of random Fourier features of the prior term.
        generator: the draw's random stream (on the model's device).

    Raises:
        TypeError: another kernel (no random-feature expansion is defined here).
    """

    def __init__(self, posterior: JointPosterior, n_features: int = 1000, generator: torch.Generator | None = None):
        kernel = posterior.model.kernel
        if not isinstance(kernel, ExpectedRBFKernel):
            raise TypeError(f'posterior sample paths need the expected SE kernel, got {type(kernel).__name__}')
        self.posterior = posterior
        bounds = posterior.model.bounds
        self.lo, self.span = bounds[0], bounds[1] - bounds[0]
        like = posterior.train_enc
        ell = kernel.lengthscale.detach().reshape(-1).to(like)
        d = ell.numel()
        kw = dict(dtype=like.dtype, device=like.device, generator=generator)
        self.omega = torch.randn(n_features, d, **kw) / ell
        self.phase = 2 * math.pi * torch.rand(n_features, **kw)
        self.scale = math.sqrt(2 * posterior.outputscale / n_features)
        theta = torch.randn(n_features, **kw)
        eps = torch.randn(posterior.train_y.numel(), **kw)
        locations = posterior.model.train_locations
        train_points = locations.mean.to(like)
        self.ell = ell
        self.train_u = (train_points - self.lo) / self.span / ell     # training points in lengthscale units
        cov = locations.covariance.to(like) / (self.span.unsqueeze(-1) * self.span.unsqueeze(-2))  # unit cube
        self.points_only = bool((cov == 0).all())
        # training inputs that are distributions: the expected feature E_P[cos(ω·u + b)] =
        # exp(-ωᵀΣω/2) cos(ω·m + b) for a Gaussian P = N(m, Σ) (moment-matched otherwise), whose inner products are
        # the expected SE kernel the model trains with
        damping = torch.exp(-0.5 * torch.einsum('md,nde,me->nm', self.omega, cov, self.omega))
        prior_train = (self._features(train_points) * damping) @ theta
        resid = posterior.train_y - posterior.mean0 - prior_train - posterior.noise_diag.sqrt() * eps
        self.theta = theta
        self.weights = torch.cholesky_solve(resid.unsqueeze(-1), posterior.chol).squeeze(-1)

    def _cross(self, flat: Tensor) -> Tensor:
        """Prior covariance between points ``flat`` ``(q, D)`` and the training inputs -> ``(q, N)``."""
        if self.points_only:  # the SE kernel on points, without the encoding's covariance part
            u = (flat - self.lo) / self.span / self.ell
            return self.posterior.outputscale * torch.exp(-0.5 * torch.cdist(u, self.train_u).pow(2))
        return self.posterior.kernel(self.posterior.encode(flat), self.posterior.train_enc)

    def on_contexts(self, x: Tensor, contexts: Tensor) -> Tensor:
        """:math:`\\tilde f(\\mathbf x_j, w_i)` for decision parts ``x`` ``(b, d)`` and ``contexts`` ``(n, m)`` (the
        last ``m`` coordinates) -> ``(b, n)``; the same values as ``self(joint points)`` with the context half of
        the random features computed once."""
        d = x.shape[-1]
        if not self.points_only:
            from .quadrature import joint_points
            return self(joint_points(x, contexts))
        lo, span, ell = self.lo, self.span, self.ell
        ux = (x - lo[:d]) / span[:d]
        uw = (contexts.to(x) - lo[d:]) / span[d:]
        arg = (ux @ self.omega[:, :d].T).unsqueeze(-2) + (uw @ self.omega[:, d:].T + self.phase).unsqueeze(0)
        prior = torch.cos(arg) @ (self.scale * self.theta)                       # (b, n)
        ax = ux / ell[:d]
        aw = uw / ell[d:]
        tx, tw = self.train_u[:, :d], self.train_u[:, d:]
        sq = torch.cdist(ax, tx).pow(2).unsqueeze(-2) + torch.cdist(aw, tw).pow(2).unsqueeze(0)   # (b, n, N)
        k = self.posterior.outputscale * torch.exp(-0.5 * sq)
        return self.posterior.mean0 + prior + k @ self.weights

    def _features(self, points: Tensor) -> Tensor:
        u = (points - self.lo) / self.span
        return self.scale * torch.cos(u @ self.omega.T + self.phase)

    def __call__(self, points: Tensor) -> Tensor:
        """:math:`\\tilde f` at ``points`` ``(..., D)`` (physical units) -> ``(...)``; differentiable."""
        flat = points.reshape(-1, points.shape[-1])
        out = self.posterior.mean0 + self._features(flat) @ self.theta + self._cross(flat) @ self.weights
        return out.reshape(points.shape[:-1])

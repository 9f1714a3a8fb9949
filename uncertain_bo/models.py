r"""One Gaussian process over location distributions, for every method.

:class:`DistributionGP` is a GPyTorch ``ExactGP`` whose inputs are
:class:`~uncertain_bo.distributions.LocationDistributions`; the kernel decides how a distribution is
compared (closed-form expected SE, kernel mean embedding, MMD, ...). With the expected SE kernel this is
the GP of Oliveira et al. 2019, Eqs. 11-13:

.. math::
    \hat\mu_n(P) = m + \hat k_n(P)^\top (\hat K_n + \lambda I)^{-1} (\mathbf y_n - m), \qquad
    \hat\sigma^2_n(P) = \hat k(P, P) - \hat k_n(P)^\top (\hat K_n + \lambda I)^{-1} \hat k_n(P).

Hyperparameters (ARD lengthscales, signal variance :math:`\sigma_f^2`, noise :math:`\lambda`, constant
mean :math:`m`) are fitted by type-II maximum likelihood with BoTorch's ``fit_gpytorch_mll`` (L-BFGS-B).
Between fits, new observations are added by growing the inverse Cholesky factor by one row
(:math:`O(n^2)` instead of :math:`O(n^3)`).

Inputs are normalised to the unit cube of ``bounds`` and outputs standardised internally; every public
method takes and returns physical units (e.g. metres, field units).

**Observation noise.** Each reading may carry the variance its sensor reports, :math:`\sigma^2_{\epsilon,i}` (field
units², 0 = not reported). The noise of reading :math:`i` is then :math:`\sigma^2_{\epsilon,i} + \lambda`: the
reported variance is its floor and the learned :math:`\lambda` models what the sensor does not report (the
input-induced noise of IGP-UCB, Oliveira et al. 2019 Thm. 2, model mismatch). Readings without a reported
variance get :math:`\lambda` alone, as before; the marginal likelihood and the posterior use the same
heteroscedastic diagonal.

**Input-induced noise** (``input_noise=True``). A reading taken at an uncertain location :math:`x_i \sim P_i` is
:math:`y_i = f(x_i) + \epsilon_i`, so its prior variance is :math:`k(x, x) + \sigma^2_{\epsilon,i}`, not
:math:`\hat k(P_i, P_i) + \sigma^2_{\epsilon,i}`: around the latent :math:`\hat f(P_i) = \mathbb E_{P_i}[f]` the
reading scatters by

.. math::
    v_i = \mathbb E_{P_i}[k(x, x)] - \hat k(P_i, P_i)
        = \sigma_f^2 \big(1 - |I + 2 W^{-1} \Sigma_i|^{-1/2}\big) \quad \text{(expected SE kernel)},

the prior variance of :math:`f(x) - \hat f(P_i)` (Girard 2004 §3.4; the per-reading form of the
:math:`\sigma_F` of Oliveira et al. 2019, Prop. 3). It grows with the location uncertainty relative to the
lengthscale and differs per reading when the localisation does (a GNSS-degraded zone), which one learned
:math:`\lambda` cannot express. With the option on, :math:`v_i` (a function of the hyperparameters, so inside the
marginal likelihood's gradient) is added to each reading's noise; the residuals' correlation between nearby
readings is neglected, as in the noisy-input GP literature. Off by default: the paper benchmarks are
measured without it.
"""
from __future__ import annotations

import logging
import math
import warnings
from typing import Sequence

import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.fit import fit_gpytorch_mll
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.models import ExactGP
from gpytorch.priors import GammaPrior, LogNormalPrior, Prior
from linear_operator.operators import DiagLinearOperator
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from .distributions import DTYPE, Dirac, LocationDistributions, cat
from .kernels import DistributionKernel, ExpectedRBFKernel

__all__ = ['DistributionGP', 'ReadingNoiseLikelihood', 'ModelFittingError', 'NOISE_PRIORS', 'make_noise_prior']

#: priors on the learned noise :math:`\lambda` (standardised output units; :func:`make_noise_prior`)
NOISE_PRIORS = {
    'gamma': "Gamma(1.1, 0.05): BoTorch's classic prior (mean 22, mode 2 in standardised units)",
    'lognormal': "LogNormal(-4, 1): BoTorch's current SingleTaskGP default (median 0.018, i.e. a noise std of about "
                 '0.13 data standard deviations)',
}


def make_noise_prior(name: str) -> Prior:
    """The prior :data:`NOISE_PRIORS` names, on :math:`\\lambda` in standardised output units.

    Raises:
        ValueError: unknown name.
    """
    if name == 'gamma':
        return GammaPrior(1.1, 0.05)
    if name == 'lognormal':
        return LogNormalPrior(-4.0, 1.0)
    raise ValueError(f'unknown noise prior {name!r}; known: {", ".join(NOISE_PRIORS)}')


log = logging.getLogger(__name__)


class ReadingNoiseLikelihood(GaussianLikelihood):
    """Gaussian likelihood with a learned homoscedastic noise :math:`\\lambda` plus known per-reading variances.

    ``known_noise`` (buffer, ``(n,)``, the model's standardised units) is added to the diagonal of the
    training marginal when its length matches (the marginal likelihood's training call); zeros change nothing.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.register_buffer('known_noise', torch.zeros(0, dtype=DTYPE))

    def marginal(self, function_dist: MultivariateNormal, *args, **kwargs) -> MultivariateNormal:
        out = super().marginal(function_dist, *args, **kwargs)
        known = self.known_noise
        if known.numel() and known.numel() == out.mean.shape[-1] and bool((known > 0).any()):
            out = MultivariateNormal(out.mean, out.lazy_covariance_matrix + DiagLinearOperator(known.to(out.mean)))
        return out


class DistributionGP(ExactGP):
    """Exact GP regression over location distributions.

    Args:
        bounds: ``(2, d)`` lower/upper bounds of the search space (physical units). Inputs are mapped to
            the unit cube before the kernel sees them, so lengthscale priors are scale-free.
        kernel: a :class:`~uncertain_bo.kernels.DistributionKernel` over ``R^d`` (default
            :class:`~uncertain_bo.kernels.ExpectedRBFKernel` with a Gamma(3, 6) lengthscale prior in
            unit-cube units). The signal variance is added as a ``ScaleKernel``.
        standardize: standardise outputs (zero mean, unit variance) at each :meth:`set_data` / :meth:`fit`.
            Set False to use hyperparameters in the output's own units (paper experiments with fixed
            :math:`\\sigma_f^2`, :math:`\\lambda`).
        priors: put BoTorch's classic Gamma priors on signal variance and noise (MAP instead of ML).
        noise_lower_bound: lower bound on :math:`\\lambda` (standardised units when ``standardize``).
        noise_prior: the prior on :math:`\\lambda` when ``priors`` (a key of :data:`NOISE_PRIORS`; default
            ``'gamma'``, the prior the paper benchmarks were measured with).
        input_noise: add each reading's input-induced variance :math:`v_i` (module docstring) to its noise.
        lengthscale_prior: a prior on the kernel's lengthscales (unit-cube units) replacing the kernel's own
            (the default kernel's Gamma(3, 6)); for kernels with GPyTorch lengthscales (expected SE,
            unscented SE, kernel mean embeddings, SKL). None keeps the kernel's. A problem whose objective
            has features far shorter than the box (Michalewicz) sets one that allows them.

    Raises:
        ValueError: malformed ``bounds``; a ``lengthscale_prior`` for a kernel without GPyTorch lengthscales.
    """

    def __init__(self, bounds: Tensor, kernel: DistributionKernel | None = None, *,
                 standardize: bool = True, priors: bool = True, noise_lower_bound: float = 1e-6,
                 lengthscale_prior: Prior | None = None, noise_prior: str = 'gamma', input_noise: bool = False):
        bounds = torch.as_tensor(bounds, dtype=DTYPE)
        if bounds.ndim != 2 or bounds.shape[0] != 2 or not (bounds[1] > bounds[0]).all():
            raise ValueError(f'bounds must be (2, d) with upper > lower, got {bounds.tolist()}')
        d = bounds.shape[1]
        likelihood = ReadingNoiseLikelihood(
            noise_prior=make_noise_prior(noise_prior) if priors else None,
            noise_constraint=GreaterThan(noise_lower_bound))
        super().__init__(None, None, likelihood)
        if kernel is None:
            kernel = ExpectedRBFKernel(d, lengthscale_prior=GammaPrior(3.0, 6.0) if priors else None)
        if kernel.dim != d:
            raise ValueError(f'kernel is over R^{kernel.dim} but bounds are {d}-dimensional')
        if lengthscale_prior is not None:
            if not getattr(kernel, 'has_lengthscale', False):
                raise ValueError(f'{type(kernel).__name__} has no GPyTorch lengthscale for lengthscale_prior')
            kernel.register_prior('lengthscale_prior', lengthscale_prior, lambda m: m.lengthscale,
                                  lambda m, v: m._set_lengthscale(v))
        self.mean_module = ConstantMean()
        self.covar_module = ScaleKernel(kernel, outputscale_prior=GammaPrior(2.0, 0.15) if priors else None)
        self.register_buffer('bounds', bounds)
        self.standardize = standardize
        self.input_noise = bool(input_noise)
        self._locations: LocationDistributions | None = None
        self._y = torch.zeros(0, dtype=DTYPE)
        self._noise = torch.zeros(0, dtype=DTYPE)  # reported reading variances, output units²
        self._y_shift, self._y_scale = 0.0, 1.0
        self._cache: _PosteriorCache | None = None
        self.to(DTYPE)

    # ------------------------------------------------------------------ data
    @property
    def kernel(self) -> DistributionKernel:
        """The distribution kernel (without the signal variance)."""
        return self.covar_module.base_kernel

    @property
    def dim(self) -> int:
        return self.bounds.shape[1]

    @property
    def n(self) -> int:
        """Number of observations."""
        return self._y.numel()

    @property
    def train_locations(self) -> LocationDistributions | None:
        """Training location distributions (physical units), or None before any data."""
        return self._locations

    @property
    def train_y(self) -> Tensor:
        """``(n,)`` observed values (physical units)."""
        return self._y

    @property
    def reading_noise(self) -> Tensor:
        """``(n,)`` reported reading variances :math:`\\sigma^2_{\\epsilon,i}` (output units², 0 = not reported)."""
        return self._noise

    def normalize(self, distributions: LocationDistributions) -> LocationDistributions:
        """Map distributions from physical units to the unit cube of ``bounds``."""
        lo, hi = self.bounds
        scale = (hi - lo).reciprocal()
        return distributions.affine(scale, -lo * scale)

    def encode(self, distributions: LocationDistributions) -> Tensor:
        """Kernel encoding of (normalised) distributions, ``(n, D)``."""
        return self.kernel.encode(self.normalize(distributions))

    def set_data(self, locations: LocationDistributions, y: Tensor, noise: Tensor | None = None) -> None:
        """Replace the data set ``{(P_i, y_i)}``.

        Args:
            locations: ``n`` training location distributions.
            y: ``(n,)`` observations.
            noise: ``(n,)`` reported reading variances (output units², 0 = not reported); None = none reported.

        Raises:
            ValueError: length mismatch, non-finite ``y``, negative or non-finite ``noise``.
        """
        y = _checked_targets(locations, y)
        self._locations, self._y, self._noise = locations, y, _checked_noise(noise, y)
        self._update_standardization()
        self._sync_train_data()
        self._cache = None

    def append(self, locations: LocationDistributions, y: Tensor, noise: Tensor | None = None) -> None:
        """Add observations without refitting hyperparameters.

        Grows the cached inverse Cholesky factor by one row per new point (:math:`O(n^2)` each) when a
        posterior cache exists; output standardisation constants stay those of the last fit.

        Args:
            locations, y, noise: as for :meth:`set_data`.

        Raises:
            ValueError: length mismatch, non-finite ``y``, negative or non-finite ``noise``.
        """
        y = _checked_targets(locations, y)
        noise = _checked_noise(noise, y)
        if self._locations is None:
            self.set_data(locations, y, noise)
            return
        self._locations = cat([self._locations, locations])
        self._y = torch.cat([self._y, y])
        self._noise = torch.cat([self._noise, noise])
        self._sync_train_data()
        if self._cache is not None:
            with torch.no_grad():
                enc = self.encode(locations)
                for i in range(enc.shape[0]):
                    self._cache.grow(self, enc[i:i + 1], float(noise[i]) / self._y_scale ** 2
                                     + float(self.input_variance(locations[i:i + 1])))
                self._cache.set_targets(self._standardized_y())

    # ------------------------------------------------------------ fitting
    def fit(self, *, max_attempts: int = 3) -> bool:
        """Fit hyperparameters by maximising the (prior-regularised) marginal likelihood.

        Uses ``botorch.fit.fit_gpytorch_mll`` (scipy L-BFGS-B), starting from the current values. On
        failure the previous hyperparameters are kept and a warning is logged.

        Returns:
            True if the fit succeeded.

        Raises:
            RuntimeError: no data.
        """
        if self._locations is None or self.n == 0:
            raise RuntimeError('fit() needs data: call set_data() first')
        self._update_standardization()
        self._sync_train_data()
        state = {k: v.clone() for k, v in self.state_dict().items()}
        mll = ExactMarginalLogLikelihood(self.likelihood, self)
        ok = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                fit_gpytorch_mll(mll, optimizer_kwargs={'options': {'maxiter': 200}},
                                 max_attempts=max_attempts)
        except (ModelFittingError, RuntimeError, ValueError) as exc:
            log.warning('GP hyperparameter fit failed (%s); keeping previous hyperparameters', exc)
            self.load_state_dict(state)
            ok = False
        self.eval()
        self._cache = None
        return ok

    def set_hyperparameters(self, *, lengthscale: float | Sequence[float] | None = None,
                            outputscale: float | None = None, noise: float | None = None,
                            mean: float | None = None) -> None:
        """Set hyperparameters directly (physical units for ``lengthscale``).

        Args:
            lengthscale: scalar or ``(d,)`` lengthscales in input units (converted to unit-cube units).
            outputscale: signal variance :math:`\\sigma_f^2` (standardised units if ``standardize``).
            noise: noise variance / regulariser :math:`\\lambda` (same units as ``outputscale``).
            mean: constant prior mean (same units).
        """
        with torch.no_grad():
            if lengthscale is not None:
                ell = torch.as_tensor(lengthscale, dtype=DTYPE).expand(self.dim)
                self.kernel.lengthscale = (ell / (self.bounds[1] - self.bounds[0])).reshape(1, -1)
            if outputscale is not None:
                self.covar_module.outputscale = torch.as_tensor(outputscale, dtype=DTYPE)
            if noise is not None:
                self.likelihood.noise = torch.as_tensor([noise], dtype=DTYPE)
            if mean is not None:
                self.mean_module.constant.fill_(mean)
        self._cache = None

    def hyperparameters(self) -> dict[str, object]:
        """Current hyperparameters; lengthscales in input units, scales in output units."""
        span = self.bounds[1] - self.bounds[0]
        return {
            'lengthscale': (self.kernel.lengthscale.detach().reshape(-1) * span).tolist(),
            'outputscale': float(self.covar_module.outputscale.detach()) * self._y_scale ** 2,
            'noise': float(self.likelihood.noise.detach()) * self._y_scale ** 2,  # learned λ, beyond the reported
            'mean': float(self.mean_module.constant.detach()) * self._y_scale + self._y_shift,
        }

    def transform_inputs(self, X: Tensor) -> Tensor:
        """Identity; BoTorch's MLL closure calls it. Normalisation happens in :meth:`encode`."""
        return X

    def forward(self, x: Tensor) -> MultivariateNormal:
        """GPyTorch prior over encoded inputs (used by the marginal likelihood: in training mode ``x`` are the
        training inputs, and with ``input_noise`` their input-induced variances join the diagonal)."""
        covar = self.covar_module(x)
        if self.input_noise and self.training and self._locations is not None and x.shape[-2] == self.n:
            covar = covar + DiagLinearOperator(self.input_variance(self._locations))
        return MultivariateNormal(self.mean_module(x), covar)

    def input_variance(self, locations: LocationDistributions) -> Tensor:
        """``(n,)`` input-induced variances :math:`v_i = \\mathbb E_{P_i}[k(x, x)] - \\hat k(P_i, P_i)` of readings
        taken at ``locations`` (module docstring), in the model's standardised output units; differentiable in
        the hyperparameters. Zeros when ``input_noise`` is off. The point value :math:`k(x, x)` is the kernel at
        the distribution's mean (exact for stationary kernels)."""
        if not self.input_noise:
            return torch.zeros(len(locations), dtype=DTYPE, device=self.bounds.device)
        enc = self.encode(locations)
        spread = self.covar_module.forward(enc, enc, diag=True)
        point = self.encode(Dirac(locations.mean))
        return (self.covar_module.forward(point, point, diag=True) - spread).clamp_min(0.0)

    # ---------------------------------------------------------- posterior
    def posterior(self, distributions: LocationDistributions) -> tuple[Tensor, Tensor]:
        """Posterior mean and variance of :math:`\\hat f(P) = \\mathbb E_P[f]` (Eqs. 11-13).

        Args:
            distributions: ``q`` test distributions (e.g. :math:`\\hat P_{\\mathbf x}` of candidate
                targets). Differentiable w.r.t. their parameters.

        Returns:
            ``(mean (q,), variance (q,))`` in output units; the variance is of the latent
            :math:`\\hat f`, without observation noise.

        Raises:
            RuntimeError: no data.
        """
        cache = self._posterior_cache()
        enc = self.encode(distributions)
        k_star = self.covar_module.forward(enc, cache.enc)  # (q, n)
        prior_var = self.covar_module.forward(enc, enc, diag=True)  # (q,)
        v = k_star @ cache.linv.T  # rows: (L⁻¹ k*)ᵀ
        mean = cache.mean + k_star @ cache.alpha
        var = (prior_var - v.pow(2).sum(-1)).clamp_min(1e-12)
        return mean * self._y_scale + self._y_shift, var * self._y_scale ** 2

    def information_gain(self) -> float:
        """:math:`\\tfrac12 \\log|I + \\Lambda^{-1}\\hat K_n|` of the current data, nats (paper Eq. 18 with
        :math:`\\Lambda = \\lambda I`; with reported reading variances
        :math:`\\Lambda_{ii} = \\lambda + \\sigma^2_{\\epsilon,i}`)."""
        cache = self._posterior_cache()
        diag = self.noise_diagonal()
        logdet = -2.0 * torch.log(torch.diagonal(cache.linv)).sum()
        return 0.5 * float(logdet - torch.log(diag).sum())

    # ----------------------------------------------------------- internals
    def _standardized_y(self) -> Tensor:
        return (self._y - self._y_shift) / self._y_scale

    def _update_standardization(self) -> None:
        if self.standardize and self.n > 0:
            self._y_shift = float(self._y.mean())
            std = float(self._y.std()) if self.n > 1 else 0.0
            self._y_scale = std if std > 1e-9 * max(1.0, abs(self._y_shift)) else 1.0
        else:
            self._y_shift, self._y_scale = 0.0, 1.0

    def noise_diagonal(self) -> Tensor:
        """``(n,)`` each training reading's noise variance :math:`\\lambda + \\sigma^2_{\\epsilon,i}` (learned noise
        plus the reported variance, plus the input-induced variance with ``input_noise``), in the model's
        standardised output units (detached): the diagonal the marginal likelihood and the posterior add to the
        kernel matrix."""
        diag = float(self.likelihood.noise.detach()) + self._noise / self._y_scale ** 2
        if self.input_noise and self._locations is not None:
            with torch.no_grad():
                diag = diag + self.input_variance(self._locations).to(diag)
        return diag

    def _sync_train_data(self) -> None:
        if self._locations is None:
            return
        self.set_train_data(inputs=(self.encode(self._locations).detach(),),
                            targets=self._standardized_y(), strict=False)
        self.likelihood.known_noise = (self._noise / self._y_scale ** 2).to(self._y)

    def _posterior_cache(self) -> '_PosteriorCache':
        if self._locations is None or self.n == 0:
            raise RuntimeError('the GP has no data yet: observe at least one point first')
        if self._cache is None:
            with torch.no_grad():
                self._cache = _PosteriorCache.build(self)
        return self._cache


def _checked_noise(noise: Tensor | None, y: Tensor) -> Tensor:
    """Reported variances as a float64 ``(n,)`` tensor matching ``y`` (zeros when None); ValueError otherwise."""
    if noise is None:
        return torch.zeros_like(y)
    noise = torch.as_tensor(noise, dtype=DTYPE).reshape(-1).to(y.device)
    if noise.numel() != y.numel():
        raise ValueError(f'{y.numel()} observations but {noise.numel()} reading variances')
    if not (torch.isfinite(noise).all() and (noise >= 0).all()):
        raise ValueError('reading variances must be finite and >= 0')
    return noise


def _checked_targets(locations: LocationDistributions, y: Tensor) -> Tensor:
    """``y`` as a float64 ``(n,)`` tensor matching ``locations``; ValueError otherwise."""
    y = torch.as_tensor(y, dtype=DTYPE).reshape(-1)
    if len(locations) != y.numel():
        raise ValueError(f'{len(locations)} locations but {y.numel()} observations')
    if not torch.isfinite(y).all():
        raise ValueError('observations contain NaN or inf')
    return y


class _PosteriorCache:
    """Cached :math:`L^{-1}` with :math:`LL^\\top = \\hat K + \\lambda I`, and :math:`\\alpha`, in
    standardised units. Hyperparameters are frozen inside the cache (detached tensors)."""

    def __init__(self, enc: Tensor, linv: Tensor, mean: float):
        self.enc, self.linv, self.mean = enc, linv, mean
        self.alpha = enc.new_zeros(enc.shape[0])

    @classmethod
    def build(cls, gp: DistributionGP) -> '_PosteriorCache':
        enc = gp.encode(gp.train_locations).detach()
        k = gp.covar_module.forward(enc, enc).detach()
        k = k + torch.diag(gp.noise_diagonal().to(k))
        chol = psd_safe_cholesky(k)
        eye = torch.eye(k.shape[0], dtype=k.dtype, device=k.device)
        linv = torch.linalg.solve_triangular(chol, eye, upper=False)
        cache = cls(enc, linv, float(gp.mean_module.constant))
        cache.set_targets(gp._standardized_y())
        return cache

    def set_targets(self, y_std: Tensor) -> None:
        r = y_std - self.mean
        self.alpha = self.linv.T @ (self.linv @ r)

    def grow(self, gp: DistributionGP, enc_new: Tensor, known_noise: float = 0.0) -> None:
        r"""Append one point: :math:`L_{new}^{-1} = [[L^{-1}, 0], [-l^\top L^{-1}/d, 1/d]]`,
        :math:`l = L^{-1}k`, :math:`d = \sqrt{k_{**} + \lambda - l^\top l}`."""
        k = gp.covar_module.forward(enc_new, self.enc).reshape(-1)
        kss = (float(gp.covar_module.forward(enc_new, enc_new, diag=True)) + float(gp.likelihood.noise)
               + known_noise)
        lvec = self.linv @ k
        d2 = kss - float(lvec @ lvec)
        d = math.sqrt(max(d2, 1e-10 * max(kss, 1e-12)))
        n = self.linv.shape[0]
        new = self.linv.new_zeros(n + 1, n + 1)
        new[:n, :n] = self.linv
        new[n, :n] = -(lvec @ self.linv) / d
        new[n, n] = 1.0 / d
        self.linv = new
        self.enc = torch.cat([self.enc, enc_new])

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

**Many readings** (en-route readings of a streaming sensor): the exact posterior costs :math:`O(n^2)` per
candidate, which dominates the acquisition maximisation beyond about a thousand readings. With
:attr:`DistributionGP.inducing` set (indices of ``m`` training inputs) the posterior is the sparse GP of Titsias
2009 (SGPR; its predictive distribution is the DTC one, Quiñonero-Candela & Rasmussen 2005, Eqs. 20-21) with
those inputs as inducing inputs: :math:`O(n m^2)` to build, :math:`O(m^2)` per candidate, rank-one updates as new
readings arrive. Hyperparameters are fitted by the exact marginal likelihood on a subset
(:meth:`DistributionGP.fit`'s ``subset``). With every training input as inducing input it is the exact posterior.
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
        self._cache: _PosteriorCache | _SparsePosteriorCache | None = None
        self._inducing: Tensor | None = None
        self._train_locations_given: LocationDistributions | None = None   # what GPyTorch holds as training data
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
    def inducing(self) -> Tensor | None:
        """``(m,)`` indices of the training inputs used as inducing inputs of the sparse posterior (SGPR; see the
        module docstring), or None for the exact posterior. Setting it rebuilds the posterior at the next use.

        Raises:
            ValueError: (on setting) indices out of range or repeated.
        """
        return self._inducing

    @inducing.setter
    def inducing(self, index: Tensor | None) -> None:
        if index is not None:
            index = torch.as_tensor(index, device=self._y.device).long().reshape(-1)
            if (index.numel() == 0 or int(index.min()) < 0 or int(index.max()) >= self.n
                    or index.unique().numel() != index.numel()):
                raise ValueError(f'inducing must be distinct indices in [0, {self.n}), got {index.numel()} indices')
        self._inducing = index
        self._cache = None

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
        posterior cache exists (the sparse posterior: one column per point, :math:`O(m^2)`, and one
        :math:`O(m^3)` refactorisation per call); output standardisation constants stay those of the last fit.

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
                known = noise.to(enc) / self._y_scale ** 2 + self.input_variance(locations).to(enc)
                if isinstance(self._cache, _SparsePosteriorCache):   # one refactorisation per batch
                    self._cache.add(self, enc, float(self.likelihood.noise) + known)
                else:
                    for i in range(enc.shape[0]):
                        self._cache.grow(self, enc[i:i + 1], float(known[i]))
                self._cache.set_targets(self._standardized_y())

    def clear_posterior(self) -> None:
        """Forget the cached posterior (rebuilt at its next use); e.g. before a fit that would discard it."""
        self._cache = None

    # ------------------------------------------------------------ fitting
    def fit(self, *, max_attempts: int = 3, subset: Tensor | None = None) -> bool:
        """Fit hyperparameters by maximising the (prior-regularised) marginal likelihood.

        Uses ``botorch.fit.fit_gpytorch_mll`` (scipy L-BFGS-B), starting from the current values. On
        failure the previous hyperparameters are kept and a warning is logged.

        Args:
            max_attempts: fits tried (BoTorch retries from prior samples when one fails).
            subset: ``(m,)`` indices (or an ``(n,)`` boolean mask) of the observations whose marginal likelihood
                is maximised; None = all. The fit costs :math:`O(m^3)` per likelihood evaluation instead of
                :math:`O(n^3)`, so a long stream of readings stays cheap to refit; the output standardisation and
                the posterior (:meth:`posterior`) use **all** observations whatever the subset (a subset of
                regression data is an unbiased, if noisier, basis for type-II ML: the "subset of data"
                approximation, Rasmussen & Williams 2006, §8.3.1).

        Returns:
            True if the fit succeeded.

        Raises:
            RuntimeError: no data.
            ValueError: an empty subset or indices out of range.
        """
        if self._locations is None or self.n == 0:
            raise RuntimeError('fit() needs data: call set_data() first')
        self._update_standardization()
        if subset is not None:
            subset = torch.as_tensor(subset, device=self._y.device)
            if subset.dtype == torch.bool:
                subset = subset.nonzero().reshape(-1)
            subset = subset.long().reshape(-1)
            if subset.numel() == 0 or int(subset.min()) < 0 or int(subset.max()) >= self.n:
                raise ValueError(f'subset must hold 1..n indices in [0, {self.n}), got {subset.numel()} indices')
        try:
            return self._fit(max_attempts, subset)
        finally:
            self._sync_train_data()  # the posterior conditions on every observation again
            self._cache = None

    def _fit(self, max_attempts: int, subset: Tensor | None) -> bool:
        self._sync_train_data(subset)
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
        locations = self._train_locations_given    # all readings, or the fit's subset
        if self.input_noise and self.training and locations is not None and x.shape[-2] == len(locations):
            covar = covar + DiagLinearOperator(self.input_variance(locations))
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
        mean, var = cache.predict(self, self.encode(distributions))
        return mean * self._y_scale + self._y_shift, var.clamp_min(1e-12) * self._y_scale ** 2

    def information_gain(self) -> float:
        """:math:`\\tfrac12 \\log|I + \\Lambda^{-1}\\hat K_n|` of the current data, nats (paper Eq. 18 with
        :math:`\\Lambda = \\lambda I`; with reported reading variances
        :math:`\\Lambda_{ii} = \\lambda + \\sigma^2_{\\epsilon,i}`)."""
        return 0.5 * self._posterior_cache().log_det_ratio(self)

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

    def _sync_train_data(self, subset: Tensor | None = None) -> None:
        """Give GPyTorch the training data (all observations, or the rows ``subset`` for a fit)."""
        if self._locations is None:
            return
        locations, y, noise = self._locations, self._standardized_y(), self._noise
        if subset is not None:
            locations, y, noise = locations[subset], y[subset], noise[subset]
        self._train_locations_given = locations
        self.set_train_data(inputs=(self.encode(locations).detach(),), targets=y, strict=False)
        self.likelihood.known_noise = (noise / self._y_scale ** 2).to(self._y)

    def _posterior_cache(self) -> '_PosteriorCache':
        if self._locations is None or self.n == 0:
            raise RuntimeError('the GP has no data yet: observe at least one point first')
        if self._cache is None:
            with torch.no_grad():
                self._cache = (_PosteriorCache.build(self) if self._inducing is None
                               else _SparsePosteriorCache.build(self, self._inducing))
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
        self.mean = mean
        n = linv.shape[0]
        # storage with room to grow (doubling), so a rank-one update writes one row instead of copying n x n
        self._linv = linv.new_zeros(max(n, 16), max(n, 16))
        self._linv[:n, :n] = linv
        self._enc = enc.new_zeros(max(n, 16), enc.shape[1])
        self._enc[:n] = enc
        self._n = n
        self.alpha = enc.new_zeros(n)

    @property
    def linv(self) -> Tensor:
        """``(n, n)`` :math:`L^{-1}` (a view of the storage)."""
        return self._linv[:self._n, :self._n]

    @property
    def enc(self) -> Tensor:
        """``(n, D)`` encoded training inputs (a view of the storage)."""
        return self._enc[:self._n]

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

    def predict(self, gp: DistributionGP, enc: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and latent variance at encoded inputs ``(q, D)``, standardised units (Eqs. 11-13)."""
        k_star = gp.covar_module.forward(enc, self.enc)  # (q, n)
        prior_var = gp.covar_module.forward(enc, enc, diag=True)  # (q,)
        v = k_star @ self.linv.T  # rows: (L⁻¹ k*)ᵀ
        return self.mean + k_star @ self.alpha, prior_var - v.pow(2).sum(-1)

    def log_det_ratio(self, gp: DistributionGP) -> float:
        r""":math:`\log|\hat K + \Lambda| - \log|\Lambda|` of the cached data."""
        return float(-2.0 * torch.log(torch.diagonal(self.linv)).sum() - torch.log(gp.noise_diagonal()).sum())

    def grow(self, gp: DistributionGP, enc_new: Tensor, known_noise: float = 0.0) -> None:
        r"""Append one point: :math:`L_{new}^{-1} = [[L^{-1}, 0], [-l^\top L^{-1}/d, 1/d]]`,
        :math:`l = L^{-1}k`, :math:`d = \sqrt{k_{**} + \lambda - l^\top l}`."""
        k = gp.covar_module.forward(enc_new, self.enc).reshape(-1)
        kss = (float(gp.covar_module.forward(enc_new, enc_new, diag=True)) + float(gp.likelihood.noise)
               + known_noise)
        linv = self.linv
        lvec = linv @ k
        d2 = kss - float(lvec @ lvec)
        d = math.sqrt(max(d2, 1e-10 * max(kss, 1e-12)))
        n = self._n
        if n + 1 > self._linv.shape[0]:
            cap = 2 * self._linv.shape[0]
            grown = self._linv.new_zeros(cap, cap)
            grown[:n, :n] = linv
            self._linv = grown
            enc = self._enc.new_zeros(cap, self._enc.shape[1])
            enc[:n] = self._enc[:n]
            self._enc = enc
        row = -(lvec @ self.linv) / d
        self._linv[n, :n] = row
        self._linv[n, n] = 1.0 / d
        self._enc[n] = enc_new.reshape(-1)
        self._n = n + 1


class _SparsePosteriorCache:
    r"""SGPR posterior (Titsias 2009; predictive = DTC, Quiñonero-Candela & Rasmussen 2005, Eqs. 20-21) with
    inducing inputs :math:`Z` (``m`` of the training inputs), heteroscedastic noise :math:`\Lambda`, in
    standardised units. With :math:`L_u L_u^\top = K_{uu}`, :math:`P = L_u^{-1} K_{uf} \Lambda^{-1/2}`,
    :math:`B = I + P P^\top = L_B L_B^\top`:

    .. math::
        \mu(x) = m + k_{xu} L_u^{-\top} L_B^{-\top} L_B^{-1} P \Lambda^{-1/2} (\mathbf y - m), \qquad
        \sigma^2(x) = k_{xx} - \lVert L_u^{-1} k_{ux} \rVert^2 + \lVert L_B^{-1} L_u^{-1} k_{ux} \rVert^2.

    A new reading adds a column :math:`p` to :math:`P` (:math:`B \mathrel{+}= p p^\top`, :math:`O(m^2)`) and
    :math:`L_B` is refactored once per batch (:math:`O(m^3)`, :meth:`refresh`); hyperparameters are frozen inside.
    """

    def __init__(self, z_enc: Tensor, lu: Tensor, mean: float):
        self.z_enc, self.mean = z_enc, mean
        m = lu.shape[0]
        eye = torch.eye(m, dtype=lu.dtype, device=lu.device)
        self.lu_inv = torch.linalg.solve_triangular(lu, eye, upper=False)       # L_u^{-1}
        self._p = lu.new_zeros(m, 16)      # columns of P (with room to grow)
        self._scale = lu.new_zeros(16)     # Λ^{-1/2} per reading
        self._n = 0
        self.b = eye.clone()               # B = I + P Pᵀ

    @classmethod
    def build(cls, gp: DistributionGP, inducing: Tensor) -> '_SparsePosteriorCache':
        enc = gp.encode(gp.train_locations).detach()
        z = enc[inducing]
        kuu = gp.covar_module.forward(z, z).detach()
        lu = psd_safe_cholesky(kuu)
        cache = cls(z, lu, float(gp.mean_module.constant))
        cache.add(gp, enc, gp.noise_diagonal().to(enc))
        cache.set_targets(gp._standardized_y())
        return cache

    @property
    def p(self) -> Tensor:
        return self._p[:, :self._n]

    def add(self, gp: DistributionGP, enc: Tensor, noise: Tensor) -> None:
        """Add readings with encodings ``(k, D)`` and noise variances ``(k,)`` (standardised units)."""
        k = enc.shape[0]
        if self._n + k > self._p.shape[1]:
            cap = max(2 * self._p.shape[1], self._n + k)
            grown = self._p.new_zeros(self._p.shape[0], cap)
            grown[:, :self._n] = self.p
            scale = self._scale.new_zeros(cap)
            scale[:self._n] = self._scale[:self._n]
            self._p, self._scale = grown, scale
        s = noise.rsqrt()
        cols = (self.lu_inv @ gp.covar_module.forward(self.z_enc, enc).detach()) * s   # (m, k)
        self._p[:, self._n:self._n + k] = cols
        self._scale[self._n:self._n + k] = s
        self._n += k
        self.b = self.b + cols @ cols.T
        self.refresh()

    def refresh(self) -> None:
        lb = psd_safe_cholesky(self.b)
        self.lb_lu_inv = torch.linalg.solve_triangular(lb, self.lu_inv, upper=False)   # L_B^{-1} L_u^{-1}
        self._lb = lb

    def grow(self, gp: DistributionGP, enc_new: Tensor, known_noise: float = 0.0) -> None:
        """Append one reading (same call as :meth:`_PosteriorCache.grow`)."""
        noise = float(gp.likelihood.noise) + known_noise
        self.add(gp, enc_new, enc_new.new_full((enc_new.shape[0],), noise))

    def set_targets(self, y_std: Tensor) -> None:
        r = (y_std - self.mean) * self._scale[:self._n]
        c = torch.linalg.solve_triangular(self._lb, (self.p @ r).unsqueeze(-1), upper=False)   # L_B^{-1} P Λ^{-1/2} r
        self.alpha = (self.lb_lu_inv.T @ c).reshape(-1)          # weights of k_{xu} in the mean

    def predict(self, gp: DistributionGP, enc: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and latent variance at encoded inputs ``(q, D)``, standardised units."""
        k_xu = gp.covar_module.forward(enc, self.z_enc)                     # (q, m)
        prior_var = gp.covar_module.forward(enc, enc, diag=True)
        a = k_xu @ self.lu_inv.T
        b = k_xu @ self.lb_lu_inv.T
        return self.mean + k_xu @ self.alpha, prior_var - a.pow(2).sum(-1) + b.pow(2).sum(-1)

    def log_det_ratio(self, gp: DistributionGP) -> float:
        r""":math:`\log|Q_{ff} + \Lambda| - \log|\Lambda| = \log|B|` (Nyström :math:`Q_{ff}`)."""
        return float(2.0 * torch.log(torch.diagonal(self._lb)).sum())

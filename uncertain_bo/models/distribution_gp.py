r"""One Gaussian process over location distributions, for every method: a BoTorch ``Model``.

:class:`DistributionGP` is a GPyTorch ``ExactGP`` whose inputs are
:class:`~uncertain_bo.distributions.LocationDistributions`; the kernel decides how a distribution is
compared (closed-form expected SE, kernel mean embedding, MMD, ...). With the expected SE kernel this is
the GP of Oliveira et al. 2019, Eqs. 11-13:

.. math::
    \hat\mu_n(P) = m + \hat k_n(P)^\top (\hat K_n + \lambda I)^{-1} (\mathbf y_n - m), \qquad
    \hat C_n(P, Q) = \hat k(P, Q) - \hat k_n(P)^\top (\hat K_n + \lambda I)^{-1} \hat k_n(Q).

It is also a BoTorch :class:`~botorch.models.model.Model`: :meth:`DistributionGP.posterior` returns a
``GPyTorchPosterior`` over a ``MultivariateNormal`` with the **joint** covariance over the ``q`` inputs of each
batch, so BoTorch's acquisitions, samplers and risk measures run on it as on any BoTorch model. What an input is:

- a tensor ``batch x q x d`` holds **points** (Dirac inputs): the posterior of :math:`f` there;
- a :class:`~uncertain_bo.distributions.LocationDistributions` batch holds **distributions**: the posterior of
  :math:`\hat f(P) = \mathbb E_P[f]`. With the candidates of the execution-noise model, :math:`P = \hat P_{\mathbf
  x}`, that is the **robust objective** :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]`.

The robust objective is an explicit distribution batch, not an input transform, by choice: BoTorch's input
transforms map points to points (``InputPerturbation`` replaces each target by ``n_w`` sampled points), which
would replace the expected-SE kernel's closed form of :math:`g` (exact, one kernel evaluation per candidate) by a
Monte Carlo average over ``n_w`` points at ``n_w`` times the cost; and a training input here already is a
distribution, so a candidate distribution is the same kind of object. Stock acquisitions, which pass tensors,
reach :math:`g` through :class:`~uncertain_bo.models.TargetModel` (targets -> :math:`\hat P_{\mathbf x}` ->
this posterior); risk measures over :math:`f` (CVaR, VaR), which need :math:`f` at perturbed points, use
BoTorch's ``InputPerturbation`` through the same view.

Hyperparameters (ARD lengthscales, signal variance :math:`\sigma_f^2`, noise :math:`\lambda`, constant
mean :math:`m`) are fitted by type-II maximum likelihood with BoTorch's ``fit_gpytorch_mll`` (L-BFGS-B).
Between fits, new observations are added by growing the inverse Cholesky factor by one row
(:math:`O(n^2)` instead of :math:`O(n^3)`; :mod:`~uncertain_bo.models.prediction`, the model's prediction strategy and
the only posterior in the package).

Inputs are normalised to the unit cube of ``bounds``; outputs are standardised by BoTorch's ``Standardize`` outcome
transform (``outcome_transform``, as for any BoTorch model: its constants are computed at each
:meth:`DistributionGP.set_data` / :meth:`DistributionGP.fit` and :meth:`DistributionGP.posterior` is untransformed by
its ``untransform_posterior``). Every public method takes and returns physical units (e.g. metres, field units).

**Observation noise.** Each reading may carry the variance its sensor reports, :math:`\sigma^2_{\epsilon,i}` (field
units², 0 = not reported). The noise of reading :math:`i` is then :math:`\sigma^2_{\epsilon,i} + \lambda`: the
reported variance is its floor and the learned :math:`\lambda` models what the sensor does not report (the
input-induced noise of IGP-UCB, Oliveira et al. 2019 Thm. 2, model mismatch). Readings without a reported
variance get :math:`\lambda` alone, as before; the marginal likelihood and the posterior use the same
heteroscedastic diagonal.

**Input-induced noise** (``input_induced_noise=True``). A reading taken at an uncertain location :math:`x_i \sim P_i` is
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

import copy
import logging
import math
from typing import Any, Sequence

import torch
from botorch.exceptions.errors import ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models.model import FantasizeMixin, Model
from botorch.models.transforms.outcome import Standardize
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import ScaleKernel
from gpytorch.means import ConstantMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.models import ExactGP
from gpytorch.priors import GammaPrior, Prior
from linear_operator.operators import DenseLinearOperator, DiagLinearOperator
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from ..caught_warnings import logged_warnings
from ..distributions import DTYPE, Dirac, LocationDistributions, cat, replace_rows
from ..kernels import DistributionKernel, ExpectedRBFKernel
from ..threadpools import cached_threadpool_limits
from .conditioned import ConditionedGP
from .likelihood import ReadingNoiseLikelihood, make_noise_prior
from .marginal_likelihood import FitTerms, negative_marginal_log_likelihood
from .prediction import ExactPrediction, SparsePrediction

__all__ = ['DistributionGP', 'ModelFittingError']

log = logging.getLogger(__name__)


class DistributionGP(ExactGP, Model, FantasizeMixin):
    """Exact GP regression over location distributions; a BoTorch ``Model`` (module docstring).

    Args:
        bounds: ``(2, d)`` lower/upper bounds of the search space (physical units). Inputs are mapped to
            the unit cube before the kernel sees them, so lengthscale priors are scale-free.
        kernel: a :class:`~uncertain_bo.kernels.DistributionKernel` over ``R^d`` (default
            :class:`~uncertain_bo.kernels.ExpectedRBFKernel` with a Gamma(3, 6) lengthscale prior in
            unit-cube units). The signal variance is added as a ``ScaleKernel``.
        standardize: standardise outputs (zero mean, unit variance) at each :meth:`set_data` / :meth:`fit`, by
            ``outcome_transform``. Set False to use hyperparameters in the output's own units (paper experiments
            with fixed :math:`\\sigma_f^2`, :math:`\\lambda`).
        outcome_transform: BoTorch's ``Standardize(m=1)`` (e.g. with its own ``min_stdv``), the model's
            ``outcome_transform``; None = a new ``Standardize(m=1)`` when ``standardize``. Only one affine map of
            the one output fits the model's closed forms (reading noise and posterior scale by its ``stdvs``).
        priors: put BoTorch's classic Gamma priors on signal variance and noise (MAP instead of ML).
        noise_lower_bound: lower bound on :math:`\\lambda` (standardised units when ``standardize``).
        noise_prior: the prior on :math:`\\lambda` when ``priors`` (a key of :data:`NOISE_PRIORS`; default
            ``'gamma'``, the prior the paper benchmarks were measured with).
        input_induced_noise: add each reading's input-induced variance :math:`v_i` (module docstring) to its noise.
        lengthscale_prior: a prior on the kernel's lengthscales (unit-cube units) replacing the kernel's own
            (the default kernel's Gamma(3, 6)); for kernels with GPyTorch lengthscales (expected SE,
            unscented SE, kernel mean embeddings, SKL). None keeps the kernel's. A problem whose objective
            has features far shorter than the box (Michalewicz) sets one that allows them.

    Raises:
        ValueError: malformed ``bounds``; a ``lengthscale_prior`` for a kernel without GPyTorch lengthscales; an
            ``outcome_transform`` other than a one-output ``Standardize``, or one with ``standardize=False``.

    Example:
        A knowledge-gradient decision (BoTorch's one-shot ``qKnowledgeGradient``; ``model.fantasize`` underneath),
        on the robust objective through :class:`~uncertain_bo.models.TargetModel`, and the recommendation that goes
        with it, the maximiser of the posterior mean:

        >>> import torch
        >>> from botorch.acquisition import PosteriorMean, qKnowledgeGradient
        >>> from botorch.optim import optimize_acqf
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP, TargetModel
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> gp = DistributionGP(bounds)
        >>> gp.set_data(Dirac(X), (3 * X).sin().sum(-1))
        >>> ok = gp.fit()
        >>> robust = TargetModel(gp, GaussianExecutionNoise(0.01 * torch.eye(2, dtype=torch.float64)))
        >>> kg = qKnowledgeGradient(robust, num_fantasies=8)
        >>> target, _ = optimize_acqf(kg, bounds, q=1, num_restarts=2, raw_samples=16)
        >>> best, _ = optimize_acqf(PosteriorMean(robust), bounds, q=1, num_restarts=2, raw_samples=16)
        >>> target.shape, best.shape
        (torch.Size([1, 2]), torch.Size([1, 2]))
    """

    def __init__(self, bounds: Tensor, kernel: DistributionKernel | None = None, *,
                 standardize: bool = True, priors: bool = True, noise_lower_bound: float = 1e-6,
                 lengthscale_prior: Prior | None = None, noise_prior: str = 'gamma', input_induced_noise: bool = False,
                 outcome_transform: Standardize | None = None):
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
        if outcome_transform is not None and not standardize:
            raise ValueError('outcome_transform standardises the outputs: drop standardize=False to use it')
        if standardize:
            self.outcome_transform = _checked_outcome_transform(outcome_transform or Standardize(m=1))
        self.input_induced_noise = bool(input_induced_noise)
        self._locations: LocationDistributions | None = None
        self._y = torch.zeros(0, dtype=DTYPE)
        self._noise = torch.zeros(0, dtype=DTYPE)  # reported reading variances, output units²
        self._cache: ExactPrediction | SparsePrediction | None = None
        self._inducing: Tensor | None = None
        self._train_locations_given: LocationDistributions | None = None   # what GPyTorch holds as training data
        self._fit_terms: FitTerms | None = None    # during a fit: what its loss computes once (marginal_likelihood.py)
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
        self._check_mutable()
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
        self._check_mutable()
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
                self._cache.add(self, enc, known)   # sparse: one refactorisation for the batch
                self._cache.set_targets(self._standardized_y())

    def revise(self, rows: Tensor, locations: LocationDistributions) -> None:
        """Replace the training location distributions at ``rows`` (their readings and reported variances stay):
        revised locations of past readings (:mod:`uncertain_bo.planning.revisions`). Hyperparameters are not refitted.

        The cached exact posterior is refactored from the first revised row ``r`` on: rows ``< r`` of
        :math:`L^{-1}` do not depend on later inputs and stay, the trailing block is one Cholesky factorisation of its
        Schur complement, :math:`O(r^2 k + k^3)` for ``k = n - r`` trailing rows (the whole factor when ``r = 0``;
        :meth:`~uncertain_bo.models.prediction.ExactPrediction.refactor_from`). The sparse posterior is rebuilt at its
        next use (a revised reading may be an inducing input). bench/revision_latency.py measures both against
        the decision time.

        Args:
            rows: ``(k,)`` distinct row indices in ``[0, n)``.
            locations: ``k`` location distributions, one per row in order (kinds :func:`~uncertain_bo.distributions.
                cat` can mix with the training batch).

        Raises:
            ValueError: rows out of range or repeated, or a length mismatch.
            InvalidDistributionError: kinds that cannot be mixed with the training batch.
        """
        self._check_mutable()
        rows = torch.as_tensor(rows, device=self._y.device).long().reshape(-1)
        if rows.numel() == 0:
            return
        if (int(rows.min()) < 0 or int(rows.max()) >= self.n or rows.unique().numel() != rows.numel()
                or len(locations) != rows.numel()):
            raise ValueError(f'revise needs {rows.numel()} distinct rows in [0, {self.n}) and one location per row, '
                             f'got {len(locations)} locations')
        before = type(self._locations)
        self._locations = replace_rows(self._locations, rows, locations)
        self._sync_train_data()
        if isinstance(self._cache, ExactPrediction) and type(self._locations) is before:   # (a Dirac batch that
            # became Gaussian may encode to another width: rebuilt at the next use)
            with torch.no_grad():
                self._cache.refactor_from(self, int(rows.min()))
        else:
            self._cache = None

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
        self._check_mutable()
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
        self._fit_terms = FitTerms()
        try:
            # routine: L-BFGS-B stopping at maxiter (the fit is still an improvement), jitter added to a Cholesky
            with logged_warnings(log, OptimizationWarning, NumericalWarning), torch.enable_grad(), \
                    cached_threadpool_limits():  # any grad mode; one thread-pool controller for every fit
                fit_gpytorch_mll(mll, optimizer_kwargs={'options': {'maxiter': 200}},
                                 max_attempts=max_attempts)
        except (ModelFittingError, RuntimeError, ValueError) as exc:
            log.warning('GP hyperparameter fit failed (%s); keeping previous hyperparameters', exc)
            self.load_state_dict(state)
            ok = False
        self._fit_terms = None           # the fit's O(n²) pairwise inputs and its priors: not kept after it
        self.eval()
        self._cache = None
        return ok

    def compute_custom_loss(self, mll: ExactMarginalLogLikelihood, **kwargs: Any) -> Tensor:
        """The loss BoTorch's ``fit_gpytorch_mll`` minimises (its hook for a model's own loss): the negative
        marginal likelihood of :mod:`~uncertain_bo.models.marginal_likelihood`, in closed form for the expected SE
        kernel."""
        return negative_marginal_log_likelihood(self, mll, self._fit_terms)

    def set_hyperparameters(self, *, lengthscale: float | Sequence[float] | None = None,
                            outputscale: float | None = None, noise: float | None = None,
                            mean: float | None = None) -> None:
        """Set hyperparameters directly (physical units for ``lengthscale``).

        Args:
            lengthscale: scalar or ``(d,)`` lengthscales in input units (converted to unit-cube units); a kernel
                with one lengthscale for every axis takes one that is the same on every axis in unit-cube units.
            outputscale: signal variance :math:`\\sigma_f^2` (standardised units with an outcome transform).
            noise: noise variance / regulariser :math:`\\lambda` (same units as ``outputscale``).
            mean: constant prior mean (same units).

        Raises:
            ValueError: lengthscales that differ between axes (in unit-cube units) for a kernel with one lengthscale.
        """
        with torch.no_grad():
            if lengthscale is not None:
                ell = torch.as_tensor(lengthscale, dtype=DTYPE).expand(self.dim) / (self.bounds[1] - self.bounds[0])
                if self.kernel.lengthscale.shape[-1] == 1:    # one lengthscale for every axis (e.g. AIRBO's)
                    if not torch.allclose(ell, ell[:1]):
                        sides = (self.bounds[1] - self.bounds[0]).tolist()
                        raise ValueError(f'{type(self.kernel).__name__} has one lengthscale for every axis; got '
                                         f'{lengthscale} over a box of sides {sides}')
                    ell = ell[:1]
                self.kernel.lengthscale = ell.reshape(1, -1)
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

    def transform_inputs(self, X: Tensor, input_transform: Any = None) -> Tensor:
        """Identity; BoTorch's MLL closure calls it. Normalisation happens in :meth:`encode`."""
        return X

    def forward(self, x: Tensor) -> MultivariateNormal:
        """GPyTorch prior of the latent over encoded inputs ``(..., N, E)``."""
        return MultivariateNormal(self.mean_module(x), self.covar_module(x))

    def __call__(self, *args: Any, **kwargs: Any) -> MultivariateNormal:
        """GPyTorch's call. On the encoded training inputs in training mode (the marginal likelihood's call, as
        GPyTorch's ``ExactGP``): the prior over them, whose diagonal holds each reading's input-induced variance with
        ``input_induced_noise`` (the readings' prior, standardised units). Otherwise ``model(X)`` is :meth:`posterior`
        ``(X).distribution`` for points ``batch x q x d`` or a distribution batch (physical and output units): the
        one posterior of the model in every mode (exact or sparse, with or without ``input_induced_noise``)."""
        if self.training and self._are_train_inputs(args):
            return self._with_input_variance(super().__call__(*args, **kwargs))
        return self.posterior(*args, **kwargs).distribution

    def _are_train_inputs(self, args: tuple) -> bool:
        """Whether GPyTorch's call ``args`` are the encoded training inputs (the marginal likelihood's call)."""
        train = self.train_inputs
        return (train is not None and len(args) == 1 and isinstance(args[0], Tensor)
                and args[0].shape == train[0].shape and torch.equal(args[0], train[0]))

    def _get_train_prior_distribution(self, train_inputs: Any, **kwargs: Any) -> MultivariateNormal:
        """The readings' prior in GPyTorch's own prediction strategy (eval mode), as in training mode."""
        return self._with_input_variance(super()._get_train_prior_distribution(train_inputs, **kwargs))

    def _with_input_variance(self, prior: MultivariateNormal) -> MultivariateNormal:
        """``prior`` over the training inputs (all readings, or the fit's subset) with each reading's input-induced
        variance added to its diagonal when ``input_induced_noise`` is on."""
        locations = self._train_locations_given
        if not self.input_induced_noise or locations is None or prior.mean.shape[-1] != len(locations):
            return prior
        return MultivariateNormal(prior.mean, prior.lazy_covariance_matrix
                                  + DiagLinearOperator(self.input_variance(locations)))

    def input_variance(self, locations: LocationDistributions) -> Tensor:
        """``(n,)`` input-induced variances :math:`v_i = \\mathbb E_{P_i}[k(x, x)] - \\hat k(P_i, P_i)` of readings
        taken at ``locations`` (module docstring), in the model's standardised output units; differentiable in
        the hyperparameters. Zeros when ``input_induced_noise`` is off. The point value :math:`k(x, x)` is the kernel at
        the distribution's mean (exact for stationary kernels)."""
        if not self.input_induced_noise:
            return torch.zeros(len(locations), dtype=DTYPE, device=self.bounds.device)
        enc = self.encode(locations)
        spread = self.covar_module.forward(enc, enc, diag=True)
        point = self.encode(Dirac(locations.mean))
        return (self.covar_module.forward(point, point, diag=True) - spread).clamp_min(0.0)

    # ---------------------------------------------------------- posterior
    @property
    def num_outputs(self) -> int:
        """One output (BoTorch ``Model``)."""
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        """No model batch (BoTorch ``Model``)."""
        return torch.Size()

    def posterior(self, X: Tensor | LocationDistributions, output_indices: list[int] | None = None,
                  observation_noise: bool | Tensor = False, posterior_transform: Any = None,
                  batch_shape: Sequence[int] | None = None, **kwargs: Any) -> GPyTorchPosterior:
        r"""Joint posterior of the latent :math:`\hat f` over each batch of ``q`` inputs (Eqs. 11-13; BoTorch's
        ``Model.posterior``).

        Args:
            X: a tensor ``batch_shape x q x d`` of points (Dirac inputs, physical units), or a
                :class:`~uncertain_bo.distributions.LocationDistributions` batch of ``prod(batch_shape) * q``
                distributions in batch-major order (e.g. :math:`\hat P_{\mathbf x}` of candidate targets: the robust
                objective). Differentiable w.r.t. the points or the distributions' parameters.
            output_indices: None or ``[0]`` (one output).
            observation_noise: False: the latent; True: add each input's noise as a new reading would have it
                (:math:`\lambda`, plus its input-induced variance with ``input_induced_noise``); a tensor
                broadcastable to ``batch_shape x q``: those variances (output units²).
            posterior_transform: a BoTorch ``PosteriorTransform`` applied to the result.
            batch_shape: for a distribution batch, the batch shape in front of ``q`` (default ``()``: one joint
                distribution over all of them). Ignored for tensors.

        Returns:
            ``GPyTorchPosterior`` over a ``MultivariateNormal`` with mean ``batch_shape x q`` and covariance
            ``batch_shape x q x q`` (output units); ``posterior.mean`` is ``batch_shape x q x 1``.

        Raises:
            RuntimeError: no data.
            ValueError: a point dimension other than the model's, a batch that does not split into
                ``batch_shape``, or an output index other than 0.
        """
        if output_indices is not None and list(output_indices) != [0]:
            raise ValueError(f'DistributionGP has one output; output_indices must be None or [0], got {output_indices}')
        dists, batch = self._as_batch(X, batch_shape)
        q = len(dists) // max(math.prod(batch), 1) if len(dists) else 0
        mean, cov = self._joint(dists, batch, q)                  # standardised units
        if observation_noise is not False:
            if isinstance(observation_noise, Tensor):
                extra = observation_noise.to(cov).expand(*batch, q) / self._y_scale ** 2
            else:
                extra = self._standardized_noise_at(dists).to(cov).reshape(*batch, q)
            cov = cov + torch.diag_embed(extra)
        post = GPyTorchPosterior(MultivariateNormal(mean, DenseLinearOperator(cov)))   # lazy: no eager Cholesky
        if hasattr(self, 'outcome_transform'):
            post = self.outcome_transform.untransform_posterior(post)
        return post if posterior_transform is None else posterior_transform(post)

    def with_reading_noise(self, noise: Tensor) -> 'DistributionGP':
        """A copy (this model unchanged) in which reading ``i``'s noise is ``noise[i]`` alone: ``noise`` ``(n,)``
        (output units², > 0) replaces the reported variances and the learned :math:`\\lambda` drops to its lower
        bound; kernel, hyperparameters and output standardisation stay as fitted (so a model appended to since its
        last fit keeps its units). E.g. the posterior under the sensor's noise alone (recommendation ``'sensor_mean'``).

        Raises:
            ValueError: ``noise`` not ``(n,)``, negative or non-finite.
        """
        view = copy.deepcopy(self)
        view._noise = _checked_noise(noise, view._y)
        floor = float(view.likelihood.noise_covar.raw_noise_constraint.lower_bound)
        view.set_hyperparameters(noise=floor * (1.0 + 1e-6))
        view._sync_train_data()
        return view

    def noise_at(self, X: Tensor | LocationDistributions) -> Tensor:
        """``(N,)`` the noise variance a reading taken at each of ``N`` location distributions (or points) would have,
        without a reported variance: :math:`\\lambda`, plus its input-induced variance with ``input_induced_noise``;
        output units²."""
        dists, _ = self._as_batch(X, None)
        return self._standardized_noise_at(dists) * self._y_scale ** 2

    def _standardized_noise_at(self, dists: LocationDistributions) -> Tensor:
        """:meth:`noise_at` in the model's standardised output units."""
        return float(self.likelihood.noise.detach()) + self.input_variance(dists)

    def marginals(self, X: Tensor | LocationDistributions) -> tuple[Tensor, Tensor]:
        """Posterior mean and variance of each input alone: the diagonal of :meth:`posterior` without building the
        joint covariance (what a pointwise acquisition such as UCB needs, at the cost of one kernel row each).

        Args:
            X: ``N`` location distributions, or points ``(N, d)`` (Dirac inputs).

        Returns:
            ``(mean (N,), variance (N,))`` in output units, the variance of the latent :math:`\\hat f` (clamped to at
            least 1e-12 in standardised units).

        Raises:
            RuntimeError: no data.
        """
        dists, _ = self._as_batch(X, None)
        mean, var = self._posterior_cache().marginals_of(self, dists)
        return mean * self._y_scale + self._y_shift, var.clamp_min(1e-12) * self._y_scale ** 2

    def posterior_covariance(self, A: Tensor | LocationDistributions, B: Tensor | LocationDistributions) -> Tensor:
        r"""Posterior cross-covariance :math:`\hat C_n(P_i, Q_j)` of the latent between two batches (Eqs. 11-13).

        Args:
            A, B: location distributions (or points ``(N, d)``), ``N_A`` and ``N_B`` of them.

        Returns:
            ``(N_A, N_B)``, output units².
        """
        da, _ = self._as_batch(A, None)
        db, _ = self._as_batch(B, None)
        return self._posterior_cache().cross(self, self.encode(da), self.encode(db)) * self._y_scale ** 2

    def condition_on_observations(self, X: Tensor | LocationDistributions, Y: Tensor, noise: Tensor | None = None,
                                  **kwargs: Any) -> 'DistributionGP | ConditionedGP':
        r"""The model conditioned on further readings, with the same hyperparameters (BoTorch's
        ``condition_on_observations``; fantasies). The prediction strategy is copied and grown by one row per
        reading (:math:`O(n^2)` each), so this model is unchanged. With ``Y`` = the posterior mean at ``X`` (the
        kriging believer) the posterior mean stays where it was and only the variance shrinks: the hallucinated
        readings of GP-BUCB (Desautels, Krause & Burdick 2014, Eq. 6).

        Batches of readings (``Y`` ``batch_shape x k x 1``, what BoTorch's ``fantasize`` passes: ``S`` fantasies of
        each of ``batch`` sets of inputs ``batch x k x d``) give a :class:`~uncertain_bo.models.ConditionedGP` of
        batch shape ``batch_shape`` instead: Gaussian conditioning of this model's joint posterior, for
        ``fantasize``, ``qKnowledgeGradient`` and ``qNegIntegratedPosteriorVariance``.

        Args:
            X: ``k`` location distributions (or points ``(k, d)``) where the readings are taken; for batched
                readings, points ``batch x k x d`` (a distribution batch: ``batch_shape`` as for :meth:`posterior`).
            Y: ``(k,)`` or ``(k, 1)`` readings (output units), or ``batch_shape x k x 1``.
            noise: ``(k,)`` reported reading variances (output units², default 0; batched: broadcastable to ``Y``):
                each reading's noise is :math:`\lambda` plus this, plus its input-induced variance with
                ``input_induced_noise``.
            batch_shape: (keyword, batched readings with a distribution batch ``X``) its batch shape.

        Returns:
            A conditioned model: it shares this model's modules (hyperparameters), so it cannot be fitted or
            given data (:meth:`fit`, :meth:`set_data` and :meth:`append` raise), only asked for posteriors.

        Raises:
            RuntimeError: no data.
            ValueError: length mismatch, non-finite values.
        """
        Y = torch.as_tensor(Y)
        if Y.ndim > 2:
            dists, batch = self._as_batch(X, kwargs.get('batch_shape'))
            self._posterior_cache()      # the RuntimeError without data
            return ConditionedGP(self, dists, batch, Y, noise)
        dists, _ = self._as_batch(X, None)
        y = _checked_targets(dists, torch.as_tensor(Y).reshape(-1))
        noise = _checked_noise(noise, y)
        cache = self._posterior_cache().copy()
        out = copy.copy(self)          # shares the modules: a view with more data, never fitted
        out._fantasy = True
        out._locations = cat([self._locations, dists])
        out._y = torch.cat([self._y, y.to(self._y)])
        out._noise = torch.cat([self._noise, noise.to(self._noise)])
        with torch.no_grad():
            enc = self.encode(dists)
            known = noise.to(enc) / self._y_scale ** 2 + self.input_variance(dists).to(enc)
            cache.add(self, enc, known)
            cache.set_targets(out._standardized_y())
        out._cache = cache
        return out

    def hallucinate(self, X: Tensor | LocationDistributions) -> 'DistributionGP':
        """The model conditioned on readings at ``X`` equal to its posterior mean there (the kriging believer): the
        mean is unchanged and the variance shrinks where the readings will be taken, GP-BUCB's hallucinated readings
        of pending targets (Desautels, Krause & Burdick 2014, Eq. 6); :meth:`condition_on_observations`.

        Args:
            X: ``k`` location distributions (or points ``(k, d)``).

        Raises:
            RuntimeError: no data.
        """
        with torch.no_grad():
            return self.condition_on_observations(X, self.marginals(X)[0])

    def _as_batch(self, X: Tensor | LocationDistributions,
                  batch_shape: Sequence[int] | None) -> tuple[LocationDistributions, torch.Size]:
        """``(distributions, batch_shape)`` for a point tensor ``... x q x d`` or a distribution batch."""
        if isinstance(X, LocationDistributions):
            batch = torch.Size(batch_shape or ())
            if math.prod(batch) and len(X) % math.prod(batch):
                raise ValueError(f'{len(X)} distributions do not split into batch shape {tuple(batch)}')
            return X, batch
        X = torch.as_tensor(X)
        if X.shape[-1] != self.dim:
            raise ValueError(f'points must end in dimension {self.dim}, got shape {tuple(X.shape)}')
        return Dirac(X.reshape(-1, self.dim).to(DTYPE)), X.shape[:-2]     # a point (d,) is one q x d batch, q = 1

    def _joint(self, dists: LocationDistributions, batch: torch.Size, q: int) -> tuple[Tensor, Tensor]:
        """Mean ``batch x q`` and covariance ``batch x q x q`` of the latent (standardised units)."""
        enc = self.encode(dists)                                   # (B q, E)
        mean, cov = self._posterior_cache().joint(self, enc.reshape(-1, q, enc.shape[-1]))
        diag = cov.diagonal(dim1=-2, dim2=-1)      # the variances' floor of :meth:`marginals`: both read the same
        cov = cov + torch.diag_embed(diag.clamp_min(1e-12) - diag)
        return mean.reshape(*batch, q), cov.reshape(*batch, q, q)

    def information_gain(self) -> float:
        """:math:`\\tfrac12 \\log|I + \\Lambda^{-1}\\hat K_n|` of the current data, nats (paper Eq. 18 with
        :math:`\\Lambda = \\lambda I`; with reported reading variances
        :math:`\\Lambda_{ii} = \\lambda + \\sigma^2_{\\epsilon,i}`)."""
        return 0.5 * self._posterior_cache().log_det_ratio(self)

    # ----------------------------------------------------------- internals
    @property
    def _y_shift(self) -> float:
        """The outcome transform's mean (output units; 0 without one or before data)."""
        transform = getattr(self, 'outcome_transform', None)
        return float(transform.means) if transform is not None and bool(transform._is_trained) else 0.0

    @property
    def _y_scale(self) -> float:
        """The outcome transform's standard deviation (output units; 1 without one or before data)."""
        transform = getattr(self, 'outcome_transform', None)
        return float(transform.stdvs) if transform is not None and bool(transform._is_trained) else 1.0

    def _standardized_y(self) -> Tensor:
        return (self._y - self._y_shift) / self._y_scale

    def _update_standardization(self) -> None:
        """The outcome transform's constants from the readings (BoTorch's ``Standardize`` in training mode)."""
        transform = getattr(self, 'outcome_transform', None)
        if transform is not None and self.n > 0:
            mode = transform.training
            transform.train()
            transform(self._y.unsqueeze(-1))
            transform.train(mode)

    def noise_diagonal(self) -> Tensor:
        """``(n,)`` each training reading's noise variance :math:`\\lambda + \\sigma^2_{\\epsilon,i}` (learned noise
        plus the reported variance, plus the input-induced variance with ``input_induced_noise``), in the model's
        standardised output units (detached): the diagonal the marginal likelihood and the posterior add to the
        kernel matrix."""
        diag = float(self.likelihood.noise.detach()) + self._noise / self._y_scale ** 2
        if self.input_induced_noise and self._locations is not None:
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

    def _posterior_cache(self) -> ExactPrediction | SparsePrediction:
        if self._locations is None or self.n == 0:
            raise RuntimeError('the GP has no data yet: observe at least one point first')
        if self._cache is None:
            with torch.no_grad():
                self._cache = (ExactPrediction.build(self) if self._inducing is None
                               else SparsePrediction.build(self, self._inducing))
        return self._cache

    def exact_prediction(self) -> ExactPrediction:
        """The exact prediction strategy: the cached one, or (when the posterior is sparse) one built on all readings
        with the current hyperparameters, :math:`O(n^3)` (sample paths condition on every reading exactly)."""
        cache = self._posterior_cache()
        if isinstance(cache, ExactPrediction):
            return cache
        with torch.no_grad():
            return ExactPrediction.build(self)

    def _check_mutable(self) -> None:
        if getattr(self, '_fantasy', False):
            raise RuntimeError('a conditioned model (condition_on_observations) shares its hyperparameters with '
                               'the model it came from: it cannot be fitted or given data')


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


def _checked_outcome_transform(transform: Standardize) -> Standardize:
    """``transform`` if it is a one-output, unbatched BoTorch ``Standardize`` on every output; ValueError otherwise."""
    if (type(transform) is not Standardize or transform._m != 1 or transform._outputs is not None
            or transform._batch_shape != torch.Size()):
        raise ValueError(f'outcome_transform must be BoTorch\'s Standardize(m=1) (an affine map of the one output), '
                         f'got {transform!r}')
    return transform

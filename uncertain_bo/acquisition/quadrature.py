r"""Distributionally robust Bayesian quadrature optimisation (DRBQO) and its Bayesian-quadrature baselines
(Nguyen, Gupta, Ha, Rana & Venkatesh, AISTATS 2020).

The problem: maximise :math:`\mathbb E_{P_0}[f(\mathbf x, w)]` when :math:`P_0` is known only through ``n``
fixed samples :math:`S_n = \{w_i\}` and :math:`f` may be evaluated only on :math:`\mathcal X \times S_n`. All
methods here share one GP on the joint space (the planner's GP on Dirac inputs at the commanded
:math:`(\mathbf x, w)`; the expected SE kernel on points is the SE-ARD kernel of the paper, fitted by marginal
likelihood per the planner's schedule) and decide in the joint space: the planner's bounds are
:math:`\mathcal X \times \operatorname{box}(S_n)`, the last ``m`` coordinates are the context. Settings
(``Planner(method_settings=...)``; the quadrature benchmarks pass them):

- ``contexts``: ``(n, m)`` the samples :math:`S_n` (required);
- ``rho``: radius ρ ≥ 0 of the χ² ambiguity set (:mod:`uncertain_bo.ambiguity`; default 1);
- ``n_features``: random Fourier features of the Thompson sample's prior part (default 1000, the authors' code);
- ``random_context``: choose :math:`w_t` uniformly from :math:`S_n` (the paper's RandW ablation, Fig. 5).

================== ===================================================== ====================================
method             :math:`\mathbf x_t`                                    recommendation over past
                                                                          :math:`\mathbf x`
================== ===================================================== ====================================
``drbqo``          :math:`\arg\max_{\mathbf x}\min_{p\in\mathcal P_{n,\rho}} :math:`\max\min_p \sum_i p_i
                   \sum_i p_i\tilde f_t(\mathbf x, w_i)` (Alg. 1)          \mu_t(\mathbf x, w_i)`
``emp_drbqo``      as ``drbqo``                                           empirical mean of :math:`\mu_t`
``bqo_ts``         :math:`\arg\max \frac1n\sum_i\tilde f_t(\mathbf x, w_i)` empirical mean
``maximin_bqo_ts`` as ``bqo_ts``                                          :math:`\max\min_p` as ``drbqo``
``bqo_ei``         EI on :math:`g(f, \mathbf x, \hat P_n)` (Eqs. 5-6)     empirical mean
``maximin_bqo_ei`` as ``bqo_ei``                                          :math:`\max\min_p`
``mtbo``           EI on :math:`g(f, \mathbf x, \hat P_n)` with a         empirical mean
                   multi-task (ICM) kernel (Swersky et al. 2013)
================== ===================================================== ====================================

**Context.** :math:`w_t = \arg\max_{w \in S_n} \sigma^2_{t-1}(\mathbf x_t, w)` (Alg. 1 line 4; the theory's
choice), uniformly at random for the ``*_randw`` variants, and for ``mtbo`` the task with the highest
single-task EI at :math:`\mathbf x_t` (incumbent: the best reading).

**EI** (the authors' code): :math:`s\,(u\Phi(u) + \varphi(u))`, :math:`u = (m - \tau - \xi)/s`, with the
incumbent :math:`\tau = \max_{\mathbf x \in \mathbf x_{1:t}} \mu_t(\mathbf x, \hat P_n)` and
:math:`\xi = 0.1 \times` the range of the readings (0.1 on the code's min-max-normalised outputs).

**Initial design.** The planner's space-filling design for :math:`\mathbf x`; the context of initial point ``i``
is drawn uniformly from :math:`S_n` by a stream seeded with (run seed, ``i``), so every method with the same
seed starts from the same points.

**On the rover** (``drbqo`` without ``contexts``). A rover cannot choose its perturbation, but its execution
noise is known only through samples: the offsets :math:`\mathbf e_i = \hat{\mathbf x}_i - \mathbf x_i` between
where it ended up (the location estimate's mean) and the commanded targets. DRBQO then chooses the target
:math:`\mathbf x_t = \arg\max_{\mathbf x} \min_{p \in \mathcal P_{n,\rho}} \sum_i p_i \tilde f_t(\mathbf x +
\mathbf e_i)` with a posterior sample path of the shared GP on location distributions, and recommends the past
target maximising the same worst case of the posterior mean. It never reads the configured execution-noise
model, so a wrong ``execution_noise_std`` does not mislead it. **The paper's regret bound (Theorem 2) does not
carry over**: it rests on choosing :math:`w_t` by maximum posterior variance, and a rover cannot choose its
execution error; the offsets also mix controller error with localisation error.

Not implemented from the authors' code: ε-greedy exploration (ε = 0.1) and re-fitting with 100 restarts.
The paper's regret bound (Theorem 2) assumes :math:`w_t` is chosen by maximum variance; the RandW variants have
no such guarantee.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from ..ambiguity import worst_case_mean, worst_case_weights
from ..distributions import Dirac, Empirical, Gaussian, LocationDistributions
from ..kernels import DistributionKernel
from ..optim import maximize
from .method import DecisionContext, Method, Proposal, Recommendation, register
from .quadrature_gp import JointPosterior, PosteriorPath

__all__ = ['QuadratureMethod', 'DistributionallyRobustThompson', 'QuadratureExpectedImprovement',
           'ICMKernel', 'expected_improvement', 'joint_points']


def joint_points(x: Tensor, contexts: Tensor) -> Tensor:
    """The points :math:`(\\mathbf x_j, w_i)`: ``x`` ``(b, d)``, ``contexts`` ``(n, m)`` -> ``(b, n, d + m)``."""
    b, n = x.shape[0], contexts.shape[0]
    return torch.cat([x.unsqueeze(-2).expand(b, n, -1), contexts.to(x).unsqueeze(0).expand(b, n, -1)], -1)


def expected_improvement(mean: Tensor, std: Tensor, incumbent: float, xi: float) -> Tensor:
    """:math:`s(u\\Phi(u) + \\varphi(u))`, :math:`u = (m - \\tau - \\xi)/s` (same shapes as ``mean``)."""
    std = std.clamp_min(1e-12)
    u = (mean - incumbent - xi) / std
    normal = torch.distributions.Normal(torch.zeros_like(u), torch.ones_like(u))
    return std * (u * normal.cdf(u) + normal.log_prob(u).exp())


class DistributionallyRobustThompson(AcquisitionFunction):
    """:math:`\\tilde h_t(\\mathbf x) = \\min_{p \\in \\mathcal P_{n,\\rho}} \\sum_i p_i \\tilde f_t(\\mathbf x, w_i)`
    (Alg. 1 line 3; ρ = 0: BQO-TS's :math:`\\frac1n \\sum_i \\tilde f_t(\\mathbf x, w_i)`).

    Args:
        model: the GP (BoTorch bookkeeping only).
        path: a posterior sample :math:`\\tilde f_t` on the joint space.
        contexts: ``(n, m)`` samples.
        rho: ambiguity radius.
    """

    def __init__(self, model, path: PosteriorPath, contexts: Tensor, rho: float):
        super().__init__(model=model)
        self.path, self.contexts, self.rho = path, contexts, rho

    def forward(self, X: Tensor) -> Tensor:
        """``X`` ``(b, 1, d)`` decision parts -> ``(b,)``."""
        values = self.path.on_contexts(X.reshape(-1, X.shape[-1]), self.contexts)
        return worst_case_mean(values, self.rho).reshape(X.shape[:-2])


class QuadratureExpectedImprovement(AcquisitionFunction):
    """EI on the quadrature :math:`g(f, \\mathbf x, \\hat P_n) \\sim \\mathcal N(\\mu_t(\\mathbf x, \\hat P_n),
    \\sigma_t^2(\\mathbf x, \\hat P_n))` (paper Eqs. 5-6 with :math:`p = \\frac1n`).

    Args:
        model: the GP (BoTorch bookkeeping only).
        posterior: the joint posterior.
        contexts: ``(n, m)`` samples.
        incumbent, xi: EI's :math:`\\tau` and :math:`\\xi`.
    """

    def __init__(self, model, posterior: JointPosterior, contexts: Tensor, incumbent: float, xi: float):
        super().__init__(model=model)
        self.posterior, self.contexts, self.incumbent, self.xi = posterior, contexts, incumbent, xi

    def forward(self, X: Tensor) -> Tensor:
        mean, cov = self.posterior.mean_covariance(joint_points(X.reshape(-1, X.shape[-1]), self.contexts))
        m = mean.mean(-1)
        s = cov.mean((-1, -2)).clamp_min(1e-24).sqrt()
        return expected_improvement(m, s, self.incumbent, self.xi).reshape(X.shape[:-2])


class QuadratureMethod(Method):
    """Base of the quadrature methods (module docstring): joint-space decisions, context choice and the
    recommendation over past decision points.

    Raises:
        TypeError: ``contexts`` missing or not ``(n, m)``, ``rho`` negative, unknown settings.
    """

    inputs: ClassVar[str] = 'target'
    robust_candidates: ClassVar[bool] = False
    #: ρ of the decision rule: the method's ρ (True) or 0 (BQO)
    robust_decision: ClassVar[bool] = True
    #: ρ of the recommendation: the method's ρ (True) or 0, the empirical mean
    robust_recommendation: ClassVar[bool] = True
    #: the default of the ``random_context`` setting
    random_context_default: ClassVar[bool] = False
    #: whether the method needs ``contexts`` (DRBQO without them works on the execution-noise offsets)
    needs_contexts: ClassVar[bool] = True

    def __init__(self, contexts: Any = None, rho: float = 1.0, n_features: int = 1000,
                 random_context: bool | None = None, **settings: Any):
        super().__init__(**settings)
        if not (isinstance(rho, (int, float)) and not isinstance(rho, bool) and 0 <= rho < math.inf):
            raise TypeError(f'rho must be a number >= 0, got {rho!r}')
        if contexts is None:
            if self.needs_contexts:
                raise TypeError(f'method {self.name!r} needs the sample set: method_settings contexts=(n, m) samples')
        else:
            contexts = torch.as_tensor(contexts)
            if contexts.ndim != 2 or contexts.shape[0] < 1 or not torch.isfinite(contexts).all():
                raise TypeError(f'contexts must be finite (n, m) samples, got shape {tuple(contexts.shape)}')
        self.contexts = contexts
        self.rho = float(rho)
        self.n_features = int(n_features)
        self.random_context = self.random_context_default if random_context is None else bool(random_context)

    # ------------------------------------------------------------------ helpers
    def split(self, bounds: Tensor) -> int:
        """Number ``d`` of decision coordinates of a ``(2, d + m)`` joint box.

        Raises:
            ValueError: the box has no room for the ``m`` context coordinates.
        """
        d = bounds.shape[-1] - self.contexts.shape[1]
        if d < 1:
            raise ValueError(f'method {self.name!r}: the search box ({bounds.shape[-1]}-D) must be the joint '
                             f'(x, w) space with {self.contexts.shape[1]} context coordinates last')
        return d

    def _generator(self, bounds: Tensor, *keys: int) -> torch.Generator:
        seed = 0
        for k in keys:
            seed = (seed * 1_000_003 + int(k)) % (2 ** 63)
        return torch.Generator(device=bounds.device).manual_seed(seed)

    def _contexts(self, like: Tensor) -> Tensor:
        return self.contexts.to(like)

    def choose_x(self, ctx: DecisionContext, d: int) -> tuple[Tensor, float]:
        """Maximise :meth:`acquisition` over the decision box."""
        return maximize(self.acquisition(ctx), ctx.bounds[:, :d], ctx.optimizer, seed=ctx.seed)

    def choose_context(self, ctx: DecisionContext, x: Tensor) -> int:
        """Index of :math:`w_t`: highest posterior variance at :math:`(\\mathbf x_t, w)` (Alg. 1 line 4), or
        uniform with ``random_context``."""
        contexts = self._contexts(ctx.bounds)
        if self.random_context:
            gen = self._generator(ctx.bounds, ctx.seed, 7)
            return int(torch.randint(contexts.shape[0], (1,), generator=gen, device=ctx.bounds.device))
        model = ctx.model  # (fitted outside no_grad)
        with torch.no_grad():
            var = JointPosterior(model).variance(joint_points(x.reshape(1, -1), contexts)[0])
        return int(torch.argmax(var))

    # ------------------------------------------------------------------ protocol
    def decide(self, ctx: DecisionContext) -> Proposal:
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        if ctx.index < ctx.n_initial:
            gen = self._generator(ctx.bounds, ctx.run_seed, ctx.index, 3)
            j = int(torch.randint(contexts.shape[0], (1,), generator=gen, device=ctx.bounds.device))
            return Proposal(torch.cat([ctx.initial_design[ctx.index][:d], contexts[j]]), 'initial')
        x, value = self.choose_x(ctx, d)
        j = self.choose_context(ctx, x)
        return Proposal(torch.cat([x.to(contexts), contexts[j]]), 'acquisition', value)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        """:math:`\\hat{\\mathbf x}_t = \\arg\\max_{\\mathbf x \\in \\mathbf x_{1:t}} \\min_{p}
        \\sum_i p_i \\mu_t(\\mathbf x, w_i)` (ρ = 0 for the empirical-mean rule), as the past target (with the
        context it was measured at); None when the caller asks for a planner rule."""
        if rule is not None:
            return None
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        rho = self.rho if self.robust_recommendation else 0.0
        model = ctx.model  # a due hyperparameter fit needs autograd: read it outside no_grad
        with torch.no_grad():
            post = JointPosterior(model)
            mean, cov = post.mean_covariance(joint_points(ctx.targets[:, :d].to(contexts), contexts))
            p = worst_case_weights(mean, rho)
            score = (p * mean).sum(-1)
            i = int(torch.argmax(score))
            var = (p[i] @ cov[i] @ p[i]).clamp_min(0)
        return Recommendation(ctx.targets[i].clone(), float(score[i]), float(var.sqrt()), i)


class ThompsonQuadrature(QuadratureMethod):
    """:math:`\\mathbf x_t` by a posterior sample path and the (DR) quadrature of it."""

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        gen = self._generator(ctx.bounds, ctx.seed, 5)
        path = PosteriorPath(JointPosterior(model), self.n_features, gen)
        return DistributionallyRobustThompson(model, path, self._contexts(ctx.bounds),
                                              self.rho if self.robust_decision else 0.0)


class EIQuadrature(QuadratureMethod):
    """:math:`\\mathbf x_t` by EI on the empirical quadrature (no ρ in the decision)."""

    robust_decision = False

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        d = self.split(ctx.bounds)
        contexts = self._contexts(ctx.bounds)
        post = JointPosterior(model)
        with torch.no_grad():
            mean, _ = post.mean_covariance(joint_points(ctx.targets[:, :d].to(contexts), contexts))
        y = ctx.y
        xi = 0.1 * float(y.max() - y.min()) if y.numel() > 1 else 0.0
        return QuadratureExpectedImprovement(model, post, contexts, float(mean.mean(-1).max()), xi)


class OffsetRobustThompson(AcquisitionFunction):
    """:math:`\\min_{p \\in \\mathcal P_{n,\\rho}} \\sum_i p_i \\tilde f_t(\\mathbf x + \\mathbf e_i)` over the observed
    execution offsets :math:`\\mathbf e_i` (DRBQO on the rover; module docstring).

    Args:
        model: the GP (BoTorch bookkeeping only).
        path: a posterior sample path :math:`\\tilde f_t` (a function of points).
        offsets: ``(n, d)`` offsets between where the rover ended up and its targets.
        rho: ambiguity radius.
    """

    def __init__(self, model, path: PosteriorPath, offsets: Tensor, rho: float):
        super().__init__(model=model)
        self.path, self.offsets, self.rho = path, offsets, rho

    def forward(self, X: Tensor) -> Tensor:
        x = X.reshape(-1, X.shape[-1])
        values = self.path(x.unsqueeze(-2) + self.offsets.to(x))
        return worst_case_mean(values, self.rho).reshape(X.shape[:-2])


def execution_offsets(ctx: DecisionContext) -> Tensor:
    """``(n, d)`` offsets :math:`\\hat{\\mathbf x}_i - \\mathbf x_i` between the location estimates' means and the
    commanded targets of the past measurements (goal timeouts included: the context does not tell them apart)."""
    return (ctx.locations.mean.to(ctx.targets) - ctx.targets).detach()


@register
class DRBQO(ThompsonQuadrature):
    """DRBQO (Algorithm 1). Without ``contexts`` (the rover): the samples are the execution offsets observed so
    far and the method decides only the target (module docstring, "On the rover")."""

    name = 'drbqo'
    description = ('DRBQO: Thompson sample on the joint GP, worst case over the chi-square ball of radius rho around '
                   'the empirical distribution of the samples (Nguyen et al. 2020, Alg. 1); on the rover the samples '
                   'are the observed execution offsets')
    inputs = 'gaussian'        # points in the quadrature problems (their locations are Diracs), EKF poses on the rover
    needs_contexts = False

    def decide(self, ctx: DecisionContext) -> Proposal:
        if self.contexts is None:   # initial design, then the acquisition's maximiser (travel cost included)
            return Method.decide(self, ctx)
        return super().decide(ctx)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        if self.contexts is not None:
            return super().acquisition(ctx)
        model = ctx.model
        gen = self._generator(ctx.bounds, ctx.seed, 5)
        path = PosteriorPath(JointPosterior(model), self.n_features, gen)
        return OffsetRobustThompson(model, path, execution_offsets(ctx), self.rho)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        if self.contexts is not None or rule is not None:
            return super().recommend(ctx, rule)
        model = ctx.model
        offsets = execution_offsets(ctx)
        with torch.no_grad():
            points = ctx.targets.unsqueeze(-2) + offsets.unsqueeze(0)          # (N, n, d)
            mean, cov = JointPosterior(model).mean_covariance(points)
            p = worst_case_weights(mean, self.rho)
            score = (p * mean).sum(-1)
            i = int(torch.argmax(score))
            var = (p[i] @ cov[i] @ p[i]).clamp_min(0)
        return Recommendation(ctx.targets[i].clone(), float(score[i]), float(var.sqrt()), i)


@register
class EmpDRBQO(ThompsonQuadrature):
    name = 'emp_drbqo'
    description = 'Emp-DRBQO: DRBQO decisions, recommendation by the empirical mean (Nguyen et al. 2020, §6)'
    robust_recommendation = False


@register
class BQOTS(ThompsonQuadrature):
    name = 'bqo_ts'
    description = ('BQO-TS: Thompson sample of the empirical quadrature, empirical-mean recommendation '
                   '(Nguyen et al. 2020)')
    robust_decision = False
    robust_recommendation = False


@register
class MaximinBQOTS(ThompsonQuadrature):
    name = 'maximin_bqo_ts'
    description = 'Maximin-BQO-TS: BQO-TS decisions, max-min (rho) recommendation (Nguyen et al. 2020)'
    robust_decision = False


@register
class BQOEI(EIQuadrature):
    name = 'bqo_ei'
    description = ('BQO-EI: EI on the empirical quadrature of the joint GP, empirical-mean recommendation '
                   '(Nguyen et al. 2020)')
    robust_recommendation = False


@register
class MaximinBQOEI(EIQuadrature):
    name = 'maximin_bqo_ei'
    description = 'Maximin-BQO-EI: BQO-EI decisions, max-min (rho) recommendation (Nguyen et al. 2020)'


@register
class DRBQORandW(DRBQO):
    name = 'drbqo_randw'
    description = 'DRBQO with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True


@register
class BQOTSRandW(BQOTS):
    name = 'bqo_ts_randw'
    description = 'BQO-TS with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True


@register
class BQOEIRandW(BQOEI):
    name = 'bqo_ei_randw'
    description = 'BQO-EI with w_t drawn uniformly from the samples (ablation, Nguyen et al. 2020 Fig. 5)'
    random_context_default = True


class ICMKernel(DistributionKernel):
    """Intrinsic coregionalisation kernel :math:`k((\\mathbf x, t), (\\mathbf x', t')) = k_{SE}(\\mathbf x,
    \\mathbf x') C_{tt'}` (Swersky et al. 2013, MTBO) on points whose last ``n_tasks`` coordinates one-hot encode
    the task; the signal variance is the model's (one for every task).

    :math:`C` is a task **correlation** matrix (unit diagonal) with non-negative entries:
    :math:`C = D^{-1/2} B D^{-1/2}`, :math:`D = \\operatorname{diag}(B)`, for BoTorch's
    :class:`~botorch.models.kernels.positive_index.PositiveIndexKernel` :math:`B = LL^\\top +
    \\operatorname{diag}(\\boldsymbol\\kappa)` (rank ``rank``, :math:`L \\ge 0`) with the prior BoTorch's
    ``MultiTaskGP`` puts on the correlations, Beta(2.5, 1.5). The tasks of the cross-validation problems (folds)
    are exchangeable and share one output scale; with a free per-task variance :math:`B_{tt}` (a plain
    ``IndexKernel``) the marginal likelihood cannot tell it from the signal variance, the fit drives some
    :math:`B_{tt}` to 0 and others to ~100 times the rest, and a reading on one task then moves the
    prediction on another by :math:`B_{t't}/B_{tt}`, far beyond the data's range.

    Encoding: the (unit-cube) point; distributions are reduced to their means. Lengthscales: the first
    ``dim - n_tasks`` entries (ARD over :math:`\\mathbf x`); the task part is :math:`C`. The task parameters start
    deterministically at correlation 0.5 between every pair of tasks.

    Args:
        dim: dimension of the joint space.
        n_tasks: number of tasks (one-hot coordinates).
        rank: rank of :math:`L` (default 1: on synthetic multi-task problems with one task observed often and
            the others once or twice, as the folds in a run, it predicted at least as well as full rank).
    """

    has_lengthscale = True

    def __init__(self, dim: int, n_tasks: int, rank: int | None = None, **kwargs):
        from botorch.models.kernels.positive_index import PositiveIndexKernel
        from botorch.models.utils.priors import BetaPrior

        super().__init__(dim, **kwargs)
        self.n_tasks = n_tasks
        rank = 1 if rank is None else rank
        self.task = PositiveIndexKernel(num_tasks=n_tasks, rank=rank, task_prior=BetaPrior(2.5, 1.5),
                                        unit_scale_for_target=False)
        with torch.no_grad():   # B = 0.5 (11ᵀ/r) + 0.5 I: every correlation 0.5
            like = self.task.raw_covar_factor
            self.task.covar_factor = torch.full_like(like, math.sqrt(0.5 / rank))
            self.task.var = torch.full_like(self.task.raw_var, 0.5)

    def correlation(self) -> Tensor:
        """The task correlation matrix :math:`C` ``(n_tasks, n_tasks)``."""
        b = self.task.covar_matrix
        b = b.to_dense() if hasattr(b, 'to_dense') else b
        s = b.diagonal(dim1=-2, dim2=-1).clamp_min(1e-12).rsqrt()
        return b * s.unsqueeze(-1) * s.unsqueeze(-2)

    def encode(self, distributions: LocationDistributions) -> Tensor:
        self.check_dim(distributions)
        if not isinstance(distributions, (Dirac, Gaussian, Empirical)):  # pragma: no cover - future types
            raise TypeError(f'unsupported distribution type {type(distributions).__name__}')
        return distributions.mean

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        d = self.dim - self.n_tasks
        ell = self.lengthscale.to(x1)[..., :d]
        a, b = x1[..., :d] / ell, x2[..., :d] / ell
        t1, t2 = x1[..., d:].argmax(-1), x2[..., d:].argmax(-1)
        C = self.correlation().to(x1)
        if diag:
            return torch.exp(-0.5 * ((a - b) ** 2).sum(-1)) * C[t1, t2]
        sq = ((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1)
        return torch.exp(-0.5 * sq) * C[t1.unsqueeze(-1), t2.unsqueeze(-2)]


@register
class MTBO(EIQuadrature):
    name = 'mtbo'
    description = ('MTBO: multi-task GP (ICM kernel: SE over x times a task correlation matrix over one-hot tasks), '
                   'EI on the mean over tasks, task by single-task EI (Swersky et al. 2013; a baseline of Nguyen et '
                   'al. 2020 for cross-validation)')
    robust_recommendation = False

    def kernel(self, dim: int) -> DistributionKernel:
        from gpytorch.priors import GammaPrior
        return ICMKernel(dim, self.contexts.shape[0], lengthscale_prior=GammaPrior(3.0, 6.0))

    def choose_context(self, ctx: DecisionContext, x: Tensor) -> int:
        contexts = self._contexts(ctx.bounds)
        y = ctx.y
        xi = 0.1 * float(y.max() - y.min()) if y.numel() > 1 else 0.0
        model = ctx.model
        with torch.no_grad():
            points = joint_points(x.reshape(1, -1).to(contexts), contexts)
            mean, cov = JointPosterior(model).mean_covariance(points)
            ei = expected_improvement(mean[0], cov[0].diagonal().clamp_min(0).sqrt(), float(y.max()), xi)
        return int(torch.argmax(ei))

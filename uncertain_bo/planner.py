r"""The ask/tell loop shared by the ROS explorer and the benchmark runner (paper Algorithm 1).

::

    planner = Planner(bounds, execution_noise=GaussianExecutionNoise.isotropic(2.0, 2))
    for t in range(30):
        target = planner.suggest()                      # x_t
        location, y = rover.measure_at(target)          # (P^L_t, y_t)
        planner.observe(target, location, y)            # D_t = D_{t-1} ∪ {(P^L_t, y_t)}
    best = planner.recommend()                          # argmax_{x_t ∈ D} μ̂(P̂_{x_t})

The planner owns the observations, the shared GP, its refit schedule, the journal and the space-filling initial
design (``n_initial`` scrambled Sobol targets, ordered as a short tour from ``start`` when given, so a rover does
not zig-zag). What to measure next and what to recommend is the method's: the planner builds a
:class:`~uncertain_bo.acquisition.DecisionContext` and asks the method object
(:class:`~uncertain_bo.acquisition.Method`; by default it takes the initial design, then maximises its
acquisition).
Observations are validated before anything is stored, written durably to the journal (if any), then
added to the GP. A planner opened on an existing journal resumes from its observations; records the journal's
schema refuses (:mod:`uncertain_bo.journal_schema`: damaged, duplicated) are skipped and counted
(:attr:`Planner.journal_damage`), and a ``resume`` record declares the indices lost, so the journal numbers on
after the highest index it ever held (:attr:`Planner.next_index`) and never uses one twice.

**Batches** (``suggest(q=..., pending=...)``): ``q`` targets at once, none duplicating ``pending`` ones (other rovers'
targets), each its own journaled decision; a method with a batch size above one (``ugp_bucb``) decides its batch
when ``suggest()`` finds none left and hands it out one target per call, in order, so the explorer and the
benchmark runner, which ask for one target at a time, visit the batch as decided. See
:meth:`~uncertain_bo.acquisition.Method.decide`.

**En-route readings** (``observe(None, location, y)``): readings a streaming sensor took while the rover drove,
each with the location distribution of its own stamp. They join the shared GP (so every method that reads the
model sees them) but have no commanded target: they are not measurements (:attr:`Planner.n`, :attr:`targets`,
:attr:`y`, :attr:`locations` and the decision index count the stops only), they never feed the learned
execution noise, and among the recommendation rules only ``'highest_reading'`` considers them (it reports the
location mean of the highest reading, wherever it was taken). With many of them the hyperparameter fit runs on
a capped subset (``fit_max_points``: every stop and an evenly thinned share of the en-route readings) while the
posterior keeps all of them (rank-one updates between fits).
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import Tensor

from .acquisition import DecisionContext, Method, Recommendation, get_method, make_beta
from .acquisition.recommendation import area_mean_recommendation
from .distributions import (DTYPE, Dirac, ExecutionNoise, Gaussian, GaussianExecutionNoise, LocationDistributions,
                            check_covariance, cat)
from .journal import Journal, location_to_record, replay
from .keep_out import KeepOut, KeepOutZone, NoAdmissibleTargetError
from .kernels import SampleDistributionKernel
from .linalg import psd_sqrt
from .models import DistributionGP
from .optim import OptimizerSettings

__all__ = ['Planner', 'Decision', 'Recommendation', 'InvalidObservationError', 'NoAdmissibleTargetError',
           'RECOMMENDATION_RULES', 'EXECUTION_FEEDBACK']

#: execution models of the learned execution noise (:meth:`Planner.learned_execution_covariance`): the sign
#: with which the localisation covariance :math:`\Sigma^L` of an arrival enters the moment estimate
EXECUTION_FEEDBACK = {'closed_loop': 1.0, 'open_loop': -1.0}

#: recommendation rules (:meth:`Planner.recommend`): what each returns
RECOMMENDATION_RULES = {
    'past_mean': 'past target with the best posterior mean of its candidate distribution (paper Alg. 1)',
    'past_lcb': 'past target with the best lower confidence bound mu - 2 sigma of its candidate distribution',
    'area_mean': 'target anywhere in the bounds maximising the posterior mean of its candidate distribution',
    'highest_reading': 'past target whose reading was highest (what a survey reports)',
}

log = logging.getLogger(__name__)


class InvalidObservationError(ValueError):
    """An observation was rejected (nothing was stored)."""


@dataclass(frozen=True)
class Decision:
    """How a target was chosen.

    Attributes:
        index: index ``t`` (0-based) of the measurement this target is for.
        target: ``(d,)`` target.
        phase: ``'initial'`` (space-filling design), ``'acquisition'``, or a strategy's own label
            (``'survey'``).
        seconds: wall time of the decision (GP update + acquisition maximisation), s; includes a
            hyperparameter fit that :meth:`Planner.recommend` made for it since the last decision.
        acquisition_value: acquisition at the target (NaN in the initial phase).
        beta: :math:`\\beta_t` used (NaN in the initial phase).
        fit_seconds: wall time of the hyperparameter fit inside ``seconds`` (0 if none).
    """

    index: int
    target: Tensor
    phase: str
    seconds: float
    acquisition_value: float = math.nan
    beta: float = math.nan
    fit_seconds: float = 0.0


@dataclass
class Planner:
    """Bayesian optimisation under uncertain inputs, one target at a time.

    Args:
        bounds: ``(2, d)`` search box (physical units, e.g. metres in the map frame). Targets never leave it.
        execution_noise: the execution-noise model :math:`\\hat P_{\\mathbf x}` used for candidates and
            the recommendation (robust methods).
        method: registered method name (see :data:`uncertain_bo.acquisition.METHODS`).
        method_settings: the method's own settings, passed to its constructor (e.g. ``{'kappa': 0.5}`` for
            ``uei``); None = its defaults.
        beta: :math:`\\beta_t` — a number (fixed) or a schedule (:class:`~uncertain_bo.acquisition.beta.
            TheoryBeta`).
        n_initial: number of space-filling initial targets (>= 1).
        refit_every: refit GP hyperparameters by marginal likelihood every this many observations
            (1 = every step, as in the paper's robot experiment; 0 = never: fixed hyperparameters with
            cheap rank-one updates).
        optimizer: acquisition maximiser settings.
        seed: seed for the initial design and the maximiser's raw samples.
        start: optional ``(d,)`` start position (orders the initial design as a short tour).
        budget: the number of measurements the mission will take (``max_measurements``), or None if
            unknown; survey strategies plan their grid from it.
        recommendation: the default rule of :meth:`recommend` (a key of :data:`RECOMMENDATION_RULES`).
        travel_weight: :math:`w \\ge 0` of the travel-aware acquisition
            (:class:`~uncertain_bo.acquisition.travel.TravelPenalty`): crossing the whole search box costs
            :math:`w` prior standard deviations of the field; 0 = the method's acquisition as it is.
        in_box_exploration: weight UCB's exploration term by the share of the kernel footprint inside the
            bounds (:func:`~uncertain_bo.acquisition.ugp_ucb.in_box_fraction`), against boundary piling; applies
            to methods whose acquisition is a UCB (uGP-UCB, GP-UCB, IGP-UCB, AIRBO, ...), others are unaffected.
        execution_noise_prior_weight: learn the (Gaussian) execution-noise model online from the
            (target, location distribution) pairs of measurements whose goal was reached, with ``execution_noise``
            as the prior worth this many pseudo-observations (:meth:`learned_execution_covariance`); None = keep
            ``execution_noise`` fixed.
        execution_feedback: how the rover executes a target, which decides how the localisation covariance
            enters the learned model (:data:`EXECUTION_FEEDBACK`): ``'closed_loop'`` (the controller steers on the
            location estimate, as the explorer's does) or ``'open_loop'`` (the target is executed blind and
            localised afterwards, as in the synthetic worlds of Oliveira et al. 2019, §6.1). Only read when
            ``execution_noise_prior_weight`` is set.
        noise_prior: the GP's prior on its learned noise (a key of :data:`~uncertain_bo.models.NOISE_PRIORS`);
            used by the default model (not by a ``model_factory``).
        fit_max_points: the hyperparameter fit maximises the marginal likelihood of at most this many
            observations: every measurement (stop) and an evenly spaced subset of the en-route readings
            (:meth:`fit_subset`); the posterior always uses all of them. 0 = no cap.
        sparse_above: beyond this many readings (measurements and en-route readings together) the posterior is
            the sparse GP (SGPR, :attr:`~uncertain_bo.models.DistributionGP.inducing`) with ``inducing_points``
            inducing inputs chosen like the fit's subset; 0 = always exact.
        inducing_points: inducing inputs of the sparse posterior (every measurement and evenly thinned
            en-route readings, re-chosen at each hyperparameter fit).
        input_noise: the default model adds each reading's input-induced variance to its noise
            (:class:`~uncertain_bo.models.DistributionGP` ``input_noise``); not used by a ``model_factory``.
        journal: optional path of the observations journal; an existing journal is resumed.
        model_factory: optional ``(bounds, kernel) -> DistributionGP`` (e.g. fixed hyperparameters).
        metadata: extra fields for a new journal's header.

    Raises:
        ValueError: invalid bounds, ``n_initial < 1``, dimension mismatch between bounds and noise model,
            settings the method does not take, an unknown ``execution_feedback``.
        KeyError: unknown method.
    """

    bounds: Tensor
    execution_noise: ExecutionNoise
    method: str = 'ugp_ucb'
    method_settings: dict[str, Any] | None = None
    beta: Any = 3.0
    n_initial: int = 5
    refit_every: int = 1
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    seed: int = 0
    start: Tensor | None = None
    budget: int | None = None
    recommendation: str = 'past_mean'
    travel_weight: float = 0.0
    in_box_exploration: bool = False
    execution_noise_prior_weight: float | None = None
    execution_feedback: str = 'closed_loop'
    noise_prior: str = 'gamma'
    fit_max_points: int = 0
    sparse_above: int = 0
    inducing_points: int = 500
    input_noise: bool = False
    journal: str | Path | None = None
    model_factory: Callable[..., DistributionGP] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.bounds = torch.as_tensor(self.bounds, dtype=DTYPE)
        if self.bounds.ndim != 2 or self.bounds.shape[0] != 2 or not (self.bounds[1] > self.bounds[0]).all():
            raise ValueError(f'bounds must be (2, d) with upper > lower, got {self.bounds.tolist()}')
        if self.n_initial < 1:
            raise ValueError(f'n_initial must be >= 1, got {self.n_initial}')
        if self.refit_every < 0:
            raise ValueError(f'refit_every must be >= 0, got {self.refit_every}')
        for name in ('fit_max_points', 'sparse_above', 'inducing_points'):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise ValueError(f'{name} must be an integer >= 0, got {value!r}')
        if not self.travel_weight >= 0:
            raise ValueError(f'travel_weight must be >= 0, got {self.travel_weight}')
        self._execution_prior = None
        if self.execution_feedback not in EXECUTION_FEEDBACK:
            raise ValueError(f'execution_feedback must be one of {", ".join(EXECUTION_FEEDBACK)}, '
                             f'got {self.execution_feedback!r}')
        if self.execution_noise_prior_weight is not None:
            if (not isinstance(self.execution_noise, GaussianExecutionNoise)
                    or not self.execution_noise_prior_weight >= 0):
                raise ValueError('learning the execution noise needs a GaussianExecutionNoise prior and '
                                 f'execution_noise_prior_weight >= 0, got {self.execution_noise!r}, '
                                 f'{self.execution_noise_prior_weight!r}')
            cov = self.execution_noise.covariance
            self._execution_prior = cov.clone()
            self._execution_prior_noise = self.execution_noise
            self._execution_sum = torch.zeros_like(cov)   # sum of e eᵀ ± Σ^L over reached goals
            self._execution_n = 0
        if self.recommendation not in RECOMMENDATION_RULES:
            raise ValueError(f'recommendation must be one of {", ".join(RECOMMENDATION_RULES)}, '
                             f'got {self.recommendation!r}')
        self._method: Method = self._new_method()
        self._beta = make_beta(self.beta)
        self.model: DistributionGP = self._new_model()
        self._targets = torch.zeros(0, self.dim, dtype=DTYPE)
        self._inputs: list[LocationDistributions] = []
        self._y: list[float] = []
        self._noise: list[float] = []  # reported reading variances (field units², 0 = not reported)
        # en-route readings (no target): location, reading, reported variance
        self._en_route: list[tuple[LocationDistributions, float, float]] = []
        # every observation in the order it reached the GP: (target or None, location, reading, variance)
        self._rows: list[tuple[Tensor | None, LocationDistributions, float, float]] = []
        self._pending: list[tuple[LocationDistributions, float, float]] = []  # observed, not yet in the GP
        self._pending_stops = 0
        self._since_fit = 0
        self._fitted = False
        self._fitted_on: int | None = None  # observations in the GP at its last hyperparameter fit
        self._fit_seconds_unbilled = 0.0  # fits made by recommend(), billed to the next decision
        self.decisions: list[Decision] = []
        self._queue: list[Tensor] = []  # targets of the current batch not handed out yet (suggest())
        self._design = self._initial_design()
        self._resumed_target: Tensor | None = None
        # journal index minus stored count (> 0 after resuming a journal that lost records): indices stay unique
        self._index_offset = 0
        self._en_route_offset = 0
        self._journal_damage = {'records_skipped': 0, 'records_missing': 0, 'problems': []}
        self.keep_out = KeepOut()   # targets that could not be measured: never proposed again (keep_out.py)
        self._journal: Journal | None = None
        if self.journal is not None:
            self._journal = Journal(Path(self.journal), metadata={
                'method': self.method, 'bounds': self.bounds.tolist(), 'seed': self.seed, **self.metadata})
            self._replay(self._journal)

    # -------------------------------------------------------------- public
    @property
    def dim(self) -> int:
        return self.bounds.shape[1]

    @property
    def n(self) -> int:
        """Number of stored measurements (stops with a commanded target; en-route readings not included)."""
        return len(self._y)

    @property
    def next_index(self) -> int:
        """The journal index of the next measurement: :attr:`n`, plus the observations a resumed journal lost
        (damaged records skipped, lines missing), so an index is never used twice."""
        return self.n + self._index_offset

    @property
    def journal_damage(self) -> dict[str, Any]:
        """What resuming the journal skipped: ``records_skipped`` (damaged or duplicated records left out),
        ``records_missing`` (index gaps) and ``problems`` (up to 20 lines ``'line 17: observation ...'``)."""
        return {**self._journal_damage, 'problems': list(self._journal_damage['problems'])}

    @property
    def n_en_route(self) -> int:
        """Number of stored en-route readings (``observe(None, ...)``)."""
        return len(self._en_route)

    @property
    def en_route_locations(self) -> LocationDistributions | None:
        """The en-route readings' location distributions as one batch (None if there are none)."""
        return cat([r[0] for r in self._en_route]) if self._en_route else None

    @property
    def en_route_y(self) -> Tensor:
        """``(n_en_route,)`` en-route readings (field units)."""
        return torch.tensor([r[1] for r in self._en_route], dtype=DTYPE)

    @property
    def targets(self) -> Tensor:
        """``(n, d)`` past targets."""
        return self._targets

    @property
    def y(self) -> Tensor:
        """``(n,)`` past readings."""
        return torch.tensor(self._y, dtype=DTYPE)

    @property
    def locations(self) -> LocationDistributions | None:
        """Past location distributions :math:`P^L_t` as one batch (None before any observation)."""
        return cat(self._inputs) if self._inputs else None

    @property
    def journal_file(self) -> Journal | None:
        return self._journal

    @property
    def method_object(self) -> Method:
        """The method deciding and recommending for this planner (:class:`~uncertain_bo.acquisition.Method`)."""
        return self._method

    @property
    def input_kind(self) -> str:
        """What the GP trains on, so a caller knows which location distributions to pass: ``'target'`` (none
        needed: Dirac inputs at the targets), ``'gaussian'`` (mean and covariance) or ``'samples'`` (a particle
        cloud as it is; also for a ``model_factory`` kernel that sees distributions through samples)."""
        kind = self._method.inputs
        if kind == 'gaussian' and isinstance(self.model.kernel, SampleDistributionKernel):
            return 'samples'
        return kind

    @property
    def beta_schedule(self) -> Callable[[int, DistributionGP], float]:
        """:math:`\\beta_t` as a schedule ``(t, model) -> float`` (a fixed number is a constant schedule)."""
        return self._beta

    @property
    def initial_design(self) -> Tensor:
        """``(n_initial, d)`` the space-filling initial targets in visiting order."""
        return self._design

    def set_start(self, position: Tensor) -> None:
        """Order the initial design as a short tour from ``position`` ``(d,)`` (e.g. the rover's first pose).

        Raises:
            RuntimeError: observations exist already (the design is partly used).
        """
        if self.n:
            raise RuntimeError('set_start() must be called before the first observation')
        self.start = torch.as_tensor(position, dtype=DTYPE).reshape(-1)
        self._queue = []
        self._design = self._initial_design()
        self._method = self._new_method()  # a survey re-plans its tour from the start
        if self._journal is not None:  # a resumed run orders its initial design the same way
            self._journal.append({'type': 'start', 'position': self.start.tolist(), 'wall_time': time.time()})

    def set_beta(self, beta: Any) -> None:
        """Change :math:`\\beta_t` (a number or a schedule) from the next decision on."""
        self.beta = beta
        self._beta = make_beta(beta)

    def set_bounds(self, bounds: Tensor) -> None:
        """Change the search box from the next decision on (e.g. an operator narrows the area).

        The GP is rebuilt on all observations in the new box (hyperparameters are refitted at the next
        decision) and the remaining initial-design targets are redrawn in it. The change is journaled
        for the record; a resumed run uses the bounds it is constructed with.

        Raises:
            ValueError: not ``(2, d)`` with upper > lower, or a different dimension.
        """
        bounds = torch.as_tensor(bounds, dtype=DTYPE)
        if bounds.shape != self.bounds.shape or not (bounds[1] > bounds[0]).all():
            raise ValueError(f'bounds must be {tuple(self.bounds.shape)} with upper > lower, '
                             f'got {bounds.tolist()}')
        self.bounds = bounds
        if self._queue:
            log.info('search bounds changed: dropping %d queued targets of the current batch', len(self._queue))
        self._queue = []
        self.model = self._new_model()
        self._pending = [(self._gp_input(t, loc), y, v) for t, loc, y, v in self._rows]
        self._pending_stops = self.n
        self._method = self._new_method()  # a survey re-plans in the new box
        self._since_fit = 0
        self._fitted = False
        self._fitted_on = None
        self._design = self._initial_design()
        if self._journal is not None:
            self._journal.append({'type': 'bounds', 'bounds': bounds.tolist(), 'index': self.next_index,
                                  'wall_time': time.time()})

    @property
    def resumed_target(self) -> Tensor | None:
        """The journal's pending target (see :meth:`take_resumed_target`) without taking it."""
        return self._resumed_target

    def take_resumed_target(self) -> Tensor | None:
        """The target of the journal's pending decision, once (None otherwise).

        A run resumed from a journal whose last decision has no observation yet (the process stopped while
        the rover drove there) should send the rover to that target again instead of deciding anew: the
        decision is already journaled, and the initial design or the acquisition would choose it again
        anyway. Returns ``(d,)`` and forgets it; later calls (and :meth:`suggest`) decide as usual.
        """
        target, self._resumed_target = self._resumed_target, None
        return target

    def candidates(self, targets: Tensor) -> LocationDistributions:
        """Location distributions the method scores for ``targets`` (``(q, d)``)."""
        return self.execution_noise(targets) if self._method.robust_candidates else Dirac(targets)

    def suggest(self, q: int | None = None, pending: Tensor | None = None) -> Tensor:
        """The next target ``(D,)``, or with ``q`` the next ``q`` targets ``(q, D)``, as the method decides
        (:meth:`~uncertain_bo.acquisition.Method.decide`; by default the initial design, then the acquisition
        maximiser; a batch greedily, each pick with the earlier ones pending).

        Without ``q`` a batch method (:attr:`~uncertain_bo.acquisition.Method.batch_size` > 1) decides a whole batch
        when none is left, returns its first target and hands out the others at the next calls, one per call, in
        order (a rover visiting the batch; the measurements in between do not change it). With ``q`` the caller gets
        the batch at once; targets still queued from an earlier batch count as pending.

        Every target's decision (wall time of its pick, acquisition value, :math:`\\beta_t`) is appended to
        :attr:`decisions` and to the journal, with index ``n``, ``n + 1``, ... in visiting order.

        Args:
            q: number of targets to decide (None: one, or the method's batch).
            pending: ``(p, D)`` targets decided elsewhere and not yet measured (e.g. other rovers'), which the
                decision should not duplicate (BoTorch's ``X_pending``).

        Raises:
            ValueError: ``q < 1``, or ``pending`` not ``(p, D)`` finite targets.
        """
        if q is None and pending is None and self._queue:
            return self._queue.pop(0)
        batch = self._method.batch_size if q is None else int(q)
        if batch < 1:
            raise ValueError(f'q must be >= 1, got {q}')
        if pending is not None:
            pending = torch.as_tensor(pending, dtype=DTYPE).to(self.bounds)
            if pending.ndim == 1:
                pending = pending.reshape(1, -1)
            if pending.ndim != 2 or pending.shape[-1] != self.bounds.shape[-1] or not torch.isfinite(pending).all():
                raise ValueError(f'pending must be (p, {self.bounds.shape[-1]}) finite targets, '
                                 f'got shape {tuple(pending.shape)}')
        queued = [t.reshape(1, -1) for t in self._queue]
        if queued:
            pending = torch.cat(queued + ([] if pending is None else [pending]))
        t0 = time.perf_counter()
        index = self.n + len(self._queue)
        billed, self._fit_seconds_unbilled = self._fit_seconds_unbilled, 0.0
        ctx = DecisionContext(self, index, q=batch, pending=pending)
        proposal = self._method.decide(ctx)
        total = time.perf_counter() - t0
        picks = proposal.split()
        if len(picks) != batch:
            raise RuntimeError(f'method {self.method!r} decided {len(picks)} targets, {batch} asked for')
        targets = []
        for j, pick in enumerate(picks):
            proposed = pick.target.to(self.bounds).reshape(-1)
            target = self.keep_out.admissible(proposed, ctx.bounds)   # every method's choice, one rule
            if target is None:
                raise NoAdmissibleTargetError(f'no target left: the {len(self.keep_out)} keep-out zones cover the '
                                              f'search bounds {self.bounds.tolist()}')
            seconds = total if pick.seconds is None else pick.seconds[0]
            fit = ctx.fit_seconds if j == 0 else 0.0
            decision = Decision(index + self._index_offset + j, target, pick.phase,   # the journal's numbering
                                seconds + (billed if j == 0 else 0.0), pick.acquisition_value, pick.beta,
                                fit + (billed if j == 0 else 0.0))
            self.decisions.append(decision)
            if self._journal is not None:
                record = {'type': 'decision', 'index': decision.index, 'target': target.tolist(),
                          'phase': decision.phase, 'seconds': decision.seconds, 'fit_seconds': decision.fit_seconds,
                          'acquisition_value': _finite_or_none(decision.acquisition_value),
                          'beta': _finite_or_none(decision.beta), 'wall_time': time.time()}
                if target is not proposed:
                    record['kept_out_from'] = proposed.tolist()
                if batch > 1:
                    record['batch'] = {'size': batch, 'position': j}
                self._journal.append(record)
            targets.append(target)
        if q is not None:
            return torch.stack(targets)
        self._queue = targets[1:]
        return targets[0]

    @property
    def queued(self) -> Tensor:
        """``(k, D)`` targets of the current batch not handed out yet (:meth:`suggest`), in order."""
        return torch.stack(self._queue) if self._queue else self.bounds.new_zeros(0, self.bounds.shape[-1])

    def add_keep_out(self, target: Tensor, radius: float, reason: str = '') -> KeepOutZone:
        """Never propose a target within ``radius`` of ``target`` ``(d,)`` again (it could not be measured):
        the zone is journaled, kept on resume, and applies to every later decision of every method
        (:mod:`uncertain_bo.keep_out`). A pending resumed target inside it is dropped.

        Raises:
            ValueError: a non-positive radius or a non-finite target.
        """
        zone = self.keep_out.add(torch.as_tensor(target, dtype=DTYPE), radius, self.next_index, reason)
        if self._journal is not None:
            self._journal.append({**zone.record(), 'wall_time': time.time()})
        if self._resumed_target is not None and bool(self.keep_out.inside(self._resumed_target.reshape(1, -1))[0]):
            self._resumed_target = None
        # queued targets of a batch inside the new zone are dropped (the next suggest() decides anew)
        self._queue = [t for t in self._queue if not bool(self.keep_out.inside(t.reshape(1, -1))[0])]
        return zone

    @property
    def fitted_on(self) -> int | None:
        """Number of observations the GP hyperparameters were last fitted on (None: never fitted)."""
        return self._fitted_on

    @property
    def position(self) -> Tensor:
        """``(d,)`` where the rover is believed to be: the mean of the latest location distribution, else the
        start, else the centre of the bounds."""
        if self._inputs:
            return self._inputs[-1].mean[0].to(self.bounds)
        return self.bounds.mean(0) if self.start is None else self.start.to(self.bounds)

    def learned_execution_covariance(self) -> Tensor | None:
        r"""The learned execution-noise covariance :math:`\hat\Sigma` (``(d, d)``, m²), or None when it is fixed.

        Each measurement whose goal was reached gives a commanded target :math:`\mathbf x_i`, the mean
        :math:`\hat{\mathbf x}_i` of its location distribution and that distribution's covariance
        :math:`\Sigma^L_i`; write :math:`\mathbf e_i = \hat{\mathbf x}_i - \mathbf x_i` and let
        :math:`\tilde{\mathbf x}_i` be the true executed position, :math:`\boldsymbol\eta_i = \hat{\mathbf x}_i
        - \tilde{\mathbf x}_i \sim \mathcal N(0, \Sigma^L_i)` the estimate's error. The execution noise is
        :math:`\boldsymbol\xi_i = \tilde{\mathbf x}_i - \mathbf x_i = \mathbf e_i - \boldsymbol\eta_i`, and
        how :math:`\mathbf e_i` and :math:`\boldsymbol\eta_i` relate depends on :attr:`execution_feedback`:

        - ``'closed_loop'``: the controller steers on the estimate and stops when :math:`\hat{\mathbf x}_i`
          reaches the target up to its tolerance, so the residual :math:`\mathbf e_i` is independent of
          :math:`\boldsymbol\eta_i` and :math:`\operatorname{Cov}\boldsymbol\xi_i = \mathbb E[\mathbf e_i
          \mathbf e_i^\top] + \Sigma^L_i`;
        - ``'open_loop'``: the target is executed blind, :math:`\tilde{\mathbf x}_i = \mathbf x_i +
          \boldsymbol\xi_i`, and localised afterwards, :math:`\hat{\mathbf x}_i = \tilde{\mathbf x}_i +
          \boldsymbol\eta_i` with :math:`\boldsymbol\eta_i` independent of :math:`\boldsymbol\xi_i`, so
          :math:`\mathbb E[\mathbf e_i \mathbf e_i^\top] = \operatorname{Cov}\boldsymbol\xi_i + \Sigma^L_i`
          and :math:`\operatorname{Cov}\boldsymbol\xi_i = \mathbb E[\mathbf e_i \mathbf e_i^\top] -
          \Sigma^L_i` (the synthetic worlds of Oliveira et al. 2019, §6.1).

        With :math:`s = +1` (closed loop) or :math:`-1` (open loop), the moment estimate over the :math:`n`
        reached goals, shrunk towards the prior :math:`\Sigma_0` (``execution_noise`` at construction) worth
        :math:`\nu_0` pseudo-observations (``execution_noise_prior_weight``; the form of an
        inverse-Wishart posterior mean), is

        .. math::
            \hat\Sigma = \Pi_{\succeq 0}\!\left(\frac{\nu_0 \Sigma_0 + \sum_i (\mathbf e_i \mathbf e_i^\top
            + s\,\Sigma^L_i)}{\nu_0 + n}\right),

        where :math:`\Pi_{\succeq 0}` is the nearest PSD matrix in the Frobenius norm (negative eigenvalues set to
        zero, :func:`~uncertain_bo.linalg.psd_sqrt`): the open-loop difference can be indefinite when few
        arrivals are averaged or the localisation covariance is overstated. Each form is unbiased (for
        :math:`\nu_0 = 0`, before the projection) only under its own execution model; the other is off by
        :math:`2\,\overline{\Sigma^L}`. The uGP-UCB paper (Oliveira et al. 2019, §7) names learning
        :math:`\hat P_{\mathbf x}` online as future work.
        """
        if self._execution_prior is None:
            return None
        nu0, n = float(self.execution_noise_prior_weight), self._execution_n
        if nu0 + n == 0:
            return self._execution_prior.clone()
        cov = (nu0 * self._execution_prior + self._execution_sum) / (nu0 + n)
        root = psd_sqrt(0.5 * (cov + cov.T))
        cov = root @ root.T
        return 0.5 * (cov + cov.T)

    def observe(self, target: Tensor | None, location: LocationDistributions, y: float,
                reading_variance: float = 0.0, **meta: Any) -> int:
        """Store one measurement: the commanded ``target``, where it was taken, and the reading; or, with
        ``target=None``, an en-route reading (taken while driving, no target; see the module docstring).

        Args:
            target: ``(d,)`` commanded target :math:`\\mathbf x_t`, or None for an en-route reading.
            location: one location distribution :math:`P^L_t` (batch of 1; Dirac, Gaussian or Empirical).
            y: reading :math:`y_t` (field units).
            reading_variance: the variance the sensor reports for this reading (field units²; 0 = not
                reported). It is the floor of this reading's noise in the GP
                (:class:`~uncertain_bo.models.DistributionGP`: reported variance + learned :math:`\\lambda`).
            **meta: JSON-able extras for the journal (stamps, covariance source, ...).

        Returns:
            Index of the stored measurement (of the en-route reading among the en-route readings when ``target``
            is None).

        Raises:
            InvalidObservationError: non-finite target or reading, negative or non-finite reading variance,
                wrong dimension, invalid covariance, or a batch of more than one distribution. Nothing is
                stored in that case.
        """
        if target is not None:
            target = torch.as_tensor(target, dtype=DTYPE).reshape(-1)
        self._validate(target, location, y, reading_variance)
        if target is None:
            index = self.n_en_route + self._en_route_offset
            if self._journal is not None:
                self._journal.append({'type': 'en_route', 'index': index, 'measurements': self.next_index,
                                      'location': location_to_record(location), 'y': float(y),
                                      'reading_variance': float(reading_variance), 'wall_time': time.time(),
                                      **meta})
            self._store(None, location, float(y), float(reading_variance), reached=False)
            return index
        index = self.next_index
        if self._journal is not None:
            self._journal.append({'type': 'observation', 'index': index, 'target': target.tolist(),
                                  'location': location_to_record(location), 'y': float(y),
                                  'reading_variance': float(reading_variance), 'wall_time': time.time(), **meta})
        self._store(target, location, float(y), float(reading_variance),
                    reached=not meta.get('goal_timed_out', False))
        return index

    def recommend(self, rule: str | None = None) -> Recommendation:
        """Where the robust peak is believed to be, by ``rule`` (default :attr:`recommendation`; see
        :data:`RECOMMENDATION_RULES`): ``'past_mean'`` is the paper's (Alg. 1, last line), the best past
        target by the posterior mean of its candidate distribution. A method with a rule of its own
        (:meth:`~uncertain_bo.acquisition.Method.recommend`, e.g. BoTorch's risk measure, NES's posterior mean
        of the robust objective over the domain) uses it when no ``rule`` is given.

        Hyperparameters are refitted first when the schedule (``refit_every``) says a fit is due, so the
        recommendation uses the same fit the next decision will (its time is billed to that decision).

        Raises:
            RuntimeError: no observations yet.
            ValueError: unknown rule.
        """
        if self.n == 0:
            raise RuntimeError('nothing to recommend before the first observation')
        if rule is not None and rule not in RECOMMENDATION_RULES:
            raise ValueError(f'unknown recommendation rule {rule!r}; known: {", ".join(RECOMMENDATION_RULES)}')
        ctx = DecisionContext(self, self.n)
        own = self._method.recommend(ctx, rule)
        self._fit_seconds_unbilled += ctx.fit_seconds
        if own is not None:
            return own
        rule = rule or self.recommendation
        self._fit_seconds_unbilled += self._update_model()
        if rule == 'area_mean':
            return area_mean_recommendation(ctx)
        with torch.no_grad():
            mean, var = self.model.marginals(self.candidates(self._targets))
        if rule == 'highest_reading':
            i = int(torch.argmax(self.y))
            if self._en_route and float(self.en_route_y.max()) > float(self.y[i]):
                j = int(torch.argmax(self.en_route_y))
                where = self._en_route[j][0].mean[0].to(self.bounds)
                where = torch.minimum(torch.maximum(where, self.bounds[0]), self.bounds[1])
                with torch.no_grad():
                    m, v = self.model.marginals(self.candidates(where.reshape(1, -1)))
                return Recommendation(where, float(m[0]), float(v[0].sqrt()), -1)
        elif rule == 'past_lcb':
            i = int(torch.argmax(mean - 2.0 * var.clamp_min(0).sqrt()))
        else:
            i = int(torch.argmax(mean))
        return Recommendation(self._targets[i].clone(), float(mean[i]), float(var[i].sqrt()), i)

    def predict(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and standard deviation of the method's objective at ``targets`` ``(q, d)``."""
        self._update_model(refit=False)
        with torch.no_grad():
            mean, var = self.model.marginals(self.candidates(torch.as_tensor(targets, dtype=DTYPE)))
        return mean, var.sqrt()

    # ----------------------------------------------------------- internals
    def _validate(self, target: Tensor | None, location: LocationDistributions, y: float,
                  reading_variance: float = 0.0) -> None:
        def bad(msg: str) -> InvalidObservationError:
            return InvalidObservationError(f'observation rejected, nothing stored: {msg}')

        if target is not None and (target.numel() != self.dim or not torch.isfinite(target).all()):
            raise bad(f'target must be {self.dim} finite numbers, got {target.tolist()}')
        if not isinstance(y, (int, float)) or isinstance(y, bool) or not math.isfinite(y):
            raise bad(f'reading must be a finite number, got {y!r}')
        if (not isinstance(reading_variance, (int, float)) or isinstance(reading_variance, bool)
                or not math.isfinite(reading_variance) or reading_variance < 0):
            raise bad(f'reading variance must be a finite number >= 0, got {reading_variance!r}')
        if not isinstance(location, LocationDistributions) or len(location) != 1:
            raise bad('location must be a single LocationDistributions (batch of 1)')
        if location.dim != self.dim:
            raise bad(f'location is over R^{location.dim}, search space is R^{self.dim}')
        if not torch.isfinite(location.mean).all():
            raise bad('location mean contains NaN or inf')
        if isinstance(location, Gaussian):
            reason = check_covariance(location.covariance[0])
            if reason:
                raise bad(f'location covariance {reason}')

    def _store(self, target: Tensor | None, location: LocationDistributions, y: float,
               reading_variance: float = 0.0, reached: bool = True) -> None:
        self._rows.append((target, location, y, reading_variance))
        self._pending.append((self._gp_input(target, location), y, reading_variance))
        if target is None:  # en-route: in the GP only; no target, so nothing for the execution noise
            self._en_route.append((location, y, reading_variance))
            return
        self._pending_stops += 1
        if self._execution_prior is not None and reached:
            e = (location.mean[0] - target).to(self._execution_sum)
            sign = EXECUTION_FEEDBACK[self.execution_feedback]
            self._execution_sum += torch.outer(e, e) + sign * location.covariance[0].to(self._execution_sum)
            self._execution_n += 1
            prior = self._execution_prior_noise
            self.execution_noise = GaussianExecutionNoise(
                self.learned_execution_covariance(), n_samples=None if prior.closed_form else prior.n_samples,
                seed=prior.seed)
        self._targets = torch.cat([self._targets, target.reshape(1, -1)])
        self._inputs.append(location)
        self._y.append(y)
        self._noise.append(reading_variance)

    def _gp_input(self, target: Tensor | None, location: LocationDistributions) -> LocationDistributions:
        if self._method.inputs != 'target':
            return location
        # a method that trains on targets puts an en-route reading at its location estimate (it has no target)
        return Dirac((location.mean if target is None else target).reshape(1, -1))

    def fit_subset(self, cap: int | None = None) -> Tensor | None:
        """Indices (GP row order) of the observations the next hyperparameter fit uses, or None for all.

        All when the cap (default ``fit_max_points``) is 0 or not exceeded; otherwise every measurement (stop)
        and, in the room left (at least a tenth of the cap), en-route readings evenly spaced along the stream
        (so the subset spans the whole path). The posterior uses every observation regardless
        (:meth:`~uncertain_bo.models.DistributionGP.fit`). The same rule picks the sparse posterior's inducing
        inputs (``cap = inducing_points``).
        """
        total = len(self._rows)
        cap = self.fit_max_points if cap is None else cap
        if cap <= 0 or total <= cap:
            return None
        is_stop = torch.tensor([r[0] is not None for r in self._rows])
        stops = is_stop.nonzero().reshape(-1)
        en_route = (~is_stop).nonzero().reshape(-1)
        room = max(cap - stops.numel(), cap // 10, 1)
        if en_route.numel() > room:
            pick = torch.linspace(0, en_route.numel() - 1, room, dtype=DTYPE).round().long().unique()
            en_route = en_route[pick]
        return torch.cat([stops, en_route]).sort().values

    def _new_method(self) -> Method:
        cls = get_method(self.method)
        try:
            return cls(**(self.method_settings or {}))
        except TypeError as exc:
            raise ValueError(f'method {self.method!r}: {exc}') from None

    def _new_model(self) -> DistributionGP:
        kernel = self._method.kernel(self.dim)
        factory = self.model_factory or (
            lambda bounds, kernel: DistributionGP(bounds, kernel, noise_prior=self.noise_prior,
                                                  input_noise=self.input_noise))
        return factory(self.bounds, kernel)

    def _replay(self, journal: Journal) -> None:
        run = replay(journal, self.dim, self._validate)
        if run.start is not None:
            self.start = run.start
            self._design = self._initial_design()
            self._method = self._new_method()
        for target, loc, y, variance, reached in run.observations:  # target None: an en-route reading
            self._store(target, loc, y, variance, reached=reached)
        self.decisions += [Decision(**d) for d in run.decisions]
        self.keep_out = KeepOut.from_records(journal.records, self.dim)
        self._resume_numbering(journal, len(run.observations))
        pending = [d for d in self.decisions if d.index == self.next_index]

        def usable(t: Tensor) -> bool:
            return (t.numel() == self.dim and bool(torch.isfinite(t).all())
                    and bool(((t >= self.bounds[0]) & (t <= self.bounds[1])).all()))

        if pending:
            t = pending[-1].target
            if usable(t):
                if bool(self.keep_out.inside(t.reshape(1, -1))[0]):
                    log.info('journal %s: the pending target %s was kept out (not measurable): deciding anew',
                             journal.path, t.tolist())
                else:
                    self._resumed_target = t.clone()
                    # the rest of a batch decided with it, still to visit in order
                    ahead = {d.index: d.target for d in self.decisions if d.index > self.next_index}
                    k = self.next_index + 1
                    while k in ahead and usable(ahead[k]) and not bool(self.keep_out.inside(
                            ahead[k].reshape(1, -1))[0]):
                        self._queue.append(ahead[k].clone())
                        k += 1
            else:
                log.warning('journal %s: pending target %s is outside the search bounds: deciding anew',
                            journal.path, t.tolist())
        if self.n or pending:
            log.debug('resumed %d observations from %s%s', self.n, journal.path,
                      ' (with a pending target)' if self._resumed_target is not None else '')

    def _resume_numbering(self, journal: Journal, replayed: int) -> None:
        """After a replay: number on after the highest index the journal held, count what it lost, and, when it
        lost anything, append a ``resume`` record declaring the lost indices (:mod:`uncertain_bo.journal_schema`)."""
        checked = journal.checked
        self._index_offset = checked.next_index - self.n
        self._en_route_offset = checked.next_en_route_index - self.n_en_route
        kept = sum(r.get('type') in ('observation', 'en_route') for r in journal.records)
        # records the schema kept that this planner cannot use (another dimension): left out, counted; their
        # indices stay in the file, so the numbering above already passes them
        refused = kept - replayed
        self._journal_damage = {
            'records_skipped': checked.skipped + refused, 'records_missing': checked.missing,
            'problems': [f'line {d.line}: {d.message}' for d in checked.damage[:20]]}
        if not (checked.damage or refused):
            return
        lost, lost_en_route = checked.lost_indices, checked.lost_en_route_indices
        log.warning('journal %s: resumed %d measurements and %d en-route readings; %d damaged record(s) skipped, '
                    '%d missing (observation indices lost: %s)', journal.path, self.n, self.n_en_route,
                    self._journal_damage['records_skipped'], checked.missing, lost or 'none')
        self._journal.append({'type': 'resume', 'measurements': self.n, 'lost_indices': lost,
                              'lost_en_route_indices': lost_en_route,
                              'records_skipped': self._journal_damage['records_skipped'], 'wall_time': time.time()})

    def _update_model(self, refit: bool = True) -> float:
        """Move pending observations into the GP; refit hyperparameters when due (always if never fitted,
        e.g. after resuming from a journal). Returns the fit's wall time, s.

        The schedule: after every observation while the initial design is under way (``n <= n_initial``: the
        fits are cheap and the first decision must not rest on a fit to the first point alone), then every
        ``refit_every`` observations. With ``refit_every = 1`` that is every observation."""
        if self._pending:
            new_locs = cat([p[0] for p in self._pending])
            new_y = torch.tensor([p[1] for p in self._pending], dtype=DTYPE)
            new_noise = torch.tensor([p[2] for p in self._pending], dtype=DTYPE)
            self._since_fit += self._pending_stops  # the schedule counts measurements, not en-route readings
            self._pending, self._pending_stops = [], 0
            period = 1 if self.n <= self.n_initial else self.refit_every
            if refit and self.refit_every > 0 and self._since_fit >= period:
                self.model.clear_posterior()  # a fit follows: growing the posterior first would be wasted
            if self.model.n == 0:
                self.model.set_data(new_locs, new_y, new_noise)
                self._since_fit = max(self._since_fit, 1)
            else:
                self.model.append(new_locs, new_y, new_noise)
        period = 1 if self.n <= self.n_initial else self.refit_every
        due = self.refit_every > 0 and ((refit and self._since_fit >= period) or not self._fitted)
        if due and self.model.n > 0:
            t0 = time.perf_counter()
            # the fit's retries draw from the global torch stream (BoTorch samples restarts from the priors):
            # seed it from the run's seed and n so equal runs fit equally, whatever ran before in the process
            with torch.random.fork_rng(devices=[self.bounds.device] if self.bounds.is_cuda else []):
                torch.manual_seed(self.seed * 100_003 + self.model.n)
                self.model.fit(subset=self.fit_subset())
            self._fitted = True
            self._fitted_on = self.model.n
            self._since_fit = 0
            self._choose_inducing(refitted=True)
            return time.perf_counter() - t0
        self._choose_inducing(refitted=False)
        return 0.0

    def _choose_inducing(self, refitted: bool) -> None:
        """Switch the GP to the sparse posterior beyond ``sparse_above`` readings (inducing inputs re-chosen at
        each fit, kept between fits), back to the exact one below it."""
        sparse = 0 < self.sparse_above < self.model.n
        if not sparse:
            if self.model.inducing is not None:
                self.model.inducing = None
            return
        if refitted or self.model.inducing is None:
            chosen = self.fit_subset(self.inducing_points)
            self.model.inducing = torch.arange(self.model.n) if chosen is None else chosen

    def _initial_design(self) -> Tensor:
        """Scrambled Sobol points in the bounds, ordered as a greedy nearest-neighbour tour from ``start``."""
        default = torch.get_default_dtype()
        torch.set_default_dtype(DTYPE)   # SobolEngine computes its first point in the default dtype at construction
        try:
            engine = torch.quasirandom.SobolEngine(self.dim, scramble=True, seed=self.seed)
        finally:
            torch.set_default_dtype(default)
        unit = engine.draw(self.n_initial, dtype=DTYPE)
        pts = self.bounds[0] + unit * (self.bounds[1] - self.bounds[0])
        if self.start is None:
            return pts
        pos = torch.as_tensor(self.start, dtype=DTYPE).reshape(-1)
        order, left = [], list(range(len(pts)))
        while left:
            j = min(left, key=lambda k: float((pts[k] - pos).norm()))
            order.append(j)
            left.remove(j)
            pos = pts[j]
        return pts[order]


def _finite_or_none(v: float) -> float | None:
    return v if math.isfinite(v) else None

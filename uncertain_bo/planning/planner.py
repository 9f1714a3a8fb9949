r"""The ask/tell loop shared by the ROS explorer and the benchmark runner (paper Algorithm 1).

::

    planner = Planner(bounds, execution_noise=GaussianExecutionNoise.isotropic(2.0, 2))
    for t in range(30):
        target = planner.suggest()                      # x_t
        location, y = rover.measure_at(target)          # (P^L_t, y_t)
        planner.observe(target, location, y)            # D_t = D_{t-1} ∪ {(P^L_t, y_t)}
    best = planner.recommend()                          # argmax_{x_t ∈ D} μ̂(P̂_{x_t})

The planner composes owned components, each with explicit inputs and none holding the planner: its frozen
settings (:class:`~uncertain_bo.planning.settings.PlannerSettings`, replaced as a whole on a run-time change), the
readings (:class:`~uncertain_bo.planning.reading_store.ReadingStore`: the observation log, the GP and its refit schedule
:class:`~uncertain_bo.planning.model_schedule.ModelSchedule`, the learned execution noise), the one journal writer
(:class:`~uncertain_bo.planning.journal_writer.JournalWriter`, which the explorer calls for its own records), the
revisions' bookkeeping (:class:`~uncertain_bo.planning.revisions.LocationRevisions`), the keep-out zones
(:class:`~uncertain_bo.planning.keep_out.KeepOut`) and the space-filling initial design (``n_initial`` scrambled Sobol
targets, ordered as a short tour from ``start`` when given, so a rover does not zig-zag). What to measure next and what
to recommend is the method's: for each decision or recommendation the planner builds an immutable snapshot
(:class:`~uncertain_bo.acquisition.DecisionContext`: frozen settings, read-only observations, the GP brought up to
date on first read, the pending targets, a seed) and hands the method that, never itself
(:class:`~uncertain_bo.acquisition.Method`; by default it takes the initial design, then maximises its
acquisition); the recommendation rules read the same snapshot (:mod:`uncertain_bo.acquisition.recommendation`).
Observations are validated before anything is stored, written durably to the journal (if any; a storage fault holds
the record in memory instead of raising, :mod:`uncertain_bo.journal.journal`), then queued for the GP;
:attr:`Planner.model` holds every stored observation whenever it is read (its hyperparameters are refitted at the next
decision when the schedule says so). A planner opened on an existing journal resumes from it, numbering on after the
highest index the journal ever held (:mod:`uncertain_bo.planning.journal_writer`). A decision and its journal record:
:mod:`uncertain_bo.planning.decision`.

**Batches** (``suggest(q=..., pending=...)``): ``q`` targets at once, none duplicating ``pending`` ones (other rovers'
targets), each its own journaled decision (:meth:`~uncertain_bo.acquisition.Method.decide`). No target is sent within
``pending_radius`` of a pending target or of another target of its batch, whatever the method proposed (the keep-out
hook, :mod:`uncertain_bo.planning.keep_out`). Before the first measurement every target is a design target: a team with
more rovers than ``n_initial`` grows the design by the next points of its Sobol sequence, one target per rover. A lone
rover asking ``suggest()`` gets a batch method's (``ugp_bucb``) batch one target per call along the shortest route
from its position (:mod:`uncertain_bo.planning.itinerary`), or with ``route_horizon`` > 1 the first stop of such a
route, decided again at every call. One rover of a team sharing the planner (:mod:`uncertain_bo.team.mission`) asks with
``suggest(pending=<the others' targets>, position=<where it is>, rover=<its name>)``: travel cost and initial-design
tour from its position.

**Revised locations** (``revise([LocationRevision((kind, index), location, stamp), ...])``): when the localiser
revises the past (a smoother after a fix, a loop closure), stored readings are re-placed at their revised location
distributions: checked (unknown readings, revisions out of stamp order and invalid locations are rejected and
counted), journaled (append-only ``revision`` records, replayed on resume) and brought into the GP and the learned
execution noise (:mod:`uncertain_bo.planning.revisions`).

**En-route readings** (``observe(None, location, y)``): readings a streaming sensor took while the rover drove, each
with the location distribution of its own stamp. They join the shared GP but are not measurements (:attr:`n`,
:attr:`targets`, :attr:`y`, :attr:`locations` and the decision index count the stops only), never feed the learned
execution noise, and only ``'highest_reading'`` recommends them. With many of them the hyperparameter fit runs on a
capped subset (``fit_max_points``) while the posterior keeps all of them (rank-one updates between fits).
"""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
from torch import Tensor

from ..acquisition import DecisionContext, Method, Recommendation, get_method, make_beta
from ..acquisition.confirmation import confirmation_proposal, confirming
from ..acquisition.observation_view import ObservationView
from ..acquisition.recommendation import RECOMMENDATION_RULES, rule_recommendation
from ..distributions import DTYPE, Dirac, ExecutionNoise, LocationDistributions
from .execution_noise_estimator import EXECUTION_FEEDBACK, ExecutionNoiseEstimator
from .decision import Decision, batch_decisions, decision_record, team_request
from ..journal.journal import Journal
from .keep_out import KeepOut, KeepOutZone, NoAdmissibleTargetError, noise_radius
from .initial_design import extend_design, initial_design, rover_design
from ..kernels import SampleDistributionKernel
from .model_schedule import ModelSchedule
from .itinerary import Itinerary, lone_batch, visiting_order
from ..models import DistributionGP
from .observation_log import InvalidObservationError, ObservationLog, StoredReading
from .journal_writer import JournalWriter, pending_after_resume
from .revisions import LocationRevision, LocationRevisions, RevisionOutcome, revisions_from_records
from .settings import PlannerSettings, Setting
from .reading_store import ReadingStore
from .replay import replay

__all__ = ['Planner', 'Decision', 'Recommendation', 'InvalidObservationError', 'NoAdmissibleTargetError',
           'RECOMMENDATION_RULES', 'EXECUTION_FEEDBACK', 'LocationRevision', 'RevisionOutcome']

log = logging.getLogger('uncertain_bo.planning.planner')


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
        n_initial: number of space-filling initial targets (>= 1); more when more targets are decided before the
            first measurement (:attr:`initial_design`).
        refit_every: refit GP hyperparameters by marginal likelihood every this many observations
            (1 = every step, as in the paper's robot experiment; 0 = never: fixed hyperparameters with
            cheap rank-one updates).
        optimizer: acquisition maximiser settings.
        seed: seed for the initial design and the maximiser's raw samples.
        start: optional ``(d,)`` start position (orders the initial design as a short tour).
        budget: the number of measurements the mission will take (``max_measurements``), or None if
            unknown; survey strategies plan their grid from it.
        recommendation: the default rule of :meth:`recommend` (a key of :data:`RECOMMENDATION_RULES`).
        confirmation_readings: the last this many measurements of ``budget`` re-measure the measured places that
            could be the best (:mod:`~uncertain_bo.acquisition.confirmation`: the leader by posterior mean or its
            challenger), one target per decision; 0 = off (or no ``budget``).
        travel_weight: :math:`w \\ge 0` of the travel-aware acquisition
            (:class:`~uncertain_bo.acquisition.travel.TravelPenalty`): crossing the whole search box costs
            :math:`w` prior standard deviations of the field; 0 = the method's acquisition as it is.
        route_horizon: a lone rover's receding-horizon route: :meth:`suggest` decides this many targets as a
            batch, returns the first stop of their shortest route (:mod:`uncertain_bo.planning.route`) and decides again
            at the next call; 1 = the method's single target. Not for batch methods or own-route methods (surveys).
        pending_radius: no target is sent within this distance (target units, m on a rover) of a pending one
            (another rover's, or an earlier target of the same batch; not of a route horizon's look-ahead picks,
            which are not sent): a proposal inside is moved to the nearest point outside
            (:mod:`uncertain_bo.planning.keep_out`, every method). None = twice the largest standard deviation of the
            execution-noise model at the pending target (1.5 m with the explorer's defaults); 0 = off.
        in_box_exploration: weight UCB's exploration term by the share of the kernel footprint inside the
            bounds (:func:`~uncertain_bo.acquisition.ucb.in_box_fraction`), against boundary piling; applies
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
            (:class:`~uncertain_bo.models.DistributionGP` ``input_induced_noise``); not used by a ``model_factory``.
        journal: optional path of the observations journal; an existing journal is resumed.
        model_factory: optional ``(bounds, kernel) -> DistributionGP`` (e.g. fixed hyperparameters).
        metadata: extra fields for a new journal's header.

    Raises:
        ValueError: invalid bounds, ``n_initial < 1``, dimension mismatch between bounds and noise model,
            settings the method does not take, an unknown ``execution_feedback``, a negative or non-finite
            ``pending_radius``.
        KeyError: unknown method.

    Example:
        An ask/tell loop through the initial design, each target measured where it was sent:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2),
        ...                   n_initial=3, seed=0)
        >>> for _ in range(3):
        ...     target = planner.suggest()
        ...     index = planner.observe(target, Dirac(target.reshape(1, 2)), float(-(target - 7.0).pow(2).sum()))
        >>> planner.n, tuple(planner.targets.shape), [d.phase for d in planner.decisions]
        (3, (3, 2), ['initial', 'initial', 'initial'])
    """

    # the settings, shown as attributes (settings.py); the writable ones apply from the next decision on
    bounds = Setting(False, 'set_bounds()')
    method = Setting(False)
    method_settings = Setting(False)
    beta = Setting(False, 'set_beta()')
    n_initial = Setting()
    refit_every = Setting()
    optimizer = Setting()
    seed = Setting(False)
    start = Setting(False, 'set_start()')
    budget = Setting()
    recommendation = Setting()
    confirmation_readings = Setting()
    travel_weight = Setting()
    route_horizon = Setting()
    pending_radius = Setting()
    in_box_exploration = Setting()
    execution_noise_prior_weight = Setting(False)
    execution_feedback = Setting(False)
    noise_prior = Setting(False)
    fit_max_points = Setting()
    sparse_above = Setting()
    inducing_points = Setting()
    input_noise = Setting(False)
    model_factory = Setting(False)

    def __init__(self, bounds: Tensor, execution_noise: ExecutionNoise, method: str = 'ugp_ucb', *,
                 journal: str | Path | None = None, metadata: dict[str, Any] | None = None, **options: Any):
        #: the frozen settings (settings.py), replaced as a whole when one changes
        self.settings = PlannerSettings.of(bounds, execution_noise, method=method, **options)
        s = self.settings
        # the learned execution noise (execution_noise_estimator.py), None when it is fixed
        estimator = (None if s.execution_noise_prior_weight is None else
                     ExecutionNoiseEstimator(s.execution_noise, s.execution_noise_prior_weight, s.execution_feedback))
        self._method: Method = self._new_method()
        self._beta = make_beta(s.beta)
        observations = ObservationLog(self.dim)
        #: the readings in the log, the GP (its schedule) and the learned execution noise (reading_store.py)
        self.store = ReadingStore(observations, ModelSchedule(self._new_model(), observations), s.execution_noise,
                                  estimator, self._method.inputs)
        self.decisions: list[Decision] = []
        #: the resumed pending target and the rest of the current batch, not handed out yet (itinerary.py)
        self.itinerary = Itinerary()
        self._design = self._initial_design()
        self.keep_out = KeepOut()   # targets that could not be measured: never proposed again (keep_out.py)
        self._revisions = LocationRevisions()   # revised locations of stored readings (revisions.py)
        #: the run's one journal writer (journal_writer.py); the explorer writes its own records through it
        self.journal_writer = JournalWriter(journal, {'method': s.method, 'bounds': s.bounds.tolist(), 'seed': s.seed,
                                                      **(metadata or {})})
        if self.journal_writer.file is not None:
            self._resume(self.journal_writer.file)

    # -------------------------------------------------------------- public
    @property
    def dim(self) -> int:
        return self.settings.bounds.shape[1]

    @property
    def model(self) -> DistributionGP:
        """The shared GP with every stored observation and revision (brought up to date when read: it never lags
        :meth:`observe`); its hyperparameters are those of the last fit (the next decision, recommendation or
        prediction refits first when the schedule says so, :mod:`uncertain_bo.planning.model_schedule`)."""
        return self.schedule.current()

    @property
    def observations(self) -> ObservationLog:
        """The run's measurements and en-route readings (:mod:`uncertain_bo.planning.observation_log`)."""
        return self.store.observations

    @property
    def schedule(self) -> ModelSchedule:
        """The GP and when it takes new readings and refits (:mod:`uncertain_bo.planning.model_schedule`)."""
        return self.store.schedule

    @property
    def execution_estimator(self) -> ExecutionNoiseEstimator | None:
        """The learned execution noise (:mod:`uncertain_bo.planning.execution_noise_estimator`), None when it is
        fixed."""
        return self.store.estimator

    @property
    def execution_noise(self) -> ExecutionNoise:
        """The execution-noise model :math:`\\hat P_{\\mathbf x}` decisions use: the configured one, or the learned
        one when ``execution_noise_prior_weight`` is set (:meth:`learned_execution_covariance`)."""
        return self.store.execution_noise

    # views of the observation log (:class:`~uncertain_bo.acquisition.observation_view.ObservationView`)
    n = ObservationView('Number of stored measurements (stops with a commanded target; en-route readings not '
                        'included).')
    n_en_route = ObservationView('Number of stored en-route readings (``observe(None, ...)``).')
    en_route_locations = ObservationView("The en-route readings' location distributions as one batch (None if "
                                         'there are none).')
    en_route_y = ObservationView('``(n_en_route,)`` en-route readings (field units).')
    targets = ObservationView('``(n, d)`` past targets.')
    y = ObservationView('``(n,)`` past readings (field units).')
    locations = ObservationView('Past location distributions :math:`P^L_t` as one batch (None before any observation).')

    @property
    def measured_places(self) -> Tensor:
        """``(n, d)`` the place each measurement measured, as a target to send the rover to: its commanded target
        where the rover reached it (the reading was taken there up to the execution noise, which the candidate
        distribution :math:`\\hat P_{\\mathbf x}` models), else (a goal that timed out, a stop on the way by a budget)
        where its reading was taken: the mean of its location distribution, clamped into the search bounds. The
        recommendation rules over past measurements rank these (:mod:`~uncertain_bo.acquisition.recommendation`)."""
        return self.observations.snapshot(self.bounds).places

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
        if kind == 'gaussian' and isinstance(self.schedule.model.kernel, SampleDistributionKernel):
            return 'samples'
        return kind

    @property
    def beta_schedule(self) -> Callable[[int, DistributionGP], float]:
        """:math:`\\beta_t` as a schedule ``(t, model) -> float`` (a fixed number is a constant schedule)."""
        return self._beta

    @property
    def initial_design(self) -> Tensor:
        """``(m, d)`` the space-filling initial targets in visiting order: ``m = n_initial``, or more when more targets
        were decided before the first measurement (a team with more rovers than ``n_initial``, a batch larger than
        it): the design then grows by the next points of its Sobol sequence
        (:func:`~uncertain_bo.planning.initial_design.extend_design`), since no acquisition can be computed without
        data."""
        return self._design

    def candidates(self, targets: Tensor) -> LocationDistributions:
        """Location distributions the method scores for ``targets`` (``(q, d)``)."""
        return self.execution_noise(targets) if self._method.robust_candidates else Dirac(targets)

    def snapshot(self, index: int | None = None, q: int = 1, pending: Tensor | None = None,
                 position: Tensor | None = None, initial_design: Tensor | None = None) -> DecisionContext:
        """The immutable snapshot a method decides measurement ``index`` (default :attr:`n`) from, or recommends
        after (:class:`~uncertain_bo.acquisition.DecisionContext`): the settings, the observations (read-only), the
        GP brought up to date on first read, ``q`` and the ``pending`` targets ``(p, D)``, the rover's ``position``
        ``(d,)`` (default :attr:`position`) and the ``initial_design`` (default :attr:`initial_design`)."""
        s = self.settings
        return DecisionContext(
            self.n if index is None else index, s, self.observations.snapshot(s.bounds),
            self._method.decision_bounds(s.bounds), self.execution_noise, self._method.robust_candidates, self._beta,
            self.position if position is None else position, len(self._design),
            self._design if initial_design is None else initial_design,
            functools.partial(self.schedule.update, s), self._method.fantasize_pending, q, pending)

    def suggest(self, q: int | None = None, pending: Tensor | None = None, position: Tensor | None = None,
                rover: str | None = None) -> Tensor:
        """The next target ``(D,)``, or with ``q`` the next ``q`` targets ``(q, D)``, as the method decides
        (:meth:`~uncertain_bo.acquisition.Method.decide`; by default the initial design, then the acquisition
        maximiser; a batch greedily, each pick with the earlier ones pending).

        Without any argument (a lone rover) the initial design comes first, one target per call in its visiting
        order (:attr:`initial_design`), each target once. After it, a batch method
        (:attr:`~uncertain_bo.acquisition.Method.batch_size` > 1) decides a whole batch when none is left, orders it
        as the shortest open tour from :attr:`position` (:func:`~uncertain_bo.planning.route.shortest_open_tour`) and
        hands it out one target per call in that order (the measurements in between do not change it); with
        :attr:`route_horizon` ``h > 1`` any other method but a survey decides ``h`` targets as a batch and returns
        the first stop of their shortest tour, journaling that decision only. One rover of a team (``position``)
        gets one target per call. With ``q`` the caller gets the batch at once, as decided; queued targets count as
        pending. Before the first measurement every target comes from the initial design, grown by the next Sobol
        points when more are decided than it holds (:attr:`initial_design`). No target is sent within
        :meth:`pending_radii` of a pending one or of an earlier target of its batch
        (:mod:`uncertain_bo.planning.keep_out`).

        Every target's decision (wall time of its pick, acquisition value, :math:`\\beta_t`) is appended to
        :attr:`decisions` and to the journal, with index ``n``, ``n + 1``, ... in visiting order.

        Args:
            q: number of targets to decide (None: one, or a lone rover's batch past the initial design).
            pending: ``(p, D)`` targets decided elsewhere and not yet measured (e.g. other rovers'), which the
                decision should not duplicate (BoTorch's ``X_pending``): no target is sent within
                :meth:`pending_radii` of one (nor of an earlier target of the same batch).
            position: ``(d,)`` where the rover this decision is for believes it is (m), for one rover of a team
                sharing this planner (:mod:`uncertain_bo.team.mission`); None = :attr:`position` (a lone rover).
                With it, the travel cost is counted from there, the decision's index numbers on after the ``pending``
                targets (index ``n + p``), and an initial-design pick is the design target nearest to ``position``
                among those neither measured nor pending (nor, when a keep-out zone moved it, measured or pending
                where it was moved to), so rovers share the design.
            rover: the rover's name, recorded with the decision (the journal's ``rover``); None for a lone rover.

        Raises:
            ValueError: ``q < 1``, ``pending`` not ``(p, D)`` finite targets, or ``position`` not ``(d,)`` finite."""
        lone = q is None and pending is None and position is None
        if lone and self.itinerary.queue:
            return self.itinerary.pop()
        if q is not None and int(q) < 1:
            raise ValueError(f'q must be >= 1, got {q}')
        pending, position = team_request(pending, position, self.bounds)
        external = 0 if pending is None or position is None else len(pending)
        index = self.n + len(self.itinerary) + external
        batch, horizon = (int(q), 1) if q is not None else (1, 1)
        if lone:
            batch, horizon = lone_batch(self._method, index, len(self._design), self._confirming(index),
                                        self.route_horizon)
        if self.n == 0:   # before the first measurement every target is a design target: no data for an acquisition
            self._design = extend_design(self._design, self.bounds, index + batch, self.seed)
        pending = self.itinerary.pending(pending)
        t0 = time.perf_counter()
        billed = self.schedule.take_fit_seconds()    # fits made since the last decision (recommend(), predict())
        design = None if position is None else rover_design(self._design, index, position, self.targets, pending,
                                                            self.bounds, self.keep_out)
        ctx = self.snapshot(index, q=batch, pending=pending, position=position, initial_design=design)
        proposal = (confirmation_proposal(ctx) if self._confirming(index) else None) or self._method.decide(ctx)
        total = time.perf_counter() - t0
        fit_seconds = self.schedule.take_fit_seconds()
        picks = proposal.split()
        if len(picks) != batch:
            raise RuntimeError(f'method {self.method!r} decided {len(picks)} targets, {batch} asked for')
        proposed = [pick.target.to(self.bounds).reshape(-1) for pick in picks]
        admissible = self.keep_out.admit(proposed, pending, self.pending_radii, ctx.bounds,   # every method's
                                         apart=horizon == 1)
        # a batch the rover drives itself: along the shortest route from where it is (route horizon: its first stop
        # only; the rest is decided again)
        order = visiting_order(torch.stack(admissible), ctx.position, horizon) if q is None and batch > 1 else \
            list(range(batch))
        decisions = batch_decisions(picks, admissible, order, [self.journal_writer.index(index + j)   # the journal's
                                                               for j in range(len(order))],           # numbering
                                    total, fit_seconds, billed, horizon, rover)
        for j, (k, decision) in enumerate(zip(order, decisions)):
            self.decisions.append(decision)
            self.journal_writer.write(decision_record(decision, proposed[k], len(order), j))
        targets = [decision.target for decision in decisions]
        if q is not None:
            return torch.stack(targets)
        self.itinerary.queue = targets[1:]
        return targets[0]

    def pending_radii(self, targets: Tensor) -> Tensor:
        """``(k,)`` how far from each pending target ``(k, d)`` no other target is sent (target units, m on a rover):
        :attr:`pending_radius`, or when it is None twice the largest standard deviation of the current (possibly
        learned) execution-noise model there (:func:`~uncertain_bo.planning.keep_out.noise_radius`)."""
        if self.pending_radius is not None:
            return targets.new_full(targets.shape[:1], float(self.pending_radius))
        return noise_radius(self.execution_noise, targets)

    def _confirming(self, index: int) -> bool:
        """Whether measurement ``index`` is in the confirmation phase (:attr:`confirmation_readings`)."""
        return confirming(index, self.budget, self.confirmation_readings, len(self._design))

    @property
    def queued(self) -> Tensor:
        """``(k, D)`` targets of the current batch not handed out yet (:meth:`suggest`), in order."""
        return self.itinerary.queued(self.bounds)

    def add_keep_out(self, target: Tensor, radius: float, reason: str = '') -> KeepOutZone:
        """Never propose a target within ``radius`` of ``target`` ``(d,)`` again (it could not be measured):
        the zone is journaled, kept on resume, and applies to every later decision of every method
        (:mod:`uncertain_bo.planning.keep_out`). A pending resumed target inside it is dropped.

        Raises:
            ValueError: a non-positive radius or a non-finite target.
        """
        zone = self.keep_out.add(torch.as_tensor(target, dtype=DTYPE), radius, self.next_index, reason)
        self.journal_writer.write({**zone.record(), 'wall_time': time.time()})
        self.itinerary.drop_inside(self.keep_out)   # the next suggest() decides anew
        return zone

    @property
    def fitted_on(self) -> int | None:
        """Number of observations the GP hyperparameters were last fitted on (None: never fitted)."""
        return self.schedule.fitted_on

    @property
    def position(self) -> Tensor:
        """``(d,)`` where the rover is believed to be: the mean of the latest location distribution, else the
        start, else the centre of the bounds."""
        if self.n:
            return self.observations.last_location_mean().to(self.bounds)
        return self.bounds.mean(0) if self.start is None else self.start.to(self.bounds)

    def learned_execution_covariance(self) -> Tensor | None:
        """The learned execution-noise covariance :math:`\\hat\\Sigma` (``(d, d)``, m²; derived in
        :meth:`~uncertain_bo.planning.execution_noise_estimator.ExecutionNoiseEstimator.covariance`), or None when it is
        fixed."""
        return None if self.execution_estimator is None else self.execution_estimator.covariance()

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
            **meta: JSON-able extras for the journal (stamps, covariance source, ...); ``reading_stamp`` and
                ``pose_stamp`` (s) are also kept with the reading (a revised trajectory is matched against them,
                :meth:`revise`), as are a team's ``rover`` and ``seq``. ``goal_timed_out=True``
                says the rover did not reach ``target`` (a goal that timed out, a stop on the way): the
                measurement then feeds no learned execution noise, and the recommendation counts it where its
                reading was taken, not at ``target`` (:attr:`measured_places`).

        Returns:
            Index of the stored measurement (of the en-route reading among the en-route readings when ``target``
            is None).

        Raises:
            InvalidObservationError: non-finite target or reading, negative or non-finite reading variance,
                wrong dimension, invalid covariance, or a batch of more than one distribution. Nothing is
                stored in that case.

        A journal that cannot write (full disk, I/O error: a storage fault) raises nothing here: the observation
        is stored and its record held in memory until the journal can write it
        (:attr:`~uncertain_bo.journal.journal.Journal.fault`).
        """
        if target is not None:
            target = torch.as_tensor(target, dtype=DTYPE).reshape(-1)
        self.observations.validate(target, location, y, reading_variance)
        index = self.journal_writer.reading(target, location, y, reading_variance, meta, self.n, self.n_en_route)
        self.store.add(target, location, float(y), float(reading_variance),
                       reached=target is not None and not meta.get('goal_timed_out', False),
                       reading=StoredReading.of('en_route' if target is None else 'observation', index, meta))
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
        ctx = self.snapshot()
        own = self._method.recommend(ctx, rule)
        return own if own is not None else rule_recommendation(ctx, rule or self.recommendation)

    def predict(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and standard deviation of the method's objective at ``targets`` ``(q, d)``."""
        model = self.schedule.update(self.settings, refit=False)
        with torch.no_grad():
            mean, var = model.marginals(self.candidates(torch.as_tensor(targets, dtype=DTYPE)))
        return mean, var.sqrt()

    # ------------------------------------------------------- settings changed during a run
    def set_start(self, position: Tensor) -> None:
        """Order the initial design as a short tour from ``position`` ``(d,)`` (e.g. the rover's first pose).

        Raises:
            RuntimeError: observations exist already (the design is partly used).
        """
        if self.n:
            raise RuntimeError('set_start() must be called before the first observation')
        self.settings = self.settings.replace(start=position)
        self.itinerary.clear()
        self._design = self._initial_design()
        self._method = self._new_method()  # a survey re-plans its tour from the start
        # a resumed run orders its initial design the same way
        self.journal_writer.write({'type': 'start', 'position': self.start.tolist(), 'wall_time': time.time()})

    def set_beta(self, beta: Any) -> None:
        """Change :math:`\\beta_t` (a number or a schedule) from the next decision on."""
        self._beta = make_beta(beta)
        self.settings = self.settings.replace(beta=beta)

    def set_execution_noise(self, execution_noise: ExecutionNoise) -> None:
        """Change the execution-noise model :math:`\\hat P_{\\mathbf x}` from the next decision on (an operator's
        run-time ``execution_noise_std``).

        When the execution noise is learned (``execution_noise_prior_weight`` set), ``execution_noise`` becomes
        the new prior :math:`\\Sigma_0` of :meth:`learned_execution_covariance`: the evidence of the goals reached
        so far is kept and combined with it at once.

        Raises:
            ValueError: learning is on and ``execution_noise`` is not a :class:`GaussianExecutionNoise` of the
                planner's dimension.
        """
        self.store.set_execution_noise(execution_noise)
        self.settings = self.settings.replace(execution_noise=execution_noise)

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
        self.settings = self.settings.replace(bounds=bounds)
        dropped = self.itinerary.clear()
        if dropped:
            log.info('search bounds changed: dropping %d queued targets of the current batch', dropped)
        self.store.rebuild(self._new_model())
        self._method = self._new_method()  # a survey re-plans in the new box
        self._design = self._initial_design()
        self.journal_writer.write({'type': 'bounds', 'bounds': bounds.tolist(), 'index': self.next_index,
                                   'wall_time': time.time()})

    # ------------------------------------------------------- the journal
    @property
    def next_index(self) -> int:
        """The journal index of the next measurement: :attr:`n`, plus the observations a resumed journal lost
        (damaged records skipped, lines missing), so an index is never used twice."""
        return self.journal_writer.index(self.n)

    @property
    def journal_damage(self) -> dict[str, Any]:
        """What resuming the journal skipped (:attr:`~uncertain_bo.planning.journal_writer.JournalWriter.damage`)."""
        return self.journal_writer.damage

    @property
    def journal_file(self) -> Journal | None:
        """The journal (None without one); records are written through :attr:`journal_writer`."""
        return self.journal_writer.file

    @property
    def resumed_target(self) -> Tensor | None:
        """The journal's pending target (see :meth:`take_resumed_target`) without taking it."""
        return self.itinerary.resumed

    def take_resumed_target(self) -> Tensor | None:
        """The target of the journal's pending decision, once (None otherwise).

        A run resumed from a journal whose last decision has no observation yet (the process stopped while
        the rover drove there) should send the rover to that target again instead of deciding anew: the
        decision is already journaled, and the initial design or the acquisition would choose it again
        anyway. Returns ``(d,)`` and forgets it; later calls (and :meth:`suggest`) decide as usual.
        """
        return self.itinerary.take_resumed()

    def forget_resumed(self) -> None:
        """Drop the journal's pending target and the batch queued after it: a team hands its rovers' pending
        targets back per rover (:mod:`uncertain_bo.team.journal`), where the last decision is only one
        rover's."""
        self.itinerary = Itinerary()

    def _resume(self, journal: Journal) -> None:
        """Resume from ``journal``: its start, observations, revisions, decisions and keep-out zones replayed, the
        numbering on after its highest index, its pending target (and the rest of its batch) handed back."""
        run = replay(journal, self.dim, self.observations.validate)
        if run.start is not None:
            self.settings = self.settings.replace(start=run.start)
            self._design = self._initial_design()
            self._method = self._new_method()
        for target, loc, y, variance, reached, reading in run.observations:  # target None: an en-route reading
            self.store.add(target, loc, y, variance, reached=reached, reading=reading)
        outcome = RevisionOutcome()   # the last revision of each reading wins
        self._revisions.apply(self._revisions.check(revisions_from_records(run.revisions, outcome), self.observations,
                                                    outcome), outcome, self.store)
        for problem in outcome.problems:
            log.warning('journal %s: skipping revision: %s', journal.path, problem)
        self.decisions += [Decision(**d) for d in run.decisions]
        self.keep_out = KeepOut.from_records(journal.records, self.dim)
        kept = sum(r.get('type') in ('observation', 'en_route') for r in journal.records)
        # records the schema kept that this planner cannot use (another dimension; a revision of such a reading):
        # left out, counted; their indices stay in the file, so the numbering already passes them
        self.journal_writer.resumed(self.n, self.n_en_route, kept - len(run.observations) + len(outcome.problems))
        self.itinerary.resumed, self.itinerary.queue = pending_after_resume(
            self.decisions, self.next_index, self.keep_out, self.bounds, journal.path)
        if self.n or self.itinerary.resumed is not None:
            log.debug('resumed %d observations from %s%s', self.n, journal.path,
                      ' (with a pending target)' if self.itinerary.resumed is not None else '')

    # ------------------------------------------------------- revised locations (revisions.py)
    @property
    def revisions_rejected(self):
        """Revisions rejected so far, by reason (:data:`~uncertain_bo.planning.revisions.REVISION_REJECTIONS`)."""
        return self._revisions.rejected

    @property
    def revisions_applied(self) -> int:
        """Revisions applied so far (this process's and a resumed journal's)."""
        return self._revisions.applied

    @property
    def readings(self) -> list[StoredReading]:
        """Every stored reading (measurements and en-route readings) in arrival order: which it is, its stamps and
        team keys (:class:`~uncertain_bo.planning.observation_log.StoredReading`)."""
        return list(self.observations.readings)

    def stored_readings(self) -> list[StoredReading]:
        """The readings a revised trajectory of this planner's rover may re-place: all of them (a team rover's view
        gives its own only, :class:`~uncertain_bo.team.planner.RoverView`)."""
        return self.readings

    def revision_stamp(self, kind: str, index: int) -> float | None:
        """The stamp of reading ``(kind, index)``'s last accepted revision (s), None if it has none."""
        return self._revisions.stamp(self.observations.row_of(kind, index))

    def revise(self, revisions: Iterable[LocationRevision]) -> RevisionOutcome:
        """Re-place stored readings at revised location distributions (:mod:`uncertain_bo.planning.revisions`): each
        revision is checked in turn (a later one of the same reading against the earlier one), the accepted ones are
        journaled together (one write and one fsync, :meth:`~uncertain_bo.journal.journal.Journal.append_many`)
        and applied; a rejected one changes nothing and is counted (:attr:`revisions_rejected`). Nothing is raised for a
        bad revision (a batch from a smoother is applied as far as it is valid); the GP takes the revisions when it is
        next read (:attr:`model`, a decision, prediction or recommendation).

        Args:
            revisions: :class:`LocationRevision` s, in order (a later one of the same reading must be newer).

        Returns:
            What was applied and rejected (:class:`RevisionOutcome`).
        """
        return self._revisions.revise(revisions, self.store, self.journal_writer.write_many)

    def reject_revision(self, what: str, reason: str, detail: str) -> None:
        """Count a revision rejected before it could name a stored reading (a team's unknown ``(rover, seq)``)."""
        self._revisions.reject(what, reason, detail)

    def fit_subset(self, cap: int | None = None) -> Tensor | None:
        """Indices (GP row order) of the observations the next hyperparameter fit uses, or None for all.

        All when the cap (default ``fit_max_points``) is 0 or not exceeded; otherwise every measurement (stop)
        and, in the room left (at least a tenth of the cap), en-route readings evenly spaced along the stream
        (so the subset spans the whole path). The posterior uses every observation regardless
        (:meth:`~uncertain_bo.models.DistributionGP.fit`). The same rule picks the sparse posterior's inducing
        inputs (``cap = inducing_points``).
        """
        return self.observations.fit_subset(self.fit_max_points if cap is None else cap)

    def _new_method(self) -> Method:
        cls = get_method(self.method)
        try:
            return cls(**(self.method_settings or {}))
        except TypeError as exc:
            raise ValueError(f'method {self.method!r}: {exc}') from None

    def _new_model(self) -> DistributionGP:
        kernel = self._method.kernel(self.dim)
        m = self.settings.model
        factory = m.model_factory or (
            lambda bounds, kernel: DistributionGP(bounds, kernel, noise_prior=m.noise_prior,
                                                  input_induced_noise=m.input_noise))
        return factory(self.bounds, kernel)

    def _initial_design(self) -> Tensor:
        return initial_design(self.bounds, self.n_initial, self.seed, self.start)

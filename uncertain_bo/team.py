"""Several rovers, one map: a team of simulated rovers exploring one field with one shared model (issue 23, phase 1).

Each rover runs the explorer's measurement cycle (:class:`~uncertain_bo.explorer.Explorer`: drive, dwell, pair a
reading with the pose estimate nearest in time) on its own simulated rover, localiser and pure-pursuit controller
(:class:`~uncertain_bo.sim.mission.RoverLoop`, the in-process mission's step); all of them step on one simulated
clock. What they share is the :class:`~uncertain_bo.planner.Planner`: every rover's measurement (its location
distribution with its own pose covariance, and its reading) enters one GP and one journal, and a rover that finishes
a measurement gets its next target decided by that planner with the other rovers' current targets as pending ones
(``suggest(pending=..., position=..., rover=...)``: GP-BUCB's hallucinated readings at the pending targets for a UCB
method, the travel cost and the initial design's tour from *its* position).

**Architecture: one explorer (planner) serving N rovers**, not one explorer per rover exchanging observations.
Over a field radio link that drops and delays messages,

- the merge is deterministic: one process decides, so a target is decided knowing exactly which targets are
  pending and which readings are in the model; N explorers each holding a copy of the observations would decide on
  copies that differ by whatever the link has not delivered yet, and two of them could pick the same hill;
- there is one journal, in the order the planner stored the observations, each with its ``rover`` (and each
  decision with the rover it was for): a resumed or audited run needs no reconciliation of N journals;
- a rover needs the link only to ask for its next target and to hand in measurements: each rover buffers its
  ``(location distribution, reading)`` pairs with a per-rover sequence number ``seq`` and re-sends them until they
  are acknowledged, and the planner's side (:meth:`Team.merge`) stores each ``(rover, seq)`` exactly once — a
  duplicated or delayed delivery is merged once (duplicates are counted, :attr:`Team.duplicates`), a late one still
  joins the model;
- a rover that stops reporting for ``silence_timeout`` simulated seconds is dropped (:meth:`Team.drop`): its pending
  target is released (the next rover to ask may get it) and the others go on; what it measured stays.

The cost is a single point of failure (the planner's host, typically the base station), which the journal already
covers (a restarted planner resumes it). The planner's side — :meth:`merge`, :meth:`pending`, :meth:`drop`, the
team's recommendation — is :class:`TeamPlanner`, shared by the in-process :class:`Team` (here the link is a method
call that never loses a message, and a failure is a rover going silent) and the ROS node ``team_explorer``
(:mod:`uncertain_bo.ros.team_explorer`: one explorer node serving N namespaced rovers over DDS).

**Baselines in the same loop.** ``sharing=False`` gives every rover its own planner (N independent explorers, each
with its share of the measurement budget and its own seed), and ``partition=True`` gives rover ``i`` the ``i``-th of
N equal strips of the search box along x (N lawnmowers on a partition of the area). Without sharing the team's
recommendation is the rovers' recommendation with the highest predicted robust value.

Rovers start ``spacing`` metres apart along x, centred on the configured start (``sim_rover.initial_x/y``; a team
of one starts there, and its records equal the single-rover mission's), rover ``i`` with simulation seed
``seed + 7919 i`` (rover 0: the mission's own seed). Resuming a team from its journal is not supported in phase 1.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import Tensor

from .distributions import DTYPE, ExecutionNoise, LocationDistributions
from .explorer import Explorer, Measurement, State, planner_from_parameters
from .planner import Decision, Planner, Recommendation
from .sim.field import Field
from .sim.mission import MissionHost, RoverLoop, localiser_and_law
from .sim.world import SimWorld

__all__ = ['Team', 'TeamPlanner', 'TeamResult', 'RoverView', 'team_parameters', 'strip_bounds', 'rover_names']

log = logging.getLogger(__name__)

#: seed offset between rovers' simulations (rover i: ``seed + SEED_STRIDE * i``)
SEED_STRIDE = 7919


def rover_names(n: int) -> list[str]:
    """``['rover0', 'rover1', ...]``."""
    return [f'rover{i}' for i in range(n)]


def strip_bounds(bounds: list[float], n: int, i: int) -> list[float]:
    """The ``i``-th of ``n`` equal strips along x of ``bounds`` ``[xmin, xmax, ymin, ymax]`` (m), same layout."""
    xmin, xmax, ymin, ymax = bounds
    width = (xmax - xmin) / n
    return [xmin + i * width, xmin + (i + 1) * width, ymin, ymax]


def budget_share(total: int, n: int, i: int) -> int:
    """Rover ``i``'s share of ``total`` measurements over ``n`` rovers (the first ``total % n`` take one more)."""
    return total // n + (i < total % n)


def team_parameters(params: dict[str, dict[str, Any]], n: int, i: int, *, spacing: float = 10.0,
                    sharing: bool = True, partition: bool = False) -> dict[str, dict[str, Any]]:
    """Rover ``i``'s node parameters from the mission's: its start (``spacing`` m apart along x, centred on the
    configured start; the localisers' initial estimates with it), its simulation seed, and, without sharing, its
    share of ``max_measurements`` and its planner seed (``seed + i``); with ``partition`` its strip of the
    search bounds. Sections missing from ``params`` (e.g. no ``explorer``: a launch file's simulated rovers) are
    left out."""
    out = {node: dict(v) for node, v in params.items()}
    dx = (i - (n - 1) / 2.0) * spacing
    sim = out['sim_rover']
    sim['initial_x'] = float(sim['initial_x']) + dx
    sim['seed'] = (int(sim['seed']) + SEED_STRIDE * i) % 2 ** 31
    for node in ('ekf', 'particle_filter'):
        if node in out and 'initial_x' in out[node]:
            out[node]['initial_x'] = float(out[node]['initial_x']) + dx
    if 'particle_filter' in out and 'seed' in out['particle_filter']:
        out['particle_filter']['seed'] = (int(out['particle_filter']['seed']) + SEED_STRIDE * i) % 2 ** 31
    ex = out.get('explorer', {})
    if ex and not sharing:
        ex['max_measurements'] = budget_share(int(ex['max_measurements']), n, i)
        ex['seed'] = int(ex['seed']) + i
    if ex and partition:
        ex['search_bounds'] = strip_bounds(list(ex['search_bounds']), n, i)
    return out


class RoverView:
    """What one rover's measurement cycle sees of the team's planner: the planner itself (every attribute not
    defined here is the planner's), except that

    - :meth:`suggest` decides with the other rovers' current targets pending, from this rover's :attr:`position`,
      and records the rover with the decision;
    - :meth:`observe` hands the measurement to :meth:`Team.merge` with this rover's name and next sequence number;
    - :attr:`n` is the planner's (the team's measurements), so every rover ends once the team's budget is reached,
      and a rover keeps deciding while the other rovers' pending targets would cover the budget (one of them may
      be dropped before it measures; the targets left unmeasured when the budget is reached are abandoned);
    - :attr:`start` and :meth:`set_start` are this rover's (the planner's start is the first rover's);
    - there is no resumed target (teams do not resume in phase 1).

    Attributes:
        name: the rover's name.
        target: ``(d,)`` the target it is driving to and has not measured yet, or None.
        decision: the planner's :class:`~uncertain_bo.planner.Decision` of that target.
        pending_at_decision: how many other rovers' targets were pending when it was decided.
        measurements_at_decision: how many measurements the planner held when it was decided.
    """

    def __init__(self, team: 'TeamPlanner', name: str, planner: Planner):
        self._team, self.name, self._planner = team, name, planner
        self._start: Tensor | None = None
        self._last_location: Tensor | None = None
        self.seq = 0
        self.target: Tensor | None = None
        self.decision: Decision | None = None
        self.pending_at_decision = self.measurements_at_decision = 0

    def __getattr__(self, name: str) -> Any:
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._planner, name)

    @property
    def planner(self) -> Planner:
        return self._planner

    @property
    def start(self) -> Tensor | None:
        return self._start

    def set_start(self, position: Tensor) -> None:
        """This rover's start ``(d,)``; the planner's too when none is set (it orders the planner's design)."""
        self._start = torch.as_tensor(position, dtype=DTYPE).reshape(-1)
        if self._planner.start is None and self._planner.n == 0 and not self._planner.decisions:
            self._planner.set_start(self._start)

    @property
    def position(self) -> Tensor:
        """``(d,)`` where this rover believes it is: the mean of its latest location distribution, else its start,
        else the planner's position."""
        if self._last_location is not None:
            return self._last_location
        return self._start if self._start is not None else self._planner.position

    @property
    def resumed_target(self) -> None:
        return None

    def take_resumed_target(self) -> None:
        return None

    def suggest(self) -> Tensor:
        """The rover's next target ``(d,)``: decided by the planner with the other rovers' targets pending and the
        travel cost from :attr:`position` (see :meth:`~uncertain_bo.planner.Planner.suggest`)."""
        pending = self._team.pending(exclude=self.name, planner=self._planner)
        if not self._team.pending_targets:
            pending = pending[:0]          # the ablation: as if no other rover were on its way
        self.measurements_at_decision = self._planner.n
        target = self._planner.suggest(pending=pending if len(pending) else None, position=self.position,
                                       rover=self.name)
        self.target, self.decision, self.pending_at_decision = target, self._planner.decisions[-1], len(pending)
        return target

    def observe(self, target: Tensor | None, location: LocationDistributions, y: float,
                reading_variance: float = 0.0, **meta: Any) -> int:
        """Hand one measurement (or en-route reading, ``target`` None) to :meth:`Team.merge` with this rover's next
        sequence number; returns the planner's index. Raises what :meth:`~uncertain_bo.planner.Planner.observe`
        raises (the sequence number is then not used)."""
        index = self._team.merge(self.name, self.seq, target, location, y, reading_variance, **meta)
        self.seq += 1
        self._last_location = location.mean.reshape(-1).to(DTYPE)
        if target is not None:
            self.target = None
        return index


class TeamPlanner:
    """The planner's side of a team: the rovers' :class:`RoverView` s of their planner(s), each measurement stored
    once (:meth:`merge`), the targets pending (:meth:`pending`), rovers dropped (:meth:`drop`) and the team's
    recommendation. Used as is by the ROS node ``team_explorer`` and, with the simulation around it, by
    :class:`Team`.

    Args:
        pending_targets: decide with the other rovers' targets pending (True); False is the ablation that decides as
            if no other rover were on its way.

    Attributes:
        views: rover name -> its :class:`RoverView`, in the order the rovers were added.
        planners: the distinct planners of the rovers (one when they share it).
        dropped: names of the rovers dropped, in order.
        duplicates: measurements delivered again and merged once.
    """

    def __init__(self, *, pending_targets: bool = True):
        self.pending_targets = bool(pending_targets)
        self.duplicates = 0
        self.dropped: list[str] = []
        self.planners: list[Planner] = []
        self.views: dict[str, RoverView] = {}
        self._done: dict[str, Callable[[], bool]] = {}
        self._merged: dict[tuple[str, int], int] = {}
        self._latest: dict[int, tuple[Planner, Recommendation]] = {}   # id(planner) -> it, its latest recommendation

    def add_rover(self, name: str, planner: Planner, done: Callable[[], bool] | None = None) -> RoverView:
        """Add rover ``name`` deciding with ``planner``; ``done()`` says whether its mission has ended (its target
        is then no longer pending). Returns its view (hand it to the rover's
        :class:`~uncertain_bo.explorer.Explorer` as its planner).

        Raises:
            ValueError: ``name`` is already in the team.
        """
        if name in self.views:
            raise ValueError(f'rover {name!r} is already in the team')
        view = RoverView(self, name, planner)
        self.views[name] = view
        self._done[name] = done if done is not None else (lambda: False)
        if not any(p is planner for p in self.planners):
            self.planners.append(planner)
        return view

    def active(self, rover: str) -> bool:
        """``rover`` is neither dropped nor done."""
        return rover not in self.dropped and not self._done[rover]()

    def pending(self, exclude: str | None = None, planner: Planner | None = None) -> Tensor:
        """``(p, d)`` the targets rovers are driving to and have not measured (those of ``planner``'s rovers only,
        when given), leaving out ``exclude``, dropped rovers and rovers whose mission ended."""
        targets = [v.target for name, v in self.views.items()
                   if name != exclude and v.target is not None and self.active(name)
                   and (planner is None or v.planner is planner)]
        if targets:
            return torch.stack([t.reshape(-1) for t in targets]).to(DTYPE)
        return torch.zeros(0, self.planners[0].dim, dtype=DTYPE)

    def merge(self, rover: str, seq: int, target: Tensor | None, location: LocationDistributions, y: float,
              reading_variance: float = 0.0, **meta: Any) -> int:
        """Store rover ``rover``'s measurement number ``seq`` (``target`` None: an en-route reading) in its planner,
        exactly once: a ``(rover, seq)`` merged before is not stored again (counted in :attr:`duplicates`; its
        index is returned), whenever it arrives. The journal records carry ``rover`` and ``seq``.

        Returns:
            The planner's index of the measurement (of the en-route reading among en-route readings).

        Raises:
            KeyError: an unknown rover.
            InvalidObservationError: what :meth:`~uncertain_bo.planner.Planner.observe` refuses (nothing stored).
        """
        if rover not in self.views:
            raise KeyError(f'unknown rover {rover!r}; the team has {", ".join(self.views)}')
        key = (rover, int(seq))
        if key in self._merged:
            self.duplicates += 1
            log.info('%s: measurement %d delivered again: already merged, not stored twice', rover, seq)
            return self._merged[key]
        index = self.views[rover].planner.observe(target, location, y, reading_variance, rover=rover,
                                                  seq=int(seq), **meta)
        self._merged[key] = index
        return index

    def drop(self, rover: str, reason: str = 'stopped reporting') -> None:
        """Take ``rover`` out of the team: its pending target is released, it gets no more targets; what it
        measured stays in the model. Dropping a dropped rover does nothing.

        Raises:
            KeyError: an unknown rover.
        """
        view = self.views[rover]
        if rover in self.dropped:
            return
        self.dropped.append(rover)
        released, view.target = view.target, None
        log.warning('%s dropped (%s)%s; %d rover(s) go on', rover, reason,
                    '' if released is None else f': its target ({released[0]:.1f}, {released[1]:.1f}) is released',
                    sum(name not in self.dropped for name in self.views))

    def record(self, rover: str, rec: Recommendation) -> Recommendation:
        """Note ``rec``, the recommendation of ``rover``'s planner after its measurement; returns the team's."""
        planner = self.views[rover].planner
        self._latest[id(planner)] = (planner, rec)
        return self.recommend()

    def recommend(self) -> Recommendation:
        """The team's recommendation: the shared planner's latest, or without sharing the rovers' latest
        recommendation with the highest predicted robust value.

        Raises:
            RuntimeError: no measurement yet.
        """
        return self._best()[1]

    def recommending_planner(self) -> Planner:
        """The planner whose recommendation is the team's (:meth:`recommend`).

        Raises:
            RuntimeError: no measurement yet.
        """
        return self._best()[0]

    def _best(self) -> tuple[Planner, Recommendation]:
        if not self._latest:
            raise RuntimeError('nothing to recommend before the first measurement')
        return max(self._latest.values(), key=lambda pr: pr[1].mean)


@dataclass
class _Member:
    name: str
    view: RoverView
    explorer: Explorer
    host: MissionHost
    loop: RoverLoop
    world: SimWorld
    fails_at: float = math.inf        # simulated time at which it stops reporting (a test's or bench's failure)
    last_report: float = 0.0          # simulated time of its last message

    @property
    def done(self) -> bool:
        return self.explorer.state is State.DONE


@dataclass
class TeamResult:
    """Outcome of a team mission.

    Attributes:
        planners: the planner(s): one when the team shares its model, one per rover otherwise.
        measurements: ``(rover, Measurement)`` in the order they were stored.
        recommendations: the team's recommendation after each measurement.
        sim_time: the team's mission time: simulated time until the last rover finished (s).
        wall_time: wall-clock duration of the simulation (s).
        completed: every rover that was not dropped finished its mission (budget reached or spent).
        dropped: names of the rovers dropped (silent for ``silence_timeout``), in order.
        duplicates: measurements delivered again and merged once (:meth:`TeamPlanner.merge`).
        distance: true distance driven per rover (m).
    """

    planners: list[Planner]
    measurements: list[tuple[str, Measurement]]
    recommendations: list[Recommendation]
    sim_time: float
    wall_time: float
    completed: bool
    dropped: list[str]
    duplicates: int
    distance: dict[str, float] = field(default_factory=dict)


class Team(TeamPlanner):
    """N simulated rovers exploring one field, with one shared planner (or one each: the baselines); the planner's
    side is :class:`TeamPlanner`'s.

    Args:
        params: validated node parameters of one mission (:func:`~uncertain_bo.sim.mission.mission_parameters`);
            ``explorer.max_measurements`` is the team's budget (shared across rovers, or split between them without
            sharing).
        rovers: number of rovers N >= 1.
        sharing: one planner for the team (True) or one per rover (independent explorers).
        partition: rover ``i`` explores the ``i``-th of N strips along x of the search bounds (needs
            ``sharing=False``: a shared planner decides in one box).
        spacing: distance between the rovers' starts along x (m).
        silence_timeout: a rover silent for this long (simulated s) is dropped.
        pending_targets: decide with the other rovers' targets pending (True); False is the ablation that decides as
            if no other rover were on its way (the shared model and the rover's position still used).
        field: the true field (default: from ``params['sim_rover']``).
        method: planner method name (overrides ``params['explorer']['method']``).
        execution_noise: the planners' execution-noise model (default from ``execution_noise_std``).
        journal: optional journal path of the shared planner (``sharing=True`` only).
        planner_kwargs: extra :class:`~uncertain_bo.planner.Planner` arguments.

    Raises:
        ValueError: ``rovers < 1``, ``partition`` with ``sharing``, a journal without sharing, a non-positive
            ``silence_timeout``.
    """

    def __init__(self, params: dict[str, dict[str, Any]], *, rovers: int = 2, sharing: bool = True,
                 partition: bool = False, spacing: float = 10.0, silence_timeout: float = 30.0,
                 pending_targets: bool = True,
                 field: Field | None = None, method: str | None = None, execution_noise: ExecutionNoise | None = None,
                 journal=None, planner_kwargs: dict[str, Any] | None = None):
        if not (isinstance(rovers, int) and rovers >= 1):
            raise ValueError(f'rovers must be an integer >= 1, got {rovers!r}')
        if partition and sharing:
            raise ValueError('partition needs sharing=False (a shared planner decides in one search box)')
        if journal is not None and not sharing:
            raise ValueError('a team journal needs sharing=True (independent rovers would need one journal each)')
        if not silence_timeout > 0:
            raise ValueError(f'silence_timeout must be > 0 s, got {silence_timeout}')
        super().__init__(pending_targets=pending_targets)
        self.params, self.sharing, self.silence_timeout = params, sharing, float(silence_timeout)
        self.field = field if field is not None else Field.load(params['sim_rover']['field'],
                                                                extent=params['sim_rover']['field_extent'])
        kwargs = {**({'method': method} if method else {}),
                  **({'execution_noise': execution_noise} if execution_noise is not None else {}),
                  **(planner_kwargs or {})}
        self._measurements: list[tuple[str, Measurement]] = []
        self._recommendations: list[Recommendation] = []
        self._on_measurement: Callable[..., None] | None = None
        self.members: dict[str, _Member] = {}
        shared = planner_from_parameters(params['explorer'], journal=journal, **kwargs) if sharing else None
        for i, name in enumerate(rover_names(rovers)):
            p = team_parameters(params, rovers, i, spacing=spacing, sharing=sharing, partition=partition)
            planner = shared if shared is not None else planner_from_parameters(p['explorer'], **kwargs)
            view = self.add_rover(name, planner, done=lambda name=name: self.members[name].done)
            world = SimWorld(self.field, p['sim_rover'])
            localiser, law = localiser_and_law(p)
            # the rover's start is its localiser's initial estimate (what the explorer would take from the first
            # pose); the first rover's also orders its planner's design and a survey's plan
            view.set_start(torch.as_tensor(localiser.xy, dtype=DTYPE))
            host = MissionHost(lambda m, rec, name=name: self._measured(name, m, rec))
            explorer = Explorer(view, host, p['explorer'])
            loop = RoverLoop(world, localiser, law, explorer, host, p['explorer']['frame_id'])
            self.members[name] = _Member(name, view, explorer, host, loop, world)

    def fail(self, rover: str, at: float) -> None:
        """Make ``rover`` stop reporting at simulated time ``at`` (s): it stops and sends nothing; the team drops it
        ``silence_timeout`` later.

        Raises:
            KeyError: an unknown rover.
        """
        self.members[rover].fails_at = float(at)

    def _measured(self, rover: str, m: Measurement, rec: Recommendation) -> None:
        team_rec = self.record(rover, rec)
        self._measurements.append((rover, m))
        self._recommendations.append(team_rec)
        if self._on_measurement is not None:
            self._on_measurement(rover, m, team_rec)

    # ------------------------------------------------------------ the simulation
    def distance(self) -> float:
        """True distance driven by the whole team so far (m)."""
        return float(sum(m.world.distance_travelled for m in self.members.values()))

    def run(self, *, max_sim_time: float = 1e5,
            on_measurement: Callable[[str, Measurement, Recommendation], None] | None = None) -> TeamResult:
        """Step every rover on one simulated clock until each one not dropped has finished (or ``max_sim_time``).

        Args:
            max_sim_time: simulated time limit (s).
            on_measurement: called as ``on_measurement(rover, measurement, team recommendation)`` after each stored
                measurement.
        """
        self._on_measurement = on_measurement
        members = list(self.members.values())
        dt = members[0].world.dt
        wall0 = time.perf_counter()
        k = 0
        t = 0.0
        finished_at = 0.0
        while t <= max_sim_time:
            running = [m for m in members if self.active(m.name)]
            if not running:
                break
            for m in running:
                if t >= m.fails_at:          # silent: not stepped, nothing reported
                    if t - m.last_report >= self.silence_timeout:
                        self.drop(m.name, f'silent for {t - m.last_report:.0f} s')
                    continue
                m.last_report = t
                if m.loop.advance():
                    finished_at = max(finished_at, t)
            k += 1
            t = k * dt
        alive = [m for m in members if m.name not in self.dropped]
        completed = bool(alive) and all(m.done for m in alive)
        return TeamResult(list(self.planners), list(self._measurements), list(self._recommendations),
                          max(finished_at, self._last_measurement_time()), time.perf_counter() - wall0, completed,
                          list(self.dropped), self.duplicates,
                          {m.name: float(m.world.distance_travelled) for m in members})

    def _last_measurement_time(self) -> float:
        return max((float(m.reading.stamp) for _, m in self._measurements), default=0.0)

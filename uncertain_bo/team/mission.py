"""Several rovers, one map: a team of simulated rovers exploring one field with one shared model (issue 23, phase 1).

Each rover runs the explorer's measurement cycle (:class:`~uncertain_bo.explorer.Explorer`: drive, dwell, pair a
reading with the pose estimate nearest in time) on its own simulated rover, localiser and pure-pursuit controller
(:class:`~uncertain_bo.sim.mission.RoverLoop`, the in-process mission's step); all of them step on one simulated
clock. What they share is the :class:`~uncertain_bo.planning.planner.Planner`: every rover's measurement (its location
distribution with its own pose covariance, and its reading) enters one GP and one journal, and a rover that finishes
a measurement gets its next target decided by that planner with the other rovers' current targets as pending ones
(``suggest(pending=..., position=..., rover=...)``: GP-BUCB's hallucinated readings at the pending targets for a UCB
method, no target within ``pending_radius`` of a pending one, the travel cost and the initial design's tour from *its*
position; before the first measurement one design target per rover, the design grown when the rovers outnumber it).

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

The cost is a single point of failure (the planner's host, typically the base station), which the journal covers:
**a restarted team resumes its journal** (:mod:`uncertain_bo.team.journal`, on the planner's own resume: damaged
lines skipped and counted, indices never reused). Every measurement is in the model once; each rover gets back its
pending target (decided, not yet measured), drives there and measures before deciding anew; its ``seq`` numbers
on and the journaled ``(rover, seq)`` keys are merged already, so a measurement re-sent across the restart is
stored once; a rover the journal names that is not in the restarted team has its pending target released
(logged). **A rover can join mid-mission** (:meth:`TeamPlanner.add_rover` at any time, :meth:`Team.join` in the
simulation): its first target is decided with the others' pending, its measurements enter the one model.

The planner's side — :meth:`merge`, :meth:`pending`, :meth:`drop`, joining, resuming, the team's recommendation — is
:class:`TeamPlanner` (:mod:`uncertain_bo.team.planner`), shared by the in-process :class:`Team` (here the link is a
method call that never loses a message, and a failure is a rover going silent) and the ROS node ``team_explorer``
(:mod:`uncertain_bo.ros.team_explorer`: one explorer node serving N namespaced rovers over DDS).

**Baselines in the same loop.** ``sharing=False`` gives every rover its own planner (N independent explorers, each
with its share of the measurement budget and its own seed), and ``partition=True`` gives rover ``i`` the ``i``-th of
N equal strips of the search box along x (N lawnmowers on a partition of the area). Without sharing the team's
recommendation is the rovers' recommendation with the highest predicted robust value.

Rovers start ``spacing`` metres apart along x, centred on the configured start (``sim_rover.initial_x/y``; a team
of one starts there, and its records equal the single-rover mission's), rover ``i`` with simulation seed
``seed + 7919 i`` (rover 0: the mission's own seed); a rover joining is the next ``i``.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..distributions import DTYPE, ExecutionNoise
from ..explorer import Explorer, Measurement, State, TravelBudget, planner_from_parameters
from ..planning.planner import Planner, Recommendation
from ..sim.field import Field
from ..sim.mission import MissionHost, RoverLoop, localiser_and_law
from ..sim.world import SimWorld
from .planner import RoverView, TeamPlanner

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

    Example:
        >>> from uncertain_bo.sim.mission import mission_parameters
        >>> start = {'initial_x': 30.0, 'initial_y': 30.0}
        >>> explorer = {'max_measurements': 2, 'n_initial': 2, 'refit_every': 0}    # fixed hyperparameters: fast
        >>> params = mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
        ...                              'ekf': start, 'explorer': explorer})
        >>> result = Team(params, rovers=2).run()
        >>> result.completed, len(result.planners), len(result.measurements), result.dropped, result.duplicates
        (True, 1, 2, [], 0)
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
        journal: optional journal path of the shared planner (``sharing=True`` only). An existing journal of a team
            is resumed: its measurements are in the model, each rover it names and the team has gets its pending
            target back and numbers on, the others' targets are released (:class:`TeamPlanner`).
        planner_kwargs: extra :class:`~uncertain_bo.planning.planner.Planner` arguments.

    Raises:
        ValueError: ``rovers < 1``, ``partition`` with ``sharing``, a journal without sharing, a non-positive
            ``silence_timeout``.

    Example:
        Two simulated rovers on a 60 m field share one planner and a budget of two measurements:

        >>> from uncertain_bo.sim.mission import mission_parameters
        >>> start = {'initial_x': 30.0, 'initial_y': 30.0}
        >>> explorer = {'max_measurements': 2, 'n_initial': 2, 'refit_every': 0}    # fixed hyperparameters: fast
        >>> params = mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
        ...                              'ekf': start, 'explorer': explorer})
        >>> team = Team(params, rovers=2)
        >>> list(team.views), len(team.planners)
        (['rover0', 'rover1'], 1)
        >>> team.run().planners[0].n
        2
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
        self._spacing, self._partition, self._n0 = spacing, partition, rovers
        self._joins: list[tuple[float, str]] = []       # (simulated time, rover name) of rovers still to join
        self._shared = planner_from_parameters(params['explorer'], journal=journal, **kwargs) if sharing else None
        self._kwargs = kwargs
        for name in rover_names(rovers):
            self._add_member(name)
        self.release_absent()

    def _add_member(self, name: str, t: float = 0.0) -> _Member:
        """Rover ``name`` (the ``i``-th member: ``i`` orders its start and seed, :func:`team_parameters` with the
        team's initial size, so a rover joining starts beyond the others) with its simulation, localiser,
        controller and measurement cycle; ``t``: the team's simulated time (s) it joins at."""
        i, n = len(self.members), self._n0
        p = team_parameters(self.params, n, i, spacing=self._spacing, sharing=self.sharing,
                            partition=self._partition)
        planner = self._shared
        if planner is None:
            planner = planner_from_parameters(p['explorer'], **self._kwargs)
        view = self.add_rover(name, planner, done=lambda: self.members[name].done)
        world = SimWorld(self.field, p['sim_rover'])
        localiser, law = localiser_and_law(p)
        # the rover's start is its localiser's initial estimate (what the explorer would take from the first
        # pose); the first rover's also orders its planner's design and a survey's plan
        view.set_start(torch.as_tensor(localiser.xy, dtype=DTYPE))
        host = MissionHost(lambda m, rec: self._measured(name, m, rec))
        explorer = Explorer(view, host, p['explorer'],    # its own budget totals
                            budget=TravelBudget.resumed(p['explorer'], self.rover_records(name)))
        loop = RoverLoop(world, localiser, law, explorer, host, p['explorer']['global_frame'])
        member = self.members[name] = _Member(name, view, explorer, host, loop, world, last_report=t)
        return member

    def join(self, at: float, name: str | None = None) -> str:
        """Have a rover join the team at simulated time ``at`` (s; before or during :meth:`run`): it starts
        ``spacing`` beyond the last rover's start, its simulation clock starts when it joins, its first target is
        decided with the other rovers' pending ones and its measurements enter the shared planner. Returns its
        name (default ``roverI``, ``I`` the next index).

        Raises:
            ValueError: without sharing (the budget is split at the start), or ``name`` already in the team.
        """
        if not self.sharing:
            raise ValueError('a rover can join a sharing team only (without sharing the budget was split)')
        name = name if name is not None else f'rover{len(self.members) + len(self._joins)}'
        if name in self.members or any(name == n for _, n in self._joins):
            raise ValueError(f'rover {name!r} is already in the team')
        self._joins.append((float(at), name))
        return name

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
            for at, name in [j for j in self._joins if j[0] <= t]:
                self._joins.remove((at, name))
                members.append(self._add_member(name, t))
                log.info('%s joins the team at t = %.1f s', name, t)
            running = [m for m in members if self.active(m.name)]
            if not running and not self._joins:
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

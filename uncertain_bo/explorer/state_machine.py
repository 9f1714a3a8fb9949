"""The measurement cycle: the explorer's states and what moves it from one to the next.

::

    WAITING_FOR_POSE -> DECIDING -> DRIVING -> DWELLING -> MEASURING -> DECIDING ... -> DONE
                 | RELOCALISING -> DRIVING  (relocalise_kappa: to a fix source, or surfacing, first)
                                       | goal_timeout: stop and measure where the rover is
                                                                 | reading_timeout: retry, then skip
    any state but DONE -> PAUSED (localisation diverged, or the journal cannot be written: stop)
                       -> DRIVING to the same target (recovered)

:class:`Explorer` is this module's cycle (:meth:`Explorer.tick`, inputs, driving) plus one part per stage, each
in the module named after it:

- **Deciding** (:mod:`~uncertain_bo.explorer.deciding`): targets come from the planner, which keeps them in the
  search bounds. With a ``decider`` executor the planner decides on a worker thread while inputs keep arriving
  (the ROS node's diagnostics keep going).
- **En-route readings** (:mod:`~uncertain_bo.explorer.en_route`, ``en_route_spacing > 0``): readings taken while
  driving, stored in the GP but not as measurements.
- **Measuring** (:mod:`~uncertain_bo.explorer.measuring`): the readings of the measuring window paired with pose
  estimates; a target that cannot be measured is skipped and becomes a keep-out zone.
- **Pausing** (:mod:`~uncertain_bo.explorer.pausing`): on diverged localisation or a journal that cannot be
  written (storage faults) the rover stops and no measurement is taken; the same target again once recovered.
- **Commands** (:mod:`~uncertain_bo.explorer.commands`): every goal and stop leaves through one place that keeps
  the invariant: goals inside ``search_bounds``, "hold here" stops inside ``search_bounds`` + ``area_margin`` at
  the trusted position (never a diverged or rejected estimate), whatever the inputs.
- **The end** (:mod:`~uncertain_bo.explorer.mission_end`) comes with ``max_measurements`` or a budget
  (``max_distance``, ``max_mission_time``: :mod:`~uncertain_bo.explorer.budget`), whichever is first;
  :attr:`Explorer.done_reason` says which. Raising a limit at run time continues the mission.
- **Re-localising** (:mod:`~uncertain_bo.explorer.relocalising`, ``relocalise_kappa > 0``): before a new target
  is sent, a position std large against the model's lengthscale sends the rover to a fix source within the detour
  budget, or asks for the surfacing action, first.
- **Revised trajectories** (:mod:`~uncertain_bo.explorer.revisions`): :meth:`Explorer.on_revised_trajectory`
  re-places stored readings at the localiser's revised past poses (a smoother after a fix, a loop closure), in any
  stage.
- **Restarts:** a planner resumed from a journal whose last decision has no observation yet hands that
  target back (:meth:`~uncertain_bo.planner.Planner.take_resumed_target`); the explorer re-sends it as the
  goal instead of deciding again, so a crash mid-drive costs neither a measurement nor a decision.
- **Files:** every measurement, the recommendation after it and every run-time parameter change go to the
  planner's journal (if it has one); the final result to ``result_file`` (if given:
  :mod:`~uncertain_bo.explorer.result_file`).

The stages (:class:`~uncertain_bo.explorer.states.State`) and what the explorer hands its host
(:class:`~uncertain_bo.explorer.outputs.ExplorerOutputs`, :class:`~uncertain_bo.explorer.outputs.Measurement`)
have their own modules and are importable from here too.
"""
from __future__ import annotations

import logging
from collections import deque
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..distributions import DTYPE
from ..planner import Planner
from .budget import TravelBudget
from .commands import Commands
from .deciding import Deciding
from .en_route import EnRoute
from .goal_resend import GoalResend
from .inputs import InputStreams, PoseEstimate, Reading, position_trace
from .location_policy import LocationPolicy
from .measuring import Measuring
from .mission_end import LIMITS, MissionEnd
from .outputs import ExplorerOutputs, Measurement
from .parameters import RESUME_CHECKED
from .pausing import JOURNAL_RETRY_PERIOD, Pausing
from .relocalising import Relocalising
from .result_file import ResultFile, execution_noise_summary
from .revisions import HELD_TRAJECTORIES, Revising
from .states import State

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'Measurement', 'execution_noise_summary', 'LIMITS',
           'JOURNAL_RETRY_PERIOD']

log = logging.getLogger(__name__)


@dataclass
class Explorer(Deciding, EnRoute, Measuring, Pausing, MissionEnd, ResultFile, Commands, Revising, Relocalising):
    """Measurement cycle around a :class:`~uncertain_bo.planner.Planner`.

    The ROS node (:mod:`uncertain_bo.ros.explorer`) and the in-process mission (:mod:`uncertain_bo.sim.mission`)
    drive it through :meth:`on_pose`, :meth:`on_reading` and :meth:`tick`, and receive its actions through an
    :class:`ExplorerOutputs` implementation.

    Args:
        planner: the planner (its journal, if any, receives every measurement, the recommendation after it and
            every run-time parameter change).
        outputs: host callbacks.
        params: validated :data:`~uncertain_bo.explorer.parameters.EXPLORER_PARAMS` values. The dict is read
            live: a host that updates it (run-time parameter changes) calls :meth:`apply_parameters`.
        decider: where decisions run. None: inside :meth:`tick` (the caller waits for it). An executor
            (e.g. a one-thread ``ThreadPoolExecutor``): ``planner.suggest`` runs there while :meth:`tick`,
            :meth:`on_pose` and :meth:`on_reading` keep working (state stays DECIDING until it is done), so a
            host can keep publishing diagnostics during a long decision. The host owns the executor.
        result_file: where the final result is written as JSON when the mission ends (None: not written);
            written atomically (a crash leaves the old file or the new one).

    Attributes:
        state: current stage.
        inputs: the validated pose and reading buffers (:class:`~uncertain_bo.explorer.inputs.InputStreams`).
        locations: the location policy (:class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).
        budget: distance driven and mission time (:class:`~uncertain_bo.explorer.budget.TravelBudget`).
        target: current target ``(2,)`` or None.
        goal_reason: why the current goal was sent: ``'new'`` (a fresh decision), ``'resumed'`` (the
            journal's pending decision after a restart), ``'after pause'`` or ``'resent'`` (the controller was not
            seen to act on it: :mod:`~uncertain_bo.explorer.goal_resend`).
        last_decision_wall_time: ``time.time()`` of the last decision (None before the first).
        paused_reason: why the explorer is paused (None unless :attr:`state` is PAUSED): localisation diverged
            and/or the journal cannot be written (both reasons, ``'; '``-joined, when both hold).
        done_reason: why the mission ended (None until it does).
        goal_timeouts: how many goals timed out (measured where the rover was).
        skipped_targets: targets of this run that could not be measured (each became a keep-out zone).
    """

    planner: Planner
    outputs: ExplorerOutputs
    params: dict[str, Any]
    decider: Executor | None = None
    result_file: str | Path | None = None
    state: State = field(default=State.WAITING_FOR_POSE, init=False)
    target: np.ndarray | None = field(default=None, init=False)

    def __post_init__(self):
        self.inputs = InputStreams(self.params, lambda: self.state is State.MEASURING)
        self.locations = LocationPolicy(self.planner, self.params)
        journal = self.planner.journal_file
        self.goal_resend = GoalResend(self.params)
        self.budget = TravelBudget.resumed(self.params, [r for r in journal.records if r.get('type') in (
            'observation', 'en_route')] if journal is not None else [])
        self._goal_time = self._dwell_end = self._measure_start = self._stop_start = 0.0
        self._timed_out = False
        self._retries = 0
        self._last_now: float | None = None
        self._paused_from: State | None = None
        self._pause_causes: dict[str, str] = {}        # 'localisation' / 'journal' -> reason, while paused
        self._journal_retry_at: float | None = None    # host time of the last journal retry while faulted
        self.goal_reason = 'new'
        self.last_decision_wall_time: float | None = None
        self.paused_reason: str | None = None
        self.done_reason: str | None = None
        self.goal_timeouts = 0
        self.skipped_targets = 0
        self._consecutive_skips = 0
        self._decision: Future | None = None
        # a stored measurement whose recommendation (and the GP fit it brings) runs on the decider
        self._recommending: tuple[Measurement, Future] | None = None
        self._pending_changes: dict[str, Any] = {}
        self._unsent: np.ndarray | None = None      # a decided target a budget did not let us send
        self._done_limits: tuple | None = None
        self._finish_reported = False
        self._en_route_from: np.ndarray | None = None   # where the last reading was stored (en-route spacing)
        self._en_route_due: float | None = None        # stamp from which an en-route reading is due
        self._held_trajectories: deque = deque(maxlen=HELD_TRAJECTORIES)   # revisions waiting for the decider
        self._init_relocalising()
        self._log_resume()
        if self.planner.n >= self.params['max_measurements']:
            self._end(f"max_measurements = {self.params['max_measurements']} reached")

    def _log_resume(self) -> None:
        """Say what a resumed journal brought (and which of its parameters differ from this run's)."""
        planner, journal = self.planner, self.planner.journal_file
        if journal is None or not (planner.n or planner.decisions):
            return
        pending = planner.resumed_target
        log.info('resumed %d measurements from %s%s', planner.n, journal.path,
                 f'; target {planner.n + 1} ({pending[0]:.2f}, {pending[1]:.2f}) was decided before the restart '
                 'and is sent again' if pending is not None else '')
        before = journal.header.get('parameters') or {}
        changed = [k for k in RESUME_CHECKED if k in before and before[k] != self.params[k]]
        if changed:
            log.warning('resuming a journal written with different %s',
                        ', '.join(f'{k} ({before[k]} then, {self.params[k]} now)' for k in changed))
        damage = planner.journal_damage
        if damage['records_skipped'] or damage['records_missing']:
            log.warning('the journal was damaged: %d record(s) skipped, %d missing (%s); the mission goes on without '
                        'them', damage['records_skipped'], damage['records_missing'], '; '.join(damage['problems'][:3]))
        if self.budget.distance or self.budget.elapsed(0.0):
            log.info('budgets so far: %.1f m driven, %.1f s of mission time', self.budget.distance,
                     self.budget.elapsed(0.0))

    # ------------------------------------------------------------ views
    @property
    def rejected(self):
        """Rejected inputs by category (``'pose: stale stamp'``, ...); the set of keys is bounded."""
        return self.inputs.rejected

    @property
    def received(self):
        """Counts of ``'poses'`` and ``'readings'`` handed in."""
        return self.inputs.received

    @property
    def last_reason(self) -> str | None:
        """The most recent rejection (or skipped target) with its detail (None if none)."""
        return self.inputs.last_reason

    @last_reason.setter
    def last_reason(self, value: str | None) -> None:
        self.inputs.last_reason = value

    @property
    def latest_pose(self) -> PoseEstimate | None:
        return self.inputs.latest_pose

    @property
    def buffered(self) -> tuple[int, int]:
        """``(poses, readings)`` currently buffered (bounded by ``pose_buffer_size`` and
        :data:`~uncertain_bo.explorer.inputs.READING_QUEUE`)."""
        return len(self.inputs.poses), len(self.inputs.readings)

    @property
    def location_particles(self) -> int:
        """Particles per stored empirical location distribution, 0 when the run stores Gaussians (or has not
        decided yet and will not use particles)."""
        return self.locations.particles

    @property
    def en_route_readings(self) -> int:
        """En-route readings stored so far (the planner's, a resumed journal's included)."""
        return self.planner.n_en_route

    # ------------------------------------------------------------ inputs
    def on_pose(self, pose: PoseEstimate, now: float | None = None) -> bool:
        """Buffer a pose estimate after validation (:meth:`~uncertain_bo.explorer.inputs.InputStreams.add_pose`).
        Returns False (and logs why) if rejected.

        Args:
            pose: the estimate.
            now: the host's clock (same clock as the stamps), s; when given, a pose stamped more than
                ``max_pose_age`` before it is stale and rejected. None skips that check (no valid clock yet).
        """
        if not self.inputs.add_pose(pose, now, self.locations.on_arrival):
            return False     # a rejected pose (a glitch: pose_gate) reaches neither the buffer nor the odometer
        if self.inputs.reanchored:
            self.budget.relocated(pose.xy)      # the localisation moved the rover: not distance driven
        else:
            self.budget.moved_to(pose.xy, position_trace(pose.cov))
        return True

    def on_reading(self, reading: Reading, now: float | None = None) -> bool:
        """Validate a sensor reading and queue it while measuring (ignored in other stages); see
        :meth:`~uncertain_bo.explorer.inputs.InputStreams.add_reading`. Returns False (logged and counted in
        :attr:`rejected`) if rejected.

        Args:
            reading: the reading (stamp in s on the host's clock, value in the sensor's unit).
            now: the host's clock, s (None: no clock yet; the stamp-age checks are skipped).
        """
        return self.inputs.add_reading(reading, now)

    def goal_reached(self, now: float) -> None:
        """The controller reports the current goal reached (Nav2's NavigateToPose succeeded): dwell and measure, as
        on arrival within ``arrival_tolerance``. Ignored unless driving (a late report of an earlier goal)."""
        if self.state is State.DRIVING:
            self._start_dwell(now)

    def goal_failed(self, category: str, detail: str, now: float) -> None:
        """The controller gave up on the current goal (Nav2 rejected or aborted it): the target is skipped like one
        that could not be measured (counted as ``'goal: <category>'``, kept out, a decision follows). Ignored
        unless driving.

        Args:
            category: short fixed text, e.g. ``'rejected by the controller'`` (the counter key).
            detail: the controller's reason (error code and message), for the log and the keep-out record.
            now: the host's clock, s.
        """
        if self.state is not State.DRIVING:
            return
        where = f'({self.target[0]:.2f}, {self.target[1]:.2f})'
        self.rejected[f'goal: {category}'] += 1
        self.last_reason = f'goal {where} {category}: {detail}'
        self.budget.stopped()
        self._stop_start = now
        self._retries = 0
        self._skip(now)

    def reject(self, what: str, category: str, detail: str) -> None:
        """Count and log a rejected input (hosts use it for messages they could not even parse); see
        :meth:`~uncertain_bo.explorer.inputs.InputStreams.reject`."""
        self.inputs.reject(what, category, detail)

    # ------------------------------------------------------------ the cycle
    def tick(self, now: float) -> None:
        """Advance the cycle at time ``now`` (s, same clock as the stamps)."""
        if self._last_now is not None and now < self._last_now - self.params['max_pose_age']:
            shift = now - self._last_now
            self.inputs.throttled_warning('clock backwards', 'clock jumped backwards by %.3f s (simulation '
                                          'reset?): restarting the current stage timers', -shift)
            self._goal_time += shift
            self._dwell_end += shift
            self._measure_start += shift
            self._stop_start += shift
            self.budget.shift(shift)
        if self.state in (State.DRIVING, State.RELOCALISING) and self._last_now is not None:
            self.budget.drove(now - self._last_now)
        self._last_now = now
        if self.state is State.DONE:
            if self._journal_problem(now) is not None:
                return               # the end is reported once the journal holds every record
            self._report_finish()
            if not self._limits_raised(now):
                return
        elif self._stop_for_limits(now):
            return
        if self._check_pause(now):
            return
        self._apply_held_revisions()
        if self.state is State.WAITING_FOR_POSE:
            if self.inputs.poses:
                if self.planner.start is None and self.planner.n == 0:
                    self.planner.set_start(torch.as_tensor(self.inputs.poses[-1].xy, dtype=DTYPE))
                self.budget.start(now)
                self.state = State.DECIDING
        if self.state is State.DECIDING:
            self._decide(now)
        elif self.state is State.DRIVING:
            self._drive(now)
        elif self.state is State.DWELLING:
            if now >= self._dwell_end:
                self.state = State.MEASURING
                self._measure_start = now
                self.inputs.open_window()
        elif self.state is State.MEASURING:
            self._measure(now)
        elif self.state is State.RELOCALISING:
            self._relocalise_tick(now)
        if self.state is not State.DONE and self.journal_fault is not None:
            self._check_pause(now)   # a record of this tick could not be written: stop now, not a tick later

    # ------------------------------------------------------------ driving (the other stages: their modules)
    def _drive(self, now: float) -> None:
        if self.params['en_route_spacing'] > 0:
            self._en_route(now)
        pose = self.latest_pose
        if pose is not None and np.linalg.norm(pose.xy - self.target) <= self.params['arrival_tolerance']:
            self._start_dwell(now)
            return
        if self.goal_resend.due(now, pose.xy if pose is not None else None, self.target):
            self.goal_reason = 'resent'      # the controller has not moved the rover yet: the goal may be lost
            if not self._send_goal(self.target):
                return                       # refused (search_bounds changed meanwhile): stopped, deciding anew
        spent = self.budget.distance_spent()
        if spent is not None or now - self._goal_time > self.params['goal_timeout']:
            where = self._stop()
            if spent is not None:
                log.warning('%s on the way to target (%.2f, %.2f): stopping and measuring where the rover is, '
                            '(%.2f, %.2f), then ending the mission', spent, *self.target, *where)
            else:
                log.warning('target (%.2f, %.2f) not reached within goal_timeout = %.0f s: measuring where the '
                            'rover is, (%.2f, %.2f) (still a valid pair: the location distribution says where)',
                            *self.target, self.params['goal_timeout'], *where)
                self.goal_timeouts += 1
            self._timed_out = True
            self._start_dwell(now)

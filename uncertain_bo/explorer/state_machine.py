"""The measurement cycle: the explorer's states and what moves it from one to the next.

::

    WAITING_FOR_POSE -> DECIDING -> DRIVING -> DWELLING -> MEASURING -> DECIDING ... -> DONE
                                       | goal_timeout: stop and measure where the rover is
                                                                 | reading_timeout: retry, then skip
    any state but DONE -> PAUSED (localisation diverged, or the journal cannot be written: stop)
                       -> DRIVING to the same target (recovered)

- **Measuring** pairs the readings of the measuring window with pose estimates
  (:meth:`~uncertain_bo.explorer.inputs.InputStreams.pair`); a future-stamped reading can never hold up the
  measuring stage, which measures or skips the target within ``reading_timeout`` x (``reading_retries`` + 1).
  A skipped target is reported as "sensor silent" only when no reading arrived at all, else with the reasons
  the readings were refused. It becomes a **keep-out zone** (:mod:`uncertain_bo.keep_out`, radius
  ``keep_out_radius``): journaled, counted in the diagnostics and the result file, and no later decision of any
  method proposes a target in it; ``max_consecutive_skips`` skips in a row end the mission. A skipped attempt
  counts against the time and distance budgets (driven, waited for), not against ``max_measurements``. The
  pair's location distribution follows the method (:class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).
- **Localisation divergence:** when the trace of the newest pose's position covariance exceeds
  ``max_covariance_trace`` the explorer stops the rover and pauses (no measurement is taken); it resumes
  towards the same target once the trace is back below ``RESUME_FRACTION`` of the threshold.
- **Storage faults:** when the journal cannot write (a full disk, EIO, a read-only or vanished run folder:
  :attr:`~uncertain_bo.journal.Journal.fault`) the records stay in memory, in order (the measurement in flight is
  in the planner and its journal record is held), and the explorer pauses as for localisation: it stops the rover,
  logs the reason once, takes no measurement and retries the journal every :data:`JOURNAL_RETRY_PERIOD` s; once
  every held record is written it resumes (the same target again). A mission that ends while records are held
  reports its end (result file, host's ``finished``) only once they are written.
- **En-route readings** (``en_route_spacing > 0``): while driving, once the position estimate is
  ``en_route_spacing`` (straight line) from where the last reading was stored, the first reading stamped after
  that moment is paired with the pose estimate at its stamp (:meth:`~uncertain_bo.explorer.inputs.InputStreams.
  pose_at`, the measurements' pairing rule; refusals are counted under ``'en-route reading: ...'``) and stored
  as an en-route reading (``Planner.observe(None, ...)``): in the GP, not a measurement (``max_measurements``
  counts stops), no target, so not in the learned execution noise. Straight-line spacing rather than path
  length: the estimate's jitter does not add up, and the readings are spread in space, which is what the GP
  learns from. :attr:`Explorer.en_route_readings` counts them; the result file too.
- **The end** comes with ``max_measurements`` or a budget (``max_distance``, ``max_mission_time``:
  :mod:`~uncertain_bo.explorer.budget`), whichever is first; :attr:`Explorer.done_reason` says which. Raising
  a limit at run time continues the mission.
- **Restarts:** a planner resumed from a journal whose last decision has no observation yet hands that
  target back (:meth:`~uncertain_bo.planner.Planner.take_resumed_target`); the explorer re-sends it as the
  goal instead of deciding again, so a crash mid-drive costs neither a measurement nor a decision.
- **Files:** every measurement, the recommendation after it and every run-time parameter change go to the
  planner's journal (if it has one); the final result to ``result_file`` (if given).
- Targets come from the planner, which keeps them in the search bounds. With a ``decider`` executor the
  planner decides on a worker thread while inputs keep arriving (the ROS node's diagnostics keep going).
"""
from __future__ import annotations

import contextlib
import enum
import json
import logging
import math
import os
import time
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

import numpy as np
import torch

from ..distributions import DTYPE, InvalidDistributionError
from ..keep_out import NoAdmissibleTargetError, default_radius
from ..planner import InvalidObservationError, Planner, Recommendation
from .budget import TravelBudget
from .goal_resend import GoalResend
from .inputs import WAIT, InputStreams, PoseEstimate, Reading, position_trace
from .location_policy import LocationPolicy
from .parameters import RESUME_CHECKED, RESUME_FRACTION, update_planner

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'Measurement', 'execution_noise_summary']

log = logging.getLogger(__name__)

#: the parameters that end a mission (a change at run time re-evaluates a finished one)
LIMITS = ('max_measurements', 'max_distance', 'max_mission_time')

#: while the journal cannot write, the explorer retries it at most this often (s, host clock)
JOURNAL_RETRY_PERIOD = 1.0

#: the stages in which the rover may be moving or holding a goal: a pause from them stops it
_ACTIVE = ('driving', 'dwelling', 'measuring', 'deciding')


class State(enum.Enum):
    WAITING_FOR_POSE = 'waiting for pose'
    DECIDING = 'deciding'
    DRIVING = 'driving'
    DWELLING = 'dwelling'
    MEASURING = 'measuring'
    PAUSED = 'paused'
    DONE = 'done'


@dataclass(frozen=True)
class Measurement:
    """A stored measurement (what went into the planner)."""

    index: int
    target: np.ndarray
    pose: PoseEstimate
    reading: Reading
    timed_out: bool


class ExplorerOutputs(Protocol):
    """What the explorer asks its host (ROS node or in-process runner) to do."""

    def send_goal(self, target: np.ndarray) -> None:
        """Drive to ``target`` ``(2,)`` (map frame, m)."""

    def stop(self, position: np.ndarray) -> None:
        """Cancel the current goal and hold at ``position``."""

    def measured(self, measurement: Measurement, recommendation: Recommendation) -> None:
        """A measurement was stored; ``recommendation`` is the planner's current best target."""

    def finished(self, recommendation: Recommendation) -> None:
        """All measurements done (or a budget spent: :attr:`Explorer.done_reason`)."""


def execution_noise_summary(planner: Planner) -> dict[str, Any] | None:
    r"""The planner's current Gaussian execution-noise model :math:`\hat\Sigma` as std along x and y (m) and
    correlation, with whether it is learned online (:meth:`~uncertain_bo.planner.Planner.
    learned_execution_covariance`) or configured; None for a non-Gaussian model.

    Returns:
        ``{'source': 'learned' | 'configured', 'std': [sx, sy], 'correlation': rho, 'covariance': [[...]]}``.
    """
    learned = planner.learned_execution_covariance()
    cov = learned if learned is not None else getattr(planner.execution_noise, 'covariance', None)
    if cov is None or tuple(cov.shape) != (2, 2):
        return None
    c = cov.detach().cpu().double().numpy()
    sx, sy = math.sqrt(max(c[0, 0], 0.0)), math.sqrt(max(c[1, 1], 0.0))
    rho = float(c[0, 1] / (sx * sy)) if sx > 0 and sy > 0 else 0.0
    return {'source': 'learned' if learned is not None else 'configured', 'std': [sx, sy], 'correlation': rho,
            'covariance': c.tolist()}


@dataclass
class Explorer:
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

    @property
    def journal_fault(self) -> str | None:
        """Why the journal cannot write and how many records it holds in memory meanwhile (``'journal not
        writable: [Errno 28] No space left on device: ...; 2 record(s) held in memory'``), None when every record
        is on disk (or the planner has no journal)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            return None
        return f'{journal.fault}; {journal.held} record(s) held in memory'

    @property
    def deciding_in_background(self) -> bool:
        """True while a decision runs on :attr:`decider` (the planner must not be changed meanwhile)."""
        return any(f is not None and not f.done() for f in (self._decision, self._recommendation_future))

    @property
    def _recommendation_future(self) -> Future | None:
        return self._recommending[1] if self._recommending is not None else None

    def _background_idle(self) -> bool:
        """No decision or recommendation is pending on the decider (the planner may be changed)."""
        return self._decision is None and self._recommending is None

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
        if self.state is State.DRIVING and self._last_now is not None:
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
        if self.state is not State.DONE and self.journal_fault is not None:
            self._check_pause(now)   # a record of this tick could not be written: stop now, not a tick later

    def _limits(self) -> tuple:
        return tuple(self.params[k] for k in LIMITS)

    def _limits_raised(self, now: float) -> bool:
        """Finished, but a limit changed at run time and none is reached any more: continue (True)."""
        if self._done_limits is None or self._limits() == self._done_limits:
            return False
        if self.planner.n >= self.params['max_measurements'] or self.budget.spent(now):
            self._done_limits = self._limits()
            return False
        log.info('limits raised (%s): continuing', ', '.join(f'{k} = {self.params[k]}' for k in LIMITS))
        self.done_reason = None
        self._finish_reported = False
        self._done_limits = None
        self.state = State.WAITING_FOR_POSE
        return True

    def _stop_for_limits(self, now: float) -> bool:
        """End the mission when ``max_measurements`` is reached (lowered at run time) or the time budget is
        spent, and, before a decision, when the distance budget is. Returns True if it ended."""
        if self.planner.n >= self.params['max_measurements'] and self._recommending is None:
            self._finish(f"max_measurements = {self.params['max_measurements']} reached", stop=True)
            return True
        reason = self.budget.time_spent(now)
        if reason is None and self.state in (State.WAITING_FOR_POSE, State.DECIDING) and self._background_idle():
            reason = self.budget.distance_spent()
        if reason is not None:
            self._finish(reason, stop=True)
            return True
        return False

    def apply_parameters(self, changed: Mapping[str, Any]) -> None:
        """Make run-time changes of :attr:`params` (already stored there) take effect: planner settings through
        :func:`~uncertain_bo.explorer.parameters.update_planner` (β, refit period, optimiser, execution noise,
        search bounds), the pose buffer size, and a journal record of the change. Everything else is read live.
        While a decision runs in the background the planner's settings are changed once it has finished
        (before its target is sent)."""
        journal = self.planner.journal_file
        if journal is not None:
            journal.append({'type': 'parameters', 'changed': dict(changed), 'index': self.planner.n,
                            'wall_time': time.time()})
        self._apply(changed)

    def _apply(self, changed: Mapping[str, Any]) -> None:
        if not self._background_idle():
            self._pending_changes.update(changed)
            log.info('parameters changed while deciding: %s (applied when the decision ends)',
                     ', '.join(f'{k} = {v}' for k, v in changed.items()))
            return
        update_planner(self.planner, self.params, changed)
        if 'pose_buffer_size' in changed:
            self.inputs.resize(self.params['pose_buffer_size'])
        log.info('parameters changed at run time: %s', ', '.join(f'{k} = {v}' for k, v in changed.items()))

    # ------------------------------------------------------------ stages
    def _decide(self, now: float) -> None:
        if self._recommending is not None:
            measurement, future = self._recommending
            if not future.done():
                return              # the recommendation after the last measurement (and its GP fit) runs
            self._recommending = None
            self._after_measurement(measurement, future.result())
            if self._pending_changes:
                changes, self._pending_changes = self._pending_changes, {}
                self._apply(changes)
            return                  # the next tick checks the limits, then decides
        if self._decision is None:
            if self._unsent is not None:       # a budget stopped it; limits were raised since
                target, self._unsent = self._unsent, None
                self._send(target, now)
                return
            resumed = self.planner.take_resumed_target()
            if resumed is not None:
                target, self.goal_reason = resumed.numpy(), 'resumed'
                log.info('resuming the journal\'s pending target %d: (%.2f, %.2f)', self.planner.n + 1, *target)
                self._send(target, now)
                return
            if self.decider is None:
                try:
                    target = self.planner.suggest().numpy()
                except NoAdmissibleTargetError as exc:
                    self._finish(str(exc), stop=False)
                    return
                self.goal_reason = 'new'
                self._send(target, now)
                return
            self._decision = self.decider.submit(self.planner.suggest)
            return
        if not self._decision.done():
            return                  # inputs, timers and diagnostics go on meanwhile
        decision, self._decision = self._decision, None
        try:
            target = decision.result().numpy()  # an exception in the decision propagates as it would inline
        except NoAdmissibleTargetError as exc:
            self._finish(str(exc), stop=False)
            return
        self.goal_reason = 'new'
        if self._pending_changes:
            changes, self._pending_changes = self._pending_changes, {}
            self._apply(changes)
        self._send(target, now)

    def _send(self, target: np.ndarray, now: float) -> None:
        pose = self.latest_pose
        position = pose.xy if pose is not None else self.planner.position.numpy()
        reason = self.budget.unaffordable(now, position, target)
        if reason is not None:
            self._unsent = target
            self._finish(reason, stop=False)
            return
        self.budget.stopped()      # the leg starts here: the odometer's step so far is complete
        self.last_decision_wall_time = time.time()
        self.target = target
        self._goal_time = now
        self._timed_out = False
        self._retries = 0
        self.state = State.DRIVING
        if self._en_route_from is None and pose is not None:
            self._en_route_from = np.asarray(pose.xy, dtype=float).copy()   # en-route spacing counts from here
        self.goal_resend.sent(now, position, target)
        self.outputs.send_goal(target)

    def _drive(self, now: float) -> None:
        if self.params['en_route_spacing'] > 0:
            self._en_route(now)
        pose = self.latest_pose
        if pose is not None and np.linalg.norm(pose.xy - self.target) <= self.params['arrival_tolerance']:
            self._start_dwell(now)
            return
        if self.goal_resend.due(now, pose.xy if pose is not None else None, self.target):
            self.goal_reason = 'resent'      # the controller has not moved the rover yet: the goal may be lost
            self.outputs.send_goal(self.target)
        spent = self.budget.distance_spent()
        if spent is not None or now - self._goal_time > self.params['goal_timeout']:
            where = pose.xy if pose is not None else self.target
            if spent is not None:
                log.warning('%s on the way to target (%.2f, %.2f): stopping and measuring where the rover is, '
                            '(%.2f, %.2f), then ending the mission', spent, *self.target, *where)
            else:
                log.warning('target (%.2f, %.2f) not reached within goal_timeout = %.0f s: measuring where the '
                            'rover is, (%.2f, %.2f) (still a valid pair: the location distribution says where)',
                            *self.target, self.params['goal_timeout'], *where)
                self.goal_timeouts += 1
            self.outputs.stop(where)
            self._timed_out = True
            self._start_dwell(now)

    def _en_route(self, now: float) -> None:
        """Take an en-route reading when one is due (see the module docstring)."""
        pose = self.latest_pose
        if pose is None:
            return
        if self._en_route_from is None:
            self._en_route_from = pose.xy.copy()
        if self._en_route_due is None:
            if np.linalg.norm(pose.xy - self._en_route_from) < self.params['en_route_spacing']:
                return
            self._en_route_due = pose.stamp
        reading = self.inputs.latest_reading
        if reading is None:
            return
        stamp = reading.stamp if reading.stamp is not None else now
        if stamp < self._en_route_due:
            return                                  # the next reading comes later
        paired = self.inputs.pose_at(stamp, now, 'en-route reading')
        if paired is WAIT:
            return
        if paired is None:                          # refused (counted): the next reading is due
            self._en_route_due = math.nextafter(stamp, math.inf)
            return
        self._en_route_due = None
        variance = reading.variance if reading.variance > 0 else float(self.params['reading_noise_std']) ** 2
        meta = {'reading_stamp': stamp, 'pose_stamp': paired.stamp, 'reading_variance': variance,
                'frame_id': paired.frame_id, **self.budget.totals(now)}
        try:
            location = self.locations.location(paired)
            meta['location_source'] = self.locations.describe(paired, location)
            self.planner.observe(None, location, float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:  # defensive: validated on arrival
            self.reject('en-route reading', 'invalid observation', str(exc))
            return
        self.locations.stored(location)
        self._en_route_from = np.asarray(paired.xy, dtype=float).copy()

    def _start_dwell(self, now: float) -> None:
        self.budget.stopped()
        self._stop_start = now
        self.state = State.DWELLING
        self._dwell_end = now + self.params['dwell_time']

    def _measure(self, now: float) -> None:
        pair = self.inputs.pair(now, self._measure_start)
        if pair is not None:
            self._store(*pair, now)
            return
        if self.inputs.readings or now - self._measure_start <= self.params['reading_timeout']:
            return
        if self._retries < self.params['reading_retries']:
            self._retries += 1
            log.warning('no valid reading within reading_timeout = %.1f s; retry %d/%d',
                        self.params['reading_timeout'], self._retries, self.params['reading_retries'])
            self._measure_start = now
            return
        where = f'({self.target[0]:.2f}, {self.target[1]:.2f})'
        received, rejects = self.inputs.window_received, self.inputs.window_rejects
        if received == 0:
            self.rejected['measurement: sensor silent, target skipped'] += 1
            self.last_reason = f'sensor silent at target {where}'
        else:
            why = ', '.join(f'{n} {c}' for c, n in rejects.most_common()) or 'none paired'
            self.rejected['measurement: no usable reading, target skipped'] += 1
            self.last_reason = (f'no usable reading at target {where}: {received} readings '
                                f'arrived but none could be used ({why})')
        self._skip(now)

    def _skip(self, now: float) -> None:
        """The target could not be measured after its retries: keep it out of every later decision
        (:meth:`~uncertain_bo.planner.Planner.add_keep_out`, journaled) and decide anew, or end the mission after
        ``max_consecutive_skips`` in a row. The attempt counts against the time and distance budgets (it was
        driven to and waited for, and its stop joins the mean stop time of the time budget's prediction), not
        against ``max_measurements``, which counts stored measurements."""
        radius = self.params['keep_out_radius'] or default_radius(self.params['execution_noise_std'],
                                                                  self.params['arrival_tolerance'])
        self.planner.add_keep_out(self.target, radius, self.last_reason or 'not measurable')
        self.skipped_targets += 1
        self._consecutive_skips += 1
        self.budget.measured(now - self._stop_start)
        log.warning('%s: skipping it%s; no target within %.2f m of it will be proposed again (%d keep-out zones)',
                    self.last_reason, f' after {self._retries} retries' if self._retries else '', radius,
                    len(self.planner.keep_out))
        limit = self.params['max_consecutive_skips']
        if limit and self._consecutive_skips >= limit:
            self._finish(f'{self._consecutive_skips} targets in a row could not be measured (max_consecutive_skips '
                         f'= {limit}): is the sensor publishing, and is reading_range right? last: '
                         f'{self.last_reason}', stop=False)
            return
        self.state = State.DECIDING

    def _store(self, pose: PoseEstimate, reading: Reading, now: float) -> None:
        # the sensor's own variance when the message carries one, else the configured reading_noise_std²
        variance = reading.variance if reading.variance > 0 else float(self.params['reading_noise_std']) ** 2
        meta = {'reading_stamp': reading.stamp, 'pose_stamp': pose.stamp, 'reading_variance': variance,
                'frame_id': pose.frame_id, 'goal_timed_out': self._timed_out, **self.budget.totals(now)}
        if reading.stamped_on_arrival:
            meta['reading_stamped_on_arrival'] = True
        try:
            location = self.locations.location(pose)
            meta['location_source'] = self.locations.describe(pose, location)
            index = self.planner.observe(torch.as_tensor(self.target, dtype=DTYPE), location,
                                         float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:  # defensive: validated on arrival
            self.reject('measurement', 'invalid observation', str(exc))
            return
        self.locations.stored(location)
        self._consecutive_skips = 0
        self._en_route_from = np.asarray(pose.xy, dtype=float).copy()
        self._en_route_due = None
        self.budget.measured(now - self._stop_start)
        m = Measurement(index, self.target.copy(), pose, reading, self._timed_out)
        if self.decider is not None:
            # the recommendation refits the GP when the schedule says so (seconds): on the decider, so that the
            # host's executor keeps taking poses and readings meanwhile (they would queue up and arrive stale)
            self._recommending = (m, self.decider.submit(self.planner.recommend))
            self.state = State.DECIDING
            return
        self._after_measurement(m, self.planner.recommend())

    def _after_measurement(self, m: Measurement, rec: Recommendation) -> None:
        """Journal the recommendation after measurement ``m``, tell the host, then end or decide next."""
        index = m.index
        journal = self.planner.journal_file
        if journal is not None:
            journal.append({'type': 'recommendation', 'index': index, 'target': rec.target.tolist(),
                            'mean': rec.mean, 'std': rec.std})
        self.outputs.measured(m, rec)
        if self.planner.n >= self.params['max_measurements']:
            self._end(f"max_measurements = {self.params['max_measurements']} reached")
            self._report_finish(rec)
        else:
            self.state = State.DECIDING

    def _end(self, reason: str) -> None:
        self.state = State.DONE
        self.done_reason = reason
        self._done_limits = self._limits()

    def _finish(self, reason: str, stop: bool) -> None:
        pose = self.latest_pose
        if stop and pose is not None and self.state in (State.DRIVING, State.DWELLING, State.MEASURING):
            self.outputs.stop(pose.xy)
        self._end(reason)
        log.info('mission ends: %s', reason)
        self._report_finish()

    def _report_finish(self, rec: Recommendation | None = None) -> None:
        """Write the result file and tell the host, once per end. A mission that a budget ended before its first
        measurement has no recommendation: the result file says so, the host is not called. Work still running
        on the decider is waited for first (the planner is not used from two threads)."""
        if self._finish_reported:
            return
        if self._decision is not None:
            self._decision.exception()           # wait; the decision is journaled, its target is not sent
            self._decision = None
        if self._recommending is not None:
            m, future = self._recommending
            self._recommending = None
            rec = future.result()
            journal = self.planner.journal_file
            if journal is not None:
                journal.append({'type': 'recommendation', 'index': m.index, 'target': rec.target.tolist(),
                                'mean': rec.mean, 'std': rec.std})
            self.outputs.measured(m, rec)
        if self.journal_fault is not None:
            log.error('mission ended (%s) but %s: the end is reported once they are written', self.done_reason,
                      self.journal_fault)
            return                               # tick() retries the journal, then reports
        self._finish_reported = True
        if self.planner.n:
            rec = rec if rec is not None else self.planner.recommend()
        if self.result_file is not None:
            try:
                self._write_result(rec)
            except OSError as exc:               # a full disk at the very end: the journal holds the run
                log.error('could not write the result file %s: %s (the journal holds every measurement)',
                          self.result_file, exc)
        if rec is not None:
            self.outputs.finished(rec)

    def result(self, rec: Recommendation | None) -> dict[str, Any]:
        """The run's result as written to ``result_file``: the recommendation (None before any measurement),
        counts (measurements, en-route readings, rejected inputs), why it ended, distance driven (m), mission time
        (s), the execution-noise model (:func:`execution_noise_summary`) and ``journal_damage``: what resuming the
        journal skipped (:attr:`~uncertain_bo.planner.Planner.journal_damage`: records skipped, records missing,
        the problems by line)."""
        now = self._last_now if self._last_now is not None else 0.0
        return {'recommended_target': rec.target.tolist() if rec is not None else None,
                'predicted_robust_value': rec.mean if rec is not None else None,
                'predicted_std': rec.std if rec is not None else None,
                'measurements': self.planner.n, 'en_route_readings': self.planner.n_en_route,
                'rejected': dict(self.rejected), 'targets_skipped': self.skipped_targets,
                'keep_out_zones': [z.record() for z in self.planner.keep_out.zones],
                'stopped_because': self.done_reason, **self.budget.totals(now),
                'execution_noise': execution_noise_summary(self.planner),
                'journal_damage': self.planner.journal_damage}

    def _write_result(self, rec: Recommendation | None) -> None:
        path = Path(self.result_file)
        tmp = path.with_suffix(path.suffix + '.tmp')
        try:
            tmp.write_text(json.dumps(self.result(rec), indent=2))
            os.replace(tmp, path)  # atomic: a crash leaves the old file or the new one, never half of one
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    def _check_pause(self, now: float) -> bool:
        """Pause while localisation has diverged or the journal cannot write; resume when neither holds.

        Pausing stops the rover (when it may be moving or holding a goal) and logs each cause once; resuming
        re-sends the target of a pause taken on the way to it or at it. Returns True while paused."""
        causes = {k: v for k, v in (('localisation', self._localisation_problem()),
                                    ('journal', self._journal_problem(now))) if v is not None}
        if not causes:
            if self.state is State.PAUSED:
                self._resume(now)
            return False
        for kind, reason in causes.items():
            if kind not in self._pause_causes:
                if kind == 'localisation':
                    log.error('%s: rover stopped, no measurements until it is below %.3g m²', reason,
                              RESUME_FRACTION * self.params['max_covariance_trace'])
                else:
                    log.error('%s: rover stopped, no measurements until the journal can be written (retried every '
                              '%g s)', reason, JOURNAL_RETRY_PERIOD)
        for kind in set(self._pause_causes) - set(causes):
            log.warning('%s recovered; still paused: %s', kind, '; '.join(causes.values()))
        self._pause_causes = causes
        self.paused_reason = '; '.join(causes.values())
        if self.state is not State.PAUSED:
            self._paused_from = self.state
            self.state = State.PAUSED
            pose = self.latest_pose
            if pose is not None and self._paused_from.value in _ACTIVE:
                self.outputs.stop(pose.xy)
        return True

    def _localisation_problem(self) -> str | None:
        """Why localisation stops the mission (newest pose's covariance trace over ``max_covariance_trace``; once
        paused for it, until below ``RESUME_FRACTION`` of it), or None."""
        paused = 'localisation' in self._pause_causes
        pose = self.latest_pose
        if pose is None:
            return self._pause_causes['localisation'] if paused else None
        trace = position_trace(pose.cov)
        limit = self.params['max_covariance_trace']
        if trace <= (RESUME_FRACTION * limit if paused else limit):
            if paused:
                log.warning('localisation recovered (covariance trace %.3g m²)', trace)
            return None
        if paused:
            return self._pause_causes['localisation']
        return (f'localisation diverged: position covariance trace {trace:.3g} m² > '
                f'max_covariance_trace = {limit:g} m²')

    def _journal_problem(self, now: float) -> str | None:
        """Why the journal stops the mission (:attr:`journal_fault`), or None. Retries the held records every
        :data:`JOURNAL_RETRY_PERIOD` s (the first retry a period after the fault was seen)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            self._journal_retry_at = None
            return None
        if self._journal_retry_at is None:
            self._journal_retry_at = now
        elif not 0.0 <= now - self._journal_retry_at < JOURNAL_RETRY_PERIOD:
            self._journal_retry_at = now
            if journal.retry():
                log.warning('journal writable again: every held record written')
                self._journal_retry_at = None
                return None
        return self.journal_fault

    def _resume(self, now: float) -> None:
        """Leave the pause: the same target again (with a fresh goal clock) when the pause was taken on the way
        to it or at it, else start over from waiting for a pose."""
        log.warning('resuming after the pause (%s)', self.paused_reason)
        self.paused_reason = None
        self._pause_causes = {}
        self.inputs.readings.clear()
        pose = self.latest_pose
        if (self.target is not None and pose is not None
                and self._paused_from in (State.DRIVING, State.DWELLING, State.MEASURING)):
            self.goal_reason = 'after pause'
            self.state = State.DRIVING
            self._goal_time = now
            self.goal_resend.sent(now, pose.xy, self.target)
            self.outputs.send_goal(self.target)
        else:
            self.state = State.WAITING_FOR_POSE

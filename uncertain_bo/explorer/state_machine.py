"""The measurement cycle: the explorer's states and what moves it from one to the next.

::

    WAITING_FOR_POSE -> DECIDING -> DRIVING -> DWELLING -> MEASURING -> DECIDING ... -> DONE
                 | RELOCALISING -> DRIVING  (relocalise_kappa: to a fix source, or surfacing, first)
                                       | goal_timeout: stop and measure where the rover is
                                                                 | reading_timeout: retry, then skip
    any state but DONE -> PAUSED (localisation diverged, or the journal cannot be written: stop)
                       -> DRIVING to the same target (recovered)

:class:`Explorer` is this module's cycle: it owns the state (:attr:`Explorer.state`, the current target) and every
transition, and composes one object per stage, each in the module named after it, with explicit inputs (the
parameters, the planner, the input buffers, the budget it is handed) that returns what happened or calls a narrow
collaborator (:class:`~uncertain_bo.explorer.commands.Commands` for goals and stops, the host's outputs); no stage
reads or sets another's state:

- **Deciding** (:mod:`~uncertain_bo.explorer.deciding`): targets come from the planner, which keeps them in the
  search bounds. With a ``decider`` executor the planner decides on a worker thread while inputs keep arriving
  (the ROS node's diagnostics keep going).
- **En-route readings** (:mod:`~uncertain_bo.explorer.en_route`, ``en_route_spacing > 0``): readings taken while
  driving, stored in the GP but not as measurements.
- **Measuring** (:mod:`~uncertain_bo.explorer.measuring`): the readings of the measuring window paired with pose
  estimates; a target that cannot be measured is skipped and becomes a keep-out zone. Measurements and en-route
  readings are stored alike (:mod:`~uncertain_bo.explorer.storing`).
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
  target back (:meth:`~uncertain_bo.planning.planner.Planner.take_resumed_target`); the explorer re-sends it as the
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
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ..distributions import DTYPE
from ..planning.keep_out import NoAdmissibleTargetError
from ..planning.planner import Planner, Recommendation
from ..planning.revisions import RevisionOutcome
from .budget import TravelBudget
from .commands import Commands
from .deciding import Deciding
from .en_route import EnRoute
from .goal_resend import GoalResend
from .estimates import PoseEstimate, Reading, position_trace
from .inputs import InputStreams
from .leg import Leg
from .location_policy import LocationPolicy
from .measuring import SKIP, Measuring
from .mission_end import LIMITS, MissionEnd
from .outputs import ExplorerOutputs, Measurement
from .parameters import RESUME_CHECKED
from .pausing import JOURNAL_RETRY_PERIOD, Pausing
from .relocalising import ARRIVED, RESEND, Relocalising
from .result_file import execution_noise_summary, run_result
from .revisions import TrajectoryRevisions
from .states import State
from .storing import Storing

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'Measurement', 'execution_noise_summary', 'LIMITS',
           'JOURNAL_RETRY_PERIOD']

log = logging.getLogger(__name__)

#: the stages in which the rover may be under way to a goal (a refused goal or a finish stops it)
_UNDER_WAY = (State.DRIVING, State.DWELLING, State.MEASURING, State.RELOCALISING)
#: the stages in which the rover may be moving or holding a goal: a pause from them stops it
_ACTIVE = _UNDER_WAY + (State.DECIDING,)


class Explorer:
    """Measurement cycle around a :class:`~uncertain_bo.planning.planner.Planner`.

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
        budget: the run's distance and time so far (None: a resumed journal's last totals); a team rover passes its
            own (:meth:`~uncertain_bo.explorer.budget.TravelBudget.resumed` on its records).

    Attributes:
        state: current stage.
        leg: the current target, why its goal was sent and since when (:class:`~uncertain_bo.explorer.leg.Leg`;
            :attr:`target`, :attr:`goal_reason` and :attr:`last_decision_wall_time` read it).
        inputs: the validated pose and reading buffers (:class:`~uncertain_bo.explorer.inputs.InputStreams`).
        locations: the location policy (:class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).
        commands: goals and stops to the host (:class:`~uncertain_bo.explorer.commands.Commands`).
        deciding, measuring, en_route, pausing, ending, revisions, relocalising: the stages
            (:class:`~uncertain_bo.explorer.deciding.Deciding`, :class:`~uncertain_bo.explorer.measuring.Measuring`,
            :class:`~uncertain_bo.explorer.en_route.EnRoute`, :class:`~uncertain_bo.explorer.pausing.Pausing`,
            :class:`~uncertain_bo.explorer.mission_end.MissionEnd`, :class:`~uncertain_bo.explorer.revisions.
            TrajectoryRevisions`, :class:`~uncertain_bo.explorer.relocalising.Relocalising`).

    Example:
        A host whose rover arrives at once, and a sensor that reads ``20 + x``:

        >>> import numpy as np
        >>> from uncertain_bo.explorer import (EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State,
        ...                                    planner_from_parameters)
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
        ...                                     'max_speed': 0.0, 'dwell_time': 0.2, 'refit_every': 0})
        >>> class Host:
        ...     goal = np.array([1.0, 1.0])
        ...     def send_goal(self, target): self.goal = target
        ...     def stop(self, position): pass
        ...     def measured(self, m, rec): print(f'measurement {m.index + 1}: {m.reading.value:.1f}')
        ...     def finished(self, rec): print('done')
        >>> host = Host()
        >>> ex = Explorer(planner_from_parameters(params), host, params)
        >>> for k in range(100):
        ...     t, xy = 0.1 * k, host.goal
        ...     _ = ex.on_pose(PoseEstimate(t, 'map', xy, 0.01 * np.eye(2)), now=t)
        ...     _ = ex.on_reading(Reading(t, 20.0 + xy[0]), now=t)
        ...     ex.tick(t)
        measurement 1: ...
        measurement 2: ...
        done
        >>> ex.state, ex.done_reason
        (<State.DONE: 'done'>, 'max_measurements = 2 reached')
    """

    def __init__(self, planner: Planner, outputs: ExplorerOutputs, params: dict[str, Any],
                 decider: Executor | None = None, result_file: str | Path | None = None,
                 budget: TravelBudget | None = None):
        self._planner, self._outputs, self._params = planner, outputs, params
        self.state = State.WAITING_FOR_POSE
        self.leg = Leg()
        self._last_now: float | None = None
        journal = planner.journal_file
        self._budget = budget if budget is not None else TravelBudget.resumed(params, [
            r for r in journal.records if r.get('type') in ('observation', 'en_route')] if journal is not None else [])
        self.inputs = InputStreams(params, lambda: self.state is State.MEASURING)
        self.locations = LocationPolicy(planner, params)
        self.commands = Commands(params, self.inputs, outputs)
        self.deciding = Deciding(planner, params, self.inputs, decider)
        store = Storing(planner, params, self.inputs, self.locations, self._budget)
        self.measuring = Measuring(planner, params, self.inputs, store, self._budget)
        self.en_route = EnRoute(params, self.inputs, store)
        self.pausing = Pausing(planner, params)
        self.ending = MissionEnd(planner, params, outputs, result_file)
        self.revisions = TrajectoryRevisions(planner, params, self.inputs, self.locations)
        self.relocalising = Relocalising(planner, params)
        self._log_resume()
        reached = self.ending.measurements_reached()
        if reached is not None:
            self._end(reached)

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
    def target(self) -> np.ndarray | None:
        """The current target ``(2,)`` m, or None."""
        return self.leg.target

    @property
    def goal_reason(self) -> str:
        """Why the current goal was sent: ``'new'`` (a fresh decision), ``'resumed'`` (the journal's pending
        decision after a restart), ``'after pause'`` or ``'resent'`` (the controller was not seen to act on it:
        :mod:`~uncertain_bo.explorer.goal_resend`)."""
        return self.leg.reason

    @property
    def last_decision_wall_time(self) -> float | None:
        """``time.time()`` of the last decision sent (None before the first)."""
        return self.leg.decided_wall_time

    @property
    def planner(self) -> Planner:
        """The planner (given at construction: the stages share it)."""
        return self._planner

    @property
    def outputs(self) -> ExplorerOutputs:
        """The host's callbacks (given at construction)."""
        return self._outputs

    @property
    def params(self) -> dict[str, Any]:
        """The parameters, read live (a host that changes them calls :meth:`apply_parameters`)."""
        return self._params

    @property
    def budget(self) -> TravelBudget:
        """Distance driven and mission time (:class:`~uncertain_bo.explorer.budget.TravelBudget`; given at
        construction, shared with the stages that count against it)."""
        return self._budget

    @property
    def decider(self) -> Executor | None:
        """Where decisions run (None: inline)."""
        return self.deciding.executor

    @property
    def result_file(self) -> str | Path | None:
        """Where the final result is written (None: not written)."""
        return self.ending.result_file

    @property
    def goal_resend(self) -> GoalResend:
        """When the current goal is sent again (:class:`~uncertain_bo.explorer.goal_resend.GoalResend`)."""
        return self.commands.resend

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
    def deciding_in_background(self) -> bool:
        """True while a decision runs on :attr:`decider` (the planner must not be changed meanwhile)."""
        return self.deciding.busy

    @property
    def paused_reason(self) -> str | None:
        """Why the explorer is paused (None unless :attr:`state` is PAUSED): localisation diverged and/or the journal
        cannot be written (both reasons, ``'; '``-joined, when both hold)."""
        return self.pausing.reason

    @property
    def journal_fault(self) -> str | None:
        """Why the journal cannot write and how many records it holds meanwhile (:attr:`~uncertain_bo.explorer.
        pausing.Pausing.journal_fault`), None when every record is on disk."""
        return self.pausing.journal_fault

    @property
    def done_reason(self) -> str | None:
        """Why the mission ended (None until it does)."""
        return self.ending.done_reason

    @property
    def log_end(self) -> bool:
        """Log the end (:attr:`~uncertain_bo.explorer.mission_end.MissionEnd.log_end`)."""
        return self.ending.log_end

    @log_end.setter
    def log_end(self, value: bool) -> None:
        self.ending.log_end = value

    @property
    def goal_timeouts(self) -> int:
        """How many goals timed out (measured where the rover was)."""
        return self.measuring.goal_timeouts

    @property
    def skipped_targets(self) -> int:
        """Targets of this run that could not be measured (each became a keep-out zone)."""
        return self.measuring.skipped_targets

    @property
    def relocalisations(self) -> int:
        """Re-localisations started in this run (a resumed journal's included)."""
        return self.relocalising.count

    def result(self, rec: Recommendation | None) -> dict[str, Any]:
        """The run's result as written to ``result_file`` (:func:`~uncertain_bo.explorer.result_file.run_result`)."""
        now = self._last_now if self._last_now is not None else 0.0
        return run_result(self.planner, rec, self.rejected, self.skipped_targets, self.done_reason,
                          self.budget.totals(now))

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

    def on_revised_trajectory(self, poses: Sequence[PoseEstimate], stamp: float,
                              source: str = 'revised_trajectory', keep_covariance: bool = False) -> RevisionOutcome:
        """Re-place the stored readings a revised trajectory covers (:meth:`~uncertain_bo.explorer.revisions.
        TrajectoryRevisions.revise`, whose docstring gives the arguments). While the planner decides on the
        ``decider`` thread the trajectory is held (the newest :data:`~uncertain_bo.explorer.revisions.
        HELD_TRAJECTORIES`) and applied by the first :meth:`tick` after the decision: the outcome is then empty."""
        if not self.deciding.idle:
            self.revisions.hold(poses, stamp, source, keep_covariance)
            return RevisionOutcome()
        return self.revisions.revise(poses, stamp, source, keep_covariance)

    def goal_reached(self, now: float) -> None:
        """The controller reports the current goal reached (Nav2's NavigateToPose succeeded): dwell and measure, as
        on arrival within ``xy_goal_tolerance``. Ignored unless driving (a late report of an earlier goal)."""
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
        self.inputs.last_reason = f'goal {where} {category}: {detail}'
        self.measuring.stopped(now, dwell=False)
        self.measuring.retries = 0
        self._skip(now)

    def reject(self, what: str, category: str, detail: str) -> None:
        """Count and log a rejected input (hosts use it for messages they could not even parse); see
        :meth:`~uncertain_bo.explorer.inputs.InputStreams.reject`."""
        self.inputs.reject(what, category, detail)

    def apply_parameters(self, changed: Mapping[str, Any]) -> None:
        """Make run-time changes of :attr:`params` (already stored there) take effect: planner settings through
        :func:`~uncertain_bo.explorer.parameters.update_planner` (β, refit period, optimiser, execution noise,
        search bounds), the pose buffer size, and a journal record of the change. Everything else is read live.
        While a decision runs in the background the planner's settings are changed once it has finished
        (before its target is sent)."""
        self.deciding.apply_parameters(changed)

    # ------------------------------------------------------------ the cycle
    def tick(self, now: float) -> None:
        """Advance the cycle at time ``now`` (s, same clock as the stamps)."""
        if self._last_now is not None and now < self._last_now - self.params['max_pose_age']:
            shift = now - self._last_now
            self.inputs.throttled_warning('clock backwards', 'clock jumped backwards by %.3f s (simulation '
                                          'reset?): restarting the current stage timers', -shift)
            self.leg.shift(shift)
            self.measuring.shift(shift)
            self.budget.shift(shift)
        if self.state in (State.DRIVING, State.RELOCALISING) and self._last_now is not None:
            self.budget.drove(now - self._last_now)
        self._last_now = now
        if self.state is State.DONE:
            if self.pausing.journal_problem(now) is not None:
                return               # the end is reported once the journal holds every record
            self._report_finish()
            if not self.ending.limits_raised(self.budget.spent(now)):
                return
            self.state = State.WAITING_FOR_POSE
        elif self._stop_for_limits(now):
            return
        if self._check_pause(now):
            return
        if self.deciding.idle:
            self.revisions.apply_held()
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
            if self.measuring.dwelt(now):
                self.state = State.MEASURING
                self.measuring.open_window(now)
        elif self.state is State.MEASURING:
            self._measure(now)
        elif self.state is State.RELOCALISING:
            self._relocalise(now)
        if self.state is not State.DONE and self.journal_fault is not None:
            self._check_pause(now)   # a record of this tick could not be written: stop now, not a tick later

    # ------------------------------------------------------------ deciding and sending
    def _decide(self, now: float) -> None:
        if self.deciding.recommending:
            collected = self.deciding.collect_recommendation()
            if collected is not None:    # else: the recommendation after the last measurement (its GP fit) runs
                self._after_measurement(*collected)
                self.deciding.apply_pending()
            return                       # the next tick checks the limits, then decides
        try:
            decided = self.deciding.next_target()
        except NoAdmissibleTargetError as exc:
            self._finish(str(exc), stop=False)
            return
        if decided is None:
            return                       # inputs, timers and diagnostics go on meanwhile
        target, reason = decided
        if reason is not None:           # None: a target a budget held back keeps the reason it had
            self.leg.reason = reason
        self._send(target, now)

    def _send(self, target: np.ndarray, now: float) -> None:
        """Send a decided ``target`` ``(2,)`` m: unless refused (outside ``search_bounds``: decided anew), after a
        re-localisation the rule asks for, and if the budgets afford it (else the mission ends, the target held)."""
        pose = self.latest_pose
        position = pose.xy if pose is not None else self.planner.position.numpy()
        if self.commands.refused(target):
            self._refused()
            return
        if self._relocalise_first(target, now):
            return
        reason = self.budget.unaffordable(now, position, target)
        if reason is not None:
            self.deciding.unsent = target
            self._finish(reason, stop=False)
            return
        self.budget.stopped()      # the leg starts here: the odometer's step so far is complete
        self.leg.decided()
        self._drive_to(target, now, position)
        self.measuring.new_goal()
        if pose is not None:
            self.en_route.count_from(pose.xy, restart=False)   # en-route spacing counts from here
        self._send_goal(target)

    def _drive_to(self, goal: np.ndarray, now: float, position: np.ndarray | None,
                  state: State = State.DRIVING) -> None:
        """Enter ``state`` towards ``goal`` ``(2,)`` m with a fresh goal clock (the caller sends the goal)."""
        self.leg.start(goal, now)
        self.state = state
        self.goal_resend.sent(now, position, goal)

    def _refused(self) -> None:
        """A goal was refused (outside ``search_bounds``: :meth:`~uncertain_bo.explorer.commands.Commands.refused`):
        the rover stopped if under way, the next target decided anew."""
        if self.state in _UNDER_WAY:
            self._stop()
        self.leg.clear()
        self.state = State.DECIDING

    def _send_goal(self, target: np.ndarray) -> bool:
        """Send ``target`` ``(2,)`` m as the goal (:meth:`~uncertain_bo.explorer.commands.Commands.send_goal`), or
        refuse it (:meth:`_refused`). Returns whether it was sent."""
        if self.commands.send_goal(target):
            return True
        self._refused()
        return False

    def _stop(self) -> np.ndarray | None:
        return self.commands.stop(self.target)

    # ------------------------------------------------------------ driving, measuring
    def _drive(self, now: float) -> None:
        if self.params['en_route_spacing'] > 0:
            self.en_route.step(now)
        pose = self.latest_pose
        if pose is not None and np.linalg.norm(pose.xy - self.target) <= self.params['xy_goal_tolerance']:
            self._start_dwell(now)
            return
        if self.goal_resend.due(now, pose.xy if pose is not None else None, self.target):
            self.leg.reason = 'resent'      # the controller has not moved the rover yet: the goal may be lost
            if not self._send_goal(self.target):
                return                       # refused (search_bounds changed meanwhile): stopped, deciding anew
        spent = self.budget.distance_spent()
        if spent is not None or self.leg.timed_out(now, self.params['goal_timeout']):
            where = self._stop()
            if spent is not None:
                log.warning('%s on the way to target (%.2f, %.2f): stopping and measuring where the rover is, '
                            '(%.2f, %.2f), then ending the mission', spent, *self.target, *where)
            else:
                log.warning('target (%.2f, %.2f) not reached within goal_timeout = %.0f s: measuring where the '
                            'rover is, (%.2f, %.2f) (still a valid pair: the location distribution says where)',
                            *self.target, self.params['goal_timeout'], *where)
                self.measuring.goal_timeouts += 1
            self.measuring.timed_out = True
            self._start_dwell(now)

    def _start_dwell(self, now: float) -> None:
        self.measuring.stopped(now)
        self.state = State.DWELLING

    def _measure(self, now: float) -> None:
        outcome = self.measuring.measure(now, self.target)
        if outcome is SKIP:
            self._skip(now)
        elif outcome is not None:
            self.en_route.count_from(outcome.pose.xy)
            rec = self.deciding.recommend_after(outcome)
            if rec is None:
                self.state = State.DECIDING   # the recommendation runs on the decider: collected while deciding
            else:
                self._after_measurement(outcome, rec)

    def _skip(self, now: float) -> None:
        """The target could not be measured: kept out, then decide anew or end (``max_consecutive_skips``)."""
        ended = self.measuring.skip(now, self.target)
        if ended is not None:
            self._finish(ended, stop=False)
        else:
            self.state = State.DECIDING

    def _publish(self, m: Measurement, rec: Recommendation) -> None:
        """Journal the recommendation after measurement ``m`` and tell the host."""
        self.planner.journal_writer.write(rec.record(m.index))
        self.outputs.measured(m, rec)

    def _after_measurement(self, m: Measurement, rec: Recommendation) -> None:
        """Journal the recommendation after measurement ``m``, tell the host, then end or decide next."""
        self._publish(m, rec)
        reached = self.ending.measurements_reached()
        if reached is not None:
            self._end(reached)
            self._report_finish(rec)
        else:
            self.state = State.DECIDING

    # ------------------------------------------------------------ pausing
    def _check_pause(self, now: float) -> bool:
        """Pause while localisation has diverged or the journal cannot write (:class:`~uncertain_bo.explorer.
        pausing.Pausing`); resume when neither holds. Pausing stops the rover when it may be moving or holding a
        goal. Returns True while paused."""
        if not self.pausing.check(now, self.latest_pose):
            if self.state is State.PAUSED:
                self._resume(now)
            return False
        if self.state is not State.PAUSED:
            self.pausing.paused_from = self.state
            self.state = State.PAUSED
            if self.pausing.paused_from in _ACTIVE:
                self._stop()                 # held at the trusted position, never a diverged estimate's
        return True

    def _resume(self, now: float) -> None:
        """Leave the pause: the same target again (with a fresh goal clock) when the pause was taken on the way
        to it or at it (the same re-localisation, when taken during one), else start over from waiting for a
        pose."""
        self.pausing.resumed()
        self.inputs.readings.clear()
        pose, paused_from = self.latest_pose, self.pausing.paused_from
        if paused_from is State.RELOCALISING:
            r = self.relocalising.resume(now, pose)
            if r is not None:
                self.state = State.RELOCALISING
                if r.waiting_since is None:
                    self.goal_resend.sent(now, pose.xy, r.centre)
                    self._send_goal(r.centre)
                return
        if (self.target is not None and pose is not None
                and paused_from in (State.DRIVING, State.DWELLING, State.MEASURING)):
            self.leg.reason = 'after pause'
            self._drive_to(self.target, now, pose.xy)
            self._send_goal(self.target)     # refused when search_bounds changed meanwhile: decided anew
        else:
            self.state = State.WAITING_FOR_POSE

    # ------------------------------------------------------------ re-localising
    def _relocalise_first(self, target: np.ndarray, now: float) -> bool:
        """Before ``target`` is sent, a re-localisation if the rule asks for one (:meth:`~uncertain_bo.explorer.
        relocalising.Relocalising.start`): drive to the fix source, or stop for surfacing. True when one started."""
        pose = self.latest_pose
        r = self.relocalising.start(target, pose, now, getattr(self.outputs, 'request_surfacing', None))
        if r is None:
            return False
        if r.centre is not None:
            self._drive_to(r.centre, now, np.asarray(pose.xy, dtype=float), State.RELOCALISING)
            self._send_goal(r.centre)
        else:
            self._stop()
            self.leg.clear()
            self.state = State.RELOCALISING
        return True

    def _relocalise(self, now: float) -> None:
        """The ``relocalising`` stage: what :meth:`~uncertain_bo.explorer.relocalising.Relocalising.step` asks."""
        pose, current = self.latest_pose, self.relocalising.current
        step = self.relocalising.step(now, pose, lambda: self.goal_resend.due(
            now, pose.xy if pose is not None else None, current.centre))
        if step is False:
            return
        if step is ARRIVED:
            self._stop()
        elif step is RESEND:
            self._send_goal(current.centre)
        else:                                # ended (or none under way: a restart's state): the held target
            self.state = State.DECIDING
            if step is not None:
                self._send(step, now)

    # ------------------------------------------------------------ the end
    def _stop_for_limits(self, now: float) -> bool:
        """End the mission when ``max_measurements`` is reached (lowered at run time) or the time budget is
        spent, and, before a decision, when the distance budget is. Returns True if it ended."""
        reached = self.ending.measurements_reached()
        if reached is not None and not self.deciding.recommending:
            self._finish(reached, stop=True)
            return True
        reason = self.budget.time_spent(now)
        if reason is None and self.state in (State.WAITING_FOR_POSE, State.DECIDING) and self.deciding.idle:
            reason = self.budget.distance_spent()
        if reason is not None:
            self._finish(reason, stop=True)
            return True
        return False

    def _end(self, reason: str, announce: bool = False) -> None:
        self.state = State.DONE
        self.ending.end(reason, announce)

    def _finish(self, reason: str, stop: bool) -> None:
        if stop and self.state in _UNDER_WAY:
            self._stop()
        self._end(reason, announce=True)
        self._report_finish()

    def _report_finish(self, rec: Recommendation | None = None) -> None:
        """Write the result file and tell the host, once per end (:meth:`~uncertain_bo.explorer.mission_end.
        MissionEnd.report`). Work still running on the decider is waited for first (the planner is not used from
        two threads); the end is reported only once the journal holds every record."""
        if self.ending.reported:
            return
        drained = self.deciding.drain()
        if drained is not None:
            rec = drained[1]
            self._publish(*drained)
        if self.journal_fault is not None:
            log.error('mission ended (%s) but %s: the end is reported once they are written', self.done_reason,
                      self.journal_fault)
            return                               # tick() retries the journal, then reports
        self.ending.report(rec, self.result)

"""Explorer node: pairs location distributions with readings and publishes the next target waypoint.

Subscribes (the ROS contract of docs/architecture.md; every topic remappable):
    ``odometry/filtered`` (nav_msgs/Odometry), ``pose`` (geometry_msgs/PoseWithCovarianceStamped) or
    ``particle_cloud`` (geometry_msgs/PoseArray of equally weighted particles, e.g. AMCL's or the simulated
    ``particle_filter``'s), by parameter ``pose_source``. A particle cloud is kept as an empirical location
    distribution (``max_particles`` particles) when the method's kernel takes sample sets (``airbo``,
    ``airbo_empirical``, ``ugp_kme``), else moment-matched to a Gaussian (the GP kernel follows the input
    type; see :mod:`uncertain_bo.explorer`); ``reading`` (sensor_msgs Temperature / FluidPressure /
    Illuminance / RelativeHumidity or std_msgs/Float64, by parameter ``reading_type``); with
    ``revised_path_topic`` set, that topic (nav_msgs/Path: a smoother's or SLAM back end's corrected past
    trajectory, which re-places the stored readings: :mod:`uncertain_bo.ros.revised_path`).
Publishes:
    ``goal_pose`` (geometry_msgs/PoseStamped) and ``plan`` (nav_msgs/Path, current estimate -> target), both
    latched (transient local) and re-sent until the controller acts (:mod:`uncertain_bo.explorer.goal_resend`);
    or, with ``goal_interface`` ``'nav2_action'`` (``'auto'`` where nav2_msgs is importable), goals to Nav2's
    ``navigate_to_pose`` action (:mod:`uncertain_bo.ros.nav2_goals`) and ``plan`` for display;
    ``~/markers`` (visualization_msgs/MarkerArray: targets, measured locations with 2σ covariance
    ellipses, current recommendation and goal, status text with the GP maps' scales);
    ``~/gp_mean`` and ``~/gp_std`` (nav_msgs/OccupancyGrid over the search area: the robust posterior
    mean μ̂(P̂_x) and its standard deviation, scaled to 0-100; the scales are in the status marker and in
    the diagnostics; QoS transient_local like maps, updated after each measurement);
    ``/diagnostics`` (diagnostic_msgs/DiagnosticArray: state, progress, rejected-input counters, last
    decision; every ``diagnostics_period`` and on changes).

All logic lives in :class:`uncertain_bo.explorer.Explorer` and :mod:`uncertain_bo.reporting.operator_view`; this node
converts messages and runs ``tick`` on a timer of the node clock (simulated time under ``use_sim_time``). The
planner comes from the parameters through :func:`~uncertain_bo.explorer.planner_from_parameters` (as in the
in-process mission), run-time parameter changes go to :meth:`~uncertain_bo.explorer.Explorer.apply_parameters`,
and the run folder's files (``journal.jsonl``, ``explorer_result.json``) are written by the library.
Decisions run on a worker thread (``decide_in_background``), so ``/diagnostics``, markers and the
subscriptions keep going while the planner thinks; a busy executor would otherwise let the node clock jump
ahead of queued poses (they then look stale). The worker's torch calls release the GIL and must win it back
from the executor thread; under a flood of messages (thousands a second) Python's default 5 ms switch
interval starved it (a 0.06 s fit took over 20 s; 1 ms still did), so the node lowers the interpreter's switch
interval to ``DECIDER_SWITCH_INTERVAL`` (0.2 ms: 0.6 s) for its process. The subscriptions are
:class:`~uncertain_bo.ros.rover_inputs.RoverInputs` (shared with the team explorer): poses are subscribed best effort
(compatible with reliable and best-effort publishers, e.g. Gazebo bridges); particle clouds are read from the
serialised message with NumPy and subsampled to ``cloud_receive_limit`` particles on receipt.
The explorer needs a **map-frame** estimate with absolute corrections (robot_localization with GNSS,
AMCL): an odom-frame covariance grows without bound and would make every location distribution
uninformative (and, above ``max_covariance_trace``, pauses the explorer).

**Restarts.** With an existing ``run_dir`` the node resumes its journal: earlier observations are
reloaded, and a target that was decided but not yet measured is sent again (not decided anew). Parameter
changes made at run time (``ros2 param set``) are journaled but not persisted: a restarted node uses its
start-up configuration.

**Inputs named.** The start-up line names every input with its resolved topic and type (and ``/clock`` under
``use_sim_time``); warnings about an input name it the same way; an input from which nothing has arrived is
reported with what publishes on its topic (:class:`~uncertain_bo.ros.rover_inputs.InputWatch`).

**The end.** ``exit_when_done``: status 0 after the mission, :data:`EXIT_NOT_COMPLETED` (1) when it ended with no
measurement (an ``[ERROR]`` line says why; ``explorer_result.json``'s ``stopped_because`` too). Ctrl-C or SIGTERM:
the rover is stopped first (:meth:`ExplorerNode.stop_safely`: Nav2's goal cancelled, or a goal at the pose
estimate), then the node ends with status 0 (:func:`~uncertain_bo.ros.spin.run_node`).

**Recording.** With ``record`` (and ``record_path``) the run is recorded to a rosbag2 folder with MCAP storage beside
the journal, and with ``foxglove_port`` shown live to Foxglove: :mod:`uncertain_bo.ros.recording`; ``uncertain-bo
replay`` replays such a recording through the same measurement cycle (:mod:`uncertain_bo.ros.replay`).

**Storage faults.** When the journal cannot be written (full disk, I/O error, read-only or vanished ``run_dir``)
the node stays up: the explorer stops the rover and pauses, /diagnostics is ERROR with the reason and the number
of records held in memory (``journal records pending``, ``journal faults``, ``journal write failures``), and the
journal is retried every second; once every held record is written the mission resumes. A node shut down while
records are held logs that they are lost (see docs/field_robots.md, "Storage faults").
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np
from std_msgs.msg import Empty
from rclpy.node import Node

from ..explorer import (Explorer, Measurement, State, planner_from_parameters,
                        check_explorer_parameters, position_std, run_folder)
from ..reporting.operator_view import StatusReporter, STATE_TEXT
from ..parameters.specs import ParameterError
from ..planning.planner import Recommendation
from ..reporting.units import ValueFormat, reading_unit
from .nav2_goals import Nav2Goals, resolve_goal_interface
from .check import check_node_values
from .operator_outputs import GoalTopics, OperatorOutputs
from .operator_view import ELLIPSE_SIGMA, MarkerScene, clean_stamp, make_diagnostics, make_markers
from .explorer_parameters import EXPLORER_NODE_PARAMS
from .library_logs import forward_library_logs as forward_library_logs_to, stop_forwarding
from .params import declare_parameters
from .qos import RELIABLE_10
from .recording import start_recording
from .revised_path import subscribe_revised_path
from .rover_inputs import (CLOCK_TOPIC, CLOCK_TYPE, POSE_SOURCES, InputWatch, RoverInputs, node_clock_now,
                           pose_estimate_from_msg, sim_time)
from .spin import request_exit, run_node

DECIDER_SWITCH_INTERVAL = 0.0002  # s: the interpreter's GIL switch interval with a background decider

__all__ = ['ExplorerNode', 'EXPLORER_NODE_PARAMS', 'EXIT_NOT_COMPLETED', 'POSE_SOURCES', 'pose_estimate_from_msg',
           'main']

#: exit status of a mission that could not do its job: it ended with no measurement (for a team: or every rover
#: was dropped); the reason is in the log and in explorer_result.json's ``stopped_because``
EXIT_NOT_COMPLETED = 1

#: least wall time between two state-change diagnostics (rejection floods do not flood /diagnostics), s
_MIN_STATUS_GAP = 0.2


@dataclass
class _StatusChanges:
    """/diagnostics on changes: the state and the rejected-input count last published, and when (wall clock), so
    that a state change is published at once and a flood of rejections at most every ``_MIN_STATUS_GAP``."""
    reporter: StatusReporter = field(default_factory=StatusReporter)
    state: State | None = None
    rejected: int = 0
    wall: float = -math.inf

    def published(self, state: State, rejected: int) -> None:
        self.state, self.rejected, self.wall = state, rejected, time.monotonic()

    def due(self, state: State, rejected: int) -> tuple[bool, bool]:
        """(publish the status now, the state changed: publish the markers too)."""
        changed = state is not self.state
        if not changed and rejected == self.rejected:
            return False, False
        return changed or time.monotonic() - self.wall >= _MIN_STATUS_GAP, changed


class ExplorerNode(Node):
    """ROS wrapper of :class:`~uncertain_bo.explorer.Explorer`.

    Args:
        node_name: ROS node name (default ``explorer``).
        forward_library_logs: send the library's Python log records (rejections, timeouts, journal
            warnings) to this node's ROS logger (the entry point does; in-process hosts that configure
            Python logging themselves do not need it).
        **kwargs: forwarded to ``rclpy.node.Node`` (e.g. ``parameter_overrides``).

    Raises:
        uncertain_bo.parameters.specs.ParameterError: a parameter is out of range or inconsistent (the message
            names it and the allowed range).
        uncertain_bo.journal.journal.JournalError: the journal in ``run_dir`` cannot be resumed.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.explorer import ExplorerNode
        >>> import tempfile
        >>> from rclpy.parameter import Parameter
        >>> run = tempfile.TemporaryDirectory()            # its journal and result file go to run_dir
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = ExplorerNode(context=ctx, parameter_overrides=[Parameter('run_dir', value=run.name)])
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/odometry/filtered', '/reading']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/diagnostics', '/explorer/gp_mean', '/explorer/gp_std', '/explorer/markers', '/goal_pose', '/plan',
         '/surface']
        >>> node.explorer.state
        <State.WAITING_FOR_POSE: 'waiting for pose'>
        >>> node.destroy_node(); ctx.shutdown()
        >>> run.cleanup()
    """

    def __init__(self, node_name: str = 'explorer', *, forward_library_logs: bool = False, **kwargs):
        super().__init__(node_name, **kwargs)
        self._log_handler = None
        try:
            self._setup(forward_library_logs)
        except Exception:
            self.destroy_node()   # do not leave a half-built node in the graph
            raise

    def _setup(self, forward_library_logs: bool) -> None:
        if forward_library_logs:
            self._log_handler = forward_library_logs_to(self)
        self.p = declare_parameters(self, EXPLORER_NODE_PARAMS, on_change=self._on_parameters,
                                    cross_check=check_explorer_parameters)
        check_node_values('explorer', self.p)   # what `uncertain-bo check` runs: before anything is written
        self.run_dir = run_folder(self.p)
        planner = planner_from_parameters(
            self.p, journal=self.run_dir / 'journal.jsonl',
            metadata={'node': self.get_fully_qualified_name(), 'parameters': self.p})
        if self.p['decide_in_background']:
            # convoy effect: each GIL-releasing torch call of the decider waits a full switch interval to resume
            # while the executor thread runs message callbacks; shorter intervals keep decisions near their cost
            sys.setswitchinterval(min(sys.getswitchinterval(), DECIDER_SWITCH_INTERVAL))
        self._decider = (ThreadPoolExecutor(max_workers=1, thread_name_prefix='explorer-decide')
                         if self.p['decide_in_background'] else None)
        self.recording = start_recording(self, self.p, self.run_dir, planner.journal_file)   # record, foxglove_port
        if self.recording is not None:
            self._decider = self.recording.decider(self._decider)   # each background job's cycle recorded
        self.explorer = Explorer(planner, self, self.p, decider=self._decider,
                                 result_file=self.run_dir / 'explorer_result.json')
        self.recommendation: Recommendation | None = planner.recommend() if planner.n else None

        # latched: a controller that matches later (started after the explorer, slow discovery) still gets the
        # current goal; the explorer also re-sends it until the controller acts (explorer/goal_resend.py)
        self.goals = GoalTopics(self)
        # the surfacing action of an AUV (surface_cost > 0: explorer/relocalising.py); sim_rover takes it
        self.surface_pub = self.create_publisher(Empty, 'surface', RELIABLE_10)
        try:
            self.goal_interface, action_type = resolve_goal_interface(self.p['goal_interface'])
        except ValueError as exc:
            raise ParameterError(str(exc)) from None
        self.nav2: Nav2Goals | None = None
        if action_type is not None:
            self.nav2 = Nav2Goals(self, action_type, self.p['nav2_action_name'], self.p['nav2_behavior_tree'],
                                  reached=lambda: self.explorer.goal_reached(self._now()),
                                  failed=lambda c, d: self.explorer.goal_failed(c, d, self._now()))
        self.inputs = RoverInputs(self, self.explorer, self.p)   # pose_source's topic and reading
        # says what it still waits for, until the mission ends
        self.watch = InputWatch(self, lambda: [self.inputs] if self.explorer.state is not State.DONE else [])
        self.revised_path_sub = subscribe_revised_path(self, self.explorer, self.p,   # revised_path_topic, or None
                                                       tap=self.recording.path_tap() if self.recording else None)
        if self.recording is not None:
            self.recording.add_rover(self.inputs, revised_path_sub=self.revised_path_sub)

        self._status = _StatusChanges()
        self._ended_empty = False      # the mission ended before its first measurement (said once)
        self.timer = self.create_timer(1.0 / self.p['tick_rate'], self._tick)
        self.view = OperatorOutputs(self, self.p['diagnostics_period'], self._periodic)
        kind = ('empirical location distributions of the particle cloud' if self.p['pose_source'] == 'particle_cloud'
                and self.explorer.location_particles else 'Gaussian location distributions')
        goals = (f"Nav2's {self.p['nav2_action_name']} action" if self.nav2 is not None
                 else f"topics {self.goals.names()}")
        clock = f', clock on {CLOCK_TOPIC} ({CLOCK_TYPE})' if sim_time(self) else ''
        self.get_logger().info(
            f"exploring {self.p['search_bounds']} m with {self.p['method']} ({kind}), "
            f"{self.p['max_measurements']} measurements, goals to {goals}; inputs: {self.inputs.describe()}{clock}; "
            f"journal in {self.run_dir}")

    def destroy_node(self) -> None:
        decider = getattr(self, '_decider', None)
        if decider is not None:
            decider.shutdown(wait=False, cancel_futures=True)
            self._decider = None
        explorer = getattr(self, 'explorer', None)
        journal = explorer.planner.journal_file if explorer is not None else None
        if journal is not None and not journal.retry():   # a last try: records held after a storage fault
            self.get_logger().error(f'{explorer.journal_fault}: they are lost with this process')
        if getattr(self, 'recording', None) is not None:
            self.recording.close()
        stop_forwarding(self._log_handler)
        self._log_handler = None
        super().destroy_node()

    # ---------------------------------------------------------- callbacks
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _clock_now(self) -> float | None:
        """Node clock, or None while it is not running yet (simulated time before the first /clock)."""
        return node_clock_now(self)

    def _tick(self) -> None:
        now = self._clock_now()
        if now is None:
            return
        ex = self.explorer
        if self.recording is not None:
            self.recording.cycle(now)
        ex.tick(now)   # when done: reports a resumed journal that was already complete, else returns at once
        if ex.state is State.DONE and not ex.planner.n and ex.journal_fault is None:   # no finished() then
            if not self._ended_empty:
                self._ended_empty = True
                self.get_logger().error(f'mission ended with no measurement: {ex.done_reason} (stopped_because in '
                                        f"{self.run_dir / 'explorer_result.json'})")
                self._publish_status()
                if self.p['exit_when_done']:
                    self.timer.cancel()
                    request_exit(self, EXIT_NOT_COMPLETED)
            return
        self._ended_empty = False      # (a limit raised at run time continues the mission)
        if self.view.maps_dirty and ex.state is not State.DECIDING:
            self._update_maps()
        self._status_on_change()

    def _status_on_change(self) -> None:
        publish, changed = self._status.due(self.explorer.state, sum(self.explorer.rejected.values()))
        if publish:
            self._publish_status()
            if changed:
                self._publish_markers()

    def _periodic(self) -> None:
        self._publish_status()
        self._publish_markers()

    def _on_parameters(self, changed: dict[str, Any]) -> None:
        self.explorer.apply_parameters(changed)   # journals the change; the node's own keys are ignored there
        if 'diagnostics_period' in changed:
            self.view.set_period(self.p['diagnostics_period'])
        if {'gp_map_cells', 'search_bounds', 'execution_noise_std'} & set(changed):
            self.view.maps_dirty = True
        self.get_logger().info('parameters changed: ' + ', '.join(f'{k} = {v}' for k, v in changed.items()))

    # ------------------------------------------------- ExplorerOutputs
    def send_goal(self, target: np.ndarray) -> None:
        stamp = self._now()
        frame = self.p['global_frame']
        why = self.explorer.goal_reason
        if self.nav2 is not None:
            if why == 'resent' and self.nav2.accepted:
                return              # Nav2 acknowledged the goal: nothing was lost
            self.nav2.send(stamp, frame, target)
        pose = self.explorer.latest_pose
        self.goals.send(stamp, frame, pose.xy if pose is not None else target, target, goal=self.nav2 is None)
        n = self.explorer.planner.n
        if why == 'new':
            d = self.explorer.planner.decisions[-1]
            how = f'{d.phase}, decided in {d.seconds:.3f} s'
        elif why == 'resumed':
            how = 'decided before a restart: sent again'
        elif why == 'resent':
            how = (f"sent again: the controller has not moved the rover towards it yet "
                   f"(every goal_resend_period = {self.p['goal_resend_period']:g} s)")
        else:
            how = 'sent again after a pause (localisation or journal recovered)'
        self.get_logger().info(
            f"target {n + 1}/{self.p['max_measurements']}: ({target[0]:.2f}, {target[1]:.2f}) m [{how}]")
        self._publish_markers()

    def request_surfacing(self) -> bool:
        """Ask the vehicle to surface for a fix (``std_msgs/Empty`` on ``surface``; sim_rover takes it). False, and
        nothing asked, when nothing subscribes: the explorer then does not wait for a fix that cannot come."""
        if self.surface_pub.get_subscription_count() == 0:
            self.get_logger().warning('re-localisation: nothing subscribes to surface; going on without the fix')
            return False
        self.surface_pub.publish(Empty())
        self.get_logger().info('re-localisation: surfacing asked for (surface)')
        return True

    def stop(self, position: np.ndarray) -> None:
        if self.nav2 is not None:
            self.nav2.cancel()
        # on topics facing where the rover faces: a controller that checks the goal's heading (Nav2's) does not turn
        self.goals.stop(self._now(), self.p['global_frame'], position, self.inputs.heading, goal=self.nav2 is None)

    def stop_safely(self) -> Callable[[], bool]:
        """The node is being shut down (SIGINT, SIGTERM: :func:`~uncertain_bo.ros.spin.run_node` calls this before
        it destroys the node): no further target is decided or sent, and the rover does not drive on to the current
        one. Through Nav2's action its goal is cancelled (:meth:`~uncertain_bo.ros.nav2_goals.Nav2Goals.stop`); on
        topics, as at a budget's end (:meth:`stop`), ``goal_pose`` becomes the current pose estimate with the
        rover's heading (Nav2's bt_navigator takes it as a new goal that is already reached; ``pure_pursuit``
        arrives at once and sends zero velocities) and ``plan`` a single point there. Nothing is sent before the
        first goal.

        Returns:
            a predicate, true once that was delivered (Nav2 answered; every subscriber acknowledged).
        """
        for timer in (self.timer, self.view.timer, self.watch.timer):
            timer.cancel()
        if self._decider is not None:
            self._decider.shutdown(wait=False, cancel_futures=True)   # a decision running there is not sent
        if self.nav2 is not None:
            return self.nav2.stop()
        pose = self.explorer.latest_pose
        if self.explorer.target is None or pose is None:
            return lambda: True
        self.get_logger().info(f'stopping the rover where it is, ({pose.xy[0]:.2f}, {pose.xy[1]:.2f}): goal on '
                               f'{self.goals.names()}')
        self.stop(pose.xy)
        return self.goals.acknowledged()

    def measured(self, m: Measurement, rec: Recommendation) -> None:
        self.recommendation = rec
        self.view.maps_dirty = True
        xy, cov = m.place                                         # where the reading was taken (the sensor)
        sd = position_std(cov)
        fmt = ValueFormat.of(self.explorer.planner.y.tolist())    # the decimals the readings' spread asks for
        self.get_logger().info(
            f"measurement {m.index + 1}/{self.p['max_measurements']}: reading {fmt(m.reading.value)} at "
            f"({xy[0]:.2f}, {xy[1]:.2f}) ± {sd:.2f} m (target ({m.target[0]:.2f}, "
            f"{m.target[1]:.2f}){', goal timed out' if m.timed_out else ''}); best so far "
            f"({rec.target[0]:.2f}, {rec.target[1]:.2f}) μ̂ = {fmt.pm(rec.mean, rec.std)}")

    def finished(self, rec: Recommendation) -> None:
        # the explorer has written explorer_result.json and the journal
        self.recommendation = rec
        value = ValueFormat.of(self.explorer.planner.y.tolist()).pm(rec.mean, rec.std)
        unit = reading_unit(self.p)
        self.get_logger().info(
            f'done ({self.explorer.done_reason}): robust peak believed at ({rec.target[0]:.2f}, '
            f'{rec.target[1]:.2f}) m, '
            f'E[f] ≈ {value}{" " + unit if unit else ""}; journal {self.run_dir / "journal.jsonl"}')
        self._update_maps()
        self._publish_status()
        self._publish_markers()
        if self.p['exit_when_done']:
            self.timer.cancel()
            request_exit(self, 0)

    # ------------------------------------------------- operator view
    def _update_maps(self) -> None:
        """Publish ~/gp_mean and ~/gp_std on a coarse grid (after each measurement only)."""
        self.view.update_maps(self.explorer.planner, self.p['search_bounds'], self.p['gp_map_cells'],
                              self.p['global_frame'], self._now())

    def _publish_status(self) -> None:
        ex = self.explorer
        self._status.published(ex.state, sum(ex.rejected.values()))
        extra: dict[str, Any] = {'journal': str(self.run_dir / 'journal.jsonl')}
        extra.update({f'scale {t.split(":")[0]}': t.split(': ', 1)[1] for t in self.view.scale_texts()})
        if self.view.map_seconds is not None:
            extra['gp map seconds'] = self.view.map_seconds
        extra['goal interface'] = self.goal_interface
        if self.recording is not None:
            extra.update(self.recording.values())
        if self.nav2 is not None:
            extra.update(self.nav2.values())
        report = self._status.reporter.report(ex, self._clock_now(), extra)
        self.view.diagnostics.publish(make_diagnostics(report, f'{self.get_name()}: exploration',
                                                       self.get_fully_qualified_name(), clean_stamp(self._now())))

    def _publish_markers(self) -> None:
        ex, planner = self.explorer, self.explorer.planner
        scene = MarkerScene.of(self.p['search_bounds'], planner, self.recommendation, self.view.mean_scale)
        if ex.target is not None and ex.state in (State.DRIVING, State.DWELLING, State.MEASURING, State.PAUSED):
            scene.goal = ex.target
        pose = ex.latest_pose
        scene.rover = pose.xy if pose is not None else None
        text = STATE_TEXT.get(ex.state.value, ex.state.value)
        scene.status = [f"explorer: {text}, {planner.n}/{self.p['max_measurements']} measurements"
                        + (f' ({ex.paused_reason})' if ex.paused_reason else ''),
                        f'ellipses: {ELLIPSE_SIGMA:g} sigma, colour = reading', *self.view.scale_texts()]
        self.view.markers.publish(make_markers(scene, self.p['global_frame'], clean_stamp(self._now())))


def main(args=None) -> None:
    """Entry point ``explorer`` (``--ros-args --params-file config/explorer.yaml``)."""
    from ..cli import configure_torch_threads
    configure_torch_threads()
    run_node(lambda: ExplorerNode(forward_library_logs=True), args, doc=__doc__, specs=EXPLORER_NODE_PARAMS)


if __name__ == '__main__':
    main()

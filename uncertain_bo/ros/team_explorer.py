"""Team explorer node: ONE explorer (one planner, one GP, one journal) serving N rovers in namespaces (issue 23).

The architecture is :mod:`uncertain_bo.team.mission`'s: the planner's side is a
:class:`~uncertain_bo.team.mission.TeamPlanner`; each rover has its own measurement cycle
(:class:`~uncertain_bo.explorer.Explorer`) on its
:class:`~uncertain_bo.team.mission.RoverView` of the shared planner (its next target is decided with the other rovers'
targets pending, from its own position; each of its measurements is merged once with its rover and sequence
number) and its own inputs (:class:`~uncertain_bo.ros.rover_inputs.RoverInputs`), exactly as the explorer node has
for its one rover. For each namespace ``NS`` of parameter ``rovers``:

Subscribes ``NS/odometry/filtered`` (or ``NS/pose`` / ``NS/particle_cloud``, by ``pose_source``) and ``NS/reading``
(``reading_type``); with ``revised_path_topic`` set, ``NS/<revised_path_topic>`` (nav_msgs/Path: the rover's
corrected past, which re-places its own readings in the shared planner by ``(rover, seq)``).
Publishes ``NS/goal_pose`` (geometry_msgs/PoseStamped) and ``NS/plan`` (nav_msgs/Path), latched, as the explorer
node does; ``/diagnostics`` (one DiagnosticStatus per rover, named ``<node>: NS exploration``, with the team's
values); ``~/markers`` (the shared scene of :mod:`uncertain_bo.ros.operator_view`: every measurement, the team's
recommendation, status; and per rover ``NS/path``, ``NS/goal``, ``NS/label``) and the shared GP maps ``~/gp_mean``
and ``~/gp_std``.

**Silence.** A rover from which no pose or no reading arrived for ``silence_timeout`` s (node clock; counted from
the node's first tick, or the rover's joining, until its first message) is dropped
(:meth:`~uncertain_bo.team.mission.TeamPlanner.drop`): its pending target is released, it is told to stop where it was
last seen, it gets no more targets, its diagnostics say so (WARN); what it measured stays in the model and the other
rovers go on. The mission ends when every rover not dropped has ended (``max_measurements`` is the team's
budget), or when every rover is dropped (not completed: with ``exit_when_done`` the node then exits with status 1);
then ``explorer_result.json`` is written with the team's recommendation and, per rover, its measurements, why it
ended or was dropped (naming the silent input's topic and type). A mission that ends with no measurement is not
completed either (exit status 1 with ``exit_when_done``). Ctrl-C or SIGTERM stops every rover that is driving
where it is before the node ends (:meth:`TeamExplorerNode.stop_safely`).

Decisions run inline (in the tick), one rover at a time: the rovers share one planner, which must not be used from
two threads (a rover's measurement is stored while another's decision would run).

**Restart.** A node started on a ``run_dir`` holding a team journal resumes it (:class:`~uncertain_bo.team.mission.
TeamPlanner`, :mod:`uncertain_bo.team.journal`): every measurement is in the model once (a damaged line skipped and
counted, as for one rover), each rover of ``rovers`` gets back its pending target (re-sent on its ``goal_pose``,
measured before it gets a new one), numbers its measurements on after the journal's and keeps its travel totals;
the pending target of a rover the journal names and ``rovers`` does not is released (logged).

**Joining.** ``rovers`` may be changed at run time (``ros2 param set /team_explorer rovers "['rover0', 'rover1',
'rover2']"``): a name added joins the mission (its subscriptions and publishers are created, its silence counts
from then, its first target is decided with the other rovers' pending ones, its measurements enter the one
model). A rover cannot be removed that way (a rover that stops reporting is dropped), nor join after the end.
"""
from __future__ import annotations

import json
import math
import time
from typing import Any, Callable

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node

from ..explorer import Explorer, Measurement, State, TravelBudget, check_explorer_parameters, \
    planner_from_parameters, run_folder
from ..reporting.operator_view import STATE_TEXT, StatusReporter
from ..parameters.specs import Param
from ..planning.planner import Recommendation
from ..team.mission import TeamPlanner
from .check import check_node_values, check_rovers
from ..reporting.units import ValueFormat, reading_unit
from .explorer import EXIT_NOT_COMPLETED, EXPLORER_NODE_PARAMS
from .library_logs import forward_library_logs as forward_library_logs_to, stop_forwarding
from .operator_outputs import GoalTopics, OperatorOutputs
from .recording import start_recording
from .operator_view import ELLIPSE_SIGMA, MarkerScene, clean_stamp, make_diagnostics, make_markers, \
    rover_markers
from .params import declare_parameters
from .revised_path import subscribe_revised_path
from .rover_inputs import CLOCK_TOPIC, CLOCK_TYPE, InputWatch, RoverInputs, node_clock_now, sim_time
from .spin import request_exit, run_node

__all__ = ['TeamExplorerNode', 'TEAM_EXPLORER_PARAMS', 'main']

#: the explorer node's parameters a team explorer does not have (goals go to each rover's goal_pose topic; the
#: rovers share one planner, so decisions are inline)
_NOT_IN_TEAM = ('goal_interface', 'nav2_action_name', 'nav2_behavior_tree', 'decide_in_background')

TEAM_EXPLORER_PARAMS = [p for p in EXPLORER_NODE_PARAMS if p.name not in _NOT_IN_TEAM] + [
    Param('rovers', ['rover0', 'rover1'], 'namespaces of the rovers the node serves (their topics are '
          'NS/odometry/filtered, NS/reading, NS/goal_pose, ...); max_measurements is the team\'s budget. At run '
          'time a rover can be added (it joins the mission), none removed'),
    Param('silence_timeout', 30.0, 'a rover from which no pose or no reading arrived for this long (node clock) is '
          'dropped: its pending target released, the others go on (s)', range=(0.1, 1e6)),
]


class _Rover:
    """One rover of the team: its view of the planner, its measurement cycle, its inputs and goal publishers;
    the :class:`~uncertain_bo.explorer.ExplorerOutputs` of its explorer."""

    def __init__(self, node: 'TeamExplorerNode', name: str, index: int):
        self.node, self.name, self.index = node, name, index
        self.view = node.team.add_rover(name, node.planner, done=lambda: self.explorer.state is State.DONE)
        records = node.team.rover_records(name)      # its records in a resumed journal
        # its own budget totals, not the last rover's
        self.explorer = Explorer(self.view, self, node.p, budget=TravelBudget.resumed(node.p, records))
        self.explorer.log_end = False             # the node logs it, with the rover's name (ended)
        resumed = [r for r in records if r.get('type') == 'observation']
        self.inputs = RoverInputs(node, self.explorer, node.p, namespace=name, seed=index)
        topic = node.p['revised_path_topic'].lstrip('/')    # its revised path, under its namespace (or off)
        self.revised_path_sub = subscribe_revised_path(node, self.explorer, node.p, f'{name}/{topic}' if topic else '',
                                                       tap=node.recording.path_tap() if node.recording else None)
        if node.recording is not None:
            node.recording.add_rover(self.inputs, name, self.revised_path_sub)
        self.goals = GoalTopics(node, name)
        self.reporter = StatusReporter()
        # its measured locations (means), in order, and how many (a resumed journal's included)
        self.path: list[np.ndarray] = [np.asarray(r['location']['mean'][:2], dtype=float) for r in resumed
                                       if 'mean' in r['location']]
        self.measurements = len(resumed)
        self.dropped_reason: str | None = None
        self.since: float | None = None           # node-clock time from which its silence counts (joining)
        self.end_logged = False

    @property
    def active(self) -> bool:
        return self.node.team.active(self.name)

    def silence(self, now: float, since: float) -> str | None:
        """Why this rover counts as silent at ``now`` (node clock, s; ``since``: when the node started listening),
        or None; it names the topics and types."""
        timeout = self.node.p['silence_timeout']
        quiet = [f'no {self.explorer.inputs.named(what)} for {now - (last if last is not None else since):.1f} s'
                 for what, last in (('pose', self.inputs.last_pose), ('reading', self.inputs.last_reading))
                 if now - (last if last is not None else since) > timeout]
        return f"{' and '.join(quiet)} (silence_timeout = {timeout:g} s)" if quiet else None

    # ------------------------------------------------- ExplorerOutputs
    def send_goal(self, target: np.ndarray) -> None:
        node, stamp, frame = self.node, self.node.now_s(), self.node.p['global_frame']
        pose = self.explorer.latest_pose
        self.goals.send(stamp, frame, pose.xy if pose is not None else target, target)
        if self.explorer.goal_reason == 'new':
            d = self.view.decision
            node.get_logger().info(
                f"{self.name}: target ({target[0]:.2f}, {target[1]:.2f}) m [{d.phase}, decided in {d.seconds:.3f} s "
                f'with {self.view.pending_at_decision} other target(s) pending]')
        node.publish_markers()

    def stop(self, position: np.ndarray) -> None:
        self.goals.stop(self.node.now_s(), self.node.p['global_frame'], position, self.inputs.heading)

    def stop_safely(self) -> Callable[[], bool]:
        """The node is shut down: this rover stops where it is, as the explorer node's does
        (:meth:`~uncertain_bo.ros.explorer.ExplorerNode.stop_safely`), if it was sent a goal and is not dropped
        (a dropped rover was stopped then). Returns a predicate, true once every subscriber acknowledged."""
        pose = self.explorer.latest_pose
        if self.explorer.target is None or pose is None or not self.active:
            return lambda: True
        self.node.get_logger().info(f'{self.name}: stopping where it is, ({pose.xy[0]:.2f}, {pose.xy[1]:.2f})')
        self.stop(pose.xy)
        return self.goals.acknowledged()

    def measured(self, m: Measurement, rec: Recommendation) -> None:
        self.measurements += 1
        self.path.append(np.asarray(m.pose.xy, dtype=float).copy())
        self.node.measured(self, m, rec)

    def finished(self, rec: Recommendation) -> None:
        pass                                       # logged by ended(); the result file is the team's

    def ended(self) -> None:
        """Log this rover's end once per end (info), unless the team's budget ended it: that is the team's end,
        which the node logs once. An end that a limit raised at run time undoes can be logged again."""
        ex = self.explorer
        if ex.state is not State.DONE:
            self.end_logged = False
        elif not self.end_logged:
            self.end_logged = True
            if self.node.planner.n < self.node.p['max_measurements']:
                self.node.get_logger().info(f'{self.name}: its mission ends ({ex.done_reason}) after '
                                            f'{self.measurements} measurements')


class TeamExplorerNode(Node):
    """One explorer serving N rovers (see the module docstring for topics and behaviour).

    Args:
        node_name: ROS node name (default ``team_explorer``).
        forward_library_logs: send the library's Python log records to this node's ROS logger.
        **kwargs: forwarded to ``rclpy.node.Node`` (e.g. ``parameter_overrides``).

    Raises:
        uncertain_bo.parameters.specs.ParameterError: an invalid parameter, ``rovers`` invalid or repeated.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.team_explorer import TeamExplorerNode
        >>> import tempfile
        >>> from rclpy.parameter import Parameter
        >>> run = tempfile.TemporaryDirectory()            # the team's journal and result file go to run_dir
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = TeamExplorerNode(context=ctx, parameter_overrides=[Parameter('run_dir', value=run.name)])
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/rover0/odometry/filtered', '/rover0/reading', '/rover1/odometry/filtered', '/rover1/reading']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/diagnostics', '/rover0/goal_pose', '/rover0/plan', '/rover1/goal_pose', '/rover1/plan',
         '/team_explorer/gp_mean', '/team_explorer/gp_std', '/team_explorer/markers']
        >>> sorted(node.rovers)
        ['rover0', 'rover1']
        >>> node.destroy_node(); ctx.shutdown()
        >>> run.cleanup()
    """

    def __init__(self, node_name: str = 'team_explorer', *, forward_library_logs: bool = False, **kwargs):
        super().__init__(node_name, **kwargs)
        self._log_handler = None
        try:
            self._setup(forward_library_logs)
        except Exception:
            self.destroy_node()
            raise

    def _setup(self, forward_library_logs: bool) -> None:
        if forward_library_logs:
            self._log_handler = forward_library_logs_to(self)
        self.p = declare_parameters(self, TEAM_EXPLORER_PARAMS, on_change=self._on_parameters,
                                    cross_check=self._cross_check)
        check_node_values('team_explorer', self.p)   # what `uncertain-bo check` runs: before anything is written
        self.run_dir = run_folder(self.p)
        journal = self.run_dir / 'journal.jsonl'
        self.planner = planner_from_parameters(
            self.p, journal=journal, metadata={'node': self.get_fully_qualified_name(), 'parameters': self.p,
                                               'rovers': list(self.p['rovers'])})
        self.team = TeamPlanner()
        self.recording = start_recording(self, self.p, self.run_dir, self.planner.journal_file, team=True)
        self.rovers: dict[str, _Rover] = {}
        for name in self.p['rovers']:
            self.rovers[name] = _Rover(self, name, len(self.rovers))
        self.team.release_absent()               # the journal's rovers not in the team: their targets released
        self.recommendation: Recommendation | None = None
        self.done = self.completed = False      # the team's end; completed: some rover was not dropped
        self.timer = self.create_timer(1.0 / self.p['tick_rate'], self._tick)
        self.view = OperatorOutputs(self, self.p['diagnostics_period'], self._periodic)
        self.watch = InputWatch(self, lambda: [r.inputs for r in self.rovers.values() if r.active and not self.done])
        clock = f'; clock on {CLOCK_TOPIC} ({CLOCK_TYPE})' if sim_time(self) else ''
        self.get_logger().info(
            f"exploring {self.p['search_bounds']} m with {self.p['method']} for {len(self.rovers)} rovers "
            f"({', '.join(self.rovers)}), {self.p['max_measurements']} measurements in all; inputs: "
            + '; '.join(f'{r.name}: {r.inputs.describe()}' for r in self.rovers.values())
            + f'{clock}; journal in {self.run_dir}')

    def destroy_node(self) -> None:
        if getattr(self, 'recording', None) is not None:
            self.recording.close()
        stop_forwarding(self._log_handler)
        self._log_handler = None
        super().destroy_node()

    def stop_safely(self) -> Callable[[], bool]:
        """The node is being shut down (SIGINT, SIGTERM: :func:`~uncertain_bo.ros.spin.run_node` calls this): no
        further target, and every rover that is driving stops where it is (:meth:`_Rover.stop_safely`). Returns a
        predicate, true once that was delivered."""
        for timer in (self.timer, self.view.timer, self.watch.timer):
            timer.cancel()
        delivered = [rover.stop_safely() for rover in self.rovers.values()]
        return lambda: all(d() for d in delivered)

    def now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ---------------------------------------------------------- the cycle
    def _tick(self) -> None:
        now = node_clock_now(self)
        if now is None or self.done:
            return
        if self.recording is not None:
            self.recording.cycle(now)
        for rover in list(self.rovers.values()):
            if not rover.active:
                continue
            if rover.since is None:
                rover.since = now
            reason = rover.silence(now, rover.since)
            if reason is not None:
                self._drop(rover, reason)
                continue
            rover.explorer.tick(now)
            rover.ended()
        if self.view.maps_dirty:
            self._update_maps()
        live = [r for r in self.rovers.values() if r.name not in self.team.dropped]
        if all(r.explorer.state is State.DONE for r in live):     # every rover dropped: the end, not completed
            self._finish(completed=bool(live))

    def _drop(self, rover: _Rover, reason: str) -> None:
        rover.dropped_reason = reason
        self.team.drop(rover.name, reason)
        pose = rover.explorer.latest_pose
        if pose is not None:
            rover.stop(pose.xy)                    # should it come back: it does not drive on to a released target
        self.publish_status()
        self.publish_markers()

    def measured(self, rover: _Rover, m: Measurement, rec: Recommendation) -> None:
        self.recommendation = self.team.record(rover.name, rec)
        self.view.maps_dirty = True
        xy, cov = m.place                                   # where the reading was taken (the sensor)
        sd = math.sqrt(max(float(cov[0][0] + cov[1][1]) / 2.0, 0.0))
        fmt = ValueFormat.of(self.planner.y.tolist())       # the decimals the readings' spread asks for
        self.get_logger().info(
            f"{rover.name}: measurement {self.planner.n}/{self.p['max_measurements']} of the team: reading "
            f'{fmt(m.reading.value)} at ({xy[0]:.2f}, {xy[1]:.2f}) ± {sd:.2f} m; best so far '
            f'({rec.target[0]:.2f}, {rec.target[1]:.2f}) μ̂ = {fmt.pm(rec.mean, rec.std)}')

    def _finish(self, completed: bool) -> None:
        self.done, self.completed = True, completed
        rec = self.recommendation
        first = next((r for r in self.rovers.values() if r.name not in self.team.dropped),
                     next(iter(self.rovers.values())))
        result = first.explorer.result(rec)
        every_dropped = not completed
        if every_dropped:
            result['stopped_because'] = 'every rover was dropped'
        elif not self.planner.n:
            completed = self.completed = False   # a mission with no measurement did not do its job
        for key in ('distance_driven_m', 'mission_time_s', 'rejected', 'targets_skipped'):
            result.pop(key, None)               # per rover, below
        now = self.now_s()
        result['rovers'] = {r.name: {'measurements': r.measurements, 'dropped': r.dropped_reason,
                                     'stopped_because': r.explorer.done_reason, **r.explorer.budget.totals(now),
                                     'rejected': dict(r.explorer.rejected),
                                     'targets_skipped': r.explorer.skipped_targets}
                            for r in self.rovers.values()}
        result['duplicates'] = self.team.duplicates
        (self.run_dir / 'explorer_result.json').write_text(json.dumps(result, indent=2))
        # the team's end, logged once
        unit = reading_unit(self.p)
        best = (f'robust peak believed at ({rec.target[0]:.2f}, {rec.target[1]:.2f}) m, E[f] ≈ '
                f'{ValueFormat.of(self.planner.y.tolist()).pm(rec.mean, rec.std)}{" " + unit if unit else ""}'
                if rec is not None else 'no measurement, no recommendation')
        said = (f'{self.planner.n} of {self.p["max_measurements"]} measurements by {", ".join(self.rovers)} '
                f'(dropped: {", ".join(self.team.dropped) or "none"}); {best}; '
                f'journal {self.run_dir / "journal.jsonl"}')
        if completed:
            self.get_logger().info(f'team done: {said}')
        else:
            why = ('every rover was dropped (silent for silence_timeout)' if every_dropped else
                   f"no measurement ({result['stopped_because']})")
            self.get_logger().error(f'team done, not completed: {why}: {said}')
        self._update_maps()
        self.publish_status()
        self.publish_markers()
        if self.p['exit_when_done']:
            self.timer.cancel()
            request_exit(self, 0 if completed else EXIT_NOT_COMPLETED)

    def _cross_check(self, values: dict[str, Any]) -> str | None:
        """A run-time change's cross-parameter checks: the explorer's, and ``rovers`` only growing while the
        mission runs."""
        reason = check_explorer_parameters(values) or check_rovers(values['rovers'])
        if reason or not hasattr(self, 'rovers'):
            return reason
        gone = [r for r in self.rovers if r not in values['rovers']]
        if gone:
            return (f"parameter 'rovers': {', '.join(gone)} cannot be removed at run time (a rover that stops "
                    'reporting is dropped after silence_timeout); rovers can only be added')
        if self.done and set(values['rovers']) - set(self.rovers):
            return "parameter 'rovers': the mission has ended, no rover can join"
        return None

    def join(self, name: str) -> None:
        """Add rover ``name`` mid-mission (what a run-time change of ``rovers`` does): its inputs, goal publishers
        and measurement cycle; it decides its first target on its first pose, with the others' pending.

        Raises:
            ValueError: ``name`` is already in the team.
        """
        self.rovers[name] = _Rover(self, name, len(self.rovers))
        self.get_logger().info(f'{name} joins the team ({len(self.rovers)} rovers; {self.planner.n} of '
                               f"{self.p['max_measurements']} measurements so far)")
        self.publish_status()
        self.publish_markers()

    def _on_parameters(self, changed: dict[str, Any]) -> None:
        if 'rovers' in changed:
            self.planner.journal_writer.write({'type': 'parameters', 'changed': {'rovers': list(changed['rovers'])},
                                               'index': self.planner.n, 'wall_time': time.time()})
            for name in changed['rovers']:
                if name not in self.rovers:
                    self.join(name)
        changed = {k: v for k, v in changed.items() if k != 'rovers'}
        if changed:
            for rover in self.rovers.values():
                rover.explorer.apply_parameters(changed)
        if 'diagnostics_period' in changed:
            self.view.set_period(self.p['diagnostics_period'])
        if {'gp_map_cells', 'search_bounds', 'execution_noise_std'} & set(changed):
            self.view.maps_dirty = True

    # ---------------------------------------------------------- operator view
    def _periodic(self) -> None:
        self.publish_status()
        self.publish_markers()

    def _update_maps(self) -> None:
        self.view.update_maps(self.planner, self.p['search_bounds'], self.p['gp_map_cells'], self.p['global_frame'],
                              self.now_s())

    def publish_status(self) -> None:
        """One DiagnosticStatus per rover on /diagnostics, in one array."""
        now = node_clock_now(self)
        msg = DiagnosticArray()
        for rover in self.rovers.values():
            extra = {'rover': rover.name, 'rover measurements': rover.measurements,
                     'team measurements': self.planner.n, 'journal': str(self.run_dir / 'journal.jsonl'),
                     'pending targets of other rovers': len(self.team.pending(exclude=rover.name)),
                     **(self.recording.values() if self.recording is not None else {})}
            report = rover.reporter.report(rover.explorer, now, extra)
            one = make_diagnostics(report, f'{self.get_name()}: {rover.name} exploration',
                                   f'{self.get_fully_qualified_name()}/{rover.name}', clean_stamp(self.now_s()))
            status = one.status[0]
            if rover.dropped_reason is not None:
                status.level = DiagnosticStatus.WARN
                status.message = f'dropped: {rover.dropped_reason}'[:1000]
                status.values.append(KeyValue(key='dropped', value=rover.dropped_reason))
            msg.header = one.header
            msg.status.append(status)
        self.view.diagnostics.publish(msg)

    def publish_markers(self) -> None:
        """The shared scene (every measurement, the team's recommendation, status) and each rover's path, pending
        target and label, in one MarkerArray on ~/markers."""
        planner, stamp, frame = self.planner, clean_stamp(self.now_s()), self.p['global_frame']
        scene = MarkerScene.of(self.p['search_bounds'], planner, self.recommendation, self.view.mean_scale)
        scene.status = [f"team of {len(self.rovers)}: {planner.n}/{self.p['max_measurements']} measurements"] + [
            f'{r.name}: ' + (f'dropped ({r.dropped_reason})' if r.dropped_reason else
                             STATE_TEXT.get(r.explorer.state.value, r.explorer.state.value))
            for r in self.rovers.values()] + [f'ellipses: {ELLIPSE_SIGMA:g} sigma, colour = reading']
        out = make_markers(scene, frame, stamp)
        for rover in self.rovers.values():
            ex = rover.explorer
            pose = ex.latest_pose
            goal = rover.view.target if rover.active else None
            out.markers += rover_markers(rover.name, rover.index, self.p['search_bounds'], rover.path,
                                         pose.xy if pose is not None else None,
                                         goal.numpy() if goal is not None else None, frame, stamp).markers
        self.view.markers.publish(out)


def main(args=None) -> None:
    """Entry point ``team_explorer`` (``--ros-args -p rovers:="['rover0','rover1']" --params-file ...``)."""
    from ..cli import configure_torch_threads
    configure_torch_threads()
    run_node(lambda: TeamExplorerNode(forward_library_logs=True), args, doc=__doc__, specs=TEAM_EXPLORER_PARAMS)


if __name__ == '__main__':
    main()

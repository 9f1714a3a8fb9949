"""``sim_rover`` node: the simulated rover, its sensors and the simulation clock.

Thin wrapper around :class:`uncertain_bo.sim.world.SimWorld`:

* subscribes ``cmd_vel`` (``geometry_msgs/Twist``, or ``TwistStamped`` with ``stamped_cmd_vel``) and ``surface``
  (``std_msgs/Empty``: take the surfacing action now, as an AUV's mission executive takes a pop-up for a GNSS
  fix; :mod:`uncertain_bo.sim.surfacing`; the explorer asks for it: ``surface_cost``);
* publishes ``/clock`` (``rosgraph_msgs/Clock``), ``wheel/odometry`` (``nav_msgs/Odometry``: dead-reckoned
  pose in ``odom`` and the measured twist with its covariance), ``position_fix``
  (``geometry_msgs/PoseWithCovarianceStamped`` in ``map``, at ``fix_rate``), ``ground_truth``
  (``nav_msgs/Odometry`` in ``map``) and ``reading`` (``reading_type``, default ``sensor_msgs/Temperature``
  used as a generic stamped scalar, with ``variance`` = reading noise variance, at ``reading_rate``).

**Simulated time.** The node owns ``/clock``; every other node runs with ``use_sim_time: true``.
``real_time_factor > 0`` paces the steps to that multiple of wall time. ``real_time_factor = 0`` is
**lockstep**: after publishing step k the node waits for the next ``cmd_vel`` (the control loop
ekf -> ``odometry/filtered`` -> pure_pursuit -> ``cmd_vel`` has closed) and then steps at once, or steps
anyway after waiting ``lockstep_timeout`` wall seconds, so it never deadlocks without a controller. Steps are
taken inside callbacks (the ``cmd_vel`` subscription or a steady-clock timer), never in a waiting loop, so
the node shares an executor (e.g. all nodes in one process on a ``MultiThreadedExecutor``) without
starving the others.

The wait counts only the wall time in which this node was responsive: the time between two calls of its timer
counts up to two timer periods (:data:`RESPONSIVE_GAP`), so a gap in which the node's executor ran another
callback (the in-process demo's explorer deciding inline for seconds) or its process got no CPU (a loaded
machine) does not count. Otherwise the timer, which the executor serves before the subscription whose
``cmd_vel`` waited meanwhile, would step without it; that answer would then step again, and every such gap would
leave one more step circulating in the loop for good: the clock running further and further ahead of the
estimates (six gaps: every pose 0.6 s old, rejected as stale by the explorer: the demo on a busy laptop). A slow
machine makes the lockstep slower, never faster than its control loop. A step that had to be taken all the same
(no ``cmd_vel`` for ``lockstep_timeout``) is exact with ``stamped_cmd_vel``: a ``TwistStamped`` stamped before the
step published last (``pure_pursuit`` stamps its command with the estimate it came from) is used as the command but
answers nothing; a plain ``Twist`` cannot tell, so after such a step its late answer steps once more. The
in-process demo (``uncertain-bo demo``) runs ``sim_rover`` and ``pure_pursuit`` stamped.

Within a step the position fix and reading are published before the wheel odometry, whose arrival makes
the EKF publish its estimate.

**Several rovers on one clock** (issue 23). With ``rovers: ['rover0', 'rover1', ...]`` one node simulates every
rover of a team in one world and one time: rover ``NS`` subscribes ``NS/cmd_vel`` and publishes ``NS/wheel/odometry``,
``NS/position_fix``, ``NS/ground_truth`` and ``NS/reading``; ``/clock`` is published once per step. Rover ``i``
starts ``spacing`` m from the next along x, centred on ``initial_x``, with simulation seed ``seed + 7919 i``
(:func:`uncertain_bo.team.mission.team_parameters`, as the in-process team and the launch file's EKFs compute it). One
node, rather than N nodes of which one owns the clock, so that no rover (process) whose loss stops time exists. In
lockstep a step is taken once every rover *that answers* has sent its ``cmd_vel``: a rover whose ``cmd_vel`` did not
come within ``lockstep_timeout`` (its controller or localiser died) is no longer waited for, until it sends one again,
so a killed rover costs one ``lockstep_timeout`` and the others go on at full speed (a rover that is not waited for
keeps its last command until ``cmd_vel_timeout`` stops it). Each named rover's frames are ``NS/odom`` and
``NS/base_link`` (``NS/`` + ``odom_frame`` / ``base_frame``) under the shared ``map_frame``. The default
``rovers: ['']`` is the single rover on the node's own topics.
"""
from __future__ import annotations

import threading
import time
from collections import ChainMap
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseWithCovarianceStamped, Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock as ClockMsg
from std_msgs.msg import Empty

from uncertain_bo.parameters.specs import Param, ParameterError
from uncertain_bo.ros import conversions as cv
from uncertain_bo.ros.reading_messages import READING_TYPES, make_reading
from uncertain_bo.ros.params import declare_parameters
from uncertain_bo.ros.qos import RELIABLE_10
from uncertain_bo.ros.spin import run_node
from uncertain_bo.sim.ekf import PlanarEKF
from uncertain_bo.sim.world import WORLD_PARAMS, SimStep, SimWorld

__all__ = ['SIM_ROVER_PARAMS', 'SIM_ROVER_NODE_PARAMS', 'SimRoverNode', 'main', 'RESPONSIVE_GAP']

SIM_ROVER_NODE_PARAMS = [
    Param('real_time_factor', 0.0, 'simulated seconds per wall second; 0 = lockstep with the control loop '
          'as fast as the machine allows (dimensionless)', range=(0.0, 1000.0)),
    Param('lockstep_timeout', 1.0, 'in lockstep, step anyway when no cmd_vel arrived within this many wall '
          'seconds after publishing a step, counting only the time this node was responsive (a gap in which its '
          'executor was busy or its process had no CPU does not count) (s)', range=(0.001, 60.0)),
    Param('cmd_vel_timeout', 0.5, 'a velocity command older than this many simulated seconds is replaced '
          'by zero (rover stops) (s)', range=(0.0, 1e6)),
    Param('stamped_cmd_vel', False, 'subscribe cmd_vel as geometry_msgs/TwistStamped instead of Twist',
          read_only=True),
    Param('reading_type', 'temperature', 'message type of the reading topic; sensor_msgs/Temperature is '
          'used as a generic stamped scalar', choices=tuple(READING_TYPES), read_only=True),
    Param('map_frame', 'map', 'world frame of position fixes and ground truth', read_only=True),
    Param('odom_frame', 'odom', 'frame of the dead-reckoned wheel-odometry pose', read_only=True),
    Param('base_frame', 'base_link', 'rover body frame (child frame of the odometry messages)',
          read_only=True),
    Param('sensor_frame', 'base_link', 'frame_id of the reading messages (sensor mounted at the rover '
          'origin)', read_only=True),
    Param('rovers', [''], "namespaces of the rovers this node simulates on one clock (['rover0', 'rover1']: "
          "topics rover0/cmd_vel, rover0/wheel/odometry, ...; ['']: one rover on the node's own topics)",
          read_only=True),
    Param('spacing', 10.0, 'distance between the starts of consecutive rovers along x, centred on initial_x (several '
          'rovers only) (m)', range=(0.0, 1e6), read_only=True),
    Param('status_period', 10.0, 'log the simulation speed (steps/s, real-time factor) every this many wall '
          'seconds; 0 disables (s)', range=(0.0, 3600.0)),
]

#: all parameters of the sim_rover node
SIM_ROVER_PARAMS = WORLD_PARAMS + SIM_ROVER_NODE_PARAMS

#: variance (m², rad²) reported for what a position fix does not measure (z, roll, pitch, yaw)
_UNOBSERVED = 1e6
#: in lockstep, the most time between two calls of the node's timer, in timer periods, that counts as waiting
#: for cmd_vel (a longer gap: the node was not running, see the module docstring)
RESPONSIVE_GAP = 2.0


def _start_and_seed(p: dict[str, Any], n: int, i: int) -> dict[str, Any]:
    """``{'initial_x', 'seed'}`` of rover ``i`` of ``n`` (:func:`uncertain_bo.team.mission.team_parameters`: ``spacing``
    m apart along x, centred on ``initial_x``; seed ``seed + 7919 i``)."""
    from uncertain_bo.team.mission import team_parameters     # torch: imported only for a team

    sim = team_parameters({'sim_rover': {'initial_x': p['initial_x'], 'seed': p['seed']}}, n, i,
                          spacing=p['spacing'])['sim_rover']
    return {'initial_x': sim['initial_x'], 'seed': sim['seed']}


class _SimulatedRover:
    """One simulated rover of the node: its world, dead-reckoned odom pose, publishers and latest command."""

    def __init__(self, node: 'SimRoverNode', namespace: str, world: SimWorld):
        self.name, self.world = namespace, world
        prefix = f'{namespace}/' if namespace else ''
        # dead-reckoned odom-frame pose and covariance (odometry only; grows without bound by design)
        self.odom_pose = PlanarEKF({'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0,
                                    'initial_xy_std': 1e-4, 'initial_yaw_std': 1e-4, 'second_order_mean': False})
        p = node.p
        self.pub_odom = node.create_publisher(Odometry, prefix + 'wheel/odometry', RELIABLE_10)
        self.pub_fix = node.create_publisher(PoseWithCovarianceStamped, prefix + 'position_fix', RELIABLE_10)
        self.pub_truth = node.create_publisher(Odometry, prefix + 'ground_truth', RELIABLE_10)
        msg_cls, _ = READING_TYPES[p['reading_type']]
        self.pub_reading = node.create_publisher(msg_cls, prefix + 'reading', RELIABLE_10)
        cmd_cls = TwistStamped if p['stamped_cmd_vel'] else Twist
        node.create_subscription(cmd_cls, prefix + 'cmd_vel', lambda msg: node._on_cmd_vel(self, msg), RELIABLE_10,
                                 callback_group=node._group)
        node.create_subscription(Empty, prefix + 'surface', lambda msg: node._on_surface(self), RELIABLE_10,
                                 callback_group=node._group)
        # TF frames: one tree per rover (rover0/odom -> rover0/base_link) under the shared map frame
        self.odom_frame = prefix + p['odom_frame']
        self.base_frame = prefix + p['base_frame']
        self.cmd = (0.0, 0.0)
        self.cmd_time = -float('inf')      # sim time at which the last command arrived
        self.answered = False              # its cmd_vel for the step published last has come
        self.responsive = True             # waited for in lockstep (False after it missed lockstep_timeout)


class SimRoverNode(Node):
    """Simulated rover node (see the module docstring for topics, timing and several rovers).

    Args:
        node_name: ROS node name.
        **kwargs: passed to ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ``namespace``...).

    Raises:
        ParameterError: an invalid parameter value (``rovers`` repeating a name, or mixing '' with names).
        FieldError: the ``field`` cannot be loaded.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.sim_rover import SimRoverNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = SimRoverNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/cmd_vel', '/surface']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/clock', '/ground_truth', '/position_fix', '/reading', '/wheel/odometry']
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node_name: str = 'sim_rover', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        if self.get_parameter('use_sim_time').value:
            self.get_logger().warning('sim_rover owns /clock and runs on wall time; ignoring use_sim_time')
            self.set_parameters([Parameter('use_sim_time', value=False)])
        try:
            self.p = declare_parameters(self, SIM_ROVER_PARAMS)
            names = list(self.p['rovers'])
            if len(set(names)) != len(names) or ('' in names and len(names) > 1):
                raise ParameterError(f"parameter 'rovers' = {names} is invalid: distinct namespaces, or [''] for one "
                                     "rover on the node's own topics")
            self.world = SimWorld.from_params(self.p)
        except Exception:
            self.destroy_node()   # do not leave a half-built node in the graph
            raise
        p = self.p
        self.get_logger().info(f'field {self.world.field!r}')
        self._group = MutuallyExclusiveCallbackGroup()
        self._lock = threading.Lock()
        self._pub_clock = self.create_publisher(ClockMsg, '/clock', RELIABLE_10)
        worlds = [self.world]
        if len(names) > 1:     # rover i: its start and seed from the team's rule, every other value live from p
            worlds = [SimWorld(self.world.field, ChainMap(_start_and_seed(p, len(names), i), p))
                      for i in range(len(names))]
            self.world = worlds[0]
        self.rovers = [_SimulatedRover(self, name, w) for name, w in zip(names, worlds)]
        self._awaiting_cmd = False
        self._waited = 0.0                  # wall s waited for cmd_vel since the last step, while responsive
        self._timer_wall: float | None = None   # when the timer last ran (monotonic s)
        self.steps = 0
        self.timeout_steps = 0              # lockstep steps taken because no cmd_vel came in time
        self._wall_start = time.monotonic()
        self._status_wall, self._status_steps, self._status_t = self._wall_start, 0, 0.0
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer = None
        self._make_timer()
        self.add_post_set_parameters_callback(self._on_params_set)
        self._publish([r.world.initial_step() for r in self.rovers])

    @property
    def _pub_fix(self):
        """The (first) rover's position_fix publisher."""
        return self.rovers[0].pub_fix

    # ------------------------------------------------------------------ timing
    def _make_timer(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        rtf = self.p['real_time_factor']
        self._timer_period = (self.world.dt / rtf) if rtf > 0 else min(0.25 * self.p['lockstep_timeout'], 0.05)
        self._timer = self.create_timer(self._timer_period, self._on_timer, callback_group=self._group,
                                        clock=self._steady)

    def _on_params_set(self, params) -> None:
        if any(q.name in ('real_time_factor', 'lockstep_timeout') for q in params):
            self._make_timer()

    def _awaited(self) -> list[_SimulatedRover]:
        """The rovers lockstep waits for: those that answer; all of them when none does (no controller yet)."""
        return [r for r in self.rovers if r.responsive] or self.rovers

    def _on_timer(self) -> None:
        now = time.monotonic()
        gap = 0.0 if self._timer_wall is None else now - self._timer_wall
        self._timer_wall = now
        if self.p['real_time_factor'] > 0:
            self._step()
            self._maybe_log_status()
            return
        if self._awaiting_cmd:   # the time waited while responsive (module docstring)
            self._waited += min(gap, RESPONSIVE_GAP * self._timer_period)
        if self._awaiting_cmd and self._waited >= self.p['lockstep_timeout']:
            awaited = self._awaited()
            late = [r for r in awaited if not r.answered]
            if len(late) < len(awaited):        # others answered: stop waiting for the late ones
                for r in late:
                    r.responsive = False
                    self.get_logger().warning(f'{r.name}: no cmd_vel within lockstep_timeout = '
                                              f"{self.p['lockstep_timeout']:g} s: stepping without waiting for it "
                                              'until it sends one again')
            self.timeout_steps += 1
            self._step()
        self._maybe_log_status()

    def _on_surface(self, rover: _SimulatedRover) -> None:
        """``surface`` (``std_msgs/Empty``): the rover takes the surfacing action now (stopped for
        ``surface_duration`` s, then one fix: :mod:`uncertain_bo.sim.surfacing`); ignored while one is under way."""
        if rover.world.request_surfacing():
            self.get_logger().info(f'{rover.name or "rover"}: surfacing for {self.p["surface_duration"]:g} s')

    def _on_cmd_vel(self, rover: _SimulatedRover, msg) -> None:
        stamp = cv.from_time_msg(msg.header.stamp) if isinstance(msg, TwistStamped) else 0.0
        with self._lock:
            rover.cmd = cv.twist_from_msg(msg)
            rover.cmd_time = rover.world.t
            # a stamped command computed from an earlier step's estimate (it came after a timeout step) is used, but
            # it does not answer the step published last: stepping on it would keep one more step in the loop
            late = 0.0 < stamp < rover.world.t - 0.5 * rover.world.dt
            if not late:
                rover.answered = rover.responsive = True
        if (not late and self.p['real_time_factor'] == 0 and self._awaiting_cmd
                and all(r.answered for r in self._awaited())):
            self._step()

    # ------------------------------------------------------------------ stepping
    def _step(self) -> None:
        steps = []
        with self._lock:
            for r in self.rovers:
                v, w = r.cmd
                if not (np.isfinite(v) and np.isfinite(w)):
                    self.get_logger().warning(f'ignoring non-finite cmd_vel ({v}, {w})',
                                              throttle_duration_sec=5.0)
                    v, w = 0.0, 0.0
                if r.world.t - r.cmd_time > self.p['cmd_vel_timeout']:
                    v, w = 0.0, 0.0
                r.answered = False
                steps.append(r.world.step(v, w))
            self._awaiting_cmd = False
            self.steps += 1
        self._publish(steps)

    def _publish(self, steps: list[SimStep]) -> None:
        p = self.p
        self._pub_clock.publish(ClockMsg(clock=cv.to_time_msg(steps[0].t)))
        for r, s in zip(self.rovers, steps):
            if s.fix is not None:
                cov = cv.xy_covariance_to_ros(s.fix.cov, yaw_var=_UNOBSERVED, other_var=_UNOBSERVED)
                r.pub_fix.publish(cv.make_pose_with_covariance(s.t, p['map_frame'], s.fix.xy, 0.0, cov))
            if s.reading is not None:
                r.pub_reading.publish(make_reading(p['reading_type'], s.t, p['sensor_frame'],
                                                   s.reading.value, s.reading.variance))
            truth = s.truth
            r.pub_truth.publish(cv.make_odometry(
                s.t, p['map_frame'], r.base_frame, truth.pose[:2], truth.pose[2], np.zeros(36),
                v=truth.v, w=truth.w, vy=truth.vy, twist_cov6x6=np.zeros(36)))
            o = s.odometry
            r.odom_pose.add_odometry(s.t, o.v, o.w, o.vel_cov, vy=o.vy)
            r.pub_odom.publish(cv.make_odometry(
                s.t, r.odom_frame, r.base_frame, r.odom_pose.xy, float(r.odom_pose.x[2, 0]),
                r.odom_pose.pose_covariance_6x6(), v=o.v, w=o.w, vy=o.vy, twist_cov6x6=o.twist_cov))
        self._waited = 0.0
        self._awaiting_cmd = True

    # ------------------------------------------------------------------ status
    def stats(self) -> dict[str, float]:
        """Simulation speed since start: ``steps``, ``timeout_steps`` (lockstep steps taken after
        ``lockstep_timeout`` because no cmd_vel came), ``sim_time`` (s), ``wall_time`` (s),
        ``steps_per_s``, ``real_time_factor`` (sim s per wall s)."""
        wall = time.monotonic() - self._wall_start
        return {'steps': self.steps, 'timeout_steps': self.timeout_steps, 'sim_time': self.world.t,
                'wall_time': wall,
                'steps_per_s': self.steps / wall if wall > 0 else 0.0,
                'real_time_factor': self.world.t / wall if wall > 0 else 0.0}

    def _maybe_log_status(self) -> None:
        period = self.p['status_period']
        now = time.monotonic()
        if period <= 0 or now - self._status_wall < period:
            return
        dw = now - self._status_wall
        steps, dt_sim = self.steps - self._status_steps, self.world.t - self._status_t
        self.get_logger().info(f'sim t={self.world.t:.1f} s: {steps / dw:.0f} steps/s, '
                               f'{dt_sim / dw:.1f}x real time')
        self._status_wall, self._status_steps, self._status_t = now, self.steps, self.world.t


def main(args=None) -> None:
    """Entry point ``sim_rover`` (``--ros-args --params-file config/sim.yaml``)."""
    run_node(SimRoverNode, args, doc=__doc__, specs=SIM_ROVER_PARAMS)


if __name__ == '__main__':
    main()

"""Shutting the nodes down as a terminal and ``ros2 launch`` do (issue 30): the console scripts as processes, real
signals.

- Ctrl-C (SIGINT) or SIGTERM of the explorer stops the rover before the process ends: through Nav2's
  ``NavigateToPose`` action the goal is cancelled (an action server of a stand-in ``nav2_msgs`` built from the
  action's interface at test time, ``nav2_stand_in``, sees the cancel request); on topics a goal at the current pose
  estimate (with the rover's heading) and a one-point plan are published and acknowledged.
- Every node executable ends at the first SIGINT with status 0, also when it comes twice (the terminal's and the
  one ``ros2 launch`` forwards) in the middle of a simulated mission, and while the explorer's worker thread is in a
  long decision. The seconds each took are printed (run with ``-s``); the bound in the assertions, :data:`HANG`, is
  only a hang check (``ros2 launch`` escalates to SIGTERM after 5 s; the numbers measured are in the report of the
  change, not asserted).
- A node waiting for its inputs says so within 10 s, naming each topic, its type and what publishes there.

A stand-in robot in this process (its own rclpy context, ROS domain 219) publishes the pose estimate and the
readings and takes the goals.
"""
import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

from uncertain_bo.parameters.specs import config_path  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from ros_spin import BackgroundSpin  # noqa: E402
from .test_spin import _AS_FROM_A_TERMINAL, _installed_script, _journal  # noqa: E402

DOMAIN_ID = 219
#: wall seconds after a signal by which a node that has not ended counts as hung (a hang check, not a speed target)
HANG = 15.0
#: where the stand-in robot stands, and its heading (rad)
HOME, HEADING = np.array([5.0, 5.0]), 0.7


class NodeProcess:
    """A node's console script started as a terminal starts it (or ``command``), output to
    ``folder / f'{label}.log'``."""

    def __init__(self, name, args, folder, label=None, env=None, command=None):
        if command is None:
            script = _installed_script(name)
            if not script.exists():
                pytest.skip(f'the {name} console script is installed neither next to {sys.executable} nor in the '
                            'ament prefix')
            command = [sys.executable, '-c', _AS_FROM_A_TERMINAL, str(script)]
        self.label = label or name
        self.path = folder / f'{self.label}.log'
        full_env = {**os.environ, 'ROS_DOMAIN_ID': str(DOMAIN_ID), 'OMP_NUM_THREADS': '1', **(env or {})}
        with open(self.path, 'w') as out:
            self.proc = subprocess.Popen([*command, *args], stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                         cwd=folder)
        self.signalled = self.seconds = None

    def log(self):
        return self.path.read_text(errors='replace')

    def wait_until(self, cond, timeout=120.0):
        """Until ``cond()`` is true; the test fails if the node ends first or it takes longer than ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while not cond():
            assert self.proc.poll() is None and time.monotonic() < deadline, \
                f'{self.label} (exit {self.proc.poll()}):\n{self.log()[-4000:]}'
            time.sleep(0.05)

    def wait_for(self, pattern, timeout=120.0):
        """The first match of regex ``pattern`` in the output (:meth:`wait_until` it comes)."""
        self.wait_until(lambda: re.search(pattern, self.log()), timeout)
        return re.search(pattern, self.log())

    def send(self, signum=signal.SIGINT, twice=False):
        """Send ``signum`` (twice 10 ms apart, as a terminal's Ctrl-C and the one ``ros2 launch`` forwards)."""
        self.signalled = time.monotonic()
        self.proc.send_signal(signum)
        if twice:
            time.sleep(0.01)
            self.proc.send_signal(signum)

    def wait_exit(self):
        """The exit status, waited for at most :data:`HANG` s after the signal (then killed: None)."""
        try:
            code = self.proc.wait(timeout=max(0.1, self.signalled + HANG - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.seconds = time.monotonic() - self.signalled
        return code

    def stop(self, signum=signal.SIGINT, twice=False):
        """:meth:`send`, then :meth:`wait_exit`."""
        self.send(signum, twice)
        return self.wait_exit()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


class Robot:
    """The stand-in robot: odometry at 20 Hz and Temperature readings at 10 Hz where it stands (it never moves);
    takes goals on ``goal_pose`` and ``plan`` (recorded with the wall time they arrived) or, with ``nav2_action``,
    serves a ``NavigateToPose`` action whose goals run until they are cancelled (cancel requests recorded)."""

    def __init__(self, context, name, nav2_action=None):
        self.node = rclpy.create_node(name, context=context)
        self.odom = self.node.create_publisher(Odometry, 'odometry/filtered', 10)
        self.reading = self.node.create_publisher(Temperature, 'reading', 10)
        self.node.create_timer(0.05, self._publish_pose)
        self.node.create_timer(0.1, self._publish_reading)
        self.goals, self.plans, self.cancels, self.states = [], [], [], []
        self.node.create_subscription(PoseStamped, 'goal_pose', lambda m: self.goals.append((time.monotonic(), m)),
                                      10)                                    # as Nav2's bt_navigator: volatile
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)   # as pure_pursuit
        self.node.create_subscription(Path, 'plan', lambda m: self.plans.append((time.monotonic(), m)), latched)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 10)
        if nav2_action is not None:
            from rclpy.action import ActionServer, GoalResponse
            from rclpy.callback_groups import ReentrantCallbackGroup
            self.action = nav2_action
            self.server = ActionServer(self.node, nav2_action, 'navigate_to_pose', self._navigate,
                                       goal_callback=lambda _: GoalResponse.ACCEPT,
                                       cancel_callback=self._on_cancel, callback_group=ReentrantCallbackGroup())
        self.executing = []          # goal ids whose execution started
        self.released = threading.Event()   # set: running goals end (the test is over)

    def _now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _publish_pose(self):
        self.odom.publish(cv.make_odometry(self._now(), 'map', 'base_link', HOME, HEADING,
                                           np.diag([0.04, 0.04, 1e6, 1e6, 1e6, 0.01])))

    def _publish_reading(self):
        self.reading.publish(make_reading('temperature', self._now(), 'probe', 12.0, 0.01))

    def _on_diagnostics(self, msg):
        for s in msg.status:
            if s.name.startswith('explorer'):
                self.states += [kv.value for kv in s.values if kv.key == 'state']

    def _on_cancel(self, handle):
        from rclpy.action import CancelResponse
        self.cancels.append((time.monotonic(), bytes(handle.goal_id.uuid)))
        return CancelResponse.ACCEPT

    def _navigate(self, handle):
        self.executing.append(bytes(handle.goal_id.uuid))
        while not handle.is_cancel_requested and not self.released.is_set():
            time.sleep(0.02)
        if handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        return self.action.Result()


@contextlib.contextmanager
def spinning(*nodes):
    """Spin ``nodes`` on a thread while the block runs; destroyed after."""
    spin = BackgroundSpin(MultiThreadedExecutor(num_threads=3, context=nodes[0].context), nodes)
    try:
        yield
    finally:
        spin.close()


def explorer_args(tmp_path, *overrides):
    args = ['--ros-args', '-p', f'run_dir:={tmp_path / "run"}', '-p', 'search_bounds:=[0.0, 40.0, 0.0, 30.0]',
            '-p', 'max_speed:=0.0', '-p', 'n_initial:=3']
    for o in overrides:
        args += ['-p', o]
    return args


@pytest.fixture(scope='module')
def navigate_to_pose():
    """``(NavigateToPose, environment for a process that uses it)`` of the stand-in nav2_msgs."""
    import nav2_stand_in
    try:
        return nav2_stand_in.navigate_to_pose()
    except nav2_stand_in.Unavailable as exc:
        pytest.skip(f'stand-in nav2_msgs: {exc}')


def test_ctrl_c_cancels_the_nav2_goal(context, tmp_path, navigate_to_pose):
    """Before: Ctrl-C left the goal running (rclpy's handler shut the context down at once: no cancel could be
    sent) and Nav2 drove on to the last target."""
    action, env = navigate_to_pose
    robot = Robot(context, 'nav2_robot', nav2_action=action)
    with spinning(robot.node):
        try:
            with NodeProcess('explorer', explorer_args(tmp_path, 'goal_interface:=nav2_action'), tmp_path,
                             env=env) as explorer:
                explorer.wait_until(lambda: robot.executing)     # Nav2 drives to the first target
                code = explorer.stop(signal.SIGINT)
            deadline = time.monotonic() + 10.0      # (this process may take the request late on a loaded machine)
            while not robot.cancels and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            robot.released.set()
    log = explorer.log()
    assert code == 0, log
    assert [goal for _, goal in robot.cancels] == robot.executing[-1:], (robot.cancels, robot.executing, log)
    assert robot.cancels[0][0] > explorer.signalled
    assert "cancelling the goal sent to Nav2's navigate_to_pose action" in log and 'Traceback' not in log


def test_sigterm_stops_the_rover_on_goal_pose(context, tmp_path):
    """On topics (``goal_pose``, ``plan``): a goal at the pose estimate, facing the rover's heading, and a one-point
    plan, delivered before the process ends. Before: nothing was sent, the rover drove on."""
    robot = Robot(context, 'topic_robot')
    with spinning(robot.node):
        with NodeProcess('explorer', explorer_args(tmp_path, 'goal_interface:=topic'), tmp_path) as explorer:
            explorer.wait_until(lambda: robot.goals)
            target = robot.goals[-1][1].pose.position
            assert math.hypot(target.x - HOME[0], target.y - HOME[1]) > 1.0   # a target elsewhere: driving
            code = explorer.stop(signal.SIGTERM)
    log = explorer.log()
    assert code == 0, log
    after = [m for t, m in robot.goals if t > explorer.signalled]
    assert len(after) == 1, log
    stop = after[0].pose
    assert np.allclose([stop.position.x, stop.position.y], HOME)
    assert cv.quaternion_to_yaw(stop.orientation) == pytest.approx(HEADING)
    plan = [m for t, m in robot.plans if t > explorer.signalled]
    assert plan and np.allclose(cv.path_to_points(plan[-1])[2], [HOME]), log
    assert 'SIGTERM: shutting down' in log and 'stopping the rover where it is, (5.00, 5.00)' in log


@pytest.mark.slow
def test_every_node_ends_at_the_first_ctrl_c_in_a_running_mission(tmp_path):
    """The simulated mission's graph (sim_rover in lockstep, ekf, pure_pursuit, explorer) mid-mission, beside the
    other node executables idle in a namespace of their own (particle_filter, field_sensor, sensor_covariance,
    team_explorer): SIGINT twice to each, as ``ros2 launch`` and the terminal send it. Every one ends with status 0
    well before launch would escalate; the idle team explorer had said what it waits for."""
    sim, explorer_yaml = str(config_path('sim.yaml')), str(config_path('explorer.yaml'))
    sim_time = ['-p', 'use_sim_time:=true']
    spare = ['-r', '__ns:=/spare']
    nodes = [
        NodeProcess('sim_rover', ['--ros-args', '--params-file', sim], tmp_path),
        NodeProcess('ekf', ['--ros-args', '--params-file', sim, *sim_time], tmp_path),
        NodeProcess('pure_pursuit', ['--ros-args', '--params-file', sim, *sim_time], tmp_path),
        NodeProcess('explorer', ['--ros-args', '--params-file', explorer_yaml, *sim_time,
                                 '-p', f'run_dir:={tmp_path / "run"}', '-p', 'max_measurements:=200'], tmp_path),
        NodeProcess('particle_filter', ['--ros-args', *spare], tmp_path),
        NodeProcess('field_sensor', ['--ros-args', *spare], tmp_path),
        NodeProcess('sensor_covariance', ['--ros-args', *spare], tmp_path),
        NodeProcess('team_explorer', ['--ros-args', *spare, '-p', 'rovers:=[r1]', '-p', 'silence_timeout:=1000.0',
                                      '-p', f'run_dir:={tmp_path / "team"}'], tmp_path),
    ]
    try:
        nodes[3].wait_for(r'measurement 2/200')
        waiting = nodes[7].wait_for(r'waiting: /spare/r1/odometry/filtered \(nav_msgs/msg/Odometry\): no pose for '
                                    r'(\d+) s, no publisher.*/spare/r1/reading \(sensor_msgs/msg/Temperature\): no '
                                    r'reading for \d+ s')
        assert int(waiting.group(1)) <= 10
        for n in nodes:
            n.send(signal.SIGINT, twice=True)
        codes = {n.label: n.wait_exit() for n in nodes}
    finally:
        for n in nodes:
            n.kill()
    seconds = ', '.join(f'{n.label} {n.seconds:.2f} s' for n in nodes)
    print(f'\nexit after SIGINT: {seconds}')
    assert codes == {n.label: 0 for n in nodes}, f'{codes}; {seconds}\n' + '\n'.join(
        f'--- {n.label}\n{n.log()[-1500:]}' for n in nodes if codes[n.label] != 0)
    for n in nodes:
        assert 'Traceback' not in n.log() and 'SIGINT: shutting down' in n.log(), n.log()[-3000:]


@pytest.mark.slow
def test_ctrl_c_while_the_explorer_decides_on_its_worker_thread(context, tmp_path):
    """A long decision on the explorer's worker thread (400 resumed measurements, the largest acquisition
    maximiser: about 45 s on an idle 2-core machine) when Ctrl-C comes: the process ends at once; before it waited
    for the decision to finish (the interpreter joins the worker thread at exit). The decision is not sent."""
    _journal(tmp_path / 'run', 400)
    robot = Robot(context, 'robot_of_a_decider')
    with spinning(robot.node):
        with NodeProcess('explorer', ['--ros-args', '-p', f'run_dir:={tmp_path / "run"}',
                                      '-p', 'max_measurements:=1000', '-p', 'max_speed:=0.0',
                                      '-p', 'num_restarts:=1000', '-p', 'raw_samples:=100000',
                                      '-p', 'diagnostics_period:=0.2'], tmp_path) as explorer:
            explorer.wait_until(lambda: 'deciding' in robot.states[-1:])
            time.sleep(1.0)
            assert robot.states[-1] == 'deciding' and not robot.goals
            code = explorer.stop(signal.SIGINT)
    log = explorer.log()
    assert code == 0, f'exit {code} {explorer.seconds:.1f} s after SIGINT\n{log[-3000:]}'
    print(f'\nexplorer ended {explorer.seconds:.2f} s after SIGINT during a decision')
    assert not robot.goals and 'target 401' not in log
    decisions = [json.loads(s) for s in (tmp_path / 'run' / 'journal.jsonl').read_text().splitlines()
                 if '"decision"' in s]
    assert decisions == []


HANGING_NODE = """
import time
from rclpy.node import Node
from uncertain_bo.ros.spin import run_node


class HangingNode(Node):
    \"\"\"Its clean-up never ends (as rcl_node_fini once did, blocked in Fast DDS, under ros2 launch).\"\"\"

    def __init__(self):
        super().__init__('hanging_node')
        self.get_logger().info('built')

    def destroy_node(self):
        time.sleep(120)


SPECS = []


def main():
    run_node(HangingNode, ['hanging_node'])
"""


def test_a_console_script_whose_clean_up_hangs_ends_all_the_same(tmp_path):
    """The console script's body (``nodes._main``) around a node whose clean-up hangs: after SIGINT the process
    ends TEARDOWN_LIMIT s after its run ended, status 1, with the stack of the hang on stderr (before: it hung until
    launch's SIGTERM, and SIGKILL while rclpy's handler still caught SIGTERM)."""
    from uncertain_bo.ros.nodes import TEARDOWN_LIMIT
    (tmp_path / 'hanging_node.py').write_text(HANGING_NODE)
    script = ('import sys; sys.path.insert(0, sys.argv[1]); from uncertain_bo.ros import nodes; '
              "nodes.NODES['hanging_node'] = nodes.NodeEntry('hanging_node', 'hanging_node', 'HangingNode', 'SPECS'); "
              "nodes._main('hanging_node')")
    with NodeProcess('hanging_node', [str(tmp_path)], tmp_path, command=[sys.executable, '-c', script]) as node:
        node.wait_for('built')
        code = node.stop(signal.SIGINT)
    log = node.log()
    assert code == 1, log
    assert TEARDOWN_LIMIT <= node.seconds < HANG
    assert 'Timeout' in log and 'in destroy_node' in log, log      # faulthandler's dump: where it hung


def test_the_explorer_says_what_it_waits_for_within_10_s(context, tmp_path):
    """Simulated time with no /clock, no pose publisher, and a sensor publishing std_msgs/Float64 where the explorer
    expects sensor_msgs/Temperature: one warning names the three topics, their types and what publishes there, at
    most 10 s after start (before: nothing was logged, ever)."""
    probe = rclpy.create_node('probe', context=context)
    pub = probe.create_publisher(Float64, 'reading', 10)
    probe.create_timer(0.1, lambda: pub.publish(Float64(data=1.0)))
    with NodeProcess('explorer', explorer_args(tmp_path, 'use_sim_time:=true'), tmp_path) as explorer:
        with spinning(probe):
            line = explorer.wait_for(r'waiting: .*').group(0)
        code = explorer.stop(signal.SIGINT)
    log = explorer.log()
    assert code == 0, log
    assert 'clock on /clock (rosgraph_msgs/msg/Clock)' in log        # the start-up line
    assert re.search(r'/clock \(rosgraph_msgs/msg/Clock\): no simulated time \(use_sim_time is true\) for (\d+) s, '
                     r'no publisher', line), line
    assert '/odometry/filtered (nav_msgs/msg/Odometry): no pose for' in line and 'no publisher' in line
    assert re.search(r'/reading \(sensor_msgs/msg/Temperature\): no reading for \d+ s, (/probe|1 publisher\(s\)) '
                     r'publishes std_msgs/msg/Float64, not sensor_msgs/msg/Temperature \(parameter reading_type\)',
                     line), line
    assert max(int(s) for s in re.findall(r'for (\d+) s', line)) <= 10, line


def test_team_explorer_and_pure_pursuit_stop_the_rovers_when_shut_down(context, tmp_path):
    """In-process, what run_node calls after the signal (``stop_safely``, then spin until delivered): every rover
    the team explorer drives gets a goal where it stands, facing its heading, and pure_pursuit, while following a
    plan, sends a zero cmd_vel. Before: neither node had a last word."""
    import team_probe
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor
    from uncertain_bo.ros.pure_pursuit import PurePursuitNode
    from ros_spin import spin_until

    rovers = ('rover0', 'rover1')
    team = team_probe.make_team(context, tmp_path, rovers=list(rovers), max_measurements=5)
    probe = team_probe.TeamProbe(context, rovers)
    follower = PurePursuitNode(context=context, namespace='rover0')
    cmds = []
    probe.node.create_subscription(Twist, 'rover0/cmd_vel', cmds.append, 10)
    ex = SingleThreadedExecutor(context=context)
    for n in (team, probe.node, follower):
        ex.add_node(n)
    starts = {'rover0': np.array([1.0, 1.0]), 'rover1': np.array([19.0, 19.0])}

    def report():                                   # each rover where it started, facing HEADING
        now = probe.node.get_clock().now().nanoseconds * 1e-9
        for r in rovers:
            probe.odom[r].publish(cv.make_odometry(now, 'map', 'base_link', starts[r], HEADING,
                                                   np.diag([0.04, 0.04, 1.0, 1.0, 1.0, 0.01])))
            probe.reading[r].publish(make_reading('temperature', now, 'base_link', 1.0, 0.01))
    try:
        assert spin_until(ex, lambda: all(probe.goals.values()) and any(c.linear.x > 0 for c in cmds),
                          every=report, timeout=20.0)
        sent = {r: len(probe.goals[r]) for r in rovers}
        n_cmds = len(cmds)
        delivered = [team.stop_safely(), follower.stop_safely()]
        # (commands published before the stop may still be on their way: the last one counts)
        assert spin_until(ex, lambda: all(d() for d in delivered) and len(cmds) > n_cmds and cmds[-1].linear.x == 0
                          and all(len(probe.goals[r]) > sent[r] for r in rovers), timeout=5.0)
    finally:
        ex.shutdown()
        for n in (team, probe.node, follower):
            n.destroy_node()
    for r in rovers:
        stop = probe.goals[r][-1].pose
        assert np.allclose([stop.position.x, stop.position.y], starts[r])
        assert cv.quaternion_to_yaw(stop.orientation) == pytest.approx(HEADING)
    assert cmds[-1].angular.z == 0.0 and (follower.path is None or follower.arrived)   # (or at the stop goal)

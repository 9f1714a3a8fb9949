"""Acceptance: the real explorer node, started as ``ros2 run`` starts it, on a robot that is not our simulator.

Each test starts the ``explorer`` console script in its own process with ``--ros-args --params-file ... -p ...
-r ...`` (as ``ros2 run uncertain_bo explorer`` would) and talks to it over real DDS from this process, where a
stand-in robot publishes what a field robot's stack publishes:

- robot_localization's output: ``nav_msgs/Odometry`` in the ``map`` frame at 20 Hz with a full 6x6 pose
  covariance (correlated x and y), best effort in some runs and reliable in others;
- a probe of the run's reading type: ``std_msgs/Float64`` (no header, no variance) or a stamped
  ``sensor_msgs`` message with its variance, at 10 Hz, reading a smooth field at the robot's position;
- a goal consumer standing in for Nav2: it subscribes ``goal_pose`` as Nav2's bt_navigator does (volatile), or
  serves a ``NavigateToPose`` action (a stand-in ``nav2_msgs`` built at test time, see ``nav2_stand_in``),
  and "drives" the robot to each goal at 40 m/s.

The runs use the shipped examples (``config/examples/``) as a user would, with ``-p`` overrides only for the
mechanical waits (``dwell_time``), the run folder and the pose gate (``max_speed``: the stand-in is no rover),
and require the planned number of measurements; the journal is checked against what the robot published (every
reading paired with the pose of the place it was read, the published covariance stored as the location
distribution) and no pose was refused as stale.
"""
import contextlib
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
# a spinning thread that dies (as the module-wide executor once did) fails the test that killed it, not a later
# one by a timeout
pytestmark = [pytest.mark.ros, pytest.mark.slow,
              pytest.mark.filterwarnings('error::pytest.PytestUnhandledThreadExceptionWarning')]

from builtin_interfaces.msg import Duration  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402

from ros_spin import BackgroundSpin  # noqa: E402
from uncertain_bo.parameters.specs import config_path  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.reading_messages import READING_TYPES, make_reading  # noqa: E402

DOMAIN_ID = 90 + os.getpid() % 10
PADDOCK = config_path('examples/paddock_nav2.yaml')          # installed (setup.py data_files) or the source tree
ORCHARD = config_path('examples/orchard_gnss_degraded.yaml')
#: the robot's pose covariance (6x6, row-major x, y, z, roll, pitch, yaw), m² and rad²: x and y correlated
COVARIANCE = np.diag([0.09, 0.16, 1e6, 1e6, 1e6, 0.05])
COVARIANCE[0, 1] = COVARIANCE[1, 0] = 0.03
SPEED = 100.0          # m/s: the stand-in "drives" fast, the test is about the interfaces
#: reading type -> (field value at (x, y), reading variance the probe reports)
FIELDS = {
    'float64': (lambda x, y: 0.2 + 0.15 * math.exp(-((x - 40) ** 2 + (y - 25) ** 2) / 200.0), 0.0),
    'temperature': (lambda x, y: 8.0 + 4.0 * math.exp(-((x - 70) ** 2 + (y - 20) ** 2) / 400.0), 0.04),
    'fluid_pressure': (lambda x, y: 101325.0 + 80.0 * math.sin(x / 7.0) * math.cos(y / 9.0), 4.0),
    'illuminance': (lambda x, y: 600.0 + 200.0 * math.cos(x / 11.0) + 3.0 * y, 25.0),
    'relative_humidity': (lambda x, y: 0.55 + 0.2 * math.sin((x + y) / 13.0), 1e-4),
}


def explorer_command():
    """How ``ros2 run uncertain_bo explorer`` starts the node: its console script, beside this Python (pip) or in
    ``<prefix>/lib/uncertain_bo`` (colcon, apt: where ``ros2 run`` looks); else the same entry point."""
    script = pathlib.Path(sys.executable).parent / 'explorer'
    if not script.is_file():
        try:
            from ament_index_python.packages import get_package_prefix
            script = pathlib.Path(get_package_prefix('uncertain_bo')) / 'lib' / 'uncertain_bo' / 'explorer'
        except (ImportError, LookupError, ValueError, OSError):
            pass
    if script.is_file():
        return [str(script)]
    return [sys.executable, '-c', 'from uncertain_bo.ros.explorer import main; main()']


class Robot:
    """The stand-in field robot (module docstring): localisation, probe and a goal consumer."""

    def __init__(self, context, reading_type, *, odom_topic='odometry/filtered', reading_topic='reading',
                 goal_topic='goal_pose', reliable_odometry=False, start=(5.0, 5.0), nav2_action=None,
                 abort_first=False, name='field_robot'):
        self.node = rclpy.create_node(name, context=context)
        self.xy = np.array(start, dtype=float)
        self.goal = None
        self.goals = []
        self.lock = threading.Lock()
        self.field, self.variance = FIELDS[reading_type]
        self.reading_type = reading_type
        rel = ReliabilityPolicy.RELIABLE if reliable_odometry else ReliabilityPolicy.BEST_EFFORT
        self.odom_pub = self.node.create_publisher(Odometry, odom_topic, QoSProfile(depth=10, reliability=rel))
        self.reading_pub = self.node.create_publisher(READING_TYPES[reading_type][0], reading_topic, 10)
        self.published = []          # (stamp, x, y, value) of every reading
        self.node.create_timer(0.05, self._step)
        self.node.create_timer(0.1, self._read)
        self.feedbacks = 0
        self.aborted = []
        if nav2_action is None:
            # as Nav2's bt_navigator subscribes goal_pose: volatile, reliable
            self.node.create_subscription(PoseStamped, goal_topic, self._on_goal, 10)
        else:
            from rclpy.action import ActionServer
            from rclpy.callback_groups import ReentrantCallbackGroup
            self.action = nav2_action
            self.abort_first = abort_first
            self.server = ActionServer(self.node, nav2_action, 'navigate_to_pose', self._navigate,
                                       callback_group=ReentrantCallbackGroup())

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _on_goal(self, msg):
        with self.lock:
            self.goal = np.array([msg.pose.position.x, msg.pose.position.y])
            if not self.goals or not np.allclose(self.goals[-1], self.goal):
                self.goals.append(self.goal.copy())

    def _navigate(self, handle):
        """NavigateToPose as Nav2 serves it: feedback while driving; the first goal aborted if asked."""
        p = handle.request.pose.pose.position
        goal = np.array([p.x, p.y])
        with self.lock:
            self.goals.append(goal.copy())
            first = len(self.goals) == 1
        result = self.action.Result()
        if first and self.abort_first:
            handle.abort()
            result.error_code = 104            # Nav2 11+: NO_VALID_PATH of ComputePathToPose
            result.error_msg = 'no valid path: the goal is inside an obstacle'
            self.aborted.append(goal)
            return result
        with self.lock:
            self.goal = goal
        t0 = time.monotonic()
        while True:
            with self.lock:
                remaining = float(np.linalg.norm(self.xy - goal))
            if remaining < 0.05:
                break
            fb = self.action.Feedback()
            fb.distance_remaining = remaining
            spent = time.monotonic() - t0
            fb.navigation_time = Duration(sec=int(spent), nanosec=int(spent % 1.0 * 1e9))
            handle.publish_feedback(fb)
            self.feedbacks += 1
            time.sleep(0.05)
        handle.succeed()
        return result

    def _step(self):
        with self.lock:
            if self.goal is not None:
                d = self.goal - self.xy
                dist = float(np.linalg.norm(d))
                self.xy = self.goal.copy() if dist <= SPEED * 0.05 else self.xy + d / dist * SPEED * 0.05
            xy = self.xy.copy()
        self.odom_pub.publish(cv.make_odometry(self.now(), 'map', 'base_link', xy, 0.0, COVARIANCE))

    def _read(self):
        with self.lock:
            xy = self.xy.copy()
        stamp = self.now()
        value = self.field(*xy)
        self.published.append((stamp, xy[0], xy[1], value))
        self.reading_pub.publish(make_reading(self.reading_type, stamp, 'probe', value, self.variance))


@contextlib.contextmanager
def spinning(context, *robots):
    """Spin the robots' nodes on an executor of their own while the block runs, then stop it and destroy them
    (:class:`ros_spin.BackgroundSpin`). A module-wide executor spinning while a test destroyed its robot raised
    ``InvalidHandle`` in the spinning thread, which ended it: the next test's robot was never spun, published no
    pose, and its explorer waited out the timeout."""
    spin = BackgroundSpin(MultiThreadedExecutor(num_threads=3, context=context), [r.node for r in robots])
    try:
        yield
    finally:
        spin.close()


def start_explorer(folder, params_file, *, overrides=(), remaps=(), env=None):
    """Start the explorer process with ``params_file``, ``-p`` overrides and ``-r`` remaps, its output going to
    ``folder / 'explorer.log'`` and its run folder ``folder / 'run'``."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = explorer_command() + ['--ros-args', '--params-file', str(params_file), '-p', f'run_dir:={folder / "run"}',
                                '-p', 'exit_when_done:=true', '-p', 'diagnostics_period:=5.0',
                                # the stand-in moves a fixed step per timer tick at SPEED (100 m/s, and faster when
                                # ticks bunch up): no rover's physics, so the pose gate (max_speed) is off here
                                '-p', 'max_speed:=0.0']
    for o in overrides:
        cmd += ['-p', o]
    for r in remaps:
        cmd += ['-r', r]
    full_env = {**os.environ, 'ROS_DOMAIN_ID': str(DOMAIN_ID), 'ROS_LOCALHOST_ONLY': '1', 'OMP_NUM_THREADS': '1',
                'MKL_NUM_THREADS': '1', **(env or {})}
    with open(folder / 'explorer.log', 'w') as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env)


def finish_explorer(folder, proc, timeout):
    """Wait for the explorer to end (``exit_when_done``); return (result file, journal records, log). The log is
    in the failure message; a process still running at the timeout is interrupted (SIGINT, then killed)."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        code = None
    text = (folder / 'explorer.log').read_text()
    assert code == 0, f'explorer exit {code}; log:\n{text[-6000:]}'
    result = json.loads((folder / 'run' / 'explorer_result.json').read_text())
    journal = [json.loads(s) for s in (folder / 'run' / 'journal.jsonl').read_text().splitlines() if s.strip()]
    return result, journal, text


def run_explorer(context, tmp_path, robot, params_file, *, timeout=150.0, **kwargs):
    """:func:`start_explorer` with ``robot`` spinning, then :func:`finish_explorer`; the robot is closed after."""
    with spinning(context, robot):
        proc = start_explorer(tmp_path, params_file, **kwargs)
        return finish_explorer(tmp_path, proc, timeout)


def check_measurements(robot, result, journal, n, reading_type, log):
    obs = [r for r in journal if r['type'] == 'observation']
    assert result['measurements'] == len(obs) == n, log[-4000:]
    assert result['stopped_because'].startswith('max_measurements'), result['stopped_because']
    stale = {k: v for k, v in result['rejected'].items() if 'stale' in k}
    assert not stale, f'poses or readings refused as stale: {result["rejected"]}'
    field, variance = FIELDS[reading_type]
    for r in obs:
        loc = r['location']
        x, y = loc['mean'] if 'mean' in loc else loc['samples'][0]
        # the reading was taken where the pose it is paired with says (the robot stood still there)
        assert r['y'] == pytest.approx(field(x, y), rel=1e-9, abs=1e-9), (r['y'], x, y)
        # the location distribution is the published covariance's (x, y) block
        assert np.allclose(loc['covariance'], COVARIANCE[:2, :2]), loc['covariance']
        assert abs(r['reading_stamp'] - r['pose_stamp']) <= 0.5
        if reading_type == 'float64':
            assert r['reading_stamped_on_arrival'] and r['reading_variance'] > 0    # reading_noise_std²
        else:
            assert 'reading_stamped_on_arrival' not in r and r['reading_variance'] == pytest.approx(variance)
    return obs


def test_paddock_example_with_a_float64_probe_takes_its_20_measurements(context, tmp_path):
    """config/examples/paddock_nav2.yaml as shipped: a std_msgs/Float64 soil-moisture probe, robot_localization's
    odometry/filtered published best effort, Nav2's goal_pose (nav2_msgs is not installed, so 'auto' takes the
    topic); 20 measurements."""
    robot = Robot(context, 'float64', reading_topic='/soil_probe/moisture', reliable_odometry=False)
    result, journal, log = run_explorer(context, tmp_path, robot, PADDOCK, overrides=['dwell_time:=0.2'],
                                        remaps=['reading:=/soil_probe/moisture', 'plan:=explorer/plan'])
    assert "goals to topics /goal_pose and /explorer/plan" in log
    obs = check_measurements(robot, result, journal, 20, 'float64', log)
    for r in obs:        # the paddock's bounds
        assert 0.0 <= r['target'][0] <= 60.0 and 0.0 <= r['target'][1] <= 40.0
    assert all(r['reading_variance'] == pytest.approx(0.02 ** 2) for r in obs)


def test_orchard_example_and_every_stamped_reading_type_measure(context, tmp_path):
    """config/examples/orchard_gnss_degraded.yaml (sensor_msgs/Temperature with header and variance,
    robot_localization's odometry/global remapped, published reliable), and one robot for each other stamped
    type (FluidPressure, Illuminance, RelativeHumidity; odometry best effort or reliable): four explorers at
    once, each with its robot on topics of its own."""
    runs = {'temperature': (True, 4), 'fluid_pressure': (False, 2), 'illuminance': (True, 2),
            'relative_humidity': (False, 2)}
    robots, starts, procs = {}, {}, {}
    for i, (reading_type, (reliable, n)) in enumerate(runs.items()):
        pre = f'/r{i}/'
        odom = pre + ('odometry/global' if reading_type == 'temperature' else 'odometry/filtered')
        robots[reading_type] = Robot(context, reading_type, odom_topic=odom, reading_topic=pre + 'probe',
                                     goal_topic=pre + 'goal_pose', reliable_odometry=reliable, name=f'field_robot_{i}')
        remaps = [f'odometry/filtered:={odom}', f'reading:={pre}probe', f'goal_pose:={pre}goal_pose',
                  f'plan:={pre}explorer/plan']
        if reading_type == 'temperature':         # the example's section is 'explorer': the node keeps its name
            params = ORCHARD
            overrides = ['dwell_time:=0.2', 'max_measurements:=4']
        else:
            remaps.append(f'__node:=explorer_{i}')
            params = tmp_path / f'{reading_type}.yaml'
            params.write_text('/**:\n  ros__parameters:\n    search_bounds: [0.0, 40.0, 0.0, 30.0]\n'
                              f"    reading_type: '{reading_type}'\n    max_measurements: {n}\n"
                              '    n_initial: 2\n')
            overrides = ['dwell_time:=0.2']
        starts[reading_type] = (params, overrides, remaps)
    with spinning(context, *robots.values()):
        try:
            for reading_type, (params, overrides, remaps) in starts.items():
                procs[reading_type] = start_explorer(tmp_path / reading_type, params, overrides=overrides,
                                                     remaps=remaps)
            for reading_type, (reliable, n) in runs.items():
                result, journal, log = finish_explorer(tmp_path / reading_type, procs[reading_type], 150.0)
                check_measurements(robots[reading_type], result, journal, n, reading_type, log)
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()


def test_nav2_action_path_with_a_stand_in_navigate_to_pose(context, tmp_path):
    """goal_interface 'nav2_action' against an action server built from NavigateToPose's interface (a stand-in
    nav2_msgs generated and compiled at test time): the first goal is aborted with Nav2's error code and message
    (skipped at once, counted, kept out), the others succeed with feedback and are measured."""
    import nav2_stand_in
    try:
        python_dir, lib_dir = nav2_stand_in.build()
    except nav2_stand_in.Unavailable as exc:
        pytest.skip(f'stand-in nav2_msgs: {exc}')
    nav2_stand_in.load_libraries(lib_dir)
    sys.path.insert(0, str(python_dir))
    try:
        from nav2_msgs.action import NavigateToPose
    finally:
        sys.path.remove(str(python_dir))
    robot = Robot(context, 'temperature', nav2_action=NavigateToPose, abort_first=True)
    params = tmp_path / 'robot.yaml'
    params.write_text("explorer:\n  ros__parameters:\n    search_bounds: [0.0, 40.0, 0.0, 30.0]\n"
                      "    goal_interface: 'auto'\n    max_measurements: 2\n    n_initial: 2\n")
    env = {'PYTHONPATH': os.pathsep.join([str(python_dir), os.environ.get('PYTHONPATH', '')]),
           'LD_LIBRARY_PATH': os.pathsep.join([str(lib_dir), os.environ.get('LD_LIBRARY_PATH', '')])}
    result, journal, log = run_explorer(context, tmp_path, robot, params, overrides=['dwell_time:=0.2'], env=env)
    assert "goals to Nav2's navigate_to_pose action" in log
    check_measurements(robot, result, journal, 2, 'temperature', log)
    assert result['rejected'].get('goal: aborted by the controller') == 1
    assert result['targets_skipped'] == 1
    (zone,) = result['keep_out_zones']
    assert 'error_code 104: no valid path' in zone['reason']
    assert np.allclose(zone['centre'], robot.aborted[0])
    assert robot.feedbacks > 0
    # the measured targets are the goals the action server succeeded, none in the zone
    for r in (r for r in journal if r['type'] == 'observation'):
        assert np.linalg.norm(np.array(r['target']) - robot.aborted[0]) >= zone['radius'] - 1e-9

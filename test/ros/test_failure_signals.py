"""Failure signals a field engineer can act on (issue 30): warnings about an input name its topic (remapped,
resolved) and type, a mission that ends with no measurement ends the node non-zero and says why, the start-up line
names every input, and a node waiting for inputs says what it waits for and what publishes there.

In-process nodes on their own rclpy context (ROS domain 218); the node's ROS log lines are read from stderr
(capfd), the library's from Python logging (caplog).
"""
import json
import re
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros import rover_inputs  # noqa: E402
from uncertain_bo.ros.explorer import EXIT_NOT_COMPLETED, ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from ros_spin import spin_until  # noqa: E402
import team_probe  # noqa: E402

DOMAIN_ID = 218
#: a field robot's remappings: robot_localization's global output and a soil probe publishing std_msgs/Float64
REMAPS = ['--ros-args', '-r', 'odometry/filtered:=odometry/global', '-r', 'reading:=/soil/moisture']
POSE_SOURCE = '/rover1/odometry/global (nav_msgs/msg/Odometry)'
READING_SOURCE = '/soil/moisture (std_msgs/msg/Float64)'


def make_explorer(context, tmp_path, **params):
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'run_dir': str(tmp_path), 'tick_rate': 50.0,
              'max_speed': 0.0, 'reading_type': 'float64', 'dwell_time': 0.1, 'exit_when_done': True, **params}
    return ExplorerNode(context=context, namespace='rover1', cli_args=REMAPS,
                        parameter_overrides=parameter_overrides(values))


@pytest.fixture
def spun(context):
    """``spun(*nodes)``: one executor for the nodes; everything destroyed after the test."""
    made = []

    def spin(*nodes):
        ex = SingleThreadedExecutor(context=context)
        for n in nodes:
            ex.add_node(n)
        made.append((ex, nodes))
        return ex
    yield spin
    for ex, nodes in made:
        ex.shutdown()
        for n in nodes:
            n.destroy_node()


def test_a_silent_sensor_is_named_and_no_measurement_ends_non_zero(context, tmp_path, caplog, capfd, spun):
    """The probe never publishes: the retry and skip warnings name the reading's topic and type; the mission ends
    after max_consecutive_skips with no measurement, so the node asks to exit EXIT_NOT_COMPLETED (it exited 0),
    logs why as an error, and the result file's stopped_because says it. A pose in the wrong frame is refused with
    the pose topic named."""
    node = make_explorer(context, tmp_path, reading_timeout=0.2, reading_retries=1, max_consecutive_skips=1)
    robot = rclpy.create_node('robot', context=context)
    odom = robot.create_publisher(Odometry, '/rover1/odometry/global', 10)
    goals = []
    robot.create_subscription(PoseStamped, '/rover1/goal_pose', goals.append, 10)
    ex = spun(node, robot)

    def publish(frame='map'):
        now = robot.get_clock().now().nanoseconds * 1e-9
        xy = [goals[-1].pose.position.x, goals[-1].pose.position.y] if goals else [10.0, 10.0]
        odom.publish(cv.make_odometry(now, frame, 'base_link', xy, 0.0, np.diag([0.04, 0.04, 1, 1, 1, 1])))

    assert spin_until(ex, lambda: node.explorer.rejected['pose: wrong frame_id'] >= 1, every=lambda: publish('odom'))
    assert spin_until(ex, lambda: getattr(node, 'exit_code', None) is not None, every=publish, timeout=30.0)
    assert node.exit_code == EXIT_NOT_COMPLETED and node.explorer.planner.n == 0
    text = caplog.text
    assert f'pose on {POSE_SOURCE} rejected (wrong frame_id' in text
    assert f'no valid reading on {READING_SOURCE} within reading_timeout = 0.2 s; retry 1/1' in text
    assert 'sensor silent at target' in text and f'no reading on {READING_SOURCE} arrived' in text
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['measurements'] == 0 and READING_SOURCE in result['stopped_because']
    err = capfd.readouterr().err
    assert '[ERROR]' in err and 'mission ended with no measurement: 1 targets in a row could not be measured' in err


def test_the_start_up_line_and_the_waiting_reports_name_every_input(context, tmp_path, capfd, spun, monkeypatch):
    """Remapped, namespaced inputs: the start-up line names them resolved, with their types; with nothing arriving
    the watch names each with what publishes there: nobody on the pose topic, a publisher of the wrong type on the
    reading topic (reading_type float64, the probe publishes Temperature)."""
    node = make_explorer(context, tmp_path)
    line = [s for s in capfd.readouterr().err.splitlines() if 'exploring' in s]
    assert line and f'inputs: pose on {POSE_SOURCE}, reading on {READING_SOURCE};' in line[0], line
    elsewhere = rclpy.Context()     # another process's publisher (one participant cannot hold both types)
    rclpy.init(context=elsewhere, domain_id=DOMAIN_ID)
    try:
        probe = rclpy.create_node('probe', context=elsewhere)
        probe.create_publisher(Temperature, '/soil/moisture', 10)
        ex = spun(node)
        waiting = node.watch.waiting(time.monotonic())
        assert [w[:3] for w in waiting] == [('pose', '/rover1/odometry/global', 'nav_msgs/msg/Odometry'),
                                            ('reading', '/soil/moisture', 'std_msgs/msg/Float64')]
        monkeypatch.setattr(rover_inputs, 'WAIT_FIRST_REPORT', 0.0)
        assert spin_until(ex, lambda: node.count_publishers('/soil/moisture') == 1)
        node.watch.check()
    finally:
        rclpy.shutdown(context=elsewhere)
    err = capfd.readouterr().err
    assert ('waiting: /rover1/odometry/global (nav_msgs/msg/Odometry): no pose for 0 s, no publisher (is it '
            'running, and is the topic remapped?)') in err, err
    assert re.search(r'/soil/moisture \(std_msgs/msg/Float64\): no reading for 0 s, (/probe|1 publisher\(s\)) '
                     r'publishes sensor_msgs/msg/Temperature, not std_msgs/msg/Float64 \(parameter reading_type\)',
                     err), err
    node.watch.check()                                   # said once per WAIT_REPORT_PERIOD
    assert 'waiting:' not in capfd.readouterr().err


def test_a_team_that_ends_with_no_measurement_exits_non_zero(context, tmp_path, spun, capfd):
    """Both rovers' budgets end the mission before any measurement (max_distance far below the first leg): the team
    explorer asks to exit EXIT_NOT_COMPLETED (it exited 0) with an error line; the start-up line names each rover's
    inputs."""
    node = team_probe.make_team(context, tmp_path, rovers=['rover0', 'rover1'], max_distance=0.001,
                                max_measurements=3, exit_when_done=True)
    err = capfd.readouterr().err
    assert ('inputs: rover0: pose on /rover0/odometry/filtered (nav_msgs/msg/Odometry), reading on /rover0/reading '
            '(sensor_msgs/msg/Temperature); rover1: pose on /rover1/odometry/filtered') in err, err
    probe = team_probe.TeamProbe(context, ('rover0', 'rover1'))
    ex = spun(node, probe.node)
    starts = {'rover0': np.array([1.0, 1.0]), 'rover1': np.array([19.0, 19.0])}
    assert spin_until(ex, lambda: node.done, every=lambda: [probe.report(r, starts[r], 1.0) for r in starts])
    assert node.planner.n == 0 and not node.completed and node.exit_code == EXIT_NOT_COMPLETED
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['measurements'] == 0 and 'max_distance = 0.001 m' in result['stopped_because']
    err = [s for s in capfd.readouterr().err.splitlines() if 'team done' in s]
    assert err and err[0].startswith('[ERROR]'), err
    assert f"team done, not completed: no measurement ({result['stopped_because']})" in err[0], err

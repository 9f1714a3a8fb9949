"""Explorer node over real rclpy topics: pose + reading in -> goal out, bad poses never stored.

Own rclpy context on ROS domain 200 + pid % 30 (200..229, below the 233 limit), apart from the other
ROS test modules.
"""
import json
import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.parameters import ParameterError  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402

DOMAIN_ID = 200 + os.getpid() % 30


@pytest.fixture(scope='module')
def context():
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    yield ctx
    rclpy.shutdown(context=ctx)


def make_explorer(context, tmp_path, **params):
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_measurements': 2, 'dwell_time': 0.2,
              'run_dir': str(tmp_path), 'n_initial': 5, 'tick_rate': 50.0, **params}
    return ExplorerNode(context=context, parameter_overrides=parameter_overrides(values))


class Probe:
    def __init__(self, context):
        self.node = rclpy.create_node('probe', context=context)
        self.goals, self.plans = [], []
        self.node.create_subscription(PoseStamped, 'goal_pose', lambda m: self.goals.append(m), 10)
        self.node.create_subscription(Path, 'plan', lambda m: self.plans.append(m), 10)
        self.odom = self.node.create_publisher(Odometry, 'odometry/filtered', 10)
        self.reading = self.node.create_publisher(Temperature, 'reading', 10)

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def publish_pose(self, xy, cov=None, frame='map'):
        cov6 = np.zeros((6, 6))
        cov6[:2, :2] = np.eye(2) * 0.04 if cov is None else cov
        self.odom.publish(cv.make_odometry(self.now(), frame, 'base_link', xy, 0.0, cov6))

    def publish_reading(self, value):
        self.reading.publish(cv.make_reading('temperature', self.now(), 'base_link', value, 0.01))


def spin_until(executor, cond, timeout=10.0, every=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
        if every:
            every()
        if cond():
            return True
    return False


def test_pose_and_reading_in_goal_out(context, tmp_path):
    node = make_explorer(context, tmp_path)
    probe = Probe(context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    try:
        assert spin_until(ex, lambda: bool(probe.goals and probe.plans),
                          every=lambda: probe.publish_pose([10.0, 10.0]))
        goal = probe.goals[-1]
        target = np.array([goal.pose.position.x, goal.pose.position.y])
        assert goal.header.frame_id == 'map'
        assert np.all((target >= 0) & (target <= 20))
        assert probe.plans and len(probe.plans[-1].poses) == 2

        def at_target():  # the rover "arrives": estimates at the target, sensor publishing
            probe.publish_pose(target + 0.1)
            probe.publish_reading(42.0)
        assert spin_until(ex, lambda: node.explorer.planner.n >= 1, every=at_target)
        assert spin_until(ex, lambda: len(probe.goals) >= 2, every=at_target)
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    obs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()
           if '"observation"' in s]
    assert obs[0]['y'] == 42.0
    assert np.allclose(obs[0]['location']['covariance'], [[0.04, 0.0], [0.0, 0.04]])
    assert np.allclose(obs[0]['location']['mean'], target + 0.1)


def test_malformed_poses_are_rejected_over_topics(context, tmp_path):
    node = make_explorer(context, tmp_path)
    probe = Probe(context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    bad = [
        {'xy': [1.0, 1.0], 'cov': np.array([[np.nan, 0], [0, 1.0]])},
        {'xy': [1.0, 1.0], 'cov': np.array([[1.0, 3.0], [3.0, 1.0]])},
        {'xy': [1.0, 1.0], 'cov': np.array([[-1.0, 0], [0, 1.0]])},
        {'xy': [1.0, 1.0], 'frame': 'odom'},
    ]
    try:
        for b in bad:
            probe.publish_pose(**b)
        assert spin_until(ex, lambda: sum(node.explorer.rejected.values()) >= 4, timeout=5.0)
        assert node.explorer.latest_pose is None
        assert not probe.goals  # never started: no valid pose yet
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()


def test_invalid_parameter_fails_at_startup_naming_it(context, tmp_path):
    with pytest.raises(ParameterError, match='beta'):
        make_explorer(context, tmp_path, beta=-1.0)
    with pytest.raises(ParameterError, match='search_bounds'):
        make_explorer(context, tmp_path, search_bounds=[10.0, 0.0, 0.0, 10.0])

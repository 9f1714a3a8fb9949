"""The explorer node's revised_path_topic over real rclpy topics: a nav_msgs/Path of a smoother's corrected past
(the message fuse's Path2DPublisher and LIO-SAM publish; here a stand-in publisher of the same message) re-places
the stored readings; an invalid pose in it is counted."""
import contextlib
import json
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.revised_path import poses_from_path  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 20 + os.getpid() % 20


def path_msg(stamps, xy_of, header_stamp, frame='map'):
    msg = Path()
    msg.header.frame_id = frame
    msg.header.stamp = cv.to_time_msg(header_stamp)
    for s in stamps:
        p = PoseStamped()
        p.header.stamp = cv.to_time_msg(s)
        p.pose.position.x, p.pose.position.y = (float(v) for v in xy_of(s))
        p.pose.orientation.w = 1.0
        msg.poses.append(p)
    return msg


@contextlib.contextmanager
def with_probe(context, node):
    """``(probe node, executor)`` spinning ``node`` and a probe; both destroyed on exit."""
    probe = rclpy.create_node('probe', context=context)
    ex = SingleThreadedExecutor(context=context)
    for n in (node, probe):
        ex.add_node(n)
    try:
        yield probe, ex
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()


def test_a_path_message_becomes_stamped_poses_and_the_revision_stamp():
    msg = path_msg([1.0, 2.0], lambda s: (s, 2 * s), 5.0)
    msg.poses[1].header.frame_id = 'odom'
    poses, stamp = poses_from_path(msg, 0.3)
    assert stamp == 5.0 and [p.stamp for p in poses] == [1.0, 2.0]
    assert [p.frame_id for p in poses] == ['map', 'odom'] and np.allclose(poses[1].xy, [2.0, 4.0])
    assert np.allclose(poses[0].cov, np.eye(2) * 0.09)
    _, stamp = poses_from_path(path_msg([1.0, 2.0], lambda s: (s, s), 0.0), 0.0)   # header stamp left unset
    assert stamp == 2.0


@pytest.mark.parametrize('std', [0.0, 0.2])
def test_the_node_re_places_stored_readings_from_a_revised_path(context, tmp_path, std):
    node = ExplorerNode(context=context, parameter_overrides=parameter_overrides({
        'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_measurements': 3, 'dwell_time': 0.2, 'run_dir': str(tmp_path),
        'n_initial': 5, 'tick_rate': 50.0, 'max_speed': 0.0, 'revised_path_topic': 'smoother/path',
        'revised_path_std': std}))
    with with_probe(context, node) as (probe, ex):
        odom = probe.create_publisher(Odometry, 'odometry/filtered', 10)
        reading = probe.create_publisher(Temperature, 'reading', 10)
        path_pub = probe.create_publisher(Path, 'smoother/path', 1)
        goals = []
        probe.create_subscription(PoseStamped, 'goal_pose', lambda m: goals.append(m), 10)
        now = lambda: probe.get_clock().now().nanoseconds * 1e-9   # noqa: E731

        def at_goal():
            target = [goals[-1].pose.position.x, goals[-1].pose.position.y] if goals else [10.0, 10.0]
            cov6 = np.zeros((6, 6))
            cov6[:2, :2] = np.eye(2) * 0.04
            odom.publish(cv.make_odometry(now(), 'map', 'base_link', np.asarray(target) + 0.1, 0.0, cov6))
            reading.publish(make_reading('temperature', now(), 'base_link', 3.0, 0.01))
        planner = node.explorer.planner
        assert spin_until(ex, lambda: planner.n >= 2, every=at_goal, timeout=60.0)
        stamps = [r.stamp for r in planner.readings]
        covs = [row[1].covariance[0].numpy().copy() for row in planner.observations.rows]
        revised = lambda s: (1.0 + 0.01 * (s - stamps[0]), 19.0)   # noqa: E731
        msg = path_msg(sorted(stamps), revised, now())
        bad = path_msg([stamps[0]], lambda s: (np.nan, 1.0), now())
        msg.poses.append(bad.poses[0])                          # one pose of the path is invalid
        assert spin_until(ex, lambda: planner.revisions_applied >= len(stamps),
                          every=lambda: path_pub.publish(msg), timeout=20.0)
        for r, row, cov in zip(planner.readings, planner.observations.rows, covs):
            assert np.allclose(row[1].mean[0].numpy(), revised(r.stamp))
            assert np.allclose(row[1].covariance[0].numpy(), cov if std == 0.0 else np.eye(2) * std ** 2)
        assert node.explorer.rejected['revision: non-finite position'] >= 1
        recs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()]
        assert {r['source'] for r in recs if r['type'] == 'revision'} == {'revised_path'}


def test_the_team_node_re_places_a_rovers_own_readings_from_its_revised_path(context, tmp_path):
    import torch

    import team_probe
    from uncertain_bo.distributions import DTYPE, Gaussian

    node = team_probe.make_team(context, tmp_path, rovers=['rover0', 'rover1'], max_measurements=10,
                                revised_path_topic='smoother/path', revised_path_std=0.1)
    with with_probe(context, node) as (probe, ex):
        pub = probe.create_publisher(Path, 'rover0/smoother/path', 1)
        assert node.rovers['rover0'].revised_path_sub.topic_name == '/rover0/smoother/path'
        loc = Gaussian(torch.tensor([[5.0, 5.0]], dtype=DTYPE), torch.eye(2, dtype=DTYPE)[None])
        for seq in range(2):                          # each rover's two readings, merged as the node merges them
            for rover in ('rover0', 'rover1'):
                node.team.merge(rover, seq, None, loc, 1.0, reading_stamp=10.0 + seq, pose_stamp=10.0 + seq)
        msg = path_msg([10.0, 11.0], lambda s: (s, 1.0), 50.0)
        assert spin_until(ex, lambda: node.planner.revisions_applied >= 2, every=lambda: pub.publish(msg),
                          timeout=20.0)
        means = {(r.rover, r.seq): row[1].mean[0].tolist()
                 for r, row in zip(node.planner.readings, node.planner.observations.rows)}
        assert means == {('rover0', 0): [10.0, 1.0], ('rover0', 1): [11.0, 1.0],
                         ('rover1', 0): [5.0, 5.0], ('rover1', 1): [5.0, 5.0]}
    recs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    assert sorted((r['rover'], r['seq']) for r in recs if r['type'] == 'revision') == [('rover0', 0), ('rover0', 1)]

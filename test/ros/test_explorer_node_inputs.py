"""Explorer node over real rclpy topics: huge particle clouds arrive on time, hostile stamps are counted.

Own rclpy context on ROS domain 170 + pid % 30, apart from the other ROS test modules.
"""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import make_pose_array, pose_array_from_cdr  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 170 + os.getpid() % 30


def test_serialised_cloud_reader_matches_rclpy():
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(1000, 2)) * 5.0
    for frame in ('', 'm', 'map', 'a_longer_frame'):
        raw = serialize_message(make_pose_array(12.5, frame, pts))
        cloud = pose_array_from_cdr(raw)
        assert cloud.frame_id == frame and cloud.stamp == 12.5 and np.array_equal(cloud.samples, pts)
        sub = pose_array_from_cdr(raw, limit=100, rng=rng)
        assert sub.samples.shape == (100, 2)
        assert {tuple(p) for p in sub.samples} <= {tuple(p) for p in pts}      # a subset, no duplicates
        assert len({tuple(p) for p in sub.samples}) == 100
    with pytest.raises(ValueError, match='truncated'):
        pose_array_from_cdr(raw[:-10])


def test_huge_particle_cloud_is_accepted_on_time(context, tmp_path):
    node = ExplorerNode(context=context, parameter_overrides=parameter_overrides({
        'pose_source': 'particle_cloud', 'run_dir': str(tmp_path), 'search_bounds': [0.0, 20.0, 0.0, 20.0],
        'max_pose_age': 0.5, 'cloud_receive_limit': 2000}))
    probe = rclpy.create_node('cloud_probe', context=context)
    pub = probe.create_publisher(PoseArray, 'particle_cloud', qos_profile_sensor_data)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    rng = np.random.default_rng(1)
    # serialised once; the stamp is patched in place (bytes 4-12 of little-endian CDR) so that the test
    # measures the receiving side, not rclpy's seconds-long serialisation of 10^5 Python poses
    big = bytearray(serialize_message(make_pose_array(0.0, 'map', rng.normal(size=(100_000, 2)) * 0.5 + 10.0)))
    assert big[:2] == b'\x00\x01'
    try:
        def publish():
            now = probe.get_clock().now().nanoseconds
            big[4:12] = np.array([now // 10**9, now % 10**9], dtype='<u4').tobytes()
            pub.publish(bytes(big))
        assert spin_until(ex,
                          lambda: node.explorer.latest_pose is not None, timeout=20.0, every=publish)
        assert not any('stale' in k for k in node.explorer.rejected), dict(node.explorer.rejected)
        latest = node.explorer.latest_pose
        assert np.allclose(latest.xy, [10.0, 10.0], atol=0.1)
        assert np.allclose(np.diag(latest.cov), 0.25, rtol=0.2)    # moments of the 2000-particle subsample
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()


def test_hostile_reading_stamps_are_counted_over_topics(context, tmp_path):
    node = ExplorerNode(context=context, parameter_overrides=parameter_overrides({
        'run_dir': str(tmp_path), 'search_bounds': [0.0, 20.0, 0.0, 20.0], 'reading_range': [-100.0, 100.0]}))
    probe = rclpy.create_node('reading_probe', context=context)
    pub = probe.create_publisher(Temperature, 'reading', 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    try:
        now = probe.get_clock().now().nanoseconds * 1e-9
        spin_until(ex, lambda: probe.count_subscribers('reading') > 0)
        for stamp, value in [(now + 3600.0, 1.0), (0.0, 1.0), (now, 1e12)]:
            pub.publish(make_reading('temperature', stamp, 'base_link', value, 0.01))
        rej = node.explorer.rejected
        assert spin_until(ex, lambda: sum(rej.values()) >= 3, timeout=5.0), dict(rej)
        assert rej['reading: future stamp'] == 1 and rej['reading: stale stamp'] == 1
        assert rej['reading: value out of range'] == 1
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()


def test_poses_that_waited_while_the_executor_was_busy_are_not_stale(context, tmp_path):
    """On a wall clock a pose's age is judged at its arrival (the middleware's reception stamp): poses that
    queued while this node's executor was busy (a GP fit in a callback) are not stale (before: the whole queue,
    judged when the callbacks finally ran, was rejected as stale after every fit)."""
    import threading
    import time
    from nav_msgs.msg import Odometry

    node = ExplorerNode(context=context, parameter_overrides=parameter_overrides({
        'run_dir': str(tmp_path), 'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_pose_age': 0.5}))
    probe = rclpy.create_node('busy_pose_probe', context=context)
    pub = probe.create_publisher(Odometry, 'odometry/filtered', 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    stop = threading.Event()

    def publish():
        while not stop.is_set():
            now = probe.get_clock().now().nanoseconds * 1e-9
            pub.publish(cv.make_odometry(now, 'map', 'base_link', [5.0, 5.0], 0.0, np.diag([0.1] * 6)))
            time.sleep(0.1)                            # 10 Hz: a queue of 10 poses spans 1 s

    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        assert spin_until(ex, lambda: node.explorer.received['poses'] > 5, timeout=10.0)
        before = node.explorer.received['poses']
        time.sleep(1.5)                                # the executor is busy: 15 poses arrive, 10 are queued
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.01)
        assert node.explorer.received['poses'] - before >= 8
        assert node.explorer.rejected['pose: stale stamp'] == 0, dict(node.explorer.rejected)
    finally:
        stop.set()
        thread.join()
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()

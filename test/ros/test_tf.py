"""REP-105 TF of the simulation: map -> odom -> base_link equals the localiser's estimate.

The transform algebra is checked against homogeneous matrices; the published /tf needs ``tf2_msgs`` (not
among the PyPI ROS wheels) and is checked over rclpy only where it is installed.
"""
import math

import numpy as np
import pytest

pytest.importorskip('rclpy')
from uncertain_bo.ros import conversions as cv  # noqa: E402


def matrix(x, y, yaw):
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, x], [s, c, y], [0.0, 0.0, 1.0]])


def test_map_to_odom_completes_the_chain():
    rng = np.random.default_rng(0)
    for _ in range(200):
        map_base = (*rng.uniform(-500, 500, 2), rng.uniform(-math.pi, math.pi))
        odom_base = (*rng.uniform(-500, 500, 2), rng.uniform(-math.pi, math.pi))
        m_o = cv.map_to_odom(map_base, odom_base)
        assert np.allclose(matrix(*m_o) @ matrix(*odom_base), matrix(*map_base), atol=1e-9)
        assert np.allclose(matrix(*cv.invert_planar(m_o)), np.linalg.inv(matrix(*m_o)), atol=1e-9)
        assert -math.pi <= m_o[2] <= math.pi


def test_localiser_publishes_the_tf_tree(context):
    pytest.importorskip('tf2_msgs', reason='tf2_msgs is not installed (no PyPI wheel): /tf not checked here')
    import time

    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from tf2_msgs.msg import TFMessage

    from uncertain_bo.ros.ekf import EkfNode
    node = EkfNode(context=context)
    import rclpy
    probe = rclpy.create_node('tf_probe', context=context)
    got = []
    probe.create_subscription(TFMessage, '/tf', got.append, 100)
    pub = probe.create_publisher(Odometry, 'wheel/odometry', 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    try:
        end = time.monotonic() + 10
        t = 1.0
        while not got and time.monotonic() < end:
            pub.publish(cv.make_odometry(t, 'odom', 'base_link', [1.0, 2.0], 0.3, np.eye(6) * 0.01, v=0.5))
            t += 0.1
            ex.spin_once(timeout_sec=0.05)
        assert got
        frames = [(tf.header.frame_id, tf.child_frame_id) for tf in got[-1].transforms]
        assert frames == [('map', 'odom'), ('odom', 'base_link')]
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()

"""sensor_covariance: a message that arrives without covariance (Gazebo's NavSatFix and DiffDrive odometry, as
ros_gz_bridge carries them) leaves with the configured one; one that has its own passes unchanged."""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Imu, NavSatFix  # noqa: E402

from ros_spin import spin_until  # noqa: E402
from uncertain_bo.parameters.specs import defaults  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.sensor_covariance import (SENSOR_COVARIANCE_PARAMS, SensorCovarianceNode,  # noqa: E402
                                                with_covariance)

DOMAIN_ID = 90 + os.getpid() % 10


def params(**kw):
    return {**defaults(SENSOR_COVARIANCE_PARAMS), **kw}


def test_navsat_fix_as_the_bridge_sends_it_gets_the_gnss_noise():
    msg = NavSatFix()                       # ros_gz_bridge: COVARIANCE_TYPE_UNKNOWN, zeros
    assert msg.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
    assert with_covariance(msg, 'navsat_fix', params(position_std=[0.5, 0.5, 1.0]))
    np.testing.assert_allclose(np.reshape(msg.position_covariance, (3, 3)), np.diag([0.25, 0.25, 1.0]))
    assert msg.position_covariance_type == NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
    known = NavSatFix()                     # a driver that reports its covariance: left as it is
    known.position_covariance = [4.0, 0, 0, 0, 4.0, 0, 0, 0, 9.0]
    known.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
    assert not with_covariance(known, 'navsat_fix', params(position_std=[0.5, 0.5, 1.0]))
    assert list(known.position_covariance)[0] == 4.0
    assert with_covariance(known, 'navsat_fix', params(position_std=[0.5, 0.5, 1.0], keep_known=False))
    assert list(known.position_covariance)[0] == 0.25


def test_odometry_twist_and_imu_blocks():
    odom = Odometry()
    p = params(linear_velocity_std=[0.05, 0.01, 0.01], angular_velocity_std=[0.01, 0.01, 0.05])
    assert with_covariance(odom, 'odometry', p)
    twist = np.reshape(odom.twist.covariance, (6, 6))
    np.testing.assert_allclose(np.diag(twist), np.square([0.05, 0.01, 0.01, 0.01, 0.01, 0.05]))
    assert not np.any(np.reshape(odom.pose.covariance, (6, 6)))     # no pose std configured: left at zero
    imu = Imu()
    imu.orientation_covariance = [-1.0] + [0.0] * 8               # REP-145: no orientation: stays so
    assert with_covariance(imu, 'imu', params(orientation_std=[0.1] * 3, angular_velocity_std=[0.02] * 3))
    assert list(imu.orientation_covariance)[0] == -1.0
    np.testing.assert_allclose(np.diag(np.reshape(imu.angular_velocity_covariance, (3, 3))), [4e-4] * 3)
    assert not any(imu.linear_acceleration_covariance)


def test_node_republishes_with_covariance_over_dds(context):
    node = SensorCovarianceNode(context=context, parameter_overrides=parameter_overrides(
        {'message_type': 'navsat_fix', 'position_std': [0.5, 0.5, 1.0]}, SENSOR_COVARIANCE_PARAMS))
    probe = rclpy.create_node('gnss_probe', context=context)
    got = []
    probe.create_subscription(NavSatFix, 'out', got.append,
                              QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    pub = probe.create_publisher(NavSatFix, 'in', 10)     # reliable, as ros_gz_bridge publishes
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    try:
        def publish():
            fix = NavSatFix()
            fix.header.frame_id = 'base_link'
            fix.latitude, fix.longitude = 33.2001, -98.2001
            pub.publish(fix)
        assert spin_until(ex, lambda: len(got) >= 2, every=publish)
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()
    fix = got[-1]
    assert fix.latitude == 33.2001 and fix.header.frame_id == 'base_link'
    np.testing.assert_allclose(np.reshape(fix.position_covariance, (3, 3)), np.diag([0.25, 0.25, 1.0]))
    assert node.filled == node.received >= 2

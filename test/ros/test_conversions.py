"""Tests for uncertain_bo.ros.conversions (message <-> numpy; no DDS needed)."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import Quaternion, Twist, TwistStamped  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402


def test_ros_covariance_to_xy_takes_indices_0_1_6_7():
    c = np.arange(36.0)
    assert np.array_equal(cv.ros_covariance_to_xy(c), [[0.0, 1.0], [6.0, 7.0]])
    assert np.array_equal(cv.ros_covariance_to_xy(c.reshape(6, 6)), [[0.0, 1.0], [6.0, 7.0]])
    with pytest.raises(ValueError, match='36'):
        cv.ros_covariance_to_xy(np.zeros(9))
    flat = cv.xy_covariance_to_ros([[2.0, 0.5], [0.5, 3.0]], yaw_var=0.1, other_var=9.0)
    assert np.array_equal(cv.ros_covariance_to_xy(flat), [[2.0, 0.5], [0.5, 3.0]])
    assert flat[35] == 0.1 and flat[14] == flat[21] == flat[28] == 9.0


@pytest.mark.parametrize('cov, reason', [
    (np.zeros((2, 2)), None),                                  # Dirac: valid
    (np.array([[2.0, 0.3], [0.3, 1.0]]), None),
    (np.array([[1.0, 1.0], [1.0, 1.0]]), None),                # singular PSD is fine
    (np.array([[np.nan, 0.0], [0.0, 1.0]]), 'non-finite'),
    (np.array([[1e308 * 10, 0.0], [0.0, 1.0]]), 'non-finite'),
    (np.array([[-1.0, 0.0], [0.0, 1.0]]), 'negative variance'),
    (np.array([[1.0, 0.2], [0.1, 1.0]]), 'asymmetric'),
    (np.array([[1.0, 2.0], [2.0, 1.0]]), 'not positive semi-definite'),
    (np.zeros((3, 3)), 'shape'),
])
def test_validate_position_covariance(cov, reason):
    got = cv.validate_position_covariance(cov)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


@given(yaw=st.floats(-math.pi + 1e-9, math.pi - 1e-9), scale=st.floats(0.1, 10.0))
def test_quaternion_round_trip(yaw, scale):
    q = cv.yaw_to_quaternion(yaw)
    assert math.isclose(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2, 1.0)
    assert cv.quaternion_to_yaw(q) == pytest.approx(yaw, abs=1e-9)
    scaled = Quaternion(x=q.x * scale, y=q.y * scale, z=q.z * scale, w=q.w * scale)   # not normalised
    assert cv.quaternion_to_yaw(scaled) == pytest.approx(yaw, abs=1e-9)


def test_quaternion_known_values_and_errors():
    # 90° about z: (0, 0, sin 45°, cos 45°); a roll of 180° about x flips nothing about yaw = 0
    assert cv.quaternion_to_yaw(Quaternion(x=0.0, y=0.0, z=math.sqrt(0.5), w=math.sqrt(0.5))) == \
        pytest.approx(math.pi / 2)
    assert cv.quaternion_to_yaw(Quaternion(x=1.0, y=0.0, z=0.0, w=0.0)) == pytest.approx(0.0)
    with pytest.raises(ValueError, match='quaternion'):
        cv.quaternion_to_yaw(Quaternion(x=0.0, y=0.0, z=0.0, w=0.0))


def test_time_round_trip_and_errors():
    for t in (0.0, 1.5, 12345.000000001, 1.7e9 + 0.25):
        msg = cv.to_time_msg(t)
        assert isinstance(msg, Time) and 0 <= msg.nanosec < 1_000_000_000
        assert cv.from_time_msg(msg) == pytest.approx(t, abs=1e-9 * max(1.0, t / 1e6))
    assert cv.to_time_msg(2.9999999999).sec == 3
    with pytest.raises(ValueError):
        cv.to_time_msg(-1.0)


def test_odometry_round_trip():
    cov = np.diag([1.0, 2.0, 1e6, 1e6, 1e6, 0.3])
    cov[0, 1] = cov[1, 0] = 0.4
    msg = cv.make_odometry(12.5, 'map', 'base_link', [3.0, -4.0], 2.0, cov, v=0.7, w=-0.2,
                           twist_cov6x6=np.eye(6) * 0.01)
    assert msg.header.frame_id == 'map' and msg.child_frame_id == 'base_link'
    assert msg.twist.twist.linear.x == 0.7 and msg.twist.twist.angular.z == -0.2
    p = cv.odometry_to_pose(msg)
    assert p.stamp == pytest.approx(12.5) and p.frame_id == 'map'
    assert np.allclose(p.xy, [3.0, -4.0]) and p.yaw == pytest.approx(2.0)
    assert np.allclose(p.cov_xy, [[1.0, 0.4], [0.4, 2.0]])


def test_pose_with_covariance_and_pose_stamped():
    msg = cv.make_pose_with_covariance(3.0, 'map', [1.0, 2.0], -1.0, cv.xy_covariance_to_ros(np.eye(2) * 4))
    p = cv.pose_with_covariance_to_pose(msg)
    assert np.allclose(p.xy, [1, 2]) and p.yaw == pytest.approx(-1.0) and np.allclose(p.cov_xy, 4 * np.eye(2))
    ps = cv.make_pose_stamped(4.0, 'map', [5.0, 6.0], 0.5)
    stamp, frame, xy, yaw = cv.pose_stamped_to_xy_yaw(ps)
    assert (stamp, frame) == (4.0, 'map') and np.allclose(xy, [5, 6]) and yaw == pytest.approx(0.5)


def test_path_round_trip_and_headings():
    pts = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 3.0]])
    msg = cv.make_path(1.0, 'map', pts)
    stamp, frame, back = cv.path_to_points(msg)
    assert frame == 'map' and np.array_equal(back, pts)
    yaws = [cv.quaternion_to_yaw(p.pose.orientation) for p in msg.poses]
    assert yaws == pytest.approx([math.pi / 4, math.pi / 2, math.pi / 2])
    assert cv.path_to_points(cv.make_path(0.0, 'map', np.zeros((0, 2))))[2].shape == (0, 2)


def test_twists():
    t = cv.make_twist(0.3, -0.1)
    assert isinstance(t, Twist) and cv.twist_from_msg(t) == (0.3, -0.1)
    ts = cv.make_twist(0.3, -0.1, stamped=True, stamp=2.0, frame='base_link')
    assert isinstance(ts, TwistStamped) and cv.twist_from_msg(ts) == (0.3, -0.1)
    assert cv.from_time_msg(ts.header.stamp) == 2.0


def test_the_heading_and_its_covariance_row_reach_the_pose_estimate():
    # (x, y, yaw) of a 6x6 covariance over (x, y, z, roll, pitch, yaw): rows and columns 0, 1, 5, cross terms kept
    from uncertain_bo.ros.rover_inputs import pose_estimate_from_msg
    cov = np.diag([1.0, 2.0, 1e6, 1e6, 1e6, 0.09])
    cov[0, 5] = cov[5, 0] = 0.2
    cov[1, 5] = cov[5, 1] = -0.1
    cov[0, 1] = cov[1, 0] = 0.4
    assert np.array_equal(cv.ros_covariance_to_planar(cov.reshape(-1)),
                          [[1.0, 0.4, 0.2], [0.4, 2.0, -0.1], [0.2, -0.1, 0.09]])
    with pytest.raises(ValueError, match='36'):
        cv.ros_covariance_to_planar(np.zeros(9))
    for msg, source in ((cv.make_odometry(1.0, 'map', 'base_link', [3.0, 4.0], 2.5, cov), 'odometry'),
                        (cv.make_pose_with_covariance(1.0, 'map', [3.0, 4.0], 2.5, cov), 'pose_with_covariance')):
        p = pose_estimate_from_msg(msg, source)
        assert p.yaw == pytest.approx(2.5) and np.array_equal(p.yaw_cov, [0.2, -0.1, 0.09])
        assert np.array_equal(p.pose_covariance, cv.ros_covariance_to_planar(cov))
    # an all-zero orientation (hand-written publishers) is no heading, and no error
    msg = cv.make_odometry(1.0, 'map', 'base_link', [3.0, 4.0], 0.0, cov)
    msg.pose.pose.orientation = Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)
    assert pose_estimate_from_msg(msg, 'odometry').yaw is None

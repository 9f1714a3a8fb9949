"""ROS 2 geometry and navigation messages <-> NumPy (stateless; shared by every node of the package): times and
headers, quaternions and planar poses, 6x6 covariances, ``nav_msgs/Odometry``, ``geometry_msgs/PoseWithCovariance
Stamped``, ``PoseStamped``, ``nav_msgs/Path``, twists.

Particle clouds (``geometry_msgs/PoseArray``, ``nav2_msgs/ParticleCloud``, read from their serialised bytes) are
:mod:`uncertain_bo.ros.particle_clouds`; sensor reading messages are :mod:`uncertain_bo.ros.reading_messages`.

Conventions: SI units, ``map``-frame positions in metres, yaw in radians counter-clockwise from +x (REP-103);
6x6 covariances are row-major over (x, y, z, roll, pitch, yaw) for poses and (vx, vy, vz, wx, wy, wz) for
twists, as in ``nav_msgs/Odometry`` and ``geometry_msgs/PoseWithCovariance``. Times are float seconds.

Nothing here holds node state; every function is safe to call from any callback.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose, PoseStamped, PoseWithCovarianceStamped, Quaternion, Twist, TwistStamped
from nav_msgs.msg import Odometry, Path
from std_msgs.msg import Header

from ..distributions.covariance import covariance_problem

__all__ = [
    'StampedPose', 'XY_INDICES', 'PLANAR_INDICES',
    'ros_covariance_to_xy', 'ros_covariance_to_planar', 'xy_covariance_to_ros', 'validate_position_covariance',
    'odometry_to_pose', 'pose_with_covariance_to_pose', 'compose_planar', 'invert_planar', 'map_to_odom',
    'pose_stamped_to_xy_yaw', 'path_to_points', 'twist_from_msg', 'make_twist',
    'make_odometry', 'make_pose_stamped', 'make_path', 'make_pose_with_covariance',
    'to_time_msg', 'from_time_msg', 'yaw_to_quaternion', 'quaternion_to_yaw', 'quaternions_to_yaw', 'make_header',
]

#: flat indices of the (x, y) block in a row-major 6x6 covariance: xx, xy, yx, yy
XY_INDICES = (0, 1, 6, 7)
#: rows (and columns) of x, y and yaw in a 6x6 pose covariance over (x, y, z, roll, pitch, yaw)
PLANAR_INDICES = (0, 1, 5)


@dataclass
class StampedPose:
    """A planar location distribution from a localisation message.

    Attributes:
        stamp: time of the estimate (s).
        frame_id: frame of the position (e.g. ``map``).
        xy: (2,) position mean, metres.
        yaw: heading, rad.
        cov_xy: (2, 2) position covariance, m² (zero = exactly known).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.ros.conversions import make_odometry, odometry_to_pose
        >>> cov = np.diag([0.04, 0.09, 0.0, 0.0, 0.0, 0.01])        # over (x, y, z, roll, pitch, yaw)
        >>> pose = odometry_to_pose(make_odometry(12.5, 'map', 'base_link', [3.0, 4.0], 0.5, cov))
        >>> pose.stamp, pose.frame_id, pose.xy, np.diag(pose.cov_xy)
        (12.5, 'map', array([3., 4.]), array([0.04, 0.09]))
    """

    stamp: float
    frame_id: str
    xy: np.ndarray
    yaw: float
    cov_xy: np.ndarray = field(default_factory=lambda: np.zeros((2, 2)))


# ---------------------------------------------------------------------------------------- time
def to_time_msg(seconds: float) -> Time:
    """``builtin_interfaces/Time`` for ``seconds`` >= 0 (rounded to the nanosecond).

    Raises:
        ValueError: negative or non-finite time.
    """
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f'time must be a finite non-negative number of seconds, got {seconds!r}')
    ns = int(round(seconds * 1e9))
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def from_time_msg(msg: Time) -> float:
    """Seconds (float) of a ``builtin_interfaces/Time``."""
    return msg.sec + msg.nanosec * 1e-9


def compose_planar(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Planar transform ``a ∘ b`` of ``(x m, y m, yaw rad)`` transforms (``b`` expressed in ``a``'s frame)."""
    ax, ay, ath = (float(v) for v in a)
    bx, by, bth = (float(v) for v in b)
    c, s = math.cos(ath), math.sin(ath)
    return ax + c * bx - s * by, ay + s * bx + c * by, math.atan2(math.sin(ath + bth), math.cos(ath + bth))


def invert_planar(a: Sequence[float]) -> tuple[float, float, float]:
    """Inverse of a planar transform ``(x m, y m, yaw rad)``."""
    ax, ay, ath = (float(v) for v in a)
    c, s = math.cos(ath), math.sin(ath)
    return -(c * ax + s * ay), -(-s * ax + c * ay), -ath


def map_to_odom(map_base: Sequence[float], odom_base: Sequence[float]) -> tuple[float, float, float]:
    """REP-105 ``map -> odom`` transform ``(x m, y m, yaw rad)`` that makes ``map -> odom -> base_link``
    equal the localiser's map-frame pose ``map_base`` given the odometry's pose ``odom_base``:
    ``T_map_odom = T_map_base ∘ T_odom_base⁻¹``."""
    return compose_planar(map_base, invert_planar(odom_base))


def make_header(stamp: float, frame_id: str) -> Header:
    """``std_msgs/Header`` with ``stamp`` (s) and ``frame_id``."""
    return Header(stamp=to_time_msg(stamp), frame_id=frame_id)


# ---------------------------------------------------------------------------------------- angles
def yaw_to_quaternion(yaw: float) -> Quaternion:
    """Quaternion of a rotation by ``yaw`` (rad) about +z."""
    return Quaternion(x=0.0, y=0.0, z=math.sin(0.5 * yaw), w=math.cos(0.5 * yaw))


def quaternion_to_yaw(q: Quaternion) -> float:
    """Yaw (rad, in [-pi, pi]) of a quaternion (roll and pitch ignored); the quaternion need not be unit.

    Raises:
        ValueError: zero or non-finite quaternion.
    """
    vals = (q.x, q.y, q.z, q.w)
    if not all(math.isfinite(v) for v in vals) or all(v == 0.0 for v in vals):
        raise ValueError(f'invalid orientation quaternion {vals}')
    # homogeneous form: both arguments scale with |q|², so non-unit quaternions work too
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), q.w * q.w + q.x * q.x - q.y * q.y - q.z * q.z)


def quaternions_to_yaw(xyzw: np.ndarray) -> np.ndarray:
    """Yaw (rad, in [-pi, pi]) of each row ``(x, y, z, w)`` of an ``(m, 4)`` array of quaternions, as
    :func:`quaternion_to_yaw`; NaN for a zero or non-finite quaternion (no rotation at all)."""
    q = np.asarray(xyzw, dtype=float).reshape(-1, 4)
    x, y, z, w = q.T
    with np.errstate(invalid='ignore', over='ignore'):
        yaw = np.arctan2(2.0 * (w * z + x * y), w * w + x * x - y * y - z * z)
        bad = ~np.all(np.isfinite(q), axis=1) | np.all(q == 0.0, axis=1)
    yaw[bad] = np.nan
    return yaw


# ---------------------------------------------------------------------------------------- covariance
def ros_covariance_to_xy(cov36: Sequence[float]) -> np.ndarray:
    """(2, 2) position block (x, y) of a row-major 6x6 ROS covariance (flat indices 0, 1, 6, 7).

    Raises:
        ValueError: ``cov36`` does not have 36 entries.
    """
    c = np.asarray(cov36, dtype=float).reshape(-1)
    if c.size != 36:
        raise ValueError(f'a ROS pose covariance has 36 entries (row-major 6x6), got {c.size}')
    return np.array([[c[0], c[1]], [c[6], c[7]]])


def ros_covariance_to_planar(cov36: Sequence[float]) -> np.ndarray:
    """(3, 3) block over (x, y, yaw) of a row-major 6x6 ROS pose covariance (rows and columns 0, 1, 5): the
    position block of :func:`ros_covariance_to_xy` bordered by the yaw row and column, m², m·rad, rad².

    Raises:
        ValueError: ``cov36`` does not have 36 entries.
    """
    c = np.asarray(cov36, dtype=float).reshape(-1)
    if c.size != 36:
        raise ValueError(f'a ROS pose covariance has 36 entries (row-major 6x6), got {c.size}')
    return c.reshape(6, 6)[np.ix_(PLANAR_INDICES, PLANAR_INDICES)].copy()


def xy_covariance_to_ros(cov_xy: np.ndarray, yaw_var: float = 0.0, other_var: float = 0.0) -> np.ndarray:
    """Flat (36,) row-major 6x6 covariance with the (x, y) block ``cov_xy`` (2, 2), yaw variance
    ``yaw_var`` and ``other_var`` on z, roll, pitch."""
    c = np.zeros((6, 6))
    c[:2, :2] = np.asarray(cov_xy, dtype=float).reshape(2, 2)
    c[5, 5] = yaw_var
    c[2, 2] = c[3, 3] = c[4, 4] = other_var
    return c.reshape(36)


def validate_position_covariance(cov2: np.ndarray, atol: float = 1e-9) -> str | None:
    """Check a (2, 2) position covariance (the message-level face of
    :func:`uncertain_bo.distributions.covariance.covariance_problem`, which does the work; torch-free).

    Args:
        cov2: covariance in m².
        atol: tolerance for asymmetry and for negative eigenvalues from round-off, relative to the largest
            absolute entry (absolute below 1 m²).

    Returns:
        None if usable (the zero matrix is valid: an exactly known position, a Dirac distribution), else
        a reason: ``'non-finite ...'``, ``'negative variance ...'``, ``'asymmetric ...'``,
        ``'not positive semi-definite ...'`` or ``'wrong shape ...'``.
    """
    c = np.asarray(cov2, dtype=float)
    if c.shape != (2, 2):
        return f'wrong shape {c.shape}, expected (2, 2)'
    reason = covariance_problem(c, atol=atol)
    if reason is None:
        return None
    if reason.startswith('contains NaN or inf'):
        return f'non-finite entries (NaN/inf, e.g. a 1e308-style sentinel overflowed): {c.tolist()}'
    if reason.startswith('negative variance'):
        return f'negative variance on the diagonal: {np.diag(c).tolist()}'
    if reason.startswith('not symmetric'):
        return f'asymmetric: xy={c[0, 1]!r} but yx={c[1, 0]!r}'
    return reason


# ---------------------------------------------------------------------------------------- poses
def _pose_xy_yaw(pose: Pose) -> tuple[np.ndarray, float]:
    return np.array([pose.position.x, pose.position.y]), quaternion_to_yaw(pose.orientation)


def odometry_to_pose(msg: Odometry) -> StampedPose:
    """Location distribution from ``nav_msgs/Odometry`` (header stamp and frame, pose mean, (x, y) block
    of ``pose.covariance``). No validation; see :func:`validate_position_covariance`."""
    xy, yaw = _pose_xy_yaw(msg.pose.pose)
    return StampedPose(from_time_msg(msg.header.stamp), msg.header.frame_id, xy, yaw,
                       ros_covariance_to_xy(msg.pose.covariance))


def pose_with_covariance_to_pose(msg: PoseWithCovarianceStamped) -> StampedPose:
    """Location distribution from ``geometry_msgs/PoseWithCovarianceStamped`` (e.g. AMCL)."""
    xy, yaw = _pose_xy_yaw(msg.pose.pose)
    return StampedPose(from_time_msg(msg.header.stamp), msg.header.frame_id, xy, yaw,
                       ros_covariance_to_xy(msg.pose.covariance))


def pose_stamped_to_xy_yaw(msg: PoseStamped) -> tuple[float, str, np.ndarray, float]:
    """``(stamp s, frame_id, xy (2,), yaw)`` of a ``geometry_msgs/PoseStamped`` (e.g. a goal)."""
    xy, yaw = _pose_xy_yaw(msg.pose)
    return from_time_msg(msg.header.stamp), msg.header.frame_id, xy, yaw


def path_to_points(msg: Path) -> tuple[float, str, np.ndarray]:
    """``(stamp s, frame_id, points (m, 2))`` of a ``nav_msgs/Path``; pose frames are assumed equal to
    the path's frame (as in Nav2)."""
    pts = np.array([[p.pose.position.x, p.pose.position.y] for p in msg.poses], dtype=float)
    return from_time_msg(msg.header.stamp), msg.header.frame_id, pts.reshape(-1, 2)


def make_pose_stamped(stamp: float, frame: str, xy: Sequence[float], yaw: float = 0.0) -> PoseStamped:
    """``geometry_msgs/PoseStamped`` at ``xy`` (2,) metres with heading ``yaw`` rad."""
    msg = PoseStamped(header=make_header(stamp, frame))
    msg.pose.position.x, msg.pose.position.y = float(xy[0]), float(xy[1])
    msg.pose.orientation = yaw_to_quaternion(yaw)
    return msg


def make_path(stamp: float, frame: str, points: np.ndarray) -> Path:
    """``nav_msgs/Path`` through ``points`` (m, 2) metres; each pose faces the next point (the last one
    keeps the previous heading)."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    msg = Path(header=make_header(stamp, frame))
    yaw = 0.0
    for i, p in enumerate(pts):
        if i + 1 < len(pts):
            d = pts[i + 1] - p
            if np.hypot(*d) > 0:
                yaw = math.atan2(d[1], d[0])
        msg.poses.append(make_pose_stamped(stamp, frame, p, yaw))
    return msg


def make_pose_with_covariance(stamp: float, frame: str, xy: Sequence[float], yaw: float = 0.0,
                              cov6x6: np.ndarray | None = None) -> PoseWithCovarianceStamped:
    """``geometry_msgs/PoseWithCovarianceStamped`` with a (6, 6) or flat (36,) covariance (default 0)."""
    msg = PoseWithCovarianceStamped(header=make_header(stamp, frame))
    msg.pose.pose.position.x, msg.pose.pose.position.y = float(xy[0]), float(xy[1])
    msg.pose.pose.orientation = yaw_to_quaternion(yaw)
    if cov6x6 is not None:
        msg.pose.covariance = _flat36(cov6x6)
    return msg


def make_odometry(stamp: float, frame: str, child: str, xy: Sequence[float], yaw: float,
                  cov6x6: np.ndarray | None = None, v: float = 0.0, w: float = 0.0, vy: float = 0.0,
                  twist_cov6x6: np.ndarray | None = None) -> Odometry:
    """``nav_msgs/Odometry``: pose (``xy`` m, ``yaw`` rad, covariance (6, 6)/(36,) in ``frame``) and
    body twist (``v`` forward, ``vy`` left m/s, ``w`` rad/s, covariance in ``child``)."""
    msg = Odometry(header=make_header(stamp, frame), child_frame_id=child)
    msg.pose.pose.position.x, msg.pose.pose.position.y = float(xy[0]), float(xy[1])
    msg.pose.pose.orientation = yaw_to_quaternion(yaw)
    if cov6x6 is not None:
        msg.pose.covariance = _flat36(cov6x6)
    msg.twist.twist.linear.x, msg.twist.twist.linear.y = float(v), float(vy)
    msg.twist.twist.angular.z = float(w)
    if twist_cov6x6 is not None:
        msg.twist.covariance = _flat36(twist_cov6x6)
    return msg


def _flat36(c) -> np.ndarray:
    a = np.asarray(c, dtype=float).reshape(-1)
    if a.size != 36:
        raise ValueError(f'covariance must be 6x6 (36 entries), got {a.size}')
    return a


# ---------------------------------------------------------------------------------------- twists
def make_twist(v: float, w: float, stamped: bool = False, stamp: float = 0.0,
               frame: str = 'base_link') -> Twist | TwistStamped:
    """Velocity command ``v`` (m/s forward), ``w`` (rad/s) as ``Twist`` or ``TwistStamped``."""
    t = Twist()
    t.linear.x, t.angular.z = float(v), float(w)
    if stamped:
        return TwistStamped(header=make_header(stamp, frame), twist=t)
    return t


def twist_from_msg(msg: Twist | TwistStamped) -> tuple[float, float]:
    """``(v, w)`` (m/s, rad/s) of a ``Twist`` or ``TwistStamped``."""
    t = msg.twist if isinstance(msg, TwistStamped) else msg
    return float(t.linear.x), float(t.angular.z)

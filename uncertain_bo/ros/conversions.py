"""ROS 2 message <-> NumPy conversions (stateless; shared by every node of the package).

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
from geometry_msgs.msg import (Pose, PoseArray, PoseStamped, PoseWithCovarianceStamped, Quaternion,
                               Twist, TwistStamped)
from nav_msgs.msg import Odometry, Path
from sensor_msgs.msg import FluidPressure, Illuminance, RelativeHumidity, Temperature
from std_msgs.msg import Float64, Header

from ..distributions.covariance import covariance_problem, particle_moments

__all__ = [
    'StampedPose', 'StampedParticles', 'READING_TYPES', 'XY_INDICES', 'PLANAR_INDICES',
    'ros_covariance_to_xy', 'ros_covariance_to_planar', 'xy_covariance_to_ros', 'validate_position_covariance',
    'odometry_to_pose', 'pose_with_covariance_to_pose', 'pose_array_to_particles', 'particles_to_pose',
    'pose_array_from_cdr', 'particle_cloud_from_cdr', 'particle_cloud_to_particles', 'compose_planar',
    'invert_planar', 'map_to_odom',
    'make_pose_array', 'pose_stamped_to_xy_yaw', 'path_to_points',
    'reading_from_msg', 'make_reading', 'twist_from_msg', 'make_twist',
    'make_odometry', 'make_pose_stamped', 'make_path', 'make_pose_with_covariance',
    'to_time_msg', 'from_time_msg', 'yaw_to_quaternion', 'quaternion_to_yaw', 'quaternions_to_yaw', 'make_header',
]

#: flat indices of the (x, y) block in a row-major 6x6 covariance: xx, xy, yx, yy
XY_INDICES = (0, 1, 6, 7)
#: rows (and columns) of x, y and yaw in a 6x6 pose covariance over (x, y, z, roll, pitch, yaw)
PLANAR_INDICES = (0, 1, 5)

#: reading type name -> (message class, value field); Float64 has no header (no stamp).
READING_TYPES = {
    'temperature': (Temperature, 'temperature'),
    'fluid_pressure': (FluidPressure, 'fluid_pressure'),
    'illuminance': (Illuminance, 'illuminance'),
    'relative_humidity': (RelativeHumidity, 'relative_humidity'),
    'float64': (Float64, 'data'),
}


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


@dataclass
class StampedParticles:
    """A particle cloud (``geometry_msgs/PoseArray``, or Nav2 AMCL's ``nav2_msgs/msg/ParticleCloud`` with weights).

    Attributes:
        stamp: time of the cloud (s).
        frame_id: frame of the particles.
        samples: (m, 2) particle positions, metres.
        weights: (m,) weights (normalised where the cloud becomes a location distribution), or None for equal
            weights (PoseArray carries none).
        yaws: (m,) particle headings from their orientations, rad (NaN for an orientation that is no rotation), or
            None when not read.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.ros.conversions import make_pose_array, pose_array_to_particles
        >>> cloud = pose_array_to_particles(make_pose_array(3.0, 'map', np.array([[1.0, 2.0], [1.5, 2.5]])))
        >>> cloud.samples, cloud.weights is None           # a PoseArray carries no weights: equal ones
        (array([[1. , 2. ],
               [1.5, 2.5]]), True)
    """

    stamp: float
    frame_id: str
    samples: np.ndarray
    weights: np.ndarray | None = None
    yaws: np.ndarray | None = None


def pose_array_to_particles(msg: PoseArray) -> StampedParticles:
    """Particle positions and headings of a ``geometry_msgs/PoseArray``. No validation."""
    pts = np.array([[p.position.x, p.position.y] for p in msg.poses], dtype=float).reshape(-1, 2)
    return StampedParticles(from_time_msg(msg.header.stamp), msg.header.frame_id, pts,
                            yaws=_yaws(p.orientation for p in msg.poses))


def _yaws(orientations) -> np.ndarray:
    return quaternions_to_yaw(np.array([[q.x, q.y, q.z, q.w] for q in orientations], dtype=float).reshape(-1, 4))


#: float64 fields of one serialised cloud element: geometry_msgs/Pose (position 3, orientation 4) and, for
#: nav2_msgs/Particle, its weight
_POSE_DOUBLES, _PARTICLE_DOUBLES = 7, 8


def pose_array_from_cdr(raw: bytes, limit: int | None = None,
                        rng: np.random.Generator | None = None) -> StampedParticles:
    """Particle positions of a **serialised** ``geometry_msgs/PoseArray`` (a ``raw=True`` subscription),
    reduced to at most ``limit`` particles, without building a Python object per pose.

    rclpy's deserialisation of a 10⁵-pose PoseArray takes seconds (one Python ``Pose`` per particle);
    here the poses are read as one NumPy view of the CDR buffer and subsampled before anything else is
    done with them. Little- and big-endian classic CDR (what every ROS 2 RMW sends by default) are read
    directly; any other encoding falls back to rclpy's deserialisation.

    Args:
        raw: the serialised message (CDR with its 4-byte encapsulation header).
        limit: keep at most this many particles, drawn without replacement uniformly at random (None: all).
            A uniform subsample of an equally weighted cloud is itself a fair sample of the same
            distribution.
        rng: generator of the subsample (default: a fresh unseeded one).

    Returns:
        The cloud: stamp (s), frame_id, ``(m, 2)`` positions in metres, equal weights, ``(m,)`` headings.

    Raises:
        ValueError: the buffer is shorter than its header says (truncated or not a PoseArray).
    """
    return _cloud_from_cdr(raw, limit, rng, _POSE_DOUBLES,
                           lambda: pose_array_to_particles(_deserialize(raw, PoseArray)))


def particle_cloud_from_cdr(raw: bytes, limit: int | None = None, rng: np.random.Generator | None = None,
                            msg_type=None) -> StampedParticles:
    """Particle positions and weights of a **serialised** ``nav2_msgs/msg/ParticleCloud`` (what Nav2's AMCL
    publishes on ``particle_cloud``: a header and ``particles[]``, each a ``geometry_msgs/Pose`` and a float64
    ``weight``), read as :func:`pose_array_from_cdr` reads a PoseArray: one NumPy view of the CDR buffer.

    Args:
        raw: the serialised message (CDR with its 4-byte encapsulation header).
        limit: keep at most this many particles, drawn without replacement uniformly at random with their weights
            (None: all). The kept particles with their weights renormalised estimate the same weighted
            distribution (a ratio estimator: unbiased as the subsample grows, each weight's share unchanged in
            expectation).
        rng: generator of the subsample (default: a fresh unseeded one).
        msg_type: the ``ParticleCloud`` class, for a buffer in another encoding (rclpy deserialises it);
            default: ``nav2_msgs.msg.ParticleCloud``.

    Returns:
        The cloud: stamp (s), frame_id, ``(m, 2)`` positions in metres, ``(m,)`` headings, and ``(m,)`` weights as
        published
        (validated and normalised where they become a location distribution:
        :meth:`~uncertain_bo.explorer.PoseEstimate.from_particles`,
        :func:`uncertain_bo.distributions.covariance.weights_problem`).

    Raises:
        ValueError: the buffer is shorter than its header says (truncated or not a ParticleCloud).
    """
    def fallback() -> StampedParticles:
        if msg_type is None:
            from nav2_msgs.msg import ParticleCloud
            return particle_cloud_to_particles(_deserialize(raw, ParticleCloud))
        return particle_cloud_to_particles(_deserialize(raw, msg_type))

    return _cloud_from_cdr(raw, limit, rng, _PARTICLE_DOUBLES, fallback)


def particle_cloud_to_particles(msg) -> StampedParticles:
    """Particle positions, weights and headings of a ``nav2_msgs/msg/ParticleCloud`` message. No validation."""
    pts = np.array([[p.pose.position.x, p.pose.position.y] for p in msg.particles], dtype=float).reshape(-1, 2)
    weights = np.array([p.weight for p in msg.particles], dtype=float)
    return StampedParticles(from_time_msg(msg.header.stamp), msg.header.frame_id, pts, weights,
                            _yaws(p.pose.orientation for p in msg.particles))


def _cloud_from_cdr(raw: bytes, limit: int | None, rng: np.random.Generator | None, doubles: int,
                    fallback) -> StampedParticles:
    """A serialised header-and-sequence cloud whose elements are ``doubles`` float64 (the pose's position, then its
    orientation (x, y, z, w); with 8, the weight last), subsampled to ``limit``; ``fallback()`` reads an encoding
    other than classic CDR."""
    buf = memoryview(raw)
    if len(buf) < 4 or bytes(buf[0:2]) not in (b'\x00\x00', b'\x00\x01'):
        return _subsample(fallback(), limit, rng)
    kind = 'PoseArray' if doubles == _POSE_DOUBLES else 'ParticleCloud'
    end = '<' if buf[1] == 1 else '>'
    body = buf[4:]

    def u32(offset: int) -> int:
        if offset + 4 > len(body):
            raise ValueError(f'serialised {kind} is truncated')
        return int(np.frombuffer(body, dtype=end + 'u4', count=1, offset=offset)[0])

    if len(body) < 12:
        raise ValueError(f'serialised {kind} is truncated (header)')
    sec = int(np.frombuffer(body, dtype=end + 'i4', count=1, offset=0)[0])
    nanosec = u32(4)
    n_chars = u32(8)
    if 12 + n_chars > len(body):
        raise ValueError(f'serialised {kind} is truncated (frame_id)')
    frame_id = bytes(body[12:12 + max(n_chars - 1, 0)]).decode('utf-8', errors='replace')
    offset = 12 + n_chars
    offset += -offset % 4
    count = u32(offset)
    offset += 4
    offset += -offset % 8
    if offset + count * doubles * 8 > len(body):
        raise ValueError(f'serialised {kind} is truncated: header says {count} poses')
    elements = np.frombuffer(body, dtype=end + 'f8', count=count * doubles, offset=offset).reshape(count, doubles)
    index = None
    if limit is not None and count > limit:
        rng = rng or np.random.default_rng()
        index = np.sort(rng.choice(count, size=limit, replace=False))
    kept = elements if index is None else elements[index]
    weights = np.array(kept[:, 7], dtype=float) if doubles == _PARTICLE_DOUBLES else None
    return StampedParticles(sec + nanosec * 1e-9, frame_id, np.array(kept[:, :2], dtype=float), weights,
                            quaternions_to_yaw(kept[:, 3:7]))


def _deserialize(raw: bytes, msg_type):
    from rclpy.serialization import deserialize_message
    return deserialize_message(raw, msg_type)


def _subsample(cloud: StampedParticles, limit: int | None, rng: np.random.Generator | None) -> StampedParticles:
    m = cloud.samples.shape[0]
    if limit is None or m <= limit:
        return cloud
    index = np.sort((rng or np.random.default_rng()).choice(m, size=limit, replace=False))
    weights = None if cloud.weights is None else cloud.weights[index]
    yaws = None if cloud.yaws is None else cloud.yaws[index]
    return StampedParticles(cloud.stamp, cloud.frame_id, cloud.samples[index], weights, yaws)


def particles_to_pose(cloud: StampedParticles) -> StampedPose:
    """Moment-matched location distribution of a particle cloud: weighted mean and (population)
    covariance of the positions (one particle: zero covariance, a Dirac). The GP methods that take
    Gaussian inputs (uGP-UCB) use it this way; the result is validated by the caller like any pose.

    Raises:
        ValueError: an empty cloud, or weights that are not finite, non-negative, one per particle with a
            positive finite sum (:func:`uncertain_bo.distributions.covariance.particle_moments`).
    """
    mean, cov = particle_moments(np.asarray(cloud.samples, dtype=float).reshape(-1, 2), cloud.weights)
    return StampedPose(cloud.stamp, cloud.frame_id, mean, 0.0, cov)


def make_pose_array(stamp: float, frame: str, points: np.ndarray) -> PoseArray:
    """``geometry_msgs/PoseArray`` with a pose at each of ``points`` (m, 2) metres (identity orientation)."""
    msg = PoseArray(header=make_header(stamp, frame))
    for x, y in np.asarray(points, dtype=float).reshape(-1, 2):
        p = Pose()
        p.position.x, p.position.y = float(x), float(y)
        p.orientation.w = 1.0
        msg.poses.append(p)
    return msg


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


# ---------------------------------------------------------------------------------------- readings
def _reading_type(reading_type: str):
    try:
        return READING_TYPES[reading_type]
    except KeyError:
        raise ValueError(f'unknown reading_type {reading_type!r}; '
                         f'one of {", ".join(READING_TYPES)}') from None


def reading_from_msg(msg, reading_type: str) -> tuple[float | None, float, float]:
    """``(stamp s or None, value, variance)`` of a scalar reading message.

    ``std_msgs/Float64`` has no header: stamp None and variance 0 (unknown). For the sensor_msgs types a
    variance of 0 means unknown (as the message definitions say).

    Raises:
        ValueError: unknown ``reading_type`` or a message of another type.
    """
    cls, attr = _reading_type(reading_type)
    if not isinstance(msg, cls):
        raise ValueError(f'reading_type {reading_type!r} expects {cls.__name__}, got {type(msg).__name__}')
    value = float(getattr(msg, attr))
    if cls is Float64:
        return None, value, 0.0
    return from_time_msg(msg.header.stamp), value, float(msg.variance)


def make_reading(reading_type: str, stamp: float, frame: str, value: float, variance: float = 0.0):
    """Reading message of ``reading_type`` (see :data:`READING_TYPES`); Float64 drops stamp and variance."""
    cls, attr = _reading_type(reading_type)
    if cls is Float64:
        return Float64(data=float(value))
    msg = cls(header=make_header(stamp, frame))
    setattr(msg, attr, float(value))
    msg.variance = float(variance)
    return msg

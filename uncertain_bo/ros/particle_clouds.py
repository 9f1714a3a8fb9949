"""Particle clouds <-> NumPy: ``geometry_msgs/PoseArray`` (equally weighted particles, e.g. the simulated
``particle_filter``'s) and Nav2 AMCL's ``nav2_msgs/msg/ParticleCloud`` (weighted).

A localiser publishes its whole cloud, up to 10⁵ poses a message; rclpy builds one Python object per pose when it
deserialises one, which takes seconds. :func:`pose_array_from_cdr` and :func:`particle_cloud_from_cdr` read the
serialised message (a ``raw=True`` subscription) as one NumPy view and subsample it to a limit before anything else
is done. A cloud becomes a location distribution as it is (:class:`StampedParticles`: positions, weights, headings)
or moment-matched (:func:`particles_to_pose`). Stateless; the other geometry messages are
:mod:`uncertain_bo.ros.conversions`'.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import Pose, PoseArray

from ..distributions.covariance import particle_moments
from .conversions import StampedPose, from_time_msg, make_header, quaternions_to_yaw

__all__ = ['StampedParticles', 'pose_array_to_particles', 'pose_array_from_cdr', 'particle_cloud_from_cdr',
           'particle_cloud_to_particles', 'particles_to_pose', 'make_pose_array']


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
        >>> from uncertain_bo.ros.particle_clouds import make_pose_array, pose_array_to_particles
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

"""``particle_filter`` node: particle-filter localiser of the simulation (AMCL-like outputs).

Thin wrapper around :class:`uncertain_bo.sim.particle_filter.ParticleFilter`, sharing the message handling
of the ``ekf`` node (:class:`~uncertain_bo.ros.ekf.LocaliserNode`: same subscriptions, time-stamp
handling, resets and gap inflation):

* subscribes ``wheel/odometry`` (``nav_msgs/Odometry``) and ``position_fix``
  (``geometry_msgs/PoseWithCovarianceStamped``);
* publishes, once per wheel-odometry message and stamped with it:

  - ``particle_cloud`` (``geometry_msgs/PoseArray``, frame ``map_frame``; each particle's position and
    heading), on every ``cloud_every``-th odometry message. PoseArray carries no weights, and the
    explorer's ``pose_source: particle_cloud`` reads equally weighted particles: the published cloud is a
    systematic resample of ``published_particles`` particles (0: all N particles as they are when their
    weights are uniform, else resampled to N); the filter itself is left alone. Large PoseArrays are
    expensive in rclpy (measured: about 0.04 ms to build, 0.025 ms to serialise and 0.05 ms to
    deserialise per pose), hence the shipped 200 particles at 2 Hz of simulated time. QoS: best effort,
    like sensor data (AMCL publishes its cloud the same way);
  - ``pose`` (``geometry_msgs/PoseWithCovarianceStamped``): the cloud's moment-matched mean and 6x6
    covariance (the explorer's ``pose_source: pose_with_covariance``; AMCL's ``amcl_pose``);
  - ``odometry/filtered`` (``nav_msgs/Odometry``): the same summary with the wheel odometry's twist, for
    ``pure_pursuit`` (as the ``ekf`` node).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from geometry_msgs.msg import Pose, PoseArray, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data

from uncertain_bo.explorer import resample_particles
from uncertain_bo.parameters.specs import Param
from uncertain_bo.ros import conversions as cv
from uncertain_bo.ros.ekf import LOCALISER_NODE_PARAMS, LocaliserNode
from uncertain_bo.ros.qos import RELIABLE_10
from uncertain_bo.ros.spin import run_node
from uncertain_bo.sim.particle_filter import PF_PARAMS, ParticleFilter

__all__ = ['PF_NODE_PARAMS', 'PF_ALL_PARAMS', 'ParticleFilterNode', 'make_particle_cloud', 'main']

PF_NODE_PARAMS = [
    Param('published_particles', 200, 'particles per particle_cloud message: an equally weighted systematic '
          'resample of the cloud (PoseArray has no weights); 0 = all particles (resampled only when their '
          'weights are not uniform)', range=(0, 1000000), read_only=True),
    Param('cloud_every', 5, 'publish particle_cloud on every this-many-th wheel-odometry message (pose and '
          'odometry/filtered: on every one)', range=(1, 1000000), read_only=True),
]

#: all parameters of the particle_filter node
PF_ALL_PARAMS = PF_PARAMS + LOCALISER_NODE_PARAMS + PF_NODE_PARAMS


def make_particle_cloud(stamp: float, frame: str, particles: np.ndarray) -> PoseArray:
    """``geometry_msgs/PoseArray`` of particle poses ``(N, 3)`` rows ``(x, y, yaw)`` (m, rad) in ``frame``."""
    msg = PoseArray(header=cv.make_header(stamp, frame))
    poses = []
    for x, y, yaw in np.asarray(particles, dtype=float).reshape(-1, 3):
        p = Pose()
        p.position.x, p.position.y = float(x), float(y)
        p.orientation = cv.yaw_to_quaternion(float(yaw))
        poses.append(p)
    msg.poses = poses
    return msg


class ParticleFilterNode(LocaliserNode):
    """Particle-filter node (see the module docstring).

    Args:
        node_name: ROS node name (default ``particle_filter``).
        **kwargs: passed to ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ...).

    Attributes:
        n_clouds: particle clouds published.

    Raises:
        ParameterError: an invalid parameter value.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.particle_filter import ParticleFilterNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = ParticleFilterNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/position_fix', '/wheel/odometry']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/odometry/filtered', '/particle_cloud', '/pose']
        >>> node.destroy_node(); ctx.shutdown()
    """

    PARAMS = PF_ALL_PARAMS

    def __init__(self, node_name: str = 'particle_filter', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        self._cloud_pub = self.create_publisher(PoseArray, 'particle_cloud', qos_profile_sensor_data)
        self._pose_pub = self.create_publisher(PoseWithCovarianceStamped, 'pose', RELIABLE_10)
        self._rng = np.random.default_rng(np.random.SeedSequence([int(self.p['seed']), 0xC10D]))
        self.n_clouds = 0

    def make_filter(self, t0: float) -> ParticleFilter:
        return ParticleFilter(self.p, t0=t0)

    def publish_estimate(self, stamp: float, odom: Odometry) -> None:
        super().publish_estimate(stamp, odom)
        pf, frame = self.ekf, self.p['map_frame']
        self._pose_pub.publish(cv.make_pose_with_covariance(stamp, frame, pf.xy, pf.yaw,
                                                            pf.pose_covariance_6x6()))
        if self.n_published % self.p['cloud_every']:
            return
        particles, w = pf.particles, pf.weights
        m = self.p['published_particles']
        if m or np.ptp(w) > 1e-12 * w.max():   # publish equally weighted particles
            particles = resample_particles(particles, w, m or len(particles), self._rng)
        self._cloud_pub.publish(make_particle_cloud(stamp, frame, particles))
        self.n_clouds += 1


def main(args=None) -> None:
    """Entry point ``particle_filter`` (``--ros-args --params-file config/sim.yaml``)."""
    run_node(ParticleFilterNode, args, doc=__doc__, specs=PF_ALL_PARAMS)


if __name__ == '__main__':
    main()

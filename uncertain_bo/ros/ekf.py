"""``ekf`` node: planar EKF fusing wheel odometry and absolute position fixes (simulation stand-in for
robot_localization).

Thin wrapper around :class:`uncertain_bo.sim.ekf.PlanarEKF`:

* subscribes ``wheel/odometry`` (``nav_msgs/Odometry``; the twist and its covariance drive the prediction)
  and ``position_fix`` (``geometry_msgs/PoseWithCovarianceStamped``; x, y and their covariance block);
* publishes ``odometry/filtered`` (``nav_msgs/Odometry``, frame ``map_frame``, child ``base_frame``, 6x6
  pose covariance row-major over (x, y, z, roll, pitch, yaw), twist copied from the wheel odometry)
  **once per wheel-odometry message**, stamped with that message's stamp, so the lockstep control loop
  of the simulation closes;
* publishes the REP-105 TF tree ``map -> odom -> base_link`` on ``/tf`` with it (``odom -> base_link``
  is the wheel odometry's dead-reckoned pose, ``map -> odom`` the correction that makes the chain equal
  the estimate), as robot_localization does on a real rover; where ``tf2_msgs`` is not installed (the
  PyPI ROS wheels have none) the node says so once and publishes no TF;
* with ``smooth_on_fix``, publishes the revised past on ``smoothed_path`` (``nav_msgs/Path``, frame ``map_frame``,
  header stamped with the filter time of the smoothing, each pose with its own step's stamp and smoothed heading):
  the last ``smoothing_lag`` seconds of steps, fixed-lag RTS smoothed, whenever a fix ends a dead-reckoning stretch
  and when a stretch of fixes ends (:meth:`~uncertain_bo.sim.ekf.PlanarEKF.revised_past`); an explorer with
  ``revised_path_topic: smoothed_path`` re-places its stored readings on it (a ``nav_msgs/Path`` carries no
  covariance: with ``revised_path_std`` 0 only the readings' means move).

The filter runs on message stamps (sim time with ``use_sim_time: true``). The first odometry message sets
the filter time; a stamp jumping back by more than ``time_jump_reset`` seconds (restarted simulation,
looping bag) resets the filter to its initial state.

The message handling lives in :class:`LocaliserNode`, which the particle-filter node
(:mod:`uncertain_bo.ros.particle_filter`) shares: a subclass names its filter and may publish more.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import Odometry, Path
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from uncertain_bo.parameters.specs import Param
from uncertain_bo.ros import conversions as cv
from uncertain_bo.ros.params import declare_parameters
from uncertain_bo.ros.qos import RELIABLE_10
from uncertain_bo.ros.spin import run_node
from uncertain_bo.sim.ekf import EKF_PARAMS, PlanarEKF

__all__ = ['EKF_NODE_PARAMS', 'EKF_ALL_PARAMS', 'LOCALISER_NODE_PARAMS', 'LocaliserNode', 'EkfNode', 'main']

#: ROS-side parameters of every localiser node (ekf, particle_filter)
LOCALISER_NODE_PARAMS = EKF_NODE_PARAMS = [
    Param('map_frame', 'map', 'world frame of the estimate (header.frame_id of odometry/filtered)',
          read_only=True),
    Param('base_frame', 'base_link', 'rover body frame (child_frame_id of odometry/filtered)',
          read_only=True),
    Param('use_odometry_covariance', True, "use the wheel odometry's twist covariance as process noise "
          '(else only the min_*_vel_std floors)'),
    Param('max_odometry_gap', 10.0, 'an odometry gap longer than this is not integrated: the filter jumps '
          'to the new stamp, inflating the position variance by (max_linear_vel_for_gaps x gap)² (s)',
          range=(0.001, 1e6)),
    Param('max_linear_vel_for_gaps', 1.0, 'speed bound used to inflate the position variance over an '
          'odometry gap (m/s)', range=(0.0, 100.0)),
    Param('time_jump_reset', 1.0, 'reset the filter when a message stamp is this many seconds older than '
          'the filter time (s)', range=(0.0, 1e6)),
]

#: all parameters of the ekf node
EKF_ALL_PARAMS = EKF_PARAMS + EKF_NODE_PARAMS

_RELIABLE_50 = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


class LocaliserNode(Node):
    """A localisation filter fusing ``wheel/odometry`` and ``position_fix``, publishing ``odometry/filtered``
    once per odometry message (see the module docstring). Subclasses set :attr:`PARAMS` and
    :meth:`make_filter`, and may extend :meth:`publish_estimate`.

    The filter (attribute ``ekf``, kept under that name for both filters) provides ``t``,
    ``add_odometry``, ``add_fix``, ``xy``, ``pose``, ``pose_covariance_6x6()``, ``inflate(var_xy, var_yaw)``
    and ``last_fix_mahalanobis`` (:class:`~uncertain_bo.sim.ekf.PlanarEKF`,
    :class:`~uncertain_bo.sim.particle_filter.ParticleFilter`).

    Args:
        node_name: ROS node name.
        **kwargs: passed to ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ...).

    Raises:
        ParameterError: an invalid parameter value.

    Example:
        The EKF and the particle filter are its two localisers; their filters answer alike:

        >>> import rclpy
        >>> from uncertain_bo.ros.ekf import EkfNode, LocaliserNode
        >>> from uncertain_bo.ros.particle_filter import ParticleFilterNode
        >>> issubclass(EkfNode, LocaliserNode), issubclass(ParticleFilterNode, LocaliserNode)
        (True, True)
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = EkfNode(context=ctx)
        >>> node.ekf.xy.shape, node.ekf.pose_covariance_6x6().shape
        ((2,), (6, 6))
        >>> node.destroy_node(); ctx.shutdown()
    """

    #: every parameter of the node
    PARAMS: list[Param] = []

    def __init__(self, node_name: str, **kwargs: Any):
        super().__init__(node_name, **kwargs)
        try:
            self.p = declare_parameters(self, self.PARAMS)
        except Exception:
            self.destroy_node()   # do not leave a half-built node in the graph
            raise
        self.ekf = self.make_filter(0.0)
        self._started = False
        self._pub = self.create_publisher(Odometry, 'odometry/filtered', RELIABLE_10)
        self._tf_pub = self._make_tf_publisher()
        self.create_subscription(Odometry, 'wheel/odometry', self._on_odometry, _RELIABLE_50)
        self.create_subscription(PoseWithCovarianceStamped, 'position_fix', self._on_fix, RELIABLE_10)
        self.n_published = 0

    def make_filter(self, t0: float):
        """A filter in its initial state at time ``t0`` (s)."""
        raise NotImplementedError

    def reset(self, stamp: float | None = None) -> None:
        """Reset the filter to its initial state (at ``stamp`` s if given)."""
        self.ekf = self.make_filter(0.0 if stamp is None else stamp)
        self._started = stamp is not None

    def _on_fix(self, msg: PoseWithCovarianceStamped) -> None:
        pose = cv.pose_with_covariance_to_pose(msg)
        if pose.frame_id and pose.frame_id != self.p['map_frame']:
            self.get_logger().warning(f"position fix in frame '{pose.frame_id}', expected "
                                      f"'{self.p['map_frame']}'; ignored", throttle_duration_sec=10.0)
            return
        reason = cv.validate_position_covariance(pose.cov_xy)
        if reason is not None or not np.all(np.isfinite(pose.xy)):
            self.get_logger().warning(f'position fix rejected: {reason or "non-finite position"}',
                                      throttle_duration_sec=10.0)
            return
        if self._started and pose.stamp < self.ekf.t - self.p['time_jump_reset']:
            self.get_logger().warning('position fix older than the filter by more than time_jump_reset; '
                                      'ignored', throttle_duration_sec=10.0)
            return
        accepted = self.ekf.add_fix(pose.stamp, pose.xy, pose.cov_xy)
        if accepted is False:
            self.get_logger().info(f'position fix gated out (Mahalanobis distance '
                                   f'{self.ekf.last_fix_mahalanobis:.1f})', throttle_duration_sec=5.0)

    def _on_odometry(self, msg: Odometry) -> None:
        stamp = cv.from_time_msg(msg.header.stamp)
        v, w = float(msg.twist.twist.linear.x), float(msg.twist.twist.angular.z)
        vy = float(msg.twist.twist.linear.y)
        if not all(math.isfinite(a) for a in (v, w, vy)):
            self.get_logger().warning('non-finite wheel odometry twist ignored', throttle_duration_sec=10.0)
            return
        tc = np.asarray(msg.twist.covariance, dtype=float).reshape(6, 6)
        vel_cov = tc[np.ix_([0, 1, 5], [0, 1, 5])] if self.p['use_odometry_covariance'] else None
        if vel_cov is not None and not np.all(np.isfinite(vel_cov)):
            vel_cov = None
        if not self._started:
            self.ekf.t = stamp
            self._started = True
        elif stamp < self.ekf.t - self.p['time_jump_reset']:
            self.get_logger().warning(f'time jumped back from {self.ekf.t:.3f} s to {stamp:.3f} s; '
                                      'resetting the filter')
            self.reset(stamp)
        gap = stamp - self.ekf.t
        if gap > self.p['max_odometry_gap']:
            self.get_logger().warning(f'wheel odometry gap of {gap:.1f} s; not integrating it')
            self.ekf.t = stamp
            self.ekf.inflate((self.p['max_linear_vel_for_gaps'] * gap) ** 2, math.pi ** 2)
        self.ekf.add_odometry(stamp, v, w, vel_cov, vy=vy)
        self.publish_estimate(stamp, msg)
        self.n_published += 1

    def publish_estimate(self, stamp: float, odom: Odometry) -> None:
        """Publish ``odometry/filtered`` at ``stamp`` (s): the estimate's pose and 6x6 covariance, the twist
        (and its covariance) of the wheel-odometry message ``odom``; and the TF tree."""
        t = odom.twist.twist
        self._pub.publish(cv.make_odometry(
            stamp, self.p['map_frame'], self.p['base_frame'], self.ekf.xy, float(self.ekf.pose[2]),
            self.ekf.pose_covariance_6x6(), v=float(t.linear.x), w=float(t.angular.z), vy=float(t.linear.y),
            twist_cov6x6=odom.twist.covariance))
        if self._tf_pub is not None:
            self._publish_tf(stamp, odom)

    def _make_tf_publisher(self):
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            self.get_logger().info('tf2_msgs is not installed: no TF (map -> odom -> base_link) published')
            return None
        return self.create_publisher(TFMessage, '/tf', QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def _publish_tf(self, stamp: float, odom: Odometry) -> None:
        from geometry_msgs.msg import TransformStamped
        from tf2_msgs.msg import TFMessage

        o = cv.odometry_to_pose(odom)
        odom_base = (float(o.xy[0]), float(o.xy[1]), float(o.yaw))
        map_base = (float(self.ekf.xy[0]), float(self.ekf.xy[1]), float(self.ekf.pose[2]))
        if not all(math.isfinite(v) for v in (*odom_base, *map_base)):
            return
        odom_frame = odom.header.frame_id or 'odom'
        out = TFMessage()
        for parent, child, (x, y, yaw) in ((self.p['map_frame'], odom_frame, cv.map_to_odom(map_base, odom_base)),
                                           (odom_frame, self.p['base_frame'], odom_base)):
            tf = TransformStamped(header=cv.make_header(stamp, parent), child_frame_id=child)
            tf.transform.translation.x, tf.transform.translation.y = x, y
            tf.transform.rotation = cv.yaw_to_quaternion(yaw)
            out.transforms.append(tf)
        self._tf_pub.publish(out)


class EkfNode(LocaliserNode):
    """Planar EKF node (see the module docstring): :class:`LocaliserNode` with
    :class:`~uncertain_bo.sim.ekf.PlanarEKF`.

    Args:
        node_name: ROS node name (default ``ekf``).
        **kwargs: passed to ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ...).

    Raises:
        ParameterError: an invalid parameter value.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.ekf import EkfNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = EkfNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/position_fix', '/wheel/odometry']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/odometry/filtered']
        >>> node.destroy_node(); ctx.shutdown()
    """

    PARAMS = EKF_ALL_PARAMS

    def __init__(self, node_name: str = 'ekf', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        self._smoothed_pub = (self.create_publisher(Path, 'smoothed_path', RELIABLE_10) if self.p['smooth_on_fix']
                              else None)
        self.n_smoothed_published = 0

    def make_filter(self, t0: float) -> PlanarEKF:
        return PlanarEKF(self.p, t0=t0)

    def publish_estimate(self, stamp: float, odom: Odometry) -> None:
        """As :meth:`LocaliserNode.publish_estimate`, then the smoothed past on ``smoothed_path`` when a smoothing is
        due (module docstring)."""
        super().publish_estimate(stamp, odom)
        past = self.ekf.revised_past() if self._smoothed_pub is not None else None
        if past is None:
            return
        frame = self.p['map_frame']
        msg = Path(header=cv.make_header(self.ekf.t, frame))
        msg.poses = [cv.make_pose_stamped(float(t), frame, x[:2], float(x[2])) for t, x in zip(past.t, past.x)]
        self._smoothed_pub.publish(msg)
        self.n_smoothed_published += 1


def main(args=None) -> None:
    """Entry point ``ekf`` (``--ros-args --params-file config/sim.yaml``)."""
    run_node(EkfNode, args, doc=__doc__, specs=EKF_ALL_PARAMS)


if __name__ == '__main__':
    main()

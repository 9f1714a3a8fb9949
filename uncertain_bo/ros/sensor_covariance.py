"""``sensor_covariance`` node: republishes sensor messages with the covariance their driver leaves out.

robot_localization weights every measurement by the covariance in its message and floors a zero variance at
1e-9 (``ekf.cpp``), so a sensor that reports none is believed exactly: a GNSS fix with zero covariance pins the
fused pose, whose covariance then collapses although the fix is metres off, and every location distribution
the explorer builds from it is near-Dirac. Gazebo's sensors leave these out as ros_gz_bridge carries them:
``sensor_msgs/NavSatFix`` always (``gz.msgs.NavSat`` has no covariance: the bridge sets
``COVARIANCE_TYPE_UNKNOWN`` and zeros), ``nav_msgs/Odometry`` of the DiffDrive system too (``gz.msgs.Odometry``
has none). This node declares the sensor's noise, as configured, where the message has none::

    in  (sensor_msgs/NavSatFix, nav_msgs/Odometry or sensor_msgs/Imu; parameter message_type)
        -> out (the same message, covariance filled: diag(std²) per block the message left all zero)

Blocks the message already fills (a driver that reports its covariance) pass unchanged unless
``keep_known`` is false. Stamps, frames and values are untouched. Subscribed best effort (compatible with any
publisher), published reliable (compatible with any subscriber).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, NavSatFix

from ..parameters.specs import Param
from .params import declare_parameters
from .spin import run_node

__all__ = ['SensorCovarianceNode', 'SENSOR_COVARIANCE_PARAMS', 'MESSAGE_TYPES', 'with_covariance', 'main']

#: message_type -> message class
MESSAGE_TYPES = {'navsat_fix': NavSatFix, 'odometry': Odometry, 'imu': Imu}

SENSOR_COVARIANCE_PARAMS = [
    Param('message_type', 'navsat_fix', 'message type on in and out: sensor_msgs/NavSatFix, nav_msgs/Odometry or '
          'sensor_msgs/Imu', choices=tuple(MESSAGE_TYPES), read_only=True),
    Param('position_std', [0.0, 0.0, 0.0], 'position noise std: NavSatFix east, north, up; Odometry pose x, y, z; m',
          range=(0.0, 1e6), length=3),
    Param('orientation_std', [0.0, 0.0, 0.0], 'orientation noise std, roll, pitch, yaw (Odometry pose, Imu '
          'orientation), rad', range=(0.0, 10.0), length=3),
    Param('linear_velocity_std', [0.0, 0.0, 0.0], 'Odometry twist noise std, vx, vy, vz (body frame), m/s',
          range=(0.0, 1e3), length=3),
    Param('angular_velocity_std', [0.0, 0.0, 0.0], 'angular-rate noise std, about x, y, z (Odometry twist, Imu), '
          'rad/s', range=(0.0, 1e3), length=3),
    Param('linear_acceleration_std', [0.0, 0.0, 0.0], 'Imu linear-acceleration noise std, x, y, z, m/s²',
          range=(0.0, 1e4), length=3),
    Param('keep_known', True, 'leave a covariance block the message already fills (non-zero) as it is; false: '
          'always replace it with the configured one', read_only=True),
]


def _diag(std: Sequence[float]) -> np.ndarray:
    return np.diag(np.square(np.asarray(std, dtype=float)))


def _fill(flat, n: int, blocks: Sequence[tuple[int, Sequence[float]]], keep_known: bool) -> tuple[list[float], bool]:
    """``flat`` (row-major n x n) with each ``(offset, std)`` diagonal block set to diag(std²) where the block is
    all zero (or always, without ``keep_known``) and ``std`` is not all zero. Returns (values, changed)."""
    m = np.asarray(flat, dtype=float).reshape(n, n).copy()
    changed = False
    for offset, std in blocks:
        k = len(std)
        block = m[offset:offset + k, offset:offset + k]
        if not any(std) or (keep_known and np.any(block != 0.0)):
            continue
        m[offset:offset + k, offset:offset + k] = _diag(std)
        changed = True
    return m.ravel().tolist(), changed


def with_covariance(msg, message_type: str, p: dict[str, Any]) -> bool:
    """Fill ``msg``'s missing covariance in place from the stds in ``p`` (the node's parameters).

    Returns:
        Whether anything was filled.
    """
    keep = p['keep_known']
    if message_type == 'navsat_fix':
        unknown = msg.position_covariance_type == NavSatFix.COVARIANCE_TYPE_UNKNOWN
        values, changed = _fill(msg.position_covariance, 3, [(0, p['position_std'])], keep and not unknown)
        if changed:
            msg.position_covariance = values
            msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_DIAGONAL_KNOWN
        return changed
    if message_type == 'odometry':
        pose, c1 = _fill(msg.pose.covariance, 6, [(0, p['position_std']), (3, p['orientation_std'])], keep)
        twist, c2 = _fill(msg.twist.covariance, 6, [(0, p['linear_velocity_std']), (3, p['angular_velocity_std'])],
                          keep)
        if c1:
            msg.pose.covariance = pose
        if c2:
            msg.twist.covariance = twist
        return c1 or c2
    if message_type == 'imu':
        changed = False
        for field, std in (('orientation_covariance', p['orientation_std']),
                           ('angular_velocity_covariance', p['angular_velocity_std']),
                           ('linear_acceleration_covariance', p['linear_acceleration_std'])):
            current = getattr(msg, field)
            if current[0] == -1.0:   # REP-145: this quantity is not provided: leave it so
                continue
            values, c = _fill(current, 3, [(0, std)], keep)
            if c:
                setattr(msg, field, values)
                changed = True
        return changed
    raise ValueError(f'unknown message_type {message_type!r}')


class SensorCovarianceNode(Node):
    """Republishes ``in`` on ``out`` with the configured covariance where the message has none.

    Attributes:
        received: messages received.
        filled: messages whose covariance was filled.

    Raises:
        uncertain_bo.parameters.specs.ParameterError: a parameter is invalid.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.sensor_covariance import SensorCovarianceNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = SensorCovarianceNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/in']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/out']
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node_name: str = 'sensor_covariance', **kwargs):
        super().__init__(node_name, **kwargs)
        try:
            self.p = declare_parameters(self, SENSOR_COVARIANCE_PARAMS)
        except Exception:
            self.destroy_node()
            raise
        self.received = self.filled = 0
        msg_type = MESSAGE_TYPES[self.p['message_type']]
        self.pub = self.create_publisher(msg_type, 'out', QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.create_subscription(msg_type, 'in', self._on_msg,
                                 QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.get_logger().info(f"{self.p['message_type']}: {self.resolve_topic_name('in')} -> "
                               f"{self.resolve_topic_name('out')} with the configured covariance where a message "
                               'has none')

    def _on_msg(self, msg) -> None:
        self.received += 1
        if with_covariance(msg, self.p['message_type'], self.p):
            self.filled += 1
        self.pub.publish(msg)


def main(args=None) -> None:
    """Entry point ``sensor_covariance`` (``--ros-args -p message_type:=navsat_fix -p position_std:=[0.5, 0.5, 1.0]
    -r in:=navsat/fix_raw -r out:=gps/fix``)."""
    run_node(SensorCovarianceNode, args, doc=__doc__, specs=SENSOR_COVARIANCE_PARAMS)


if __name__ == '__main__':
    main()

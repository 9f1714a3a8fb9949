"""Field sensor node: a simulated scalar sensor for *any* simulator (Gazebo, Isaac, our ``sim_rover``).

Subscribes to the simulator's **ground-truth** pose and publishes a reading of a field at that place, as a
real sensor on the rover would::

    ground_truth (nav_msgs/Odometry, or geometry_msgs/PoseStamped by parameter)
        -> reading (sensor_msgs Temperature / FluidPressure / Illuminance / RelativeHumidity, or
           std_msgs/Float64; parameter reading_type): field value + Gaussian noise, with its variance

Each reading carries the stamp of the ground-truth pose it was taken at (the simulator's time) and the
variance of its noise (``noise_std`` squared), so the explorer pairs it with its localisation estimate of
that moment. The simulator's world frame may be offset from the field's map frame (``world_offset``: the
field position of the simulator's origin, m). Positions outside the field give no reading (counted and
logged, throttled): the explorer retries and skips such targets rather than learning clamped values.

Readings are published at ``reading_rate`` Hz of the node clock (simulated time under ``use_sim_time``)
from the newest ground-truth pose, if that pose is at most ``max_pose_age`` old; a simulator that stops
publishing ground truth makes the sensor fall silent rather than repeat stale readings.

Parameters are validated like every node's (ranges, choices); an unusable ``field`` file ends the node at
start-up with one line ``error: ...`` and exit status 2.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ..parameters.specs import Param
from ..sim.field import DEFAULT_EXTENT, Field
from .conversions import from_time_msg
from .reading_messages import READING_TYPES, make_reading
from .params import declare_parameters
from .spin import run_node

__all__ = ['FieldSensorNode', 'FIELD_SENSOR_PARAMS', 'main']

FIELD_SENSOR_PARAMS = [
    Param('field', 'jacksboro', "the field read: 'jacksboro' (real USGS elevation, metres) or a path to a .npz "
          'grid / .csv of x,y,value', read_only=True),
    Param('field_extent', list(DEFAULT_EXTENT), 'rectangle [xmin, xmax, ymin, ymax] (m, map frame) the field '
          'is mapped onto (built-in and .npz fields) or gridded over (.csv)', range=(-1e7, 1e7), length=4,
          read_only=True),
    Param('world_offset', [0.0, 0.0], 'map-frame position of the simulator world origin [x, y], m (field '
          'position = ground-truth position + offset)', range=(-1e7, 1e7), length=2),
    Param('pose_type', 'odometry', 'message type of the ground-truth topic: nav_msgs/Odometry or '
          'geometry_msgs/PoseStamped', choices=('odometry', 'pose_stamped'), read_only=True),
    Param('reading_type', 'temperature', 'message type of the published reading (value field and variance)',
          choices=tuple(sorted(READING_TYPES)), read_only=True),
    Param('reading_rate', 1.0, 'readings per second of the node clock, Hz', range=(0.01, 1000.0), read_only=True),
    Param('noise_std', 1.0, 'standard deviation of the Gaussian reading noise (field units); its square is '
          'published as the variance', range=(0.0, 1e6)),
    Param('max_pose_age', 1.0, 'no reading from a ground-truth pose older than this (simulator stopped), s',
          range=(0.001, 3600.0)),
    Param('frame_id', 'base_link', 'frame_id of the reading header (the sensor is on the rover)',
          read_only=True),
    Param('seed', 0, 'seed of the reading noise', range=(0, 2 ** 31 - 1), read_only=True),
]


class FieldSensorNode(Node):
    """Publishes noisy field readings at the ground-truth pose.

    Args:
        node_name: ROS node name (default ``field_sensor``).
        **kwargs: forwarded to ``rclpy.node.Node`` (e.g. ``parameter_overrides``).

    Attributes:
        published: readings published so far.
        outside: ground-truth poses outside the field (no reading).

    Raises:
        uncertain_bo.parameters.specs.ParameterError: a parameter is invalid.
        uncertain_bo.sim.field.FieldError: the field cannot be loaded.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.field_sensor import FieldSensorNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = FieldSensorNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/ground_truth']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/reading']
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node_name: str = 'field_sensor', **kwargs):
        super().__init__(node_name, **kwargs)
        try:
            self.p = declare_parameters(self, FIELD_SENSOR_PARAMS)
            self.field = Field.load(self.p['field'], extent=self.p['field_extent'])
        except Exception:
            self.destroy_node()
            raise
        self._rng = np.random.default_rng(np.random.SeedSequence([int(self.p['seed']), 0xF1E1D]))
        self._pose: tuple[float, np.ndarray] | None = None   # (stamp s, world xy m)
        self.published = 0
        self.outside = 0
        msg_type = Odometry if self.p['pose_type'] == 'odometry' else PoseStamped
        # best effort: matches both reliable and best-effort ground-truth publishers
        self.create_subscription(msg_type, 'ground_truth', self._on_pose,
                                 QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT))
        # reliable: compatible with reliable and best-effort subscribers alike
        self.pub = self.create_publisher(READING_TYPES[self.p['reading_type']][0], 'reading',
                                         QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.timer = self.create_timer(1.0 / self.p['reading_rate'], self._tick)
        xmin, xmax, ymin, ymax = self.field.bounds
        self.get_logger().info(
            f"reading field {self.p['field']!r} over [{xmin:g}, {xmax:g}] x [{ymin:g}, {ymax:g}] m at the "
            f"ground-truth pose, {self.p['reading_rate']:g} Hz, noise std {self.p['noise_std']:g}")

    def _on_pose(self, msg) -> None:
        pose = msg.pose.pose if isinstance(msg, Odometry) else msg.pose
        xy = np.array([pose.position.x, pose.position.y], dtype=float)
        if np.all(np.isfinite(xy)):
            self._pose = (from_time_msg(msg.header.stamp), xy)

    def reading_at(self, world_xy: np.ndarray) -> float | None:
        """Noisy field value at a ground-truth position ``(2,)`` (simulator world frame, m), or None
        outside the field."""
        xy = np.asarray(world_xy, dtype=float) + np.asarray(self.p['world_offset'])
        xmin, xmax, ymin, ymax = self.field.bounds
        if not (xmin <= xy[0] <= xmax and ymin <= xy[1] <= ymax):
            return None
        value = float(self.field.value(xy))
        if self.p['noise_std'] > 0:
            value += float(self._rng.normal(0.0, self.p['noise_std']))
        return value

    def _tick(self) -> None:
        if self._pose is None:
            return
        stamp, xy = self._pose
        now = self.get_clock().now().nanoseconds * 1e-9
        if now > 0 and now - stamp > self.p['max_pose_age']:
            return
        value = self.reading_at(xy)
        if value is None:
            self.outside += 1
            if self.outside <= 3 or self.outside % 100 == 0:
                self.get_logger().warning(
                    f'ground truth ({xy[0]:.2f}, {xy[1]:.2f}) m + world_offset is outside the field '
                    f'{list(self.field.bounds)} m: no reading ({self.outside} so far)')
            return
        self.pub.publish(make_reading(self.p['reading_type'], stamp, self.p['frame_id'], value,
                                      self.p['noise_std'] ** 2))
        self.published += 1


def main(args=None) -> None:
    """Entry point ``field_sensor`` (``--ros-args -p field:=my_field.npz -r ground_truth:=/model/rover/odometry``)."""
    run_node(FieldSensorNode, args, doc=__doc__, specs=FIELD_SENSOR_PARAMS)


if __name__ == '__main__':
    main()

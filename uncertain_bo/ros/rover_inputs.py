"""One rover's inputs to an explorer: its pose-estimate and reading subscriptions, converted and handed to its
:class:`~uncertain_bo.explorer.Explorer`.

Used by the explorer node (one rover, topics in the node's namespace) and by the team explorer node (one
:class:`RoverInputs` per rover, topics under the rover's namespace: ``<ns>/odometry/filtered``, ``<ns>/reading``).
The pose topic and type follow ``pose_source`` (:data:`POSE_SOURCES`), the reading's ``reading_type``. Poses are
subscribed best effort (compatible with reliable and best-effort publishers, e.g. Gazebo bridges); particle clouds
are read from the serialised message with NumPy and subsampled to ``cloud_receive_limit`` particles on receipt.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from geometry_msgs.msg import PoseArray, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from ..explorer import Explorer, PoseEstimate, Reading
from .conversions import (READING_TYPES, from_time_msg, pose_array_from_cdr, pose_array_to_particles,
                          quaternion_to_yaw, reading_from_msg, ros_covariance_to_xy)

__all__ = ['RoverInputs', 'POSE_SOURCES', 'pose_estimate_from_msg', 'node_clock_now']

#: pose_source -> (message type, topic)
POSE_SOURCES = {
    'odometry': (Odometry, 'odometry/filtered'),
    'pose_with_covariance': (PoseWithCovarianceStamped, 'pose'),
    'particle_cloud': (PoseArray, 'particle_cloud'),
}

#: pose estimates: best effort (compatible with reliable and best-effort publishers), keep last 10
_POSE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


def pose_estimate_from_msg(msg, pose_source: str) -> PoseEstimate:
    """:class:`~uncertain_bo.explorer.PoseEstimate` of a pose message (not validated: the explorer does).

    Raises:
        ValueError: the message cannot be read (bad quaternion, empty particle cloud, ...).
    """
    if pose_source in ('odometry', 'pose_with_covariance'):
        # position and covariance only: the orientation is not needed (and often left all-zero by
        # hand-written publishers, which must not cost the measurement)
        pos = msg.pose.pose.position
        return PoseEstimate(from_time_msg(msg.header.stamp), msg.header.frame_id,
                            np.array([pos.x, pos.y], dtype=float), ros_covariance_to_xy(msg.pose.covariance))
    if pose_source == 'particle_cloud':
        cloud = pose_array_to_particles(msg)
        return PoseEstimate.from_particles(cloud.stamp, cloud.frame_id, cloud.samples, cloud.weights)
    raise ValueError(f'unknown pose_source {pose_source!r}')


def node_clock_now(node: Node) -> float | None:
    """``node``'s clock in s, or None while it is not running yet (simulated time before the first /clock)."""
    now = node.get_clock().now().nanoseconds * 1e-9
    return now if now > 0.0 else None


class RoverInputs:
    """Subscribes one rover's pose estimate and reading on ``node`` and feeds them to ``explorer``.

    Args:
        node: the node that owns the subscriptions (its clock times the arrivals).
        explorer: the rover's measurement cycle.
        params: validated explorer node parameters (``pose_source``, ``reading_type``, ``cloud_receive_limit``,
            ``seed``).
        namespace: prefix of the topics (``'rover0'`` -> ``rover0/odometry/filtered``, ``rover0/reading``); ''
            for the node's own topics.
        seed: extra entropy of the cloud subsampling's random stream (rovers of one node differ by it).

    Attributes:
        last_pose, last_reading: node-clock time (s) of the latest pose message and reading message that
            arrived (valid or not), None before the first: a team drops a rover silent for too long.
        heading: yaw (rad) of the latest pose message with an orientation (odometry, pose with covariance),
            None before one (and for particle clouds): the explorer's stop goal faces where the rover does.
    """

    def __init__(self, node: Node, explorer: Explorer, params: dict[str, Any], namespace: str = '', seed: int = 0):
        self.node, self.explorer, self.p = node, explorer, params
        prefix = f'{namespace}/' if namespace else ''
        entropy = [int(params['seed']), 0xC10D] + ([int(seed)] if seed else [])
        self._cloud_rng = np.random.default_rng(np.random.SeedSequence(entropy))
        self.last_pose: float | None = None
        self.last_reading: float | None = None
        self.heading: float | None = None
        msg_type, topic = POSE_SOURCES[params['pose_source']]
        if params['pose_source'] == 'particle_cloud':
            # raw: read the serialised cloud with NumPy and subsample it before anything else
            self.pose_sub = node.create_subscription(msg_type, prefix + topic, self.on_cloud_raw,
                                                     qos_profile_sensor_data, raw=True)
        else:
            # best effort matches both reliable and best-effort publishers (robot_localization, Gazebo
            # bridges); a short queue so a busy moment does not leave a backlog of old poses
            self.pose_sub = node.create_subscription(msg_type, prefix + topic, self.on_pose_msg, _POSE_QOS)
        msg_type = READING_TYPES[params['reading_type']][0]
        self.reading_sub = node.create_subscription(msg_type, prefix + 'reading', self.on_reading,
                                                    qos_profile_sensor_data)

    def arrival(self, info) -> float | None:
        """When a message arrived, s on the node clock (None before the clock runs).

        On a wall clock: the middleware's reception stamp, so that a message that waited in the node's
        subscription queue (the executor was busy) is judged by when it arrived, not by when its callback ran:
        a pose is stale when the localisation lags, not when this node was busy; a header-less reading is stamped
        with the moment it came in. Under simulated time (the reception stamp is a wall time): the node clock.
        """
        if not self.node.get_clock().ros_time_is_active:
            ns = info.get('received_timestamp', 0) if info else 0
            if ns > 0:
                return ns * 1e-9
        return node_clock_now(self.node)

    def on_pose_msg(self, msg, info) -> None:
        self.last_pose = node_clock_now(self.node)
        try:
            self.heading = quaternion_to_yaw(msg.pose.pose.orientation)
        except (ValueError, AttributeError):
            pass                 # no orientation (hand-written publishers leave it all-zero): the last one stays
        try:
            pose = pose_estimate_from_msg(msg, self.p['pose_source'])
        except (ValueError, TypeError, IndexError) as exc:
            self.explorer.received['poses'] += 1
            self.explorer.reject('pose', 'malformed message', str(exc))
            return
        self.explorer.on_pose(pose, self.arrival(info))

    def on_cloud_raw(self, raw: bytes, info) -> None:
        self.last_pose = node_clock_now(self.node)
        try:
            cloud = pose_array_from_cdr(raw, self.p['cloud_receive_limit'], self._cloud_rng)
            pose = PoseEstimate.from_particles(cloud.stamp, cloud.frame_id, cloud.samples)
        except (ValueError, TypeError, IndexError) as exc:
            self.explorer.received['poses'] += 1
            self.explorer.reject('pose', 'malformed message', str(exc))
            return
        self.explorer.on_pose(pose, self.arrival(info))

    def on_reading(self, msg, info) -> None:
        self.last_reading = node_clock_now(self.node)
        try:
            stamp, value, variance = reading_from_msg(msg, self.p['reading_type'])
        except (ValueError, TypeError) as exc:
            self.explorer.received['readings'] += 1
            self.explorer.reject('reading', 'malformed message', str(exc))
            return
        self.explorer.on_reading(Reading(stamp, value, variance), self.arrival(info))

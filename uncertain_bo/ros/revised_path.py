"""A localiser's corrected past trajectory, ``nav_msgs/Path``, into an explorer (revised trajectories re-place the
stored readings: :mod:`uncertain_bo.explorer.revisions`).

Smoothers and SLAM back ends that revise the past publish the corrected trajectory as a ``nav_msgs/Path`` of stamped
poses, the whole optimised trajectory each time: fuse's ``fuse_publishers::Path2DPublisher`` (every stamped 2D pose of
its fixed-lag or batch graph, in the map frame), LIO-SAM's ``lio_sam/mapping/path`` (its keyframes, rebuilt from the
optimised graph after a loop closure or a GNSS factor). The topic is the parameter ``revised_path_topic`` (empty:
off). A ``nav_msgs/Path`` has no covariance: each revised pose gets ``revised_path_std``² I (the back end's accuracy
after optimisation), or, with ``revised_path_std`` 0, each reading keeps its stored covariance and only its mean
moves (with a ``sensor_offset``: to the sensor at the revised pose and heading; a Path has no heading covariance).
The revision's stamp is the message header's (the time of the optimisation), or its newest pose's when the header
stamp is 0 (publishers that leave it unset). Each pose's own stamp and frame are used (its header's, else the
message's). Subscribed best effort, keep last 1: compatible with reliable and best-effort publishers; a newer path
supersedes an older one.

Which stacks provide which signal, and what was checked only on paper: docs/ros2.md, "Revised trajectories".
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from nav_msgs.msg import Path
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ..explorer import Explorer, PoseEstimate
from .conversions import from_time_msg, quaternion_to_yaw

__all__ = ['poses_from_path', 'subscribe_revised_path', 'revise', 'SOURCE']

#: the journal's ``source`` of these revisions
SOURCE = 'revised_path'

_PATH_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


def poses_from_path(msg: Path, std: float) -> tuple[list[PoseEstimate], float]:
    """``(poses, stamp)`` of a ``nav_msgs/Path``: each pose with its own stamp and frame (the message's where its
    header leaves them empty) and the covariance ``std``² I (zero for ``std`` 0: the caller keeps the readings'), and
    the revision's stamp (module docstring). Not validated: the explorer checks each pose as it checks a pose estimate.
    """
    header_stamp = from_time_msg(msg.header.stamp)
    cov = np.eye(2) * float(std) ** 2
    poses = []
    for p in msg.poses:
        stamp = from_time_msg(p.header.stamp)
        try:
            yaw = quaternion_to_yaw(p.pose.orientation)     # where a sensor_offset places the readings
        except ValueError:
            yaw = None
        poses.append(PoseEstimate(stamp if stamp > 0 else header_stamp, p.header.frame_id or msg.header.frame_id,
                                  np.array([p.pose.position.x, p.pose.position.y], dtype=float), cov, yaw=yaw))
    stamp = header_stamp if header_stamp > 0 else max((p.stamp for p in poses), default=0.0)
    return poses, stamp


def subscribe_revised_path(node: Node, explorer: Explorer, params: dict[str, Any], topic: str | None = None,
                           tap: Callable[[str, Path], None] | None = None):
    """Subscribe ``params['revised_path_topic']`` (or ``topic``) on ``node`` and hand each path to ``explorer``
    (:func:`revise`); None when the topic is empty (off). ``tap(resolved topic, msg)`` gets each path first (a
    recording: :mod:`uncertain_bo.ros.recording`)."""
    topic = params['revised_path_topic'] if topic is None else topic
    if not topic:
        return None

    def on_path(msg: Path) -> None:
        if tap is not None:
            tap(sub.topic_name, msg)
        revise(explorer, params, msg)

    sub = node.create_subscription(Path, topic, on_path, _PATH_QOS)
    return sub


def revise(explorer: Explorer, params: dict[str, Any], msg: Path) -> None:
    """Hand a revised path to ``explorer`` (:meth:`~uncertain_bo.explorer.Explorer.on_revised_trajectory`): the
    subscription's callback, and a replay's."""
    std = float(params['revised_path_std'])
    poses, stamp = poses_from_path(msg, std)
    explorer.on_revised_trajectory(poses, stamp, SOURCE, keep_covariance=std == 0.0)

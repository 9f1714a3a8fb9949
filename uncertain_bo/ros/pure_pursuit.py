"""``pure_pursuit`` node: follows a plan or drives to a goal using the filtered pose estimate.

Thin wrapper around :class:`uncertain_bo.sim.pure_pursuit.PurePursuit`:

* subscribes ``plan`` (``nav_msgs/Path``: follow it; an empty path cancels; transient local, so the plan a
  latched publisher such as the explorer sent before this node started is followed), ``goal_pose``
  (``geometry_msgs/PoseStamped``: a straight plan from the current estimated position to the goal; volatile,
  so RViz's goal tool matches) and ``odometry/filtered`` (``nav_msgs/Odometry``; best effort, so reliable and
  best-effort publishers both match);
* publishes ``cmd_vel`` (``Twist``, or ``TwistStamped`` with ``stamped_cmd_vel``) **once per odometry
  message** (zero when idle or arrived), so the simulation's lockstep loop closes, and a zero one when it is shut
  down (Ctrl-C, SIGTERM).

A goal within ``xy_goal_tolerance`` of the current estimate is reached at once: publishing the current
position as the goal stops the rover (that is how the explorer cancels a target). Arrival is latched until
a new plan or goal arrives.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped
from nav_msgs.msg import Odometry, Path
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from uncertain_bo.parameters.specs import Param
from uncertain_bo.ros import conversions as cv
from uncertain_bo.ros.params import declare_parameters
from uncertain_bo.ros.qos import RELIABLE_10
from uncertain_bo.ros.spin import run_node
from uncertain_bo.sim.pure_pursuit import PURE_PURSUIT_PARAMS, PurePursuit

__all__ = ['PURE_PURSUIT_NODE_PARAMS', 'PURE_PURSUIT_ALL_PARAMS', 'PurePursuitNode', 'main']

PURE_PURSUIT_NODE_PARAMS = [
    Param('stamped_cmd_vel', False, 'publish cmd_vel as geometry_msgs/TwistStamped instead of Twist',
          read_only=True),
    Param('base_frame', 'base_link', 'frame_id of stamped velocity commands', read_only=True),
]

#: all parameters of the pure_pursuit node
PURE_PURSUIT_ALL_PARAMS = PURE_PURSUIT_PARAMS + PURE_PURSUIT_NODE_PARAMS

#: plan: transient local, so a plan latched by its publisher before this node matched is still received (a
#: transient-local subscription needs a transient-local publisher, as the explorer's is; goal_pose stays volatile
#: so that RViz's and other volatile goal publishers match)
_LATCHED_IN = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: odometry: best effort accepts reliable and best-effort publishers (robot_localization, Gazebo bridges)
_ODOM_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


class PurePursuitNode(Node):
    """Pure-pursuit follower node (see the module docstring).

    Attributes:
        path: current plan (m, 2) in metres, or None when idle.
        arrived: True once the current plan's goal was reached.
        frame_id: frame of the current plan.

    Args:
        node_name: ROS node name.
        **kwargs: passed to ``rclpy.node.Node`` (``parameter_overrides``, ``context``, ...).

    Raises:
        ParameterError: an invalid parameter value.

    Example:
        Created in its own context (nothing else needed), its topics:

        >>> import rclpy
        >>> from uncertain_bo.ros.pure_pursuit import PurePursuitNode
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = PurePursuitNode(context=ctx)
        >>> sorted(s.topic_name for s in node.subscriptions if s.topic_name != '/parameter_events')
        ['/goal_pose', '/odometry/filtered', '/plan']
        >>> sorted(p.topic_name for p in node.publishers if p.topic_name not in ('/rosout', '/parameter_events'))
        ['/cmd_vel']
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node_name: str = 'pure_pursuit', **kwargs: Any):
        super().__init__(node_name, **kwargs)
        try:
            self.p = declare_parameters(self, PURE_PURSUIT_ALL_PARAMS)
        except Exception:
            self.destroy_node()   # do not leave a half-built node in the graph
            raise
        self.law = PurePursuit(self.p)
        self.path: np.ndarray | None = None
        self.frame_id = ''
        self.arrived = False
        self._pose: cv.StampedPose | None = None
        stamped = self.p['stamped_cmd_vel']
        self._pub = self.create_publisher(TwistStamped if stamped else Twist, 'cmd_vel', RELIABLE_10)
        self.create_subscription(Path, 'plan', self._on_plan, _LATCHED_IN)
        self.create_subscription(PoseStamped, 'goal_pose', self._on_goal, RELIABLE_10)
        self.create_subscription(Odometry, 'odometry/filtered', self._on_odometry, _ODOM_QOS)

    def _on_plan(self, msg: Path) -> None:
        _, frame, pts = cv.path_to_points(msg)
        if pts.shape[0] == 0:
            self.get_logger().info('empty plan: stopping')
            self.path = None
            return
        if not np.all(np.isfinite(pts)):
            self.get_logger().warning('plan with non-finite points ignored')
            return
        self._set_path(pts, frame)

    def _on_goal(self, msg: PoseStamped) -> None:
        _, frame, xy, _ = cv.pose_stamped_to_xy_yaw(msg)
        if not np.all(np.isfinite(xy)):
            self.get_logger().warning('non-finite goal ignored')
            return
        start = self._pose.xy if self._pose is not None else xy
        self._set_path(np.array([start, xy]), frame)

    def _set_path(self, pts: np.ndarray, frame: str) -> None:
        if self._pose is not None and frame and self._pose.frame_id and frame != self._pose.frame_id:
            self.get_logger().warning(f"plan in frame '{frame}' but the pose estimate is in "
                                      f"'{self._pose.frame_id}'; following it as if they were the same",
                                      throttle_duration_sec=10.0)
        if (self.path is not None and not self.arrived and frame == self.frame_id
                and np.allclose(pts[-1], self.path[-1], atol=1e-6)):
            return  # the same goal again (e.g. as both plan and goal_pose): keep following it
        self.path, self.frame_id, self.arrived = pts, frame, False
        self.get_logger().info(f'new plan: {len(pts)} points to ({pts[-1, 0]:.2f}, {pts[-1, 1]:.2f})')

    def _on_odometry(self, msg: Odometry) -> None:
        pose = cv.odometry_to_pose(msg)
        self._pose = pose
        v = w = 0.0
        if self.path is not None and not self.arrived and np.all(np.isfinite(pose.xy)):
            v, w, arrived = self.law.command((pose.xy[0], pose.xy[1], pose.yaw), self.path)
            if arrived:
                self.arrived = True
                self.get_logger().info(f'goal ({self.path[-1, 0]:.2f}, {self.path[-1, 1]:.2f}) reached')
        self._pub.publish(cv.make_twist(v, w, self.p['stamped_cmd_vel'], pose.stamp, self.p['base_frame']))

    def stop_safely(self) -> Callable[[], bool]:
        """The node is being shut down (SIGINT, SIGTERM: :func:`~uncertain_bo.ros.spin.run_node` calls this): a
        zero ``cmd_vel``, so that a base that keeps its last command does not drive on. Returns a predicate, true
        once every subscriber acknowledged it."""
        self.path = None
        stamp = self._pose.stamp if self._pose is not None else self.get_clock().now().nanoseconds * 1e-9
        self._pub.publish(cv.make_twist(0.0, 0.0, self.p['stamped_cmd_vel'], stamp, self.p['base_frame']))
        return lambda: self._pub.wait_for_all_acked(Duration())


def main(args=None) -> None:
    """Entry point ``pure_pursuit`` (``--ros-args --params-file config/sim.yaml``)."""
    run_node(PurePursuitNode, args, doc=__doc__, specs=PURE_PURSUIT_ALL_PARAMS)


if __name__ == '__main__':
    main()

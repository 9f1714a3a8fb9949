"""The pure_pursuit node over real rclpy topics: a plan latched before it started is followed, and odometry from
a best-effort publisher is accepted. Own rclpy context on ROS domain 60 + pid % 20."""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.pure_pursuit import PurePursuitNode  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 60 + os.getpid() % 20
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def test_plan_latched_before_the_controller_started_is_followed_on_best_effort_odometry(context):
    """The explorer publishes its plan latched; a pure_pursuit that starts later still drives to it (before: a
    volatile plan published before the controller matched was lost), and its odometry subscription matches a
    best-effort publisher (before: reliable only, so a best-effort odometry never reached it)."""
    robot = rclpy.create_node('robot_stub', context=context)
    plan_pub = robot.create_publisher(Path, 'plan', LATCHED)
    odom_pub = robot.create_publisher(Odometry, 'odometry/filtered',
                                      QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
    cmds = []
    robot.create_subscription(Twist, 'cmd_vel', cmds.append, 10)
    plan_pub.publish(cv.make_path(0.0, 'map', [np.array([0.0, 0.0]), np.array([10.0, 0.0])]))
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(robot)
    spin_until(ex, lambda: False, timeout=0.3)            # the plan is out before the controller exists
    node = PurePursuitNode(context=context)
    ex.add_node(node)
    try:
        def publish():
            now = robot.get_clock().now().nanoseconds * 1e-9
            odom_pub.publish(cv.make_odometry(now, 'map', 'base_link', [0.0, 0.0], 0.0, np.eye(6) * 0.01))
        assert spin_until(ex, lambda: any(c.linear.x > 0 for c in cmds), timeout=10.0, every=publish), (
            f'path {node.path}, {len(cmds)} commands')
        assert np.allclose(node.path[-1], [10.0, 0.0])
    finally:
        ex.shutdown()
        node.destroy_node()
        robot.destroy_node()

"""Shared by the team explorer's node tests: the node under test and a probe standing in for the rovers (each
rover's pose estimate and sensor, published in its namespace; the goals it is sent; /diagnostics and markers).
Import only where rclpy is importable."""
import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Temperature
from visualization_msgs.msg import MarkerArray

from uncertain_bo.ros import conversions as cv
from uncertain_bo.ros.reading_messages import make_reading
from uncertain_bo.ros.params import parameter_overrides
from uncertain_bo.ros.team_explorer import TEAM_EXPLORER_PARAMS, TeamExplorerNode


def make_team(context, tmp_path, **params):
    """A team explorer on a 20 m x 20 m area with fast timers; ``params`` override. The probes publish poses that
    jump to each target (no driving): the pose gate (max_speed) is off."""
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'dwell_time': 0.2, 'run_dir': str(tmp_path), 'n_initial': 5,
              'tick_rate': 50.0, 'max_speed': 0.0, **params}
    return TeamExplorerNode(context=context, parameter_overrides=parameter_overrides(values, TEAM_EXPLORER_PARAMS))


class TeamProbe:
    """Publishers of each rover's estimate and sensor in its namespace; the goals each rover is sent; /diagnostics
    and the team explorer's markers."""

    def __init__(self, context, rovers):
        self.node = rclpy.create_node('team_probe', context=context)
        self.goals = {r: [] for r in rovers}
        self.odom = {r: self.node.create_publisher(Odometry, f'{r}/odometry/filtered', 10) for r in rovers}
        self.reading = {r: self.node.create_publisher(Temperature, f'{r}/reading', 10) for r in rovers}
        for r in rovers:
            self.node.create_subscription(PoseStamped, f'{r}/goal_pose', self.goals[r].append, 10)
        self.diagnostics, self.markers = [], []
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self.diagnostics.append, 10)
        self.node.create_subscription(MarkerArray, 'team_explorer/markers', self.markers.append, 10)

    def goal(self, rover):
        g = self.goals[rover][-1].pose.position
        return np.array([g.x, g.y])

    def report(self, rover, xy, value):
        now = self.node.get_clock().now().nanoseconds * 1e-9
        cov6 = np.zeros((6, 6))
        cov6[:2, :2] = np.eye(2) * 0.04
        self.odom[rover].publish(cv.make_odometry(now, 'map', 'base_link', xy, 0.0, cov6))
        self.reading[rover].publish(make_reading('temperature', now, 'base_link', value, 0.01))

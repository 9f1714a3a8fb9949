"""Explorer node: pairs location distributions with readings and publishes the next target waypoint.

Subscribes (DESIGN.md contract; every topic remappable):
    ``odometry/filtered`` (nav_msgs/Odometry) or ``pose`` (geometry_msgs/PoseWithCovarianceStamped),
    by parameter ``pose_source``; ``reading`` (sensor_msgs Temperature / FluidPressure / Illuminance /
    RelativeHumidity or std_msgs/Float64, by parameter ``reading_type``).
Publishes:
    ``goal_pose`` (geometry_msgs/PoseStamped) and ``plan`` (nav_msgs/Path, current estimate -> target).

All logic lives in :class:`uncertain_bo.explorer.Explorer`; this node converts messages and runs its
``tick`` on a timer of the node clock (simulated time under ``use_sim_time``). The explorer needs a
**map-frame** estimate with absolute corrections (robot_localization with GNSS, AMCL): an odom-frame
covariance grows without bound and would make every location distribution uninformative.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

import numpy as np
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry, Path as PathMsg
from rclpy.node import Node
from rclpy.qos import QoSProfile, qos_profile_sensor_data

from ..distributions import GaussianExecutionNoise
from ..explorer import EXPLORER_PARAMS, Explorer, Measurement, PoseEstimate, Reading, State
from ..optim import OptimizerSettings
from ..parameters import Param, ParameterError
from ..planner import Planner, Recommendation
from .conversions import (READING_TYPES, make_path, make_pose_stamped, odometry_to_pose,
                          pose_with_covariance_to_pose, reading_from_msg)
from .params import declare_parameters
from .spin import run_node

__all__ = ['ExplorerNode', 'EXPLORER_NODE_PARAMS', 'main']

EXPLORER_NODE_PARAMS = EXPLORER_PARAMS + [
    Param('pose_source', 'odometry', 'pose input: nav_msgs/Odometry on odometry/filtered, or '
          'PoseWithCovarianceStamped on pose', choices=('odometry', 'pose_with_covariance'), read_only=True),
    Param('reading_type', 'temperature', 'message type on the reading topic (value field and variance)',
          choices=tuple(sorted(READING_TYPES)), read_only=True),
    Param('tick_rate', 10.0, 'rate of the measurement-cycle timer (node clock), Hz', range=(0.1, 1000.0),
          read_only=True),
    Param('exit_when_done', False, 'shut the node down after the last measurement (for launch files that '
          'end with the explorer)', read_only=True),
]


class ExplorerNode(Node):
    """ROS wrapper of :class:`~uncertain_bo.explorer.Explorer`.

    Args:
        node_name: ROS node name (default ``explorer``).
        **kwargs: forwarded to ``rclpy.node.Node`` (e.g. ``parameter_overrides``).

    Raises:
        uncertain_bo.parameters.ParameterError: a parameter is out of range (the message names it and the
            allowed range).
    """

    def __init__(self, node_name: str = 'explorer', **kwargs):
        super().__init__(node_name, **kwargs)
        self.p = declare_parameters(self, EXPLORER_NODE_PARAMS)
        xmin, xmax, ymin, ymax = self.p['search_bounds']
        if not (xmax > xmin and ymax > ymin):
            raise ParameterError(f"parameter 'search_bounds' = {self.p['search_bounds']} is invalid: "
                                 'need xmax > xmin and ymax > ymin')
        self.run_dir = Path(self.p['run_dir'] or Path('runs') / _dt.datetime.now().strftime('%Y%m%d-%H%M%S'))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        planner = Planner(
            bounds=np.array([[xmin, ymin], [xmax, ymax]]),
            execution_noise=GaussianExecutionNoise.isotropic(self.p['execution_noise_std']),
            method=self.p['method'], beta=self.p['beta'], n_initial=self.p['n_initial'],
            refit_every=self.p['refit_every'], seed=self.p['seed'],
            optimizer=OptimizerSettings(self.p['num_restarts'], self.p['raw_samples']),
            journal=self.run_dir / 'journal.jsonl',
            metadata={'node': self.get_fully_qualified_name(), 'parameters': self.p})
        if planner.n:
            self.get_logger().info(f'resumed {planner.n} measurements from {self.run_dir / "journal.jsonl"}')
        self.explorer = Explorer(planner, self, self.p)
        self.recommendation: Recommendation | None = None

        self.goal_pub = self.create_publisher(PoseStamped, 'goal_pose', QoSProfile(depth=10))
        self.plan_pub = self.create_publisher(PathMsg, 'plan', QoSProfile(depth=10))
        if self.p['pose_source'] == 'odometry':
            self.create_subscription(Odometry, 'odometry/filtered',
                                     lambda m: self._on_pose(odometry_to_pose(m)), 50)
        else:
            self.create_subscription(PoseWithCovarianceStamped, 'pose',
                                     lambda m: self._on_pose(pose_with_covariance_to_pose(m)), 50)
        msg_type = READING_TYPES[self.p['reading_type']][0]
        self.create_subscription(msg_type, 'reading', self._on_reading, qos_profile_sensor_data)
        self.timer = self.create_timer(1.0 / self.p['tick_rate'], self._tick)
        self.get_logger().info(
            f"exploring {self.p['search_bounds']} m with {self.p['method']}, "
            f"{self.p['max_measurements']} measurements; journal in {self.run_dir}")

    # ---------------------------------------------------------- callbacks
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_pose(self, pose) -> None:
        self.explorer.on_pose(PoseEstimate(pose.stamp, pose.frame_id, np.asarray(pose.xy),
                                           np.asarray(pose.cov_xy)))

    def _on_reading(self, msg) -> None:
        stamp, value, variance = reading_from_msg(msg, self.p['reading_type'])
        self.explorer.on_reading(Reading(stamp, value, variance))

    def _tick(self) -> None:
        if self.explorer.state is State.DONE:
            return
        self.explorer.tick(self._now())

    # ------------------------------------------------- ExplorerOutputs
    def send_goal(self, target: np.ndarray) -> None:
        stamp = self._now()
        frame = self.p['frame_id']
        self.goal_pub.publish(make_pose_stamped(stamp, frame, target))
        pose = self.explorer.latest_pose
        start = pose.xy if pose is not None else target
        self.plan_pub.publish(make_path(stamp, frame, [start, target]))
        n = self.explorer.planner.n
        d = self.explorer.planner.decisions[-1]
        self.get_logger().info(
            f"target {n + 1}/{self.p['max_measurements']}: ({target[0]:.2f}, {target[1]:.2f}) m "
            f"[{d.phase}, decided in {d.seconds:.3f} s]")

    def stop(self, position: np.ndarray) -> None:
        stamp = self._now()
        self.goal_pub.publish(make_pose_stamped(stamp, self.p['frame_id'], position))

    def measured(self, m: Measurement, rec: Recommendation) -> None:
        self.recommendation = rec
        sd = math.sqrt(max(float(np.trace(m.pose.cov)) / 2.0, 0.0))
        journal = self.explorer.planner.journal_file
        if journal is not None:
            journal.append({'type': 'recommendation', 'index': m.index, 'target': rec.target.tolist(),
                            'mean': rec.mean, 'std': rec.std})
        self.get_logger().info(
            f"measurement {m.index + 1}/{self.p['max_measurements']}: reading {m.reading.value:.2f} at "
            f"({m.pose.xy[0]:.2f}, {m.pose.xy[1]:.2f}) ± {sd:.2f} m (target ({m.target[0]:.2f}, "
            f"{m.target[1]:.2f}){', goal timed out' if m.timed_out else ''}); best so far "
            f"({rec.target[0]:.2f}, {rec.target[1]:.2f}) μ̂ = {rec.mean:.2f} ± {rec.std:.2f}")

    def finished(self, rec: Recommendation) -> None:
        self.recommendation = rec
        result = {'recommended_target': rec.target.tolist(), 'predicted_robust_value': rec.mean,
                  'predicted_std': rec.std, 'measurements': self.explorer.planner.n,
                  'rejected': dict(self.explorer.rejected)}
        (self.run_dir / 'explorer_result.json').write_text(json.dumps(result, indent=2))
        self.get_logger().info(
            f'done: robust peak believed at ({rec.target[0]:.2f}, {rec.target[1]:.2f}) m, '
            f'E[f] ≈ {rec.mean:.2f} ± {rec.std:.2f}; journal {self.run_dir / "journal.jsonl"}')
        if self.p['exit_when_done']:
            self.timer.cancel()
            raise SystemExit(0)


def main(args=None) -> None:
    """Entry point ``explorer`` (``--ros-args --params-file config/explorer.yaml``)."""
    from ..cli import _single_threaded_torch
    _single_threaded_torch()
    run_node(ExplorerNode, args)

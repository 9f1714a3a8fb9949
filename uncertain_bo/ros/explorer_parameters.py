"""The explorer node's parameters: :data:`~uncertain_bo.explorer.EXPLORER_PARAMS` (shared with the in-process
mission) plus the ones only the ROS node has (:data:`EXPLORER_NODE_PARAMS`: pose and reading inputs, the goal
interface, timers, the operator view and the recording, :data:`~uncertain_bo.ros.recording.RECORDING_PARAMS`).

Each spec's description is the parameter's whole documentation: ``config/explorer.yaml`` is generated from these
specs (:mod:`uncertain_bo.parameters.yaml_source`), and ``explorer --help`` and ``ros2 param describe`` show the same
text."""
from __future__ import annotations

from ..explorer import EXPLORER_PARAMS
from ..parameters.specs import Param
from .reading_messages import READING_TYPES
from .nav2_goals import GOAL_INTERFACES
from .recording import RECORDING_PARAMS
from .rover_inputs import PARTICLE_CLOUD_TYPES, POSE_SOURCES

__all__ = ['EXPLORER_NODE_PARAMS', 'POSE_SOURCES']

EXPLORER_NODE_PARAMS = EXPLORER_PARAMS + [
    Param('pose_source', 'odometry', "pose input: 'odometry' (nav_msgs/Odometry on odometry/filtered), "
          "'pose_with_covariance' (geometry_msgs/PoseWithCovarianceStamped on pose, e.g. remapped to amcl_pose) or "
          "'particle_cloud' (the cloud on particle_cloud, of particle_cloud_type: the particles themselves for "
          'sample-based methods such as airbo, see method; their mean and covariance otherwise)',
          choices=tuple(POSE_SOURCES), read_only=True),
    Param('particle_cloud_type', 'geometry_msgs/msg/PoseArray', "message type of the particle cloud (pose_source "
          "'particle_cloud'): 'geometry_msgs/msg/PoseArray' (equally weighted particles: the shipped particle_filter) "
          "or 'nav2_msgs/msg/ParticleCloud' (what Nav2's AMCL publishes on particle_cloud: its weights become the "
          'location distribution\'s weights; needs nav2_msgs installed)', choices=tuple(PARTICLE_CLOUD_TYPES),
          read_only=True),
    Param('reading_type', 'temperature', 'message type on the reading topic: temperature, fluid_pressure, '
          'illuminance, relative_humidity (stamped, with variance) or float64 (no header: stamped on arrival, '
          "which assumes the sensor's latency is small against dwell_time; prefer a stamped type for en-route "
          'readings from a moving rover)', choices=tuple(sorted(READING_TYPES)), read_only=True),
    Param('reading_unit', '', "unit of the readings, for the journal and the reports (e.g. 'm³/m³' for a "
          "soil-moisture probe on float64); empty = the unit reading_type's message defines (temperature °C, "
          "fluid_pressure Pa, illuminance lx, relative_humidity 0-1; float64 none); 'none' = no known unit. The "
          "simulated graphs set it from their field", read_only=True),
    Param('goal_interface', 'topic', "where goals go: 'topic' (goal_pose and plan: pure_pursuit, or Nav2's goal_pose), "
          "'nav2_action' (Nav2's NavigateToPose action: an aborted or rejected goal is skipped at once with Nav2's "
          "reason, feedback in /diagnostics) or 'auto' (the action where nav2_msgs is installed, else the topic). "
          "With Nav2 set 'auto' or 'nav2_action' (config/examples/paddock_nav2.yaml); 'topic' is the default for the "
          "shipped pure_pursuit stack ('auto' would give a pure_pursuit stack on a machine with Nav2 installed no "
          'goals)', choices=GOAL_INTERFACES, read_only=True),
    Param('nav2_action_name', 'navigate_to_pose', "Nav2's NavigateToPose action name (goal_interface nav2_action; "
          "bt_navigator's navigate_to_pose: prefix it when Nav2 runs in a namespace)", read_only=True),
    Param('nav2_behavior_tree', '', 'the behavior_tree of each NavigateToPose goal (a BT XML file path); empty = '
          "Nav2's default", read_only=True),
    Param('revised_path_topic', '', "the localiser's corrected past trajectory, nav_msgs/Path (a smoother or SLAM "
          "back end that revises the past: fuse's Path2DPublisher, LIO-SAM's lio_sam/mapping/path): each stored "
          'reading is re-placed at the revised pose at its stamp (docs/ros2.md, "Revised trajectories"); empty = '
          'off', read_only=True),
    Param('revised_path_std', 0.0, 'position standard deviation of the poses of revised_path_topic, m (a '
          "nav_msgs/Path has no covariance: the back end's accuracy after optimisation); 0 = each reading keeps its "
          'stored covariance and only its mean moves', range=(0.0, 1000.0), read_only=True),
    Param('tick_rate', 10.0, 'rate of the measurement-cycle timer on the node clock (simulated time under '
          'use_sim_time), Hz', range=(0.1, 1000.0), read_only=True),
    Param('exit_when_done', False, 'shut the node down after the last measurement (for launch files that end '
          'with the explorer)', read_only=True),
    Param('diagnostics_period', 1.0, 'period of /diagnostics (state, counters of rejected inputs, last decision) '
          'and ~/markers (targets, measured locations with 2-sigma covariance ellipses, recommendation, goal), '
          'wall clock, s. Both are also published when the state changes', range=(0.05, 3600.0)),
    Param('gp_map_cells', 40, 'cells of the ~/gp_mean and ~/gp_std OccupancyGrids along the longer side of the '
          'search area. They are computed once after each measurement (keep it coarse); values are scaled to '
          '0-100 (the scales are in the status marker and in /diagnostics)', range=(2, 1000)),
    Param('decide_in_background', True, 'choose targets on a worker thread, so that /diagnostics, markers and the '
          'pose and reading subscriptions keep running during a long decision (large num_restarts / raw_samples)',
          read_only=True),
    Param('cloud_receive_limit', 5000, "particle clouds (pose_source 'particle_cloud') with more particles than "
          'this are subsampled uniformly at random as they are received, before any other work: a 10^5-particle '
          'PoseArray is read in milliseconds instead of seconds (and is not stale by the time it is used)',
          range=(1, 10000000), read_only=True),
] + RECORDING_PARAMS

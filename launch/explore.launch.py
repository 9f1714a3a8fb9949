"""Exploration on a real rover: the explorer (and optionally our pure-pursuit follower) on its localisation.

Starts::

    explorer      <odom_topic> (nav_msgs/Odometry) or <pose_topic> (PoseWithCovarianceStamped)
                  + <reading_topic>  ->  goal_pose (PoseStamped), plan (nav_msgs/Path)
    pure_pursuit  plan / goal_pose + <odom_topic>  ->  <cmd_vel_topic>      (unless use_pure_pursuit:=false)

Parameters come from the installed ``config/explorer.yaml`` and ``config/sim.yaml`` (only its
``pure_pursuit`` section applies here; the simulation sections name other nodes), then ``params_file``
(if given), then the launch arguments. Put your field's ``search_bounds``, ``execution_noise_std``,
``reading_type`` and your rover's follower tuning (``desired_linear_vel``, ``lookahead_dist``, ...; the
shipped values are the fast simulated rover's) in ``params_file``. Sections are keyed by the bare node
names ``explorer:`` / ``pure_pursuit:``; with ``namespace:=NS`` they are re-keyed to ``/NS/explorer`` and
``/NS/pure_pursuit`` (as nav2_common's ``RewrittenYaml(root_key=...)`` does), so the same files apply.

When the explorer has made its last measurement (``exit_when_done:=true``) the launch shuts down, which
also stops pure_pursuit; when a node fails (e.g. an invalid parameter at start-up) the launch shuts down and
``ros2 launch`` exits with a non-zero status.

**The explorer needs a map-frame pose estimate with absolute corrections.** An odom-frame filter that
fuses only wheel odometry / IMU reports a covariance that grows without bound, so every location
distribution becomes uninformative. The explorer rejects poses whose ``header.frame_id`` differs from its
``global_frame`` parameter (default ``map``); goals are published in that frame.

With robot_localization
    Fuse GNSS (navsat_transform_node -> ``odometry/gps``), UWB, or another absolute source in an EKF with
    ``world_frame: map``. In the usual dual-EKF setup (dual_ekf_navsat_example) the map-frame filter's
    output is remapped to ``odometry/global``::

        ros2 launch uncertain_bo explore.launch.py odom_topic:=odometry/global \\
            reading_topic:=/soil/temperature params_file:=$HOME/field.yaml run_dir:=$HOME/runs/field1

    A single EKF with ``world_frame: map`` publishes ``odometry/filtered`` (the default odom_topic).
    pure_pursuit follows the same estimate (map frame, like the goals) and publishes ``cmd_vel``
    (``geometry_msgs/Twist``; ``stamped_cmd_vel: true`` in params_file for TwistStamped, e.g.
    diff_drive_controller since Jazzy): ``cmd_vel_topic:=/diff_drive_controller/cmd_vel``.

With Nav2
    bt_navigator subscribes ``goal_pose`` (what RViz's "2D Goal Pose" publishes) and navigates to each
    new goal, preempting the previous one, so do not start our follower::

        ros2 launch uncertain_bo explore.launch.py use_pure_pursuit:=false \\
            pose_source:=pose_with_covariance pose_topic:=/amcl_pose reading_topic:=/air_pressure

    With ``use_pure_pursuit:=false`` the explorer's ``plan`` (a straight segment, for display) is remapped
    to ``explorer/plan`` so it does not mix with the planner_server's ``plan``. Keep the explorer's
    ``xy_goal_tolerance`` above that of Nav2's goal checker (``general_goal_checker.xy_goal_tolerance``). AMCL
    publishes ``amcl_pose`` only after the rover moved (``update_min_d``/``update_min_a``), so while the rover
    dwells no new pose arrives: raise the explorer's ``max_pose_age`` (e.g. 30.0 s) or pair readings with a map-frame
    robot_localization estimate (``pose_source:=odometry odom_topic:=...``) instead.

In a Gazebo simulation add ``use_sim_time:=true``; to replay a bag use ``ros2 bag play BAG --clock`` and
``use_sim_time:=true``. Launch arguments: ``ros2 launch uncertain_bo explore.launch.py --show-args``.
"""
import os
import shutil
import tempfile

from launch import LaunchDescription
from launch.actions import OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnShutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from uncertain_bo.parameters.files import file_sections, namespaced_sections
from uncertain_bo.parameters.rcl_yaml import format_param_file
from uncertain_bo.parameters.specs import ParameterError
from uncertain_bo.ros.launch_args import (PACKAGE, check_nodes, declare_arguments, exit_handler, flag, params_file,
                                          share_directory)


#: (name, default, description) of every launch argument, in ``--show-args`` order.
ARGUMENTS = [
    ('namespace', '', 'namespace of explorer and pure_pursuit (relative topic names resolve inside it)'),
    ('params_file', '',
     'extra ROS 2 parameter YAML applied after the shipped config/explorer.yaml and the pure_pursuit '
     'section of config/sim.yaml (sections explorer, pure_pursuit); empty = none'),
    ('use_sim_time', 'false', 'run on /clock (Gazebo, ros2 bag play --clock) instead of wall time'),
    ('odom_topic', 'odometry/filtered',
     'nav_msgs/Odometry pose estimate in the map frame (robot_localization: odometry/filtered or '
     'odometry/global); used by pure_pursuit, and by the explorer with pose_source odometry'),
    ('pose_source', '', "explorer pose input: 'odometry' (odom_topic), 'pose_with_covariance' "
     "(pose_topic) or 'particle_cloud' (particle_topic); empty = as in the parameter files (shipped: "
     'odometry)'),
    ('pose_topic', 'pose', 'geometry_msgs/PoseWithCovarianceStamped estimate for '
     'pose_source:=pose_with_covariance, e.g. amcl_pose'),
    ('particle_topic', 'particle_cloud', 'geometry_msgs/PoseArray particle cloud for '
     'pose_source:=particle_cloud (mean and covariance of the particles are used)'),
    ('reading_topic', 'reading', 'scalar sensor readings (message type: the explorer parameter '
     'reading_type)'),
    ('cmd_vel_topic', 'cmd_vel', 'velocity commands of pure_pursuit'),
    ('use_pure_pursuit', 'true', 'start our pure_pursuit follower; false when Nav2 (bt_navigator on '
     'goal_pose) drives the rover'),
    ('run_dir', '', 'output folder of the explorer (journal.jsonl, explorer_result.json); an existing '
     'journal there is resumed; empty = as in the parameter files (shipped: runs/<date-time>)'),
    ('measurements', '', "the explorer's max_measurements (integer >= 1); empty = as in the parameter "
     'files (shipped: 30)'),
    ('rviz', 'false', 'also start rviz2 with config/explorer.rviz in the same namespace (its topics are relative)'),
    ('exit_when_done', 'true', 'the explorer exits after its last measurement, which shuts the launch '
     'down'),
]

NODES = ('explorer', 'pure_pursuit')


def namespaced_file(path, namespace, directory=None):
    """``path`` with its ``explorer``/``pure_pursuit`` sections re-keyed to ``/<namespace>/<node>``.

    rcl matches a section key against the node's fully qualified name, so a section ``explorer:`` does
    not reach ``/rover1/explorer``. Other sections (``/**``, already qualified names, other nodes) are kept.
    The file is read as rcl reads it (launch_ros's ``!!python/tuple`` lists, rcl's scalar types) and written
    so that rcl reads back the same values. Returns ``path`` itself when there is no namespace or nothing to
    re-key; else the re-keyed copy, written in ``directory`` (the launch removes it when it ends; None: the
    system's temporary folder).

    Raises:
        uncertain_bo.parameters.specs.ParameterError: the file cannot be read, or rcl would refuse it.
    """
    original = file_sections(path)
    rekeyed = namespaced_sections(original, namespace, NODES)
    if rekeyed.sections == original.sections:
        return path
    with tempfile.NamedTemporaryFile('w', prefix=f'{PACKAGE}_{os.path.basename(path)}_', suffix='.yaml',
                                     dir=directory, delete=False) as f:
        f.write(format_param_file(rekeyed.sections))
        return f.name


def node_configuration(args, share, temporary_dir=None):
    """Parameters and remappings of explorer and pure_pursuit for launch-argument values ``args``
    (re-keyed parameter files for a namespace are written in ``temporary_dir``).

    Returns:
        dict node name -> ``{'parameters': [...], 'remappings': [...]}`` for ``Node(...)``: the shipped
        files, ``params_file`` if given (namespaced if needed), then a dict of overrides (applied last).

    Raises:
        RuntimeError: a launch argument is invalid, ``params_file`` does not exist, or what a node would get is not
            what it accepts (:func:`uncertain_bo.ros.launch_args.check_nodes`: every name it does not declare, every
            invalid value, ...; all of them, before anything is written or started).
    """
    files = [os.path.join(share, 'config', 'explorer.yaml'), os.path.join(share, 'config', 'sim.yaml')]
    user_file = params_file(args)
    if user_file:
        files.append(user_file)
    namespace = args.get('namespace', '')
    try:   # what the nodes will get: the files re-keyed into the namespace (messages name the user's file)
        rekeyed = [namespaced_sections(f, namespace, NODES) for f in files]
    except ParameterError as exc:
        raise RuntimeError(str(exc)) from None
    sim_time = flag(args.get('use_sim_time', 'false'), 'use_sim_time')
    explorer = {'use_sim_time': sim_time,
                'exit_when_done': flag(args.get('exit_when_done', 'true'), 'exit_when_done')}
    source = args.get('pose_source', '').strip()
    if source:
        if source not in ('odometry', 'pose_with_covariance', 'particle_cloud'):
            raise RuntimeError(f"launch argument pose_source:={source!r} must be 'odometry', "
                               "'pose_with_covariance' or 'particle_cloud'")
        explorer['pose_source'] = source
    if args.get('run_dir', '').strip():
        explorer['run_dir'] = os.path.abspath(os.path.expanduser(args['run_dir'].strip()))
    if args.get('measurements', '').strip():
        try:
            n = int(args['measurements'])
        except ValueError:
            n = 0
        if n < 1:
            raise RuntimeError(f"launch argument measurements:={args['measurements']!r} must be an "
                               'integer >= 1')
        explorer['max_measurements'] = n
    odom = args.get('odom_topic', 'odometry/filtered')
    with_follower = flag(args.get('use_pure_pursuit', 'true'), 'use_pure_pursuit')
    explorer_remap = [('odometry/filtered', odom), ('pose', args.get('pose_topic', 'pose')),
                      ('particle_cloud', args.get('particle_topic', 'particle_cloud')),
                      ('reading', args.get('reading_topic', 'reading'))]
    if not with_follower:
        explorer_remap.append(('plan', 'explorer/plan'))  # Nav2's planner_server publishes `plan`
    ns = '/' + namespace.strip('/') if namespace.strip('/') else ''
    follower = {'use_sim_time': sim_time}
    check_nodes([('explorer', f'{ns}/explorer', [*rekeyed, explorer]),
                 *([('pure_pursuit', f'{ns}/pure_pursuit', [*rekeyed, follower])] if with_follower else [])],
                rekeyed[2:])
    files = [namespaced_file(f, namespace, temporary_dir) for f in files]
    return {
        'explorer': {'parameters': [*files, explorer], 'remappings': explorer_remap},
        'pure_pursuit': {'parameters': [*files, follower],
                         'remappings': [('odometry/filtered', odom),
                                        ('cmd_vel', args.get('cmd_vel_topic', 'cmd_vel'))]},
    }


def launch_setup(context):
    """Nodes, built once the launch-argument values are known."""
    args = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    namespace = args['namespace'].strip()
    tmp = tempfile.mkdtemp(prefix=f'{PACKAGE}_launch_') if namespace.strip('/') else None
    conf = node_configuration(args, share_directory(__file__, 'explorer.yaml'), tmp)
    explorer = Node(package='uncertain_bo', executable='explorer', name='explorer', namespace=namespace,
                    output='screen', **conf['explorer'])
    actions = [explorer]
    if flag(args['use_pure_pursuit'], 'use_pure_pursuit'):
        actions.append(Node(package='uncertain_bo', executable='pure_pursuit', name='pure_pursuit',
                            namespace=namespace, output='screen', **conf['pure_pursuit']))

    # the explorer's last measurement ends the launch; a node failing ends it with a non-zero status
    for node in list(actions):   # (before rviz2 joins: closing rviz2 is not a failure of the exploration)
        name = node.node_executable
        actions.append(RegisterEventHandler(OnProcessExit(target_action=node, on_exit=exit_handler(
            name, shutdown_on_success=name == 'explorer'))))
    if flag(args['rviz'], 'rviz'):
        rviz_config = os.path.join(share_directory(__file__, 'explorer.yaml'), 'config', 'explorer.rviz')
        actions.append(Node(package='rviz2', executable='rviz2', name='rviz2', namespace=namespace, output='screen',
                            arguments=['-d', rviz_config],
                            parameters=[{'use_sim_time': flag(args['use_sim_time'], 'use_sim_time')}]))
    if tmp is not None:   # the re-keyed parameter files: removed when the launch ends
        actions.append(RegisterEventHandler(OnShutdown(on_shutdown=lambda *_: shutil.rmtree(tmp, ignore_errors=True))))
    return actions


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(ARGUMENTS, __file__),   # any other argument is refused
        OpaqueFunction(function=launch_setup),
    ])

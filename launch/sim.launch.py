"""Simulated exploration graph: a simulated rover explores a field while the explorer chooses targets.

Starts the four nodes of the package's simulation (docs/architecture.md, "ROS 2 contract")::

    sim_rover     owns /clock; wheel/odometry, position_fix, ground_truth, reading  <- cmd_vel
    ekf           wheel/odometry + position_fix -> odometry/filtered (map frame, 6x6 covariance)
      or, with localiser:=pf (sim_rover's localiser: 'pf'),
    particle_filter  wheel/odometry + position_fix -> particle_cloud (PoseArray), pose
                  (PoseWithCovarianceStamped), odometry/filtered
    pure_pursuit  plan / goal_pose + odometry/filtered -> cmd_vel
    explorer      odometry/filtered + reading -> goal_pose, plan   (uGP-UCB; journal.jsonl in run_dir)

and optionally rviz2. Parameters come from the installed ``config/sim.yaml`` and
``config/explorer.yaml``, then ``params_file`` (if given), then the launch arguments below. The explorer's
``search_bounds`` follow sim_rover's ``field_extent`` and its ``reading_unit`` sim_rover's field (as in
``uncertain-bo demo``) unless ``params_file`` sets them itself.

When the explorer has made its last measurement (``exit_when_done:=true``) the whole launch shuts down, so
``ros2 launch`` ends with the exploration. When any node fails (e.g. an invalid parameter or field at
start-up) the launch shuts down and ``ros2 launch`` exits with a non-zero status.

Usage::

    ros2 launch uncertain_bo sim.launch.py
    ros2 launch uncertain_bo sim.launch.py measurements:=10 seed:=3 run_dir:=/tmp/run1
    ros2 launch uncertain_bo sim.launch.py params_file:=/path/my_noise.yaml rviz:=true
    ros2 launch uncertain_bo sim.launch.py localiser:=pf params_file:=/path/airbo_particles.yaml
        (with explorer: method: 'airbo', pose_source: 'particle_cloud' in that file: empirical locations)
    ros2 launch uncertain_bo sim.launch.py --show-args

Without ``ros2 launch`` (launch/launch_ros are not on PyPI) the same graph, from the same YAML files, runs
in one process with ``uncertain-bo demo [--field F] [--seed S] [--measurements N] [--params FILE]
[--out DIR]``, which also writes ``summary.json`` and ``run.png``; for a run folder written by this launch
file use ``uncertain-bo report RUN_DIR`` to get them.
"""
import os

from launch import LaunchDescription
from launch.actions import LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from uncertain_bo.parameters.files import node_parameters, unknown_sections
from uncertain_bo.reporting.units import simulated_reading_unit
from uncertain_bo.ros.launch_args import (LOCALISERS, bounds_outside, check_nodes, declare_arguments, exit_handler,
                                          params_file, rviz_actions, share_directory, simulation_overrides)


#: (name, default, description) of every launch argument, in ``--show-args`` order.
ARGUMENTS = [
    ('params_file', '',
     'extra ROS 2 parameter YAML applied after the shipped config/sim.yaml and config/explorer.yaml '
     '(sections sim_rover, ekf, particle_filter, pure_pursuit, explorer); empty = none'),
    ('field', '',
     "ground-truth field of sim_rover: 'jacksboro-smooth', 'jacksboro-rough' (real USGS elevation) or a path "
     'to a .npz grid / .csv of x,y,value; empty = as in the parameter files (shipped: jacksboro-smooth)'),
    ('seed', '', 'seed of the simulation noise, of the particle filter and of the explorer (integer); empty = '
     'as in the parameter files (shipped: 0)'),
    ('localiser', '', "localisation filter: 'ekf' (ekf node) or 'pf' (particle_filter node); empty = sim_rover's "
     "localiser in the parameter files (shipped: ekf)"),
    ('measurements', '', "the explorer's max_measurements (integer >= 1); empty = as in the parameter files "
     '(shipped: 30)'),
    ('run_dir', '', 'output folder of the explorer (journal.jsonl, explorer_result.json); an existing '
     'journal there is resumed; empty = as in the parameter files (shipped: runs/<date-time>)'),
    ('use_sim_time', 'true', 'ekf, pure_pursuit, explorer (and rviz2) run on the /clock published by '
     'sim_rover (sim_rover itself always runs on wall time)'),
    ('exit_when_done', 'true', 'the explorer exits after its last measurement, which shuts the launch down'),
    ('rviz', 'false', 'also start rviz2 (with config/explorer.rviz when installed)'),
]


#: the nodes this launch file can start (parameter-file sections)
NODE_NAMES = ('sim_rover', 'ekf', 'particle_filter', 'pure_pursuit', 'explorer')


def graph_parameters(args, share):
    """Parameter lists of the four nodes for launch-argument values ``args`` (name -> string).

    Returns:
        dict node name -> list for ``Node(parameters=...)``: the shipped files, ``params_file`` if given,
        then one dict of overrides from the launch arguments (applied last).

    Raises:
        RuntimeError: a launch argument is invalid, ``params_file`` does not exist, or what a node would get is not
            what it accepts (:func:`uncertain_bo.ros.launch_args.check_nodes`: every name it does not declare, every
            invalid value, a field file that cannot be loaded, ...; all of them, before any node starts).
    """
    files = [os.path.join(share, 'config', 'sim.yaml'), os.path.join(share, 'config', 'explorer.yaml')]
    user_file = params_file(args)
    if user_file:
        for _, key in unknown_sections([user_file], ['/' + n for n in (*NODE_NAMES, 'rviz2')]):
            raise RuntimeError(f'params_file {user_file}: section {key!r} names no node of the simulation; '
                               f"known: {', '.join(NODE_NAMES)} (or '/**' for all)")
        files.append(user_file)
    over, sim_time = simulation_overrides(args)
    for node, values in over.items():
        values['use_sim_time'] = sim_time and node != 'sim_rover'      # sim_rover owns /clock: wall time
    # The explorer searches the simulated field, as in `uncertain-bo demo`, unless told otherwise.
    extent = {}
    for f in files:
        extent.update(node_parameters([f], 'sim_rover'))
    own_bounds = bool(user_file) and 'search_bounds' in node_parameters([user_file], 'explorer')
    if 'field_extent' in extent and not own_bounds:
        over['explorer']['search_bounds'] = [float(v) for v in extent['field_extent']]
    elif 'field_extent' in extent:
        reason = bounds_outside(node_parameters([user_file], 'explorer')['search_bounds'], extent['field_extent'],
                                "sim_rover's field_extent")
        if reason:
            raise RuntimeError(reason)
    if not (user_file and 'reading_unit' in node_parameters([user_file], 'explorer')):
        # the simulated sensor carries any field in a Temperature message: the unit is the field's, not °C
        over['explorer']['reading_unit'] = simulated_reading_unit(over['sim_rover'].get('field', extent.get('field')))
    params = {node: [*files, over[node]] for node in ('sim_rover', 'ekf', 'particle_filter', 'pure_pursuit',
                                                      'explorer')}
    started = ('sim_rover', localiser_node(params), 'pure_pursuit', 'explorer')
    check_nodes([(node, '/' + node, params[node]) for node in started], [user_file] if user_file else [])
    return params


def localiser_node(params):
    """Name of the localiser node to start (``ekf`` or ``particle_filter``) for the parameter lists of
    :func:`graph_parameters`: sim_rover's ``localiser``, later files and the overrides winning."""
    value = 'ekf'
    for entry in params['sim_rover']:
        section = node_parameters([entry], 'sim_rover') if isinstance(entry, str) else entry
        value = section.get('localiser', value)
    if value not in LOCALISERS:
        raise RuntimeError(f"sim_rover parameter localiser = {value!r}: must be one of {', '.join(LOCALISERS)}")
    return LOCALISERS[value]


def launch_setup(context):
    """Nodes of the graph, built once the launch-argument values are known."""
    args = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    params = graph_parameters(args, share_directory(__file__, 'sim.yaml'))
    sim_rover = Node(package='uncertain_bo', executable='sim_rover', name='sim_rover', output='screen',
                     parameters=params['sim_rover'])
    localiser_name = localiser_node(params)
    if localiser_name == 'particle_filter':
        localiser = Node(package='uncertain_bo', executable='particle_filter', name='particle_filter',
                         output='screen', parameters=params['particle_filter'])
    else:
        localiser = Node(package='uncertain_bo', executable='ekf', name='ekf', output='screen',
                         parameters=params['ekf'])
    pure_pursuit = Node(package='uncertain_bo', executable='pure_pursuit', name='pure_pursuit',
                        output='screen', parameters=params['pure_pursuit'])
    explorer = Node(package='uncertain_bo', executable='explorer', name='explorer', output='screen',
                    parameters=params['explorer'])

    run_dir = params['explorer'][-1].get('run_dir')
    nodes = {'sim_rover': sim_rover, localiser_name: localiser, 'pure_pursuit': pure_pursuit, 'explorer': explorer}
    return [
        LogInfo(msg='uncertain_bo simulation: parameters from ' + ', '.join(params['explorer'][:-1])
                + (f'; journal in {run_dir}' if run_dir else '')),
        *nodes.values(),
        # the explorer's last measurement ends the launch; any node failing ends it with a non-zero status
        *[RegisterEventHandler(OnProcessExit(target_action=node, on_exit=exit_handler(
            name, shutdown_on_success=name == 'explorer'))) for name, node in nodes.items()],
    ]


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(ARGUMENTS, __file__),   # any other argument is refused
        OpaqueFunction(function=launch_setup),      # every node's parameters checked, then the nodes
        *rviz_actions(__file__, 'explorer.rviz'),
    ])

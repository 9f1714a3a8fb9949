"""Several rovers, one map: N simulated rovers explore one field while ONE team explorer chooses their targets.

Starts (docs/ros2.md, "Several rovers")::

    sim_rover        one node simulating every rover on one /clock (rovers: [rover0, ...]):
                     roverI/wheel/odometry, roverI/position_fix, roverI/ground_truth, roverI/reading <- roverI/cmd_vel
    roverI/ekf       (or roverI/particle_filter with localiser:=pf) -> roverI/odometry/filtered
    roverI/pure_pursuit  roverI/goal_pose, roverI/plan + roverI/odometry/filtered -> roverI/cmd_vel
    team_explorer    every roverI/odometry/filtered + roverI/reading -> roverI/goal_pose, roverI/plan; one GP,
                     one journal (each measurement with its rover), /diagnostics (one status per rover)

and optionally rviz2. Parameters come from the installed ``config/sim.yaml`` and ``config/explorer.yaml``, then
``params_file`` (sections ``sim_rover``, ``ekf``, ``particle_filter``, ``pure_pursuit``, ``explorer``: the team
explorer takes the ``explorer`` section, every rover's localiser and follower the bare node sections), then the
launch arguments; the values are resolved and validated here, as ``uncertain-bo demo --rovers N`` does
(:func:`uncertain_bo.ros.team_graph.team_node_parameters`: rover ``i`` starts ``spacing`` m from the next along x,
centred on sim_rover's ``initial_x``, with seed ``seed + 7919 i``), and handed to each node as values, so a
namespaced node gets them without re-keyed files. Rover ``i``'s ``ekf`` frames are ``roverI/base_link``.

When the team explorer is done (every rover not dropped has ended; ``exit_when_done:=true``) the launch shuts down;
when sim_rover or the team explorer fails (e.g. an invalid parameter at start-up) it shuts down with a non-zero
status. A rover whose localiser or controller dies is not the end of the launch: the team explorer drops it after
``silence_timeout`` and the simulation's lockstep stops waiting for it. ``rviz:=true`` starts rviz2 with
``config/team.rviz``: the team's shared GP map and markers (every rover's measured path, pending target and name),
and per rover (rover0-rover2) its pose estimate with covariance and its goal.

Usage::

    ros2 launch uncertain_bo team.launch.py rovers:=3 measurements:=20 run_dir:=/tmp/team1
    ros2 launch uncertain_bo team.launch.py rovers:=2 params_file:=/path/my_noise.yaml silence_timeout:=20.0
    ros2 launch uncertain_bo team.launch.py --show-args

Without ``ros2 launch`` the same graph runs in one process: ``uncertain-bo demo --rovers N``.
"""
import os

from launch import LaunchDescription
from launch.actions import LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from uncertain_bo.ros.launch_args import (LOCALISERS, bounds_outside, check_nodes, declare_arguments, exit_handler,
                                          integer, params_file, rover_exit_handler, rviz_actions, share_directory,
                                          simulation_overrides)


#: (name, default, description) of every launch argument, in ``--show-args`` order.
ARGUMENTS = [
    ('rovers', '2', 'number of simulated rovers (integer 1..16), in namespaces rover0 .. rover{N-1}'),
    ('params_file', '',
     'extra ROS 2 parameter YAML applied after the shipped config/sim.yaml and config/explorer.yaml '
     '(sections sim_rover, ekf, particle_filter, pure_pursuit, explorer); empty = none'),
    ('field', '',
     "ground-truth field: 'jacksboro-smooth', 'jacksboro-rough' or a path to a .npz grid / .csv of x,y,value; "
     'empty = as in the parameter files (shipped: jacksboro-smooth)'),
    ('seed', '', 'seed of the simulation noise (rover i: seed + 7919 i) and of the explorer (integer); empty = '
     'as in the parameter files (shipped: 0)'),
    ('localiser', '', "every rover's localisation filter: 'ekf' or 'pf'; empty = sim_rover's localiser in the "
     'parameter files (shipped: ekf)'),
    ('measurements', '', "the team's budget: the explorer's max_measurements (integer >= 1); empty = as in the "
     'parameter files (shipped: 30)'),
    ('silence_timeout', '', 'a rover with no pose or no reading for this many simulated seconds is dropped '
     '(number > 0); empty = the team explorer\'s default (30 s)'),
    ('run_dir', '', 'output folder of the team explorer (journal.jsonl, explorer_result.json); a journal already '
     'there is resumed (each rover back to its pending target); empty = runs/<date-time>'),
    ('use_sim_time', 'true', "every node but sim_rover runs on the /clock published by sim_rover"),
    ('exit_when_done', 'true', 'the team explorer exits when the team is done, which shuts the launch down'),
    ('rviz', 'false', 'also start rviz2 (with config/team.rviz when installed)'),
]


def team_parameters(args, share):
    """Parameter values of every node for launch-argument values ``args`` (name -> string).

    Returns:
        ``(rovers, localiser node name, {node key: values})``, keys ``'sim_rover'``, ``'team_explorer'``,
        ``'roverI/<localiser>'``, ``'roverI/pure_pursuit'`` (:func:`uncertain_bo.ros.team_graph.team_node_parameters`).

    Raises:
        RuntimeError: a launch argument or a parameter value is invalid, ``params_file`` does not exist or names a
            parameter a node does not declare (every one, with its file and line), ``search_bounds`` leave the field,
            or a node's start-up check fails (a field file that cannot be loaded, ...): one line, before anything
            starts.
    """
    from uncertain_bo.parameters.specs import ParameterError
    from uncertain_bo.ros.graph import load_graph_parameters
    from uncertain_bo.ros.team_graph import team_node_parameters

    for name in ('sim.yaml', 'explorer.yaml'):   # the shipped files load_graph_parameters reads (config_path)
        if not os.path.isfile(os.path.join(share, 'config', name)):
            raise RuntimeError(f'config/{name} is not installed in {share}')
    rovers = integer(args.get('rovers', '2'), 'rovers', 1)
    if rovers > 16:
        raise RuntimeError(f'launch argument rovers:={rovers}: at most 16')
    user_file = params_file(args)
    over, sim_time = simulation_overrides(args)
    silence = None
    if args.get('silence_timeout', '').strip():
        try:
            silence = float(args['silence_timeout'])
        except ValueError:
            silence = -1.0
        if not silence > 0:
            raise RuntimeError(f"launch argument silence_timeout:={args['silence_timeout']!r}: must be a number > 0")
    try:
        params = load_graph_parameters([user_file] if user_file else [], over)
        values = team_node_parameters(params, rovers, silence_timeout=silence)
    except (ParameterError, ValueError) as exc:
        raise RuntimeError(str(exc)) from None
    reason = bounds_outside(params['explorer']['search_bounds'], params['sim_rover']['field_extent'],
                            "sim_rover's field_extent")
    if reason:
        raise RuntimeError(reason)
    for key, v in values.items():
        v['use_sim_time'] = False if key == 'sim_rover' else sim_time
    # what each node checks at start-up itself (a field file that loads, a run_dir that can be written, the
    # rovers' names), before any of them starts
    check_nodes([(key.rsplit('/', 1)[-1], '/' + key, [v]) for key, v in values.items()])
    return rovers, LOCALISERS[params['sim_rover']['localiser']], values


def launch_setup(context):
    """Nodes of the team graph, built once the launch-argument values are known."""
    args = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    rovers, localiser, values = team_parameters(args, share_directory(__file__, 'sim.yaml'))
    nodes = {'sim_rover': Node(package='uncertain_bo', executable='sim_rover', name='sim_rover', output='screen',
                               parameters=[values['sim_rover']]),
             'team_explorer': Node(package='uncertain_bo', executable='team_explorer', name='team_explorer',
                                   output='screen', parameters=[values['team_explorer']])}
    for i in range(rovers):
        ns = f'rover{i}'
        if localiser == 'particle_filter':
            nodes[f'{ns}/particle_filter'] = Node(package='uncertain_bo', executable='particle_filter',
                                                  name='particle_filter', namespace=ns, output='screen',
                                                  parameters=[values[f'{ns}/particle_filter']])
        else:
            nodes[f'{ns}/ekf'] = Node(package='uncertain_bo', executable='ekf', name='ekf', namespace=ns,
                                      output='screen', parameters=[values[f'{ns}/ekf']])
        nodes[f'{ns}/pure_pursuit'] = Node(package='uncertain_bo', executable='pure_pursuit', name='pure_pursuit',
                                           namespace=ns, output='screen', parameters=[values[f'{ns}/pure_pursuit']])
    run_dir = values['team_explorer'].get('run_dir') or 'runs/<date-time>'
    return [
        LogInfo(msg=f'uncertain_bo team of {rovers} ({localiser}); journal in {run_dir}'),
        *nodes.values(),
        # the team explorer's end ends the launch; sim_rover or the team explorer failing ends it with a non-zero
        # status; a rover's localiser or controller that dies is logged, and the team explorer drops that rover
        *[RegisterEventHandler(OnProcessExit(target_action=node, on_exit=exit_handler(
            name, shutdown_on_success=name == 'team_explorer') if '/' not in name else rover_exit_handler(
            name, name.split('/')[0]))) for name, node in nodes.items()],
    ]


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(ARGUMENTS, __file__),   # any other argument is refused
        OpaqueFunction(function=launch_setup),      # every node's parameters checked, then the nodes
        *rviz_actions(__file__, 'team.rviz'),
    ])

"""Exploration in Gazebo: a diff-drive rover in a Gazebo world, localised by robot_localization with GNSS.

Starts::

    gz sim         config/gz_field.sdf (world, rover with DiffDrive, ground-truth odometry, IMU and NavSat)
    parameter_bridge   config/gz_bridge.yaml: /clock, cmd_vel, wheel/odometry_raw, ground_truth,
                   navsat/fix_raw, imu
    navsat_covariance, wheel_odometry_covariance   (sensor_covariance, config/gz_sensors.yaml): the GNSS fix
                   and the wheel odometry with the covariance Gazebo's messages lack -> gps/fix, wheel/odometry
    ekf_filter_node_odom, navsat_transform, ekf_filter_node_map   config/gz_localization.yaml (dual EKF):
                   odometry/global = map-frame estimate with GNSS corrections and a bounded, real covariance;
                   TF map -> odom -> base_link
    field_sensor   ground_truth -> reading: the field (config/sim.yaml's sim_rover field) read where the rover
                   really is, stamped, with its noise variance
    explorer       odometry/global + reading -> goal_pose, plan
    pure_pursuit   plan + odometry/global -> cmd_vel

Every node runs on Gazebo's /clock (``use_sim_time``). Parameters come from the shipped
``config/explorer.yaml`` and ``config/sim.yaml`` (its ``pure_pursuit`` section; sim_rover's ``field``,
``field_extent`` and ``reading_noise_std`` for field_sensor), then ``params_file`` (sections ``explorer``,
``pure_pursuit``, ``field_sensor``), then the launch arguments. When the explorer has made its last
measurement the launch shuts down; when any of our nodes fails, it shuts down with a non-zero status.

Needs ``ros_gz_sim``, ``ros_gz_bridge`` and ``robot_localization`` (``apt install ros-$ROS_DISTRO-ros-gz
ros-$ROS_DISTRO-robot-localization``); Gazebo Harmonic (gz-sim 8) world format. Usage::

    ros2 launch uncertain_bo gz.launch.py                         # headless, 30 measurements
    ros2 launch uncertain_bo gz.launch.py gui:=true measurements:=10 run_dir:=/tmp/gz1
    ros2 launch uncertain_bo gz.launch.py field:=my_field.npz params_file:=$HOME/gz_explorer.yaml

The same field_sensor node works with any simulator that publishes a ground-truth pose
(``ros2 run uncertain_bo field_sensor --ros-args -r ground_truth:=/my_sim/odom``).
"""
import os

from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from uncertain_bo.parameters.files import node_parameters
from uncertain_bo.ros.launch_args import (check_nodes, declare_arguments, exit_handler, flag, integer, params_file,
                                          share_directory)

#: (name, default, description) of every launch argument, in ``--show-args`` order.
ARGUMENTS = [
    ('world', '', 'Gazebo world file; empty = the installed config/gz_field.sdf'),
    ('gui', 'false', 'start the Gazebo GUI (false: server only, headless)'),
    ('params_file', '', 'extra ROS 2 parameter YAML (sections explorer, pure_pursuit, field_sensor) applied '
     'after the shipped files; empty = none'),
    ('field', '', "field read by field_sensor: 'jacksboro' or a path to a .npz grid / .csv of x,y,value; empty "
     "= sim_rover's field in config/sim.yaml"),
    ('seed', '', "seed of the explorer and of field_sensor's noise (integer); empty = as in the parameter files"),
    ('measurements', '', "the explorer's max_measurements (integer >= 1); empty = as in the parameter files"),
    ('run_dir', '', 'output folder of the explorer (journal.jsonl); an existing journal there is resumed'),
    ('exit_when_done', 'true', 'the explorer exits after its last measurement, which shuts the launch down'),
]

#: sensor_covariance nodes (config/gz_sensors.yaml): name -> (bridged topic without covariance, topic with it)
SENSOR_COVARIANCE = {
    'navsat_covariance': ('navsat/fix_raw', 'gps/fix'),
    'wheel_odometry_covariance': ('wheel/odometry_raw', 'wheel/odometry'),
}

#: robot_localization nodes: name -> (executable, output remapped from odometry/filtered)
LOCALIZATION = {
    'ekf_filter_node_odom': ('ekf_node', 'odometry/local'),
    'navsat_transform': ('navsat_transform_node', None),
    'ekf_filter_node_map': ('ekf_node', 'odometry/global'),
}


def gz_configuration(args, share):
    """Parameters and remappings of every node for launch-argument values ``args`` (name -> string).

    Returns:
        dict node name -> ``{'parameters': [...], 'remappings': [...]}`` for ``Node(...)``, plus ``'world'``
        (the world file) and ``'gz_args'`` (the arguments of ``gz sim``).

    Raises:
        RuntimeError: a launch argument is invalid, a file it names does not exist, or what one of our nodes would get
            is not what it accepts (:func:`uncertain_bo.ros.launch_args.check_nodes`: every name it does not declare,
            every invalid value, a field file that cannot be loaded, ...; all of them, before anything starts).
    """
    config = os.path.join(share, 'config')
    explorer_yaml, sim_yaml = os.path.join(config, 'explorer.yaml'), os.path.join(config, 'sim.yaml')
    world = os.path.abspath(os.path.expanduser(args.get('world', '').strip())) if args.get('world', '').strip() \
        else os.path.join(config, 'gz_field.sdf')
    if not os.path.isfile(world):
        raise RuntimeError(f'launch argument world:={world!r}: no such file')
    files = [explorer_yaml, sim_yaml]
    user_file = params_file(args)
    if user_file:
        files.append(user_file)
    sim = node_parameters([sim_yaml], 'sim_rover')
    # field_sensor: the simulated rover's field and reading noise, then params_file, then the arguments
    sensor_defaults = {'field': sim.get('field', 'jacksboro'),
                       'field_extent': [float(v) for v in sim.get('field_extent', [0.0, 200.0, 0.0, 200.0])],
                       'noise_std': float(sim.get('reading_noise_std', 1.0)), 'reading_rate': 2.0}
    sensor = {'use_sim_time': True}
    explorer = {'use_sim_time': True, 'exit_when_done': flag(args.get('exit_when_done', 'true'), 'exit_when_done')}
    if args.get('field', '').strip():
        sensor['field'] = args['field'].strip()
    if args.get('seed', '').strip():
        sensor['seed'] = explorer['seed'] = integer(args['seed'], 'seed', 0)
    if args.get('measurements', '').strip():
        explorer['max_measurements'] = integer(args['measurements'], 'measurements', 1)
    if args.get('run_dir', '').strip():
        explorer['run_dir'] = os.path.abspath(os.path.expanduser(args['run_dir'].strip()))
    localization = os.path.join(config, 'gz_localization.yaml')
    sensors = os.path.join(config, 'gz_sensors.yaml')
    out = {
        'world': world,
        'gz_args': f"-r {'' if flag(args.get('gui', 'false'), 'gui') else '-s '}{world}",
        'parameter_bridge': {'parameters': [{'config_file': os.path.join(config, 'gz_bridge.yaml'),
                                             'use_sim_time': True}], 'remappings': []},
        'field_sensor': {'parameters': [sensor_defaults, *files[2:], sensor], 'remappings': []},
        'explorer': {'parameters': [*files, explorer],
                     'remappings': [('odometry/filtered', 'odometry/global')]},
        'pure_pursuit': {'parameters': [*files, {'use_sim_time': True}],
                         'remappings': [('odometry/filtered', 'odometry/global')]},
    }
    for name, (_, output) in LOCALIZATION.items():
        remap = [('odometry/filtered', output)] if output else [('odometry/filtered', 'odometry/global')]
        out[name] = {'parameters': [localization, {'use_sim_time': True}], 'remappings': remap}
    for name, (raw, declared) in SENSOR_COVARIANCE.items():
        out[name] = {'parameters': [sensors, {'use_sim_time': True}], 'remappings': [('in', raw), ('out', declared)]}
    ours = {'field_sensor': 'field_sensor', 'explorer': 'explorer', 'pure_pursuit': 'pure_pursuit',
            **dict.fromkeys(SENSOR_COVARIANCE, 'sensor_covariance')}
    check_nodes([(node, '/' + name, out[name]['parameters']) for name, node in ours.items()], files[2:])
    return out


#: ROS packages this launch file starts (besides uncertain_bo)
REQUIRED_PACKAGES = ('ros_gz_sim', 'ros_gz_bridge', 'robot_localization')


def missing_packages(find=None):
    """The packages of :data:`REQUIRED_PACKAGES` that are not installed (``find``: name -> share directory,
    raising when absent; default ament's ``get_package_share_directory``)."""
    if find is None:
        from ament_index_python.packages import get_package_share_directory as find
    missing = []
    for name in REQUIRED_PACKAGES:
        try:
            find(name)
        except (LookupError, ValueError, OSError):   # PackageNotFoundError is a KeyError (a LookupError)
            missing.append(name)
    return missing


def install_hint(missing):
    """One line: what is missing and the command that installs it."""
    return (f"Gazebo is not installed: package{'s' if len(missing) > 1 else ''} {', '.join(missing)} not found. "
            'Install Gazebo (Harmonic), its ROS bridge and robot_localization with '
            '`sudo apt install ros-$ROS_DISTRO-ros-gz ros-$ROS_DISTRO-robot-localization`, source '
            '/opt/ros/$ROS_DISTRO/setup.bash and launch again; without Gazebo, `ros2 launch uncertain_bo '
            'sim.launch.py` runs the simulated rover')


def launch_setup(context):
    """Gazebo, the bridge, robot_localization and our nodes, once the launch-argument values are known.

    Raises:
        RuntimeError: a package it needs is not installed (:func:`install_hint`), or an argument is invalid.
    """
    from ament_index_python.packages import get_package_share_directory

    missing = missing_packages()
    if missing:
        raise RuntimeError(install_hint(missing))
    args = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    conf = gz_configuration(args, share_directory(__file__, 'gz_bridge.yaml'))
    gz = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(get_package_share_directory('ros_gz_sim'), 'launch',
                                                   'gz_sim.launch.py')),
        launch_arguments={'gz_args': conf['gz_args']}.items())
    bridge = Node(package='ros_gz_bridge', executable='parameter_bridge', name='parameter_bridge',
                  output='screen', **conf['parameter_bridge'])
    localization = [Node(package='robot_localization', executable=executable, name=name, output='screen',
                         **conf[name]) for name, (executable, _) in LOCALIZATION.items()]
    ours = {name: Node(package='uncertain_bo', executable=name, name=name, output='screen', **conf[name])
            for name in ('field_sensor', 'explorer', 'pure_pursuit')}
    ours.update({name: Node(package='uncertain_bo', executable='sensor_covariance', name=name, output='screen',
                            **conf[name]) for name in SENSOR_COVARIANCE})
    return [
        gz, bridge, *localization, *ours.values(),
        # the explorer's last measurement ends the launch; any of our nodes failing ends it non-zero
        *[RegisterEventHandler(OnProcessExit(target_action=node, on_exit=exit_handler(
            name, shutdown_on_success=name == 'explorer'))) for name, node in ours.items()],
    ]


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(ARGUMENTS, __file__),   # any other argument is refused
        OpaqueFunction(function=launch_setup),
    ])

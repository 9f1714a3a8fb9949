"""launch/gz.launch.py and its Gazebo configuration, checked without Gazebo.

Gazebo, ros_gz and robot_localization are not installable here: the launch file's arguments and
parameter wiring run without ``launch`` (its pure functions); the bridge YAML, the world SDF and the
robot_localization YAML are parsed and checked against each other; the launch description itself is built
where ``launch_ros`` is importable (skipped with a reason elsewhere).
"""
import ast
import importlib
import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from .test_launch_files import _pure_functions  # the launch file's functions, executed without `launch`
from uncertain_bo.parameters.files import node_parameters
from uncertain_bo.parameters.rcl_yaml import load_param_file

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / 'config'
LAUNCH = ROOT / 'launch' / 'gz.launch.py'
BRIDGE = CONFIG / 'gz_bridge.yaml'
WORLD = CONFIG / 'gz_field.sdf'
LOCALIZATION = CONFIG / 'gz_localization.yaml'

#: gz message type -> ROS 2 message type, as ros_gz_bridge maps them
GZ_TYPES = {'gz.msgs.Clock': 'rosgraph_msgs/msg/Clock', 'gz.msgs.Twist': 'geometry_msgs/msg/Twist',
            'gz.msgs.Odometry': 'nav_msgs/msg/Odometry', 'gz.msgs.NavSat': 'sensor_msgs/msg/NavSatFix',
            'gz.msgs.IMU': 'sensor_msgs/msg/Imu'}


def gz_configuration(args):
    names = {'gz_configuration', 'LOCALIZATION', 'SENSOR_COVARIANCE'}
    return _pure_functions('gz.launch.py', names)['gz_configuration'](
        args, str(ROOT))


def test_launch_file_is_valid_python_with_documented_arguments():
    tree = ast.parse(LAUNCH.read_text())
    assert 'generate_launch_description' in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'ros_gz_sim' in ast.get_docstring(tree) and 'robot_localization' in ast.get_docstring(tree)
    table = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, 'id', None) == 'ARGUMENTS' for t in n.targets))
    assert {row[0]: row[1] for row in table} == {
        'world': '', 'gui': 'false', 'params_file': '', 'field': '', 'seed': '', 'measurements': '',
        'run_dir': '', 'exit_when_done': 'true'}
    assert "glob('config/*.sdf')" in (ROOT / 'setup.py').read_text()       # the world is installed


def test_parameter_wiring(tmp_path):
    pytest.importorskip('rclpy')   # what each of our nodes gets is checked against its parameter specs
    conf = gz_configuration({})
    assert conf['world'] == str(WORLD) and conf['gz_args'] == f'-r -s {WORLD}'
    for name in ('explorer', 'pure_pursuit'):
        assert ('odometry/filtered', 'odometry/global') in conf[name]['remappings']   # the map-frame EKF
        assert conf[name]['parameters'][-1]['use_sim_time'] is True
    assert conf['ekf_filter_node_map']['remappings'] == [('odometry/filtered', 'odometry/global')]
    assert conf['ekf_filter_node_odom']['remappings'] == [('odometry/filtered', 'odometry/local')]
    sim = node_parameters([CONFIG / 'sim.yaml'], 'sim_rover')
    defaults = conf['field_sensor']['parameters'][0]
    assert defaults['field'] == sim['field'] and defaults['noise_std'] == sim['reading_noise_std']
    for node in conf.values():
        if isinstance(node, dict):
            for p in node['parameters']:
                assert isinstance(p, dict) or Path(p).is_file(), p

    run_dir = str(tmp_path / 'gz1')
    conf = gz_configuration({'gui': 'true', 'field': 'jacksboro-rough', 'seed': '3', 'measurements': '7',
                             'run_dir': run_dir, 'exit_when_done': 'false'})
    assert conf['gz_args'] == f'-r {WORLD}'
    assert conf['field_sensor']['parameters'][-1] == {'use_sim_time': True, 'field': 'jacksboro-rough', 'seed': 3}
    assert conf['explorer']['parameters'][-1] == {'use_sim_time': True, 'exit_when_done': False, 'seed': 3,
                                                  'max_measurements': 7, 'run_dir': run_dir}
    typo = tmp_path / 'typo.yaml'
    typo.write_text('field_sensor:\n  ros__parameters:\n    noise_sdt: 0.1\n')
    for bad, match in (({'measurements': '0'}, 'measurements'), ({'world': '/nope.sdf'}, 'world'),
                       ({'gui': 'maybe'}, 'gui'), ({'params_file': '/nope.yaml'}, 'params_file'),
                       ({'field': str(tmp_path / 'my.npz')}, r'field file .*my\.npz does not exist'),
                       ({'params_file': str(typo)}, r"typo.yaml line 3: 'noise_sdt' is not a parameter of node "
                                                    r"/field_sensor \(did you mean 'noise_std'\?\)")):
        with pytest.raises(RuntimeError, match=match):
            gz_configuration(bad)


def test_bridge_yaml():
    entries = yaml.safe_load(BRIDGE.read_text())
    keys = {'ros_topic_name', 'gz_topic_name', 'ros_type_name', 'gz_type_name', 'direction'}
    assert all(set(e) == keys for e in entries)
    by_ros = {e['ros_topic_name']: e for e in entries}
    assert set(by_ros) == {'clock', 'cmd_vel', 'wheel/odometry_raw', 'ground_truth', 'navsat/fix_raw', 'imu'}
    for e in entries:
        assert GZ_TYPES[e['gz_type_name']] == e['ros_type_name']
        assert e['direction'] == ('ROS_TO_GZ' if e['ros_topic_name'] == 'cmd_vel' else 'GZ_TO_ROS')
        package, _, name = e['ros_type_name'].split('/')
        try:
            module = importlib.import_module(f'{package}.msg')
        except ImportError:
            continue   # not every message package is installed here (sensor_msgs is)
        assert hasattr(module, name), e['ros_type_name']


def test_world_matches_the_bridge_and_the_localization():
    world = ET.parse(WORLD).getroot().find('world')
    rover = next(m for m in world.findall('model') if m.get('name') == 'rover')
    plugins = {p.get('name'): p for p in rover.findall('plugin')}
    gz_topics = {e['gz_topic_name'] for e in yaml.safe_load(BRIDGE.read_text())}
    drive = plugins['gz::sim::systems::DiffDrive']
    assert {drive.findtext('topic'), drive.findtext('odom_topic')} <= gz_topics
    assert drive.findtext('child_frame_id') == 'base_link' and drive.findtext('frame_id') == 'odom'
    joints = {j.get('name') for j in rover.findall('joint')}
    assert {drive.findtext('left_joint'), drive.findtext('right_joint')} <= joints
    truth = plugins['gz::sim::systems::OdometryPublisher']
    assert truth.findtext('odom_topic') == 'ground_truth' and truth.findtext('odom_frame') == 'world'
    sensors = {s.get('type'): s.findtext('topic') for s in rover.iter('sensor')}
    assert sensors == {'imu': 'imu', 'navsat': 'navsat'} and set(sensors.values()) <= gz_topics
    systems = {p.get('filename') for p in world.findall('plugin')}
    assert {'gz-sim-imu-system', 'gz-sim-navsat-system', 'gz-sim-sensors-system', 'gz-sim-physics-system'} <= systems
    # map frame = world frame: navsat_transform's datum is the world's spherical coordinates
    sph = world.find('spherical_coordinates')
    datum = load_param_file(LOCALIZATION)['navsat_transform']['datum']
    assert [float(sph.findtext('latitude_deg')), float(sph.findtext('longitude_deg'))] == datum[:2]
    assert sph.findtext('world_frame_orientation') == 'ENU'
    pose = [float(v) for v in rover.findtext('pose').split()]
    sim = node_parameters([CONFIG / 'sim.yaml'], 'sim_rover')
    assert pose[:2] == [sim['initial_x'], sim['initial_y']]          # starts where sim_rover starts


def test_localization_yaml():
    sections = load_param_file(LOCALIZATION)
    assert set(sections) == {'ekf_filter_node_odom', 'ekf_filter_node_map', 'navsat_transform'}
    odom, map_, navsat = (sections[k] for k in ('ekf_filter_node_odom', 'ekf_filter_node_map', 'navsat_transform'))
    assert odom['world_frame'] == 'odom' and map_['world_frame'] == 'map'
    for f in (odom, map_):
        assert (f['map_frame'], f['odom_frame'], f['base_link_frame']) == ('map', 'odom', 'base_link')
        configs = {k: v for k, v in f.items() if k.endswith('_config')}
        assert configs and all(len(v) == 15 and all(isinstance(b, bool) for b in v) for v in configs.values())
        assert f['odom0'] == 'wheel/odometry' and f['imu0'] == 'imu'
    assert map_['odom1'] == 'odometry/gps' and map_['odom1_config'][:2] == [True, True]   # absolute x, y
    assert 'odom1' not in odom                                       # the odom filter fuses no GNSS
    assert navsat['wait_for_datum'] is True and len(navsat['datum']) == 3
    # every parameter line is explained by a comment (this file, like config/*.yaml, documents itself)
    lines = LOCALIZATION.read_text().splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if s and not s.startswith('#') and ':' in s and not s.endswith(':') and line.startswith('    ') \
                and not line.startswith('     '):
            above = [x.strip() for x in lines[max(0, i - 12):i]]
            assert any(x.startswith('#') for x in above), f'line {i + 1} has no comment nearby: {s}'


def test_launch_description_structure():
    pytest.importorskip('launch_ros', reason='ROS 2 `launch_ros` is not importable (not on PyPI; comes with a '
                        'colcon/apt ROS 2 install)')
    pytest.importorskip('ament_index_python')
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler
    from launch_ros.actions import Node
    spec = importlib.util.spec_from_file_location('gz_launch', LAUNCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ld = module.generate_launch_description()
    ctx = LaunchContext()
    for e in ld.entities:
        if isinstance(e, DeclareLaunchArgument):
            e.execute(ctx)
    try:
        actions = [a for e in ld.entities if isinstance(e, OpaqueFunction) for a in e.execute(ctx)]
    except RuntimeError as exc:   # Gazebo / robot_localization not installed: the one-line hint, and no more
        assert str(exc).startswith('Gazebo is not installed: package') and 'apt install' in str(exc)
        pytest.skip(f'not installed here: {exc}')
    nodes = {(a.node_package, a.node_executable) for a in actions if isinstance(a, Node)}
    assert {('uncertain_bo', 'field_sensor'), ('uncertain_bo', 'explorer'), ('uncertain_bo', 'pure_pursuit'),
            ('uncertain_bo', 'sensor_covariance'), ('ros_gz_bridge', 'parameter_bridge'),
            ('robot_localization', 'ekf_node'), ('robot_localization', 'navsat_transform_node')} <= nodes
    assert sum(isinstance(a, RegisterEventHandler) for a in actions) == 5


def test_missing_gazebo_is_one_clear_line_with_the_install_command():
    """Without ros_gz_sim the launch said only "package 'ros_gz_sim' not found"."""
    ns = _pure_functions('gz.launch.py', {'REQUIRED_PACKAGES', 'missing_packages', 'install_hint'})
    installed = {'robot_localization'}

    def find(name):
        if name not in installed:
            raise KeyError(name)      # ament's PackageNotFoundError is a KeyError
        return '/opt/ros/share/' + name
    missing = ns['missing_packages'](find)
    assert missing == ['ros_gz_sim', 'ros_gz_bridge']
    hint = ns['install_hint'](missing)
    assert hint.startswith('Gazebo is not installed: packages ros_gz_sim, ros_gz_bridge not found.')
    assert 'apt install ros-$ROS_DISTRO-ros-gz ros-$ROS_DISTRO-robot-localization' in hint and '\n' not in hint
    assert ns['missing_packages'](lambda name: '/share/' + name) == []


SENSORS = CONFIG / 'gz_sensors.yaml'


def _noise(element, path):
    return float(element.find(path).findtext('noise/stddev'))


def test_the_fused_pose_gets_every_sensor_s_noise_as_covariance():
    """Checked on paper against ros_gz_bridge (convert/sensor_msgs.cpp: NavSatFix covariance UNKNOWN and zero;
    Imu covariance copied with gz-msgs >= 10) and gz-sensors 8 (ImuSensor.cc: IMU covariance = the <noise>
    stddev squared): every input of robot_localization carries the world's noise as covariance."""
    pytest.importorskip('rclpy')   # the launch configuration is checked against the nodes' parameter specs
    world = ET.parse(WORLD).getroot().find('world')
    rover = next(m for m in world.findall('model') if m.get('name') == 'rover')
    sensor = {s.get('type'): s for s in rover.iter('sensor')}
    navsat = sensor['navsat'].find('navsat/position_sensing')
    sensors = load_param_file(SENSORS)
    fix = sensors['navsat_covariance']
    assert fix['message_type'] == 'navsat_fix'
    h, v = _noise(navsat, 'horizontal'), _noise(navsat, 'vertical')
    assert fix['position_std'] == [h, h, v] and h > 0          # the fix's covariance is the world's GNSS noise
    wheel = sensors['wheel_odometry_covariance']
    assert wheel['message_type'] == 'odometry' and min(wheel['linear_velocity_std'][:2]) > 0
    assert wheel['angular_velocity_std'][2] > 0
    imu = sensor['imu'].find('imu')
    assert imu.findtext('orientation_reference_frame/localization') == 'ENU'   # yaw 0 = east, as fused
    for axis in 'xyz':
        assert _noise(imu, f'angular_velocity/{axis}') > 0 and _noise(imu, f'linear_acceleration/{axis}') > 0
    # the topics chain up: bridge (no covariance) -> sensor_covariance -> robot_localization's inputs
    conf = gz_configuration({})
    bridged = {e['ros_topic_name'] for e in yaml.safe_load(BRIDGE.read_text())}
    rl = load_param_file(LOCALIZATION)
    inputs = {rl[f][k] for f in ('ekf_filter_node_odom', 'ekf_filter_node_map') for k in ('odom0', 'odom1', 'imu0')
              if k in rl[f]}
    outputs = set()
    for name in ('navsat_covariance', 'wheel_odometry_covariance'):
        remap = dict(conf[name]['remappings'])
        assert remap['in'] in bridged and remap['in'].endswith('_raw')
        outputs.add(remap['out'])
        assert conf[name]['parameters'][0] == str(SENSORS)
    assert outputs == {'gps/fix', 'wheel/odometry'}
    assert inputs == {'wheel/odometry', 'odometry/gps', 'imu'} and 'imu' in bridged
    # robot_localization, as its docs prescribe: absolute GNSS x, y never differential; yaw observed (IMU);
    # vy of a diff-drive rover fused; the map filter starts uncertain of where the rover is
    odom, map_ = rl['ekf_filter_node_odom'], rl['ekf_filter_node_map']
    for f in (odom, map_):
        assert f['imu0_config'][5] and f['imu0_config'][11] and f['odom0_config'][6:8] == [True, True]
        assert f['odom0_differential'] is False and f['imu0_differential'] is False
    assert map_['odom1_differential'] is False and map_['odom1_relative'] is False
    cov = map_['initial_estimate_covariance']
    assert len(cov) == 15 and all(isinstance(c, float) for c in cov) and min(cov[:2]) >= 1e3
    assert 'use_odometry_yaw' not in rl['navsat_transform']   # needs an absolute yaw fused in the filter
    # every line of the covariance file is commented, like the other shipped files
    lines = SENSORS.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith('    ') and not line.strip().startswith('#'):
            assert any(x.strip().startswith('#') for x in lines[max(0, i - 6):i]), line

"""The ROS 2 launch files launch/sim.launch.py and launch/explore.launch.py.

Part 1 always runs (no ``launch`` import): the files are valid Python, declare the documented launch
arguments, start only executables that pyproject.toml installs and read only config files that exist.

Part 2 needs ``launch``/``launch_ros`` (not on PyPI; present on a colcon/apt ROS 2 install) and skips with a
reason where they are absent: it builds the LaunchDescription, runs the OpaqueFunction that creates the nodes
and checks their parameters and remappings; with rclpy it also checks that a namespaced node reads the
re-keyed parameter files.
"""
import ast
import importlib.util
import os
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = ROOT / 'launch'
CONFIG = ROOT / 'config'
PACKAGE = 'uncertain_bo'

#: file -> {argument: documented default}
DOCUMENTED = {
    'sim.launch.py': {'params_file': '', 'field': '', 'seed': '', 'localiser': '', 'measurements': '', 'run_dir': '',
                      'use_sim_time': 'true', 'exit_when_done': 'true', 'rviz': 'false'},
    'explore.launch.py': {'namespace': '', 'params_file': '', 'use_sim_time': 'false',
                          'odom_topic': 'odometry/filtered', 'pose_source': '', 'pose_topic': 'pose',
                          'particle_topic': 'particle_cloud', 'reading_topic': 'reading',
                          'cmd_vel_topic': 'cmd_vel', 'use_pure_pursuit': 'true',
                          'run_dir': '', 'measurements': '', 'rviz': 'false', 'exit_when_done': 'true'},
    'team.launch.py': {'rovers': '2', 'params_file': '', 'field': '', 'seed': '', 'localiser': '', 'measurements': '',
                       'silence_timeout': '', 'run_dir': '', 'use_sim_time': 'true', 'exit_when_done': 'true',
                       'rviz': 'false'},
}
#: file -> executables of this package it starts
EXECUTABLES = {'sim.launch.py': {'sim_rover', 'ekf', 'particle_filter', 'pure_pursuit', 'explorer'},
               'explore.launch.py': {'explorer', 'pure_pursuit'},
               'team.launch.py': {'sim_rover', 'ekf', 'particle_filter', 'pure_pursuit', 'team_explorer'}}


def _tree(name):
    return ast.parse((LAUNCH / name).read_text(), filename=name)


def _arguments(tree):
    """The module-level ``ARGUMENTS = [(name, default, description), ...]`` table."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == 'ARGUMENTS' for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError('no module-level ARGUMENTS table')


def _calls(tree, func_name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == func_name:
                yield node


def _keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _console_scripts():
    import tomllib

    return set(tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['scripts'])


# ------------------------------------------------------------------ part 1: no launch needed
@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_valid_python_with_generate_launch_description(name):
    tree = _tree(name)
    compile(tree, name, 'exec')
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    assert ast.get_docstring(tree), f'{name}: no module docstring'


def test_installed_by_setup_py():
    # setup.py installs launch/*.launch.py into share/uncertain_bo/launch
    assert "glob('launch/*.launch.py')" in (ROOT / 'setup.py').read_text()
    assert {p.name for p in LAUNCH.glob('*.launch.py')} >= set(DOCUMENTED)


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_declares_the_documented_arguments(name):
    tree = _tree(name)
    table = _arguments(tree)
    names = [row[0] for row in table]
    assert len(names) == len(set(names)), f'{name}: duplicate launch argument'
    assert {row[0]: row[1] for row in table} == DOCUMENTED[name]
    for arg, default, description in table:
        assert isinstance(default, str), f'{name}: {arg} default must be a string'
        assert len(description) > 20, f'{name}: {arg} needs a description'
        assert re.fullmatch(r'[a-z_]+', arg)
    # the table is what is declared (any other argument refused), and every argument is read back
    assert [ast.unparse(c) for c in _calls(tree, 'declare_arguments')] == ['declare_arguments(ARGUMENTS, __file__)']
    assert 'LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS' in (LAUNCH / name).read_text()


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_starts_only_installed_executables(name):
    scripts = _console_scripts()
    started = set()
    for call in _calls(_tree(name), 'Node'):
        package = ast.literal_eval(_keyword(call, 'package'))
        executable = ast.literal_eval(_keyword(call, 'executable'))
        if package == PACKAGE:
            assert executable in scripts, f'{name}: {executable!r} is not a console script of pyproject.toml'
            started.add(executable)
        else:
            assert (package, executable) == ('rviz2', 'rviz2'), f'{name}: unexpected node {package}/{executable}'
    assert started == EXECUTABLES[name]


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_reads_only_existing_config_files(name):
    text = (LAUNCH / name).read_text()
    referenced = set()
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r'[\w.-]+\.(yaml|rviz)', node.value):
            referenced.add(node.value)
    assert {'sim.yaml', 'explorer.yaml'} <= referenced
    for f in referenced:
        if f.endswith('.yaml'):
            assert (CONFIG / f).is_file(), f'{name} reads config/{f}, which does not exist'
        else:   # an optional RViz configuration: used only when installed
            assert (CONFIG / f).is_file() or 'os.path.isfile(rviz_config)' in text


def test_docstrings_name_the_alternatives():
    sim = ast.get_docstring(_tree('sim.launch.py'))
    assert 'uncertain-bo demo' in sim and 'exit_when_done' in sim
    explore = ast.get_docstring(_tree('explore.launch.py'))
    for needle in ('robot_localization', 'Nav2', 'goal_pose', 'use_pure_pursuit:=false', 'map'):
        assert needle in explore


def _pure_functions(name, names):
    """The module-level functions/constants ``names`` of a launch file, executed without importing
    ``launch`` (they use only os, yaml and the file's own imports from this package)."""
    tree = _tree(name)
    own_imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module.startswith(PACKAGE)]
    body = own_imports + [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name in names)
                          or (isinstance(n, ast.Assign) and any(getattr(t, 'id', None) in names for t in n.targets))]
    ns = {}
    exec(compile(ast.Module(body=ast.parse('import os\nimport yaml').body + body, type_ignores=[]), name, 'exec'),
         ns)
    return ns


#: what sim.launch.py's graph_parameters needs of its file
SIM_FUNCTIONS = {'LOCALISERS', 'NODE_NAMES', 'graph_parameters', 'localiser_node'}
#: what explore.launch.py's node_configuration needs of its file
EXPLORE_FUNCTIONS = {'NODES', 'namespaced_file', 'node_configuration'}


def test_sim_launch_selects_the_localiser_node(tmp_path):
    pytest.importorskip('rclpy')          # the nodes' parameters are checked against their specs
    ns = _pure_functions('sim.launch.py', SIM_FUNCTIONS)
    params = ns['graph_parameters']({}, str(ROOT))
    assert ns['localiser_node'](params) == 'ekf'                              # shipped sim.yaml: localiser ekf
    params = ns['graph_parameters']({'localiser': 'pf', 'seed': '4'}, str(ROOT))
    assert ns['localiser_node'](params) == 'particle_filter'
    assert params['particle_filter'][-1] == {'use_sim_time': True, 'seed': 4}
    user = tmp_path / 'pf.yaml'
    user.write_text("sim_rover:\n  ros__parameters:\n    localiser: 'pf'\n")
    assert ns['localiser_node'](ns['graph_parameters']({'params_file': str(user)}, str(ROOT))) == 'particle_filter'
    with pytest.raises(RuntimeError, match='localiser'):
        ns['graph_parameters']({'localiser': 'ukf'}, str(ROOT))
    # user mistakes in params_file fail before anything starts
    user.write_text('explorerr:\n  ros__parameters:\n    beta: 2.0\n')
    with pytest.raises(RuntimeError, match="section 'explorerr' names no node"):
        ns['graph_parameters']({'params_file': str(user)}, str(ROOT))
    user.write_text('explorer:\n  ros__parameters:\n    search_bounds: [1000.0, 1100.0, 0.0, 100.0]\n')
    with pytest.raises(RuntimeError, match="'search_bounds' .* is not inside sim_rover's field_extent"):
        ns['graph_parameters']({'params_file': str(user)}, str(ROOT))


def test_the_simulation_launch_gives_the_explorer_the_unit_of_its_field(tmp_path):
    """Before: the explorer kept reading_type's °C for an elevation map (the simulated sensor publishes
    sensor_msgs/Temperature), and `uncertain-bo report` labelled elevation °C."""
    pytest.importorskip('rclpy')   # the parameters are validated against the nodes' parameter specs
    ns = _pure_functions('sim.launch.py', SIM_FUNCTIONS)
    assert ns['graph_parameters']({}, str(ROOT))['explorer'][-1]['reading_unit'] == 'm (elevation)'
    assert ns['graph_parameters']({'field': 'ozone-midwest'}, str(ROOT))['explorer'][-1]['reading_unit'] == \
        'ppb (8-hour ozone)'
    mine = tmp_path / 'mine.csv'      # a user's field file (the launch loads it before any node starts)
    mine.write_text('x,y,value\n' + ''.join(f'{x},{y},{x + 2 * y}\n' for x in (0, 100, 200) for y in (0, 100, 200)))
    assert ns['graph_parameters']({'field': str(mine)}, str(ROOT))['explorer'][-1][
        'reading_unit'] == 'none'                                            # a file: no known unit, never °C
    user = tmp_path / 'unit.yaml'
    user.write_text("explorer:\n  ros__parameters:\n    reading_unit: 'kPa'\n")
    assert 'reading_unit' not in ns['graph_parameters']({'params_file': str(user)}, str(ROOT))['explorer'][-1]


def test_the_simulated_graphs_give_the_explorer_the_unit_of_their_field(tmp_path):
    pytest.importorskip('rclpy')          # the values are validated against the nodes' parameter specs
    from uncertain_bo.ros.graph import load_graph_parameters
    assert load_graph_parameters()['explorer']['reading_unit'] == 'm (elevation)'
    over = {'sim_rover': {'field': str(tmp_path / 'mine.csv')}}
    assert load_graph_parameters(overrides=over)['explorer']['reading_unit'] == 'none'
    over['explorer'] = {'reading_unit': 'm³/m³'}
    assert load_graph_parameters(overrides=over)['explorer']['reading_unit'] == 'm³/m³'


def test_team_launch_parameters_come_from_the_team_rule(tmp_path):
    pytest.importorskip('rclpy')          # the values are validated against the nodes' parameter specs
    ns = _pure_functions('team.launch.py', {'LOCALISERS', 'team_parameters'})
    rovers, localiser, values = ns['team_parameters']({'rovers': '3', 'seed': '4', 'measurements': '12',
                                                       'silence_timeout': '15'}, str(ROOT))
    assert (rovers, localiser) == (3, 'ekf')
    assert set(values) == {'sim_rover', 'team_explorer', *(f'rover{i}/{n}' for i in range(3)
                                                           for n in ('ekf', 'pure_pursuit'))}
    sim, team = values['sim_rover'], values['team_explorer']
    assert sim['rovers'] == ['rover0', 'rover1', 'rover2'] and sim['seed'] == 4 and not sim['use_sim_time']
    assert team['rovers'] == sim['rovers'] and team['max_measurements'] == 12 and team['silence_timeout'] == 15.0
    assert team['use_sim_time'] and team['search_bounds'] == sim['field_extent']
    # rover i's EKF starts where sim_rover puts rover i: spacing m apart along x, centred on initial_x
    xs = [values[f'rover{i}/ekf']['initial_x'] for i in range(3)]
    assert xs == [sim['initial_x'] - sim['spacing'], sim['initial_x'], sim['initial_x'] + sim['spacing']]
    assert values['rover1/ekf']['base_frame'] == 'rover1/base_link'
    _, localiser, values = ns['team_parameters']({'localiser': 'pf', 'seed': '4'}, str(ROOT))
    assert localiser == 'particle_filter' and values['rover1/particle_filter']['seed'] == 4 + 7919
    # a run_dir holding a journal is passed on: the team explorer resumes it
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'journal.jsonl').write_text('{}\n')
    _, _, values = ns['team_parameters']({'run_dir': str(tmp_path / 'run')}, str(ROOT))
    assert values['team_explorer']['run_dir'] == str(tmp_path / 'run')
    # mistakes end in one line before anything starts
    bad_file = tmp_path / 'bad.yaml'
    bad_file.write_text('explorer:\n  ros__parameters:\n    beta: -2.0\n')
    for args, match in (({'rovers': '0'}, 'rovers'), ({'rovers': 'two'}, 'rovers'), ({'rovers': '17'}, 'rovers'),
                        ({'silence_timeout': '-1'}, 'silence_timeout'), ({'measurements': '0'}, 'measurements'),
                        ({'localiser': 'ukf'}, 'localiser'), ({'params_file': str(tmp_path / 'none.yaml')}, 'no such'),
                        ({'params_file': str(bad_file)}, 'beta')):
        with pytest.raises(RuntimeError, match=match) as info:
            ns['team_parameters'](args, str(ROOT))
        assert '\n' not in str(info.value)


def test_sim_and_team_launch_read_their_shared_arguments_alike(tmp_path):
    """uncertain_bo.ros.launch_args.simulation_overrides: one reading of field, seed, localiser, measurements,
    run_dir, use_sim_time and exit_when_done for sim.launch.py and team.launch.py."""
    pytest.importorskip('rclpy')
    from uncertain_bo.ros.launch_args import simulation_overrides
    args = {'field': ' my.csv ', 'seed': '7', 'localiser': 'pf', 'measurements': '3', 'run_dir': 'rel/run',
            'use_sim_time': 'false', 'exit_when_done': 'False'}
    over, sim_time = simulation_overrides(args)
    assert not sim_time and over == {
        'sim_rover': {'field': 'my.csv', 'seed': 7, 'localiser': 'pf'}, 'ekf': {}, 'particle_filter': {'seed': 7},
        'pure_pursuit': {}, 'explorer': {'exit_when_done': False, 'seed': 7, 'max_measurements': 3,
                                         'run_dir': os.path.abspath('rel/run')}}
    sim = _pure_functions('sim.launch.py', SIM_FUNCTIONS)['graph_parameters']({**args, 'field': ''}, str(ROOT))
    _, _, team = _pure_functions('team.launch.py', {'team_parameters'})['team_parameters'](
        {**args, 'localiser': 'ekf', 'field': ''}, str(ROOT))
    assert sim['explorer'][-1]['max_measurements'] == team['team_explorer']['max_measurements'] == 3
    assert sim['explorer'][-1]['run_dir'] == team['team_explorer']['run_dir'] == os.path.abspath('rel/run')
    assert sim['explorer'][-1]['use_sim_time'] is team['team_explorer']['use_sim_time'] is False
    for bad in ({'seed': 'x'}, {'localiser': 'ukf'}, {'measurements': '0'}, {'use_sim_time': 'maybe'},
                {'exit_when_done': '2'}):
        name = next(iter(bad))
        for parse in (simulation_overrides,
                      lambda a: _pure_functions('sim.launch.py', SIM_FUNCTIONS)['graph_parameters'](a, str(ROOT)),
                      lambda a: _pure_functions('team.launch.py', {'team_parameters'})['team_parameters'](
                          a, str(ROOT))):
            with pytest.raises(RuntimeError, match=f'launch argument {name}:='):
                parse(bad)


TYPO = 'explorer:\n  ros__parameters:\n    max_measurement: 8\n    bta: 2.0\n'


def _typo_file(tmp_path):
    f = tmp_path / 'typo.yaml'
    f.write_text(TYPO)
    return f


def _team_parameters(args):
    return _pure_functions('team.launch.py', {'team_parameters'})['team_parameters'](args, str(ROOT))


def _explore_configuration(args, tmp_path):
    return _pure_functions('explore.launch.py', EXPLORE_FUNCTIONS)['node_configuration'](args, str(ROOT), tmp_path)


@pytest.mark.parametrize('launch', ['sim', 'team', 'explore', 'explore in a namespace'])
def test_a_misspelt_parameter_in_params_file_stops_every_launch_file(launch, tmp_path):
    """``max_measurement: 8`` ran 30 measurements through sim.launch.py and explore.launch.py: rcl handed it over
    and rclpy ignored it. Every misspelling is named, with its file, line and the closest name, in one line."""
    pytest.importorskip('rclpy')
    f = _typo_file(tmp_path)
    node = '/rover1/explorer' if launch == 'explore in a namespace' else '/team_explorer' if launch == 'team' \
        else '/explorer'
    call = {'sim': lambda a: _pure_functions('sim.launch.py', SIM_FUNCTIONS)['graph_parameters'](a, str(ROOT)),
            'team': _team_parameters,
            'explore': lambda a: _explore_configuration(a, tmp_path),
            'explore in a namespace': lambda a: _explore_configuration({**a, 'namespace': 'rover1'}, tmp_path)}[launch]
    with pytest.raises(RuntimeError) as info:
        call({'params_file': str(f)})
    if launch == 'team':   # the team explorer takes the explorer section (load_graph_parameters)
        node = '/explorer'
    assert str(info.value) == (f"{f} line 3: 'max_measurement' is not a parameter of node {node} (did you mean "
                               f"'max_measurements'?); {f} line 4: 'bta' is not a parameter of node {node} (did you "
                               "mean 'beta'?)")
    assert list(tmp_path.iterdir()) == [f], 'nothing is written'


@pytest.mark.parametrize('launch', ['sim', 'team'])
def test_a_field_file_that_cannot_be_used_stops_the_launch_before_any_node_starts(launch, tmp_path):
    """A bad field path was found by sim_rover 25 s after the other nodes had started."""
    pytest.importorskip('rclpy')
    args = {'field': str(tmp_path / 'nope.csv')}
    with pytest.raises(RuntimeError, match=r'nope\.csv does not exist'):
        if launch == 'sim':
            _pure_functions('sim.launch.py', SIM_FUNCTIONS)['graph_parameters'](args, str(ROOT))
        else:
            _team_parameters(args)


def test_explore_launch_checks_what_each_node_gets(tmp_path):
    """An invalid value and a run_dir that cannot be written stop explore.launch.py before anything is written (no
    re-keyed file either); a namespaced file's own sections are checked where they reach the node."""
    pytest.importorskip('rclpy')
    f = tmp_path / 'p.yaml'
    f.write_text('/rover1/pure_pursuit:\n  ros__parameters:\n    lookahed_dist: 2.0\n'
                 'explorer:\n  ros__parameters:\n    beta: -1.0\n')
    with pytest.raises(RuntimeError) as info:
        _explore_configuration({'params_file': str(f), 'namespace': 'rover1', 'run_dir': '/proc/run'}, tmp_path)
    assert str(info.value) == (
        f"{f}: node /rover1/explorer: parameter 'beta' = -1.0 is invalid: out of range; allowed: a float in [0, 100]; "
        f"{f} line 3: 'lookahed_dist' is not a parameter of node /rover1/pure_pursuit (did you mean "
        "'lookahead_dist'?)")
    assert list(tmp_path.iterdir()) == [f]
    f.write_text('explorer:\n  ros__parameters:\n    beta: 1.0\n')
    with pytest.raises(RuntimeError, match="parameter 'run_dir' = '/proc/run': /proc is on the kernel file system"):
        _explore_configuration({'params_file': str(f), 'namespace': 'rover1', 'run_dir': '/proc/run'}, tmp_path)
    assert list(tmp_path.iterdir()) == [f]


def test_unknown_launch_arguments_are_named_with_the_closest_declared_one():
    from uncertain_bo.ros.launch_args import unknown_arguments
    declared = [name for name, _, _ in _arguments(_tree('sim.launch.py'))]
    given = {'measurment': '5', 'seed': '3', 'launch-prefix': 'gdb -ex run --args', 'zzz': '1'}
    assert unknown_arguments(given, declared, 'sim.launch.py') == [
        'launch argument measurment:=5 is not an argument of sim.launch.py (did you mean measurements?); see '
        '`ros2 launch uncertain_bo sim.launch.py --show-args`',
        'launch argument zzz:=1 is not an argument of sim.launch.py; see `ros2 launch uncertain_bo sim.launch.py '
        '--show-args`']


def test_unknown_arguments_are_refused_only_where_ros2_launch_was_given_this_file(tmp_path):
    """Included from another launch file, this file sees that file's launch configurations too: not mistakes."""
    from uncertain_bo.ros.launch_args import launched_directly
    sim = str(LAUNCH / 'sim.launch.py')
    assert launched_directly(sim, ['ros2', 'launch', 'uncertain_bo', 'sim.launch.py', 'measurment:=5'])
    assert launched_directly(sim, ['ros2', 'launch', '-d', 'uncertain_bo', 'sim.launch.py'])
    assert launched_directly(sim, ['ros2', 'launch', sim, 'seed:=1'])
    assert launched_directly(sim, ['ros2', 'launch', os.path.relpath(sim)])
    assert not launched_directly(sim, ['ros2', 'launch', 'my_robot', 'bringup.launch.py', 'robot:=a'])
    assert not launched_directly(sim, ['ros2', 'launch', 'my_robot', 'sim.launch.py'])   # another package's
    assert not launched_directly(sim, ['pytest', 'test/ros/test_launch_files.py'])


# ------------------------------------------------------------------ part 2: with launch / launch_ros
@pytest.fixture(scope='module')
def launch_api():
    # launch_ros imports the real `launch` (the repo's launch/ folder alone would import as a namespace package)
    pytest.importorskip('launch_ros', reason='ROS 2 `launch_ros` is not importable (not on PyPI; comes with a '
                        'colcon/apt ROS 2 install): launch description tests skipped')
    import launch
    import launch_ros
    return launch, launch_ros


def _load(name):
    spec = importlib.util.spec_from_file_location(name.replace('.', '_'), LAUNCH / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_opaque(module, overrides=None):
    """Declare the arguments (defaults + overrides), then run the OpaqueFunctions in order: the refusal of unknown
    arguments (which returns nothing) and the node-creating one, whose actions are returned."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    ld = module.generate_launch_description()
    context = LaunchContext()
    context.launch_configurations.update(overrides or {})
    opaque = []
    for entity in ld.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.execute(context)
        elif isinstance(entity, OpaqueFunction):
            opaque.append(entity)
    assert len(opaque) == 2
    assert opaque[0].execute(context) == []
    return ld, opaque[1].execute(context)


def _nodes(actions):
    from launch_ros.actions import Node
    return {a.node_executable: a for a in actions if isinstance(a, Node)}


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_launch_description_arguments(launch_api, name):
    ld = _load(name).generate_launch_description()
    declared = {a.name: ''.join(s.perform(None) for s in a.default_value) for a in ld.get_launch_arguments()}
    assert declared == DOCUMENTED[name]


def test_sim_launch_nodes_and_shutdown_handler(launch_api):
    from launch.actions import RegisterEventHandler
    from launch_ros.actions import Node

    module = _load('sim.launch.py')
    ld, actions = _run_opaque(module, {'measurements': '3'})
    nodes = _nodes(actions)
    assert set(nodes) == EXECUTABLES['sim.launch.py'] - {'particle_filter'}   # the shipped localiser: ekf
    assert all(n.node_package == PACKAGE for n in nodes.values())
    assert any(isinstance(a, RegisterEventHandler) for a in actions), 'no shutdown on explorer exit'
    rviz = [e for e in ld.entities if isinstance(e, Node) and e.node_executable == 'rviz2']
    assert len(rviz) == 1 and rviz[0].condition is not None
    _, actions = _run_opaque(module, {'measurements': '3', 'localiser': 'pf'})
    assert set(_nodes(actions)) == EXECUTABLES['sim.launch.py'] - {'ekf'}


def test_sim_launch_parameters(launch_api, tmp_path):
    module = _load('sim.launch.py')
    files = [str(CONFIG / 'sim.yaml'), str(CONFIG / 'explorer.yaml')]
    default = module.graph_parameters({name: d for name, d, _ in module.ARGUMENTS}, str(ROOT))
    for node in ('sim_rover', 'ekf', 'pure_pursuit', 'explorer'):
        assert default[node][:-1] == files
    assert default['sim_rover'][-1] == {'use_sim_time': False}
    assert default['ekf'][-1] == default['pure_pursuit'][-1] == {'use_sim_time': True}
    extent = yaml.safe_load((CONFIG / 'sim.yaml').read_text())['sim_rover']['ros__parameters']['field_extent']
    assert default['explorer'][-1] == {'use_sim_time': True, 'exit_when_done': True, 'search_bounds': extent,
                                       'reading_unit': 'm (elevation)'}

    user = tmp_path / 'mine.yaml'
    user.write_text('sim_rover:\n  ros__parameters:\n    field_extent: [0.0, 50.0, 0.0, 60.0]\n')
    args = {'params_file': str(user), 'field': 'jacksboro-rough', 'seed': '7', 'measurements': '3',
            'run_dir': 'rel/run', 'use_sim_time': 'false', 'exit_when_done': 'False'}
    p = module.graph_parameters(args, str(ROOT))
    assert p['explorer'][:-1] == [*files, str(user)]
    assert p['sim_rover'][-1] == {'use_sim_time': False, 'field': 'jacksboro-rough', 'seed': 7}
    assert p['ekf'][-1] == {'use_sim_time': False}
    assert p['explorer'][-1] == {'use_sim_time': False, 'exit_when_done': False, 'seed': 7, 'max_measurements': 3,
                                 'run_dir': os.path.abspath('rel/run'), 'search_bounds': [0.0, 50.0, 0.0, 60.0],
                                 'reading_unit': 'm (elevation)'}   # jacksboro-rough is a DEM: elevation in metres
    # the user's own explorer search_bounds win over the field extent
    user.write_text('explorer:\n  ros__parameters:\n    search_bounds: [10.0, 20.0, 10.0, 20.0]\n')
    assert 'search_bounds' not in module.graph_parameters({'params_file': str(user)}, str(ROOT))['explorer'][-1]

    for bad in ({'params_file': str(tmp_path / 'missing.yaml')}, {'measurements': '0'}, {'seed': 'x'},
                {'use_sim_time': 'maybe'}):
        with pytest.raises(RuntimeError, match=next(iter(bad))):
            module.graph_parameters(bad, str(ROOT))


def test_explore_launch_nodes_and_remappings(launch_api):
    from launch.actions import RegisterEventHandler

    module = _load('explore.launch.py')
    _, actions = _run_opaque(module, {'odom_topic': 'odometry/global', 'reading_topic': '/soil/temperature',
                                      'cmd_vel_topic': '/diff_drive_controller/cmd_vel'})
    assert set(_nodes(actions)) == {'explorer', 'pure_pursuit'}
    assert any(isinstance(a, RegisterEventHandler) for a in actions)

    conf = module.node_configuration({'odom_topic': 'odometry/global', 'pose_topic': 'amcl_pose',
                                      'reading_topic': '/soil/temperature', 'cmd_vel_topic': 'cmd_vel_nav',
                                      'pose_source': 'pose_with_covariance', 'measurements': '4'}, str(ROOT))
    assert conf['explorer']['parameters'][:-1] == [str(CONFIG / 'explorer.yaml'), str(CONFIG / 'sim.yaml')]
    assert conf['explorer']['parameters'][-1] == {'use_sim_time': False, 'exit_when_done': True,
                                                  'pose_source': 'pose_with_covariance', 'max_measurements': 4}
    assert dict(conf['explorer']['remappings']) == {'odometry/filtered': 'odometry/global', 'pose': 'amcl_pose',
                                                    'particle_cloud': 'particle_cloud',
                                                    'reading': '/soil/temperature'}
    assert dict(conf['pure_pursuit']['remappings']) == {'odometry/filtered': 'odometry/global',
                                                        'cmd_vel': 'cmd_vel_nav'}
    assert conf['pure_pursuit']['parameters'][-1] == {'use_sim_time': False}
    with pytest.raises(RuntimeError, match='pose_source'):
        module.node_configuration({'pose_source': 'amcl'}, str(ROOT))


def test_explore_launch_with_nav2(launch_api):
    module = _load('explore.launch.py')
    _, actions = _run_opaque(module, {'use_pure_pursuit': 'false'})
    assert set(_nodes(actions)) == {'explorer'}
    conf = module.node_configuration({'use_pure_pursuit': 'false'}, str(ROOT))
    assert ('plan', 'explorer/plan') in conf['explorer']['remappings']   # not Nav2's `plan`


def test_explore_launch_namespace_rekeys_parameter_files(launch_api, tmp_path):
    module = _load('explore.launch.py')
    user = tmp_path / 'mine.yaml'
    user.write_text('explorer:\n  ros__parameters:\n    dwell_time: 1.5\n'
                    '/**:\n  ros__parameters:\n    use_sim_time: false\n')
    conf = module.node_configuration({'namespace': '/rover1', 'params_file': str(user)}, str(ROOT))
    files = conf['explorer']['parameters'][:-1]
    assert len(files) == 3 and conf['pure_pursuit']['parameters'][:-1] == files
    shipped_explorer, shipped_sim, mine = (yaml.safe_load(Path(f).read_text()) for f in files)
    assert set(shipped_explorer) == {'/rover1/explorer'}
    assert set(shipped_sim) == {'sim_rover', 'ekf', 'particle_filter', '/rover1/pure_pursuit'}
    assert mine == {'/rover1/explorer': {'ros__parameters': {'dwell_time': 1.5}},
                    '/**': {'ros__parameters': {'use_sim_time': False}}}
    # without a namespace the files are used as they are
    plain = module.node_configuration({'params_file': str(user)}, str(ROOT))['explorer']['parameters'][:-1]
    assert plain == [str(CONFIG / 'explorer.yaml'), str(CONFIG / 'sim.yaml'), str(user)]

    # rcl applies the re-keyed sections to the namespaced node (a bare `explorer:` key would not reach it)
    rclpy = pytest.importorskip('rclpy')
    from rclpy.node import Node

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for path, expected in ((files[0], True), (str(CONFIG / 'explorer.yaml'), False)):
            node = Node('explorer', namespace='rover1', context=context,
                        cli_args=['--ros-args', '--params-file', path],
                        automatically_declare_parameters_from_overrides=True)
            try:
                assert node.has_parameter('max_measurements') is expected
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_explore_launch_namespace_reads_files_as_rcl_does(launch_api, tmp_path):
    """A params_file as launch_ros or a tool writes it (``!!python/tuple`` lists; strings rcl would type) is
    re-keyed for a namespace without changing a value (it used to be read with yaml.safe_load, which refuses
    the tuple)."""
    from uncertain_bo.parameters.rcl_yaml import load_param_file
    module = _load('explore.launch.py')
    user = tmp_path / 'mine.yaml'

    def write(global_frame):
        user.write_text(yaml.dump({'explorer': {'ros__parameters': {'search_bounds': (0.0, 60.0, 0.0, 40.0),
                                                                    'global_frame': global_frame,
                                                                    'max_measurements': 20}},
                                   '/**': {'ros__parameters': {'use_sim_time': True}}}))
        assert '!!python/tuple' in user.read_text()
    write('y')   # yaml.dump writes 'y' bare: rcl reads a boolean, which the node would refuse; so does the launch
    assert load_param_file(user)['explorer']['global_frame'] is True
    with pytest.raises(RuntimeError,
                       match=f"{user}: node /rover1/explorer: parameter 'global_frame' = True is invalid"):
        module.node_configuration({'namespace': 'rover1', 'params_file': str(user)}, str(ROOT))
    write('site_map')
    conf = module.node_configuration({'namespace': 'rover1', 'params_file': str(user)}, str(ROOT))
    rekeyed = load_param_file(conf['explorer']['parameters'][2])
    original = load_param_file(user)
    assert rekeyed == {'rover1/explorer': original['explorer'], '/**': original['/**']}
    assert original['explorer']['search_bounds'] == [0.0, 60.0, 0.0, 40.0]


@pytest.mark.parametrize('name', sorted(p.name for p in LAUNCH.glob('*.launch.py')))
def test_a_misspelt_launch_argument_is_refused_before_anything_starts(launch_api, name, monkeypatch):
    """``ros2 launch uncertain_bo sim.launch.py measurment:=5`` ran the shipped 30 measurements: launch hands every
    NAME:=VALUE to the file. The first action after the declarations refuses it, before any node or rviz2."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    monkeypatch.setattr('sys.argv', ['ros2', 'launch', PACKAGE, name, 'measurment:=5'])
    ld = _load(name).generate_launch_description()
    context = LaunchContext()
    context.launch_configurations['measurment'] = '5'
    first = next(i for i, e in enumerate(ld.entities) if not isinstance(e, DeclareLaunchArgument))
    assert all(isinstance(e, DeclareLaunchArgument) for e in ld.entities[:first])
    refusal = ld.entities[first]
    assert isinstance(refusal, OpaqueFunction)
    for entity in ld.entities[:first]:
        entity.execute(context)
    with pytest.raises(RuntimeError) as info:
        refusal.execute(context)
    assert str(info.value) == (f'launch argument measurment:=5 is not an argument of {name} (did you mean '
                               f'measurements?); see `ros2 launch {PACKAGE} {name} --show-args`')
    context.launch_configurations.pop('measurment')
    assert refusal.execute(context) == []   # the declared ones (their defaults) pass

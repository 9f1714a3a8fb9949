"""``uncertain-bo check PARAMS.yaml`` (uncertain_bo.ros.check): a robot's parameter file validated as its nodes
would receive it, without starting anything or writing a file."""
import re
from pathlib import Path

import pytest
import yaml

pytest.importorskip('rclpy')   # the node specs live in the node modules

ROOT = Path(__file__).resolve().parents[2]
#: shipped files that are not ROS 2 parameter files (ros_gz_bridge's topic list)
NOT_PARAMETER_FILES = {'gz_bridge.yaml'}
SHIPPED = sorted([*(ROOT / 'config').glob('*.yaml'), *(ROOT / 'config' / 'examples').glob('*.yaml')])


def check(argv, tmp_path, monkeypatch, capsys):
    """Run ``uncertain-bo check`` in ``tmp_path``; returns (exit status, stdout, stderr lines) and asserts that
    nothing was created."""
    from uncertain_bo.cli import main
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(['check', *map(str, argv)])
    out, err = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == before, 'check wrote something'
    assert 'Traceback' not in out + err
    return code, out, [line for line in err.splitlines() if line.strip()]


def write(tmp_path, text, name='params.yaml'):
    f = tmp_path / name
    f.write_text(text)
    return f


@pytest.mark.parametrize('path', SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_file_checks(path, tmp_path, monkeypatch, capsys):
    text = path.read_text()
    code, out, err = check([path], tmp_path, monkeypatch, capsys)
    assert path.read_text() == text
    if path.name in NOT_PARAMETER_FILES:
        assert code == 2 and len(err) == 1 and err[0].startswith('error: ') and 'top level is a list' in err[0]
        return
    assert code == 0, err
    assert out.rstrip().splitlines()[-1].startswith('ok: ')
    assert not [e for e in err if e.startswith('error')]


def test_launch_ros_file_wildcards_and_namespaces_resolve_as_rcl_does(tmp_path, monkeypatch, capsys):
    tuple_file = write(tmp_path, yaml.dump({'/rover1/explorer': {'ros__parameters': {
        'search_bounds': (0.0, 60.0, 0.0, 40.0), 'max_measurements': 20}}}, default_flow_style=False), 'launch.yaml')
    wildcard = write(tmp_path, '/**:\n  ros__parameters:\n    use_sim_time: true\n    desired_linear_vel: 0.5\n',
                     'all.yaml')
    nested = write(tmp_path, 'rover1:\n  pure_pursuit:\n    ros__parameters:\n      lookahead_dist: 2.0\n',
                   'nested.yaml')
    code, out, err = check([tuple_file, wildcard, nested], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert '/rover1/explorer (explorer): 3 set by the file' in out
    assert '  search_bounds = [0.0, 60.0, 0.0, 40.0]' in out and '  use_sim_time = True' in out
    assert '/rover1/pure_pursuit (pure_pursuit): 3 set by the file' in out
    assert '  desired_linear_vel = 0.5' in out and '  lookahead_dist = 2.0' in out
    # a /** file alone configures every node that declares one of its parameters, in the root namespace
    code, out, err = check([wildcard], tmp_path, monkeypatch, capsys)
    assert code == 0 and '/pure_pursuit (pure_pursuit)' in out and '/explorer' not in out.split('ok:')[0]


@pytest.mark.parametrize('text, expect', [
    ('explorer:\n  ros__parameters:\n    serch_bounds: [0.0, 1.0, 0.0, 1.0]\n',
     r"params.yaml line 3: 'serch_bounds' is not a parameter of node /explorer \(did you mean 'search_bounds'\?\)"),
    ('explorerr:\n  ros__parameters:\n    beta: 2.0\n',
     r"section 'explorerr' names no node of uncertain_bo; did you mean 'explorer'\?"),
    ('explorer:\n  ros__parameters:\n    search_bounds: [60.0, 0.0, 0.0, 40.0]\n',
     r"'search_bounds' = \[60.0, 0.0, 0.0, 40.0\] is invalid: need xmax > xmin"),
    ('explorer:\n  ros__parameters:\n    search_bounds: [0, 60, 0, 40.0]\n',
     r"line 3: parameter 'search_bounds': an array holds values of one type"),
    ('explorer:\n  ros__parameters:\n    beta: -1.0\n', r"parameter 'beta' = -1.0 is invalid: out of range"),
    ('explorer:\n  ros__parameters:\n    reading_type: float64\nsim_rover:\n  ros__parameters:\n'
     '    reading_type: temperature\n', r"reading_type is 'temperature' for sim_rover but 'float64' for explorer"),
    ('sim_rover:\n  ros__parameters:\n    field: /nope/field.npz\n', r'field file .*nope/field.npz does not exist'),
    ('explorer:\n  ros__parameters:\n    search_bounds: [0.0, 500.0, 0.0, 40.0]\nsim_rover:\n  ros__parameters:\n'
     '    field_extent: [0.0, 200.0, 0.0, 200.0]\n', r"is not inside sim_rover's field_extent"),
    ('explorer:\n  ros__parameters:\n    beta: [1,\n', r'is not valid YAML'),
    ('explorer:\n  ros__parameters:\n    sensor_offset: [.nan, 0.5]\n',
     r"'sensor_offset' = \[nan, 0.5\] is invalid: not a finite number"),
    ('sim_rover:\n  ros__parameters:\n    sensor_offset: [1.5, 0.0, 0.3]\n',
     r"'sensor_offset' = \[1.5, 0.0, 0.3\] is invalid: expected 2 elements, got 3"),
    ('explorer:\n  ros__parameters:\n    fix_sources: [40.0, 40.0, 10.0]\n',
     r"'fix_sources' = \[40.0, 40.0, 10.0\] is invalid: expected x, y, radius, cost for each fix source"),
], ids=['unknown key', 'misspelt node', 'reversed bounds', 'mixed array', 'out of range', 'reading type',
        'missing field', 'bounds outside the field', 'broken YAML', 'non-finite sensor offset',
        'sensor offset of three', 'fix sources not in fours'])
def test_a_mistake_is_one_error_line_and_exit_2(text, expect, tmp_path, monkeypatch, capsys):
    code, out, err = check([write(tmp_path, text)], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith('error: '), err
    assert re.search(expect, err[0]), err[0]


@pytest.mark.parametrize('text, expect', [
    ('', r'has no parameters \(empty, or comments only\)'),
    ('# only comments\n', r'has no parameters'),
    ('explorer:\n  ros__parameters:\n    reading_type: float64\n',
     r'float64 \(std_msgs/Float64\) carries no variance and reading_noise_std is 0'),
    ('explorer:\n  ros__parameters:\n    search_bounds: [0.0, 60.0, 0.0, 40.0]\n'
     '    execution_noise_std: [15.0, 15.0]\n',
     r"execution_noise_std \[15.0, 15.0\] m is more than 0.25 of the search area's shorter side \(40 m\)"),
    ('explorer:\n  ros__parameters:\n    reading_range: [0.0, 1.0]\n    reading_noise_std: 0.5\n',
     r'reading_noise_std = 0.5 is more than 0.25 of explorer reading_range \[0.0, 1.0\]'),
    ('/**:\n  ros__parameters:\n    beta: 2.0\n    not_a_parameter: 1\n',
     r"'not_a_parameter' is a parameter of no node of uncertain_bo"),
], ids=['empty', 'comments only', 'float64 without noise', 'execution noise vs bounds', 'noise vs range',
        'unknown wildcard key'])
def test_warnings_that_matter(text, expect, tmp_path, monkeypatch, capsys):
    code, out, err = check([write(tmp_path, text)], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    warnings = [e for e in err if e.startswith('warning: ')]
    assert any(re.search(expect, w) for w in warnings), err


def test_other_packages_sections_are_listed_not_checked(tmp_path, monkeypatch, capsys):
    """A robot's whole params file: robot_localization's nodes (also one named ``ekf``) are not ours."""
    f = write(tmp_path, 'ekf:\n  ros__parameters:\n    frequency: 30.0\n    two_d_mode: true\n    odom0: odom\n'
                        'ekf_filter_node:\n  ros__parameters:\n    frequency: 30.0\n'
                        'explorer:\n  ros__parameters:\n    beta: 2.0\n')
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "not checked: " in out and "section 'ekf' (most of its parameters are not" in out
    assert "section 'ekf_filter_node' (not a node of uncertain_bo)" in out
    assert '/explorer (explorer): 1 set by the file' in out


@pytest.mark.parametrize('node', ['explorer', 'team_explorer'])
@pytest.mark.parametrize('old, new, value', [('arrival_tolerance', 'xy_goal_tolerance', '0.5'),
                                             ('frame_id', 'global_frame', "'map'")])
def test_a_renamed_parameter_is_one_error_line_naming_its_new_name(node, old, new, value, tmp_path, monkeypatch,
                                                                   capsys):
    """A user's file with an old name (renamed to Nav2's term) would otherwise run with the new name's default."""
    f = write(tmp_path, f'{node}:\n  ros__parameters:\n    {old}: {value}\n')
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 2 and err == [f"error: parameter {old!r} was renamed to {new!r} (node /{node}, {f} line 3): use "
                                 'the new name there'], err
    f = write(tmp_path, f'{node}:\n  ros__parameters:\n    {new}: {value}\n')
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 0, err


def test_a_node_that_still_declares_an_old_name_keeps_it(tmp_path, monkeypatch, capsys):
    """field_sensor's frame_id (its readings' header frame) is its own parameter, not the explorer's old one."""
    code, out, err = check([write(tmp_path, "field_sensor:\n  ros__parameters:\n    frame_id: 'probe'\n")],
                           tmp_path, monkeypatch, capsys)
    assert code == 0 and "frame_id = 'probe'" in out, (out, err)


def test_namespace_option_finds_sections_that_miss_the_node(tmp_path, monkeypatch, capsys):
    f = write(tmp_path, 'explorer:\n  ros__parameters:\n    beta: 2.0\n')
    code, out, err = check(['--namespace', 'rover1', f], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1
    assert "section 'explorer' does not reach the node /rover1/explorer" in err[0]
    g = write(tmp_path, '/**/explorer:\n  ros__parameters:\n    beta: 2.0\n', 'g.yaml')
    code, out, err = check(['--namespace', '/rover1', g], tmp_path, monkeypatch, capsys)
    assert code == 0 and '/rover1/explorer (explorer): 1 set by the file' in out


def test_every_problem_is_listed_one_line_each(tmp_path, monkeypatch, capsys):
    """The check used to stop at the first mistake: a field engineer fixed one typo per run."""
    f = write(tmp_path, 'explorer:\n  ros__parameters:\n    max_measurement: 8\n    bta: 2.0\n'
                        'pure_pursuit:\n  ros__parameters:\n    lookahed_dist: 2.0\n    desired_linear_vel: -1.0\n')
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 2 and all(e.startswith('error: ') for e in err), err
    assert err == [
        f"error: {f} line 3: 'max_measurement' is not a parameter of node /explorer (did you mean "
        "'max_measurements'?)",
        f"error: {f} line 4: 'bta' is not a parameter of node /explorer (did you mean 'beta'?)",
        f"error: {f} line 7: 'lookahed_dist' is not a parameter of node /pure_pursuit (did you mean "
        "'lookahead_dist'?)",
        f"error: {f}: node /pure_pursuit: parameter 'desired_linear_vel' = -1.0 is invalid: out of range; allowed: "
        "a float in [0.01, 20]"], err


@pytest.mark.parametrize('text, expect', [
    ('team_explorer:\n  ros__parameters:\n    search_bounds: [0.0, 0.0, 0.0, 40.0]\n',
     r"node /team_explorer: parameter 'search_bounds' = \[0.0, 0.0, 0.0, 40.0\] is invalid: need xmax > xmin"),
    ('team_explorer:\n  ros__parameters:\n    rovers: [rover0, rover0]\n',
     r"node /team_explorer: parameter 'rovers' = \['rover0', 'rover0'\] names a rover twice"),
    ('team_explorer:\n  ros__parameters:\n    rovers: [rover0, 1rover]\n',
     r"parameter 'rovers': '1rover' is not a valid namespace"),
    ('explorer:\n  ros__parameters:\n    run_dir: /proc/run1\n',
     r"parameter 'run_dir' = '/proc/run1': /proc is on the kernel file system 'proc'"),
], ids=['team bounds of zero area', 'a rover twice', 'invalid rover name', 'run_dir under /proc'])
def test_what_the_node_refuses_the_check_refuses(text, expect, tmp_path, monkeypatch, capsys):
    """Each of these passed the check, and then the node refused it at start-up (the same functions now)."""
    code, out, err = check([write(tmp_path, text)], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1 and re.search(expect, err[0]), err


def test_the_check_knows_when_nav2_msgs_is_missing(tmp_path, monkeypatch, capsys):
    from uncertain_bo.ros import optional_messages as nav2_goals   # the node's check too (ros/nav2_goals.py)
    f = write(tmp_path, "explorer:\n  ros__parameters:\n    goal_interface: nav2_action\n")
    monkeypatch.setattr(nav2_goals, 'navigate_to_pose_type', lambda: None)   # this machine has no nav2_msgs
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1
    assert "'goal_interface' = 'nav2_action' needs nav2_msgs, which is not importable here" in err[0], err
    monkeypatch.setattr(nav2_goals, 'navigate_to_pose_type', lambda: object)   # it has
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 0, err


def test_the_check_knows_when_nav2_msgs_is_missing_for_amcls_particle_cloud(tmp_path, monkeypatch, capsys):
    """The node refused ``particle_cloud_type: nav2_msgs/msg/ParticleCloud`` without nav2_msgs; the check passed it."""
    import builtins
    f = write(tmp_path, "explorer:\n  ros__parameters:\n    pose_source: particle_cloud\n"
                        "    particle_cloud_type: nav2_msgs/msg/ParticleCloud\n")
    real_import = builtins.__import__

    def no_nav2(name, *args, **kwargs):   # this machine has no nav2_msgs
        if name.startswith('nav2_msgs'):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, '__import__', no_nav2)
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1
    assert "'particle_cloud_type' = 'nav2_msgs/msg/ParticleCloud' needs nav2_msgs" in err[0], err


@pytest.mark.parametrize('path, kind', [('/dev/zero', 'a character device'), ('.', 'a folder')])
def test_special_files_are_refused_in_one_line(path, kind, tmp_path, monkeypatch, capsys):
    """``check /dev/zero`` read the device until a MemoryError traceback."""
    code, out, err = check([path], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1 and err[0].endswith(f'is not a regular file ({kind}): name a YAML file'), err


def test_an_oversized_file_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    from uncertain_bo.parameters.rcl_yaml import MAX_FILE_BYTES
    f = write(tmp_path, '#' * (MAX_FILE_BYTES + 1), 'big.yaml')
    code, out, err = check([f], tmp_path, monkeypatch, capsys)
    assert code == 2 and len(err) == 1 and 'a parameter file holds at most 1 MiB' in err[0], err

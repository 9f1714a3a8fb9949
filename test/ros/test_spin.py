"""Node entry points: every parameter file that launch_ros or a user writes starts the node, ``--help`` has no
side effects, and Ctrl-C at any moment (also while the node is still importing or starting) ends it quietly.

The parameter files are written as launch_ros writes them: with launch_ros itself where it is importable
(``Node(parameters=[{...}])``, whose lists become ``!!python/tuple``), else with the same ``yaml.dump`` of
tuple-valued dicts (launch_ros/actions/node.py, ``_create_params_file_from_dict``).
"""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

DOMAIN_ID = 150 + os.getpid() % 50


def _installed_script(name: str) -> Path:
    """A console script: next to the interpreter (pip), else in <prefix>/lib/uncertain_bo (colcon / apt: where
    ``ros2 run`` finds it)."""
    exe = Path(sys.executable).parent / name
    if not exe.exists():
        try:
            from ament_index_python.packages import get_package_prefix
            exe = Path(get_package_prefix('uncertain_bo')) / 'lib' / 'uncertain_bo' / name
        except (ImportError, LookupError, ValueError, OSError):
            pass
    return exe


EXPLORER_SCRIPT = _installed_script('explorer')


def launch_ros_params_file(params: dict, name: str, namespace: str | None = None) -> Path:
    """The temporary parameter file launch_ros writes for ``Node(name=name, namespace=namespace,
    parameters=[params])``."""
    try:
        from launch import LaunchContext
        from launch_ros.actions import Node
    except ImportError:
        key = f"/{namespace.strip('/')}/{name}" if namespace else '/**'
        import tempfile
        with tempfile.NamedTemporaryFile(mode='w', prefix='launch_params_', delete=False) as h:
            yaml.dump({key: {'ros__parameters': {k: tuple(v) if isinstance(v, list) else v
                                                 for k, v in params.items()}}}, h, default_flow_style=False)
            return Path(h.name)
    node = Node(package='uncertain_bo', executable=name, name=name, namespace=namespace, parameters=[params])
    node._perform_substitutions(LaunchContext())
    return Path(node._Node__expanded_parameter_arguments[0][0])


def _stopping(factory):
    """A factory whose node asks to end as soon as it exists (run_node returns after start-up)."""
    from uncertain_bo.ros.spin import request_exit
    built = []

    def make():
        node = factory()
        built.append({name: node.get_parameter(name).value for name in node._parameters})
        request_exit(node, 0)
        return node
    return make, built


def _plain(v):
    return list(v) if hasattr(v, '__len__') and not isinstance(v, str) else v


@pytest.mark.parametrize('node, params', [
    ('explorer', {'search_bounds': [0.0, 60.0, 0.0, 40.0], 'execution_noise_std': [1.5, 1.5]}),
    ('sim_rover', {'field_extent': [0.0, 60.0, 0.0, 40.0], 'initial_x': 30.0, 'initial_y': 20.0}),
    ('field_sensor', {'field_extent': [0.0, 60.0, 0.0, 40.0], 'world_offset': [1.0, 2.0]}),
    ('ekf', {'initial_x': 3.0}),
    ('particle_filter', {'initial_x': 3.0}),
    ('pure_pursuit', {'lookahead_dist': 2.0}),
])
def test_node_starts_with_the_parameter_file_launch_ros_writes(node, params, tmp_path, monkeypatch):
    """Lists arrive as launch_ros writes them (``!!python/tuple``); the old start-up check refused the file
    ("not valid YAML: could not determine a constructor for the tag ...python/tuple") and exited 2."""
    from uncertain_bo.ros.nodes import NODES
    from uncertain_bo.ros.spin import run_node
    monkeypatch.setenv('ROS_DOMAIN_ID', str(DOMAIN_ID))
    monkeypatch.chdir(tmp_path)
    f = launch_ros_params_file({**params, **({'run_dir': str(tmp_path / 'run')} if node == 'explorer' else {})},
                               node)
    try:
        assert '!!python/tuple' in f.read_text() or not any(isinstance(v, list) for v in params.values())
        entry = NODES[node]
        cls = getattr(entry.load(), entry.cls)
        make, built = _stopping(cls)
        run_node(make, [node, '--ros-args', '--params-file', str(f)])
    finally:
        f.unlink()
    assert built, 'the node was not built'
    for k, v in params.items():
        assert _plain(built[0][k]) == v, k


#: exec the script with SIGINT at its default, as a terminal starts it (a test runner started in the background,
#: e.g. by colcon, has SIGINT ignored, and a child inherits that until the node installs its own handling)
_AS_FROM_A_TERMINAL = ('import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); '
                       'os.execv(sys.argv[1], sys.argv[1:])')


def _start(args, tmp_path, env_extra=None):
    env = {**os.environ, 'ROS_DOMAIN_ID': str(DOMAIN_ID), **(env_extra or {})}
    proc = subprocess.Popen([sys.executable, '-c', _AS_FROM_A_TERMINAL, str(EXPLORER_SCRIPT), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    return proc, lines, reader


def _wait_for(proc, lines, text, timeout=90):
    deadline = time.monotonic() + timeout
    while not any(text in line for line in lines):
        assert proc.poll() is None and time.monotonic() < deadline, ''.join(lines)
        time.sleep(0.05)


def _script():
    if not EXPLORER_SCRIPT.exists():
        pytest.skip(f'the explorer console script is installed neither next to {sys.executable} nor in the '
                    'ament prefix')


def test_console_script_applies_launch_ros_wildcard_and_namespaced_files(tmp_path):
    """The real console script in a namespace, with three files: launch_ros's tuple file keyed
    ``/rover1/explorer``, a user's ``/**:`` file and a relative namespaced key ``rover1/explorer:``; the
    start-up line shows each file's value."""
    _script()
    tuple_file = launch_ros_params_file({'search_bounds': [0.0, 60.0, 0.0, 40.0], 'run_dir': str(tmp_path / 'r')},
                                        'explorer', 'rover1')
    wildcard = tmp_path / 'all.yaml'
    wildcard.write_text('/**:\n  ros__parameters:\n    max_measurements: 7\n    use_sim_time: false\n')
    relative = tmp_path / 'ns.yaml'
    relative.write_text('rover1/explorer:\n  ros__parameters:\n    method: igp_ucb\n')
    proc, lines, reader = _start(['--ros-args', '-r', '__ns:=/rover1', '--params-file', str(tuple_file),
                                  '--params-file', str(wildcard), '--params-file', str(relative)], tmp_path)
    try:
        _wait_for(proc, lines, 'exploring')
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        tuple_file.unlink()
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=5)
    out = ''.join(lines)
    assert proc.returncode == 0 and 'Traceback' not in out, out
    assert 'exploring [0.0, 60.0, 0.0, 40.0] m with igp_ucb' in out and '7 measurements' in out, out
    assert 'warning' not in out.lower(), out


@pytest.mark.slow
@pytest.mark.parametrize('moment', ['importing', 'late import', 'building the node', 'spinning', 'spinning, twice'])
def test_ctrl_c_at_any_moment_ends_quietly(moment, tmp_path):
    """Ctrl-C while the console script imports its modules (a KeyboardInterrupt there used to print a
    traceback, or abort inside C++ code), while the node is being built (a resumed journal: a GP fit), and
    while it spins (also twice, as under ``ros2 launch``): exit status 0, no traceback, and promptly."""
    _script()
    run_dir = tmp_path / 'run'
    if moment == 'building the node':
        _journal(run_dir, 150)
    proc, lines, reader = _start(['--ros-args', '-p', f'run_dir:={run_dir}', '-p', 'max_measurements:=1000'], tmp_path)
    try:
        if moment == 'importing':
            _wait_for_library(proc, 'libtorch')      # torch is being imported (the node's modules)
        elif moment == 'late import':
            _wait_for_library(proc, 'librcl')        # rclpy is being imported
        elif moment == 'building the node':
            _wait_for(proc, lines, 'resumed')   # the journal is read: the GP is being fitted
        else:
            _wait_for(proc, lines, 'exploring')
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        if moment == 'spinning, twice':
            time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=5)
    out = ''.join(lines)
    assert proc.returncode == 0, out
    assert 'Traceback' not in out and 'KeyboardInterrupt' not in out and 'terminate called' not in out, out
    assert waited < 15, f'{waited:.1f} s to stop after Ctrl-C\n{out}'


def _wait_for_library(proc, name: str, timeout: float = 90) -> None:
    """Until the process has mapped a shared library whose path contains ``name`` (Linux: /proc/PID/maps): the
    moment is inside the node's own imports, not the interpreter's start-up (a SIGINT there, before any of the
    program's code runs, is Python's to handle)."""
    maps = Path(f'/proc/{proc.pid}/maps')
    if not maps.exists():
        pytest.skip('needs /proc/PID/maps to find the moment')
    deadline = time.monotonic() + timeout
    while name not in maps.read_text(errors='replace'):
        assert proc.poll() is None and time.monotonic() < deadline, f'{name} never loaded'
        time.sleep(0.005)


def _journal(run_dir: Path, n: int) -> None:
    import torch

    from uncertain_bo.distributions import Gaussian
    from uncertain_bo.journal.journal import Journal, location_to_record
    run_dir.mkdir(parents=True)
    j = Journal(run_dir / 'journal.jsonl', metadata={'parameters': {'execution_noise_std': [0.75, 0.75],
                                                                    'search_bounds': [0.0, 200.0, 0.0, 200.0]}})
    g = torch.Generator().manual_seed(0)
    for i in range(n):
        xy = torch.rand(2, generator=g) * 200
        loc = Gaussian(xy[None], torch.eye(2)[None] * 0.5)
        j.append({'type': 'observation', 'index': i, 'target': xy.tolist(), 'location': location_to_record(loc),
                  'y': float(400 + xy.sum())})


def test_help_prints_the_parameters_and_starts_nothing(tmp_path):
    """``explorer --help`` used to start a mission and create runs/<date>/journal.jsonl in the current folder."""
    _script()
    r = subprocess.run([str(EXPLORER_SCRIPT), '--help'], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, 'ROS_DOMAIN_ID': str(DOMAIN_ID)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith('usage: explorer') and 'search_bounds = [0.0, 200.0, 0.0, 200.0]' in r.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('node', ['explorer', 'pure_pursuit', 'sim_rover', 'ekf', 'particle_filter', 'field_sensor'])
def test_every_node_prints_help_from_its_specs_without_side_effects(node, tmp_path, monkeypatch, capsys):
    from uncertain_bo.ros.nodes import NODES
    monkeypatch.chdir(tmp_path)
    entry = NODES[node]
    entry.load().main([node, '--help'])
    out = capsys.readouterr().out
    assert out.startswith(f'usage: {node}')
    for spec in entry.parameter_specs():
        assert f'  {spec.name} = ' in out
    assert list(tmp_path.iterdir()) == []


def test_an_argument_outside_ros_args_is_one_line_and_starts_nothing(tmp_path, monkeypatch, capsys):
    from uncertain_bo.ros.explorer import main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(['explorer', 'my_robot.yaml'])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: explorer: unexpected argument 'my_robot.yaml'")
    assert list(tmp_path.iterdir()) == []


def test_sections_meant_for_the_node_that_miss_it_are_warned_about(tmp_path):
    from uncertain_bo.ros.params import params_files_in
    from uncertain_bo.ros.spin import _warn_unknown_sections

    class Logger:
        def __init__(self):
            self.lines = []

        def warning(self, text):
            self.lines.append(text)

    class FakeNode:
        def __init__(self, fqn):
            self.fqn, self.logger = fqn, Logger()

        def get_fully_qualified_name(self):
            return self.fqn

        def get_name(self):
            return self.fqn.rsplit('/', 1)[-1]

        def get_logger(self):
            return self.logger

    f = tmp_path / 'p.yaml'
    f.write_text('explorerr:\n  ros__parameters: {beta: 2.0}\nekf:\n  ros__parameters: {}\n'
                 'explorer:\n  ros__parameters: {beta: 3.0}\n')
    assert params_files_in(['explorer', '--ros-args', '-p', 'a:=1', '--params-file', str(f), '--', 'x']) == [str(f)]
    root, ns = FakeNode('/explorer'), FakeNode('/rover1/explorer')
    _warn_unknown_sections(root, [str(f)])
    _warn_unknown_sections(ns, [str(f)])
    assert len(root.logger.lines) == 1 and "'explorerr'" in root.logger.lines[0]          # not 'ekf'
    assert len(ns.logger.lines) == 2 and any("section 'explorer' does not apply" in x for x in ns.logger.lines)
    assert "'/**/explorer'" in ns.logger.lines[0]
    # a launch_ros file (tuples) is read too: its misspelt section is warned about as well
    g = tmp_path / 'launch.yaml'
    g.write_text(yaml.dump({'/explorerr': {'ros__parameters': {'search_bounds': (0.0, 1.0, 0.0, 1.0)}}}))
    _warn_unknown_sections(root, [str(g)])
    assert len(root.logger.lines) == 2 and "'/explorerr'" in root.logger.lines[1]

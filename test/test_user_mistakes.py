"""User mistakes, as a table: one line ``error: ...``, a non-zero exit, no traceback, the journal untouched.

Every row runs one entry point (``uncertain-bo demo`` / ``report`` / ``bench``, the ``explorer`` and
``sim_rover`` nodes) on a mistake and checks the exit status, that stderr holds exactly one ``error:`` line
matching the expected message and no traceback, and that the run folder's journal is byte-for-byte what it
was (or, for a mistyped folder, that nothing was created). The entry points run in-process (their ``main``);
two rows also run the installed console scripts as subprocesses.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian
from uncertain_bo.journal.journal import Journal, location_to_record
from uncertain_bo.ros.nodes import NODES

DOMAIN_ID = 140 + os.getpid() % 30


def write_journal(run_dir: Path) -> Path:
    """A small valid journal (header + 3 observations) in ``run_dir``."""
    path = run_dir / 'journal.jsonl'
    j = Journal(path, metadata={'parameters': {'execution_noise_std': [0.75, 0.75],
                                               'search_bounds': [0.0, 200.0, 0.0, 200.0]}})
    for i in range(3):
        loc = Gaussian(torch.tensor([[10.0 * i + 5, 20.0]]), torch.eye(2)[None] * 0.5)
        j.append({'type': 'observation', 'index': i, 'target': [10.0 * i + 5, 20.0],
                  'location': location_to_record(loc), 'y': 400.0 + i})
    return path


def corrupt_middle(path: Path) -> None:
    lines = path.read_bytes().split(b'\n')
    lines[2] = lines[2][:20] + b'#garbage#' + lines[2][30:]
    path.write_bytes(b'\n'.join(lines))


def corrupt_version(path: Path) -> None:
    """A header whose version cannot be read: every reader refuses it (a damaged middle line is skipped and counted
    by a resuming explorer, and refused only by report and export)."""
    lines = path.read_bytes().split(b'\n')
    lines[0] = lines[0].replace(b'"version":1', b'"version":"abc"')
    path.write_bytes(b'\n'.join(lines))


# ----------------------------------------------------------------------------- bad field files
def field_file(kind: str, tmp: Path) -> str:
    """Path of a bad ``--field`` of the given kind."""
    p = tmp / 'fields'
    p.mkdir(parents=True, exist_ok=True)
    if kind == 'missing':
        return str(p / 'nope.npz')
    if kind == 'directory':
        return str(p)
    if kind == 'empty-csv':
        (p / 'f.csv').write_text('')
        return str(p / 'f.csv')
    if kind == '2-point-csv':
        (p / 'f.csv').write_text('0,0,1\n10,10,2\n')
        return str(p / 'f.csv')
    if kind == 'nan-csv':
        (p / 'f.csv').write_text('0,0,1\n10,0,nan\n0,10,2\n10,10,3\n')
        return str(p / 'f.csv')
    if kind == 'text-csv':
        (p / 'f.csv').write_text('0,0,1\n10,0,high\n0,10,2\n10,10,3\n')
        return str(p / 'f.csv')
    if kind == 'npz-no-arrays':
        np.savez(p / 'f.npz')
        return str(p / 'f.npz')
    if kind == 'npz-pickled':
        np.savez(p / 'f.npz', values=np.array([{'a': 1}], dtype=object))
        return str(p / 'f.npz')
    if kind == 'npz-garbage':
        (p / 'f.npz').write_bytes(b'this is not a zip file at all' * 10)
        return str(p / 'f.npz')
    if kind == '1x1-grid':
        np.savez(p / 'f.npz', values=np.ones((1, 1)))
        return str(p / 'f.npz')
    if kind == 'all-nan-grid':
        np.savez(p / 'f.npz', values=np.full((5, 5), np.nan))
        return str(p / 'f.npz')
    raise ValueError(kind)


FIELD_KINDS = ['missing', 'directory', 'empty-csv', '2-point-csv', 'nan-csv', 'text-csv', 'npz-no-arrays',
               'npz-pickled', 'npz-garbage', '1x1-grid', 'all-nan-grid']

#: what the one error line must say for each bad field file: the file and what is wrong with it
FIELD_ERRORS = {
    'missing': r'field file \S*nope\.npz does not exist; check the path',
    'directory': r'field file \S*fields: unsupported type; use a \.npz grid or a \.csv',
    'empty-csv': r'f\.csv: need at least 3 measurements x,y,value to interpolate a field, got 0',
    '2-point-csv': r'f\.csv: need at least 3 measurements x,y,value to interpolate a field, got 2',
    'nan-csv': r"f\.csv:2: non-finite value \(NaN/inf\) in row \['10', '0', 'nan'\]",
    'text-csv': r"f\.csv:2: not a number in row \['10', '0', 'high'\]",
    'npz-no-arrays': r'f\.npz: expected exactly one 2-D array, found none',
    'npz-pickled': r'f\.npz holds pickled \(object\) arrays',
    'npz-garbage': r'f\.npz is not an \.npz archive',
    '1x1-grid': r"f\.npz: array 'values' has shape \(1, 1\); a field needs a grid of at least 2 x 2 nodes",
    'all-nan-grid': r"f\.npz: array 'values' has no finite values",
}


# ----------------------------------------------------------------------------- entry points
def run_cli(argv):
    from uncertain_bo.cli import main
    return main([str(a) for a in argv])


def run_node_main(module: str, ros_args):
    import importlib
    mod = importlib.import_module(module)
    try:
        mod.main(['node', '--ros-args', *[str(a) for a in ros_args]])
    except SystemExit as exc:
        return exc.code
    return 0


class Case:
    def __init__(self, name, make, expect, code=2, journal='intact'):
        self.name, self.make, self.expect, self.code, self.journal = name, make, expect, code, journal


def _params(tmp, text):
    f = tmp / 'params.yaml'
    f.write_text(text)
    return f


def _file(tmp):
    f = tmp / 'a_file.txt'
    f.write_text('not a folder\n')
    return f


CASES = [
    Case('demo --out existing file', lambda t, r: lambda: run_cli(['demo', '--out', _file(t)]),
         r"--out = '.*a_file.txt': .* is a file, not a folder"),
    Case('explorer run_dir:=existing file',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', ['-p', f'run_dir:={_file(t)}']),
         r"parameter 'run_dir' = .* is a file, not a folder"),
    Case('bench --iterations -5',
         lambda t, r: lambda: run_cli(['bench', '--problem', 'rkhs2d', '--iterations', '-5', '--out', t / 'b']),
         r'--iterations must be a positive integer, got -5', journal='absent:b'),
    Case('bench --seeds 0', lambda t, r: lambda: run_cli(['bench', '--problem', 'rkhs2d', '--seeds', '0',
                                                          '--out', t / 'b']),
         r'--seeds must be a positive integer, got 0', journal='absent:b'),
    Case('explorer malformed params file',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', [
             '--params-file', _params(t, 'explorer:\n  ros__parameters:\n    beta: [1,\n'),
             '-p', f'run_dir:={r}']),
         r'parameter file .*params.yaml is not valid YAML'),
    Case('explorer params file not in ROS layout',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', [
             '--params-file', _params(t, 'beta: 2.0\n'), '-p', f'run_dir:={r}']),
         r"parameter file .*params.yaml line 1: node 'beta' has no 'ros__parameters' section"),
    Case('explorer beta out of range',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', ['-p', 'beta:=-1.0', '-p', f'run_dir:={r}']),
         r"parameter 'beta' = -1.0 is invalid: out of range"),
    Case('field_sensor field:=missing',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.field_sensor', ['-p', f'field:={t / "nope.npz"}']),
         r'field file .*nope\.npz does not exist'),
    Case('explorer journal version unreadable',
         lambda t, r: (corrupt_version(r / 'journal.jsonl'),
                       lambda: run_node_main('uncertain_bo.ros.explorer', ['-p', f'run_dir:={r}']))[1],
         r"journal\.jsonl line 1: header 'version' is 'abc', not an integer"),
    Case('demo journal version unreadable',
         lambda t, r: (corrupt_version(r / 'journal.jsonl'), lambda: run_cli(['demo', '--out', r]))[1],
         r"journal\.jsonl line 1: header 'version' is 'abc', not an integer"),
    Case('report corrupted middle journal line',
         lambda t, r: (corrupt_middle(r / 'journal.jsonl'), lambda: run_cli(['report', r]))[1],
         r'journal\.jsonl line 3: line is not a journal record'),
    Case('demo search_bounds outside the field',
         lambda t, r: lambda: run_cli(['demo', '--out', r, '--params', _params(
             t, 'explorer:\n  ros__parameters:\n    search_bounds: [1000.0, 1050.0, 1000.0, 1050.0]\n')]),
         r"'search_bounds' = \[1000.0, 1050.0, 1000.0, 1050.0\] m is not inside the field"),
    Case('demo misspelt node section',
         lambda t, r: lambda: run_cli(['demo', '--out', r, '--params', _params(
             t, 'explorerr:\n  ros__parameters:\n    beta: 2.0\n')]),
         r"section 'explorerr' names no node of uncertain_bo; did you mean 'explorer'\?"),
    Case('report mistyped folder', lambda t, r: lambda: run_cli(['report', t / 'runz' / 'typo']),
         r'no journal at .*typo', journal='absent:runz'),
    Case('report bad --extent', lambda t, r: lambda: run_cli(['report', r, '--extent', '0', '0', '0', '10']),
         r'extent must be finite with xmin < xmax'),
    *[Case(f'demo --field {k}', (lambda k: lambda t, r: lambda: run_cli(
        ['demo', '--out', r, '--field', field_file(k, t)]))(k), FIELD_ERRORS[k])
      for k in FIELD_KINDS],
    *[Case(f'report --field {k}', (lambda k: lambda t, r: lambda: run_cli(
        ['report', r, '--field', field_file(k, t)]))(k), FIELD_ERRORS[k])
      for k in FIELD_KINDS],
    *[Case(f'sim_rover field:={k}', (lambda k: lambda t, r: lambda: run_node_main(
        'uncertain_bo.ros.sim_rover', ['-p', f'field:={field_file(k, t)}']))(k), FIELD_ERRORS[k])
      for k in ('missing', 'npz-garbage', 'all-nan-grid')],
    # a name the node does not declare: rclpy ignored it and the node ran with the default (max_measurement: 8 ran
    # 30 measurements); every node of the package refuses it now, naming the file, the line and the closest name
    *[Case(f'{node} misspelt parameter in its params file', (lambda node: lambda t, r: lambda: run_node_main(
        f'uncertain_bo.ros.{node}', ['--params-file', _params(t, _misspelt_section(node)), '-p', f'run_dir:={r}']
        if 'explorer' in node else ['--params-file', _params(t, _misspelt_section(node))]))(node),
        rf"params\.yaml line 3: '\w+' is not a parameter of node /{node} \(did you mean '\w+'\?\)")
      for node in ('explorer', 'team_explorer', 'pure_pursuit', 'sim_rover', 'ekf', 'particle_filter', 'field_sensor',
                   'sensor_covariance')],
    Case('explorer misspelt -p parameter',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', ['-p', 'max_measurement:=8',
                                                                          '-p', f'run_dir:={r}']),
         r"the command line \(-p max_measurement:=8\): 'max_measurement' is not a parameter of node /explorer "
         r"\(did you mean 'max_measurements'\?\)"),
    Case('explorer -p array of mixed types',
         lambda t, r: lambda: run_node_main('uncertain_bo.ros.explorer', ['-p', 'search_bounds:=[0, 60.0, 0, 40.0]',
                                                                          '-p', f'run_dir:={r}']),
         r"-p search_bounds:=\[0, 60.0, 0, 40.0\]: parameter 'search_bounds': an array holds values of one type, "
         r"but '60.0' is a double among integers \(write every number with a decimal point"),
    Case('demo --params /dev/zero', lambda t, r: lambda: run_cli(['demo', '--out', r, '--params', '/dev/zero']),
         r'parameter file /dev/zero is not a regular file \(a character device\)'),
    Case('demo misspelt parameters',
         lambda t, r: lambda: run_cli(['demo', '--out', r, '--params', _params(
             t, 'explorer:\n  ros__parameters:\n    max_measurement: 8\n    bta: 2.0\n')]),
         r"params\.yaml line 3: 'max_measurement' is not a parameter of node /explorer \(did you mean "
         r"'max_measurements'\?\); .*params\.yaml line 4: 'bta' is not a parameter of node /explorer"),
]


def _misspelt_section(node: str) -> str:
    """A parameter file whose section for ``node`` sets one of its parameters under a misspelt name (line 3)."""
    from uncertain_bo.ros.nodes import node_specs
    name = node_specs(node)[0].name
    return f'{node}:\n  ros__parameters:\n    {name[:-1]}: 1\n'


#: what needs rclpy and the message packages (the ros extra): the nodes, and the commands that run or check them
NEEDS_ROS = {*NODES, 'demo', 'check', 'params', 'replay'}


@pytest.mark.parametrize('case', [pytest.param(c, id=c.name) for c in CASES])
def test_user_mistake_is_one_line_nonzero_and_loses_nothing(case, tmp_path, capfd, monkeypatch):
    monkeypatch.setenv('ROS_DOMAIN_ID', str(DOMAIN_ID))
    monkeypatch.chdir(tmp_path)
    if case.name.split()[0] in NEEDS_ROS:
        pytest.importorskip('rclpy')
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    journal = write_journal(run_dir)
    call = case.make(tmp_path, run_dir)
    before = journal.read_bytes()
    listing = sorted(p.name for p in run_dir.iterdir())
    code = call()
    out, err = capfd.readouterr()
    assert code == case.code, f'exit {code}\nstdout: {out}\nstderr: {err}'
    assert 'Traceback' not in err + out
    errors = [line for line in err.splitlines() if line.startswith('error: ')]
    assert len(errors) == 1, err
    assert re.search(case.expect, errors[0]), errors[0]
    assert journal.read_bytes() == before
    assert sorted(p.name for p in run_dir.iterdir()) == listing      # nothing written next to it either
    if case.journal.startswith('absent:'):
        assert not (tmp_path / case.journal.split(':', 1)[1]).exists()


def test_complete_last_record_without_newline_survives_every_reader(tmp_path, capfd):
    """The journal's last record lacks only its newline: report reads it (nothing deleted as torn)."""
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    journal = write_journal(run_dir)
    journal.write_bytes(journal.read_bytes().rstrip(b'\n'))
    before = journal.read_bytes()
    assert Journal(journal, read_only=True).observations[-1]['index'] == 2
    run_cli(['report', run_dir])
    out, _ = capfd.readouterr()
    assert json.loads(out[:out.rindex('}') + 1])['measurements'] == 3
    assert journal.read_bytes() == before


@pytest.mark.parametrize('script, args, expect', [
    ('uncertain-bo', ['demo', '--out', '{file}'], r'is a file, not a folder'),
    ('explorer', ['--ros-args', '--params-file', '{bad_yaml}'], r'is not valid YAML'),
    ('explorer', ['--ros-args', '--params-file', '{typo_yaml}'],
     r"^error: .*typo\.yaml line 3: 'max_measurement' is not a parameter of node /explorer \(did you mean "
     r"'max_measurements'\?\)$"),
    ('uncertain-bo', ['check', '/dev/zero'], r'^error: parameter file /dev/zero is not a regular file'),
], ids=['demo-out-file', 'explorer-bad-yaml', 'explorer-misspelt-parameter', 'check-dev-zero'])
def test_console_scripts_print_one_line(script, args, expect, tmp_path):
    exe = Path(sys.executable).parent / script          # pip: next to the interpreter
    if not exe.exists():                                  # colcon/apt: <prefix>/lib/uncertain_bo (ros2 run's place)
        try:
            from ament_index_python.packages import get_package_prefix
            exe = Path(get_package_prefix('uncertain_bo')) / 'lib' / 'uncertain_bo' / script
        except (ImportError, LookupError, ValueError, OSError):
            pass
    if not exe.exists():
        pytest.skip(f'{script} console script installed neither next to {sys.executable} nor in the ament prefix')
    if script in NEEDS_ROS or args[0] in NEEDS_ROS:
        pytest.importorskip('rclpy')
    bad = tmp_path / 'bad.yaml'
    bad.write_text('explorer:\n  ros__parameters:\n    beta: [1,\n')
    typo = tmp_path / 'typo.yaml'   # the field engineer's file: runs 30 measurements, not 8, unless refused
    typo.write_text(f"explorer:\n  ros__parameters:\n    max_measurement: 8\n    run_dir: '{tmp_path / 'run'}'\n")
    f = _file(tmp_path)
    argv = [a.format(file=f, bad_yaml=bad, typo_yaml=typo) for a in args]
    before = sorted(tmp_path.iterdir())
    # the source tree first, then what was there (on a ROS machine rclpy comes from /opt/ros through PYTHONPATH)
    pythonpath = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent.parent), os.environ.get('PYTHONPATH'))
                                 if p)
    env = {**os.environ, 'PYTHONPATH': pythonpath, 'ROS_DOMAIN_ID': str(DOMAIN_ID)}
    r = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert 'Traceback' not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith('error: ') and re.search(expect, lines[0]), r.stderr
    assert sorted(tmp_path.iterdir()) == before, 'nothing is written'   # no run folder, no runs/<date-time>

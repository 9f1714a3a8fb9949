"""The registries' plain-data snapshot (uncertain_bo/data/registries.json) that ``bench --help`` and ``check`` read
instead of importing torch, BoTorch and rclpy (issue 34): it says what the registries say, and those commands
import none of them."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from uncertain_bo import registries
from uncertain_bo.extras import extra_for, install_hint

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def _or_skip(load):
    """``load()``, or a skip naming the extra where it needs an optional dependency that is not installed (the
    nodes' specs need the ros extra: a venv without the ROS wheels checks the methods and the problems)."""
    try:
        return load()
    except ModuleNotFoundError as error:
        if extra_for(error.name) is None:
            raise
        pytest.skip(f'needs {error.name}, not installed here ({install_hint(error.name)})')


@pytest.mark.parametrize('key', sorted(registries.REGISTRIES))
def test_the_snapshot_is_what_the_registries_declare(key):
    live = json.loads(json.dumps(_or_skip(registries.REGISTRIES[key].load)))
    assert registries.snapshot()[key] == live, 'a registry changed: python -m uncertain_bo.registries'


def test_the_snapshot_holds_every_registry_and_nothing_else():
    assert set(registries.snapshot()) == set(registries.REGISTRIES)


@pytest.mark.parametrize('node', ['explorer', 'sim_rover', 'sensor_covariance'])
def test_specs_read_from_the_snapshot_equal_the_nodes_own(node):
    """Read back as :class:`Param` (tuples, ints and floats as declared), not only as plain data."""
    from uncertain_bo.ros.nodes import node_specs
    assert registries.node_specs(node) == _or_skip(lambda: node_specs(node))


def test_a_registry_whose_module_is_imported_is_read_from_it(monkeypatch):
    """A problem registered by a script (the benchmarks imported) is in ``bench --help``'s lists; the snapshot
    has only the package's own."""
    from uncertain_bo.benchmarks import PROBLEMS, get_problem
    monkeypatch.setitem(PROBLEMS, 'doc-copy', lambda: get_problem('rkhs2d'))
    assert 'doc-copy' in registries.problems() and 'doc-copy' not in registries.snapshot()['problems']


HEAVY = ('torch', 'botorch', 'gpytorch', 'rclpy')
PROBE = """
import sys
from uncertain_bo.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print('exit', code, 'imported:', *[m for m in {heavy!r} if m in sys.modules], file=sys.stderr)
"""


FILES = {'BAD': 'explorer:\n  ros__parameters:\n    beta: -1.0\n    methd: ugp_ucb\n'
                'sim_rover:\n  ros__parameters:\n    reading_noise_std: 0.1\n',
         'NS': '/**/explorer:\n  ros__parameters:\n    method: igp_ucb\n    goal_interface: topic\n'
               '/rover1/sim_rover:\n  ros__parameters:\n    field: jacksboro\n'}


def _file(tmp_path, name):
    f = tmp_path / f'{name}.yaml'
    f.write_text(FILES[name])
    return str(f)


@pytest.mark.parametrize('argv, code', [
    (['bench', '--help'], 0),
    (['bench', '--list-problems'], 0),
    (['bench', '--describe', 'rkhs2d'], 0),
    (['check', '--help'], 0),
    (['check', CONFIG / 'sim.yaml'], 0),
    (['check', '--all', CONFIG / 'explorer.yaml', CONFIG / 'sim.yaml'], 0),
    (['check', '--namespace', 'rover1', 'NS'], 0),
    (['check', CONFIG / 'gz_sensors.yaml', CONFIG / 'gz_localization.yaml'], 0),
    (['check', 'BAD'], 2),
], ids=lambda v: ' '.join(str(a).rpartition('/')[2] for a in v) if isinstance(v, list) else None)
def test_help_and_check_import_neither_torch_nor_rclpy(argv, code, tmp_path):
    """They imported torch, BoTorch and GPyTorch (``bench --help``: the problems' and methods' modules) and rclpy
    (``check``: the nodes' modules for their specs), 3-5 s before the first line."""
    argv = [_file(tmp_path, a) if a in FILES else str(a) for a in argv]
    out = subprocess.run([sys.executable, '-c', PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.stderr.splitlines()[-1] == f'exit {code} imported:', out.stderr[-2000:]

"""The benchmark runner's backends: a Dask LocalCluster writes the same run files and records as a local run; a run
lost with its worker is retried once and then reported; a run that raises is reported and the others are written;
the user's mistakes with --backend / --scheduler exit 2 and write nothing."""
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from uncertain_bo.benchmarks import BenchSettings, expand, run_many
from uncertain_bo.benchmarks.base import Problem
from uncertain_bo.benchmarks.problem_registry import PROBLEMS
from uncertain_bo.benchmarks.cli import main as bench_cli
from uncertain_bo.benchmarks.runner import RunsFailed

pytest.importorskip('distributed')

#: fields that measure time, the only ones two runs of the same configuration may differ in
TIMING = {'seconds', 'fit_seconds', 'wall_seconds', 'median_decision_seconds'}


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in TIMING}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _csv_without_timing(path: Path) -> list[list[str]]:
    rows = [line.split(',') for line in path.read_text().splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if name not in TIMING]
    return sorted([r[i] for i in keep] for r in rows)


def _specs():
    # cheap: NES's 1-D sin problem, 3 initial points + 3 decisions; two methods on two seeds
    ei, ucb = (expand('nes-sin', [m], [seed], 6, [BenchSettings()])[0] for m, seed in (('ei', 0), ('bo_uu_ucb', 1)))
    return [ei, ucb]


@pytest.mark.slow
def test_dask_local_cluster_writes_the_records_of_a_local_run(tmp_path):
    specs = _specs()
    run_many(specs, tmp_path / 'local', n_jobs=1, progress=False)
    log = io.StringIO()
    dask = run_many(specs, tmp_path / 'dask', backend='dask', scheduler='local:2', progress=log)
    assert '2 worker(s)' in log.getvalue() and log.getvalue().count('] nes-sin__') == len(specs)
    assert [r['key'] for r in dask] == [s.key for s in specs]
    names = sorted(p.name for p in (tmp_path / 'local' / 'runs').iterdir())
    assert names == sorted(p.name for p in (tmp_path / 'dask' / 'runs').iterdir()) and len(names) == len(specs)
    for name in names:
        a = json.loads((tmp_path / 'local' / 'runs' / name).read_text())
        b = json.loads((tmp_path / 'dask' / 'runs' / name).read_text())
        assert set(a) == set(b)
        assert _strip(a) == _strip(b), name       # every record, final, instance and planner field, bit for bit
        assert len(a['records']) == 6
    assert _csv_without_timing(tmp_path / 'local' / 'records.csv') == \
        _csv_without_timing(tmp_path / 'dask' / 'records.csv')
    # resumable: a second sweep over the same directory reuses every run (and starts no cluster)
    log = io.StringIO()
    again = run_many(specs, tmp_path / 'dask', backend='dask', scheduler='local:1', progress=log)
    assert log.getvalue().splitlines() == [f'reusing {len(specs)} finished run(s) from {tmp_path / "dask"}/runs']
    assert [_strip(r) for r in again] == [_strip(r) for r in dask]


# --------------------------------------------------------------------------------------------- failures
class _Dies(Problem):
    """Kills the process that builds its instance (a worker lost mid-run), counting attempts in a file."""

    name = 'test-dies'

    def __init__(self, attempts: str):
        self.attempts = attempts

    def instance(self, seed):
        with open(self.attempts, 'a') as fh:
            fh.write('attempt\n')
        os._exit(3)


@dataclass(frozen=True)
class _Spec:
    """The fields a backend task reads (a :class:`RunSpec` needs its problem registered in the worker)."""

    problem: object
    method: str = 'ei'
    seed: int = 0
    iterations: int = 4
    settings: BenchSettings = field(default_factory=BenchSettings)
    key: str = 'dies'


@pytest.mark.slow
def test_dask_run_lost_with_its_worker_is_retried_once_then_reported(tmp_path):
    from uncertain_bo.benchmarks.backends import execute
    from uncertain_bo.benchmarks.runner import run

    attempts = tmp_path / 'attempts'
    outcomes = list(execute([_Spec(_Dies(str(attempts)))], run, backend='dask', scheduler='local:2'))
    assert attempts.read_text().count('attempt') == 2          # the first try and one retry
    assert len(outcomes) == 1 and outcomes[0].result is None
    assert 'lost on the cluster (KilledWorker' in outcomes[0].error


class _Raises(Problem):
    name = 'test-raises'

    def instance(self, seed):
        raise ValueError('broken objective')


@pytest.fixture
def raising_problem():
    PROBLEMS['test-raises'] = _Raises
    yield 'test-raises'
    del PROBLEMS['test-raises']


def test_a_run_that_raises_is_reported_and_the_others_are_written(tmp_path, raising_problem):
    specs = expand(raising_problem, ['ei'], range(1), 4, [BenchSettings()]) + _specs()[:1]
    log = io.StringIO()
    with pytest.raises(RunsFailed) as info:
        run_many(specs, tmp_path, n_jobs=1, progress=log)
    assert [k for k, _ in info.value.failures] == [specs[0].key]
    assert 'ValueError: broken objective' in info.value.failures[0][1]
    assert f'{specs[0].key}: FAILED' in log.getvalue()
    assert [r['key'] for r in info.value.results] == [specs[1].key]
    assert sorted(p.name for p in (tmp_path / 'runs').iterdir()) == [f'{specs[1].key}.json']
    assert (tmp_path / 'records.csv').read_text().count('\n') == 1 + 6


@pytest.mark.parametrize('flags, message', [
    (['--scheduler', 'local:0'], 'local:N needs a positive number of workers'),
    (['--backend', 'joblib', '--scheduler', 'local:2'], '--scheduler is for --backend dask'),
])
def test_backend_mistakes_exit_2_and_write_nothing(flags, message, tmp_path, capsys):
    out = tmp_path / 'out'
    rc = bench_cli(['bench', '--problem', 'nes-sin', '--method', 'ei', '--seeds', '1', '--iterations', '4',
                    '--out', str(out)] + flags)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and 'Traceback' not in err
    assert not out.exists()

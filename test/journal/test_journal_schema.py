"""The journal's schema (uncertain_bo/journal/schema.py), checked on load: a damaged journal is refused by `report` and
`export` (one `error:` line naming the line, exit 2, nothing written) and resumed by the planner without the damaged
record (skipped, counted, never double-counted; the numbering goes on past every index the journal held).

Before the schema: a reading of 1e300 was reported, exported and resumed as a measurement; a NaN reading made
`report` end in a traceback, `export` write it and the resume drop it silently; a negative covariance made `report`
and `export` end in tracebacks; a duplicated observation was resumed twice (n + 1 measurements) and made `export`
write its CSVs then exit 1 with no `error:` line; an en-route reading of Infinity was accepted; a removed line made
`export` exit 1 with no `error:` line; reordered records went through everywhere.
"""
import json
import math

import numpy as np
import pytest
import torch

from uncertain_bo.cli import main
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.journal.journal import Journal, JournalError
from uncertain_bo.journal.check import check_journal
from uncertain_bo.journal.schema import record_problem
from uncertain_bo.journal.values import MAX_ABS_COORDINATE, MAX_ABS_READING
from uncertain_bo.planning.planner import Planner

BOUNDS = torch.tensor([[0.0, 0.0], [60.0, 40.0]], dtype=torch.float64)
N = 8          # measurements in the journal
MIDDLE = 4     # the measurement (and en-route reading) that gets damaged


def planner(path, **kw):
    return Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3, journal=path, **kw)


def loc(x, y, var=0.09):
    return Gaussian(torch.tensor([[x, y]], dtype=torch.float64), torch.eye(2, dtype=torch.float64)[None] * var)


def write_run(run_dir):
    """A field run as the explorer leaves it (no parameters.json: reported without ground truth): per measurement a
    decision, the observation, an en-route reading taken on the way on, and the recommendation."""
    run_dir.mkdir(parents=True)
    p = planner(run_dir / 'journal.jsonl', metadata={'parameters': {
        'search_bounds': [0.0, 60.0, 0.0, 40.0], 'execution_noise_std': [0.5, 0.5], 'reading_type': 'float64'}})
    rng = np.random.default_rng(0)
    for i in range(N):
        t = [float(rng.uniform(5, 55)), float(rng.uniform(5, 35))]
        p.journal_file.append({'type': 'decision', 'index': i, 'target': t, 'phase': 'initial', 'seconds': 0.1})
        p.observe(torch.tensor(t, dtype=torch.float64), loc(*t), 0.2 + 0.025 * i, reading_variance=0.0004,
                  distance_driven_m=10.0 * i, mission_time_s=30.0 * i)
        p.observe(None, loc(t[0] + 1.0, t[1]), 0.21 + 0.025 * i, reading_variance=0.0004)
        p.journal_file.append({'type': 'recommendation', 'index': i, 'target': t, 'mean': 0.2 + 0.025 * i,
                               'std': 0.01})
    return run_dir


def lines_of(path, kind):
    """1-based line numbers of the records of type ``kind``."""
    return [n for n, text in enumerate(path.read_text().splitlines(), 1) if json.loads(text)['type'] == kind]


def set_field(text, key, value_text):
    rec = json.loads(text)
    rec[key] = '@@'
    return json.dumps(rec).replace('"@@"', value_text)


def damage(path, kind):
    """Damage the journal at ``path`` in the middle; returns the line the damage is reported at."""
    lines = path.read_text().splitlines()
    obs, en_route = lines_of(path, 'observation'), lines_of(path, 'en_route')
    at = obs[MIDDLE]                 # 1-based
    if kind == 'large':
        lines[at - 1] = set_field(lines[at - 1], 'y', '1e300')
    elif kind == 'nan':
        lines[at - 1] = set_field(lines[at - 1], 'y', 'NaN')
    elif kind == 'infinity':
        at = en_route[MIDDLE]
        lines[at - 1] = set_field(lines[at - 1], 'y', 'Infinity')
    elif kind == 'negative_covariance':
        rec = json.loads(lines[at - 1])
        rec['location']['covariance'] = [[-0.09, 0.0], [0.0, 0.09]]
        lines[at - 1] = json.dumps(rec)
    elif kind == 'duplicated':
        lines.insert(at, lines[at - 1])
        at += 1
    elif kind == 'missing':
        del lines[at - 1]               # found at the line after it (the en-route reading that counts it)
    elif kind == 'reordered':
        a, b = obs[MIDDLE], obs[MIDDLE + 1]
        lines[a - 1], lines[b - 1] = lines[b - 1], lines[a - 1]
    path.write_text('\n'.join(lines) + '\n')
    return at


KINDS = ['large', 'nan', 'infinity', 'negative_covariance', 'duplicated', 'missing', 'reordered']


@pytest.fixture(scope='module')
def clean_run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp('clean') / 'run')


def damaged_run(clean_run, tmp_path, kind):
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'journal.jsonl').write_bytes((clean_run / 'journal.jsonl').read_bytes())
    return run, damage(run / 'journal.jsonl', kind)


def test_a_clean_journal_passes_the_schema(clean_run):
    j = Journal(clean_run / 'journal.jsonl', read_only=True)
    assert len(j.observations) == N and len(j.en_route) == N and j.checked.damage == []
    assert j.checked.next_index == N and j.checked.next_en_route_index == N


@pytest.mark.parametrize('kind', KINDS)
def test_report_refuses_a_damaged_journal_in_one_line(clean_run, tmp_path, kind, capsys):
    run, line = damaged_run(clean_run, tmp_path, kind)
    before = sorted(p.name for p in run.iterdir())
    assert main(['report', str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: ') and 'Traceback' not in err[0]
    assert f'journal.jsonl line {line}: ' in err[0] and 'a damaged journal' in err[0]
    assert sorted(p.name for p in run.iterdir()) == before        # no summary.json, no run.png


@pytest.mark.parametrize('kind', KINDS)
def test_export_refuses_a_damaged_journal_before_writing(clean_run, tmp_path, kind, capsys):
    run, line = damaged_run(clean_run, tmp_path, kind)
    before = sorted(p.name for p in run.iterdir())
    assert main(['export', str(run)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: ') and f'journal.jsonl line {line}: ' in err[0]
    assert sorted(p.name for p in run.iterdir()) == before        # no observations.csv, no _en_route.csv


#: kind -> (measurements, en-route readings, records skipped, records missing) after resuming
RESUMED = {'large': (N - 1, N, 1, 0), 'nan': (N - 1, N, 1, 0), 'infinity': (N, N - 1, 1, 0),
           'negative_covariance': (N - 1, N, 1, 0), 'duplicated': (N, N, 1, 0), 'missing': (N - 1, N, 0, 1),
           'reordered': (N, N, 0, 0)}


@pytest.mark.parametrize('kind', KINDS)
def test_resume_skips_the_damaged_record_counts_it_and_never_reuses_an_index(clean_run, tmp_path, kind, caplog):
    run, line = damaged_run(clean_run, tmp_path, kind)
    path = run / 'journal.jsonl'
    p = planner(path)
    n, n_en_route, skipped, missing = RESUMED[kind]
    assert (p.n, p.n_en_route) == (n, n_en_route)
    assert p.journal_damage['records_skipped'] == skipped and p.journal_damage['records_missing'] == missing
    assert p.journal_damage['problems'][0].startswith(f'line {line}: ')
    assert f'line {line}' in caplog.text
    assert torch.isfinite(p.y).all() and (p.y.abs() < 10).all() and torch.isfinite(p.en_route_y).all()
    assert p.next_index == N                # past every index the journal held: none used twice
    # the resumed mission goes on: its next measurement and en-route reading take fresh indices
    assert p.observe(torch.tensor([30.0, 20.0], dtype=torch.float64), loc(30.0, 20.0), 0.5) == N
    assert p.observe(None, loc(31.0, 20.0), 0.5) == N
    again = planner(path)                   # a second restart: the same counts, nothing double-counted
    assert (again.n, again.n_en_route) == (n + 1, n_en_route + 1)
    assert again.journal_damage['records_skipped'] == skipped


@pytest.mark.parametrize('kind', ['large', 'nan', 'infinity', 'negative_covariance', 'duplicated'])
def test_after_a_resume_removing_the_damaged_line_is_a_repair(clean_run, tmp_path, kind):
    """The resume record declares the lost index, so the gap the removed line leaves is not damage any more."""
    run, line = damaged_run(clean_run, tmp_path, kind)
    path = run / 'journal.jsonl'
    planner(path)
    with pytest.raises(JournalError, match=f'line {line}: '):
        Journal(path, read_only=True)      # still there: a report of it would be wrong
    lines = path.read_text().splitlines()
    del lines[line - 1]
    path.write_text('\n'.join(lines) + '\n')
    j = Journal(path, read_only=True)
    assert j.checked.damage == [] and len({r['index'] for r in j.observations}) == len(j.observations)
    assert planner(path).journal_damage['records_skipped'] == 0


def test_a_gap_declared_by_the_resume_record_is_exported_and_reported(clean_run, tmp_path, capsys):
    run, _ = damaged_run(clean_run, tmp_path, 'missing')
    planner(run / 'journal.jsonl')
    assert main(['export', str(run)]) == 0
    assert f'observation indices [{MIDDLE}] were lost' in capsys.readouterr().out
    assert main(['report', str(run)]) == 0
    assert json.loads((run / 'summary.json').read_text())['measurements'] == N - 1


def test_explorer_says_what_the_resume_skipped(clean_run, tmp_path):
    from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer
    from uncertain_bo.reporting.operator_view import StatusReporter
    from uncertain_bo.parameters.specs import validate

    from recording_host import RecordingHost

    run, line = damaged_run(clean_run, tmp_path, 'nan')
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 60.0, 0.0, 40.0], 'max_measurements': 20})
    ex = Explorer(planner(run / 'journal.jsonl'), RecordingHost(), params)
    result = ex.result(None)['journal_damage']
    assert result['records_skipped'] == 1 and result['problems'][0].startswith(f'line {line}: observation')
    values = dict(StatusReporter().report(ex, None).values)
    assert values['journal records skipped (damaged)'] == '1' and values['journal records missing'] == '0'


@pytest.mark.parametrize('record, problem', [
    ({'type': 'observation', 'index': 0, 'target': [1.0, 2.0], 'location': {'kind': 'dirac', 'mean': [1.0, 2.0]},
      'y': 2e12}, "observation 'y' (the reading) is 2e+12, beyond ±1e+12"),
    ({'type': 'observation', 'index': -1, 'target': [1.0, 2.0], 'location': {'kind': 'dirac', 'mean': [1.0, 2.0]},
      'y': 1.0}, "observation 'index' is -1, below 0"),
    ({'type': 'observation', 'index': 0, 'target': [1.0, 2.0], 'location': {'kind': 'dirac', 'mean': [1.0, 2.0]},
      'y': True}, "observation 'y' (the reading) is True, not a number"),
    ({'type': 'en_route', 'index': 0, 'measurements': 0, 'location': {'kind': 'dirac', 'mean': [1.0, 2e7]},
      'y': 1.0}, "en_route 'location' mean is 2e+07, beyond ±1e+07"),
    ({'type': 'decision', 'index': 0, 'target': [1.0, 2.0], 'batch': {'size': 2, 'position': 2}},
     "decision 'batch' position 2 is not below its size 2"),
    ({'type': 'keep_out', 'index': 0, 'centre': [1.0, 2.0], 'radius': 0.0}, "keep_out 'radius' is 0, not > 0"),
    ({'type': 'recommendation', 'index': 0, 'target': [1.0, 2.0], 'mean': math.nan, 'std': 0.1},
     "recommendation 'mean' is NaN"),
    ({'type': 'recommendation', 'index': 0, 'target': [1.0, 2.0], 'mean': 1.0, 'std': 0.1,
      'location_covariance': [[1.0, 2.0], [2.0, 1.0]]},
     "recommendation 'location_covariance' is not positive semi-definite"),
    ({'type': 'recommendation', 'index': 0, 'target': [1.0, 2.0], 'mean': 1.0, 'std': 0.1,
      'location_mean': [1.0, 2.0, 3.0]}, "'location_mean' has 3 coordinates, the journal 2"),
    ({'index': 0}, 'record has no type'),
    ({'type': 'decision', 'index': 0, 'target': [1.0, 2.0], 'rover': 3}, "decision 'rover' is 3"),
    ({'type': 'observation', 'index': 0, 'target': [1.0, 2.0], 'location': {'kind': 'dirac', 'mean': [1.0, 2.0]},
      'y': 1.0, 'rover': 'rover0', 'seq': -2}, "observation 'seq' is -2, below 0"),
    ({'type': 'observation', 'index': 0, 'target': [1.0, 2.0, 3.0],
      'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': 1.0}, "'target' has 3 coordinates, the journal 2"),
])
def test_record_problems_are_named(record, problem):
    assert problem in record_problem(record, dim=2)


def test_unknown_record_types_and_extra_fields_are_kept():
    """Forward compatibility: a later writer of version 1 may add a record type or a field."""
    header = {'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1}
    recs = [(2, {'type': 'weather', 'wind': 'NaN is fine here'}),
            (3, {'type': 'observation', 'index': 0, 'target': [1.0, 2.0],
                 'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': 1.0, 'soil': {'ph': 6.5}})]
    checked = check_journal(header, recs)
    assert checked.damage == [] and [r['type'] for r in checked.records] == ['weather', 'observation']


def test_the_limits_are_the_explorers():
    from uncertain_bo.explorer import MAX_ABS_COORDINATE as explorer_coordinate
    from uncertain_bo.explorer import MAX_ABS_READING as explorer_reading
    assert (MAX_ABS_READING, MAX_ABS_COORDINATE) == (explorer_reading, explorer_coordinate)


def test_a_mission_journal_passes_and_its_restart_skips_a_damaged_reading(tmp_path, capsys):
    """The in-process mission (explorer, EKF, pure pursuit; en_route_spacing on): its journal passes the schema; an
    en-route reading of Infinity in it is refused by export, and the restarted mission goes on without it, saying so
    in explorer_result.json, with every index once."""
    from uncertain_bo.sim.mission import Mission, mission_parameters

    def params(n):
        start = {'initial_x': 30.0, 'initial_y': 30.0}
        return mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
                                   'ekf': start, 'explorer': {'max_measurements': n, 'n_initial': 4,
                                                              'en_route_spacing': 3.0}})

    path, result = tmp_path / 'journal.jsonl', tmp_path / 'explorer_result.json'
    Mission(params(4), journal=path, result_file=result).run(max_sim_time=3000.0)
    j = Journal(path, read_only=True)
    assert j.checked.damage == [] and len(j.observations) == 4 and len(j.en_route) > 4
    en_route = lines_of(path, 'en_route')
    line = en_route[len(en_route) // 2]
    lines = path.read_text().splitlines()
    lines[line - 1] = set_field(lines[line - 1], 'y', 'Infinity')
    path.write_text('\n'.join(lines) + '\n')
    assert main(['export', str(tmp_path)]) == 2 and f'line {line}: en_route' in capsys.readouterr().err
    assert not (tmp_path / 'observations.csv').exists()

    Mission(params(6), journal=path, result_file=result).run(max_sim_time=3000.0)
    damage = json.loads(result.read_text())['journal_damage']
    assert damage['records_skipped'] == 1 and damage['problems'][0].startswith(f"line {line}: en_route 'y'")
    records = [json.loads(t) for t in path.read_text().splitlines()]
    for kind in ('observation', 'en_route'):
        indices = [r['index'] for r in records if r['type'] == kind]
        assert len(indices) == len(set(indices))          # the skipped reading's index is not used again
    assert [r['index'] for r in records if r['type'] == 'observation'] == list(range(6))


def test_a_duplicate_with_another_reading_is_skipped_and_the_first_kept(clean_run, tmp_path, capsys):
    run = tmp_path / 'run'
    run.mkdir()
    path = run / 'journal.jsonl'
    path.write_bytes((clean_run / 'journal.jsonl').read_bytes())
    lines = path.read_text().splitlines()
    at = lines_of(path, 'observation')[MIDDLE]
    first_y = json.loads(lines[at - 1])['y']
    lines.append(set_field(lines[at - 1], 'y', '99.5'))        # index MIDDLE again, at the end, another reading
    path.write_text('\n'.join(lines) + '\n')
    assert main(['export', str(run)]) == 2
    assert f'observation index {MIDDLE} repeats line {at} (different contents; the first is kept)' in \
        capsys.readouterr().err
    p = planner(path)
    assert p.n == N and p.journal_damage['records_skipped'] == 1
    assert first_y in p.y.tolist() and 99.5 not in p.y.tolist()

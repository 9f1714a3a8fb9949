"""Revisions in the journal: append-only ``revision`` records, checked by the schema (a revision of a reading not stored
before it, one out of stamp order, a non-PSD or non-finite covariance: damage, an error for report and export,
skipped and counted on resume), replayed on resume (the last accepted revision of each reading), and a run's journal
cut at any point (a SIGKILL) resumes with every reading stored once."""
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from uncertain_bo.cli import main
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.journal.journal import Journal, JournalError, location_from_record
from uncertain_bo.planning.planner import LocationRevision, Planner

BOUNDS = torch.tensor([[0.0, 0.0], [60.0, 40.0]], dtype=DTYPE)


def planner(path, **kw):
    return Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3, refit_every=0, journal=path,
                   metadata={'parameters': {'search_bounds': [0.0, 60.0, 0.0, 40.0], 'execution_noise_std': [0.5, 0.5],
                                            'reading_type': 'float64'}}, **kw)


def loc(x, y, var=0.09):
    return Gaussian(torch.tensor([[x, y]], dtype=DTYPE), torch.eye(2, dtype=DTYPE)[None] * var)


def write_run(path, n=5):
    """Per step: a measurement, an en-route reading, and revisions of earlier readings (some revised twice)."""
    p = planner(path)
    for i in range(n):
        t = [5.0 + 10 * i, 5.0 + 6 * i]
        p.observe(torch.tensor(t, dtype=DTYPE), loc(t[0] + 0.5, t[1]), 0.1 * i, 0.01, reading_stamp=10.0 * i,
                  pose_stamp=10.0 * i)
        p.observe(None, loc(t[0] + 3, t[1] + 1), 0.1 * i + 0.05, 0.01, reading_stamp=10.0 * i + 5,
                  pose_stamp=10.0 * i + 5)
        stamp = 10.0 * i + 6
        revs = [LocationRevision(('observation', i), loc(t[0], t[1] + 0.2, 0.01), stamp, 'test'),
                LocationRevision(('en_route', i), loc(t[0] + 2.5, t[1] + 1, 0.02), stamp)]
        if i:
            revs.append(LocationRevision(('observation', i - 1), loc(t[0] - 10, t[1] - 6, 0.005), stamp))
        assert not p.revise(revs).rejected
    return p


def expected_locations(records):
    """(kind, index) -> mean of its last revision in ``records``, else its own, for the readings they hold."""
    out = {}
    for r in records:
        if r['type'] in ('observation', 'en_route'):
            out[(r['type'], r['index'])] = r['location']['mean']
        elif r['type'] == 'revision':
            out[(r['revises'], r['index'])] = r['location']['mean']
    return out


def held(p):
    return {r.key: row[1].mean[0].tolist() for r, row in zip(p.readings, p.observations.rows)}


def test_revisions_are_journaled_append_only_and_replayed_on_resume(tmp_path):
    path = tmp_path / 'journal.jsonl'
    p = write_run(path)
    records = [json.loads(line) for line in path.read_text().splitlines()][1:]
    revisions = [r for r in records if r['type'] == 'revision']
    assert len(revisions) == 14 and {r['revises'] for r in revisions} == {'observation', 'en_route'}
    first = next(r for r in records if r['type'] == 'observation' and r['index'] == 0)
    assert first['location']['mean'] == [5.5, 5.0]             # the reading's record keeps where it was taken
    resumed = planner(path)
    assert held(resumed) == held(p) == expected_locations(records)
    assert resumed.revisions_applied == 14 and resumed.journal_damage['records_skipped'] == 0
    assert resumed.revision_stamp('observation', 0) == 16.0
    # the resumed planner knows the last revision's stamp: an older one is still out of order
    out = resumed.revise([LocationRevision(('observation', 0), loc(1.0, 1.0), 15.0)])
    assert out.rejected == {'out of order': 1}
    X = torch.tensor([[10.0, 10.0], [40.0, 30.0]], dtype=DTYPE)
    assert torch.allclose(resumed.predict(X)[0], p.predict(X)[0], rtol=0, atol=1e-9)


def _lines(path):
    return path.read_bytes().split(b'\n')[:-1]


def test_a_journal_cut_at_any_point_resumes_every_reading_once_with_its_last_revision(tmp_path):
    """A SIGKILL leaves a prefix of the journal's lines, the last possibly torn: every cut resumes with each reading
    it holds stored once, at its last revision the prefix holds, and the run goes on without damage."""
    full = tmp_path / 'full.jsonl'
    write_run(full, n=4)
    lines = _lines(full)
    cuts = [(k, b'\n'.join(lines[:k]) + b'\n') for k in range(1, len(lines) + 1)]
    cuts += [(k, b'\n'.join(lines[:k]) + b'\n' + lines[k][:len(lines[k]) // 2]) for k in range(1, len(lines))]  # torn
    for i, (k, data) in enumerate(cuts):
        path = tmp_path / f'cut{i}.jsonl'
        path.write_bytes(data)
        kept = [json.loads(line) for line in lines[1:k]]
        p = planner(path)
        want = expected_locations(kept)
        assert held(p) == want, f'cut {i}'
        assert len(p.readings) == len({r.key for r in p.readings}) == len(want)       # each once
        assert p.journal_damage == {'records_skipped': 0, 'records_missing': 0, 'problems': []}
        p.observe(None, loc(30.0, 20.0), 1.0, reading_stamp=1e3, pose_stamp=1e3)      # the run goes on
        if p.n:
            assert p.revise([LocationRevision(('observation', 0), loc(6.0, 5.0), 2e3)]).applied
        again = Journal(path, read_only=True)                                           # strict: no damage
        assert len(again.observations) == p.n and len(again.en_route) == p.n_en_route


CHILD = textwrap.dedent('''
    import sys, torch
    sys.path.insert(0, {root!r})
    from test_journal_revisions import planner, loc
    from uncertain_bo.planning.planner import LocationRevision
    p = planner({path!r})
    i = p.n
    while True:
        p.observe(torch.tensor([1.0 + i % 50, 2.0], dtype=torch.float64), loc(1.5 + i % 50, 2.0), 0.1 * i,
                  reading_stamp=float(i), pose_stamp=float(i))
        p.revise([LocationRevision(('observation', j), loc(1.0 + j % 50, 2.5 + 0.001 * i), i + 0.5)
                  for j in range(max(0, p.next_index - 3), p.next_index)])
        i += 1
''')


@pytest.mark.slow
def test_sigkill_mid_run_and_resume_store_every_reading_once(tmp_path):
    """A child process observing and revising is killed (SIGKILL) twice, the second time after resuming the first's
    journal."""
    path = tmp_path / 'journal.jsonl'
    code = CHILD.format(root=os.path.dirname(__file__), path=str(path))
    for round_ in range(2):
        child = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        before = path.read_bytes().count(b'\n') if path.exists() else 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not path.exists() or path.read_bytes().count(b'\n') < before + 25):
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert path.read_bytes().count(b'\n') >= before + 25, child.stderr.read().decode()[-2000:]
    p = planner(path)
    records = [json.loads(line) for line in path.read_text().splitlines()][1:]   # whole lines: the resume cut the tail
    indices = [r['index'] for r in records if r['type'] == 'observation']
    assert indices == list(range(len(indices))) and p.n == len(indices)                # each once, none lost
    assert held(p) == expected_locations(records)
    assert p.journal_damage['records_skipped'] == 0


def _journal_with(tmp_path, extra_lines, after=None):
    """A valid journal with ``extra_lines`` (records) inserted after the first record ``after(record)`` accepts
    (default: appended); returns its path and the first inserted line's number."""
    path = tmp_path / 'journal.jsonl'
    write_run(path, n=2)
    lines = path.read_text().splitlines()
    at = len(lines) if after is None else next(i for i, s in enumerate(lines, 1) if after(json.loads(s)))
    run_id = json.loads(lines[0])['run_id']
    lines[at:at] = [json.dumps({**r, 'run_id': run_id}) if isinstance(r, dict) else r for r in extra_lines]
    path.write_text('\n'.join(lines) + '\n')
    return path, at + 1


def _revision(index=0, stamp=100.0, cov=((0.1, 0.0), (0.0, 0.1)), revises='observation', mean=(4.0, 4.0)):
    return {'type': 'revision', 'revises': revises, 'index': index, 'stamp': stamp,
            'location': {'kind': 'gaussian', 'mean': list(mean), 'covariance': [list(r) for r in cov]}}


@pytest.mark.parametrize('record, message', [
    (_revision(index=7), 'no such reading before it'),
    (_revision(revises='en_route', index=5), 'no such reading before it'),
    (_revision(stamp=3.0), 'out of order'),                  # older than the revisions the journal has
    (_revision(cov=((1.0, 2.0), (2.0, 1.0))), 'not positive semi-definite'),
    (_revision(cov=((math.nan, 0.0), (0.0, 1.0))), 'NaN'),
    (_revision(mean=(math.inf, 1.0)), 'Infinity'),
    (_revision(mean=(9e5, 1.0)), 'outside the search area'),
    ({**_revision(), 'revises': 'measurement'}, "not 'observation' or 'en_route'"),
    ({**_revision(), 'stamp': 'soon'}, 'not a number'),
])
def test_a_damaged_revision_is_an_error_for_export_and_skipped_and_counted_on_resume(tmp_path, capsys, record, message):
    path, line = _journal_with(tmp_path, [record])
    with pytest.raises(JournalError, match=f'line {line}: .*{message}'):
        Journal(path, read_only=True)
    assert main(['export', str(path), '--csv', str(tmp_path / 'out.csv')]) == 2
    assert f'line {line}' in capsys.readouterr().err and not (tmp_path / 'out.csv').exists()
    p = planner(path)
    assert p.journal_damage['records_skipped'] == 1 and message in p.journal_damage['problems'][0]
    assert held(p) == expected_locations([json.loads(s) for s in path.read_text().splitlines()[1:line - 1]])


def test_a_revision_written_before_its_reading_is_damage(tmp_path):
    """Out of file order: a revision of observation 1 placed before observation 1's record."""
    path = tmp_path / 'journal.jsonl'
    write_run(path, n=2)
    lines = path.read_text().splitlines()
    recs = [json.loads(s) for s in lines]
    obs1 = next(i for i, r in enumerate(recs) if r['type'] == 'observation' and r['index'] == 1)
    rev = next(i for i, r in enumerate(recs) if r['type'] == 'revision' and r['index'] == 1
               and r['revises'] == 'observation')
    lines.insert(obs1, lines.pop(rev))
    path.write_text('\n'.join(lines) + '\n')
    with pytest.raises(JournalError, match=f'line {obs1 + 1}: revision of observation 1: no such reading'):
        Journal(path, read_only=True)
    assert planner(path).journal_damage['records_skipped'] == 1


def test_a_revision_stamped_before_the_pose_it_revises_is_damage(tmp_path):
    path, line = _journal_with(tmp_path, [_revision(revises='en_route', index=1, stamp=14.0)],   # its pose: 15 s
                               after=lambda r: r['type'] == 'en_route' and r['index'] == 1)
    with pytest.raises(JournalError, match=f'line {line}: .*before the pose estimate it would revise'):
        Journal(path, read_only=True)


def test_a_repeated_revision_line_counts_once(tmp_path):
    path = tmp_path / 'journal.jsonl'
    write_run(path, n=2)
    lines = path.read_text().splitlines()
    last_rev = max(i for i, s in enumerate(lines) if json.loads(s)['type'] == 'revision')
    lines.append(lines[last_rev])                      # delivered twice (a journal appended to itself)
    path.write_text('\n'.join(lines) + '\n')
    p = planner(path)
    assert p.journal_damage['records_skipped'] == 1 and 'not after' in p.journal_damage['problems'][0]
    assert p.revisions_applied == 5


def test_export_writes_the_revised_location_beside_the_one_taken(tmp_path):
    run = tmp_path / 'run'
    write_run(run / 'journal.jsonl', n=3)
    assert main(['export', str(run)]) == 0
    import csv
    rows = list(csv.DictReader(open(run / 'observations.csv')))
    records = [json.loads(s) for s in (run / 'journal.jsonl').read_text().splitlines()[1:]]
    want = expected_locations(records)
    for row in rows:
        i = int(row['index'])
        taken = next(r for r in records if r['type'] == 'observation' and r['index'] == i)['location']['mean']
        assert [float(row['mean_0']), float(row['mean_1'])] == taken
        assert [float(row['revised_mean_0']), float(row['revised_mean_1'])] == want[('observation', i)]
        assert int(row['revisions']) == (1 if i == 2 else 2) and float(row['revision_stamp']) > 0
        revised = location_from_record(
            [r for r in records if r['type'] == 'revision' and r['revises'] == 'observation' and r['index'] == i][-1]
            ['location'])
        assert float(row['revised_cov_00']) == float(revised.covariance[0, 0, 0])
    en_route = list(csv.DictReader(open(run / 'observations_en_route.csv')))
    assert [float(en_route[0]['revised_mean_0']), float(en_route[0]['revised_mean_1'])] == want[('en_route', 0)]


def test_report_places_each_reading_where_its_last_revision_does_and_draws_where_it_was_taken(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    from uncertain_bo.reporting import run_report

    run = tmp_path / 'run'
    write_run(run / 'journal.jsonl', n=3)
    records = [json.loads(s) for s in (run / 'journal.jsonl').read_text().splitlines()[1:]]
    want = expected_locations(records)
    drawn = []
    original = run_report.draw_revisions
    monkeypatch.setattr(run_report, 'draw_revisions', lambda ax, journal, **kw: drawn.append(ax) or original(
        ax, journal, **kw))
    assert main(['report', str(run)]) == 0
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['readings_revised'] == 6 and summary['revisions'] == 8
    for row in summary['per_measurement']:
        taken = next(r for r in records if r['type'] == 'observation' and r['index'] == row['index'])
        assert row['location_mean'] == want[('observation', row['index'])]
        assert row['location_mean_as_taken'] == taken['location']['mean']
    assert (run / 'run.png').is_file() and len(drawn) == 1
    segments = [c for c in drawn[0].collections if isinstance(c, LineCollection)][0].get_segments()
    taken = {(r['type'], r['index']): r['location']['mean'] for r in records if r['type'] in ('observation',
                                                                                              'en_route')}
    assert sorted(map(lambda s: s.tolist(), segments)) == sorted([taken[k], want[k]] for k in taken)
    plt.close('all')


def test_a_batch_of_revisions_is_one_write_held_whole_on_a_full_disk_and_written_once(tmp_path, monkeypatch):
    from faulty_disk import FaultyDisk

    path = tmp_path / 'run' / 'journal.jsonl'
    p = write_run(path, n=3)
    disk = FaultyDisk(monkeypatch, tmp_path / 'run')
    disk.free = 300                                       # a line or so fits: the batch is cut back, held whole
    revs = [LocationRevision(r.key, loc(10.0, 10.0 + i, 0.01), 500.0) for i, r in enumerate(p.readings)]
    assert len(p.revise(revs).applied) == 6               # applied while the journal holds them
    assert p.journal_file.fault and p.journal_file.held == 6
    assert Journal(path, read_only=True).revisions.get(('observation', 0))[-1]['stamp'] < 500.0
    disk.free = None
    assert p.journal_file.retry() and p.journal_file.held == 0
    resumed = planner(path)
    assert held(resumed) == held(p) and resumed.journal_damage['records_skipped'] == 0
    assert sum(r['type'] == 'revision' and r['stamp'] == 500.0 for r in resumed.journal_file.records) == 6


def test_a_survey_map_of_the_journal_places_each_reading_at_its_last_revision(tmp_path):
    pytest.importorskip('pyproj')   # the geo extra: the survey's coordinates
    from uncertain_bo.survey_map.sources import read_journal_survey

    path = tmp_path / 'journal.jsonl'
    write_run(path, n=3)
    records = [json.loads(s) for s in path.read_text().splitlines()[1:]]
    want = expected_locations(records)
    order = [(r['type'], r['index']) for r in records if r['type'] in ('observation', 'en_route')]
    survey = read_journal_survey(path)
    assert survey.xy.tolist() == [want[k] for k in order]

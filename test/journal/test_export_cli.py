"""``uncertain-bo export RUN_DIR [--csv PATH]``: CSV of a run's journal, read-only."""
import csv
import json

import torch

from uncertain_bo.cli import main
from uncertain_bo.distributions import Gaussian
from uncertain_bo.journal.journal import Journal, location_to_record


def write_run(run_dir, n=3, torn=False):
    j = Journal(run_dir / 'journal.jsonl', metadata={'method': 'ugp_ucb'})
    for i in range(n):
        j.append({'type': 'decision', 'index': i, 'target': [float(i), 1.0]})
        j.append({'type': 'observation', 'index': i, 'target': [float(i), 1.0],
                  'location': location_to_record(Gaussian(torch.tensor([[i + 0.1, 0.9]]), torch.eye(2) * 0.2)),
                  'y': 10.0 + i, 'reading_stamp': 1.0 + i})
    if torn:
        with open(run_dir / 'journal.jsonl', 'ab') as fh:
            fh.write(b'{"type":"observation","index":3,"tar')


def test_export_writes_csv_and_summary(tmp_path, capsys):
    write_run(tmp_path)
    assert main(['export', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '3 observations, 3 decisions' in out and 'not finished' in out
    rows = list(csv.DictReader(open(tmp_path / 'observations.csv')))
    assert [r['index'] for r in rows] == ['0', '1', '2']
    assert float(rows[2]['y']) == 12.0 and float(rows[0]['cov_00']) == 0.2 and rows[0]['kind'] == 'gaussian'
    assert float(rows[1]['reading_stamp']) == 2.0


def test_export_is_read_only_and_reports_a_torn_tail(tmp_path, capsys):
    write_run(tmp_path, torn=True)
    (tmp_path / 'explorer_result.json').write_text(json.dumps({'measurements': 3}))
    before = (tmp_path / 'journal.jsonl').read_bytes()
    target = tmp_path / 'out'
    target.mkdir()
    assert main(['export', str(tmp_path / 'journal.jsonl'), '--csv', str(target / 'o.csv')]) == 0
    out = capsys.readouterr().out
    assert '1 torn last record skipped' in out and 'run finished' in out
    assert (tmp_path / 'journal.jsonl').read_bytes() == before       # a running explorer may own the tail
    assert len(list(csv.DictReader(open(target / 'o.csv')))) == 3


def test_export_of_a_missing_run_is_an_error(tmp_path, capsys):
    assert main(['export', str(tmp_path / 'nothing')]) == 2
    assert 'no journal' in capsys.readouterr().err

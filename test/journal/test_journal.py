import json

import pytest
import torch

from uncertain_bo.distributions import Dirac, Empirical, Gaussian
from uncertain_bo.journal.journal import Journal, JournalError, location_from_record, location_to_record


def obs(i):
    return {'type': 'observation', 'index': i, 'target': [float(i), 0.0],
            'location': location_to_record(Gaussian(torch.tensor([[i, 0.5]]), torch.eye(2) * 0.1)),
            'y': 10.0 + i, 'stamp': 1.5 * i}


def test_round_trip_locations():
    for loc in [Dirac(torch.tensor([[1.0, 2.0]])),
                Gaussian(torch.tensor([[1.0, 2.0]]), torch.tensor([[2.0, 0.3], [0.3, 1.0]])),
                Empirical(torch.randn(1, 5, 2), torch.rand(1, 5) + 0.1)]:
        back = location_from_record(json.loads(json.dumps(location_to_record(loc))))
        assert type(back) is type(loc)
        assert torch.allclose(back.mean, loc.mean) and torch.allclose(back.covariance, loc.covariance)


def test_torn_last_record_is_skipped_and_truncated(tmp_path, caplog):
    path = tmp_path / 'j.jsonl'
    j = Journal(path)
    for i in range(3):
        j.append(obs(i))
    with open(path, 'ab') as fh:  # a crash in the middle of writing record 3
        fh.write(json.dumps(obs(3)).encode()[:40])
    j2 = Journal(path)
    assert [r['index'] for r in j2.observations] == [0, 1, 2]
    assert j2.skipped == 1 and 'torn' in caplog.text
    j2.append(obs(3))
    assert [r['index'] for r in Journal(path).observations] == [0, 1, 2, 3]


def test_a_damaged_middle_line_is_skipped_on_resume_and_an_error_read_only(tmp_path):
    """A line that holds no record in the middle (issue 31: it stopped the resume, though the docs say damaged
    records are skipped and counted): resuming skips and counts it, a report or an export refuses the journal."""
    path = tmp_path / 'j.jsonl'
    j = Journal(path)
    for i in range(3):
        j.append(obs(i))
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:10]
    path.write_text('\n'.join(lines) + '\n')
    with pytest.raises(JournalError, match='line 3: line is not a journal record'):
        Journal(path, read_only=True)
    resumed = Journal(path)
    assert [r['index'] for r in resumed.observations] == [0, 2]
    assert resumed.checked.skipped == 1 and resumed.checked.damage[0].line == 3
    assert resumed.checked.next_index == 3      # the unreadable line's index is never used again
    assert path.read_text().splitlines()[2] == lines[2]    # left as it is: not truncated, not rewritten


def test_newer_version_and_foreign_files_are_refused(tmp_path):
    p = tmp_path / 'new.jsonl'
    p.write_text(json.dumps({'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 99}) + '\n')
    with pytest.raises(JournalError, match='upgrade'):
        Journal(p)
    q = tmp_path / 'other.jsonl'
    q.write_text('{"hello": 1}\n')
    with pytest.raises(JournalError, match='not an uncertain_bo.journal.journal'):
        Journal(q)


def test_nan_is_not_written(tmp_path):
    j = Journal(tmp_path / 'j.jsonl')
    rec = obs(0)
    rec['y'] = float('nan')
    with pytest.raises(ValueError):
        j.append(rec)
    assert Journal(tmp_path / 'j.jsonl').observations == []


def test_csv_export(tmp_path):
    j = Journal(tmp_path / 'j.jsonl')
    for i in range(2):
        j.append(obs(i))
    text = j.export_csv(tmp_path / 'o.csv').read_text().splitlines()
    assert text[0].startswith('index,target_0,target_1,mean_0,mean_1,cov_00')
    assert 'stamp' in text[0] and len(text) == 3


def test_complete_last_record_without_newline_is_kept(tmp_path, caplog):
    path = tmp_path / 'j.jsonl'
    j = Journal(path)
    j.append(obs(0))
    j.append(obs(1))
    path.write_bytes(path.read_bytes()[:-1])               # killed between the record and its newline
    ro = Journal(path, read_only=True)
    assert [r['index'] for r in ro.observations] == [0, 1] and ro.skipped == 0
    assert not path.read_bytes().endswith(b'\n')           # read-only: untouched
    j2 = Journal(path)
    assert [r['index'] for r in j2.observations] == [0, 1] and j2.skipped == 0 and 'torn' not in caplog.text
    j2.append(obs(2))
    assert [r['index'] for r in Journal(path, read_only=True).observations] == [0, 1, 2]

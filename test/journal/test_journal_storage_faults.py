"""Journal storage faults (issue 20 item 1): a full disk, EIO, EFBIG, a read-only or vanished run folder.

The journal never raises them from ``append``: unwritten records are held in memory in order and written exactly
once when the disk takes them again; a failed write is cut back so no torn line stays. Faults are injected by
wrapping ``os.open``/``os.write``/``os.fsync``/``os.ftruncate`` for the files under the test's folder, and made
real in a subprocess whose file-size limit (``RLIMIT_FSIZE``, SIGXFSZ ignored) turns writes past it into EFBIG.
"""
import errno
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.journal.journal import Journal, JournalError
from uncertain_bo.planning.planner import Planner

from faulty_disk import FaultyDisk

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]])


def measure(planner, i):
    """Observation ``i``: target (i/2, 1), a Gaussian location near it, reading 10 + i."""
    loc = Gaussian(torch.tensor([[0.5 * i + 0.1, 1.1]]), torch.eye(2)[None] * 0.1)
    return planner.observe(torch.tensor([0.5 * i, 1.0]), loc, 10.0 + i, reading_stamp=float(i))


def lines_on_disk(path):
    """Every line of the file parsed (raises on a torn or damaged line, or a missing final newline)."""
    data = path.read_bytes()
    assert data.endswith(b'\n'), f'torn tail: {data[-60:]!r}'
    return [json.loads(line) for line in data.split(b'\n')[:-1]]


def observation_indices(path):
    return [r['index'] for r in lines_on_disk(path) if r.get('type') == 'observation']


def assert_reload_equals(path, planner):
    back = Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), journal=path)
    assert back.n == planner.n
    assert torch.equal(back.y, planner.y) and torch.equal(back.targets, planner.targets)
    assert torch.equal(back.locations.mean, planner.locations.mean)
    assert torch.equal(back.locations.covariance, planner.locations.covariance)


def new_planner(path):
    return Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), journal=path)


def test_enospc_mid_mission_holds_records_then_writes_each_once_in_order(tmp_path, monkeypatch):
    path = tmp_path / 'run' / 'journal.jsonl'
    planner = new_planner(path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    for i in range(3):
        measure(planner, i)
    disk.free = 100                      # the next record is written in part, then the disk is full
    for i in range(3, 7):
        assert measure(planner, i) == i  # no exception: the measurement is in the planner
    journal = planner.journal_file
    assert planner.n == 7
    assert journal.fault.startswith('journal not writable: [Errno 28] No space left on device')
    assert str(path) in journal.fault
    assert journal.held == 4 and journal.faults == 1 and journal.write_failures == 4
    assert observation_indices(path) == [0, 1, 2]       # the partial write was cut back: no torn line
    assert disk.calls['write'] >= 2                     # a part of record 3 did reach the file before the cut
    assert not journal.retry() and journal.write_failures == 5 and journal.faults == 1
    disk.heal()
    assert measure(planner, 7) == 7
    assert journal.fault is None and journal.held == 0 and journal.faults == 1
    assert observation_indices(path) == list(range(8))
    assert_reload_equals(path, planner)


def test_explicit_retry_writes_the_held_records(tmp_path, monkeypatch):
    path = tmp_path / 'journal.jsonl'
    planner = new_planner(path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    measure(planner, 0)
    disk.free = 0
    measure(planner, 1)
    measure(planner, 2)
    assert planner.journal_file.held == 2
    disk.heal()
    assert planner.journal_file.retry() and planner.journal_file.held == 0
    assert planner.journal_file.retry()                 # nothing held: nothing written twice
    assert observation_indices(path) == [0, 1, 2]
    assert_reload_equals(path, planner)


def test_failed_fsync_and_failed_cut_leave_nothing_duplicated(tmp_path, monkeypatch):
    """EIO from fsync after the whole line was written, and the cut back fails too: the line stays on disk for
    now, but the next attempt cuts it first, so the record is on disk once."""
    path = tmp_path / 'journal.jsonl'
    planner = new_planner(path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    measure(planner, 0)
    disk.fail_fsync = disk.fail_truncate = True
    measure(planner, 1)
    assert 'Input/output error' in planner.journal_file.fault and planner.journal_file.held == 1
    assert observation_indices(path) == [0, 1]          # the uncut line (a crash now would keep it once)
    disk.heal()
    measure(planner, 2)
    assert observation_indices(path) == [0, 1, 2]
    assert_reload_equals(path, planner)


def test_a_torn_line_left_by_a_failed_cut_is_refused_by_the_reader_and_cut_before_the_next_write(
        tmp_path, monkeypatch):
    path = tmp_path / 'journal.jsonl'
    planner = new_planner(path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    measure(planner, 0)
    disk.free, disk.fail_truncate = 50, True
    measure(planner, 1)
    assert not path.read_bytes().endswith(b'\n')        # 50 bytes of record 1 stay: the cut failed
    reader = Journal(path, read_only=True)              # what a crash now would leave: the torn line is refused
    assert [r['index'] for r in reader.observations] == [0] and reader.skipped == 1
    disk.heal()
    measure(planner, 2)
    assert observation_indices(path) == [0, 1, 2]
    assert_reload_equals(path, planner)


def test_read_only_run_folder_holds_records_until_writable(tmp_path, monkeypatch):
    path = tmp_path / 'journal.jsonl'
    planner = new_planner(path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    measure(planner, 0)
    disk.fail_open = errno.EROFS
    measure(planner, 1)
    planner.add_keep_out(torch.tensor([5.0, 5.0]), 1.0, 'test')
    measure(planner, 2)
    journal = planner.journal_file
    assert 'Read-only file system' in journal.fault and journal.held == 3
    disk.heal()
    assert journal.retry()
    records = lines_on_disk(path)[1:]
    assert [r['type'] for r in records] == ['observation', 'observation', 'keep_out', 'observation']
    assert records == journal.records
    assert_reload_equals(path, planner)


def test_vanished_run_folder_and_vanished_file(tmp_path):
    run = tmp_path / 'run'
    path = run / 'journal.jsonl'
    planner = new_planner(path)
    measure(planner, 0)
    run.rename(tmp_path / 'away')                       # the disk was unmounted
    measure(planner, 1)
    journal = planner.journal_file
    assert 'No such file or directory' in journal.fault and journal.held == 1
    assert not run.exists()                             # not recreated: that would hide the missing disk
    (tmp_path / 'away').rename(run)                     # mounted again
    measure(planner, 2)
    assert journal.fault is None and observation_indices(path) == [0, 1, 2]
    path.unlink()                                       # the file alone vanished: written again from memory
    measure(planner, 3)
    assert journal.fault is None and observation_indices(path) == [0, 1, 2, 3]
    assert lines_on_disk(path)[0] == journal.header
    assert_reload_equals(path, planner)


def test_a_journal_that_cannot_be_created_is_a_clear_error(tmp_path):
    (tmp_path / 'file').write_text('x')
    with pytest.raises(JournalError, match='cannot write the journal'):
        Journal(tmp_path / 'file' / 'journal.jsonl')


CHILD = textwrap.dedent('''
    import json, os, resource, signal, sys
    import torch
    from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
    from uncertain_bo.planning.planner import Planner

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past the limit fail with EFBIG instead of killing
    path = sys.argv[1]
    planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      journal=path)
    journal = planner.journal_file

    def measure(i):
        loc = Gaussian(torch.tensor([[0.5 * i + 0.1, 1.1]]), torch.eye(2)[None] * 0.1)
        planner.observe(torch.tensor([0.5 * i, 1.0]), loc, 10.0 + i, reading_stamp=float(i))

    for i in range(3):
        measure(i)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = os.path.getsize(path) + 700             # room for about two more records: the disk is full
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    full = []
    for i in range(3, 9):
        measure(i)
        full.append({'fault': getattr(journal, 'fault', None), 'held': getattr(journal, 'held', 0)})
    data = open(path, 'rb').read()
    out = {'limit': limit, 'size_full': len(data), 'full': full, 'tail_full': data[-1:].decode(),
           'lines_full': [json.loads(line)['type'] for line in data.split(b'\\n')[:-1]]}
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))   # space again
    measure(9)
    out.update(fault=journal.fault, held=journal.held, faults=journal.faults, n=planner.n,
               y=planner.y.tolist())
    print(json.dumps(out))
''')


def test_real_file_size_limit_efbig_then_space_again(tmp_path):
    """A real full disk, unprivileged: the writer's RLIMIT_FSIZE makes the kernel refuse writes past it (EFBIG; the
    write that crosses it is short). The process goes on, then gets space back: every observation once."""
    path = tmp_path / 'journal.jsonl'
    env = {**os.environ, 'UNCERTAIN_BO_TORCH_THREADS': '1', 'OMP_NUM_THREADS': '1'}
    proc = subprocess.run([sys.executable, '-c', CHILD, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    faults = [f['fault'] for f in out['full'] if f['fault'] is not None]
    assert faults and all('[Errno 27] File too large' in f for f in faults)
    assert out['full'][-1]['held'] >= 4                       # most of the six measurements were held
    assert out['size_full'] <= out['limit'] and out['tail_full'] == '\n'   # the short write was cut back
    assert out['lines_full'].count('observation') == 3 + 6 - out['full'][-1]['held']
    assert out['fault'] is None and out['held'] == 0 and out['faults'] == 1 and out['n'] == 10
    assert observation_indices(path) == list(range(10))
    back = new_planner(path)
    assert back.y.tolist() == out['y'] == [10.0 + i for i in range(10)]

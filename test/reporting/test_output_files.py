"""Commands never write onto their own inputs, and write each output whole or not at all
(uncertain_bo/reporting/output_files.py; issue 31, item 4).

Before: ``uncertain-bo export RUN --csv RUN/journal.jsonl`` replaced the journal with CSV and exited 0 (a running
explorer would have appended JSON to the CSV); ``--csv`` into a missing or unwritable folder ended in a traceback;
report, demo and bench wrote their files in place (a failure part-way left half a file) and through links.
"""
import csv
import json
import os

import pytest
import torch

from uncertain_bo.cli import main
from uncertain_bo.distributions import Gaussian
from uncertain_bo.journal.journal import Journal, location_to_record
from uncertain_bo.reporting.output_files import check_outputs, replacing, same_file, write_text
from uncertain_bo.user_errors import UsageError


def write_run(run_dir, n=3, en_route=True, name='journal.jsonl'):
    run_dir.mkdir(parents=True, exist_ok=True)
    j = Journal(run_dir / name, metadata={'method': 'ugp_ucb', 'bounds': [[0.0, 0.0], [10.0, 10.0]]})
    for i in range(n):
        loc = location_to_record(Gaussian(torch.tensor([[i + 0.1, 0.9]]), torch.eye(2)[None] * 0.2))
        j.append({'type': 'observation', 'index': i, 'target': [float(i), 1.0], 'location': loc, 'y': 10.0 + i})
        if en_route:
            j.append({'type': 'en_route', 'index': i, 'measurements': i + 1, 'location': loc, 'y': 9.0 + i})
    return run_dir / name


def one_error(capsys):
    err = [e for e in capsys.readouterr().err.splitlines() if not e.startswith(('INFO', 'WARNING'))]
    assert len(err) == 1 and err[0].startswith('error: '), err
    return err[0]


def test_same_file_sees_paths_links_and_hard_links(tmp_path):
    a = tmp_path / 'a.txt'
    a.write_text('x')
    (tmp_path / 'sub').mkdir()
    os.link(a, tmp_path / 'hard.txt')
    (tmp_path / 'soft.txt').symlink_to(a)
    assert same_file(a, tmp_path / 'sub' / '..' / 'a.txt')
    assert same_file(a, tmp_path / 'hard.txt') and same_file(a, tmp_path / 'soft.txt')
    assert not same_file(a, tmp_path / 'b.txt') and not same_file(tmp_path / 'b.txt', tmp_path / 'c.txt')
    with pytest.raises(UsageError, match=r'--out .*hard\.txt is the input .*a\.txt \(a link to it\)'):
        check_outputs([(tmp_path / 'hard.txt', '--out')], [(a, 'the input')])
    check_outputs([(tmp_path / 'b.txt', '--out')], [(a, 'the input'), (None, 'an input not given')])


def test_replacing_writes_whole_or_not_at_all(tmp_path):
    out = tmp_path / 'out.csv'
    out.write_text('old\n')
    with pytest.raises(RuntimeError):
        with replacing(out) as (tmp,):
            tmp.write_text('half of the ne')
            raise RuntimeError('failed while writing')
    assert out.read_text() == 'old\n' and os.listdir(tmp_path) == ['out.csv']   # no temporary file left
    link = tmp_path / 'link.csv'
    link.symlink_to(out)
    write_text(link, 'new\n')          # the link is replaced, not written through
    assert out.read_text() == 'old\n' and link.read_text() == 'new\n' and not link.is_symlink()
    with pytest.raises(UsageError, match='cannot write'):
        write_text(tmp_path / 'missing' / 'x.txt', 'x')


@pytest.mark.parametrize('how', ['the journal', 'through ..', 'a hard link', 'a symbolic link',
                                 'explorer_result.json', 'the en-route CSV'])
def test_export_never_writes_onto_its_inputs(tmp_path, capsys, how):
    run = tmp_path / 'run'
    name = 'obs_en_route.jsonl' if how == 'the en-route CSV' else 'journal.jsonl'
    journal = write_run(run, name=name)
    (run / 'explorer_result.json').write_text('{"measurements": 3}')
    csv_path = {'the journal': journal, 'through ..': run / '..' / 'run' / name, 'a hard link': tmp_path / 'h.csv',
                'a symbolic link': tmp_path / 's.csv', 'explorer_result.json': run / 'explorer_result.json',
                'the en-route CSV': run / 'obs.jsonl'}[how]   # its en-route readings would go to obs_en_route.jsonl
    if how == 'a hard link':
        os.link(journal, csv_path)
    elif how == 'a symbolic link':
        csv_path.symlink_to(journal)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main(['export', str(journal), '--csv', str(csv_path)]) == 2
    assert 'would write over it' in one_error(capsys)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before     # nothing written, nothing replaced
    assert Journal(journal, read_only=True).checked.damage == []


@pytest.mark.parametrize('where, expect', [
    ('missing/o.csv', r'the folder .*missing does not exist'),
    ('a_file/o.csv', r'a_file is not a folder'),
    ('folder', r'folder is a folder: give a file name'),
    ('/proc/o.csv', r"/proc is on the kernel file system 'proc'"),      # unwritable, whoever runs it (root too)
])
def test_export_into_an_unusable_place_is_one_line(tmp_path, capsys, where, expect):
    import re
    write_run(tmp_path / 'run')
    (tmp_path / 'a_file').write_text('x')
    (tmp_path / 'folder').mkdir()
    target = where if where.startswith('/') else str(tmp_path / where)
    assert main(['export', str(tmp_path / 'run'), '--csv', target]) == 2
    assert re.search(expect, one_error(capsys))
    assert sorted(p.name for p in (tmp_path / 'run').iterdir()) == ['journal.jsonl']


def test_an_export_that_fails_part_way_leaves_the_old_csvs(tmp_path, monkeypatch):
    from uncertain_bo.journal.export_cli import export
    write_run(tmp_path)
    export(tmp_path)
    old = {p: p.read_bytes() for p in tmp_path.glob('*.csv')}
    assert len(old) == 2

    def fail_on_en_route(self, fh, en_route=False):
        fh.write('index,half a row')
        if en_route:
            raise OSError(28, 'No space left on device')

    monkeypatch.setattr(Journal, 'write_csv', fail_on_en_route)
    with pytest.raises(UsageError, match='No space left on device'):
        export(tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.glob('*.csv')} == old       # both whole, the old ones
    assert sorted(p.name for p in tmp_path.iterdir()) == ['journal.jsonl', 'observations.csv',
                                                          'observations_en_route.csv']


def test_export_csv_to_standard_output_writes_no_file(tmp_path, capsys):
    write_run(tmp_path)
    assert main(['export', str(tmp_path), '--csv', '-']) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert [r['index'] for r in rows] == ['0', '1', '2'] and 'run_id' not in rows[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['journal.jsonl']


@pytest.mark.parametrize('output', ['summary.json', 'run.png'])
def test_report_never_writes_onto_its_inputs(tmp_path, capsys, output):
    journal = write_run(tmp_path / 'run', en_route=False)
    (tmp_path / 'run' / output).symlink_to(journal)
    before = journal.read_bytes()
    assert main(['report', str(tmp_path / 'run')]) == 2
    assert f"the report {tmp_path / 'run' / output} is the run's journal.jsonl" in one_error(capsys)
    assert journal.read_bytes() == before and (tmp_path / 'run' / output).is_symlink()


def test_demo_never_writes_onto_its_parameter_file(tmp_path, capsys):
    """``demo --params RUN/parameters.json --out RUN`` would replace the robot's parameter file with the demo's
    JSON of every node's parameters."""
    pytest.importorskip('rclpy')
    run = tmp_path / 'run'
    run.mkdir()
    params = run / 'parameters.json'
    params.write_text('explorer:\n  ros__parameters:\n    beta: 2.0\n')
    assert main(['demo', '--params', str(params), '--out', str(run), '--timeout', '1']) == 2
    err = one_error(capsys)
    assert f"the run folder's {params} is the parameter file" in err
    assert params.read_text() == 'explorer:\n  ros__parameters:\n    beta: 2.0\n'
    assert sorted(p.name for p in run.iterdir()) == ['parameters.json']


def test_bench_never_writes_its_tables_onto_its_parameter_file(tmp_path, capsys):
    out = tmp_path / 'bench'
    out.mkdir()
    params = out / 'summary.json'
    params.write_text(json.dumps({'explorer': {'ros__parameters': {'beta': 2.0}}}))
    assert main(['bench', '--problem', 'rover', '--method', 'random', '--seeds', '1', '--iterations', '1',
                 '--n-jobs', '1', '--out', str(out), '--params', str(params)]) == 2
    assert f'--out {params} is --params' in one_error(capsys)
    assert sorted(p.name for p in out.iterdir()) == ['summary.json']

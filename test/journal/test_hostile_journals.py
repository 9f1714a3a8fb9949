"""Hostile journals (issue 31, item 5): every line of a damaged journal loads, is skipped and counted with its reason,
or the command ends in one ``error:`` line with exit status 2; never a traceback or a hang.

One table: each case is the damaged content and the outcome for ``uncertain-bo report`` and ``uncertain-bo export``
(the real entry points, in-process) and for a resume through the planner's loader (what the explorer does at
start-up). report and export are strict (any damage is an error naming its line, nothing written); a resume skips
and counts what is damaged and keeps every valid record; a journal whose header cannot say its version is an
error for all three (docs/field_robots.md, "Damaged journals").

Before the fix: a 400-digit integer, a line nested 100,000 deep and a header version "abc" or 1e400 ended all three
in tracebacks; report ended in a traceback on 8 kinds the schema accepted (a decision without ``seconds``, empirical
weights summing to inf, search bounds of strings, of zero area or inverted, an execution-noise std of -1 or 1e308,
a list as ``reading_type``); an unreadable middle line stopped the resume; a second header, a renumbered line of
another run, a start at (1e6, 1e6), a keep-out zone over the whole area and a resume record declaring 100,000 lost
indices were accepted by all three; a named pipe as journal.jsonl blocked the explorer's start-up.
"""
import json
import os
import signal
import threading

import pytest

from uncertain_bo.cli import main
from uncertain_bo.journal.journal import Journal, JournalError

from .test_journal_schema import MIDDLE, N, planner, set_field, write_run


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """The clean journal's lines, and another run's (the same kind of run: another run_id)."""
    root = tmp_path_factory.mktemp('hostile')
    clean, other = write_run(root / 'clean'), write_run(root / 'other')
    return ((clean / 'journal.jsonl').read_text().splitlines(), (other / 'journal.jsonl').read_text().splitlines(),
            clean / 'journal.jsonl')


def header_parameter(name, text):
    def damage(lines, obs, other):
        rec = json.loads(lines[0])
        rec['parameters'][name] = '@@'
        return [json.dumps(rec).replace('"@@"', text), *lines[1:]], 1
    return damage


def in_observation(key, text):
    def damage(lines, obs, other):
        at = obs[MIDDLE]
        return [*lines[:at - 1], set_field(lines[at - 1], key, text), *lines[at:]], at
    return damage


def header_field(key, text):
    def damage(lines, obs, other):
        return [set_field(lines[0], key, text), *lines[1:]], 1
    return damage


def inserted(text, where='middle'):
    """``text`` as a new line before the middle observation (or at the end)."""
    def damage(lines, obs, other):
        at = obs[MIDDLE] if where == 'middle' else len(lines) + 1
        return [*lines[:at - 1], text, *lines[at - 1:]], at
    return damage


def without_seconds(lines, obs, other):
    at = lines_of_kind(lines, 'decision')[2]
    rec = json.loads(lines[at - 1])
    del rec['seconds']
    return [*lines[:at - 1], json.dumps(rec), *lines[at:]], None


def cut_middle_observation(lines, obs, other):
    at = obs[MIDDLE]
    return [*lines[:at - 1], lines[at - 1][:60], *lines[at:]], at    # torn after its index: 60 characters


def foreign_observation(lines, obs, other):
    """An observation of another run, renumbered to be the next one, appended."""
    return [*lines, set_field(other[lines_of_kind(other, 'observation')[2] - 1], 'index', str(N))], len(lines) + 1


def lines_of_kind(lines, kind):
    return [n for n, text in enumerate(lines, 1) if json.loads(text)['type'] == kind]


NESTED = '{"type": "weather", "x": ' + '[' * 100_000 + ']' * 100_000 + '}'
LOST = json.dumps({'type': 'resume', 'measurements': N, 'lost_indices': list(range(N, N + 100_000)),
                   'lost_en_route_indices': [], 'records_skipped': 0})

#: (name, damage (lines, observation lines, another run's lines) -> (lines, line reported or None),
#:  what report and export say: None (they succeed) or the words of their one error line,
#:  the resume: (measurements, en-route readings, records skipped, records missing) or the words of its error)
CASES = [
    ('400-digit integer', in_observation('y', '1' + '0' * 400), 'an integer of 401 digits', (N - 1, N, 1, 0)),
    ('nested 100,000 deep', inserted(NESTED), 'nested deeper than 32 levels', (N, N, 1, 0)),
    ('header version "abc"', header_field('version', '"abc"'), "'version' is 'abc', not an integer",
     "'version' is 'abc', not an integer"),
    ('header version 1e400', header_field('version', '1e400'), "'version' is Infinity",
     "'version' is Infinity"),
    ('decision without seconds', without_seconds, None, (N, N, 0, 0)),
    ('empirical weights summing to inf',
     in_observation('location', '{"kind": "empirical", "samples": [[10, 10], [11, 11]], "weights": [1e308, 1e308]}'),
     'positive, finite sum', (N - 1, N, 1, 0)),
    ('search bounds of strings', header_parameter('search_bounds', '["a", "b", "c", "d"]'),
     "'search_bounds' = ['a', 'b', 'c', 'd'] is invalid", (N, N, 0, 0)),
    ('search bounds of zero area', header_parameter('search_bounds', '[0, 0, 0, 0]'),
     'need xmax > xmin and ymax > ymin', (N, N, 0, 0)),
    ('search bounds inverted', header_parameter('search_bounds', '[60, 0, 40, 0]'),
     'need xmax > xmin and ymax > ymin', (N, N, 0, 0)),
    ('negative execution-noise std', header_parameter('execution_noise_std', '[-1, -1]'),
     "'execution_noise_std' = [-1, -1] is invalid: out of range", (N, N, 0, 0)),
    ('execution-noise std of 1e308', header_parameter('execution_noise_std', '[1e308, 1e308]'),
     "'execution_noise_std' = [1e+308, 1e+308] is invalid: out of range", (N, N, 0, 0)),
    ('a list as reading_type', header_parameter('reading_type', '["temperature"]'),
     "'reading_type' is ['temperature'], not a string", (N, N, 0, 0)),
    ('unreadable middle line', cut_middle_observation, 'line is not a journal record', (N - 1, N, 1, 0)),
    ('second header', lambda lines, obs, other: inserted(lines[0])(lines, obs, other), 'a second header',
     (N, N, 1, 0)),
    ("another run's observation, renumbered", foreign_observation, 'is from another run', (N, N, 1, 0)),
    ('start at (1e6, 1e6)', inserted('{"type": "start", "position": [1e6, 1e6]}'),
     "start 'position' (1e+06, 1e+06) is 1414143 m outside the search area", (N, N, 1, 0)),
    ('keep-out zone over the whole area',
     inserted('{"type": "keep_out", "index": -1, "centre": [30, 20], "radius": 1000}', 'end'),
     'covers the whole search area', (N, N, 1, 0)),
    ('resume declaring 100,000 lost indices', inserted(LOST, 'end'), "declares 100000 indices up to 100007",
     (N, N, 1, 0)),
]


def hostile(runs, tmp_path, damage):
    clean, other, _ = runs
    obs = lines_of_kind(clean, 'observation')
    lines, line = damage(clean, obs, other)
    run = tmp_path / 'run'
    run.mkdir(parents=True)
    (run / 'journal.jsonl').write_text('\n'.join(lines) + '\n')
    return run, line


def one_error_line(capsys):
    err = [e for e in capsys.readouterr().err.splitlines() if not e.startswith(('INFO', 'WARNING'))]
    assert len(err) == 1 and err[0].startswith('error: ') and 'Traceback' not in err[0], err
    return err[0]


@pytest.mark.parametrize('name, damage, strict, resumed', CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize('command', ['report', 'export'])
def test_report_and_export_of_a_hostile_journal(runs, tmp_path, capsys, name, damage, strict, resumed, command):
    run, line = hostile(runs, tmp_path, damage)
    before = (run / 'journal.jsonl').read_bytes()
    code = main([command, str(run)])
    assert (run / 'journal.jsonl').read_bytes() == before
    if strict is None:
        assert code == 0
        written = 'summary.json' if command == 'report' else 'observations.csv'
        assert (run / written).is_file()
        if command == 'report':   # the decision without its time is left out of the times, not a KeyError
            assert len(json.loads((run / 'summary.json').read_text())['decision_seconds']) == N - 1
        return
    assert code == 2
    err = one_error_line(capsys)
    assert strict in err and (line is None or f'journal.jsonl line {line}: ' in err)
    assert sorted(p.name for p in run.iterdir()) == ['journal.jsonl']       # nothing written


@pytest.mark.parametrize('name, damage, strict, resumed', CASES, ids=[c[0] for c in CASES])
def test_resume_of_a_hostile_journal(runs, tmp_path, name, damage, strict, resumed):
    """The planner's loader (the explorer's start-up): the damaged line skipped and counted, every valid record
    kept, nothing invalid stored, no index used twice; or, for a header whose version is unreadable, one error."""
    run, line = hostile(runs, tmp_path, damage)
    path = run / 'journal.jsonl'
    if isinstance(resumed, str):
        with pytest.raises(JournalError, match=resumed.replace('(', r'\(').replace(')', r'\)')):
            planner(path)
        return
    clean_y = [json.loads(t)['y'] for t in runs[0] if json.loads(t)['type'] == 'observation']
    p = planner(path)
    n, n_en_route, skipped, missing = resumed
    assert (p.n, p.n_en_route) == (n, n_en_route)
    assert p.journal_damage['records_skipped'] == skipped and p.journal_damage['records_missing'] == missing
    if skipped:
        assert p.journal_damage['problems'][0].startswith(f'line {line}: ')
    elif strict is not None:     # a header field the run does not use: ignored, and said
        assert p.journal_damage['problems'][0].startswith('line 1: header ')
    kept = clean_y if n == N else clean_y[:MIDDLE] + clean_y[MIDDLE + 1:]
    assert p.y.tolist() == kept                              # 0 valid records lost, 0 invalid stored
    assert p.next_index >= N                                 # no index used twice
    assert p.start is None or (p.start.abs() < 1e3).all()    # the far start is not where the tour starts
    assert p.keep_out.zones == []


def test_a_named_pipe_as_the_journal_is_refused_not_waited_on(runs, tmp_path, capsys):
    """A FIFO at journal.jsonl blocked the explorer's start-up (a reader waits for a writer): every reader now
    refuses it in one line. A thread guards against a hang (the test fails after 20 s instead of blocking)."""
    run = tmp_path / 'run'
    run.mkdir()
    os.mkfifo(run / 'journal.jsonl')
    outcomes = {}

    def attempt():
        for command in ('report', 'export'):
            outcomes[command] = main([command, str(run)])
        try:
            planner(run / 'journal.jsonl')
        except JournalError as exc:
            outcomes['resume'] = str(exc)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(20.0)
    if thread.is_alive():   # unblock it (open the other end) so the process does not hang, then fail
        ends = [os.open(run / 'journal.jsonl', flags | os.O_NONBLOCK) for flags in (os.O_RDONLY, os.O_WRONLY)]
        thread.join(5.0)
        for fd in ends:
            os.close(fd)
        pytest.fail('a reader or writer blocked on the named pipe')
    assert outcomes['report'] == 2 and outcomes['export'] == 2
    assert 'is a named pipe, not a journal file' in outcomes['resume']
    err = [e for e in capsys.readouterr().err.splitlines() if e.startswith('error: ')]
    assert len(err) == 2 and all('is a named pipe' in e for e in err)
    assert sorted(p.name for p in run.iterdir()) == ['journal.jsonl']


def test_a_journal_linked_to_a_device_is_refused_not_read_forever(tmp_path):
    """/dev/zero never ends: a journal path linked to it is refused at once, not read forever."""
    link = tmp_path / 'journal.jsonl'
    link.symlink_to('/dev/zero')
    old = signal.signal(signal.SIGALRM, lambda *a: pytest.fail('read /dev/zero'))
    signal.alarm(20)
    try:
        with pytest.raises(JournalError, match='is a device'):
            Journal(link, read_only=True)
        with pytest.raises(JournalError, match='is a device'):
            Journal(link)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_every_reader_agrees_with_the_schema_on_what_is_valid(runs, tmp_path):
    """The cases where report and export refuse a record are the cases a resume skips it (the semantic checks are
    the schema's, not each reader's): the strict load's first problem is the lenient load's first problem."""
    for name, damage, strict, resumed in CASES:
        if strict is None or isinstance(resumed, str) or resumed[2] == 0:
            continue
        run, line = hostile(runs, tmp_path / name.replace(' ', '_').replace('/', '_'), damage)
        with pytest.raises(JournalError) as refused:
            Journal(run / 'journal.jsonl', read_only=True)
        lenient = Journal(run / 'journal.jsonl', read_only=True, strict=False)
        first = lenient.checked.damage[0]
        assert first.line == line and first.message in str(refused.value), name


def test_a_resume_may_declare_the_lines_removed_since_but_not_more_than_the_journal_held():
    """The plausibility bound on declared lost indices lets the documented repair through (a restart declared the
    damaged lines lost, then they were removed: here half of an observations-only journal) and refuses a record
    declaring more than the journal can ever have held."""
    from uncertain_bo.journal.check import check_journal

    header = {'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1}

    def obs(i):
        return {'type': 'observation', 'index': i, 'target': [1.0, 2.0],
                'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': float(i)}

    def resume(lost):
        return {'type': 'resume', 'measurements': 5, 'lost_indices': lost, 'lost_en_route_indices': [],
                'records_skipped': len(lost)}

    repaired = [obs(i) for i in range(5)] + [resume(list(range(5, 10)))]   # indices 5..9 damaged, then removed
    checked = check_journal(header, list(enumerate(repaired, 2)))
    assert checked.damage == [] and checked.next_index == 10 and checked.lost_indices == [5, 6, 7, 8, 9]
    forged = [obs(i) for i in range(5)] + [resume(list(range(5, 5 + 100_000)))]
    checked = check_journal(header, list(enumerate(forged, 2)))
    assert [d.line for d in checked.damage] == [7] and checked.next_index == 5 and checked.lost_indices == []

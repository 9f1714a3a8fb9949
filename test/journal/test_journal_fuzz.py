"""Random corruptions of a valid journal (hypothesis): the loader is total (issue 31, item 5).

Each example damages a clean journal one to three times (a line cut short, a byte replaced, a number replaced by one
out of range or of another type, a line deleted, duplicated, swapped with the next or a garbage line inserted) and
runs ``uncertain-bo export`` (the CLI, in-process), the report's reader and a resume through the planner's loader.
Each either succeeds or ends in a :class:`~uncertain_bo.journal.journal.JournalError` (one ``error:`` line and exit
status 2 from the CLI), never another exception; the resume keeps every observation whose line was left intact (its
index not taken by a damaged line before it), and stores nothing the schema refuses; only a damaged header line may
refuse the resume.
"""
import json
import re
import shutil

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from uncertain_bo.cli import main
from uncertain_bo.journal.journal import Journal, JournalError
from uncertain_bo.journal.values import MAX_ABS_READING

from .test_journal_schema import N, planner, write_run

#: lines of the clean journal: the header, then per measurement a decision, the observation, an en-route reading
#: and the recommendation
LINES = 1 + 4 * N

OUT_OF_RANGE = ['1e400', '-1e400', '1' + '0' * 400, 'NaN', 'Infinity', '-1', '1e308', '-1e308', '0', '1e-320', '"x"',
                'null', 'true', '[]', '{}', '[1e6, 1e6]']
NUMBER = re.compile(r'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')


@pytest.fixture(scope='module')
def clean(tmp_path_factory):
    lines = (write_run(tmp_path_factory.mktemp('fuzz') / 'run') / 'journal.jsonl').read_text().splitlines()
    assert len(lines) == LINES
    return lines


def corruption(n_lines):
    """One damage: (what, line index 0..n-1, parameters)."""
    k = st.integers(0, n_lines - 1)
    return st.one_of(
        st.tuples(st.just('cut'), k, st.floats(0.0, 1.0)),
        st.tuples(st.just('byte'), k, st.tuples(st.floats(0.0, 1.0), st.integers(0, 255))),
        st.tuples(st.just('number'), k, st.tuples(st.floats(0.0, 1.0), st.sampled_from(OUT_OF_RANGE))),
        st.tuples(st.just('delete'), k, st.none()),
        st.tuples(st.just('duplicate'), k, st.none()),
        st.tuples(st.just('swap'), k, st.none()),
        st.tuples(st.just('insert'), k, st.sampled_from([b'{', b'garbage', b'[]', b'{"type": 3}', b'{"type": "header"}',
                                                         b'\x00\xff\xfe', b'{"a": ' * 50 + b'1' + b'}' * 50,
                                                         b'{"type": "note", "text": "\\ud800"}'])))


def damaged(lines, damages):
    """The damaged lines (bytes) and which of the original lines are left intact (their positions are tracked)."""
    out = [(i, line.encode()) for i, line in enumerate(lines)]   # (original line or None, bytes)
    for what, k, arg in damages:
        k = min(k, len(out) - 1)
        i, line = out[k]
        if what == 'cut':
            out[k] = (None, line[:int(arg * len(line))])
        elif what == 'byte' and line:
            at = min(int(arg[0] * len(line)), len(line) - 1)
            out[k] = (None, line[:at] + bytes([arg[1]]) + line[at + 1:])
        elif what == 'number':
            numbers = list(NUMBER.finditer(line.decode('utf-8', 'replace')))
            if numbers:
                m = numbers[min(int(arg[0] * len(numbers)), len(numbers) - 1)]
                text = line.decode('utf-8', 'replace')
                out[k] = (None, (text[:m.start()] + arg[1] + text[m.end():]).encode())
        elif what == 'delete' and len(out) > 1:
            del out[k]
        elif what == 'duplicate':
            out.insert(k + 1, (None, line))
        elif what == 'swap' and k + 1 < len(out):
            out[k], out[k + 1] = (None, out[k + 1][1]), (None, line)
        elif what == 'insert':
            out.insert(k, (None, arg))
    return out


def intact_observations(lines, out):
    """``{index: y}`` of the observations whose lines are intact, whose index no line before them (damaged or not)
    also claims, and that come after an intact header: what a resume must keep."""
    if not out or out[0][0] != 0:
        return None                                  # the header itself was damaged or moved: totality only
    claimed, keep = set(), {}
    for i, line in out[1:]:
        found = re.search(rb'"index":\s*(-?\d+)', line)
        kind = re.search(rb'"type":\s*"(\w+)"', line)
        index = int(found.group(1)) if found and len(found.group(1)) < 20 else None
        key = (kind.group(1) if kind else None, index)
        if i is not None and json.loads(lines[i])['type'] == 'observation' and key not in claimed:
            keep[index] = json.loads(lines[i])['y']
        claimed.add(key)
    return keep


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(damages=st.lists(corruption(LINES), min_size=1, max_size=3))
@example(damages=[('number', 10, (0.57, '1' + '0' * 400))])     # a 400-digit reading: an OverflowError on main
@example(damages=[('cut', 18, 0.5)])                             # a middle line cut short: it stopped the resume
@example(damages=[('insert', 18, b'{"a": ' * 5000 + b'1' + b'}' * 5000)])   # a RecursionError on main
@example(damages=[('insert', 1, b'{"type": 3}'), ('number', 1, (0.0, '[]'))])   # a list as the type
def test_a_corrupted_journal_loads_is_skipped_or_is_refused_in_one_line(clean, tmp_path_factory, capsys, damages):
    out = damaged(clean, damages)
    run = tmp_path_factory.mktemp('corrupted')
    journal = run / 'journal.jsonl'
    journal.write_bytes(b'\n'.join(line for _, line in out) + b'\n')
    before = journal.read_bytes()

    capsys.readouterr()
    code = main(['export', str(run)])                    # the CLI: 0, or one error line and 2
    err = [e for e in capsys.readouterr().err.splitlines() if e.startswith('error: ')]
    assert code in (0, 2) and len(err) == (code == 2)
    assert (run / 'observations.csv').is_file() == (code == 0)
    assert journal.read_bytes() == before

    # the report's reader (its plot reads the same records)
    from uncertain_bo.reporting.run_report import summarize_run
    try:
        summarize_run(run)
        assert code == 0
    except JournalError:
        assert code == 2

    copy = run / 'resumed' / 'journal.jsonl'
    copy.parent.mkdir()
    shutil.copy(journal, copy)
    keep = intact_observations(clean, out)
    try:
        p = planner(copy)                                # the explorer's start-up
    except JournalError:
        assert code == 2 and keep is None                # only a damaged header refuses the resume
        return
    assert (p.y.abs() <= MAX_ABS_READING).all() and p.next_index >= p.n
    if keep is not None:
        kept = {r['index']: r['y'] for r in Journal(copy, read_only=True, strict=False).observations}
        assert all(kept.get(i) == y for i, y in keep.items()), (damages, keep, kept)

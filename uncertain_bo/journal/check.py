"""The check of a whole journal (:func:`check_journal`): each record against the schema
(:mod:`uncertain_bo.journal.schema`), the numbering of the indexed records, revisions in order, and the indices a
resumed run declared lost; what it found is a :class:`Checked` with one :class:`Damage` per problem.

Order: observations are numbered 0, 1, 2, ... in file order, each index once; en-route readings have their own
numbering 0, 1, 2, ... (the index among the en-route readings), and each one's ``measurements`` is the index of
the next observation (the observations stored before it). Decisions, recommendations and the rest repeat
indices legitimately (a decision is made again after a restart or a change of bounds) and are not ordered.

A ``revision`` record is damage, skipped and counted (:func:`revision_order_problem`, the rule a running planner
applies too) when no kept record before it holds the reading it revises (not stored yet, lost, or skipped as
damaged), or when it is **out of order**: its stamp is not after the stamp of the last revision of that reading kept
before it, or is before the ``pose_stamp`` of the reading's own record (the estimate it would revise is newer).

A ``resume`` record is what a planner appends when it resumed a journal that had lost records (skipped as damaged,
or missing): the indices it lost are then declared (``lost_indices``, ``lost_en_route_indices``), later
records number on after the highest index the journal ever held (so no index is used twice), and a gap at a
declared index is no longer damage (removing the bad line is a repair). A ``resume`` record may declare lost no
index beyond what the journal can have held (:mod:`uncertain_bo.journal.schema`, "lost indices plausible").

Two uses (:func:`check_journal`): **strict** (``uncertain-bo report`` and ``export``: the first problem is an
error naming its line, so nothing is reported from a damaged journal) and **lenient** (a mission resuming its
journal: a damaged record or unreadable line is skipped and counted, a missing one counted, and the mission goes
on, since losing it all is worse than losing a record). Both see the same problems: what one refuses, the other
skips. A duplicated observation counts once; a second record with the index of
an earlier one is skipped (counted) whether or not its contents are the same: the first written is the one the
run used.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .schema import JournalContext, journal_context, record_problem

__all__ = ['INDEXED', 'Damage', 'Checked', 'check_journal', 'revision_order_problem']

#: record types numbered 0, 1, 2, ... each in its own sequence
INDEXED = ('observation', 'en_route')


def revision_order_problem(stamp: float, last: float | None, taken: float | None) -> str | None:
    """Why a revision of a reading stamped ``stamp`` (s, the localiser's clock) is out of order, or None: it must be
    later than the reading's last accepted revision (``last``, None if it has none) and, its first, not earlier than the
    pose estimate the reading was stored with (``taken``: the reading's ``pose_stamp``, None when unknown). The one rule
    of a running planner (:mod:`uncertain_bo.planning.revisions`) and of the journal's check (module docstring)."""
    if last is not None and not stamp > last:
        return f'stamped {stamp:.3f} s, not after the reading\'s last revision ({last:.3f} s)'
    if last is None and taken is not None and stamp < taken:
        return f'stamped {stamp:.3f} s, before the pose estimate it would revise ({taken:.3f} s)'
    return None


@dataclass(frozen=True)
class Damage:
    """One problem of a journal.

    Attributes:
        line: 1-based line of the file it was found at.
        message: one line, e.g. ``"observation 'y' (the reading) is NaN"``.
        skipped: the record on that line is left out (a damaged or duplicated record); False where the record is
            kept (out of order, or records are missing before it: nothing to leave out).
        kind: the record's type ('' when it has none).

    Example:
        >>> header = {'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1}
        >>> reading = {'type': 'observation', 'index': 0, 'target': [1.0, 2.0],
        ...            'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': float('nan')}
        >>> check_journal(header, [(2, reading)]).damage
        [Damage(line=2, message="observation 'y' (the reading) is NaN", skipped=True, kind='observation')]
    """

    line: int
    message: str
    skipped: bool
    kind: str = ''


@dataclass
class Checked:
    """A journal's body after :func:`check_journal`.

    Attributes:
        records: the records kept (the header excluded), in file order.
        damage: every problem found, in file order.
        next_index: the index the next observation must take: one past the highest the journal ever used (the
            skipped and lost ones included), so no index is used twice.
        next_en_route_index: the same for the en-route readings.
        lost_indices: observation indices below :attr:`next_index` that no kept record has (skipped or missing).
        lost_en_route_indices: the same for the en-route readings.
        missing_indices: observation indices below :attr:`next_index` that no line holds, valid or not, and no
            ``resume`` record declared lost (removed lines).
        missing_en_route_indices: the same for the en-route readings.

    Example:
        A duplicated index is skipped (the first record is the one the run used):

        >>> header = {'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1}
        >>> def observation(i, y):
        ...     return {'type': 'observation', 'index': i, 'target': [1.0, 2.0],
        ...             'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': y}
        >>> lines = [(2, observation(0, 0.5)), (3, observation(0, 0.6)), (4, observation(1, 0.7))]
        >>> checked = check_journal(header, lines)
        >>> [r['y'] for r in checked.records], checked.skipped, checked.next_index, checked.damage[0].message
        ([0.5, 0.7], 1, 2, 'observation index 0 repeats line 2 (different contents; the first is kept)')
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)
    next_index: int = 0
    next_en_route_index: int = 0
    lost_indices: list[int] = field(default_factory=list)
    lost_en_route_indices: list[int] = field(default_factory=list)
    missing_indices: list[int] = field(default_factory=list)
    missing_en_route_indices: list[int] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Records left out (damaged or duplicated)."""
        return sum(d.skipped for d in self.damage)

    @property
    def missing(self) -> int:
        """Indexed records missing (index gaps no ``resume`` record declared)."""
        return len(self.missing_indices) + len(self.missing_en_route_indices)


class _Sequence:
    """The numbering of one indexed record type (``observation`` or ``en_route``)."""

    def __init__(self, name: str, declared_lost: set[int], cap: int):
        self.name = name
        self.lost = declared_lost      # gaps a resume record declared: not damage
        self.cap = cap                 # no index above it can be genuine (check_journal)
        self.kept: dict[int, tuple[int, dict]] = {}   # index -> (line, record)
        self.used: set[int] = set()    # every index seen, skipped records' included
        self.expected = 0

    def note_skipped(self, rec: dict) -> None:
        """A record left out for its contents: its index (if usable) is used, and not missing."""
        i = rec.get('index')
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= self.cap:
            self.used.add(i)
            if i >= self.expected:
                self.expected = i + 1

    def add(self, line: int, rec: dict, damage: list[Damage]) -> bool:
        """Number ``rec`` (found valid); returns False when it is a duplicate to leave out."""
        i = rec['index']
        if i in self.kept:
            first_line, first = self.kept[i]
            same = 'the same record' if first == rec else 'different contents; the first is kept'
            damage.append(Damage(line, f'{self.name} index {i} repeats line {first_line} ({same})', skipped=True,
                                 kind=self.name))
            return False
        if i > self.cap:
            damage.append(Damage(line, f'{self.name} index {i} is beyond any this journal can hold ({self.cap}: '
                                       'a damaged index)', skipped=True, kind=self.name))
            return False
        if i > self.upcoming():   # indices declared lost may be absent, or present (a repaired line)
            damage.append(Damage(line, f'{self.name} index {i} where {self.upcoming()} was expected (a line removed '
                                       'or moved)', skipped=False, kind=self.name))
        elif i < self.expected:
            damage.append(Damage(line, f'{self.name} index {i} out of order (after index {self.expected - 1})',
                                 skipped=False, kind=self.name))
        self.kept[i] = (line, rec)
        self.used.add(i)
        self.expected = max(self.expected, i + 1)
        return True

    def upcoming(self) -> int:
        """The index the next record should have: the expected one, past indices declared lost."""
        i = self.expected
        while i in self.lost and i not in self.used:
            i += 1
        return i

    def next_index(self) -> int:
        return max([self.expected, *(i + 1 for i in self.lost)])

    def lost_indices(self) -> list[int]:
        return [i for i in range(self.next_index()) if i not in self.kept]

    def missing_indices(self) -> list[int]:
        return [i for i in range(self.next_index()) if i not in self.used and i not in self.lost]


def check_journal(header: dict[str, Any], lines: Sequence[tuple[int, Any]],
                  unreadable: Sequence[tuple[int, str, dict[str, Any]]] = ()) -> Checked:
    """Check a journal's records against the schema (module docstring) and number its indexed records.

    Nothing is raised: the caller decides (strict: the first :class:`Damage` is an error; lenient: keep
    :attr:`Checked.records`). Reordered records are damage (each out-of-order one), but nothing is missing.

    Args:
        header: the header record (its ``bounds`` give the dimension, its ``run_id`` the run).
        lines: ``(line number, record)`` of every record after the header, in file order.
        unreadable: ``(line number, why, what can be read of it)`` of the lines after the header that hold no
            record (not JSON, not an object, nested too deep): each is damage, skipped. What can be read is
            ``{'type': ..., 'index': ...}`` where the line's text shows an indexed record's type and index (else
            ``{}``): used for the numbering only (that index is taken, not missing; never reused).

    Returns:
        The records kept, the damage found, and the numbering (:class:`Checked`).
    """
    context = journal_context(header, [rec for _, rec in lines])
    n_lines = len(lines) + len(unreadable)
    resumes, implausible = _declared_lost(lines, context, n_lines)
    # every index below the next one has its line or was declared lost: an index beyond the lines and the
    # declarations is damaged (and must not make the numbering, and the lists of lost indices, jump by billions)
    cap = n_lines + sum(len(r['lost_indices']) + len(r['lost_en_route_indices']) for r in resumes)
    lost: dict[str, set[int]] = {name: set() for name in INDEXED}
    for rec in resumes:
        lost['observation'].update(rec['lost_indices'])
        lost['en_route'].update(rec['lost_en_route_indices'])
    seqs = {name: _Sequence(name, lost[name], cap) for name in lost}
    revised: dict[tuple[str, int], float] = {}   # (revises, index) -> stamp of its last kept revision
    out = Checked()
    unread = [(line, seen, f'line is not a journal record ({why})') for line, why, seen in unreadable]
    for line, rec, problem in sorted([*((line, rec, None) for line, rec in lines), *unread], key=lambda e: e[0]):
        kind = rec.get('type') if isinstance(rec, dict) else None
        kind = kind if isinstance(kind, str) else None   # a list as the type: damaged (record_problem), unhashable
        if problem is None and kind == 'header':
            problem = ('header: a second header (another journal appended to this one, or a forged line); the '
                       'first is the journal\'s')
        problem = problem or record_problem(rec, context=context) or implausible.get(line)
        if problem is not None:
            out.damage.append(Damage(line, problem, skipped=True, kind=kind or ''))
            if kind in seqs:
                seqs[kind].note_skipped(rec)
            continue
        if kind == 'revision':
            problem = _revision_problem(rec, seqs, revised)
            if problem is not None:
                out.damage.append(Damage(line, problem, skipped=True, kind=kind))
                continue
        if kind in seqs:
            if not seqs[kind].add(line, rec, out.damage):
                continue
            obs = seqs['observation']
            if kind == 'en_route' and not obs.expected <= rec['measurements'] <= obs.upcoming():
                out.damage.append(Damage(line, f"en_route index {rec['index']} counts {rec['measurements']} "
                                               f"observations before it, the journal {obs.upcoming()} (a line "
                                               'removed or moved)', skipped=False, kind=kind))
        out.records.append(rec)
    out.next_index = seqs['observation'].next_index()
    out.next_en_route_index = seqs['en_route'].next_index()
    out.lost_indices = seqs['observation'].lost_indices()
    out.lost_en_route_indices = seqs['en_route'].lost_indices()
    out.missing_indices = seqs['observation'].missing_indices()
    out.missing_en_route_indices = seqs['en_route'].missing_indices()
    return out


def _revision_problem(rec: dict[str, Any], seqs: dict[str, '_Sequence'],
                      revised: dict[tuple[str, int], float]) -> str | None:
    """Why a valid ``revision`` record cannot be applied where it stands in the file (module docstring), or None (it
    is then the reading's last revision so far: noted in ``revised``)."""
    key = (rec['revises'], rec['index'])
    reading = seqs[key[0]].kept.get(key[1])
    if reading is None:
        return (f'revision of {key[0]} {key[1]}: no such reading before it (not stored, or lost): nothing to '
                'revise')
    taken = reading[1].get('pose_stamp')
    taken = float(taken) if isinstance(taken, (int, float)) and not isinstance(taken, bool) else None
    problem = revision_order_problem(float(rec['stamp']), revised.get(key), taken)
    if problem is not None:
        return f'revision of {key[0]} {key[1]} out of order: {problem}'
    revised[key] = float(rec['stamp'])
    return None


def _declared_lost(lines: Sequence[tuple[int, Any]], context: JournalContext,
                   n_lines: int) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The valid ``resume`` records whose lost indices are plausible, in file order, and the problem of each
    implausible one by line: a resume may declare lost no index beyond what the journal can have held: its lines,
    the indices earlier resume records declared, and one removed line per index it declares itself (removing a
    declared line is a repair), but no more removed lines than the journal has lines."""
    plausible: list[dict[str, Any]] = []
    implausible: dict[int, str] = {}
    declared = 0
    for line, rec in lines:
        if not (isinstance(rec, dict) and rec.get('type') == 'resume') or record_problem(rec, context=context):
            continue
        held = n_lines + declared + min(len(rec['lost_indices']) + len(rec['lost_en_route_indices']), n_lines)
        beyond = [(name, rec[name][-1]) for name in ('lost_indices', 'lost_en_route_indices')
                  if rec[name] and rec[name][-1] > held]
        if beyond:
            name, top = beyond[0]
            implausible[line] = (f'resume {name!r} declares {len(rec[name])} indices up to {top}, beyond any this '
                                 f'journal can have held ({held}): its declarations are ignored')
            continue
        plausible.append(rec)
        declared += len(rec['lost_indices']) + len(rec['lost_en_route_indices'])
    return plausible, implausible

"""The journal's schema: every record type a run's journal holds, its fields and the values they may take, and the
order of the indexed records. :class:`~uncertain_bo.journal.Journal` checks a journal against it when it loads one.

Record types (``*`` required; the others are checked when present; any other field is allowed, so a later
writer of the same version can add some)::

    header          format*, version*, created, run_id, method, bounds, seed, parameters
    start           position*, wall_time
    bounds          bounds*, index, wall_time
    decision        index*, target*, phase, seconds, fit_seconds, acquisition_value, beta, wall_time,
                    kept_out_from, batch {size*, position*}, rover
    observation     index*, target*, location*, y*, reading_variance, goal_timed_out, distance_driven_m,
                    mission_time_s, wall_time, rover, seq
    en_route        index*, measurements*, location*, y*, reading_variance, distance_driven_m, mission_time_s,
                    wall_time
    recommendation  index*, target*, mean*, std*, location_mean, location_covariance
    parameters      changed*, index, wall_time
    keep_out        index*, centre*, radius*, reason, wall_time
    resume          measurements*, lost_indices*, lost_en_route_indices*, records_skipped*, wall_time

Values:

- numbers are numbers (not ``true``/``false``) and finite: JSON has no NaN or Infinity, but Python's ``json``
  reads the ``NaN``/``Infinity`` tokens, so a damaged or hand-edited journal can hold them;
- readings (``y``) and predicted means lie within ±:data:`MAX_ABS_READING` (1e12, the outermost ``reading_range``
  the explorer accepts, ``uncertain_bo.explorer.parameters.MAX_ABS_READING``: no reading beyond it can have come
  from a sensor through the explorer, and the GP's standardisation of the readings stays far from overflow; not
  the run's own ``reading_range``, which a restart with another parameter file may widen without a record);
  a reading variance lies in [0, MAX_ABS_READING²];
- coordinates (targets, location means and particles, keep-out centres, bounds, the start) lie within
  ±:data:`MAX_ABS_COORDINATE` m (1e7, ``uncertain_bo.explorer.inputs.MAX_ABS_COORDINATE``: the explorer refuses
  poses beyond it); a measurement's target and location have the journal's dimension (the header's ``bounds``,
  else the first location's; a decision's target may have more: a quadrature method decides in a joint
  (target, context) space);
- a location is a Dirac (``mean``), a Gaussian (``mean``, ``covariance``: finite, symmetric, positive
  semi-definite, :func:`~uncertain_bo.distributions.check_covariance`) or an empirical distribution
  (``samples``, optional non-negative ``weights`` with a positive sum); a recommendation's ``location_covariance`` (the
  covariance of the location distribution of the reading it names) is checked as a Gaussian location's;
- indices and counts are integers >= 0 (a keep-out's ``index`` may be -1: no measurement).

Order: observations are numbered 0, 1, 2, ... in file order, each index once; en-route readings have their own
numbering 0, 1, 2, ... (the index among the en-route readings), and each one's ``measurements`` is the index of
the next observation (the observations stored before it). Decisions, recommendations and the rest repeat
indices legitimately (a decision is made again after a restart or a change of bounds) and are not ordered.

A ``resume`` record is what a planner appends when it resumed a journal that had lost records (skipped as damaged,
or missing): the indices it lost are then declared (``lost_indices``, ``lost_en_route_indices``), later
records number on after the highest index the journal ever held (so no index is used twice), and a gap at a
declared index is no longer damage (removing the bad line is a repair).

Unknown record types are kept and not checked: the journal's rule since version 1 is that a reader skips a type
it does not know (so a newer writer can add one without a new version). A record without a string ``type`` is
damaged.

Two uses (:func:`check_journal`): **strict** (``uncertain-bo report`` and ``export``: the first problem is an
error naming its line, so nothing is reported from a damaged journal) and **lenient** (a mission resuming its
journal: a damaged record is skipped and counted, a missing one counted, and the mission goes on, since losing
it all is worse than losing a record). A duplicated observation counts once; a second record with the index of
an earlier one is skipped (counted) whether or not its contents are the same: the first written is the one the
run used.

The checks are hand-written rather than a JSON-Schema document: most of what matters (finite numbers,
magnitudes, positive semi-definite covariances, index order across records) is beyond what JSON Schema says.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .distributions import check_covariance

__all__ = ['RECORD_TYPES', 'INDEXED', 'MAX_ABS_READING', 'MAX_ABS_COORDINATE', 'Damage', 'Checked', 'record_problem',
           'header_problem', 'check_journal', 'journal_dimension']

#: readings and predicted means beyond ± this are damage (the explorer's outermost ``reading_range``)
MAX_ABS_READING = 1e12
#: coordinates beyond ± this (m) are damage (the explorer refuses poses beyond it)
MAX_ABS_COORDINATE = 1e7


class _Bad(ValueError):
    """One field breaks the schema (the message says how, without the record type)."""


def _describe(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return 'NaN'
        if math.isinf(v):
            return 'Infinity' if v > 0 else '-Infinity'
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + '...'


def _number(v: Any, what: str, limit: float | None = None, low: float | None = None,
            positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Bad(f'{what} is {_describe(v)}, not a number')
    if not math.isfinite(v):
        raise _Bad(f'{what} is {_describe(v)}')
    if limit is not None and abs(v) > limit:
        raise _Bad(f'{what} is {v:g}, beyond ±{limit:g}')
    if low is not None and v < low:
        raise _Bad(f'{what} is {v:g}, below {low:g}')
    if positive and not v > 0:
        raise _Bad(f'{what} is {v:g}, not > 0')
    return float(v)


def _index(v: Any, what: str, low: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(f'{what} is {_describe(v)}, not an integer')
    if v < low:
        raise _Bad(f'{what} is {v}, below {low}')
    return v


def _vector(v: Any, what: str, dim: int | None, limit: float = MAX_ABS_COORDINATE) -> list[float]:
    if not isinstance(v, list) or not v:
        raise _Bad(f'{what} is {_describe(v)}, not a list of numbers')
    if dim is not None and len(v) != dim:
        raise _Bad(f'{what} has {len(v)} coordinates, the journal {dim}')
    return [_number(x, what, limit) for x in v]


def _matrix(v: Any, what: str, rows: int | None, dim: int | None, limit: float) -> list[list[float]]:
    if not isinstance(v, list) or not v or (rows is not None and len(v) != rows):
        raise _Bad(f'{what} is {_describe(v)}, not a list of {rows or "some"} rows')
    if _plain_rows(v, dim, limit):   # the common case, in bulk (a particle cloud has hundreds of numbers)
        return v
    out = [_vector(r, what, dim, limit) for r in v]
    if len({len(r) for r in out}) != 1:
        raise _Bad(f'{what} has rows of different lengths')
    return out


def _plain_rows(v: list, dim: int | None, limit: float) -> bool:
    """Whether ``v`` is rows of equal length (``dim`` if given) of finite JSON numbers within ``limit``."""
    width = len(v[0]) if isinstance(v[0], list) else -1
    if width < 1 or (dim is not None and width != dim):
        return False
    if not all(type(r) is list and len(r) == width for r in v):
        return False
    if not all(type(x) is float or type(x) is int for r in v for x in r):   # not bool, str, None, ...
        return False
    a = np.asarray(v, dtype=np.float64)
    return bool(np.isfinite(a).all() and np.abs(a).max() <= limit)


def _location(v: Any, what: str, dim: int | None) -> None:
    if not isinstance(v, dict):
        raise _Bad(f'{what} is {_describe(v)}, not a location record')
    kind = v.get('kind')
    if kind in ('dirac', 'gaussian'):
        mean = _vector(_field(v, 'mean', what), f'{what} mean', dim)
        if kind == 'gaussian':
            cov = _matrix(_field(v, 'covariance', what), f'{what} covariance', len(mean), len(mean),
                          MAX_ABS_COORDINATE ** 2)
            reason = check_covariance(cov)   # a list: the NumPy check (100x faster than a tensor's for one 2x2)
            if reason:
                raise _Bad(f'{what} covariance is {reason}')
    elif kind == 'empirical':
        samples = _matrix(_field(v, 'samples', what), f'{what} samples', None, dim, MAX_ABS_COORDINATE)
        if 'weights' in v and v['weights'] is not None:
            w = _vector(v['weights'], f'{what} weights', len(samples), limit=math.inf)
            if min(w) < 0 or not sum(w) > 0:
                raise _Bad(f'{what} weights must be >= 0 with a positive sum')
    else:
        raise _Bad(f'{what} kind is {_describe(kind)}, not dirac, gaussian or empirical')


def _covariance(v: Any, what: str, dim: int | None) -> None:
    cov = _matrix(v, what, dim, dim, MAX_ABS_COORDINATE ** 2)
    if len(cov) != len(cov[0]):
        raise _Bad(f'{what} is not square')
    reason = check_covariance(cov)
    if reason:
        raise _Bad(f'{what} is {reason}')


def _location_dim(v: dict) -> int:
    return len(v['samples'][0]) if v.get('kind') == 'empirical' else len(v['mean'])


def _field(rec: dict, name: str, what: str) -> Any:
    if name not in rec:
        raise _Bad(f'{what} has no {name!r}')
    return rec[name]


def _str(v: Any, what: str) -> None:
    if not isinstance(v, str):
        raise _Bad(f'{what} is {_describe(v)}, not a string')


def _bool(v: Any, what: str) -> None:
    if not isinstance(v, bool):
        raise _Bad(f'{what} is {_describe(v)}, not true or false')


def _dict(v: Any, what: str) -> None:
    if not isinstance(v, dict):
        raise _Bad(f'{what} is {_describe(v)}, not an object')


def _optional(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` for a field that may also be null."""
    def run(v: Any, what: str, dim: int | None) -> None:
        if v is not None:
            check(v, what, dim)
    return run


def _batch(v: Any, what: str, dim: int | None) -> None:
    _dict(v, what)
    size = _index(_field(v, 'size', what), f'{what} size', low=1)
    position = _index(_field(v, 'position', what), f'{what} position')
    if position >= size:
        raise _Bad(f'{what} position {position} is not below its size {size}')


def _bounds(v: Any, what: str, dim: int | None) -> None:
    b = _matrix(v, what, 2, dim, MAX_ABS_COORDINATE)
    if not all(hi > lo for lo, hi in zip(*b)):
        raise _Bad(f'{what} {b} does not have upper > lower')


def _index_list(v: Any, what: str, dim: int | None) -> None:
    if not isinstance(v, list):
        raise _Bad(f'{what} is {_describe(v)}, not a list of indices')
    for i in v:
        _index(i, what)


_Check = Callable[[Any, str, 'int | None'], Any]
_COORDS: _Check = _vector   # of the journal's dimension: a measurement's target and its location's
#: any finite point (a decision's target may have more coordinates than the search space: a quadrature method
#: decides in a joint (target, context) space)
_POINT: _Check = lambda v, what, dim: _vector(v, what, None)   # noqa: E731
_READING: _Check = lambda v, what, dim: _number(v, what, MAX_ABS_READING)   # noqa: E731
_VARIANCE: _Check = lambda v, what, dim: _number(v, what, MAX_ABS_READING ** 2, low=0.0)   # noqa: E731
_NON_NEGATIVE: _Check = lambda v, what, dim: _number(v, what, low=0.0)   # noqa: E731
_TIME: _Check = lambda v, what, dim: _number(v, what)   # noqa: E731
_INDEX: _Check = lambda v, what, dim: _index(v, what)   # noqa: E731
_TEXT: _Check = lambda v, what, dim: _str(v, what)   # noqa: E731
_FLAG: _Check = lambda v, what, dim: _bool(v, what)   # noqa: E731
_OBJECT: _Check = lambda v, what, dim: _dict(v, what)   # noqa: E731

#: record type -> (required fields, optional fields), each field -> its check ``(value, what, dim)``
RECORD_TYPES: dict[str, tuple[dict[str, _Check], dict[str, _Check]]] = {
    'header': ({'format': _TEXT, 'version': lambda v, what, dim: _index(v, what, low=1)},
               {'created': _TIME, 'run_id': _optional(_TEXT), 'method': _TEXT, 'bounds': _bounds,
                'seed': _optional(lambda v, what, dim: _index(v, what, low=-2 ** 63)), 'parameters': _OBJECT}),
    'start': ({'position': _POINT}, {'wall_time': _TIME}),
    'bounds': ({'bounds': _bounds}, {'index': _INDEX, 'wall_time': _TIME}),
    'decision': ({'index': _INDEX, 'target': _POINT},
                 {'phase': _TEXT, 'seconds': _NON_NEGATIVE, 'fit_seconds': _NON_NEGATIVE,
                  'acquisition_value': _optional(_TIME), 'beta': _optional(_TIME), 'wall_time': _TIME,
                  'kept_out_from': _POINT, 'batch': _batch, 'rover': _TEXT}),
    'observation': ({'index': _INDEX, 'target': _COORDS, 'location': _location, 'y': _READING},
                    {'reading_variance': _VARIANCE, 'goal_timed_out': _FLAG, 'distance_driven_m': _NON_NEGATIVE,
                     'mission_time_s': _NON_NEGATIVE, 'wall_time': _TIME, 'rover': _TEXT, 'seq': _INDEX}),
    'en_route': ({'index': _INDEX, 'measurements': _INDEX, 'location': _location, 'y': _READING},
                 {'reading_variance': _VARIANCE, 'distance_driven_m': _NON_NEGATIVE,
                  'mission_time_s': _NON_NEGATIVE, 'wall_time': _TIME}),
    'recommendation': ({'index': _INDEX, 'target': _POINT, 'mean': _READING, 'std': _NON_NEGATIVE},
                       {'location_mean': _COORDS, 'location_covariance': _covariance}),
    'parameters': ({'changed': _OBJECT}, {'index': _INDEX, 'wall_time': _TIME}),
    'keep_out': ({'index': lambda v, what, dim: _index(v, what, low=-1), 'centre': _POINT,
                  'radius': lambda v, what, dim: _number(v, what, MAX_ABS_COORDINATE, positive=True)},
                 {'reason': _TEXT, 'wall_time': _TIME}),
    'resume': ({'measurements': _INDEX, 'lost_indices': _index_list, 'lost_en_route_indices': _index_list,
                'records_skipped': _INDEX}, {'wall_time': _TIME}),
}

#: record types numbered 0, 1, 2, ... each in its own sequence
INDEXED = ('observation', 'en_route')

#: what a field is, for messages (``observation 'y' (the reading) is NaN``)
_MEANING = {'y': ' (the reading)', 'reading_variance': ' (the reading variance)'}


def record_problem(record: Any, dim: int | None = None) -> str | None:
    """Why ``record`` breaks the schema (one line, starting with its type), or None when it is valid.

    Args:
        record: one parsed journal line.
        dim: the journal's dimension (coordinates of another length are refused), or None (not checked).

    Returns:
        e.g. ``"observation 'y' (the reading) is NaN"``; None for a valid record or one of an unknown type.
    """
    if not isinstance(record, dict):
        return f'record is {_describe(record)}, not an object'
    kind = record.get('type')
    if not isinstance(kind, str):
        return f'record has no type ({_describe(kind)})'
    if kind not in RECORD_TYPES:
        return None
    required, optional = RECORD_TYPES[kind]
    try:
        for name, check in required.items():
            what = f'{name!r}{_MEANING.get(name, "")}'
            if name not in record:
                raise _Bad(f'{what} is missing')
            check(record[name], what, dim)
        for name, check in optional.items():
            if name in record:
                check(record[name], f'{name!r}{_MEANING.get(name, "")}', dim)
    except _Bad as exc:
        return f'{kind} {exc}'
    return None


def header_problem(header: dict[str, Any]) -> str | None:
    """Why the header's fields break the schema (its format and version are the journal's to judge), or None."""
    return record_problem(header)


def journal_dimension(header: dict[str, Any], records: Sequence[dict[str, Any]]) -> int | None:
    """The journal's search-space dimension: the header's ``bounds`` ``[[lower], [upper]]`` when valid, else the
    first valid-looking location's, else None."""
    bounds = header.get('bounds')
    if record_problem({'type': 'bounds', 'bounds': bounds}) is None:
        return len(bounds[0])
    for rec in records:
        if (isinstance(rec, dict) and rec.get('type') in ('observation', 'en_route')
                and record_problem(rec) is None):
            return _location_dim(rec['location'])
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


def check_journal(header: dict[str, Any], lines: Sequence[tuple[int, dict[str, Any]]]) -> Checked:
    """Check a journal's records against the schema (module docstring) and number its indexed records.

    Nothing is raised: the caller decides (strict: the first :class:`Damage` is an error; lenient: keep
    :attr:`Checked.records`). Reordered records are damage (each out-of-order one), but nothing is missing.

    Args:
        header: the header record (its ``bounds`` give the dimension).
        lines: ``(line number, record)`` of every record after the header, in file order.

    Returns:
        The records kept, the damage found, and the numbering (:class:`Checked`).
    """
    dim = journal_dimension(header, [rec for _, rec in lines])
    resumes = [rec for _, rec in lines   # gaps a resume declared are repairs, wherever the resume record is
               if isinstance(rec, dict) and rec.get('type') == 'resume' and record_problem(rec, dim) is None]
    # every index below the next one has its line or was declared lost: an index beyond the lines and the
    # declarations is damaged (and must not make the numbering, and the lists of lost indices, jump by billions)
    cap = len(lines) + sum(len(r['lost_indices']) + len(r['lost_en_route_indices']) for r in resumes)
    lost: dict[str, set[int]] = {name: set() for name in INDEXED}
    for rec in resumes:
        lost['observation'].update(i for i in rec['lost_indices'] if i <= cap)
        lost['en_route'].update(i for i in rec['lost_en_route_indices'] if i <= cap)
    seqs = {name: _Sequence(name, lost[name], cap) for name in lost}
    out = Checked()
    for line, rec in lines:
        problem = record_problem(rec, dim)
        kind = rec.get('type') if isinstance(rec, dict) else None
        if problem is not None:
            out.damage.append(Damage(line, problem, skipped=True, kind=kind if isinstance(kind, str) else ''))
            if kind in seqs:
                seqs[kind].note_skipped(rec)
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

"""The journal's schema: every record type a run's journal holds, its fields and the values they may take, and
what the journal declares about its run (:class:`JournalContext`), against which each record is judged
(:func:`record_problem`). The check of a whole journal (the numbering of its indexed records, revisions in order,
plausible lost indices) is :mod:`uncertain_bo.journal.check`; the values a field may take, one check per kind, are
:mod:`uncertain_bo.journal.values`.

Record types (``*`` required; the others are checked when present; any other field is allowed, so a later
writer of the same version can add some)::

    header          format*, version*, created, run_id, method, bounds, seed, parameters
    start           position*, wall_time
    bounds          bounds*, index, wall_time
    decision        index*, target*, phase, seconds, fit_seconds, acquisition_value, beta, wall_time,
                    kept_out_from, batch {size*, position*}, rover
    observation     index*, target*, location*, y*, reading_variance, goal_timed_out, distance_driven_m,
                    mission_time_s, wall_time, rover, seq, reading_stamp, pose_stamp
    en_route        index*, measurements*, location*, y*, reading_variance, distance_driven_m, mission_time_s,
                    wall_time, reading_stamp, pose_stamp
    recommendation  index*, target*, mean*, std*, location_mean, location_covariance
    parameters      changed*, index, wall_time
    keep_out        index*, centre*, radius*, reason, wall_time
    resume          measurements*, lost_indices*, lost_en_route_indices*, records_skipped*, wall_time
    revision        revises*, index*, stamp*, location*, source, wall_time, rover, seq
    relocalisation  phase*, index*, position*, kind, source, centre, target, sigma_l, lengthscale, threshold,
                    detour_m, cost_s, seconds, reason, stamp, wall_time

Values: numbers finite, readings and coordinates within sane magnitudes, locations valid distributions, indices
integers >= 0, the header's method registered and its run parameters valid (:mod:`uncertain_bo.journal.values`).

Semantic checks (:class:`JournalContext`: what the journal itself declares):

- **run identity**: a new journal's header has a ``run_id``, and :meth:`~uncertain_bo.journal.journal.Journal.append`
  writes it into every record; a record with another ``run_id`` (a line of another run's journal, renumbered or
  not) is damage; a second ``header`` record (a journal appended to another, or a forged one) is damage;
- **bounds**: a start, a target (a decision's first ``d`` coordinates), a location's mean, a keep-out centre lies
  within the search area (the union of every search box the journal declares: the header's ``bounds`` and
  ``parameters.search_bounds``, ``bounds`` records, changed ``search_bounds``) widened on every side by
  :data:`PLAUSIBLE_MARGIN` (10 km) or the area's diagonal, whichever is larger: a rover may start at a depot and
  drive there taking en-route readings, but not from (1e6, 1e6) m; a keep-out zone that covers the whole area
  (nothing left to propose) is damage;
- **weights**: an empirical location's weights have a finite positive sum;
- **lost indices plausible**: a ``resume`` record's declared indices increase and none lies beyond what the
  journal can have held (its lines, the indices earlier ``resume`` records declared, and the lines removed since,
  at most one per index it declares and no more than the journal has lines); a record declaring 100,000 lost
  indices in a 40-line journal is damage, and its declarations are ignored.

A journal without bounds (a library user's) gets no bounds checks; one without a header ``run_id`` (written
before version 1 had it) no identity check.

A ``revision`` record is a revised location distribution of a stored reading (:mod:`uncertain_bo.planning.revisions`):
``revises`` (``observation`` or ``en_route``) and ``index`` name the reading, ``stamp`` is the localiser's stamp of
the revision (s), ``location`` the revised distribution (checked as a reading's location is: finite, a valid
covariance, within the search area plus the margin). Revisions are append-only: the reading's own record keeps the
location it was stored with, and a reader applies each reading's revisions in file order (the last one kept is its
location). Whether a revision is in order is the whole journal's check (:mod:`uncertain_bo.journal.check`).

A ``relocalisation`` record is one step of a re-localisation the explorer decided
(:mod:`uncertain_bo.explorer.relocalising`): ``phase`` ``'start'`` (``kind`` ``'fix_source'`` or ``'surface'``,
the source, the position estimate and its std ``sigma_l`` then, the lengthscale and threshold of the rule, the
target it was taken for) or ``'end'`` (``sigma_l`` after it, the ``seconds`` it took, the ``reason`` it ended);
``index`` is the number of measurements stored before it. It holds no reading: a reader counts re-localisations
from it, never a measurement.

A ``resume`` record is what a planner appends when it resumed a journal that had lost records (skipped as damaged,
or missing): the indices it lost are then declared (``lost_indices``, ``lost_en_route_indices``), later
records number on after the highest index the journal ever held (so no index is used twice), and a gap at a
declared index is no longer damage (removing the bad line is a repair).

Unknown record types are kept and not checked: the journal's rule since version 1 is that a reader skips a type
it does not know (so a newer writer can add one without a new version). A record without a string ``type`` is
damaged, and so is a line that is not a JSON object at all (:class:`~uncertain_bo.journal.journal.Journal` hands such
lines to :func:`~uncertain_bo.journal.check.check_journal` as ``unreadable``: cut short, not JSON, nested deeper
than the loader reads, or holding an unpaired surrogate); a torn *last* line is the loader's (skipped, not damage).

The checks are hand-written rather than a JSON-Schema document: most of what matters (finite numbers,
magnitudes, positive semi-definite covariances, index order across records) is beyond what JSON Schema says.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from .values import (COORDS, FLAG, INDEX, MAX_ABS_COORDINATE, NON_NEGATIVE, PHASE, POINT, READING, REVISES, TEXT, TIME,
                     VARIANCE, Check, FieldProblem, batch, bounds, covariance, describe, index_list, integer, location,
                     location_dim, location_mean, method, number, optional, run_parameters, search_box)

__all__ = ['RECORD_TYPES', 'PLAUSIBLE_MARGIN', 'JournalContext', 'record_problem', 'header_problem', 'version_problem',
           'journal_context', 'journal_dimension', 'journal_run_id']

#: m: a point further than this (or the search area's diagonal, if larger) outside every search box the journal
#: declares cannot be where the rover was or was sent (module docstring)
PLAUSIBLE_MARGIN = 10_000.0

#: record type -> (required fields, optional fields), each field -> its check ``(value, what, dim)``
RECORD_TYPES: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    'header': ({'format': TEXT, 'version': lambda v, what, dim: integer(v, what, low=1)},
               {'created': TIME, 'run_id': optional(TEXT), 'method': method, 'bounds': bounds,
                'seed': optional(lambda v, what, dim: integer(v, what, low=-2 ** 63, high=2 ** 64)),
                'parameters': run_parameters}),
    'start': ({'position': POINT}, {'wall_time': TIME}),
    'bounds': ({'bounds': bounds}, {'index': INDEX, 'wall_time': TIME}),
    'decision': ({'index': INDEX, 'target': POINT},
                 {'phase': TEXT, 'seconds': NON_NEGATIVE, 'fit_seconds': NON_NEGATIVE,
                  'acquisition_value': optional(TIME), 'beta': optional(TIME), 'wall_time': TIME,
                  'kept_out_from': POINT, 'batch': batch, 'rover': TEXT}),
    'observation': ({'index': INDEX, 'target': COORDS, 'location': location, 'y': READING},
                    {'reading_variance': VARIANCE, 'goal_timed_out': FLAG, 'distance_driven_m': NON_NEGATIVE,
                     'mission_time_s': NON_NEGATIVE, 'wall_time': TIME, 'rover': TEXT, 'seq': INDEX,
                     'reading_stamp': TIME, 'pose_stamp': TIME}),
    'en_route': ({'index': INDEX, 'measurements': INDEX, 'location': location, 'y': READING},
                 {'reading_variance': VARIANCE, 'distance_driven_m': NON_NEGATIVE,
                  'mission_time_s': NON_NEGATIVE, 'wall_time': TIME, 'reading_stamp': TIME, 'pose_stamp': TIME}),
    'recommendation': ({'index': INDEX, 'target': POINT, 'mean': READING, 'std': NON_NEGATIVE},
                       {'location_mean': COORDS, 'location_covariance': covariance}),
    'parameters': ({'changed': run_parameters}, {'index': INDEX, 'wall_time': TIME}),
    'keep_out': ({'index': lambda v, what, dim: integer(v, what, low=-1), 'centre': POINT,
                  'radius': lambda v, what, dim: number(v, what, MAX_ABS_COORDINATE, positive=True)},
                 {'reason': TEXT, 'wall_time': TIME}),
    'resume': ({'measurements': INDEX, 'lost_indices': index_list, 'lost_en_route_indices': index_list,
                'records_skipped': INDEX}, {'wall_time': TIME}),
    'revision': ({'revises': REVISES, 'index': INDEX, 'stamp': TIME, 'location': location},
                 {'source': TEXT, 'wall_time': TIME, 'rover': TEXT, 'seq': INDEX}),
    'relocalisation': ({'phase': PHASE, 'index': INDEX, 'position': POINT},
                       {'kind': TEXT, 'source': INDEX, 'centre': POINT, 'target': POINT,
                        'sigma_l': NON_NEGATIVE, 'lengthscale': NON_NEGATIVE, 'threshold': NON_NEGATIVE,
                        'detour_m': TIME, 'cost_s': NON_NEGATIVE, 'seconds': NON_NEGATIVE, 'reason': TEXT,
                        'stamp': TIME, 'wall_time': TIME}),
}

for _kind, (_, _optional_fields) in RECORD_TYPES.items():   # the run a record belongs to (module docstring)
    if _kind != 'header':
        _optional_fields['run_id'] = TEXT

#: what a field is, for messages (``observation 'y' (the reading) is NaN``)
_MEANING = {'y': ' (the reading)', 'reading_variance': ' (the reading variance)'}


@dataclass(frozen=True)
class JournalContext:
    """What a journal declares about its run, against which its records are judged (module docstring).

    Attributes:
        dim: the search space's dimension (:func:`journal_dimension`), or None (coordinates of any length).
        area: ``(lower (d,), upper (d,))`` the union of the search boxes the journal declares, m, or None.
        run_id: the header's ``run_id``, or None (a journal written before it was recorded).

    Example:
        >>> context = JournalContext(dim=2, area=((0.0, 0.0), (100.0, 100.0)))
        >>> context.margin
        10000.0
        >>> record_problem({'type': 'start', 'position': [5e5, 5e5]}, context=context)
        "start 'position' (500000, 500000) is ... m outside the search area [0, 100] x [0, 100], beyond any plausible
        drive (10000 m)"
    """

    dim: int | None = None
    area: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    run_id: str | None = None

    @property
    def margin(self) -> float:
        """m a point may lie outside :attr:`area`: :data:`PLAUSIBLE_MARGIN` or the area's diagonal if larger."""
        lo, hi = self.area
        return max(PLAUSIBLE_MARGIN, math.dist(lo, hi))

    def implausible(self, point: Sequence[float], what: str) -> None:
        """Raise when ``point`` (its first :attr:`dim` coordinates) lies further than :attr:`margin` outside
        :attr:`area`; points of fewer coordinates are not judged here."""
        if self.area is None or len(point) < len(self.area[0]):
            return
        lo, hi = self.area
        outside = math.hypot(*(max(a - x, x - b, 0.0) for x, a, b in zip(point, lo, hi)))
        if outside > self.margin:
            where = ', '.join(f'{x:g}' for x in point[:len(lo)])
            raise FieldProblem(f'{what} ({where}) is {outside:.0f} m outside the search area {_box(self.area)}, '
                               f'beyond any plausible drive ({self.margin:.0f} m)')

    def covers_area(self, centre: Sequence[float], radius: float) -> bool:
        """Whether the ball (``centre``, ``radius``) holds every corner of :attr:`area` (and so all of it)."""
        if self.area is None or len(centre) != len(self.area[0]):
            return False
        lo, hi = self.area
        return math.hypot(*(max(abs(c - a), abs(b - c)) for c, a, b in zip(centre, lo, hi))) <= radius


def _box(area: tuple[Sequence[float], Sequence[float]]) -> str:
    return ' x '.join(f'[{a:g}, {b:g}]' for a, b in zip(*area))


def _plausible(kind: str, rec: dict, ctx: JournalContext) -> None:
    """The semantic checks of one valid record of a known type (module docstring); raises :class:`FieldProblem`."""
    rid = rec.get('run_id')
    if rid is not None and rid != ctx.run_id:
        raise FieldProblem(f"is from another run (run_id {describe(rid)}; this journal's is {describe(ctx.run_id)})")
    points = {'start': ('position',), 'observation': ('target',), 'decision': ('target', 'kept_out_from'),
              'recommendation': ('target', 'location_mean'), 'keep_out': ('centre',),
              'relocalisation': ('position', 'centre', 'target')}.get(kind, ())
    for name in points:
        if name in rec:
            ctx.implausible(rec[name], repr(name))
    if kind in ('observation', 'en_route', 'revision'):
        ctx.implausible(location_mean(rec['location']), "'location' mean")
    if kind == 'keep_out' and ctx.covers_area(rec['centre'], rec['radius']):
        raise FieldProblem(f"zone (radius {rec['radius']:g} m) covers the whole search area {_box(ctx.area)}: no "
                           'target would be left')


def record_problem(record: Any, dim: int | None = None, context: JournalContext | None = None) -> str | None:
    """Why ``record`` breaks the schema (one line, starting with its type), or None when it is valid.

    Args:
        record: one parsed journal line.
        dim: the journal's dimension (coordinates of another length are refused), or None (not checked).
        context: what the journal declares (:func:`journal_context`; its ``dim`` replaces ``dim``): with it, the
            semantic checks too (run identity, points within the search area plus the plausible margin, keep-out
            zones that leave some of the area).

    Returns:
        e.g. ``"observation 'y' (the reading) is NaN"``; None for a valid record or one of an unknown type.
    """
    if not isinstance(record, dict):
        return f'record is {describe(record)}, not an object'
    kind = record.get('type')
    if not isinstance(kind, str):
        return f'record has no type ({describe(kind)})'
    if kind not in RECORD_TYPES:
        return None
    if context is not None:
        dim = context.dim
    required, optional_fields = RECORD_TYPES[kind]
    try:
        for name, check in required.items():
            what = f'{name!r}{_MEANING.get(name, "")}'
            if name not in record:
                raise FieldProblem(f'{what} is missing')
            check(record[name], what, dim)
        for name, check in optional_fields.items():
            if name in record:
                check(record[name], f'{name!r}{_MEANING.get(name, "")}', dim)
        if context is not None and kind != 'header':
            _plausible(kind, record, context)
    except FieldProblem as exc:
        return f'{kind} {exc}'
    return None


def header_problem(header: dict[str, Any], records: Sequence[Any] = ()) -> str | None:
    """Why the header's fields break the schema (its format and version are the journal's to judge), or None; with
    the journal's ``records``, also a ``run_id`` that no record carries while they carry another
    (:func:`journal_run_id`)."""
    problem = record_problem(header)
    if problem is None and records:
        run_id = journal_run_id(header, records)
        if run_id != header.get('run_id'):
            problem = (f"header 'run_id' {header['run_id']!r} is carried by no record; they carry {run_id!r} (a "
                       'damaged header)')
    return problem


def version_problem(header: Any) -> str | None:
    """Why ``header`` (the first record) does not say which version of the journal format it is, or None.

    A journal whose version cannot be read cannot be read at all: every reader refuses it (a resume too)."""
    if not isinstance(header, dict):
        return record_problem(header)
    return record_problem({k: header[k] for k in ('type', 'format', 'version') if k in header})


def journal_dimension(header: dict[str, Any], records: Sequence[dict[str, Any]]) -> int | None:
    """The journal's search-space dimension: the header's ``bounds`` ``[[lower], [upper]]`` when valid, else its
    parameters' ``search_bounds`` (2), else the first valid-looking location's, else None."""
    bounds = header.get('bounds')
    if record_problem({'type': 'bounds', 'bounds': bounds}) is None:
        return len(bounds[0])
    if search_box(header.get('parameters')) is not None:
        return 2
    for rec in records:
        if (isinstance(rec, dict) and rec.get('type') in ('observation', 'en_route')
                and record_problem(rec) is None):
            return location_dim(rec['location'])
    return None


def journal_context(header: dict[str, Any], records: Sequence[Any]) -> JournalContext:
    """What the journal declares (:class:`JournalContext`): its dimension, the union of its valid search boxes of
    that dimension (the header's ``bounds`` and ``parameters.search_bounds``, ``bounds`` records, ``parameters``
    records' changed ``search_bounds``; wherever they are in the file) and the header's ``run_id``."""
    dim = journal_dimension(header, records)
    boxes = [header.get('bounds'), search_box(header.get('parameters'))]
    for rec in records:
        if isinstance(rec, dict) and rec.get('type') == 'bounds':
            boxes.append(rec.get('bounds'))
        elif isinstance(rec, dict) and rec.get('type') == 'parameters':
            boxes.append(search_box(rec.get('changed')))
    boxes = [b for b in boxes if record_problem({'type': 'bounds', 'bounds': b}, dim) is None]
    area = None
    if boxes and dim is not None:
        area = (tuple(min(b[0][i] for b in boxes) for i in range(dim)),
                tuple(max(b[1][i] for b in boxes) for i in range(dim)))
    return JournalContext(dim, area, journal_run_id(header, records))


def journal_run_id(header: dict[str, Any], records: Sequence[Any]) -> str | None:
    """The run the journal's records belong to: the header's ``run_id``; but when no record carries it and some
    carry another, the first of those (a byte of the header's was damaged: one flipped character must not make
    every record foreign; :func:`header_problem` names it). None for a header without one (an older journal: any
    record carrying a ``run_id`` is then foreign)."""
    own = header.get('run_id')
    if not isinstance(own, str):
        return None
    carried = (r['run_id'] for r in records if isinstance(r, dict) and isinstance(r.get('run_id'), str))
    first = None
    for rid in carried:
        if rid == own:
            return own
        first = first or rid
    return first or own

"""The journal's schema: every record type a run's journal holds, its fields and the values they may take, and the
order of the indexed records. :class:`~uncertain_bo.journal.journal.Journal` checks a journal against it when it loads
one.

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

Values:

- numbers are numbers (not ``true``/``false``) and finite: JSON has no NaN or Infinity, but Python's ``json``
  reads the ``NaN``/``Infinity`` tokens, so a damaged or hand-edited journal can hold them;
- readings (``y``) and predicted means lie within ±:data:`MAX_ABS_READING` (1e12, the outermost ``reading_range``
  the explorer accepts, ``uncertain_bo.explorer.parameters.MAX_ABS_READING``: no reading beyond it can have come
  from a sensor through the explorer, and the GP's standardisation of the readings stays far from overflow; not
  the run's own ``reading_range``, which a restart with another parameter file may widen without a record);
  a reading variance lies in [0, MAX_ABS_READING²];
- coordinates (targets, location means and particles, keep-out centres, bounds, the start) lie within
  ±:data:`MAX_ABS_COORDINATE` m (1e7, ``uncertain_bo.explorer.input_checks.MAX_ABS_COORDINATE``: the explorer refuses
  poses beyond it); a measurement's target and location have the journal's dimension (the header's ``bounds``,
  else the first location's; a decision's target may have more: a quadrature method decides in a joint
  (target, context) space);
- a location is a Dirac (``mean``), a Gaussian (``mean``, ``covariance``: finite, symmetric, positive
  semi-definite, :func:`~uncertain_bo.distributions.check_covariance`) or an empirical distribution
  (``samples``, optional non-negative ``weights`` with a positive sum); a recommendation's ``location_covariance`` (the
  covariance of the location distribution of the reading it names) is checked as a Gaussian location's;
- indices and counts are integers >= 0 (a keep-out's ``index`` may be -1: no measurement); an integer too large
  for a float (a 400-digit number) is damage, not an overflow;
- the header's ``format`` and ``version`` say which reader can read the file: a version that is not an integer
  >= 1 is an error for every reader (:class:`~uncertain_bo.journal.journal.Journal`), whatever the use;
- the header's ``method`` is a registered method, and the run parameters a reader uses (the header's
  ``parameters``, a ``parameters`` record's ``changed``) are valid as the explorer validates them: ``search_bounds``
  (four numbers within ±1e7 m, xmax > xmin and ymax > ymin), ``execution_noise_std`` (each in [0, 1000] m), and
  ``reading_type`` a string.

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

Order: observations are numbered 0, 1, 2, ... in file order, each index once; en-route readings have their own
numbering 0, 1, 2, ... (the index among the en-route readings), and each one's ``measurements`` is the index of
the next observation (the observations stored before it). Decisions, recommendations and the rest repeat
indices legitimately (a decision is made again after a restart or a change of bounds) and are not ordered.

A ``revision`` record is a revised location distribution of a stored reading (:mod:`uncertain_bo.planning.revisions`):
``revises`` (``observation`` or ``en_route``) and ``index`` name the reading, ``stamp`` is the localiser's stamp of
the revision (s), ``location`` the revised distribution (checked as a reading's location is: finite, a valid
covariance, within the search area plus the margin). Revisions are append-only: the reading's own record keeps the
location it was stored with, and a reader applies each reading's revisions in file order (the last one kept is its
location). A revision is damage, skipped and counted (:func:`revision_order_problem`, the rule a running planner
applies too) when no kept record before it holds the reading it revises (not stored yet, lost, or skipped as
damaged), or when it is **out of order**: its stamp is not after the stamp of the last revision of that reading kept
before it, or is before the ``pose_stamp`` of the reading's own record (the estimate it would revise is newer).

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
lines to :func:`check_journal` as ``unreadable``: cut short, not JSON, nested deeper than the loader reads, or
holding an unpaired surrogate); a torn *last* line is the loader's (skipped, not damage).

Two uses (:func:`check_journal`): **strict** (``uncertain-bo report`` and ``export``: the first problem is an
error naming its line, so nothing is reported from a damaged journal) and **lenient** (a mission resuming its
journal: a damaged record or unreadable line is skipped and counted, a missing one counted, and the mission goes
on, since losing it all is worse than losing a record). Both see the same problems: what one refuses, the other
skips. A duplicated observation counts once; a second record with the index of
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

from ..distributions import check_covariance
from ..parameters.run_area import RUN_AREA_PARAMS, search_bounds_problem
from ..parameters.specs import ParameterError

__all__ = ['RECORD_TYPES', 'INDEXED', 'MAX_ABS_READING', 'MAX_ABS_COORDINATE', 'PLAUSIBLE_MARGIN', 'Damage', 'Checked',
           'JournalContext', 'record_problem', 'header_problem', 'version_problem', 'check_journal',
           'journal_context', 'journal_dimension', 'journal_run_id', 'revision_order_problem']

#: readings and predicted means beyond ± this are damage (the explorer's outermost ``reading_range``)
MAX_ABS_READING = 1e12
#: coordinates beyond ± this (m) are damage (the explorer refuses poses beyond it)
MAX_ABS_COORDINATE = 1e7
#: m: a point further than this (or the search area's diagonal, if larger) outside every search box the journal
#: declares cannot be where the rover was or was sent (module docstring)
PLAUSIBLE_MARGIN = 10_000.0


class _Bad(ValueError):
    """One field breaks the schema (the message says how, without the record type)."""


def _describe(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f'an integer of {len(str(abs(v)))} digits'
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
    if isinstance(v, int) and v.bit_length() > 1024:   # beyond any float: math.isfinite would overflow
        raise _Bad(f'{what} is {_describe(v)}, too large')
    if not math.isfinite(v):
        raise _Bad(f'{what} is {_describe(v)}')
    if limit is not None and abs(v) > limit:
        raise _Bad(f'{what} is {v:g}, beyond ±{limit:g}')
    if low is not None and v < low:
        raise _Bad(f'{what} is {v:g}, below {low:g}')
    if positive and not v > 0:
        raise _Bad(f'{what} is {v:g}, not > 0')
    return float(v)


def _index(v: Any, what: str, low: int = 0, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Bad(f'{what} is {_describe(v)}, not an integer')
    if v < low:
        raise _Bad(f'{what} is {_describe(v)}, below {low}')
    if high is not None and v > high:
        raise _Bad(f'{what} is {_describe(v)}, above {high}')
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
    try:
        a = np.asarray(v, dtype=np.float64)
    except OverflowError:   # an integer beyond any float: _vector names it
        return False
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
            if min(w) < 0 or not 0 < sum(w) < math.inf:
                raise _Bad(f'{what} weights must be >= 0 with a positive, finite sum')
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


def _location_mean(v: dict) -> list[float]:
    """The mean of a valid location record (an empirical one's weighted sample mean)."""
    if v['kind'] != 'empirical':
        return v['mean']
    samples = np.asarray(v['samples'], dtype=np.float64)
    w = v.get('weights')
    return np.average(samples, axis=0, weights=None if w is None else np.asarray(w, dtype=np.float64)).tolist()


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
    if any(b <= a for a, b in zip(v, v[1:])):
        raise _Bad(f'{what} is not in increasing order (an index declared twice)')


def _method(v: Any, what: str, dim: int | None) -> None:
    from ..acquisition import METHODS   # lazy: the registry imports the models
    _str(v, what)
    if v not in METHODS:
        raise _Bad(f'{what} is {_describe(v)}, not a method of this uncertain_bo')


def _run_parameters(v: Any, what: str, dim: int | None) -> None:
    """Check the run parameters a reader uses (``report``: the search area, the execution noise, the reading's unit)
    with the explorer's own parameter specs (:data:`~uncertain_bo.parameters.run_area.RUN_AREA_PARAMS`;
    ``reading_type``: any string; an unknown one is reported in sensor units)."""
    _dict(v, what)
    specs = {p.name: p for p in RUN_AREA_PARAMS}
    checked = {}
    for name, spec in specs.items():
        if name in v:
            try:
                checked[name] = spec.check(v[name])
            except ParameterError as exc:
                raise _Bad(f'{what} {exc}') from None
    reason = search_bounds_problem(checked['search_bounds']) if 'search_bounds' in checked else None
    if reason:
        raise _Bad(f'{what} {reason}')
    if 'reading_type' in v:
        _str(v['reading_type'], f"{what} 'reading_type'")


def _search_box(parameters: Any) -> list[list[float]] | None:
    """``[[xmin, ymin], [xmax, ymax]]`` of valid run parameters' ``search_bounds``, or None."""
    if not isinstance(parameters, dict) or 'search_bounds' not in parameters:
        return None
    try:
        _run_parameters(parameters, 'parameters', None)
    except _Bad:
        return None
    xmin, xmax, ymin, ymax = (float(x) for x in parameters['search_bounds'])
    return [[xmin, ymin], [xmax, ymax]]


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


def _revises(v: Any, what: str, dim: int | None) -> None:
    if v not in ('observation', 'en_route'):
        raise _Bad(f"{what} is {_describe(v)}, not 'observation' or 'en_route'")


_REVISES: _Check = _revises


def _phase(v: Any, what: str, dim: int | None) -> None:
    if v not in ('start', 'end'):
        raise _Bad(f"{what} is {_describe(v)}, not 'start' or 'end'")


_PHASE: _Check = _phase

#: record type -> (required fields, optional fields), each field -> its check ``(value, what, dim)``
RECORD_TYPES: dict[str, tuple[dict[str, _Check], dict[str, _Check]]] = {
    'header': ({'format': _TEXT, 'version': lambda v, what, dim: _index(v, what, low=1)},
               {'created': _TIME, 'run_id': _optional(_TEXT), 'method': _method, 'bounds': _bounds,
                'seed': _optional(lambda v, what, dim: _index(v, what, low=-2 ** 63, high=2 ** 64)),
                'parameters': _run_parameters}),
    'start': ({'position': _POINT}, {'wall_time': _TIME}),
    'bounds': ({'bounds': _bounds}, {'index': _INDEX, 'wall_time': _TIME}),
    'decision': ({'index': _INDEX, 'target': _POINT},
                 {'phase': _TEXT, 'seconds': _NON_NEGATIVE, 'fit_seconds': _NON_NEGATIVE,
                  'acquisition_value': _optional(_TIME), 'beta': _optional(_TIME), 'wall_time': _TIME,
                  'kept_out_from': _POINT, 'batch': _batch, 'rover': _TEXT}),
    'observation': ({'index': _INDEX, 'target': _COORDS, 'location': _location, 'y': _READING},
                    {'reading_variance': _VARIANCE, 'goal_timed_out': _FLAG, 'distance_driven_m': _NON_NEGATIVE,
                     'mission_time_s': _NON_NEGATIVE, 'wall_time': _TIME, 'rover': _TEXT, 'seq': _INDEX,
                     'reading_stamp': _TIME, 'pose_stamp': _TIME}),
    'en_route': ({'index': _INDEX, 'measurements': _INDEX, 'location': _location, 'y': _READING},
                 {'reading_variance': _VARIANCE, 'distance_driven_m': _NON_NEGATIVE,
                  'mission_time_s': _NON_NEGATIVE, 'wall_time': _TIME, 'reading_stamp': _TIME, 'pose_stamp': _TIME}),
    'recommendation': ({'index': _INDEX, 'target': _POINT, 'mean': _READING, 'std': _NON_NEGATIVE},
                       {'location_mean': _COORDS, 'location_covariance': _covariance}),
    'parameters': ({'changed': _run_parameters}, {'index': _INDEX, 'wall_time': _TIME}),
    'keep_out': ({'index': lambda v, what, dim: _index(v, what, low=-1), 'centre': _POINT,
                  'radius': lambda v, what, dim: _number(v, what, MAX_ABS_COORDINATE, positive=True)},
                 {'reason': _TEXT, 'wall_time': _TIME}),
    'resume': ({'measurements': _INDEX, 'lost_indices': _index_list, 'lost_en_route_indices': _index_list,
                'records_skipped': _INDEX}, {'wall_time': _TIME}),
    'revision': ({'revises': _REVISES, 'index': _INDEX, 'stamp': _TIME, 'location': _location},
                 {'source': _TEXT, 'wall_time': _TIME, 'rover': _TEXT, 'seq': _INDEX}),
    'relocalisation': ({'phase': _PHASE, 'index': _INDEX, 'position': _POINT},
                       {'kind': _TEXT, 'source': _INDEX, 'centre': _POINT, 'target': _POINT,
                        'sigma_l': _NON_NEGATIVE, 'lengthscale': _NON_NEGATIVE, 'threshold': _NON_NEGATIVE,
                        'detour_m': _TIME, 'cost_s': _NON_NEGATIVE, 'seconds': _NON_NEGATIVE, 'reason': _TEXT,
                        'stamp': _TIME, 'wall_time': _TIME}),
}

for _kind, (_, _optional_fields) in RECORD_TYPES.items():   # the run a record belongs to (module docstring)
    if _kind != 'header':
        _optional_fields['run_id'] = _TEXT

#: record types numbered 0, 1, 2, ... each in its own sequence
INDEXED = ('observation', 'en_route')

#: what a field is, for messages (``observation 'y' (the reading) is NaN``)
_MEANING = {'y': ' (the reading)', 'reading_variance': ' (the reading variance)'}


@dataclass(frozen=True)
class JournalContext:
    """What a journal declares about its run, against which its records are judged (module docstring).

    Attributes:
        dim: the search space's dimension (:func:`journal_dimension`), or None (coordinates of any length).
        area: ``(lower (d,), upper (d,))`` the union of the search boxes the journal declares, m, or None.
        run_id: the header's ``run_id``, or None (a journal written before it was recorded).
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
            raise _Bad(f'{what} ({where}) is {outside:.0f} m outside the search area {_box(self.area)}, beyond any '
                       f'plausible drive ({self.margin:.0f} m)')

    def covers_area(self, centre: Sequence[float], radius: float) -> bool:
        """Whether the ball (``centre``, ``radius``) holds every corner of :attr:`area` (and so all of it)."""
        if self.area is None or len(centre) != len(self.area[0]):
            return False
        lo, hi = self.area
        return math.hypot(*(max(abs(c - a), abs(b - c)) for c, a, b in zip(centre, lo, hi))) <= radius


def _box(area: tuple[Sequence[float], Sequence[float]]) -> str:
    return ' x '.join(f'[{a:g}, {b:g}]' for a, b in zip(*area))


def _plausible(kind: str, rec: dict, ctx: JournalContext) -> None:
    """The semantic checks of one valid record of a known type (module docstring); raises :class:`_Bad`."""
    rid = rec.get('run_id')
    if rid is not None and rid != ctx.run_id:
        raise _Bad(f"is from another run (run_id {_describe(rid)}; this journal's is {_describe(ctx.run_id)})")
    points = {'start': ('position',), 'observation': ('target',), 'decision': ('target', 'kept_out_from'),
              'recommendation': ('target', 'location_mean'), 'keep_out': ('centre',),
              'relocalisation': ('position', 'centre', 'target')}.get(kind, ())
    for name in points:
        if name in rec:
            ctx.implausible(rec[name], repr(name))
    if kind in ('observation', 'en_route', 'revision'):
        ctx.implausible(_location_mean(rec['location']), "'location' mean")
    if kind == 'keep_out' and ctx.covers_area(rec['centre'], rec['radius']):
        raise _Bad(f"zone (radius {rec['radius']:g} m) covers the whole search area {_box(ctx.area)}: no target "
                   'would be left')


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
        return f'record is {_describe(record)}, not an object'
    kind = record.get('type')
    if not isinstance(kind, str):
        return f'record has no type ({_describe(kind)})'
    if kind not in RECORD_TYPES:
        return None
    if context is not None:
        dim = context.dim
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
        if context is not None and kind != 'header':
            _plausible(kind, record, context)
    except _Bad as exc:
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
    if _search_box(header.get('parameters')) is not None:
        return 2
    for rec in records:
        if (isinstance(rec, dict) and rec.get('type') in ('observation', 'en_route')
                and record_problem(rec) is None):
            return _location_dim(rec['location'])
    return None


def journal_context(header: dict[str, Any], records: Sequence[Any]) -> JournalContext:
    """What the journal declares (:class:`JournalContext`): its dimension, the union of its valid search boxes of
    that dimension (the header's ``bounds`` and ``parameters.search_bounds``, ``bounds`` records, ``parameters``
    records' changed ``search_bounds``; wherever they are in the file) and the header's ``run_id``."""
    dim = journal_dimension(header, records)
    boxes = [header.get('bounds'), _search_box(header.get('parameters'))]
    for rec in records:
        if isinstance(rec, dict) and rec.get('type') == 'bounds':
            boxes.append(rec.get('bounds'))
        elif isinstance(rec, dict) and rec.get('type') == 'parameters':
            boxes.append(_search_box(rec.get('changed')))
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

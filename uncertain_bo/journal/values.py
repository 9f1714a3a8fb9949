"""The values a journal record's fields may take, one check per kind of value: each raises
:class:`FieldProblem` naming what is wrong without the record type, which :func:`~uncertain_bo.journal.schema.
record_problem` adds. The record types and which field takes which check are the schema's
(:data:`~uncertain_bo.journal.schema.RECORD_TYPES`).

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
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..distributions import check_covariance
from ..parameters.run_area import RUN_AREA_PARAMS, search_bounds_problem
from ..parameters.specs import ParameterError

__all__ = ['MAX_ABS_READING', 'MAX_ABS_COORDINATE', 'FieldProblem', 'Check', 'describe', 'number', 'integer',
           'vector', 'matrix', 'location', 'covariance', 'location_dim', 'location_mean', 'field_of', 'text', 'flag',
           'json_object', 'optional', 'batch', 'bounds', 'index_list', 'method', 'run_parameters', 'search_box',
           'COORDS', 'POINT', 'READING', 'VARIANCE', 'NON_NEGATIVE', 'TIME', 'INDEX', 'TEXT', 'FLAG', 'OBJECT',
           'REVISES', 'PHASE']

#: readings and predicted means beyond ± this are damage (the explorer's outermost ``reading_range``)
MAX_ABS_READING = 1e12
#: coordinates beyond ± this (m) are damage (the explorer refuses poses beyond it)
MAX_ABS_COORDINATE = 1e7


class FieldProblem(ValueError):
    """One field breaks the schema (the message says how, without the record type).

    Example:
        >>> from uncertain_bo.journal.values import FieldProblem, READING, location
        >>> READING(412.3, "'y'", 2)
        412.3
        >>> gaussian = {'kind': 'gaussian', 'mean': [0.0, 1.0], 'covariance': [[1.0, 2.0], [2.0, 1.0]]}
        >>> try:
        ...     location(gaussian, "'location'", 2)
        ... except FieldProblem as exc:
        ...     print(exc)
        'location' covariance is not positive semi-definite...
    """


def describe(v: Any) -> str:
    """``v`` as a message shows it: short, and NaN, infinities and huge integers by name."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f'an integer of {len(str(abs(v)))} digits'
    if isinstance(v, float):
        if math.isnan(v):
            return 'NaN'
        if math.isinf(v):
            return 'Infinity' if v > 0 else '-Infinity'
    shown = repr(v)
    return shown if len(shown) <= 40 else shown[:37] + '...'


def number(v: Any, what: str, limit: float | None = None, low: float | None = None,
           positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise FieldProblem(f'{what} is {describe(v)}, not a number')
    if isinstance(v, int) and v.bit_length() > 1024:   # beyond any float: math.isfinite would overflow
        raise FieldProblem(f'{what} is {describe(v)}, too large')
    if not math.isfinite(v):
        raise FieldProblem(f'{what} is {describe(v)}')
    if limit is not None and abs(v) > limit:
        raise FieldProblem(f'{what} is {v:g}, beyond ±{limit:g}')
    if low is not None and v < low:
        raise FieldProblem(f'{what} is {v:g}, below {low:g}')
    if positive and not v > 0:
        raise FieldProblem(f'{what} is {v:g}, not > 0')
    return float(v)


def integer(v: Any, what: str, low: int = 0, high: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise FieldProblem(f'{what} is {describe(v)}, not an integer')
    if v < low:
        raise FieldProblem(f'{what} is {describe(v)}, below {low}')
    if high is not None and v > high:
        raise FieldProblem(f'{what} is {describe(v)}, above {high}')
    return v


def vector(v: Any, what: str, dim: int | None, limit: float = MAX_ABS_COORDINATE) -> list[float]:
    if not isinstance(v, list) or not v:
        raise FieldProblem(f'{what} is {describe(v)}, not a list of numbers')
    if dim is not None and len(v) != dim:
        raise FieldProblem(f'{what} has {len(v)} coordinates, the journal {dim}')
    return [number(x, what, limit) for x in v]


def matrix(v: Any, what: str, rows: int | None, dim: int | None, limit: float) -> list[list[float]]:
    if not isinstance(v, list) or not v or (rows is not None and len(v) != rows):
        raise FieldProblem(f'{what} is {describe(v)}, not a list of {rows or "some"} rows')
    if _plain_rows(v, dim, limit):   # the common case, in bulk (a particle cloud has hundreds of numbers)
        return v
    out = [vector(r, what, dim, limit) for r in v]
    if len({len(r) for r in out}) != 1:
        raise FieldProblem(f'{what} has rows of different lengths')
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
    except OverflowError:   # an integer beyond any float: vector names it
        return False
    return bool(np.isfinite(a).all() and np.abs(a).max() <= limit)


def location(v: Any, what: str, dim: int | None) -> None:
    if not isinstance(v, dict):
        raise FieldProblem(f'{what} is {describe(v)}, not a location record')
    kind = v.get('kind')
    if kind in ('dirac', 'gaussian'):
        mean = vector(field_of(v, 'mean', what), f'{what} mean', dim)
        if kind == 'gaussian':
            cov = matrix(field_of(v, 'covariance', what), f'{what} covariance', len(mean), len(mean),
                         MAX_ABS_COORDINATE ** 2)
            reason = check_covariance(cov)   # a list: the NumPy check (100x faster than a tensor's for one 2x2)
            if reason:
                raise FieldProblem(f'{what} covariance is {reason}')
    elif kind == 'empirical':
        samples = matrix(field_of(v, 'samples', what), f'{what} samples', None, dim, MAX_ABS_COORDINATE)
        if 'weights' in v and v['weights'] is not None:
            w = vector(v['weights'], f'{what} weights', len(samples), limit=math.inf)
            if min(w) < 0 or not 0 < sum(w) < math.inf:
                raise FieldProblem(f'{what} weights must be >= 0 with a positive, finite sum')
    else:
        raise FieldProblem(f'{what} kind is {describe(kind)}, not dirac, gaussian or empirical')


def covariance(v: Any, what: str, dim: int | None) -> None:
    cov = matrix(v, what, dim, dim, MAX_ABS_COORDINATE ** 2)
    if len(cov) != len(cov[0]):
        raise FieldProblem(f'{what} is not square')
    reason = check_covariance(cov)
    if reason:
        raise FieldProblem(f'{what} is {reason}')


def location_dim(v: dict) -> int:
    return len(v['samples'][0]) if v.get('kind') == 'empirical' else len(v['mean'])


def location_mean(v: dict) -> list[float]:
    """The mean of a valid location record (an empirical one's weighted sample mean)."""
    if v['kind'] != 'empirical':
        return v['mean']
    samples = np.asarray(v['samples'], dtype=np.float64)
    w = v.get('weights')
    return np.average(samples, axis=0, weights=None if w is None else np.asarray(w, dtype=np.float64)).tolist()


def field_of(rec: dict, name: str, what: str) -> Any:
    if name not in rec:
        raise FieldProblem(f'{what} has no {name!r}')
    return rec[name]


def text(v: Any, what: str) -> None:
    if not isinstance(v, str):
        raise FieldProblem(f'{what} is {describe(v)}, not a string')


def flag(v: Any, what: str) -> None:
    if not isinstance(v, bool):
        raise FieldProblem(f'{what} is {describe(v)}, not true or false')


def json_object(v: Any, what: str) -> None:
    if not isinstance(v, dict):
        raise FieldProblem(f'{what} is {describe(v)}, not an object')


def optional(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` for a field that may also be null."""
    def run(v: Any, what: str, dim: int | None) -> None:
        if v is not None:
            check(v, what, dim)
    return run


def batch(v: Any, what: str, dim: int | None) -> None:
    json_object(v, what)
    size = integer(field_of(v, 'size', what), f'{what} size', low=1)
    position = integer(field_of(v, 'position', what), f'{what} position')
    if position >= size:
        raise FieldProblem(f'{what} position {position} is not below its size {size}')


def bounds(v: Any, what: str, dim: int | None) -> None:
    b = matrix(v, what, 2, dim, MAX_ABS_COORDINATE)
    if not all(hi > lo for lo, hi in zip(*b)):
        raise FieldProblem(f'{what} {b} does not have upper > lower')


def index_list(v: Any, what: str, dim: int | None) -> None:
    if not isinstance(v, list):
        raise FieldProblem(f'{what} is {describe(v)}, not a list of indices')
    for i in v:
        integer(i, what)
    if any(b <= a for a, b in zip(v, v[1:])):
        raise FieldProblem(f'{what} is not in increasing order (an index declared twice)')


def method(v: Any, what: str, dim: int | None) -> None:
    from ..acquisition import METHODS   # lazy: the registry imports the models
    text(v, what)
    if v not in METHODS:
        raise FieldProblem(f'{what} is {describe(v)}, not a method of this uncertain_bo')


def run_parameters(v: Any, what: str, dim: int | None) -> None:
    """Check the run parameters a reader uses (``report``: the search area, the execution noise, the reading's unit)
    with the explorer's own parameter specs (:data:`~uncertain_bo.parameters.run_area.RUN_AREA_PARAMS`;
    ``reading_type``: any string; an unknown one is reported in sensor units)."""
    json_object(v, what)
    specs = {p.name: p for p in RUN_AREA_PARAMS}
    checked = {}
    for name, spec in specs.items():
        if name in v:
            try:
                checked[name] = spec.check(v[name])
            except ParameterError as exc:
                raise FieldProblem(f'{what} {exc}') from None
    reason = search_bounds_problem(checked['search_bounds']) if 'search_bounds' in checked else None
    if reason:
        raise FieldProblem(f'{what} {reason}')
    if 'reading_type' in v:
        text(v['reading_type'], f"{what} 'reading_type'")


def search_box(parameters: Any) -> list[list[float]] | None:
    """``[[xmin, ymin], [xmax, ymax]]`` of valid run parameters' ``search_bounds``, or None."""
    if not isinstance(parameters, dict) or 'search_bounds' not in parameters:
        return None
    try:
        run_parameters(parameters, 'parameters', None)
    except FieldProblem:
        return None
    xmin, xmax, ymin, ymax = (float(x) for x in parameters['search_bounds'])
    return [[xmin, ymin], [xmax, ymax]]


Check = Callable[[Any, str, 'int | None'], Any]
COORDS: Check = vector   # of the journal's dimension: a measurement's target and its location's
#: any finite point (a decision's target may have more coordinates than the search space: a quadrature method
#: decides in a joint (target, context) space)
POINT: Check = lambda v, what, dim: vector(v, what, None)   # noqa: E731
READING: Check = lambda v, what, dim: number(v, what, MAX_ABS_READING)   # noqa: E731
VARIANCE: Check = lambda v, what, dim: number(v, what, MAX_ABS_READING ** 2, low=0.0)   # noqa: E731
NON_NEGATIVE: Check = lambda v, what, dim: number(v, what, low=0.0)   # noqa: E731
TIME: Check = lambda v, what, dim: number(v, what)   # noqa: E731
INDEX: Check = lambda v, what, dim: integer(v, what)   # noqa: E731
TEXT: Check = lambda v, what, dim: text(v, what)   # noqa: E731
FLAG: Check = lambda v, what, dim: flag(v, what)   # noqa: E731
OBJECT: Check = lambda v, what, dim: json_object(v, what)   # noqa: E731


def revises(v: Any, what: str, dim: int | None) -> None:
    if v not in ('observation', 'en_route'):
        raise FieldProblem(f"{what} is {describe(v)}, not 'observation' or 'en_route'")


REVISES: Check = revises


def phase(v: Any, what: str, dim: int | None) -> None:
    if v not in ('start', 'end'):
        raise FieldProblem(f"{what} is {describe(v)}, not 'start' or 'end'")


PHASE: Check = phase

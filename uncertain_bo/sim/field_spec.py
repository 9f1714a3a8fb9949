"""How a :class:`~uncertain_bo.sim.field.Field` is specified: by name or by file, on an extent.

:data:`FIELD_NAMES` lists the built-in real fields (``--field NAME``, ``Field.load(NAME)``) with their measured
properties, :func:`catalogue` the shipped suites' named fields (``uncertain_bo/data/suites/*.yaml``);
:data:`DEFAULT_EXTENT` is the rectangle they are mapped onto unless told otherwise. Every problem with
a specification, a field file or an extent raises a one-line :class:`FieldError`. The fields themselves are built
in :mod:`uncertain_bo.sim.field` (names), :mod:`uncertain_bo.sim.field_files` (files) and
:mod:`uncertain_bo.sim.field_catalogue` (the shipped suites' fields).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Sequence

from ..user_errors import user_error

__all__ = ['FieldError', 'DEFAULT_EXTENT', 'FIELD_NAMES', 'BUILT_IN_UNIT', 'field_unit', 'catalogue', 'suite_of']

#: Default rectangle (xmin, xmax, ymin, ymax) in metres onto which the built-in field is mapped.
DEFAULT_EXTENT = (0.0, 200.0, 0.0, 200.0)


#: Named built-in fields for :meth:`Field.load` (``--field NAME``): name -> what it is. Measured on the
#: default 200 m x 200 m extent with :meth:`Field.statistics` (robust field ``g = Field.convolved(diag(0.75²))``,
#: normalised regret ``(g* - g) / (g* - median g)``; feature width = slope correlation length, the e-folding
#: lag of the autocorrelation of the terrain's slopes):
#:
#: ==================  ===========  ===============  =============  ===========  =============
#: name                values (m)   area within 0.1  feature width  correlation  robust peak
#:                                  regret of g*     (slopes, m)    length (m)   g* at (m)
#: ==================  ===========  ===============  =============  ===========  =============
#: jacksboro-rough     236 - 1076   0.17 %           1.3            27.2         (109.0, 26.8)
#: jacksboro-smooth    318 - 981    0.72 %           9.5            27.4         (0.0, 81.0)
#: ==================  ===========  ===============  =============  ===========  =============
#:
#: The correlation length of the (plane-detrended) values hardly separates the two: terrain is close to
#: self-similar, so its values stay correlated over a fixed fraction of whatever window is shown; the slopes
#: show the 8x zoom. ``'default'`` and ``'jacksboro'`` are ``'jacksboro-rough'``; the simulation's default
#: field (``config/sim.yaml``) is ``'jacksboro-smooth'``. On another extent the lengths scale with it, and the
#: area fraction changes with the execution noise relative to the extent.
FIELD_NAMES = {
    'default': "the library's built-in field, 'jacksboro' (the simulation's default, config/sim.yaml, is "
               "'jacksboro-smooth')",
    'jacksboro': 'real USGS elevation (m) around the Jacksboro fault, the whole DEM mapped onto the extent',
    'jacksboro-rough': "'jacksboro' by what it is on 200 m x 200 m: ridges a metre or two wide, robust-peak "
                       'region 0.17 % of the area',
    'jacksboro-smooth': 'central 1/8 x 1/8 window of the same DEM (x8 zoom): features about ten to tens of '
                        'metres wide on 200 m x 200 m, robust-peak region 0.7 % of the area',
}


#: the unit of the built-in fields' values (:data:`FIELD_NAMES`: USGS elevation)
BUILT_IN_UNIT = 'm (elevation)'


def field_unit(spec) -> str | None:
    """The unit of the values of the field ``spec`` names (as :meth:`Field.load <uncertain_bo.sim.field.Field.load>`
    takes it), without loading it: :data:`BUILT_IN_UNIT` for the built-in names, a shipped suite field's ``units``
    (``uncertain_bo/data/suites/*.yaml``), None for a file (a grid or point survey says nothing of its unit) or an
    unknown name."""
    key = str(spec).strip().lower()
    if key in FIELD_NAMES:
        return BUILT_IN_UNIT
    if key.endswith(('.npz', '.csv')):
        return None
    units = catalogue().get(key, {}).get('units')
    return str(units) if units else None


@user_error
class FieldError(ValueError):
    """A field file or specification cannot be used (missing file, wrong format, missing key, malformed
    row, too few points, NaN values, a constant grid); the message is one line naming the file and what to
    do.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> Field(np.array([[1.0, np.nan], [0.0, 2.0]]), name='survey')
        Traceback (most recent call last):
        ...
        uncertain_bo.sim.field_spec.FieldError: field 'survey': values contain 1 non-finite entries (NaN/inf); fill ...
        >>> Field.load('moon')
        Traceback (most recent call last):
        ...
        uncertain_bo.sim.field_spec.FieldError: unknown field 'moon': use one of default, jacksboro, ...
    """


def _check_extent(extent: Sequence[float], what: str) -> tuple[float, float, float, float]:
    """``extent`` as 4 floats ``(xmin, xmax, ymin, ymax)`` metres; FieldError (``what`` first) unless they are finite
    with ``xmin < xmax`` and ``ymin < ymax``."""
    try:
        xmin, xmax, ymin, ymax = (float(v) for v in extent)
    except (TypeError, ValueError) as exc:
        raise FieldError(f'{what}: extent must be 4 numbers (xmin, xmax, ymin, ymax) in metres, '
                         f'got {extent!r}') from exc
    if not all(math.isfinite(v) for v in (xmin, xmax, ymin, ymax)) or xmin >= xmax or ymin >= ymax:
        raise FieldError(f'{what}: extent must be finite with xmin < xmax and ymin < ymax (metres), '
                         f'got {(xmin, xmax, ymin, ymax)}')
    return xmin, xmax, ymin, ymax


@lru_cache(maxsize=None)
def _suite_fields() -> dict[str, tuple[str, dict[str, Any]]]:
    import yaml

    from ..data import DATA_DIR

    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in sorted((DATA_DIR / 'suites').glob('*.yaml')):
        spec = yaml.safe_load(path.read_text()) or {}
        for name, entry in (spec.get('fields') or {}).items():
            if name in out:
                raise FieldError(f'field {name!r} is defined in both suites {out[name][0]!r} and {path.stem!r}')
            out[name] = (path.stem, dict(entry))
    return out


def catalogue() -> dict[str, dict[str, Any]]:
    """``{field name: its suite entry}`` over every shipped suite (a copy)."""
    return {name: dict(entry) for name, (_, entry) in _suite_fields().items()}


def suite_of(name: str) -> str | None:
    """The name of the suite that defines field ``name`` (None: not a suite field)."""
    entry = _suite_fields().get(str(name).strip().lower())
    return entry[0] if entry else None

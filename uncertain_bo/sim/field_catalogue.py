"""Named real fields defined by the shipped suites (``uncertain_bo/data/suites/*.yaml``).

Each suite entry (:func:`~uncertain_bo.sim.field_spec.catalogue`) says where a field's values come from and how they
are mapped onto the rover's area; :func:`catalogue_field` builds it as a :class:`~uncertain_bo.sim.field.Field` (the
class is an input: :meth:`Field.load <uncertain_bo.sim.field.Field.load>` passes itself, so this module does not
import the one that calls it), so that ``Field.load('terrain-ridges')`` (``--field terrain-ridges``,
``sim_rover.field``) works like a built-in name. Source kinds:

``dem_window``
    A window of the USGS elevation grid shipped with matplotlib (``jacksboro_fault_dem.npz``, public
    domain): ``rows`` and ``cols`` (inclusive node indices, row 0 = south edge, column 0 = west edge).
``npz``
    A grid vendored under ``uncertain_bo/data/fields`` (array ``key``; its own coordinates only say
    which way is north and east).
``points``
    A point survey vendored as CSV (``# comment`` lines, one header row, then ``x, y, value``): the points'
    bounding box is mapped onto the area (x and y scaled separately) and the field is the posterior mean
    of a GP fitted to the points (BoTorch ``SingleTaskGP``, Matérn-5/2 ARD, maximum marginal likelihood),
    the same interpolation as :meth:`Field.from_csv`.
``plume``
    A Gaussian plume from one or more leaks in a steady wind (:func:`~uncertain_bo.sim.field_generators.
    plume_values`): ``size`` (the reference rectangle, m), ``wind_deg``, ``spread`` (optional
    ``vertical_spread``), ``sources`` (``[x, y, amplitude, sigma0]`` each, m on the reference), optional
    ``level`` (the ambient value added everywhere), ``background`` (``{std, lengthscale, seed}``:
    :func:`~uncertain_bo.sim.field_generators.background_values`) and ``spacing`` (node spacing on the reference, m;
    default a third of the narrowest ``sigma0``, at most :data:`MAX_SPACING`).
``seeps``
    Narrow Gaussian spots (:func:`~uncertain_bo.sim.field_generators.seep_values`): ``size``, ``seeps`` (``[x, y,
    amplitude, width]`` each), optional ``level``, ``background`` and ``spacing`` as for ``plume``.

Every grid is mapped as a whole onto the extent (default 200 m x 200 m) and then resampled by exact
bilinear interpolation onto a grid with node spacing at most :data:`MAX_SPACING` metres, so that the robust
objective :meth:`Field.convolved` is accurate for sub-metre execution noise (as ``jacksboro-smooth``).
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .field_files import _gp_posterior_mean
from .field_spec import DEFAULT_EXTENT, FieldError, _check_extent, _suite_fields, catalogue, suite_of

if TYPE_CHECKING:
    from .field import Field

__all__ = ['catalogue', 'catalogue_field', 'suite_of', 'MAX_SPACING']

#: largest node spacing (m) of a catalogue field after resampling
MAX_SPACING = 1.0


def catalogue_field(name: str, extent: Sequence[float] = DEFAULT_EXTENT, *, field_type: type[Field]) -> Field:
    """Build a suite field by name, mapped onto ``extent`` (metres), as a ``field_type``
    (:class:`~uncertain_bo.sim.field.Field` or a subclass).

    Raises:
        FieldError: an unknown name (``KeyError`` is not raised) or a malformed entry.
    """
    key = str(name).strip().lower()
    fields = _suite_fields()
    if key not in fields:
        raise FieldError(f'unknown suite field {name!r}; known: {", ".join(sorted(fields))}')
    ext = _check_extent(extent, f'field {key!r}')
    return _build(key, ext, field_type)


@lru_cache(maxsize=32)
def _build(name: str, extent: tuple[float, float, float, float], field_type: type[Field]) -> Field:
    from ..data import data_path

    suite, entry = _suite_fields()[name]
    src = dict(entry.get('source') or {})
    kind = src.get('kind')
    if kind == 'dem_window':
        from matplotlib import cbook

        (r0, r1), (c0, c1) = src['rows'], src['cols']
        whole = field_type.from_npz(cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False),
                                    extent=DEFAULT_EXTENT, key='elevation')
        z = whole.grid()[2][int(r0):int(r1) + 1, int(c0):int(c1) + 1]
        field = field_type(z, extent, name=name)
    elif kind == 'npz':
        field = field_type.from_npz(data_path('fields', src['file']), extent=extent, key=src.get('key'))
    elif kind == 'points':
        field = _points_field(data_path('fields', src['file']), extent, float(src.get('resolution', 2.0)), field_type)
    elif kind in ('plume', 'seeps'):
        try:
            field = field_type(_generated(src), extent, name=name)
        except (KeyError, TypeError, ValueError) as exc:
            raise FieldError(f'suite {suite!r}, field {name!r}: malformed {kind} source ({exc})') from None
    else:
        raise FieldError(f"suite {suite!r}, field {name!r}: unknown source kind {kind!r} "
                         "(use dem_window, npz, points, plume or seeps)")
    field = _refined(field)
    field.name = name
    return field


def _generated(src: dict[str, Any]) -> np.ndarray:
    """The grid of a ``plume`` or ``seeps`` source (module docstring) on its reference rectangle."""
    from .field_generators import background_values, generator_grid, plume_values, seep_values

    items = [[float(v) for v in item] for item in src['sources' if src['kind'] == 'plume' else 'seeps']]
    if not items or any(len(item) != 4 for item in items):
        raise ValueError('expected a non-empty list of [x, y, amplitude, width] entries')
    narrowest = min(item[3] for item in items)
    if not narrowest > 0:
        raise ValueError(f'every width must be > 0 m, got {narrowest}')
    spacing = float(src.get('spacing', min(MAX_SPACING, narrowest / 3.0)))
    if not spacing > 0:
        raise ValueError(f'spacing must be > 0 m, got {spacing}')
    X, Y = generator_grid(src['size'], spacing)
    if src['kind'] == 'plume':
        z = plume_values(X, Y, items, float(src['wind_deg']), float(src['spread']),
                         None if src.get('vertical_spread') is None else float(src['vertical_spread']))
    else:
        z = seep_values(X, Y, items)
    bg = src.get('background') or {}
    if bg:
        z = z + background_values(X, Y, float(bg['std']), float(bg['lengthscale']), int(bg['seed']))
    return z + float(src.get('level', 0.0))


def _points_field(path, extent: tuple[float, float, float, float], resolution: float,
                  field_type: type[Field]) -> Field:
    """GP posterior mean of a vendored point survey, its bounding box mapped onto ``extent``."""
    rows = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith('#')]
    pts = np.array([[float(v) for v in line.split(',')] for line in rows[1:]])
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 3:
        raise FieldError(f'{path}: expected a header and at least 3 rows x,y,value')
    xmin, xmax, ymin, ymax = extent
    lo, hi = pts[:, :2].min(0), pts[:, :2].max(0)
    xy = np.column_stack([xmin + (pts[:, 0] - lo[0]) / (hi[0] - lo[0]) * (xmax - xmin),
                          ymin + (pts[:, 1] - lo[1]) / (hi[1] - lo[1]) * (ymax - ymin)])
    nx = max(2, int(round((xmax - xmin) / resolution)) + 1)
    ny = max(2, int(round((ymax - ymin) / resolution)) + 1)
    return field_type(_gp_posterior_mean(xy, pts[:, 2], extent=extent, shape=(ny, nx)), extent, name=path.stem)


def _refined(field: Field, max_spacing: float = MAX_SPACING) -> Field:
    """``field`` resampled by bilinear interpolation (exact: :meth:`Field.value` is unchanged) onto a grid
    with node spacing at most ``max_spacing`` metres."""
    dx, dy = field.spacing
    k = max(1, math.ceil(max(dx, dy) / max_spacing))
    if k == 1:
        return field
    xs, ys, _ = field.grid()
    fx = np.linspace(xs[0], xs[-1], (len(xs) - 1) * k + 1)
    fy = np.linspace(ys[0], ys[-1], (len(ys) - 1) * k + 1)
    gx, gy = np.meshgrid(fx, fy)
    fine = field.value(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    return type(field)(fine, field.bounds, name=field.name)

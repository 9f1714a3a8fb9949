"""Scalar environmental fields on a regular grid over a rectangle in the ``map`` frame.

A :class:`Field` is what the simulated rover measures (elevation, soil nutrient, gas concentration, ...):
values on a regular grid of nodes spanning the rectangle ``(xmin, xmax, ymin, ymax)`` metres, x east,
y north (REP-103). Between nodes the field is bilinear; outside the rectangle it is clamped to the edge,
because a rover with execution noise can stray a little beyond the search area.

:meth:`Field.convolved` gives the robust objective ``g = f * N(0, Σ)``, i.e. the expected reading when
the rover aims at ``x`` but actually stands at ``x + ε`` with ``ε ~ N(0, Σ)`` (execution noise); its
:meth:`argmax` is the robust optimum the explorer should find.

Sources: named real fields (:data:`FIELD_NAMES`, :meth:`Field.named`): the USGS elevation grid shipped with
matplotlib as a whole (:meth:`Field.jacksboro`, ``'jacksboro-rough'``) or a magnified window of it
(:meth:`Field.jacksboro_smooth`); any gridded ``.npz`` (:meth:`Field.from_npz`); or scattered ``x,y,value``
CSV measurements interpolated by a GP (:meth:`Field.from_csv`). Every loading problem raises a one-line
:class:`FieldError`. :meth:`Field.statistics` measures how hard a field is to search.
"""
from __future__ import annotations

import csv
import math
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.interpolate import RegularGridInterpolator
from scipy.signal import fftconvolve

__all__ = ['Field', 'FieldError', 'FieldStatistics', 'DEFAULT_EXTENT', 'FIELD_NAMES']

#: batches at least this large go through scipy's RegularGridInterpolator, smaller ones a direct lookup
_RGI_MIN_POINTS = 256

#: Default rectangle (xmin, xmax, ymin, ymax) in metres onto which the built-in field is mapped.
DEFAULT_EXTENT = (0.0, 200.0, 0.0, 200.0)


#: zoom factor of :meth:`Field.jacksboro_smooth` (the central 1/8 of the DEM's width and height, magnified x8)
_SMOOTH_ZOOM = 8

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


class FieldError(ValueError):
    """A field file or specification cannot be used (missing file, wrong format, missing key, malformed
    row, too few points, NaN values, a constant grid); the message is one line naming the file and what to
    do."""


def _check_extent(extent: Sequence[float], what: str) -> tuple[float, float, float, float]:
    try:
        xmin, xmax, ymin, ymax = (float(v) for v in extent)
    except (TypeError, ValueError) as exc:
        raise FieldError(f'{what}: extent must be 4 numbers (xmin, xmax, ymin, ymax) in metres, '
                         f'got {extent!r}') from exc
    if not all(math.isfinite(v) for v in (xmin, xmax, ymin, ymax)) or xmin >= xmax or ymin >= ymax:
        raise FieldError(f'{what}: extent must be finite with xmin < xmax and ymin < ymax (metres), '
                         f'got {(xmin, xmax, ymin, ymax)}')
    return xmin, xmax, ymin, ymax


class Field:
    """A scalar field sampled on a regular grid of nodes over a rectangle (metres, map frame).

    Args:
        values: array (ny, nx), ``values[j, i]`` is the field at ``(xs[i], ys[j])``; row 0 is the
            **south** edge (``ymin``), column 0 the west edge (``xmin``). ``ny, nx >= 2``, all finite.
        extent: ``(xmin, xmax, ymin, ymax)`` metres; the outermost nodes lie on the rectangle's edges.
        name: label used in messages and plots.

    Raises:
        FieldError: wrong shape, non-finite values, or an empty rectangle.
    """

    def __init__(self, values: np.ndarray, extent: Sequence[float] = DEFAULT_EXTENT, name: str = 'field'):
        z = np.asarray(values, dtype=float)
        if z.ndim != 2 or z.shape[0] < 2 or z.shape[1] < 2:
            raise FieldError(f'field {name!r}: values must be a 2-D grid with at least 2x2 nodes, '
                             f'got shape {z.shape}')
        if not np.all(np.isfinite(z)):
            raise FieldError(f'field {name!r}: values contain {int(np.sum(~np.isfinite(z)))} non-finite '
                             'entries (NaN/inf); fill or crop them first')
        self._z = z
        self._z.setflags(write=False)
        self._extent = _check_extent(extent, f'field {name!r}')
        self.name = name
        xmin, xmax, ymin, ymax = self._extent
        self._xs = np.linspace(xmin, xmax, z.shape[1])
        self._ys = np.linspace(ymin, ymax, z.shape[0])
        self._interp = RegularGridInterpolator((self._ys, self._xs), self._z, method='linear')

    # ------------------------------------------------------------------ construction
    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Names :meth:`load` accepts besides file paths (see :data:`FIELD_NAMES` for what each is)."""
        return tuple(FIELD_NAMES)

    @classmethod
    def named(cls, name: str, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """A built-in real field by name (case-insensitive), mapped onto ``extent`` metres.

        Args:
            name: one of :meth:`names`: ``'default'`` (today ``'jacksboro'``), ``'jacksboro'``,
                ``'jacksboro-rough'`` (the same grid under the name of what it is) or ``'jacksboro-smooth'``.
            extent: ``(xmin, xmax, ymin, ymax)`` metres.

        Raises:
            FieldError: an unknown name (the message lists the known ones) or an invalid extent.
        """
        key = str(name).strip().lower()
        if key in ('default', 'jacksboro'):
            return cls.jacksboro(extent)
        if key == 'jacksboro-rough':
            field = cls.jacksboro(extent)
            field.name = 'jacksboro-rough'
            return field
        if key == 'jacksboro-smooth':
            return cls.jacksboro_smooth(extent)
        raise FieldError(f'unknown field {name!r}: use one of {", ".join(FIELD_NAMES)}, '
                         'or a path to a .npz grid or a .csv of x,y,value measurements')

    @classmethod
    def default(cls, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """The built-in field: :meth:`jacksboro` mapped onto ``extent`` (metres)."""
        return cls.jacksboro(extent)

    @classmethod
    def jacksboro(cls, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """Real USGS elevation (metres) around the Jacksboro fault, Tennessee, from matplotlib's sample data.

        The 344 x 403 grid (3 arc-second nodes, about 0.29° x 0.34° of latitude/longitude, i.e. roughly
        32 km x 30 km of ground) is mapped as a whole onto ``extent`` metres, north up (+y = increasing
        latitude), east right (+x = increasing longitude). Values range from 236 m to 1076 m.

        On 200 m x 200 m (the default extent, 0.50 m x 0.58 m node spacing) this is a **hard** field: its
        ridges are a metre or two wide (slope correlation length 1.3 m) and the area within 0.1 normalised
        regret of the robust peak covers 0.17 % of the rectangle (see :data:`FIELD_NAMES` for the measured
        properties and how they are defined). ``Field.load('jacksboro-rough')`` is this field under that name.
        """
        from matplotlib import cbook

        path = cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False)
        field = cls.from_npz(path, extent=extent, key='elevation')
        field.name = 'jacksboro'
        return field

    @classmethod
    def jacksboro_smooth(cls, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """A window of the same real DEM as :meth:`jacksboro`, magnified so that its features are tens of
        metres wide on a 200 m x 200 m extent.

        Rule (fixed, independent of where the field's optimum lies): the **central** 1/8 of the DEM's width
        and 1/8 of its height, ``round(344/8) x round(403/8) = 43 x 50`` nodes (rows 150-192 counted from the
        south edge, columns 176-225 from the west edge; about 4.0 km x 3.7 km of ground, 318-981 m of
        elevation), mapped onto ``extent`` like the whole DEM is: a x8 zoom of ``'jacksboro-rough'`` about
        the DEM's centre. The zoom is a power of two picked for the feature width it gives (slopes
        correlated over 1.3 m on the whole DEM become 9.5 m, hills and valleys tens of metres wide), not
        for where the optimum falls: on 200 m x 200 m the robust peak ends up on the west edge at
        (0, 81) m, with a second near-optimal hill around (37, 29) m; 0.72 % of the area is within 0.1
        normalised regret. The window is resampled by
        exact bilinear interpolation onto an 8x finer grid (337 x 393 nodes): :meth:`value` is unchanged
        by this, and :meth:`convolved` is then as accurate as for the whole DEM (node spacing below the
        execution noise).
        """
        whole = cls.jacksboro(DEFAULT_EXTENT)
        z = whole._z
        ny, nx = z.shape
        h, w = int(round(ny / _SMOOTH_ZOOM)), int(round(nx / _SMOOTH_ZOOM))
        j0, i0 = (ny - h) // 2, (nx - w) // 2
        window = Field(z[j0:j0 + h, i0:i0 + w], (0.0, w - 1.0, 0.0, h - 1.0), name='window')
        xs = np.arange((w - 1) * _SMOOTH_ZOOM + 1) / _SMOOTH_ZOOM
        ys = np.arange((h - 1) * _SMOOTH_ZOOM + 1) / _SMOOTH_ZOOM
        gx, gy = np.meshgrid(xs, ys)
        fine = window.value(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
        return cls(fine, _check_extent(extent, "field 'jacksboro-smooth'"), name='jacksboro-smooth')

    @classmethod
    def from_npz(cls, path: str | Path, extent: Sequence[float] | None = None,
                 key: str | None = None) -> 'Field':
        """Load a gridded field from a NumPy ``.npz`` file.

        The file holds one 2-D array (``key``, or the only 2-D array in the file) and its coordinates,
        either as scalars ``xmin, xmax, ymin, ymax`` or as a 4-vector ``extent``. The coordinates say where
        the **first and last** column/row lie: row 0 is at ``ymin`` as stored, so a file whose ``ymin`` is
        greater than its ``ymax`` is stored north-first (image order, like matplotlib's
        ``jacksboro_fault_dem.npz``) and is flipped to the south-first convention of :class:`Field`.

        Args:
            path: the ``.npz`` file (as written by ``numpy.savez``; object/pickled arrays are refused).
            extent: ``(xmin, xmax, ymin, ymax)`` metres to map the grid onto (overrides the file's
                coordinates, which may be in other units such as degrees; the file's orientation is kept).
            key: name of the 2-D array; needed when the file holds several 2-D arrays.

        Raises:
            FieldError: (one line naming the file and what to do) the file is missing, a directory, not an
                ``.npz`` archive (e.g. a ``.npy`` array or another format), damaged, or holds pickled
                arrays; the array or coordinate keys are missing; the grid is smaller than 2 x 2, holds
                non-numeric or NaN/inf values, or is constant.
        """
        path = Path(path)
        arrays = _read_npz(path)
        keys = list(arrays)
        if key is None:
            grids = [k for k in keys if np.ndim(arrays[k]) == 2]
            if len(grids) != 1:
                raise FieldError(f'field file {path}: expected exactly one 2-D array, found '
                                 f'{grids or "none"} among keys {keys}; pass key=... or save the grid '
                                 'with numpy.savez(path, z=grid, xmin=..., xmax=..., ymin=..., ymax=...)')
            key = grids[0]
        if key not in keys:
            raise FieldError(f'field file {path} has no array {key!r}; keys: {keys}')
        z = _numeric(arrays[key], path, key)
        if z.ndim != 2:
            raise FieldError(f'field file {path}: array {key!r} must be 2-D, has shape {z.shape}')
        _check_grid(z, f'field file {path}: array {key!r}')
        if 'extent' in keys:
            coords = _numeric(arrays['extent'], path, 'extent').ravel()
            if coords.size != 4:
                raise FieldError(f"field file {path}: 'extent' must hold 4 numbers "
                                 f'(xmin, xmax, ymin, ymax), has {coords.size}')
        else:
            missing = [k for k in ('xmin', 'xmax', 'ymin', 'ymax') if k not in keys]
            if missing and extent is None:
                raise FieldError(f'field file {path} is missing coordinate key(s) {missing} (or an '
                                 "'extent' array); pass extent=(xmin, xmax, ymin, ymax) in metres")
            coords = None
            if not missing:
                coords = np.empty(4)
                for n, k in enumerate(('xmin', 'xmax', 'ymin', 'ymax')):
                    c = _numeric(arrays[k], path, k)
                    if c.size != 1:
                        raise FieldError(f'field file {path}: {k!r} must be one number, has shape {c.shape}')
                    coords[n] = c.item()
        if coords is not None:
            if not np.all(np.isfinite(coords)) or coords[0] == coords[1] or coords[2] == coords[3]:
                raise FieldError(f'field file {path}: degenerate coordinates {coords.tolist()}; '
                                 'pass extent=(xmin, xmax, ymin, ymax) in metres')
            if coords[0] > coords[1]:
                z = z[:, ::-1]
            if coords[2] > coords[3]:
                z = z[::-1, :]
            file_extent = (min(coords[0], coords[1]), max(coords[0], coords[1]),
                           min(coords[2], coords[3]), max(coords[2], coords[3]))
        else:
            file_extent = None
        use = extent if extent is not None else file_extent
        return cls(np.ascontiguousarray(z), _check_extent(use, f'field file {path}'), name=path.stem)

    @classmethod
    def from_csv(cls, path: str | Path, resolution: float | None = None,
                 extent: Sequence[float] | None = None, max_points: int = 2000) -> 'Field':
        """Interpolate scattered ``x,y,value`` measurements onto a grid with a Gaussian process.

        A BoTorch ``SingleTaskGP`` (Matérn-5/2 ARD kernel, inputs normalised to the unit square, outcome
        standardised) is fitted by maximum marginal likelihood (``fit_gpytorch_mll``); the field is its
        posterior mean on the grid nodes.

        Where the points lie relative to ``extent`` decides what ``extent`` means (the rule never lets a
        file become a flat field far from its data):

        * the points' bounding box covers at least half of ``extent``'s area: the points are in map
          coordinates and the grid spans ``extent`` (points outside it still inform the GP);
        * the bounding box and ``extent`` do not overlap at all: the points are in their own coordinates
          (another origin, degrees, ...); their bounding box is mapped onto ``extent``, x and y scaled
          separately, as an ``.npz`` grid's coordinates are;
        * otherwise (a partial overlap): :class:`FieldError` saying how much is covered.

        Args:
            path: CSV file with rows ``x,y,value`` (metres, metres, field units); one header row is allowed,
                lines starting with ``#`` are skipped.
            resolution: grid spacing in metres (default: 100 cells along the longer side).
            extent: ``(xmin, xmax, ymin, ymax)`` metres of the grid (default: bounding box of the points).
            max_points: refuse files with more points than this (exact GP cost grows as n³).

        Raises:
            FieldError: (one line naming the file) missing file, a directory, not UTF-8 text, a malformed
                row (with its line number), a NaN/inf value, fewer than 3 points, points on one line, all
                values equal, too many points, an extent that covers only part of the points' box, or a
                GP fit that is flat.
        """
        path = Path(path)
        _check_file(path, 'CSV')
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise FieldError(f'field file {path} is not a text CSV file (not UTF-8); '
                             'give rows x,y,value') from None
        except OSError as exc:
            raise FieldError(f'cannot read field file {path}: {exc.strerror}') from None
        rows = []
        for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
            if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith('#'):
                continue
            if len(row) != 3:
                raise FieldError(f'{path}:{lineno}: expected 3 columns x,y,value, got {len(row)}: {row}')
            try:
                vals = [float(c) for c in row]
            except ValueError:
                if not rows and lineno == 1:
                    continue  # header
                raise FieldError(f'{path}:{lineno}: not a number in row {row}') from None
            if not all(math.isfinite(v) for v in vals):
                raise FieldError(f'{path}:{lineno}: non-finite value (NaN/inf) in row {row}; '
                                 'remove or fill that measurement')
            rows.append(vals)
        if len(rows) < 3:
            raise FieldError(f'{path}: need at least 3 measurements x,y,value to interpolate a field, '
                             f'got {len(rows)}')
        if len(rows) > max_points:
            raise FieldError(f'{path}: {len(rows)} points exceed max_points={max_points}; thin the data')
        pts = np.asarray(rows)
        xy, y = pts[:, :2], pts[:, 2]
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        if np.any(hi - lo <= 0) or np.linalg.matrix_rank(xy - xy.mean(axis=0)) < 2:
            raise FieldError(f'{path}: the points span no area (they lie on one line); '
                             'measure at points spread over the area')
        if np.all(y == y[0]):
            raise FieldError(f'{path}: all {len(y)} values equal {y[0]:g}; a constant field has no peak')
        if extent is None:
            extent = (lo[0], hi[0], lo[1], hi[1])
        xmin, xmax, ymin, ymax = _check_extent(extent, f'field file {path}')
        ox = min(hi[0], xmax) - max(lo[0], xmin)
        oy = min(hi[1], ymax) - max(lo[1], ymin)
        if ox <= 0 or oy <= 0:          # own coordinates: map the points' box onto the extent
            xy = np.column_stack([xmin + (xy[:, 0] - lo[0]) / (hi[0] - lo[0]) * (xmax - xmin),
                                  ymin + (xy[:, 1] - lo[1]) / (hi[1] - lo[1]) * (ymax - ymin)])
        else:
            covered = ox * oy / ((xmax - xmin) * (ymax - ymin))
            if covered < 0.5:
                raise FieldError(
                    f'{path}: the points (x {lo[0]:g}..{hi[0]:g}, y {lo[1]:g}..{hi[1]:g}) cover only '
                    f'{100 * covered:.0f} % of the extent {[xmin, xmax, ymin, ymax]}; the field would be '
                    'flat where there are no data: pass an extent inside the points, or one disjoint from '
                    'them to map the points onto it')
        if resolution is None:
            resolution = max(xmax - xmin, ymax - ymin) / 100.0
        if not (resolution > 0 and math.isfinite(resolution)):
            raise FieldError(f'resolution must be a positive number of metres, got {resolution!r}')
        nx = max(2, int(round((xmax - xmin) / resolution)) + 1)
        ny = max(2, int(round((ymax - ymin) / resolution)) + 1)
        z = _gp_posterior_mean(xy, y, extent=(xmin, xmax, ymin, ymax), shape=(ny, nx))
        if not np.ptp(z) > 1e-6 * np.ptp(y):
            raise FieldError(f'{path}: the GP fitted to the {len(y)} points is flat (it explains them as '
                             'noise); give more or less noisy measurements')
        return cls(z, (xmin, xmax, ymin, ymax), name=path.stem)

    @classmethod
    def load(cls, spec: str | Path, extent: Sequence[float] | None = None) -> 'Field':
        """Field from a specification string.

        Args:
            spec: a name from :meth:`names` (``'default'``, ``'jacksboro'``, ``'jacksboro-rough'``,
                ``'jacksboro-smooth'``; case-insensitive), a field of a shipped suite
                (:mod:`~uncertain_bo.sim.field_catalogue`, e.g. ``'terrain-ridges'``), or a path ending in
                ``.npz`` or ``.csv``.
            extent: rectangle (metres) for the named fields (default :data:`DEFAULT_EXTENT`) and ``.npz``
                files; for ``.csv`` see :meth:`from_csv` (default: the points' bounding box).

        Raises:
            FieldError: (one line) unknown name (the known ones are listed), unsupported file type, or any
                error of :meth:`from_npz` / :meth:`from_csv`.
        """
        s = str(spec).strip()
        if s.lower() in FIELD_NAMES:
            return cls.named(s, extent if extent is not None else DEFAULT_EXTENT)
        low = s.lower()
        if low.endswith('.npz'):
            return cls.from_npz(s, extent=extent)
        if low.endswith('.csv'):
            return cls.from_csv(s, extent=extent)
        if s and Path(s).exists():
            raise FieldError(f'field file {s}: unsupported type; use a .npz grid or a .csv of x,y,value '
                             'measurements')
        from .field_catalogue import catalogue, catalogue_field
        if low in catalogue():     # a field of a shipped suite (uncertain_bo/data/suites)
            return catalogue_field(low, extent if extent is not None else DEFAULT_EXTENT)
        raise FieldError(f'unknown field {s!r}: use one of {", ".join(FIELD_NAMES)}, a suite field '
                         f'({", ".join(catalogue())}), or a path to a .npz grid or a .csv of x,y,value '
                         'measurements')

    # ------------------------------------------------------------------ queries
    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """``(xmin, xmax, ymin, ymax)`` in metres."""
        return self._extent

    @property
    def shape(self) -> tuple[int, int]:
        """Grid shape ``(ny, nx)``."""
        return self._z.shape

    @property
    def spacing(self) -> tuple[float, float]:
        """Node spacing ``(dx, dy)`` in metres."""
        return float(self._xs[1] - self._xs[0]), float(self._ys[1] - self._ys[0])

    def grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Node coordinates and values: ``xs`` (nx,), ``ys`` (ny,) metres, ``Z`` (ny, nx) with
        ``Z[j, i]`` at ``(xs[i], ys[j])`` (copies)."""
        return self._xs.copy(), self._ys.copy(), np.array(self._z)

    def value(self, xy: np.ndarray) -> np.ndarray:
        """Bilinear field value at points (scipy ``RegularGridInterpolator`` for large batches, an
        equivalent direct lookup for a few points).

        Args:
            xy: (n, 2) or (2,) positions in metres (map frame). Points outside the rectangle are clamped to
                its edge.

        Returns:
            (n,) values (a 0-d array for a single (2,) point).

        Raises:
            ValueError: ``xy`` has the wrong shape or non-finite entries.
        """
        p = np.asarray(xy, dtype=float)
        single = p.ndim == 1
        p = np.atleast_2d(p)
        if p.shape[-1] != 2 or p.ndim != 2:
            raise ValueError(f'xy must have shape (n, 2) or (2,), got {np.shape(xy)}')
        if not np.all(np.isfinite(p)):
            raise ValueError('xy contains non-finite coordinates')
        if p.shape[0] >= _RGI_MIN_POINTS:
            xmin, xmax, ymin, ymax = self._extent
            q = np.column_stack([np.clip(p[:, 1], ymin, ymax), np.clip(p[:, 0], xmin, xmax)])
            out = self._interp(q)
        else:
            out = self._bilinear(p)
        return out[0] if single else out

    def _bilinear(self, p: np.ndarray) -> np.ndarray:
        """Direct bilinear lookup on the regular grid (clamped); same result as the scipy interpolator
        without its ~0.2 ms per-call overhead, which matters when the simulator reads one point per step."""
        xmin, xmax, ymin, ymax = self._extent
        ny, nx = self._z.shape
        fx = (np.clip(p[:, 0], xmin, xmax) - xmin) / (xmax - xmin) * (nx - 1)
        fy = (np.clip(p[:, 1], ymin, ymax) - ymin) / (ymax - ymin) * (ny - 1)
        i = np.minimum(fx.astype(np.intp), nx - 2)
        j = np.minimum(fy.astype(np.intp), ny - 2)
        tx, ty = fx - i, fy - j
        z = self._z
        return ((1 - ty) * ((1 - tx) * z[j, i] + tx * z[j, i + 1])
                + ty * ((1 - tx) * z[j + 1, i] + tx * z[j + 1, i + 1]))

    def argmax(self) -> tuple[np.ndarray, float]:
        """Grid node with the largest value: ``(xy (2,) metres, value)``."""
        j, i = np.unravel_index(int(np.argmax(self._z)), self._z.shape)
        return np.array([self._xs[i], self._ys[j]]), float(self._z[j, i])

    def argmin(self) -> tuple[np.ndarray, float]:
        """Grid node with the smallest value: ``(xy (2,) metres, value)``."""
        j, i = np.unravel_index(int(np.argmin(self._z)), self._z.shape)
        return np.array([self._xs[i], self._ys[j]]), float(self._z[j, i])

    def median(self) -> float:
        """Median of the node values."""
        return float(np.median(self._z))

    def convolved(self, cov: np.ndarray) -> 'Field':
        r"""Robust objective :math:`g(x) = \mathbb{E}_{\varepsilon \sim N(0, \Sigma)} f(x + \varepsilon)`.

        Computed by FFT convolution of the node values with a Gaussian kernel sampled on the grid
        (truncated at 4 standard deviations, normalised to sum 1), with edge-replicate padding (consistent
        with :meth:`value` clamping outside the rectangle). Accurate when the standard deviations are at
        least about one grid spacing; for smaller ones the sampled kernel tends to the identity.

        Args:
            cov: (2, 2) covariance of the execution noise in m², full (correlated) allowed; a scalar ``s``
                means ``s * I``. Zero gives a copy of this field.

        Returns:
            A new :class:`Field` on the same grid.

        Raises:
            ValueError: ``cov`` is not a finite symmetric positive semi-definite 2x2 matrix.
        """
        c = np.asarray(cov, dtype=float)
        if c.ndim == 0:
            c = c * np.eye(2)
        if c.shape != (2, 2) or not np.all(np.isfinite(c)):
            raise ValueError(f'cov must be a finite 2x2 covariance in m², got {np.asarray(cov).tolist()}')
        if not np.allclose(c, c.T, rtol=1e-9, atol=1e-12):
            raise ValueError(f'cov must be symmetric, got {c.tolist()}')
        c = 0.5 * (c + c.T)
        evals = np.linalg.eigvalsh(c)
        if evals[0] < -1e-12 * max(1.0, abs(evals[1])):
            raise ValueError(f'cov must be positive semi-definite (eigenvalues {evals.tolist()})')
        name = f'{self.name}*N(0,cov)'
        if evals[1] <= 0.0:
            return Field(self._z, self._extent, name=name)
        dx, dy = self.spacing
        hx = int(math.ceil(4.0 * math.sqrt(max(c[0, 0], 0.0)) / dx))
        hy = int(math.ceil(4.0 * math.sqrt(max(c[1, 1], 0.0)) / dy))
        if hx == 0 and hy == 0:
            return Field(self._z, self._extent, name=name)
        u = np.arange(-hx, hx + 1) * dx
        v = np.arange(-hy, hy + 1) * dy
        uu, vv = np.meshgrid(u, v)                      # (2hy+1, 2hx+1)
        d = np.stack([uu, vv], axis=-1)
        # Regularise a singular covariance by a negligible fraction of the grid spacing: the kernel then
        # collapses onto the line of the degenerate direction, as the limit of the Gaussian does.
        jitter = (1e-6 * min(dx, dy)) ** 2
        cinv = np.linalg.inv(c + jitter * np.eye(2))
        k = np.exp(-0.5 * np.einsum('...i,ij,...j->...', d, cinv, d))
        k /= k.sum()
        padded = np.pad(self._z, ((hy, hy), (hx, hx)), mode='edge')
        g = fftconvolve(padded, k[::-1, ::-1], mode='valid')
        return Field(g, self._extent, name=name)

    def statistics(self, cov=0.75 ** 2, regret: float = 0.1) -> 'FieldStatistics':
        """How hard the field is to search: its value range, how small the robust-peak region is, and how
        wide its features are.

        Args:
            cov: execution-noise covariance (m²) defining the robust field ``g = f * N(0, cov)`` (as
                :meth:`convolved`; default ``0.75² I``, the explorer's default execution noise).
            regret: threshold on the normalised regret ``(g* - g) / (g* - median g)`` (dimensionless).

        Returns:
            :class:`FieldStatistics`.

        Raises:
            ValueError: an invalid ``cov``.
        """
        g = self.convolved(cov)._z
        gstar, gmed = float(g.max()), float(np.median(g))
        near = float(np.mean((gstar - g) <= regret * (gstar - gmed))) if gstar > gmed else 1.0
        xs, ys = np.meshgrid(self._xs, self._ys)
        design = np.column_stack([xs.ravel(), ys.ravel(), np.ones(xs.size)])
        coef, *_ = np.linalg.lstsq(design, self._z.ravel(), rcond=None)
        z = self._z - (design @ coef).reshape(self._z.shape)
        dx, dy = self.spacing
        lengths = [_efold_lag(z, 1, dx), _efold_lag(z, 0, dy)]
        slopes = [_efold_lag(np.diff(z, axis=1) / dx, 1, dx), _efold_lag(np.diff(z, axis=0) / dy, 0, dy)]
        return FieldStatistics(float(self._z.min()), float(self._z.max()), near, _mean_length(lengths),
                               _mean_length(slopes))

    def __repr__(self) -> str:
        ny, nx = self.shape
        return (f'Field({self.name!r}, {nx}x{ny} nodes over x[{self._extent[0]:g}, {self._extent[1]:g}] '
                f'y[{self._extent[2]:g}, {self._extent[3]:g}] m, values '
                f'[{self._z.min():.4g}, {self._z.max():.4g}])')


@dataclass(frozen=True)
class FieldStatistics:
    """What :meth:`Field.statistics` measures.

    Attributes:
        value_min, value_max: smallest and largest node value (field units).
        near_optimal_fraction: fraction (0-1) of the grid nodes, i.e. of the area, where the robust field's
            normalised regret ``(g* - g) / (g* - median g)`` is at most the threshold.
        correlation_length: e-folding distance (m) of the autocorrelation of the field minus its
            least-squares plane, i.e. the lag along a grid axis at which the correlation between values
            first drops below 1/e (linear interpolation between nodes), averaged over the two axes: the size
            of hills and valleys.
        slope_correlation_length: the same for the slopes (node differences along each axis, lagged along
            that axis): the width of ridges and slopes, how far the rover may be off before it reads a
            different part of the terrain.
    """

    value_min: float
    value_max: float
    near_optimal_fraction: float
    correlation_length: float
    slope_correlation_length: float


def _efold_lag(d: np.ndarray, axis: int, spacing: float) -> float:
    """Lag (m) along ``axis`` at which the autocorrelation of ``d`` (mean removed) first drops below 1/e;
    inf if it never does within the grid, nan if ``d`` is constant."""
    d = np.moveaxis(np.asarray(d, dtype=float), axis, 0)
    d = d - d.mean()
    c0 = float(np.mean(d * d))
    if not c0 > 0.0:
        return math.nan
    target, prev = math.exp(-1.0), 1.0
    for lag in range(1, d.shape[0]):
        rho = float(np.mean(d[:-lag] * d[lag:])) / c0
        if rho < target:
            return (lag - 1 + (prev - target) / (prev - rho)) * spacing
        prev = rho
    return math.inf


def _mean_length(lengths: list[float]) -> float:
    """Mean over the axes along which the quantity varies (nan entries skipped; nan if none)."""
    ok = [v for v in lengths if not math.isnan(v)]
    return float(np.mean(ok)) if ok else math.nan


def _reason(exc: BaseException) -> str:
    """An exception's message on one line."""
    return ' '.join(str(exc).split()) or type(exc).__name__


def _check_file(path: Path, kind: str) -> None:
    """FieldError unless ``path`` is an existing regular file."""
    if not path.exists():
        raise FieldError(f'field file {path} does not exist; check the path (or use a named field: '
                         f'{", ".join(FIELD_NAMES)})')
    if path.is_dir():
        raise FieldError(f'field file {path} is a directory, not a {kind} file; give the file inside it')


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, or a one-line FieldError saying why it cannot be used."""
    _check_file(path, '.npz')
    save = 'save the grid with numpy.savez(path, z=grid, xmin=..., xmax=..., ymin=..., ymax=...)'
    try:
        with open(path, 'rb') as fh:
            head = fh.read(6)
    except OSError as exc:
        raise FieldError(f'cannot read field file {path}: {exc.strerror}') from None
    if head.startswith(b'\x93NUMPY'):
        raise FieldError(f'field file {path} is a single .npy array, not an .npz archive; {save}')
    if not head.startswith(b'PK'):
        raise FieldError(f'field file {path} is not an .npz archive (not a zip file); {save}')
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except ValueError as exc:
        if 'pickle' in str(exc):
            raise FieldError(f'field file {path} holds pickled (object) arrays, which are not loaded for '
                             f'safety; {save}') from None
        raise FieldError(f'field file {path} is a damaged .npz archive ({_reason(exc)}); {save}') from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise FieldError(f'field file {path} is a damaged .npz archive ({_reason(exc)}); {save}') from None


def _numeric(a, path: Path, key: str) -> np.ndarray:
    """``a`` as a float array, or a FieldError naming the file and the key."""
    arr = np.asarray(a)
    if arr.dtype.kind not in 'biuf':
        raise FieldError(f'field file {path}: array {key!r} holds {arr.dtype} values, not real numbers')
    return arr.astype(float)


def _check_grid(z: np.ndarray, what: str) -> None:
    """FieldError unless ``z`` is a finite, non-constant grid of at least 2 x 2 nodes."""
    if z.shape[0] < 2 or z.shape[1] < 2:
        raise FieldError(f'{what} has shape {z.shape}; a field needs a grid of at least 2 x 2 nodes')
    bad = int(np.sum(~np.isfinite(z)))
    if bad == z.size:
        raise FieldError(f'{what} has no finite values (all NaN/inf)')
    if bad:
        raise FieldError(f'{what} has {bad} NaN/inf values of {z.size} (no-data nodes?); fill or crop them')
    if np.all(z == z.flat[0]):
        raise FieldError(f'{what}: all values equal {z.flat[0]:g}; a constant field has no peak')


def _gp_posterior_mean(xy: np.ndarray, y: np.ndarray, extent: tuple[float, float, float, float],
                       shape: tuple[int, int]) -> np.ndarray:
    """Posterior mean (ny, nx) of a BoTorch SingleTaskGP fitted to (xy, y), on the grid nodes of extent."""
    import torch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    xmin, xmax, ymin, ymax = extent
    bounds = torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=torch.float64)
    train_x = torch.as_tensor(xy, dtype=torch.float64)
    train_y = torch.as_tensor(y, dtype=torch.float64).unsqueeze(-1)
    if float(train_y.std()) == 0.0:
        return np.full(shape, float(y[0]))
    model = SingleTaskGP(train_x, train_y, input_transform=Normalize(d=2, bounds=bounds),
                         outcome_transform=Standardize(m=1))
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    fit_gpytorch_mll(mll)
    model.eval()
    ny, nx = shape
    gx, gy = np.meshgrid(np.linspace(xmin, xmax, nx), np.linspace(ymin, ymax, ny))
    q = torch.as_tensor(np.column_stack([gx.ravel(), gy.ravel()]), dtype=torch.float64)
    out = np.empty(q.shape[0])
    with torch.no_grad():
        for s in range(0, q.shape[0], 4096):
            out[s:s + 4096] = model.posterior(q[s:s + 4096]).mean.squeeze(-1).numpy()
    return out.reshape(ny, nx)

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

Where the pieces live: the names, the default extent and :class:`FieldError` in
:mod:`~uncertain_bo.sim.field_spec`; reading ``.npz`` and ``.csv`` files in :mod:`~uncertain_bo.sim.field_files`;
the statistics in :mod:`~uncertain_bo.sim.field_statistics`; the shipped suites' fields in
:mod:`~uncertain_bo.sim.field_catalogue`. Every public name is importable from here.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.interpolate import RegularGridInterpolator
from scipy.signal import fftconvolve

from .field_files import MAX_CSV_POINTS, csv_grid, npz_grid
from .field_spec import DEFAULT_EXTENT, FIELD_NAMES, FieldError, _check_extent, catalogue, field_unit, suite_of
from .field_statistics import FieldStatistics, field_statistics

__all__ = ['Field', 'FieldError', 'FieldStatistics', 'DEFAULT_EXTENT', 'FIELD_NAMES']

#: batches at least this large go through scipy's RegularGridInterpolator, smaller ones a direct lookup
_RGI_MIN_POINTS = 256

#: zoom factor of :meth:`Field.jacksboro_smooth` (the central 1/8 of the DEM's width and height, magnified x8)
_SMOOTH_ZOOM = 8


class Field:
    """A scalar field sampled on a regular grid of nodes over a rectangle (metres, map frame).

    Args:
        values: array (ny, nx), ``values[j, i]`` is the field at ``(xs[i], ys[j])``; row 0 is the
            **south** edge (``ymin``), column 0 the west edge (``xmin``). ``ny, nx >= 2``, all finite.
        extent: ``(xmin, xmax, ymin, ymax)`` metres; the outermost nodes lie on the rectangle's edges.
        name: label used in messages and plots.
        unit: the unit of the values for reports (e.g. ``'m (elevation)'``), or None when it is not known
            (:meth:`load` sets it: :func:`~uncertain_bo.sim.field_spec.field_unit`).

    Raises:
        FieldError: wrong shape, non-finite values, or an empty rectangle.

    Example:
        A hill (a Hann window) on a 21 x 21 grid over 60 m x 60 m: its peak, values between nodes, and the robust
        field :math:`g = f * \\mathcal N(0, 3^2 I)` that execution noise of 3 m makes of it:

        >>> import numpy as np
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 60, 0, 60), name='hill')
        >>> hill
        Field('hill', 21x21 nodes over x[0, 60] y[0, 60] m, values [0, 1])
        >>> xy, peak = hill.argmax()
        >>> xy.tolist(), peak, hill.value(np.array([[15.0, 30.0]])).tolist()
        ([30.0, 30.0], 1.0, [0.5])
        >>> round(hill.convolved(np.diag([3.0 ** 2, 3.0 ** 2])).argmax()[1], 3)
        0.952
    """

    def __init__(self, values: np.ndarray, extent: Sequence[float] = DEFAULT_EXTENT, name: str = 'field',
                 unit: str | None = None):
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
        self.unit = unit
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
        z, extent, name = npz_grid(path, extent, key)
        return cls(z, extent, name=name)

    @classmethod
    def from_csv(cls, path: str | Path, resolution: float | None = None,
                 extent: Sequence[float] | None = None, max_points: int = MAX_CSV_POINTS) -> 'Field':
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
            max_points: refuse files with more points than this (default
                :data:`~uncertain_bo.sim.field_files.MAX_CSV_POINTS`, 2000: the exact GP's cost grows as n³).

        Raises:
            FieldError: (one line naming the file) missing file, a directory, not UTF-8 text, a malformed
                row (with its line number), a NaN/inf value, fewer than 3 points, points on one line, all
                values equal, too many points, an extent that covers only part of the points' box, or a
                GP fit that is flat.
        """
        z, extent, name = csv_grid(path, resolution, extent, max_points)
        return cls(z, extent, name=name)

    @classmethod
    def load(cls, spec: str | Path, extent: Sequence[float] | None = None) -> 'Field':
        """Field from a specification string, with the unit of its values (:func:`~uncertain_bo.sim.field_spec.
        field_unit`).

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
        field = cls._load(spec, extent)
        field.unit = field_unit(spec)
        return field

    @classmethod
    def _load(cls, spec: str | Path, extent: Sequence[float] | None) -> 'Field':
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
        if low in catalogue():     # a field of a shipped suite (uncertain_bo/data/suites)
            from .field_catalogue import catalogue_field
            return catalogue_field(low, extent if extent is not None else DEFAULT_EXTENT, field_type=cls)
        by_suite: dict[str | None, list[str]] = {}
        for name in catalogue():
            by_suite.setdefault(suite_of(name), []).append(name)
        suites = '; '.join(f'{suite}: {", ".join(names)}' for suite, names in by_suite.items())
        raise FieldError(f'unknown field {s!r}: use one of {", ".join(FIELD_NAMES)}, a suite field ({suites}), '
                         'or a path to a .npz grid or a .csv of x,y,value measurements')

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
            return Field(self._z, self._extent, name=name, unit=self.unit)
        dx, dy = self.spacing
        hx = int(math.ceil(4.0 * math.sqrt(max(c[0, 0], 0.0)) / dx))
        hy = int(math.ceil(4.0 * math.sqrt(max(c[1, 1], 0.0)) / dy))
        if hx == 0 and hy == 0:
            return Field(self._z, self._extent, name=name, unit=self.unit)
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
        return Field(g, self._extent, name=name, unit=self.unit)

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
        return field_statistics(self, cov, regret)

    def __repr__(self) -> str:
        ny, nx = self.shape
        return (f'Field({self.name!r}, {nx}x{ny} nodes over x[{self._extent[0]:g}, {self._extent[1]:g}] '
                f'y[{self._extent[2]:g}, {self._extent[3]:g}] m, values '
                f'[{self._z.min():.4g}, {self._z.max():.4g}])')

"""Scalar environmental fields on a regular grid over a rectangle in the ``map`` frame.

A :class:`Field` is what the simulated rover measures (elevation, soil nutrient, gas concentration, ...):
values on a regular grid of nodes spanning the rectangle ``(xmin, xmax, ymin, ymax)`` metres, x east,
y north (REP-103). Between nodes the field is bilinear; outside the rectangle it is clamped to the edge,
because a rover with execution noise can stray a little beyond the search area.

:meth:`Field.convolved` gives the robust objective ``g = f * N(0, Σ)``, i.e. the expected reading when
the rover aims at ``x`` but actually stands at ``x + ε`` with ``ε ~ N(0, Σ)`` (execution noise); its
:meth:`argmax` is the robust optimum the explorer should find.

Sources: the real USGS elevation grid shipped with matplotlib (:meth:`Field.jacksboro`), any gridded
``.npz`` (:meth:`Field.from_npz`), or scattered ``x,y,value`` CSV measurements interpolated by a GP
(:meth:`Field.from_csv`).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.interpolate import RegularGridInterpolator
from scipy.signal import fftconvolve

__all__ = ['Field', 'FieldError', 'DEFAULT_EXTENT']

#: batches at least this large go through scipy's RegularGridInterpolator, smaller ones a direct lookup
_RGI_MIN_POINTS = 256

#: Default rectangle (xmin, xmax, ymin, ymax) in metres onto which the built-in field is mapped.
DEFAULT_EXTENT = (0.0, 200.0, 0.0, 200.0)


class FieldError(ValueError):
    """A field file or specification cannot be used (missing key, malformed row, too few points)."""


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
    def default(cls, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """The built-in field: :meth:`jacksboro` mapped onto ``extent`` (metres)."""
        return cls.jacksboro(extent)

    @classmethod
    def jacksboro(cls, extent: Sequence[float] = DEFAULT_EXTENT) -> 'Field':
        """Real USGS elevation (metres) around the Jacksboro fault, Tennessee, from matplotlib's sample data.

        The 344 x 403 grid (about 0.29° x 0.34° of latitude/longitude) is mapped as a whole onto
        ``extent`` metres, north up (+y = increasing latitude), east right (+x = increasing longitude).
        Values range from 236 m to 1076 m.
        """
        from matplotlib import cbook

        path = cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False)
        field = cls.from_npz(path, extent=extent, key='elevation')
        field.name = 'jacksboro'
        return field

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
            path: the ``.npz`` file.
            extent: ``(xmin, xmax, ymin, ymax)`` metres to map the grid onto (overrides the file's
                coordinates, which may be in other units such as degrees; the file's orientation is kept).
            key: name of the 2-D array; needed when the file holds several 2-D arrays.

        Raises:
            FieldError: the file cannot be read, the array or coordinate keys are missing, or the grid is
                invalid; the message names the file and the missing key.
        """
        path = Path(path)
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise FieldError(f'cannot read field file {path}: {exc}') from exc
        with data:
            keys = list(data.keys())
            if key is None:
                grids = [k for k in keys if np.ndim(data[k]) == 2]
                if len(grids) != 1:
                    raise FieldError(f'field file {path}: expected exactly one 2-D array, found '
                                     f'{grids or "none"} among keys {keys}; pass key=...')
                key = grids[0]
            if key not in keys:
                raise FieldError(f'field file {path} has no array {key!r}; keys: {keys}')
            z = np.asarray(data[key], dtype=float)
            if z.ndim != 2:
                raise FieldError(f'field file {path}: array {key!r} must be 2-D, has shape {z.shape}')
            if 'extent' in keys:
                coords = np.asarray(data['extent'], dtype=float).ravel()
                if coords.size != 4:
                    raise FieldError(f"field file {path}: 'extent' must hold 4 numbers "
                                     f'(xmin, xmax, ymin, ymax), has {coords.size}')
            else:
                missing = [k for k in ('xmin', 'xmax', 'ymin', 'ymax') if k not in keys]
                if missing and extent is None:
                    raise FieldError(f'field file {path} is missing coordinate key(s) {missing} (or an '
                                     "'extent' array); pass extent=(xmin, xmax, ymin, ymax) in metres")
                coords = (None if missing else
                          np.array([float(data[k]) for k in ('xmin', 'xmax', 'ymin', 'ymax')]))
        if coords is not None:
            if coords[0] == coords[1] or coords[2] == coords[3]:
                raise FieldError(f'field file {path}: degenerate coordinates {coords.tolist()}')
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

        Args:
            path: CSV file with rows ``x,y,value`` (metres, metres, field units); one header row is allowed.
            resolution: grid spacing in metres (default: 100 cells along the longer side).
            extent: ``(xmin, xmax, ymin, ymax)`` metres of the grid (default: bounding box of the points).
            max_points: refuse files with more points than this (exact GP cost grows as n³).

        Raises:
            FieldError: unreadable file, a malformed row (the message gives its line number), a NaN/inf
                value, fewer than 3 points, all points collinear/identical, or too many points.
        """
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise FieldError(f'cannot read field file {path}: {exc.strerror}') from exc
        rows = []
        for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
            if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith('#'):
                continue
            if len(row) != 3:
                raise FieldError(f'{path}:{lineno}: expected 3 columns x,y,value, got {len(row)}: {row}')
            try:
                vals = [float(c) for c in row]
            except ValueError as exc:
                if not rows and lineno == 1:
                    continue  # header
                raise FieldError(f'{path}:{lineno}: not a number in row {row}') from exc
            if not all(math.isfinite(v) for v in vals):
                raise FieldError(f'{path}:{lineno}: non-finite value (NaN/inf) in row {row}; '
                                 'remove or fill that measurement')
            rows.append(vals)
        if len(rows) < 3:
            raise FieldError(f'{path}: need at least 3 measurements to interpolate a field, got {len(rows)}')
        if len(rows) > max_points:
            raise FieldError(f'{path}: {len(rows)} points exceed max_points={max_points}; thin the data')
        pts = np.asarray(rows)
        xy, y = pts[:, :2], pts[:, 2]
        if extent is None:
            lo, hi = xy.min(axis=0), xy.max(axis=0)
            if np.any(hi - lo <= 0):
                raise FieldError(f'{path}: the points span no area (all x or all y equal); '
                                 'pass extent=(xmin, xmax, ymin, ymax)')
            extent = (lo[0], hi[0], lo[1], hi[1])
        xmin, xmax, ymin, ymax = _check_extent(extent, f'field file {path}')
        if resolution is None:
            resolution = max(xmax - xmin, ymax - ymin) / 100.0
        if not (resolution > 0 and math.isfinite(resolution)):
            raise FieldError(f'resolution must be a positive number of metres, got {resolution!r}')
        nx = max(2, int(round((xmax - xmin) / resolution)) + 1)
        ny = max(2, int(round((ymax - ymin) / resolution)) + 1)
        z = _gp_posterior_mean(xy, y, extent=(xmin, xmax, ymin, ymax), shape=(ny, nx))
        return cls(z, (xmin, xmax, ymin, ymax), name=path.stem)

    @classmethod
    def load(cls, spec: str, extent: Sequence[float] | None = None) -> 'Field':
        """Field from a specification string.

        Args:
            spec: ``'jacksboro'`` or ``'default'`` (built-in elevation), or a path ending in ``.npz`` or
                ``.csv``.
            extent: rectangle (metres) for the built-in field and ``.npz`` files; for ``.csv`` the grid
                extent (default: the points' bounding box).

        Raises:
            FieldError: unknown specification or a file error.
        """
        s = str(spec).strip()
        if s.lower() in ('jacksboro', 'default'):
            return cls.jacksboro(extent if extent is not None else DEFAULT_EXTENT)
        low = s.lower()
        if low.endswith('.npz'):
            return cls.from_npz(s, extent=extent)
        if low.endswith('.csv'):
            return cls.from_csv(s, extent=extent)
        raise FieldError(f"unknown field {spec!r}: use 'jacksboro' (or 'default'), or a path to a .npz grid "
                         'or a .csv of x,y,value measurements')

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

    def __repr__(self) -> str:
        ny, nx = self.shape
        return (f'Field({self.name!r}, {nx}x{ny} nodes over x[{self._extent[0]:g}, {self._extent[1]:g}] '
                f'y[{self._extent[2]:g}, {self._extent[3]:g}] m, values '
                f'[{self._z.min():.4g}, {self._z.max():.4g}])')


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

"""Reading a field's grid from a file: NumPy ``.npz`` grids and ``x,y,value`` CSV point surveys.

:func:`npz_grid` reads a gridded ``.npz`` (its coordinates say which way is north and east) and
:func:`csv_grid` interpolates scattered measurements onto a grid with a Gaussian process
(:func:`_gp_posterior_mean`, also used for the point surveys of :mod:`uncertain_bo.sim.field_catalogue`).
They are what :meth:`Field.from_npz <uncertain_bo.sim.field.Field.from_npz>` and
:meth:`Field.from_csv <uncertain_bo.sim.field.Field.from_csv>` build a field from; the file formats, the
arguments and every error are documented there. Every problem raises a one-line
:class:`~uncertain_bo.sim.field_spec.FieldError` naming the file and what to do.
"""
from __future__ import annotations

import csv
import math
import zipfile
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from .field_spec import FIELD_NAMES, FieldError, _check_extent

__all__ = ['npz_grid', 'csv_grid', 'MAX_CSV_POINTS']

Extent = tuple[float, float, float, float]

#: most points a ``.csv`` field file may hold: the GP that interpolates them costs O(n³) time and O(n²) memory to
#: fit, so a larger survey is thinned, or gridded by the user and given as an ``.npz`` grid (no limit)
MAX_CSV_POINTS = 2000


def npz_grid(path: str | Path, extent: Sequence[float] | None = None,
             key: str | None = None) -> tuple[np.ndarray, Extent, str]:
    """The grid of :meth:`Field.from_npz <uncertain_bo.sim.field.Field.from_npz>` (arguments and errors there).

    Returns:
        ``(z, extent, name)``: values ``z`` (ny, nx) with row 0 the south edge and column 0 the west edge,
        ``(xmin, xmax, ymin, ymax)`` in metres, and the file's stem.

    Raises:
        FieldError: as :meth:`Field.from_npz <uncertain_bo.sim.field.Field.from_npz>`.
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
    return np.ascontiguousarray(z), _check_extent(use, f'field file {path}'), path.stem


def csv_grid(path: str | Path, resolution: float | None = None, extent: Sequence[float] | None = None,
             max_points: int = MAX_CSV_POINTS) -> tuple[np.ndarray, Extent, str]:
    """The grid of :meth:`Field.from_csv <uncertain_bo.sim.field.Field.from_csv>` (arguments, the rule for
    what ``extent`` means, and errors there): the posterior mean of a GP fitted to the points.

    Returns:
        ``(z, extent, name)``: values ``z`` (ny, nx) with row 0 the south edge, ``(xmin, xmax, ymin, ymax)``
        in metres, and the file's stem.

    Raises:
        FieldError: as :meth:`Field.from_csv <uncertain_bo.sim.field.Field.from_csv>`.
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
    header_allowed = True       # the first row that is not blank or a comment may be a header
    for lineno, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith('#'):
            continue
        if len(row) != 3:
            raise FieldError(f'{path}:{lineno}: expected 3 columns x,y,value, got {len(row)}: {row}')
        first, header_allowed = header_allowed, False
        try:
            vals = [float(c) for c in row]
        except ValueError:
            if first:
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
        raise FieldError(f'{path}: {len(rows)} points, more than the {max_points} a .csv field file may hold (the GP '
                         f'that interpolates them grows as n³): thin it to {max_points} rows (keep one in '
                         f'{math.ceil(len(rows) / max_points)}), '
                         'or grid the survey yourself and give it as an .npz grid (no limit)')
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
            box = [float(f'{v:.6g}') for v in (lo[0], hi[0], lo[1], hi[1])]
            raise FieldError(
                f'{path}: the points cover {100 * covered:.0f} % of the extent {[xmin, xmax, ymin, ymax]} (flat where '
                f"there are no data): set field_extent (report: --extent) to the points' box {box} or inside it, "
                'the start (initial_x, initial_y) within, or disjoint from the points to map them onto it')
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
    return z, (xmin, xmax, ymin, ymax), path.stem


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

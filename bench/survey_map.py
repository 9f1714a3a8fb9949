"""``uncertain-bo map`` at scale and its peak region's calibration (issue 33, item 3 targets).

Two measurements, each through the command itself (``uncertain_bo.cli.main``, reading the files it writes):

- ``--timing``: a CSV of ``--points`` (default 10^4) WGS84 latitude/longitude points, an ASV's survey: ``--lines``
  lawnmower transects over 1.2 km x 0.9 km in UTM zone 32N, positions with a 2 m GNSS error, depth readings of a
  synthetic bathymetry with 5 cm noise. Reports the wall time (``--threads`` torch threads; the CLI's default is 1)
  and checks the GeoTIFF's placement independently of the project's code: the file's CRS against the EPSG code of
  the centroid's UTM zone, each point projected by pyproj into the file's CRS and located with rasterio's inverse
  geotransform: the distance from the point to its pixel's centre (at most half a cell's diagonal when the grid
  and the CRS agree) and, for the south-west-most point (the grid's first cell centre), the distance to it
  (0 m when the geotransform places the grid on the points' own projected coordinates; the target is < 1 m).
- ``--calibration``: ``--draws`` (default 50) seeded surveys of a known field on 500 m x 500 m: a Gaussian peak
  (amplitude 3, width 40 m) at a random place plus a background sin(x/90) cos(y/70), sampled at ``--n`` uniformly
  random places, recorded with a 2 m GNSS error, readings with 0.1 noise. The true robust peak is the argmax over
  the map's covered cells of g = E[f(x + xi)], xi ~ N(0, 2^2 I) (in closed form: the Gaussian peak widens, the
  background's amplitude shrinks by exp(-sigma^2 / 2p^2)). Counts the draws whose region (at the stated
  probability, ``--probabilities``) holds the true peak's cell; also the credible interval's coverage of g there.

    PYTHONPATH=. python bench/survey_map.py --timing [--points 10000] [--threads 1]
    PYTHONPATH=. python bench/survey_map.py --calibration [--draws 50] [--n 800] [--probabilities 0.9 0.95] [--jobs 4]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

UTM32N = 32632
X0, Y0 = 480_000.0, 5_240_000.0


def _write_latlon_csv(path: Path, x: np.ndarray, y: np.ndarray, value: np.ndarray, epsg: int = UTM32N) -> None:
    import pyproj

    lon, lat = pyproj.Transformer.from_crs(epsg, 4326, always_xy=True).transform(x, y)
    with open(path, 'w') as fh:
        fh.write('latitude,longitude,depth_m\n')
        for a, b, c in zip(lat, lon, value):
            fh.write(f'{a:.9f},{b:.9f},{c:.4f}\n')


def _run_map(args: list[str]) -> tuple[int, str, float]:
    from uncertain_bo.cli import main

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in args])
    return code, out.getvalue(), time.perf_counter() - t0


def timing(points: int, lines: int, threads: int, seed: int) -> dict:
    import pyproj
    import rasterio

    os.environ['UNCERTAIN_BO_TORCH_THREADS'] = str(threads)
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, points)
    k = np.minimum((t * lines).astype(int), lines - 1)
    frac = t * lines - k
    along = np.where(k % 2 == 0, frac, 1.0 - frac) * 1200.0
    x_true, y_true = along, k / (lines - 1) * 900.0
    depth = (8.0 + 4.0 * np.exp(-((x_true - 700) ** 2 + (y_true - 350) ** 2) / (2 * 150.0 ** 2))
             + 1.5 * np.sin(x_true / 160.0) + rng.normal(0, 0.05, points))
    x = X0 + x_true + rng.normal(0, 2.0, points)
    y = Y0 + y_true + rng.normal(0, 2.0, points)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / 'survey.csv'
        _write_latlon_csv(csv, x, y, depth)
        code, stdout, wall = _run_map(['map', csv, '--value', 'depth_m', '--location-std', '2', '--out',
                                       Path(tmp) / 'map'])
        if code:
            raise SystemExit(f'map failed ({code})')
        peak = json.loads((Path(tmp) / 'map' / 'peak.json').read_text())
        lon, lat = pyproj.Transformer.from_crs(UTM32N, 4326, always_xy=True).transform(x, y)
        with rasterio.open(Path(tmp) / 'map' / 'map.tif') as ds:
            zone = int((np.degrees(np.arctan2(np.sin(np.radians(lon)).mean(), np.cos(np.radians(lon)).mean()))
                        + 180) // 6) + 1
            expected = 32600 + zone if lat.mean() >= 0 else 32700 + zone
            px, py = pyproj.Transformer.from_crs('EPSG:4326', ds.crs.to_wkt(), always_xy=True).transform(lon, lat)
            rows, cols = rasterio.transform.rowcol(ds.transform, px, py)
            cx, cy = rasterio.transform.xy(ds.transform, rows, cols)
            to_centre = np.hypot(np.asarray(cx) - px, np.asarray(cy) - py)
            first_col = rasterio.transform.xy(ds.transform, ds.height - 1, 0)
            res = ds.res[0]
            result = {
                'points': points, 'threads': threads, 'wall_s': round(wall, 2),
                'crs_epsg': ds.crs.to_epsg(), 'expected_epsg': expected, 'size': [ds.width, ds.height], 'res_m': res,
                'max_point_to_pixel_centre_m': float(to_centre.max()), 'half_cell_diagonal_m': res / math.sqrt(2),
                'west_edge_centre_minus_min_x_m': float(first_col[0] - px.min()),
                'south_edge_centre_minus_min_y_m': float(first_col[1] - py.min()),
                'sparse': peak['model']['sparse'], 'peak': peak['peak'], 'region_cells': peak['region']['cells'],
                'stdout': stdout.strip().splitlines(),
            }
    return result


def _field(x, y, c):
    return 3.0 * np.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2) / (2 * 40.0 ** 2)) + np.sin(x / 90.0) * np.cos(y / 70.0)


def _robust(x, y, c, s):
    """g = E[f(x + xi)], xi ~ N(0, s^2 I), in closed form."""
    w2 = 40.0 ** 2 + s ** 2
    bump = 3.0 * 40.0 ** 2 / w2 * np.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2) / (2 * w2))
    damp = np.exp(-s ** 2 / (2 * 90.0 ** 2)) * np.exp(-s ** 2 / (2 * 70.0 ** 2))
    return bump + damp * np.sin(x / 90.0) * np.cos(y / 70.0)


def _draw(seed: int, n: int, probabilities: list[float], gnss: float) -> dict:
    """One seeded survey of the known field, mapped; whether each region holds the true robust peak's cell."""
    import rasterio

    rng = np.random.default_rng(1000 + seed)
    c = rng.uniform(100, 400, 2)
    xt, yt = rng.uniform(0, 500, n), rng.uniform(0, 500, n)
    v = _field(xt, yt, c) + rng.normal(0, 0.1, n)
    x, y = X0 + xt + rng.normal(0, gnss, n), Y0 + yt + rng.normal(0, gnss, n)
    row = {'seed': seed, 'centre': c.round(1).tolist()}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / 'survey.csv'
        _write_latlon_csv(csv, x, y, v)
        out = Path(tmp) / 'map'
        code, _, wall = _run_map(['map', csv, '--value', 'depth_m', '--location-std', gnss, '--resolution', 5,
                                  '--region-probability', max(probabilities), '--seed', seed, '--out', out])
        if code:
            raise SystemExit(f'map failed ({code}) on draw {seed}')
        peak = json.loads((out / 'peak.json').read_text())
        with rasterio.open(out / 'map.tif') as ds:
            assert ds.crs.to_epsg() == UTM32N         # the draw's own coordinates, as written
            covered = ~np.isnan(ds.read(1)[::-1])
    g = peak['grid']
    gx = g['x0'] + g['resolution'] * np.arange(g['nx']) - X0
    gy = g['y0'] + g['resolution'] * np.arange(g['ny']) - Y0
    truth = np.where(covered, _robust(*np.meshgrid(gx, gy), c, gnss), -np.inf)
    r, k = np.unravel_index(int(np.argmax(truth)), truth.shape)
    centre = np.array([g['x0'] + g['resolution'] * k, g['y0'] + g['resolution'] * r])
    cells = np.array(peak['region']['cells_xy'])
    # the region at a smaller probability is a prefix of the cells, most probable first (the same rule)
    cum = np.cumsum(peak['region']['cell_probabilities'])
    for p in probabilities:
        n_p = min(int(np.searchsorted(cum, p - 1e-12)) + 1, len(cells))
        row[f'region_{p}'] = {'holds_true_peak': bool(np.any(np.hypot(*(cells[:n_p] - centre).T) < 1e-2)),
                              'cells': n_p, 'area_m2': n_p * g['resolution'] ** 2, 'mass': float(cum[n_p - 1])}
    lo, hi = peak['peak']['value']['credible_interval']
    px, py = peak['peak']['map']['x'] - X0, peak['peak']['map']['y'] - Y0
    row['interval_holds_true_g'] = bool(lo <= float(_robust(px, py, c, gnss)) <= hi)
    row['peak_error_m'] = float(np.hypot(px + X0 - centre[0], py + Y0 - centre[1]))
    row['wall_s'] = wall
    print(json.dumps(row), flush=True)
    return row


def calibration(draws: int, n: int, probabilities: list[float], jobs: int = 1, gnss: float = 2.0) -> dict:
    from joblib import Parallel, delayed

    os.environ.setdefault('UNCERTAIN_BO_TORCH_THREADS', '1')
    rows = Parallel(n_jobs=jobs)(delayed(_draw)(seed, n, probabilities, gnss) for seed in range(draws))
    return {'draws': draws, 'n': n, 'gnss_m': gnss,
            'region_holds_true_peak': {str(p): f"{sum(r[f'region_{p}']['holds_true_peak'] for r in rows)}/{draws}"
                                       for p in probabilities},
            'median_region_area_m2': {str(p): float(np.median([r[f'region_{p}']['area_m2'] for r in rows]))
                                      for p in probabilities},
            'credible_interval_0.95_holds_true_g_at_peak': f"{sum(r['interval_holds_true_g'] for r in rows)}/{draws}",
            'median_peak_error_m': float(np.median([r['peak_error_m'] for r in rows])),
            'median_wall_s': float(np.median([r['wall_s'] for r in rows]))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--timing', action='store_true')
    ap.add_argument('--calibration', action='store_true')
    ap.add_argument('--points', type=int, default=10_000)
    ap.add_argument('--lines', type=int, default=30)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--draws', type=int, default=50)
    ap.add_argument('--n', type=int, default=800)
    ap.add_argument('--probabilities', type=float, nargs='+', default=[0.9, 0.95])
    ap.add_argument('--jobs', type=int, default=1, help='calibration draws run in parallel processes')
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    if a.timing:
        print(json.dumps(timing(a.points, a.lines, a.threads, a.seed), indent=1))
    if a.calibration:
        print(json.dumps(calibration(a.draws, a.n, sorted(a.probabilities), a.jobs), indent=1))


if __name__ == '__main__':
    main()

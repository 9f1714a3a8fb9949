"""``uncertain-bo map SOURCE --out DIR``: the posterior map of a survey as a GeoTIFF, a PNG and ``peak.json``.

::

    uncertain-bo map survey.csv --value depth_m --location-std 2.5 --out maps/lake
    uncertain-bo map runs/demo --out maps/demo            # a run folder: its journal's readings and covariances

SOURCE is a CSV of points (latitude/longitude or x/y metres, and the column ``--value``) or a run's journal
(:mod:`uncertain_bo.survey_map.sources`). The readings are fitted on the project's shared GP with their location
uncertainty (:mod:`uncertain_bo.survey_map.posterior`), the robust peak and a region that holds it are drawn from
the posterior (:mod:`uncertain_bo.survey_map.peak`), and ``map.tif``, ``map.png``, ``peak.json`` and ``field.npz``
are written into ``--out`` (:mod:`uncertain_bo.survey_map.files`). Every mistake in the input or the options is
found before anything is written: one ``error:`` line, exit status 2.
"""
from __future__ import annotations

import argparse
import textwrap
import time
from pathlib import Path

__all__ = ['add_parser', 'run']


def _probability(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f'must be strictly between 0 and 1, got {text}')
    return value


def _metres(text: str) -> float:
    value = float(text)
    if not (value >= 0.0 and value < float('inf')):
        raise argparse.ArgumentTypeError(f'must be a finite number of metres >= 0, got {text}')
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be a positive integer, got {text}')
    return value


DESCRIPTION = (
    'Fit the shared GP to a survey, every reading with its location uncertainty, and write its posterior mean and '
    'standard deviation as a GeoTIFF (map.tif, two bands, in the UTM zone of the points for latitude/longitude, the '
    'local tangent plane at --origin, or an engineering CRS for x/y metres), a PNG (map.png), the robust peak with a '
    'credible interval and a region that holds it with stated probability (peak.json), and the mean as a field grid '
    'for uncertain-bo bench --field (field.npz).')

EPILOG = (
    'CSV columns (case-insensitive): lat/latitude and lon/lng/longitude in WGS84 degrees, or x and y in metres (x '
    'east, y north), and the --value column. Rows with an empty, non-numeric, NaN or inf value or coordinate are '
    'skipped and counted (printed, and in peak.json); an empty file, missing or mixed coordinate columns, degrees out '
    'of range, or a missing --value column are errors (nothing written).\n\n'
    'peak.json: the robust peak (the covered cell with the largest posterior mean of E[f(x + xi)], xi the execution '
    'noise) in map and WGS84 coordinates, its value with a central credible interval, and the smallest set of cells '
    'that holds the argmax with the stated probability, from joint posterior draws (the method: '
    'docs/field_robots.md, "Mapping a survey").')


def _paragraphs(text: str) -> str:
    """``text``'s paragraphs (split at blank lines) wrapped to 79 columns, for a raw help text."""
    return '\n\n'.join(textwrap.fill(part, 79) for part in text.split('\n\n'))


def add_parser(sub) -> None:
    from .sources import COORDINATES, DEFAULT_LOCATION_STD

    p = sub.add_parser(
        'map', help="a survey's posterior map (GeoTIFF, PNG, peak.json) from a CSV of points, a run's journal or "
                    'its recording',
        formatter_class=argparse.RawDescriptionHelpFormatter, description=_paragraphs(DESCRIPTION),
        epilog=_paragraphs(EPILOG))
    p.add_argument('source', type=Path, help='a CSV of points, a journal.jsonl, a run folder with one, or an '
                   "explorer's own recording (rosbag2 folder or .mcap: the journal it holds)")
    p.add_argument('--out', type=Path, required=True, help='folder for map.tif, map.png, peak.json, field.npz')
    p.add_argument('--value', default=None, metavar='COLUMN', help='CSV column of the readings (a CSV needs it)')
    p.add_argument('--location-std', type=_metres, default=None, metavar='M',
                   help='CSV: the GNSS horizontal error, 1-sigma per axis, m (default '
                        f'{DEFAULT_LOCATION_STD:g}); every point gets covariance M^2 I. A journal carries its own')
    p.add_argument('--unit', default=None,
                   help="the readings' unit, for the map's labels and peak.json (a journal's default: its reading "
                        "type's)")
    p.add_argument('--coordinates', choices=COORDINATES, default=None,
                   help='CSV with both latitude/longitude and x/y columns: which to use')
    p.add_argument('--origin', type=float, nargs=2, default=None, metavar=('LAT', 'LON'),
                   help='x/y metres (CSV or journal): the WGS84 point at x = y = 0 (x east, y north); the map is '
                        'then in the local tangent plane there and the peak also in WGS84')
    p.add_argument('--execution-std', type=_metres, nargs=2, default=None, metavar=('SX', 'SY'),
                   help="the robust peak's execution noise, m (default: --location-std for a CSV, the run's "
                        'execution_noise_std for a journal)')
    p.add_argument('--resolution', type=float, default=None, metavar='M',
                   help="cell size, m (default: the longer side of the points' box / 200)")
    p.add_argument('--coverage', type=_metres, default=None, metavar='M',
                   help="map the cells inside the readings' convex hull and within this distance of a reading; "
                        'others are nodata and not searched for the peak (default: the fitted lengthscale; 0: every '
                        'cell)')
    p.add_argument('--credibility', type=_probability, default=0.95, metavar='P',
                   help="probability of the peak value's credible interval (default 0.95)")
    p.add_argument('--region-probability', type=_probability, default=0.95, metavar='P',
                   help='probability with which the peak region holds the peak (default 0.95)')
    p.add_argument('--samples', type=_positive_int, default=1000, metavar='S',
                   help='joint posterior draws for the peak region (default 1000; at least 100)')
    p.add_argument('--fit-points', type=_positive_int, default=500, metavar='N',
                   help="readings the hyperparameter fit uses (the planner's fit_max_points; default 500)")
    p.add_argument('--sparse-above', type=_positive_int, default=1000, metavar='N',
                   help="beyond this many readings the posterior is sparse (the planner's sparse_above; default "
                        '1000)')
    p.add_argument('--inducing-points', type=_positive_int, default=500, metavar='N',
                   help="inducing inputs of the sparse posterior (the planner's inducing_points; default 500)")
    p.add_argument('--seed', type=int, default=0, help='seed of the fit and of the joint draws (default 0)')
    p.set_defaults(func=run)


def run(args) -> int:
    from ..reporting.output_files import check_outputs
    from ..user_errors import check_run_dir
    from .files import OUTPUT_FILES, write_outputs
    from .peak import robust_peak
    from .posterior import MapSettings, fit_map
    from .sources import SurveyError, read_survey

    t0 = time.perf_counter()
    out = check_run_dir(args.out, '--out')
    source = Path(args.source)
    check_outputs([(out / name, '--out') for name in OUTPUT_FILES],   # never onto the survey it reads
                  [(source, 'the survey'), (source / 'journal.jsonl', "the run's journal")])
    if args.samples < 100:
        raise SurveyError(f'--samples must be at least 100 joint draws, got {args.samples}')
    survey = read_survey(args.source, args.value, args.location_std, args.coordinates,
                         tuple(args.origin) if args.origin else None)
    if args.unit:
        survey.unit = args.unit
    execution_std = tuple(args.execution_std) if args.execution_std else survey.execution_std
    settings = MapSettings(resolution=args.resolution, fit_points=args.fit_points, sparse_above=args.sparse_above,
                           inducing_points=args.inducing_points, coverage=args.coverage, seed=args.seed)
    try:
        pmap = fit_map(survey, settings, execution_std)
        peak = robust_peak(pmap, args.credibility, args.region_probability, args.samples, seed=args.seed)
    except ValueError as exc:
        raise SurveyError(str(exc)) from None
    files = write_outputs(out, survey, pmap, peak, execution_std)
    skipped = sum(survey.skipped.values())
    print(f'{survey.n} readings from {survey.source} ({survey.rows} rows'
          + (f', {skipped} skipped: ' + ', '.join(f'{c} {r}' for r, c in survey.skipped.items()) if skipped else '')
          + f'); {survey.georeference.name}')
    where = f'x {peak.xy[0]:.2f} m, y {peak.xy[1]:.2f} m'
    if survey.georeference.georeferenced:
        lon, lat = survey.georeference.to_wgs84([peak.xy[0]], [peak.xy[1]])
        where += f' ({lat[0]:.7f}°, {lon[0]:.7f}°)'
    print(f'robust peak at {where}: {peak.mean:.6g} [{peak.interval[0]:.6g}, {peak.interval[1]:.6g}] '
          f'({100 * peak.credibility:g} % credible); region of {len(peak.region_cells)} cells holds it with '
          f'probability {100 * peak.region_probability:g} % (sampled {100 * peak.region_mass:.1f} %, at least '
          f'{100 * max(0.0, peak.region_mass - peak.excluded_bound):.1f} % with the cells left out of the draws)')
    print(f'wrote {", ".join(str(p) for p in files.values())} in {time.perf_counter() - t0:.1f} s')
    return 0

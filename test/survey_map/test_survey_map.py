"""``uncertain-bo map``: a survey's posterior map as a GeoTIFF, a PNG, peak.json and a field grid.

The GeoTIFF is read back with rasterio and its pixel centres compared with the points projected by pyproj
independently; the peak region's sampling is checked against closed-form argmax probabilities; every user mistake
ends in one ``error:`` line, exit status 2 and nothing written. Surveys here are small (the 10^4-point timing and
the calibration over 50 seeded draws are in bench/survey_map.py).
"""
import json
import math

import numpy as np
import pytest
import torch

rasterio = pytest.importorskip('rasterio')
pyproj = pytest.importorskip('pyproj')

from uncertain_bo.cli import main  # noqa: E402
from uncertain_bo.survey_map.peak import robust_peak  # noqa: E402
from uncertain_bo.survey_map.posterior import Grid, PosteriorMap  # noqa: E402

#: a UTM grid of points, as a GNSS survey would give them (zone 33N, EPSG:32633)
EPSG, X0, Y0, RES, NX, NY = 32633, 401_234.0, 5_102_345.0, 7.0, 12, 9


def field(x, y):
    """A smooth field with one peak (units: the survey's)."""
    return 3.0 * np.exp(-((x - 40.0) ** 2 + (y - 30.0) ** 2) / (2 * 20.0 ** 2)) + 0.01 * x


def run(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def utm_grid_csv(path, rng, header=('lat', 'lon', 'v'), noise=0.02):
    """Points on a regular UTM grid, written as WGS84 latitude/longitude; returns (lat, lon, x, y, value)."""
    i, j = np.meshgrid(np.arange(NX), np.arange(NY))
    x, y = X0 + RES * i.ravel(), Y0 + RES * j.ravel()
    lon, lat = pyproj.Transformer.from_crs(EPSG, 4326, always_xy=True).transform(x, y)
    v = field(x - X0, y - Y0) + rng.normal(0, noise, x.size)
    rows = [','.join(header)] + [f'{a:.10f},{b:.10f},{c:.6f}' for a, b, c in zip(lat, lon, v)]
    path.write_text('\n'.join(rows) + '\n')
    return lat, lon, x, y, v


QUICK = ['--samples', '200', '--fit-points', '150']


def test_geotiff_places_its_pixels_on_the_points_own_projected_coordinates(tmp_path, capsys):
    lat, lon, x, y, v = utm_grid_csv(tmp_path / 'survey.csv', np.random.default_rng(0))
    out = tmp_path / 'map'
    code, stdout, err = run(['map', tmp_path / 'survey.csv', '--value', 'v', '--resolution', RES, '--coverage', 0,
                             '--out', out, *QUICK], capsys)
    assert code == 0, err
    assert f'{NX * NY} readings' in stdout and 'UTM zone 33N' in stdout
    with rasterio.open(out / 'map.tif') as ds:
        assert ds.crs.to_epsg() == EPSG and ds.count == 2 and ds.res == (RES, RES)
        assert (ds.width, ds.height) == (NX, NY)
        assert 'posterior mean' in ds.descriptions[0] and 'standard deviation' in ds.descriptions[1]
        mean, std = ds.read(1), ds.read(2)
        to_wgs84 = pyproj.Transformer.from_crs(ds.crs.to_wkt(), 'EPSG:4326', always_xy=True)
        geod = pyproj.Geod(ellps='WGS84')
        px = py_ = None
        for k in range(x.size):
            row, col = NY - 1 - int(round((y[k] - Y0) / RES)), int(round((x[k] - X0) / RES))
            px, py_ = ds.xy(row, col)                       # the pixel centre, in the file's CRS
            assert math.hypot(px - x[k], py_ - y[k]) < 1e-3
            plon, plat = to_wgs84.transform(px, py_)
            assert geod.inv(plon, plat, lon[k], lat[k])[2] < 1e-3        # metres on the ellipsoid
            assert ds.index(x[k], y[k]) == (row, col)
            assert abs(mean[row, col] - v[k]) < 0.15 and 0 < std[row, col] < 0.5
    peak = json.loads((out / 'peak.json').read_text())
    assert peak['crs']['georeferenced'] and peak['input']['readings'] == NX * NY
    # the field's peak is at (40, 30) m from the grid's corner; the map's is within two cells of it
    assert math.hypot(peak['peak']['map']['x'] - X0 - 40.0, peak['peak']['map']['y'] - Y0 - 30.0) < 2 * RES
    plon, plat = pyproj.Transformer.from_crs(EPSG, 4326, always_xy=True).transform(
        peak['peak']['map']['x'], peak['peak']['map']['y'])
    assert peak['peak']['wgs84'] == pytest.approx({'latitude': plat, 'longitude': plon}, abs=1e-9)
    lo, hi = peak['peak']['value']['credible_interval']
    assert lo < peak['peak']['value']['mean'] < hi
    assert peak['region']['sampled_mass'] >= peak['region']['probability'] == 0.95
    assert set(peak) >= {'peak', 'region', 'crs', 'grid', 'model', 'input'}
    assert (out / 'map.png').stat().st_size > 10_000


def test_field_npz_is_the_map_that_bench_and_report_load(tmp_path, capsys):
    from uncertain_bo.sim.field import Field

    utm_grid_csv(tmp_path / 'survey.csv', np.random.default_rng(1))
    out = tmp_path / 'map'
    assert run(['map', tmp_path / 'survey.csv', '--value', 'v', '--resolution', RES, '--coverage', 0, '--out', out,
                *QUICK], capsys)[0] == 0
    f = Field.load(out / 'field.npz')
    grid = json.loads((out / 'peak.json').read_text())['grid']
    assert f.bounds == pytest.approx((grid['x0'], grid['x0'] + RES * (NX - 1), grid['y0'], grid['y0'] + RES * (NY - 1)))
    xs, ys, z = f.grid()
    with rasterio.open(out / 'map.tif') as ds:
        mean = ds.read(1)[::-1]                               # row 0 south, as the field's
        assert np.allclose(xs, [ds.xy(0, c)[0] for c in range(NX)])
        assert np.allclose(ys, [ds.xy(r, 0)[1] for r in range(NY)][::-1])
    assert np.allclose(z, mean, atol=1e-5)
    code, stdout, err = run(['bench', '--problem', 'rover', '--field', out / 'field.npz', '--method', 'random',
                             '--seeds', '1', '--iterations', '2', '--out', tmp_path / 'bench'], capsys)
    assert code == 0, err


def make_journal(run_dir, rng, n=40):
    """A run's journal with measurements and en-route readings at Gaussian locations (the planner writes it)."""
    from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
    from uncertain_bo.planning.planner import Planner

    planner = Planner(torch.tensor([[0.0, 0.0], [60.0, 40.0]]), GaussianExecutionNoise.isotropic([1.0, 1.0]),
                      journal=run_dir / 'journal.jsonl',
                      metadata={'parameters': {'frame_id': 'map', 'execution_noise_std': [1.5, 1.5],
                                               'reading_type': 'temperature'}})
    for k in range(n):
        xy = rng.uniform([0, 0], [60, 40])
        cov = np.diag(rng.uniform(0.1, 2.0, 2))
        loc = Gaussian(torch.tensor(xy[None]), torch.tensor(cov[None]))
        planner.observe(None if k % 2 else torch.tensor(xy), loc, float(field(*xy)), 0.01)
    return planner


def test_journal_is_mapped_in_its_map_frame_or_the_tangent_plane_at_its_origin(tmp_path, capsys):
    make_journal(tmp_path / 'run', np.random.default_rng(2))
    code, stdout, err = run(['map', tmp_path / 'run', '--out', tmp_path / 'a', *QUICK], capsys)
    assert code == 0, err
    peak = json.loads((tmp_path / 'a' / 'peak.json').read_text())
    assert peak['input']['readings'] == 40 and peak['input']['unit'] == '°C'
    assert not peak['crs']['georeferenced'] and peak['peak']['wgs84'] is None
    assert peak['execution_noise_std'] == [1.5, 1.5]          # the run's own
    with rasterio.open(tmp_path / 'a' / 'map.tif') as ds:
        assert 'map frame' in ds.crs.to_wkt() and not ds.crs.is_geographic

    lat0, lon0 = 47.3769, 8.5417
    assert run(['map', tmp_path / 'run' / 'journal.jsonl', '--origin', lat0, lon0, '--out', tmp_path / 'b', *QUICK],
               capsys)[0] == 0
    peak = json.loads((tmp_path / 'b' / 'peak.json').read_text())
    x, y = peak['peak']['map']['x'], peak['peak']['map']['y']
    azimuth, _, dist = pyproj.Geod(ellps='WGS84').inv(lon0, lat0, peak['peak']['wgs84']['longitude'],
                                                      peak['peak']['wgs84']['latitude'])
    assert peak['crs']['georeferenced']
    assert dist == pytest.approx(math.hypot(x, y), rel=1e-4)            # the tangent plane keeps distances here
    assert azimuth == pytest.approx(math.degrees(math.atan2(x, y)), abs=0.01)   # and directions (x east, y north)


def test_rows_without_usable_numbers_are_skipped_and_counted(tmp_path, capsys):
    rng = np.random.default_rng(3)
    utm_grid_csv(tmp_path / 's.csv', rng, header=('Latitude', 'Longitude', 'V'))
    lines = (tmp_path / 's.csv').read_text().splitlines()
    lat, lon, _ = lines[5].split(',')
    lines[5] = f'{lat},{lon},'                     # empty value
    lines[6] = f'{lat},{lon},nan'                  # NaN
    lines[7] = f'{lat},{lon},n/a'                  # not a number
    lines[8] = f'{lat}'                            # a short row
    (tmp_path / 's.csv').write_text('# comment line\n' + '\n'.join(lines) + '\n')
    code, stdout, err = run(['map', tmp_path / 's.csv', '--value', 'v', '--out', tmp_path / 'm', *QUICK], capsys)
    assert code == 0, err
    assert f'{NX * NY - 4} readings' in stdout and '4 skipped' in stdout
    peak = json.loads((tmp_path / 'm' / 'peak.json').read_text())
    assert peak['input']['readings'] == NX * NY - 4 and peak['input']['rows'] == NX * NY
    assert peak['input']['rows_skipped'] == {'empty or not a number': 2, 'NaN or inf': 1,
                                             'row with fewer fields than the header': 1}


def test_the_peak_stays_in_the_surveyed_area_not_an_extrapolated_corner(tmp_path, capsys):
    """Readings over a triangle whose field rises towards the empty corner of its bounding box: the map's peak is on
    the survey's edge (inside its convex hull), and the corner is nodata, however far the fitted lengthscale
    reaches."""
    rng = np.random.default_rng(6)
    xy = rng.uniform(0, 100, (400, 2))
    xy = xy[xy.sum(axis=1) <= 100]
    v = 0.05 * xy.sum(axis=1) + rng.normal(0, 0.05, len(xy))
    rows = ['x,y,v'] + [f'{a},{b},{c}' for (a, b), c in zip(xy, v)]
    (tmp_path / 'triangle.csv').write_text('\n'.join(rows) + '\n')
    assert run(['map', tmp_path / 'triangle.csv', '--value', 'v', '--resolution', 2, '--out', tmp_path / 'm', *QUICK],
               capsys)[0] == 0
    peak = json.loads((tmp_path / 'm' / 'peak.json').read_text())
    x, y = peak['peak']['map']['x'], peak['peak']['map']['y']
    assert x + y <= xy.sum(axis=1).max() + 2 * 2.0 and x + y > 90          # on the hypotenuse, not beyond it
    with rasterio.open(tmp_path / 'm' / 'map.tif') as ds:
        corner = ds.read(1)[ds.index(xy[:, 0].max() - 1, xy[:, 1].max() - 1)]
        assert np.isnan(corner) and ds.nodata is not None and np.isnan(ds.nodata)


def test_the_shipped_drone_survey_maps_on_the_sparse_path(tmp_path, capsys):
    """The real survey shipped as test data (uncertain_bo/data/surveys): a drone's CO2 readings over a 140 m field,
    1965 readings, beyond sparse_above: mapped in its UTM zone, the peak inside the flown area."""
    from uncertain_bo.data import data_path

    src = data_path('surveys', 'drone_co2_friesland_2022-12-21.csv')
    code, stdout, err = run(['map', src, '--value', 'co2_ppm', '--unit', 'ppm', '--location-std', '1.5', '--resolution',
                             4, '--inducing-points', 200, '--out', tmp_path / 'm', *QUICK], capsys)
    assert code == 0, err
    peak = json.loads((tmp_path / 'm' / 'peak.json').read_text())
    assert peak['input']['readings'] == 1965 and peak['model']['sparse'] and peak['crs']['name'].endswith('32631)')
    assert peak['peak']['value']['unit'] == 'ppm'
    lat, lon = peak['peak']['wgs84']['latitude'], peak['peak']['wgs84']['longitude']
    assert 53.3278 < lat < 53.3292 and 5.9321 < lon < 5.9344               # the flown area (the file's extremes)


def test_both_coordinate_kinds_are_used_as_chosen(tmp_path, capsys):
    rng = np.random.default_rng(4)
    lat, lon, x, y, v = utm_grid_csv(tmp_path / 'g.csv', rng)
    rows = ['lat,lon,x,y,v'] + [f'{a},{b},{c - X0},{d - Y0},{e}' for a, b, c, d, e in zip(lat, lon, x, y, v)]
    (tmp_path / 'both.csv').write_text('\n'.join(rows) + '\n')
    assert run(['map', tmp_path / 'both.csv', '--value', 'v', '--coordinates', 'xy', '--out', tmp_path / 'xy',
                *QUICK], capsys)[0] == 0
    assert not json.loads((tmp_path / 'xy' / 'peak.json').read_text())['crs']['georeferenced']
    assert run(['map', tmp_path / 'both.csv', '--value', 'v', '--coordinates', 'latlon', '--out', tmp_path / 'll',
                *QUICK], capsys)[0] == 0
    assert json.loads((tmp_path / 'll' / 'peak.json').read_text())['crs']['name'].endswith('(EPSG:32633)')


def mistakes(tmp_path):
    """(name, file content or None, extra arguments, what the one-line error must say)."""
    good = 'lat,lon,v\n47.0,8.0,1\n47.001,8.0,2\n47.0,8.001,3\n47.001,8.001,4\n'
    return [
        ('no_coordinates', 'a,b,v\n1,2,3\n4,5,6\n7,8,9\n', ['--value', 'v'], 'no coordinate columns'),
        ('mixed_units', 'lat,lon,x,y,v\n47,8,1,2,3\n47.1,8,1,3,4\n47,8.1,2,2,5\n', ['--value', 'v'],
         'mixed units'),
        ('latitude_out_of_range', 'lat,lon,v\n4700000,8,1\n47.1,8,2\n47,8.1,3\n', ['--value', 'v'], 'outside ±90'),
        ('longitude_out_of_range', 'lat,lon,v\n47,800,1\n47.1,8,2\n47,8.1,3\n', ['--value', 'v'], 'outside ±180'),
        ('only_latitude', 'lat,v\n47,1\n47.1,2\n', ['--value', 'v'], 'no longitude'),
        ('empty', '', ['--value', 'v'], 'is empty'),
        ('header_only', 'lat,lon,v\n', ['--value', 'v'], 'no data rows'),
        ('missing_value_column', good, ['--value', 'depth'], "no column 'depth'"),
        ('no_value_flag', good, [], 'give --value COLUMN'),
        ('too_few_rows', 'lat,lon,v\n47,8,1\n47.1,8,nan\n47,8.1,\n', ['--value', 'v'], '1 usable rows'),
        ('on_one_line', 'x,y,v\n0,0,1\n1,1,2\n2,2,3\n3,3,4\n', ['--value', 'v'], 'span no area'),
        ('nonexistent', None, ['--value', 'v'], 'does not exist'),
        ('bad_resolution', good, ['--value', 'v', '--resolution', '-1'], '--resolution must be a positive'),
        ('value_is_a_coordinate', good, ['--value', 'LAT'], 'coordinate column'),
    ]


@pytest.mark.parametrize('case', range(14))
def test_user_mistakes_end_in_one_line_exit_2_and_nothing_written(case, tmp_path, capsys):
    name, content, extra, message = mistakes(tmp_path)[case]
    src = tmp_path / f'{name}.csv'
    if content is not None:
        src.write_text(content)
    out = tmp_path / 'out'
    code, stdout, err = run(['map', src, '--out', out, *extra], capsys)
    assert code == 2 and err.startswith('error: ') and err.count('\n') == 1 and message in err, (name, err)
    assert not out.exists()


def test_journal_mistakes_end_in_one_line(tmp_path, capsys):
    make_journal(tmp_path / 'run', np.random.default_rng(5), n=6)
    (tmp_path / 'empty_run').mkdir()
    for args, message in (([tmp_path / 'run', '--value', 'y'], '--value is for CSV surveys'),
                          ([tmp_path / 'run', '--location-std', '3'], '--location-std is for CSV surveys'),
                          ([tmp_path / 'empty_run'], 'folder without journal.jsonl'),
                          (['/dev/zero'], 'not a regular file')):
        code, _, err = run(['map', *args, '--out', tmp_path / 'out'], capsys)
        assert code == 2 and err.startswith('error: ') and err.count('\n') == 1 and message in err, err
        assert not (tmp_path / 'out').exists()


class _Posterior:
    def __init__(self, mean, cov):
        self.mean = torch.as_tensor(mean)[:, None]
        self.distribution = type('MVN', (), {'covariance_matrix': torch.as_tensor(cov)})()


class _StubPlanner:
    """A planner whose robust objective at cell centres ``(x, 0)`` has a known Gaussian posterior."""

    def __init__(self, mean, cov):
        self.mu, self.cov = np.asarray(mean, float), np.asarray(cov, float)
        self.model = self

    def _index(self, xy):
        return np.asarray(xy)[:, 0].round().astype(int)

    def predict(self, targets):
        i = self._index(targets)
        return torch.as_tensor(self.mu[i]), torch.as_tensor(np.sqrt(np.diag(self.cov)[i]))

    def candidates(self, targets):
        return targets

    def posterior(self, targets):
        i = self._index(targets)
        return _Posterior(self.mu[i], self.cov[np.ix_(i, i)])


def test_peak_region_probabilities_match_closed_form_argmax_probabilities():
    """Two independent cells N(1, 1) and N(0, 1): the first is the argmax with probability Phi(1/sqrt(2)) = 0.760;
    a third, N(-20, 1), never. The region at 0.9 must hold both of the first two and not the third."""
    from scipy.stats import norm

    grid = Grid(0.0, 0.0, 1.0, 3, 1)
    planner = _StubPlanner([1.0, 0.0, -20.0], np.eye(3))
    pmap = PosteriorMap(grid, np.zeros((1, 3)), np.ones((1, 3)), np.ones((1, 3), bool), 0.0, planner, False)
    peak = robust_peak(pmap, credibility=0.9, probability=0.9, samples=20_000, seed=1)
    p = norm.cdf(1 / math.sqrt(2))
    assert peak.cell == (0, 0) and peak.argmax_probability == pytest.approx(p, abs=0.01)
    assert peak.interval == pytest.approx((1 - norm.ppf(0.95), 1 + norm.ppf(0.95)))
    assert sorted(map(tuple, peak.region_cells)) == [(0, 0), (0, 1)] and peak.region_mass == pytest.approx(1.0)
    # the N(-20, 1) cell is left out; the bound: min over t of sf(t + 20) + cdf(t - 1), at most about 2 Phi(-10.5)
    assert peak.candidates == 2 and 0 < peak.excluded_bound < 2 * norm.sf(10.0)
    # a region of 0.7 needs the first cell only
    peak = robust_peak(pmap, probability=0.7, samples=20_000, seed=1)
    assert [tuple(c) for c in peak.region_cells] == [(0, 0)]
    # correlated cells: with correlation rho the difference has variance 2 (1 - rho)
    rho = 0.9
    planner = _StubPlanner([0.3, 0.0], [[1.0, rho], [rho, 1.0]])
    pmap = PosteriorMap(Grid(0.0, 0.0, 1.0, 2, 1), np.zeros((1, 2)), np.ones((1, 2)), np.ones((1, 2), bool), 0.0,
                        planner, False)
    peak = robust_peak(pmap, samples=20_000, seed=2)
    assert peak.argmax_probability == pytest.approx(norm.cdf(0.3 / math.sqrt(2 * (1 - rho))), abs=0.01)


def test_map_never_writes_onto_the_survey_it_reads(tmp_path, capsys):
    """A map file at --out that links to the survey (issue 31: no command writes onto its inputs): refused in one
    line before the fit, the survey untouched; and the map's files are written whole (no temporary file left)."""
    utm_grid_csv(tmp_path / 'survey.csv', np.random.default_rng(0))
    before = (tmp_path / 'survey.csv').read_bytes()
    out = tmp_path / 'map'
    out.mkdir()
    (out / 'peak.json').symlink_to(tmp_path / 'survey.csv')
    code, _, err = run(['map', tmp_path / 'survey.csv', '--value', 'v', '--out', out, *QUICK], capsys)
    assert code == 2 and err.count('error: ') == 1 and 'is the survey' in err and 'would write over it' in err
    assert (tmp_path / 'survey.csv').read_bytes() == before and (out / 'peak.json').is_symlink()
    (out / 'peak.json').unlink()
    code, _, err = run(['map', tmp_path / 'survey.csv', '--value', 'v', '--out', out, *QUICK], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ['field.npz', 'map.png', 'map.tif', 'peak.json']


def test_survey_from_points_is_the_csv_survey_of_the_same_points(tmp_path):
    """Arrays in memory and a CSV of the same x/y points give the same survey, NaN rows skipped and counted alike;
    and the same errors (too few usable points, points on one line)."""
    from uncertain_bo.survey_map.sources import Survey, SurveyError, read_csv_survey
    xy = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0], [5.0, 5.0]])
    value = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    path = tmp_path / 'points.csv'
    np.savetxt(path, np.column_stack([xy, value]), delimiter=',', header='x,y,depth', comments='')
    csv_survey = read_csv_survey(path, 'depth', location_std=1.5)
    survey = Survey.from_points(xy, value, location_std=1.5, value_name='depth')
    for name in ('xy', 'covariance', 'value', 'variance'):
        np.testing.assert_array_equal(getattr(survey, name), getattr(csv_survey, name))
    assert (survey.skipped, survey.rows, survey.execution_std) == (csv_survey.skipped, 5, (1.5, 1.5))
    assert survey.georeference.name == csv_survey.georeference.name
    with pytest.raises(SurveyError, match='2 usable rows'):
        Survey.from_points(xy[:3], value[:3])
    with pytest.raises(SurveyError, match='span no area'):
        Survey.from_points([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], [1.0, 2.0, 3.0])
    with pytest.raises(SurveyError, match='location-std'):
        Survey.from_points(xy, value, location_std=-1.0)

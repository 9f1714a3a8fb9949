"""Tests for uncertain_bo.sim.field: orientation, interpolation, robust objective, named fields (file loaders:
test_field_files.py, statistics: test_field_statistics.py)."""
import math

import numpy as np
import pytest
from matplotlib import cbook

from uncertain_bo.sim.field import Field


def smooth(x, y):
    return np.sin(x / 7.0) * np.cos(y / 11.0) + 0.02 * x


def smooth_field(n=201, extent=(0.0, 100.0, 0.0, 80.0)):
    xs = np.linspace(extent[0], extent[1], n)
    ys = np.linspace(extent[2], extent[3], n - 40)
    X, Y = np.meshgrid(xs, ys)
    return Field(smooth(X, Y), extent)


# ------------------------------------------------------------------ orientation
def test_jacksboro_north_is_up_and_east_is_right():
    raw = np.load(cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False))
    z = raw['elevation'].astype(float)
    lat_first_row, lat_last_row = float(raw['ymin']), float(raw['ymax'])
    assert lat_first_row > lat_last_row, 'row 0 of the file is the northern (higher latitude) edge'
    f = Field.jacksboro(extent=(0.0, 200.0, 0.0, 100.0))
    assert f.bounds == (0.0, 200.0, 0.0, 100.0)
    # independent oracle: go through geographic coordinates. A map point (x, y) lies at
    # lon = lon_west + x/200 * (lon_east - lon_west), lat = lat_south + y/100 * (lat_north - lat_south);
    # the file's row index grows from lat_first_row towards lat_last_row, columns from xmin to xmax.
    lon_w, lon_e = float(raw['xmin']), float(raw['xmax'])
    lat_s, lat_n = min(lat_first_row, lat_last_row), max(lat_first_row, lat_last_row)
    ny, nx = z.shape
    rng = np.random.default_rng(1)
    for _ in range(20):
        i, j = rng.integers(0, nx), rng.integers(0, ny)   # a file node
        lon = lon_w + i / (nx - 1) * (lon_e - lon_w)
        lat = lat_first_row + j / (ny - 1) * (lat_last_row - lat_first_row)
        x = (lon - lon_w) / (lon_e - lon_w) * 200.0
        y = (lat - lat_s) / (lat_n - lat_s) * 100.0
        assert f.value(np.array([x, y])) == pytest.approx(z[j, i], abs=1e-6)
    # corners
    assert f.value([0.0, 100.0]) == z[0, 0]          # north-west
    assert f.value([200.0, 100.0]) == z[0, -1]       # north-east
    assert f.value([0.0, 0.0]) == z[-1, 0]           # south-west


# ------------------------------------------------------------------ interpolation
def test_value_at_nodes_bilinear_between_and_clamped_outside():
    f = smooth_field()
    xs, ys, Z = f.grid()
    assert Z.shape == (len(ys), len(xs))
    for j, i in [(0, 0), (17, 33), (len(ys) - 1, len(xs) - 1), (80, 150)]:
        assert f.value(np.array([[xs[i], ys[j]]]))[0] == pytest.approx(Z[j, i], abs=1e-12)
    # centre of a cell: bilinear = mean of the 4 corners; a point 1/4 along x: weights 3/4, 1/4
    j, i = 40, 60
    mid = [(xs[i] + xs[i + 1]) / 2, (ys[j] + ys[j + 1]) / 2]
    assert f.value(mid) == pytest.approx(Z[j:j + 2, i:i + 2].mean(), abs=1e-12)
    q = [xs[i] + 0.25 * (xs[i + 1] - xs[i]), ys[j]]
    assert f.value(q) == pytest.approx(0.75 * Z[j, i] + 0.25 * Z[j, i + 1], abs=1e-12)
    # outside: clamped to the nearest edge point
    assert f.value([-50.0, ys[j]]) == pytest.approx(Z[j, 0])
    assert f.value([500.0, 500.0]) == pytest.approx(Z[-1, -1])
    with pytest.raises(ValueError, match='shape'):
        f.value(np.zeros((3, 3)))
    with pytest.raises(ValueError, match='non-finite'):
        f.value([np.nan, 1.0])


# ------------------------------------------------------------------ robust objective
@pytest.mark.parametrize('cov', [np.array([[9.0, 3.0], [3.0, 4.0]]), np.diag([2.0, 16.0])])
def test_convolution_matches_monte_carlo(cov):
    f = smooth_field()
    g = f.convolved(cov)
    rng = np.random.default_rng(0)
    eps = rng.multivariate_normal(np.zeros(2), cov, size=200_000)
    # interior points and one near the edge (edge replication = clamping in value())
    for pt in [(30.0, 40.0), (71.3, 22.9), (50.0, 60.0), (2.0, 78.0)]:
        mc = f.value(np.asarray(pt) + eps)
        se = mc.std() / math.sqrt(len(mc))
        assert g.value(pt) == pytest.approx(mc.mean(), abs=4 * se + 2e-3), pt


def test_convolution_of_real_field_matches_monte_carlo():
    f = Field.jacksboro()
    cov = np.array([[16.0, -6.0], [-6.0, 9.0]])
    g = f.convolved(cov)
    rng = np.random.default_rng(2)
    eps = rng.multivariate_normal(np.zeros(2), cov, size=100_000)
    for pt in [(50.0, 150.0), (120.0, 40.0)]:
        mc = f.value(np.asarray(pt) + eps)
        se = mc.std() / math.sqrt(len(mc))
        assert g.value(pt) == pytest.approx(mc.mean(), abs=4 * se + 0.3), pt   # metres of elevation


def test_convolution_closed_form_robust_optimum_moves_to_broad_hill():
    # f = narrow tall peak at A + broad lower hill at B; with N(0, s² I) execution noise,
    # a Gaussian bump a*exp(-|x-c|²/2σ²) becomes a σ²/(σ²+s²) exp(-|x-c|²/2(σ²+s²)) (closed form).
    xs = np.linspace(0, 100, 401)
    X, Y = np.meshgrid(xs, xs)
    A, B, sa, sb, s = (30.0, 30.0), (70.0, 65.0), 1.0, 10.0, 5.0

    def bump(a, c, sig, var_noise=0.0):
        v = sig ** 2 + var_noise
        return a * sig ** 2 / v * np.exp(-((X - c[0]) ** 2 + (Y - c[1]) ** 2) / (2 * v))

    f = Field(bump(1.0, A, sa) + bump(0.7, B, sb), (0, 100, 0, 100))
    xy, val = f.argmax()
    assert np.allclose(xy, A) and val == pytest.approx(1.0, abs=1e-3)
    g = f.convolved(s ** 2 * np.eye(2))
    expected = bump(1.0, A, sa, s ** 2) + bump(0.7, B, sb, s ** 2)
    inner = (X > 15) & (X < 85) & (Y > 15) & (Y < 85)   # away from the edge-replicated border
    assert np.max(np.abs(g.grid()[2] - expected)[inner]) < 2e-4
    gxy, gval = g.argmax()
    assert np.hypot(*(gxy - np.array(B))) < 1.0 and gval == pytest.approx(0.56, abs=0.01)


def test_zero_covariance_is_identity_and_bad_covariances_fail():
    f = smooth_field()
    assert np.array_equal(f.convolved(np.zeros((2, 2))).grid()[2], f.grid()[2])
    for bad, msg in [(np.array([[1.0, 2.0], [0.0, 1.0]]), 'symmetric'),
                     (np.array([[1.0, 2.0], [2.0, 1.0]]), 'semi-definite'),
                     (np.array([[np.nan, 0.0], [0.0, 1.0]]), 'finite'),
                     (np.eye(3), '2x2')]:
        with pytest.raises(ValueError, match=msg):
            f.convolved(bad)


def test_singular_covariance_smooths_along_one_axis_only():
    f = smooth_field()
    g = f.convolved(np.diag([25.0, 0.0]))
    rng = np.random.default_rng(3)
    ex = rng.normal(0, 5.0, 100_000)
    pt = np.array([40.0, 30.0])
    mc = f.value(np.column_stack([pt[0] + ex, np.full_like(ex, pt[1])])).mean()
    assert g.value(pt) == pytest.approx(mc, abs=5e-3)


def test_summaries():
    f = smooth_field()
    _, _, Z = f.grid()
    xy, v = f.argmax()
    assert v == Z.max() and f.value(xy) == pytest.approx(v)
    assert f.median() == pytest.approx(np.median(Z))
    assert f.shape == Z.shape


def test_load_spec():
    assert Field.load('jacksboro').name == 'jacksboro'
    assert Field.load('default', extent=(0, 50, 0, 50)).bounds == (0.0, 50.0, 0.0, 50.0)
    assert Field.load(' Jacksboro-Smooth ').name == 'jacksboro-smooth'


# ------------------------------------------------------------------ named fields and their statistics
def test_named_fields_are_listed_and_rough_is_the_unchanged_default():
    assert Field.names() == ('default', 'jacksboro', 'jacksboro-rough', 'jacksboro-smooth')
    default, rough = Field.load('default'), Field.load('jacksboro-rough')
    assert rough.name == 'jacksboro-rough'
    assert np.array_equal(default.grid()[2], rough.grid()[2]) and default.bounds == rough.bounds
    raw = np.load(cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False))['elevation']
    assert np.array_equal(default.grid()[2], raw[::-1].astype(float))      # the whole DEM, south row first


def test_smooth_field_is_the_central_eighth_of_the_dem():
    # oracle straight from the file: row 0 of the file is the north edge; the window is rows 150..192 from
    # the south and columns 176..225 from the west, its corner nodes on the extent's corners
    raw = np.load(cbook.get_sample_data('jacksboro_fault_dem.npz', asfileobj=False))['elevation'][::-1]
    window = raw[150:193, 176:226].astype(float)
    assert window.shape == (43, 50)
    f = Field.load('jacksboro-smooth', extent=(10.0, 210.0, -50.0, 150.0))
    assert f.bounds == (10.0, 210.0, -50.0, 150.0) and f.shape == (42 * 8 + 1, 49 * 8 + 1)
    rng = np.random.default_rng(6)
    for _ in range(30):
        j, i = rng.integers(0, 43), rng.integers(0, 50)
        assert f.value([10.0 + i / 49 * 200.0, -50.0 + j / 42 * 200.0]) == pytest.approx(window[j, i], abs=1e-9)
    # between DEM nodes it is the bilinear surface of the window (the finer grid adds nothing)
    j, i, tx, ty = 20, 30, 0.3, 0.85
    corners = window[j:j + 2, i:i + 2]
    expected = ((1 - ty) * ((1 - tx) * corners[0, 0] + tx * corners[0, 1])
                + ty * ((1 - tx) * corners[1, 0] + tx * corners[1, 1]))
    assert f.value([10.0 + (i + tx) / 49 * 200.0, -50.0 + (j + ty) / 42 * 200.0]) == pytest.approx(expected)


# the numbers documented in uncertain_bo.sim.field.FIELD_NAMES (200 m x 200 m, robust field with 0.75² I):
# (values min, max, area fraction within 0.1 regret, slope correlation length m, correlation length m, g* at)
DOCUMENTED = {'jacksboro-rough': (236.0, 1076.0, 0.0017, 1.3, 27.2, (109.0, 26.8)),
              'jacksboro-smooth': (318.0, 981.0, 0.0072, 9.5, 27.4, (0.0, 81.0))}


@pytest.mark.parametrize('name', sorted(DOCUMENTED))
def test_named_fields_have_their_documented_properties(name):
    vmin, vmax, frac, slope, corr, peak = DOCUMENTED[name]
    f = Field.load(name)
    st = f.statistics()
    assert (st.value_min, st.value_max) == (vmin, vmax)
    assert st.near_optimal_fraction == pytest.approx(frac, abs=0.00005)
    assert st.slope_correlation_length == pytest.approx(slope, abs=0.05)
    assert st.correlation_length == pytest.approx(corr, abs=0.05)
    assert np.allclose(f.convolved(0.75 ** 2 * np.eye(2)).argmax()[0], peak, atol=0.05)


def test_direct_bilinear_agrees_with_scipy_interpolator():
    from scipy.interpolate import RegularGridInterpolator
    f = Field.jacksboro()
    xs, ys, Z = f.grid()
    rgi = RegularGridInterpolator((ys, xs), Z)
    rng = np.random.default_rng(9)
    pts = rng.uniform(-20, 220, size=(1000, 2))          # includes points outside (clamped)
    clamped = np.clip(pts, 0.0, 200.0)
    oracle = rgi(clamped[:, ::-1])
    small = np.concatenate([f.value(pts[k:k + 10]) for k in range(0, 1000, 10)])   # direct path
    assert np.allclose(small, oracle, atol=1e-9)
    assert np.allclose(f.value(pts), oracle, atol=1e-9)                           # scipy path
    assert f.value(pts[0]) == pytest.approx(oracle[0])

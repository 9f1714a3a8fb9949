"""Tests for uncertain_bo.sim.field: orientation, interpolation, robust objective, file loaders."""
import math

import numpy as np
import pytest
from matplotlib import cbook

from uncertain_bo.sim.field import Field, FieldError


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


def test_npz_orientation_keys_and_extent_override(tmp_path):
    z = np.arange(12.0).reshape(3, 4)
    p = tmp_path / 'g.npz'
    np.savez(p, grid=z, xmin=0.0, xmax=3.0, ymin=0.0, ymax=2.0)
    f = Field.from_npz(p)
    assert f.value([0.0, 0.0]) == 0.0 and f.value([3.0, 2.0]) == 11.0   # row 0 at ymin (south)
    f2 = Field.from_npz(p, extent=(10, 40, 10, 30))
    assert f2.bounds == (10.0, 40.0, 10.0, 30.0) and f2.value([40.0, 30.0]) == 11.0
    q = tmp_path / 'flipped.npz'
    np.savez(q, grid=z, extent=np.array([3.0, 0.0, 2.0, 0.0]))          # stored east-to-west, north-first
    f3 = Field.from_npz(q)
    assert f3.value([3.0, 2.0]) == 0.0 and f3.value([0.0, 0.0]) == 11.0


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


# ------------------------------------------------------------------ CSV (GP interpolation)
def test_csv_gp_reconstructs_smooth_function(tmp_path):
    rng = np.random.default_rng(4)
    pts = rng.uniform(0, 100, size=(150, 2))

    def fun(x, y):
        return np.sin(x / 20.0) + np.cos(y / 25.0)

    p = tmp_path / 'samples.csv'
    lines = ['x,y,value'] + [f'{x:.4f},{y:.4f},{fun(x, y):.6f}' for x, y in pts]
    p.write_text('\n'.join(lines) + '\n')
    f = Field.from_csv(p, resolution=2.0, extent=(0, 100, 0, 100))
    xs, ys, Z = f.grid()
    X, Y = np.meshgrid(xs, ys)
    inner = (X > 10) & (X < 90) & (Y > 10) & (Y < 90)
    err = np.abs(Z - fun(X, Y))[inner]
    assert err.max() < 0.05, err.max()     # function range is 4


def test_csv_errors(tmp_path):
    def write(text):
        p = tmp_path / 'bad.csv'
        p.write_text(text)
        return p

    with pytest.raises(FieldError, match=r'bad.csv:3: not a number'):
        Field.from_csv(write('x,y,v\n1,2,3\n4,five,6\n7,8,9\n'))
    with pytest.raises(FieldError, match=r'bad.csv:2: expected 3 columns'):
        Field.from_csv(write('1,2,3\n4,5\n7,8,9\n'))
    with pytest.raises(FieldError, match=r'bad.csv:2: non-finite'):
        Field.from_csv(write('1,2,3\n4,5,nan\n7,8,9\n'))
    with pytest.raises(FieldError, match='at least 3 measurements'):
        Field.from_csv(write('x,y,v\n1,2,3\n4,5,6\n'))
    with pytest.raises(FieldError, match='cannot read'):
        Field.from_csv(tmp_path / 'missing.csv')


def test_npz_errors_name_file_and_key(tmp_path):
    p = tmp_path / 'field.npz'
    np.savez(p, a=np.zeros((3, 3)), b=np.ones((4, 4)), xmin=0.0, xmax=1.0, ymin=0.0, ymax=1.0)
    with pytest.raises(FieldError, match=r'field.npz: expected exactly one 2-D array'):
        Field.from_npz(p)
    with pytest.raises(FieldError, match=r"field.npz has no array 'c'"):
        Field.from_npz(p, key='c')
    q = tmp_path / 'nocoords.npz'
    np.savez(q, z=np.zeros((3, 3)), xmin=0.0)
    with pytest.raises(FieldError,
                       match=r"nocoords.npz is missing coordinate key\(s\) \['xmax', 'ymin', 'ymax'\]"):
        Field.from_npz(q)
    assert Field.from_npz(q, extent=(0, 1, 0, 1)).bounds == (0.0, 1.0, 0.0, 1.0)
    with pytest.raises(FieldError, match='non-finite'):
        Field(np.array([[0.0, np.nan], [1.0, 2.0]]))


def test_load_spec():
    assert Field.load('jacksboro').name == 'jacksboro'
    assert Field.load('default', extent=(0, 50, 0, 50)).bounds == (0.0, 50.0, 0.0, 50.0)
    with pytest.raises(FieldError, match="unknown field 'moon'"):
        Field.load('moon')


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

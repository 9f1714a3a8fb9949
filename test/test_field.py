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


def test_csv_in_own_coordinates_is_mapped_onto_the_extent_not_flattened(tmp_path):
    # regression: a CSV in its own coordinates (here a UTM-like origin) with the default field_extent used to
    # become a constant field (std 2e-15); its bounding box is now mapped onto the extent
    rng = np.random.default_rng(5)
    own = rng.uniform(0, 1, size=(40, 2))
    own[:4] = [[0, 0], [1, 0], [0, 1], [1, 1]]          # the box is exactly [0, 1]² in unit coordinates

    def fun(u, v):
        return np.sin(3.0 * u) + np.cos(2.0 * v)

    p = tmp_path / 'survey.csv'
    p.write_text('\n'.join(f'{500000 + 400 * u:.6f},{4100000 + 300 * v:.6f},{fun(u, v):.8f}'
                           for u, v in own) + '\n')
    f = Field.load(str(p), extent=(0.0, 200.0, 0.0, 200.0))
    assert f.bounds == (0.0, 200.0, 0.0, 200.0)
    z = f.grid()[2]
    values = fun(own[:, 0], own[:, 1])
    assert np.ptp(z) > 0.5 * np.ptp(values)                # not flat
    # each measurement is where the mapping puts it: (u, v) in the unit box -> (200 u, 200 v)
    got = f.value(own * 200.0)
    assert np.max(np.abs(got - values)) < 0.05, np.max(np.abs(got - values))


# Every bad field: (what, how to make it in tmp_path -> spec, extent, regex the one-line message must match)
def _npz(name, **arrays):
    def make(d):
        np.savez(d / name, **arrays)
        return d / name
    return make


def _text(name, text, binary=False):
    def make(d):
        (d / name).write_bytes(text) if binary else (d / name).write_text(text)
        return d / name
    return make


def _truncated_npz(d):
    p = d / 'cut.npz'
    np.savez(p, z=np.arange(400.0).reshape(20, 20), xmin=0.0, xmax=1.0, ymin=0.0, ymax=1.0)
    p.write_bytes(p.read_bytes()[:300])
    return p


def _npy_as_npz(d):
    np.save(d / 'grid.npy', np.zeros((3, 3)))
    (d / 'grid.npy').rename(d / 'grid.npz')
    return d / 'grid.npz'


def _directory(name):
    def make(d):
        (d / name).mkdir()
        return d / name
    return make


COORDS = dict(xmin=0.0, xmax=1.0, ymin=0.0, ymax=1.0)
RAMP = np.arange(12.0).reshape(3, 4)
BAD_FIELDS = [
    ('missing npz', lambda d: d / 'nope.npz', None, r'nope.npz does not exist; check the path'),
    ('missing csv', lambda d: d / 'nope.csv', None, r'nope.csv does not exist'),
    ('npz directory', _directory('dir.npz'), None, r'dir.npz is a directory'),
    ('csv directory', _directory('dir.csv'), None, r'dir.csv is a directory'),
    ('empty csv', _text('empty.csv', ''), None, r'empty.csv: need at least 3 measurements .* got 0'),
    ('2-point csv', _text('two.csv', 'x,y,v\n0,0,1\n1,1,2\n'), None, r'two.csv: need at least 3 .* got 2'),
    ('NaN in csv', _text('nan.csv', '0,0,1\n1,0,nan\n0,1,2\n'), None, r'nan.csv:2: non-finite value'),
    ('text in csv', _text('txt.csv', 'x,y,v\n0,0,1\n1,0,high\n0,1,2\n'), None, r'txt.csv:3: not a number'),
    ('csv columns', _text('cols.csv', '0,0,1\n1,0\n0,1,2\n'), None, r'cols.csv:2: expected 3 columns'),
    ('binary csv', _text('bin.csv', b'\xff\xfe\x00\x81garbage', binary=True), None, r'bin.csv is not a text CSV'),
    ('collinear csv', _text('line.csv', '0,0,1\n1,1,2\n2,2,3\n3,3,1\n'), None, r'line.csv: the points span no area'),
    ('constant csv', _text('flat.csv', '0,0,5\n1,0,5\n0,1,5\n1,1,5\n'), None, r'flat.csv: all 4 values equal 5'),
    ('csv half off the extent', _text('part.csv', '0,0,1\n100,0,2\n0,100,3\n100,100,1\n50,50,4\n'),
     (0.0, 200.0, 0.0, 200.0), r'part.csv: the points .* cover only 25 % of the extent'),
    ('npz without arrays', _npz('scalars.npz', **COORDS), None,
     r'scalars.npz: expected exactly one 2-D array, found none'),
    ('empty npz', _npz('nothing.npz'), None, r'nothing.npz: expected exactly one 2-D array, found none'),
    ('two grids', _npz('two.npz', a=RAMP, b=RAMP, **COORDS), None, r'two.npz: expected exactly one 2-D array'),
    ('pickled npz', _npz('pickled.npz', z=np.array([{'a': 1}, None], dtype=object), **COORDS), None,
     r'pickled.npz holds pickled \(object\) arrays'),
    ('garbage npz', _text('garbage.npz', 'this is not a zip archive\n'), None,
     r'garbage.npz is not an .npz archive \(not a zip file\)'),
    ('.npy named .npz', _npy_as_npz, None, r'grid.npz is a single .npy array, not an .npz archive'),
    ('truncated npz', _truncated_npz, None, r'cut.npz is a damaged .npz archive'),
    ('1x1 grid', _npz('one.npz', z=np.ones((1, 1)), **COORDS), None, r"one.npz: array 'z' has shape \(1, 1\); a field "
     r'needs a grid of at least 2 x 2 nodes'),
    ('all-NaN grid', _npz('allnan.npz', z=np.full((3, 3), np.nan), **COORDS), None,
     r"allnan.npz: array 'z' has no finite values"),
    ('some NaN', _npz('holes.npz', z=np.where(RAMP > 9, np.nan, RAMP), **COORDS), None,
     r"holes.npz: array 'z' has 2 NaN/inf values of 12 \(no-data nodes\?\); fill or crop them"),
    ('text grid', _npz('words.npz', z=np.array([['a', 'b'], ['c', 'd']]), **COORDS), None,
     r"words.npz: array 'z' holds <U1 values, not real numbers"),
    ('constant grid', _npz('flat.npz', z=np.zeros((3, 3)), **COORDS), None,
     r"flat.npz: array 'z': all values equal 0; a constant field has no peak"),
    ('no coordinates', _npz('nocoords.npz', z=RAMP, xmin=0.0), None,
     r"nocoords.npz is missing coordinate key\(s\) \['xmax', 'ymin', 'ymax'\] .* pass extent="),
    ('bad coordinates', _npz('badc.npz', z=RAMP, xmin=0.0, xmax=0.0, ymin=0.0, ymax=1.0), None,
     r'badc.npz: degenerate coordinates'),
    ('unknown name', lambda d: 'moon', None,
     r"unknown field 'moon': use one of default, jacksboro, jacksboro-rough, jacksboro-smooth, a suite field "
     r"\(terrain-ridges, .*\), or a path"),
    ('unsupported file', _text('dem.tif', 'II*'), None, r'dem.tif: unsupported type; use a .npz grid or a .csv'),
]


@pytest.mark.parametrize('make, extent, message', [c[1:] for c in BAD_FIELDS], ids=[c[0] for c in BAD_FIELDS])
def test_bad_fields_fail_with_one_line_field_error(tmp_path, make, extent, message):
    spec = make(tmp_path)
    with pytest.raises(FieldError, match=message) as info:
        Field.load(str(spec), extent=extent)
    text = str(info.value)
    assert '\n' not in text and len(text) < 400, text
    if isinstance(spec, type(tmp_path)):
        assert str(spec) in text or f'{spec}:' in text, text     # names the file, with its directory


def test_good_npz_keys_still_load(tmp_path):
    p = tmp_path / 'field.npz'
    np.savez(p, a=np.zeros((3, 3)), b=RAMP, xmin=0.0, xmax=1.0, ymin=0.0, ymax=1.0)
    assert Field.from_npz(p, key='b').value([1.0, 1.0]) == 11.0
    with pytest.raises(FieldError, match=r"field.npz has no array 'c'"):
        Field.from_npz(p, key='c')
    q = tmp_path / 'nocoords.npz'
    np.savez(q, z=RAMP, xmin=0.0)
    assert Field.from_npz(q, extent=(0, 1, 0, 1)).bounds == (0.0, 1.0, 0.0, 1.0)
    with pytest.raises(FieldError, match='non-finite'):
        Field(np.array([[0.0, np.nan], [1.0, 2.0]]))


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


def test_statistics_against_closed_forms():
    # f = cos(2πx/Px) cos(2πy/Py): lagging along x multiplies by cos(2πL/Px) (the y factor cancels), for the
    # values and the slopes alike, so both e-fold at L = P arccos(1/e) / 2π; the two axes are averaged
    xs = np.linspace(0.0, 200.0, 801)
    X, Y = np.meshgrid(xs, xs)
    px, py = 20.0, 12.5
    f = Field(np.cos(2 * np.pi * X / px) * np.cos(2 * np.pi * Y / py), (0, 200, 0, 200))
    st = f.statistics(cov=0.0)
    expected = 0.5 * (px + py) * math.acos(math.exp(-1.0)) / (2 * math.pi)
    assert st.correlation_length == pytest.approx(expected, rel=0.02)     # finite window, lag interpolation: ~1 %
    assert st.slope_correlation_length == pytest.approx(expected, rel=0.02)
    # one Gaussian bump: g = a σ²/v exp(-r²/2v), v = σ² + s² (closed form); median g ~ 0 far from it, so
    # the nodes within 0.1 regret of g* are the disk where exp(-r²/2v) >= 0.9 (up to the tiny median)
    sig, s = 6.0, 2.0
    bump = Field(np.exp(-((X - 90.0) ** 2 + (Y - 120.0) ** 2) / (2 * sig ** 2)), (0, 200, 0, 200))
    v = sig ** 2 + s ** 2
    g = sig ** 2 / v * np.exp(-((X - 90.0) ** 2 + (Y - 120.0) ** 2) / (2 * v))
    oracle = np.mean(g.max() - g <= 0.1 * (g.max() - np.median(g)))
    got = bump.statistics(cov=s ** 2 * np.eye(2)).near_optimal_fraction
    assert got == pytest.approx(oracle, rel=0.02)
    assert got == pytest.approx(math.pi * 2 * v * math.log(1 / 0.9) / 200.0 ** 2, rel=0.05)   # disk area


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

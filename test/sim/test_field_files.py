"""Tests for uncertain_bo.sim.field_files: .npz grids (orientation, keys, extent), CSV surveys (GP
interpolation, own coordinates), and the one-line FieldError of every bad file (through Field.load)."""
import numpy as np
import pytest

from uncertain_bo.sim.field import Field, FieldError


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


def test_csv_header_after_comment_lines_is_the_header(tmp_path):
    """A survey file that starts with '#' comment lines and then its header row loads (the header was taken for a
    malformed row unless it was the file's first line); a second non-numeric row is still an error."""
    rows = [f'{x},{y},{x + 2 * y}' for x, y in [(0, 0), (10, 0), (0, 10), (10, 10)]]
    p = tmp_path / 'survey.csv'
    p.write_text('# instrument: a gas sensor\n#\neasting,northing,ppm\n' + '\n'.join(rows) + '\n')
    f = Field.from_csv(p, resolution=1.0)
    assert f.bounds == (0.0, 10.0, 0.0, 10.0) and np.ptp(f.grid()[2]) > 10.0
    p.write_text('# comment\nx,y,value\n' + '\n'.join(rows[:2]) + '\nx,y,value\n' + '\n'.join(rows[2:]) + '\n')
    with pytest.raises(FieldError, match=r'survey.csv:5: not a number'):
        Field.from_csv(p)


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
     (0.0, 200.0, 0.0, 200.0), r'part.csv: the points cover 25 % of the extent'),
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
     r"\(.*fields: terrain-ridges, .*\), or a path"),
    ('unsupported file', _text('dem.tif', 'II*'), None, r'dem.tif: unsupported type; use a .npz grid or a .csv'),
]


@pytest.mark.parametrize('make, extent, message', [c[1:] for c in BAD_FIELDS], ids=[c[0] for c in BAD_FIELDS])
def test_bad_fields_fail_with_one_line_field_error(tmp_path, make, extent, message):
    spec = make(tmp_path)
    with pytest.raises(FieldError, match=message) as info:
        Field.load(str(spec), extent=extent)
    text = str(info.value)
    assert '\n' not in text and len(text) < 600, text      # an unknown name lists every shipped suite's fields
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


def test_a_csv_over_the_point_limit_names_the_limit_and_what_to_do(tmp_path):
    """Before: '2500 points exceed max_points=2000; thin the data' (max_points is no parameter a user can set)."""
    from uncertain_bo.sim.field_files import MAX_CSV_POINTS
    rng = np.random.default_rng(0)
    xy = rng.uniform(0.0, 60.0, (MAX_CSV_POINTS + 500, 2))
    path = tmp_path / 'survey.csv'
    path.write_text('x,y,v\n' + '\n'.join(f'{a},{b},{a + b}' for a, b in xy))
    with pytest.raises(FieldError) as err:
        Field.load(str(path))
    msg = str(err.value)
    assert '\n' not in msg and f'more than the {MAX_CSV_POINTS}' in msg
    assert f'thin it to {MAX_CSV_POINTS} rows (keep one in 2)' in msg and '.npz grid (no limit)' in msg


def test_a_csv_off_the_extent_names_field_extent_the_points_box_and_the_start(tmp_path):
    """Before: 'pass an extent inside the points' (no parameter named, no rectangle that would do)."""
    path = tmp_path / 'paddock.csv'
    path.write_text('x,y,v\n0.5,0.2,1\n59.5,0.2,2\n0.5,39.8,3\n59.5,39.8,1\n30,20,4\n')
    with pytest.raises(FieldError) as err:
        Field.load(str(path), extent=(0.0, 200.0, 0.0, 200.0))
    msg = str(err.value)
    assert "field_extent" in msg and '--extent' in msg and 'initial_x, initial_y' in msg
    box = [float(v) for v in msg.split("points' box [")[1].split(']')[0].split(',')]
    assert box == [0.5, 59.5, 0.2, 39.8]
    assert Field.load(str(path), extent=box).bounds == tuple(box)       # the rectangle it names loads


def test_a_rover_starting_outside_its_field_is_refused_naming_the_start_and_field_extent():
    """Before: the rover started at (100, 100) outside a 60 m x 40 m field and read its nearest edge."""
    from uncertain_bo.parameters.specs import ParameterError, defaults
    from uncertain_bo.sim.world import WORLD_PARAMS, SimWorld
    params = defaults(WORLD_PARAMS)
    params.update(field_extent=[0.0, 60.0, 0.0, 40.0])
    with pytest.raises(ParameterError, match=r"start \(initial_x, initial_y\) = \(100, 100\) m is outside the field's "
                                             r'field_extent \[0, 60, 0, 40\]: set initial_x and initial_y inside it'):
        SimWorld.from_params(params)
    params.update(initial_x=30.0, initial_y=20.0)
    assert SimWorld.from_params(params).field.bounds == (0.0, 60.0, 0.0, 40.0)

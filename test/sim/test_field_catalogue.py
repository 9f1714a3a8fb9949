"""Tests for uncertain_bo.sim.field_catalogue (suite fields by name) and the shipped suite files."""
import numpy as np
import pytest

from uncertain_bo.benchmarks.suite import load_suite
from uncertain_bo.sim.field import Field, FieldError
from uncertain_bo.sim.field_catalogue import _points_field, _refined, catalogue, catalogue_field, suite_of

GRIDS = [n for n, e in catalogue().items() if e['source']['kind'] != 'points']


@pytest.mark.parametrize('name', GRIDS)
def test_grid_fields_load_by_name_onto_the_area(name):
    f = Field.load(name)
    assert f.name == name and f.bounds == (0.0, 200.0, 0.0, 200.0)
    assert max(f.spacing) <= 1.0 + 1e-12                      # the robust objective is accurate at 0.75 m
    _, _, z = f.grid()
    assert np.ptp(z) > 0 and np.all(np.isfinite(z))
    assert suite_of(name) == next(s for s in ('fields', 'denied') if name in load_suite(s).fields)
    assert Field.load(name.upper(), extent=(0, 100, 0, 50)).bounds == (0.0, 100.0, 0.0, 50.0)


def test_plume_like_fields_have_a_genuinely_narrow_peak():
    """The narrow-peak fields: the robust peak region (normalised regret <= 0.1) covers < 0.05 % of the area,
    i.e. less than a 4.5 m x 4.5 m square on 200 m x 200 m; a terrain field's covers much more."""
    for name in ('precip-tianshan', 'precip-caribbean'):
        assert Field.load(name).statistics().near_optimal_fraction < 5e-4, name
    assert Field.load('terrain-plateau').statistics().near_optimal_fraction > 2e-3


def test_refinement_keeps_the_bilinear_field():
    coarse = Field(np.array([[0.0, 1.0, 0.0], [2.0, 5.0, 1.0], [0.0, 1.0, 3.0]]), (0, 20, 0, 20))
    fine = _refined(coarse, max_spacing=1.0)
    assert max(fine.spacing) <= 1.0 and fine.shape[0] > coarse.shape[0]
    xy = np.random.default_rng(0).uniform(0, 20, (500, 2))
    np.testing.assert_allclose(fine.value(xy), coarse.value(xy), atol=1e-12)


def test_point_survey_is_gp_interpolated_over_its_bounding_box(tmp_path):
    rng = np.random.default_rng(3)
    lon, lat = rng.uniform(-90, -80, 120), rng.uniform(40, 45, 120)

    def truth(u, v):                                  # u, v in [0, 1]: a smooth bump off-centre
        return 20.0 + 10.0 * np.exp(-((u - 0.7) ** 2 + (v - 0.3) ** 2) / 0.05)

    val = truth((lon + 90) / 10, (lat - 40) / 5)
    path = tmp_path / 'survey.csv'
    path.write_text('# a comment\nlon,lat,value\n' + ''.join(f'{a},{b},{c}\n' for a, b, c in zip(lon, lat, val)))
    f = _points_field(path, (0.0, 200.0, 0.0, 200.0), resolution=5.0, field_type=Field)
    # the bounding box of the points is the area: the bump's centre maps to (0.7, 0.3) of it
    lo, hi = np.array([lon.min(), lat.min()]), np.array([lon.max(), lat.max()])
    centre = (np.array([-90 + 7.0, 40 + 1.5]) - lo) / (hi - lo) * 200.0
    assert np.linalg.norm(f.argmax()[0] - centre) < 8.0
    assert f.argmax()[1] == pytest.approx(30.0, abs=1.0)


def test_unknown_suite_field_is_a_one_line_error():
    with pytest.raises(FieldError, match="unknown suite field 'nope'"):
        catalogue_field('nope', field_type=Field)

"""Tests for uncertain_bo.sim.field_generators (plumes, seeps, background) and the catalogue kinds built on them."""
import math

import numpy as np
import pytest

from uncertain_bo.sim.field import Field, FieldError
from uncertain_bo.sim.field_generators import background_values, generator_grid, plume_values, seep_values


def test_plume_peaks_at_its_source_and_falls_off_downwind_and_crosswind():
    X, Y = generator_grid((200.0, 200.0), 0.25)
    src = [[62.3, 118.7, 40.0, 2.0]]
    z = plume_values(X, Y, src, wind_deg=20.0, spread=0.06)
    j, i = np.unravel_index(np.argmax(z), z.shape)
    assert math.hypot(X[j, i] - 62.3, Y[j, i] - 118.7) <= 0.25 * math.sqrt(2) / 2 + 1e-9   # the node nearest it
    assert z.max() == pytest.approx(40.0, rel=0.01)
    u = np.array([math.cos(math.radians(20.0)), math.sin(math.radians(20.0))])
    n = np.array([-u[1], u[0]])
    along = plume_values(*(np.array([62.3, 118.7])[:, None] + u[:, None] * np.linspace(-20, 120, 300)), src, 20.0,
                         0.06)
    k = int(np.argmax(along))
    assert np.all(np.diff(along[k:]) < 0) and np.all(np.diff(along[:k + 1]) > 0)     # one peak, at the source
    assert abs(np.linspace(-20, 120, 300)[k]) < 0.5
    # the crosswind profile 50 m downwind is Gaussian with std sigma0 + spread * 50 (moments of the profile)
    c = np.linspace(-40, 40, 4001)
    pts = np.array([62.3, 118.7])[:, None] + u[:, None] * 50.0 + n[:, None] * c
    prof = plume_values(pts[0], pts[1], src, 20.0, 0.06)
    assert math.sqrt(np.sum(prof * c ** 2) / np.sum(prof)) == pytest.approx(2.0 + 0.06 * 50.0, rel=1e-3)
    # the centreline falls as sigma0² / (sigma_y sigma_z): 50 m downwind with the vertical spread at half
    assert prof.max() == pytest.approx(40.0 * 4.0 / ((2.0 + 3.0) * (2.0 + 1.5)), rel=1e-3)
    # several leaks add up; a source must have a width
    two = plume_values(X, Y, src + [[150.0, 40.0, 10.0, 1.0]], 20.0, 0.06)
    assert np.allclose(two - z, plume_values(X, Y, [[150.0, 40.0, 10.0, 1.0]], 20.0, 0.06))
    with pytest.raises(ValueError, match='sigma0'):
        plume_values(X, Y, [[0.0, 0.0, 1.0, 0.0]], 0.0, 0.1)


def test_seeps_and_background():
    X, Y = generator_grid((100.0, 80.0), 0.5)
    assert X.shape == (161, 201) and X[0, -1] == 100.0 and Y[-1, 0] == 80.0
    z = seep_values(X, Y, [[30.0, 40.0, 5.0, 2.0], [70.0, 20.0, 8.0, 3.0]])
    j, i = np.unravel_index(np.argmax(z), z.shape)
    assert (X[j, i], Y[j, i]) == (70.0, 20.0) and z.max() == pytest.approx(8.0, rel=1e-6)
    # half maximum at sqrt(2 ln 2) widths from the centre
    assert seep_values(np.array([70.0 + 3.0 * math.sqrt(2 * math.log(2))]), np.array([20.0]),
                       [[70.0, 20.0, 8.0, 3.0]])[0] == pytest.approx(4.0)
    with pytest.raises(ValueError, match='width'):
        seep_values(X, Y, [[0.0, 0.0, 1.0, -1.0]])
    # the background's std and correlation: over a large area its sample std and the correlation at one
    # lengthscale (exp(-1/2) for a squared exponential kernel) are what it was asked for
    Xb, Yb = generator_grid((4000.0, 4000.0), 10.0)
    b = background_values(Xb, Yb, std=0.6, lengthscale=40.0, seed=3)
    assert b.std() == pytest.approx(0.6, rel=0.1)
    lag = np.mean(b[:, :-4] * b[:, 4:]) / np.mean(b * b)   # 4 nodes = 40 m
    assert lag == pytest.approx(math.exp(-0.5), abs=0.08)
    assert np.array_equal(b, background_values(Xb, Yb, 0.6, 40.0, 3))
    assert not np.array_equal(b, background_values(Xb, Yb, 0.6, 40.0, 4))
    # on a grid it is computed by rows and columns (cos(a + b) expanded): the same values as at scattered points
    pts = np.random.default_rng(0).integers(0, Xb.shape[0], size=(50, 2))
    at = background_values(Xb[pts[:, 0], pts[:, 1]], Yb[pts[:, 0], pts[:, 1]], 0.6, 40.0, 3)
    assert np.allclose(b[pts[:, 0], pts[:, 1]], at, rtol=0, atol=1e-12)


@pytest.mark.parametrize('name', ['leak-plume-a', 'pipeline-leaks', 'seeps-canyon'])
def test_suite_plume_and_seep_fields_peak_where_their_strongest_source_is(name):
    """The robust peak (what the regret is measured against) of a catalogue plume / seep field lies within a metre
    of the strongest source its suite entry states."""
    from uncertain_bo.benchmarks.suite import load_suite
    from uncertain_bo.sim.robust_optimum import robust_optimum

    suite = load_suite('denied')
    src = suite.fields[name]['source']
    strongest = max(src.get('sources') or src.get('seeps'), key=lambda s: s[2])
    extent = suite.extent_of(name)
    field = Field.load(name, extent=extent)
    xy, _, _ = robust_optimum(field.convolved(np.diag([0.75 ** 2] * 2)), list(extent))
    assert math.hypot(xy[0] - strongest[0], xy[1] - strongest[1]) < 1.0, (xy, strongest)


def test_malformed_generated_sources_are_one_line_field_errors(monkeypatch):
    from uncertain_bo.sim import field_catalogue as fc

    entries = {'bad-plume': ('t', {'source': {'kind': 'plume', 'size': [50, 50], 'wind_deg': 0, 'spread': 0.1,
                                              'sources': [[10, 10, 1.0]]}}),
               'bad-seeps': ('t', {'source': {'kind': 'seeps', 'size': [50, 50], 'seeps': [[10, 10, 1.0, 0.0]]}})}
    monkeypatch.setattr(fc, '_suite_fields', lambda: entries)
    for name, message in (('bad-plume', 'x, y, amplitude, width'), ('bad-seeps', 'width must be > 0')):
        with pytest.raises(FieldError, match=message) as info:
            fc.catalogue_field(name, (0, 50, 0, 50), field_type=Field)
        assert '\n' not in str(info.value) and name in str(info.value)

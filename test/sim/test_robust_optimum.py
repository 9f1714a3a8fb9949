"""g* within the search bounds (uncertain_bo.sim.robust_optimum) against a brute-force oracle over the nodes."""
import numpy as np
import pytest

from uncertain_bo.sim.field import Field
from uncertain_bo.sim.robust_optimum import robust_optimum


def two_peaks():
    """A global peak at (150, 150) and a lower one at (40, 30) on a 201 x 201 grid over 200 m x 200 m."""
    xs = np.linspace(0.0, 200.0, 201)
    X, Y = np.meshgrid(xs, xs)
    z = (10.0 * np.exp(-((X - 150) ** 2 + (Y - 150) ** 2) / 200.0)
         + 6.0 * np.exp(-((X - 40) ** 2 + (Y - 30) ** 2) / 200.0))
    return Field(z, (0.0, 200.0, 0.0, 200.0))


def test_the_optimum_is_taken_within_the_search_bounds():
    field = two_peaks()
    xy, g, median = robust_optimum(field, [0.0, 60.0, 0.0, 40.0])
    assert np.allclose(xy, [40.0, 30.0]) and g == pytest.approx(6.0, rel=1e-6)
    xs, ys, z = field.grid()
    inside = z[np.ix_((ys >= 0) & (ys <= 40), (xs >= 0) & (xs <= 60))]
    assert median == float(np.median(inside)) and g == float(inside.max())


def test_bounds_covering_the_field_give_the_field_argmax_and_median_exactly():
    field = two_peaks().convolved(np.diag([4.0, 4.0]))
    xy, g, median = robust_optimum(field, [0.0, 200.0, 0.0, 200.0])
    (fxy, fg), fmed = field.argmax(), field.median()
    assert np.array_equal(xy, fxy) and g == fg and median == fmed
    assert robust_optimum(field, None)[1] == fg


def test_bounds_between_grid_nodes_are_sampled_and_disjoint_bounds_are_refused():
    field = two_peaks()
    xy, g, _ = robust_optimum(field, [40.2, 40.4, 30.2, 30.4])     # no node inside: bilinear samples
    assert 40.2 <= xy[0] <= 40.4 and 30.2 <= xy[1] <= 30.4 and g == pytest.approx(field.value(xy), rel=1e-12)
    with pytest.raises(ValueError, match='do not overlap'):
        robust_optimum(field, [300.0, 400.0, 0.0, 10.0])

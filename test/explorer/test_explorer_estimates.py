"""explorer/estimates.py: pose estimates and readings, and the position-covariance helpers, against NumPy oracles."""
import math

import numpy as np
import pytest

from uncertain_bo.explorer.estimates import PoseEstimate, position_std, position_trace, psd_projection


def test_a_particle_cloud_is_summarised_by_its_weighted_moments():
    rng = np.random.default_rng(3)
    x = rng.normal([10.0, -4.0], [2.0, 0.5], size=(200, 2))
    w = rng.uniform(0.1, 1.0, size=200)
    est = PoseEstimate.from_particles(7.0, 'map', x, w)
    assert est.stamp == 7.0 and est.frame_id == 'map'
    np.testing.assert_allclose(est.xy, np.average(x, axis=0, weights=w), rtol=1e-12)
    np.testing.assert_allclose(est.cov, np.cov(x.T, aweights=w, bias=True), rtol=1e-10)
    assert est.weights.sum() == pytest.approx(1.0)


def test_a_cloud_needs_one_heading_per_particle():
    with pytest.raises(ValueError, match='one per particle'):
        PoseEstimate.from_particles(0.0, 'map', np.zeros((3, 2)), yaws=[0.0, 0.1])


def test_position_trace_and_std_are_of_the_2x2_block():
    cov = np.array([[4.0, 1.5], [1.5, 1.0]])
    assert position_trace(cov) == 5.0
    assert position_std(cov) == pytest.approx(math.sqrt(2.5))


def test_the_psd_projection_is_symmetric_psd_and_moves_entries_by_round_off_only():
    cov = np.array([[1.0, 1.0 + 1e-12], [1.0 - 3e-12, 1.0]])   # asymmetric and slightly indefinite
    p = psd_projection(cov)
    assert np.array_equal(p, p.T)
    assert np.linalg.eigvalsh(p).min() >= -1e-15
    np.testing.assert_allclose(p, cov, atol=1e-11)
    assert np.array_equal(psd_projection(np.zeros((2, 2))), np.zeros((2, 2)))   # a Dirac stays one

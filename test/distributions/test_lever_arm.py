"""The lever arm of a sensor away from base_link (uncertain_bo.distributions.lever_arm): the transform by hand, the
exact moments of a Gaussian pose against a Monte Carlo oracle at every heading uncertainty, the first-order moments
against the same oracle where they hold and where they break down, the circular moments of a cloud of poses."""
import math

import numpy as np
import pytest

from uncertain_bo.distributions.lever_arm import (linearised_sensor_moments, pose_moments, rotated_offset,
                                                  sensor_moments, sensor_position)

OFFSET = (1.2, -0.4)      # forward and to the right, m


def pose_gaussian(yaw_std, mean_yaw=2.3):
    """A pose Gaussian over (x, y, yaw) whose position is correlated with its heading."""
    sd = np.array([0.5, 0.8, yaw_std])
    corr = np.array([[1.0, 0.3, 0.5], [0.3, 1.0, -0.4], [0.5, -0.4, 1.0]])
    return np.array([10.0, -4.0, mean_yaw]), corr * np.outer(sd, sd)


def monte_carlo(mean, cov, offset, n=200_000, seed=0):
    """Sample poses, move each to its sensor by the rotation matrix written out, return the samples' moments and the
    standard errors of the mean and of each covariance entry (Gaussian fourth moments as the estimate)."""
    draws = np.random.default_rng(seed).multivariate_normal(mean, cov, size=n)
    c, s = np.cos(draws[:, 2]), np.sin(draws[:, 2])
    q = draws[:, :2] + np.column_stack([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]])
    m, k = q.mean(0), np.cov(q.T)
    se_k = np.sqrt((np.outer(np.diag(k), np.diag(k)) + k ** 2) / n)
    return m, k, np.sqrt(np.diag(k) / n), se_k


def test_the_sensor_is_the_offset_turned_by_the_heading():
    # by hand: r = (1, 0.5) forward and left; facing +y, forward is +y and left is -x
    assert np.allclose(sensor_position([10.0, 20.0], math.pi / 2, (1.0, 0.5)), [9.5, 21.0])
    assert np.allclose(sensor_position([10.0, 20.0], math.pi, (1.0, 0.5)), [9.0, 19.5])
    assert np.allclose(sensor_position([10.0, 20.0], 0.0, (1.0, 0.5)), [11.0, 20.5])
    # each particle with its own heading
    xy = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, -1.0]])
    yaw = np.array([0.0, math.pi / 2, -math.pi / 2])
    assert np.allclose(sensor_position(xy, yaw, (2.0, 0.0)), [[2.0, 0.0], [1.0, 3.0], [2.0, -3.0]])
    assert rotated_offset(np.zeros((4, 5)), OFFSET).shape == (4, 5, 2)


@pytest.mark.parametrize('yaw_std', [0.02, 0.3, 1.0, 3.0])
def test_exact_moments_match_monte_carlo_at_any_heading_uncertainty(yaw_std):
    mean, cov = pose_gaussian(yaw_std)
    m, k, se_m, se_k = monte_carlo(mean, cov, OFFSET)
    got_m, got_k = sensor_moments(mean, cov, OFFSET)
    assert np.all(np.abs(got_m - m) < 5 * se_m + 1e-12)
    assert np.all(np.abs(got_k - k) < 5 * se_k + 1e-12)
    assert np.all(np.linalg.eigvalsh(got_k) > 0)


def test_first_order_holds_for_small_heading_noise_and_breaks_down_for_large():
    mean, cov = pose_gaussian(0.02)
    m, k, se_m, se_k = monte_carlo(mean, cov, OFFSET)
    lin_m, lin_k = linearised_sensor_moments(mean, cov, OFFSET)
    assert np.all(np.abs(lin_m - m) < 5 * se_m) and np.all(np.abs(lin_k - k) < 5 * se_k)
    # with the heading known, both are the pose's position moved by R(yaw) r, with the position's covariance
    cov[2, :] = cov[:, 2] = 0.0
    for moments in (sensor_moments, linearised_sensor_moments):
        got_m, got_k = moments(mean, cov, OFFSET)
        assert np.allclose(got_m, mean[:2] + rotated_offset(mean[2], OFFSET)) and np.allclose(got_k, cov[:2, :2])
    # at 0.5 rad (a heading that GNSS alone barely fixes) the linearisation is off by far more than the oracle's
    # error: the mean misses the pull towards base_link, the covariance overstates the spread across the arm
    mean, cov = pose_gaussian(0.5)
    m, k, se_m, se_k = monte_carlo(mean, cov, OFFSET)
    lin_m, lin_k = linearised_sensor_moments(mean, cov, OFFSET)
    assert np.linalg.norm(lin_m - m) > 20 * np.linalg.norm(se_m)
    assert np.max(np.abs(lin_k - k) / se_k) > 20


def test_an_unknown_heading_puts_the_sensor_on_the_ring_around_base_link():
    # a sentinel yaw variance (1e6 rad², what a filter reports for an unmeasured heading): no divergence, the
    # position's own moments plus the ring of radius |r| (mean 0, covariance |r|²/2 I)
    mean, cov = np.array([3.0, 4.0, 0.7]), np.diag([0.1, 0.2, 1e6])
    got_m, got_k = sensor_moments(mean, cov, OFFSET)
    assert np.allclose(got_m, [3.0, 4.0]) and np.allclose(got_k, np.diag([0.1, 0.2]) + 0.8 * np.eye(2))
    assert linearised_sensor_moments(mean, cov, OFFSET)[1].max() > 1e5


def test_no_offset_leaves_the_position_moments_as_they_are():
    mean, cov = pose_gaussian(0.7)
    got_m, got_k = sensor_moments(mean, cov, (0.0, 0.0))
    assert np.array_equal(got_m, mean[:2]) and np.allclose(got_k, cov[:2, :2], rtol=0, atol=1e-15)


def test_pose_moments_take_the_heading_around_the_circle():
    # two particles either side of +-pi: the circular mean is pi, the spread 0.1 rad, not 3.04
    xy = np.array([[0.0, 0.0], [2.0, 0.0]])
    mean, cov = pose_moments(xy, [math.pi - 0.1, -math.pi + 0.1])
    assert abs(abs(mean[2]) - math.pi) < 1e-12 and np.allclose(mean[:2], [1.0, 0.0])
    assert cov[2, 2] == pytest.approx(0.01) and abs(cov[0, 2]) == pytest.approx(0.1)
    # weighted, against the textbook definition
    rng = np.random.default_rng(3)
    xy, yaw, w = rng.normal(size=(50, 2)), rng.normal(0.4, 0.2, 50), rng.uniform(0.1, 1.0, 50)
    mean, cov = pose_moments(xy, yaw, w)
    want = np.cov(np.column_stack([xy, yaw]).T, aweights=w, bias=True)
    assert np.allclose(mean, np.average(np.column_stack([xy, yaw]), axis=0, weights=w), atol=2e-3)
    assert np.allclose(cov[:2, :2], want[:2, :2]) and np.allclose(cov[2], want[2], atol=1e-3)

"""Tests for uncertain_bo.distributions.checks: covariance and weight checks (tensors and NumPy agree), the ROS
covariance layout."""
import pytest
import torch

from uncertain_bo.distributions import InvalidDistributionError, check_covariance, ros_covariance_to_xy


def test_ros_6x6_to_2x2_picks_xy_block():
    cov = torch.arange(36.0).reshape(6, 6)
    cov = cov + cov.T
    xy = ros_covariance_to_xy(cov.reshape(-1).tolist())
    assert torch.equal(xy, cov[:2, :2])
    assert xy.tolist() == [[0.0, 7.0], [7.0, 14.0]]  # entries 0, 1, 6, 7 of the row-major list


def test_ros_covariance_needs_36_entries():
    with pytest.raises(InvalidDistributionError, match='36'):
        ros_covariance_to_xy([1.0] * 9)


@pytest.mark.parametrize('cov, reason', [
    ([[1.0, 0.0], [0.0, float('nan')]], 'NaN'),
    ([[1.0, 0.0], [0.0, float('inf')]], 'NaN or inf'),
    ([[-1.0, 0.0], [0.0, 1.0]], 'negative variance'),
    ([[1.0, 0.5], [0.0, 1.0]], 'not symmetric'),
    ([[1.0, 2.0], [2.0, 1.0]], 'not positive semi-definite'),
])
def test_check_covariance_reasons(cov, reason):
    assert reason in check_covariance(torch.tensor(cov))


# ------------------------------------------------------------ one weight check
WEIGHT_CASES = [[[0.2, 0.8]], [[0.2, -0.1]], [[0.0, 0.0]], [[1.0, float('nan')]], [[1e308, 1e308]],
                [[1.0, float('inf')]], [[0.5, 0.5], [0.0, 0.0]], [[]]]


@pytest.mark.parametrize('w', WEIGHT_CASES)
def test_weights_problem_same_verdict_for_tensors_and_numpy(w):
    """The tensor path (on the tensor's device) and the NumPy path (torch-free ROS layer) give the same reason."""
    import numpy as np

    from uncertain_bo.distributions import weights_problem
    expected = {0: None, 1: 'finite and non-negative', 2: 'positive total', 3: 'finite and non-negative',
                4: 'overflow', 5: 'finite and non-negative', 6: 'positive total',
                7: 'positive total'}[WEIGHT_CASES.index(w)]
    got_t, got_np = weights_problem(torch.tensor(w, dtype=torch.float64)), weights_problem(np.array(w))
    assert got_t == got_np
    assert (got_t is None) if expected is None else (expected in got_t)

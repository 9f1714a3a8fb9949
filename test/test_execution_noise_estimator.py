"""ExecutionNoiseEstimator against hand-computed shrinkage estimates (NumPy), its PSD projection and its errors."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.execution_noise_estimator import ExecutionNoiseEstimator


def arrival(target, offset, cov):
    target = torch.tensor(target, dtype=torch.float64)
    return target, Gaussian(target[None] + torch.tensor(offset, dtype=torch.float64), torch.tensor(cov))


def test_open_loop_estimate_is_projected_onto_the_psd_cone():
    # an overstated localisation covariance makes e e^T - Sigma^L indefinite: the estimate is its PSD projection
    est = ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(0.1, 2), 0.0, feedback='open_loop')
    est.add(*arrival([1.0, 2.0], [0.3, 0.0], np.diag([1.0, 1.0])))
    raw = np.outer([0.3, 0.0], [0.3, 0.0]) - np.eye(2)
    w, v = np.linalg.eigh(raw)
    expected = (v * np.clip(w, 0, None)) @ v.T
    assert np.allclose(est.covariance().numpy(), expected, atol=1e-12)
    assert np.linalg.eigvalsh(est.covariance().numpy()).min() >= -1e-12


def test_set_prior_keeps_the_evidence_and_noise_keeps_the_sampling_settings():
    prior = GaussianExecutionNoise(torch.eye(2, dtype=torch.float64) * 0.5, n_samples=32, seed=7)
    est = ExecutionNoiseEstimator(prior, 2.0)
    est.add(*arrival([0.0, 0.0], [1.0, 0.0], np.zeros((2, 2))))
    est.set_prior(GaussianExecutionNoise(torch.diag(torch.tensor([4.0, 1.0], dtype=torch.float64)), n_samples=32,
                                         seed=7))
    expected = (2.0 * np.diag([4.0, 1.0]) + np.outer([1.0, 0.0], [1.0, 0.0])) / 3.0
    assert np.allclose(est.covariance().numpy(), expected)
    noise = est.noise()
    assert not noise.closed_form and noise.n_samples == 32 and noise.seed == 7


@pytest.mark.parametrize('kwargs', [{'prior_weight': -1.0}, {'prior_weight': float('nan')},
                                    {'prior_weight': 1.0, 'feedback': 'sideways'}])
def test_invalid_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(0.5, 2), **kwargs)


def test_a_prior_of_another_dimension_is_refused():
    est = ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(0.5, 2), 1.0)
    with pytest.raises(ValueError, match='shape'):
        est.set_prior(GaussianExecutionNoise.isotropic(0.5, 3))

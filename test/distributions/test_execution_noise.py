"""Tests for uncertain_bo.distributions.execution_noise: the one Gaussian execution noise, closed form or sampled
(moments, gradients, fresh draws, configuration round trip)."""
import pytest
import torch

from uncertain_bo.distributions import (DEFAULT_N_SAMPLES, Empirical, Gaussian, GaussianExecutionNoise,
                                        InvalidDistributionError, NoiseConfigError)
from uncertain_bo.noise import noise_from_config


def test_execution_noise_is_differentiable_in_targets():
    noise = GaussianExecutionNoise.isotropic([1.0, 2.0])
    x = torch.zeros(3, 2, requires_grad=True)
    p = noise(x)
    p.mean.sum().backward()
    assert torch.equal(x.grad, torch.ones(3, 2))
    assert torch.equal(p.covariance[0], torch.diag(torch.tensor([1.0, 4.0])))
    with pytest.raises(InvalidDistributionError):
        GaussianExecutionNoise(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))


def test_gaussian_covariance(gen):
    cov = torch.tensor([[0.04, 0.01], [0.01, 0.02]])
    d = GaussianExecutionNoise(cov, n_samples=DEFAULT_N_SAMPLES).sample_locations(torch.zeros(1, 2), 200_000, gen)
    d = d.reshape(-1, 2)                        # offsets from the target 0
    assert torch.allclose(torch.cov(d.T), cov, atol=5e-4)


def test_one_gaussian_execution_noise_class_closed_form_or_sampled(gen):
    cov = torch.tensor([[0.04, 0.01], [0.01, 0.09]])
    closed, sampled = GaussianExecutionNoise(cov), GaussianExecutionNoise(cov, n_samples=4000, seed=3)
    assert issubclass(NoiseConfigError, InvalidDistributionError)
    x = torch.tensor([[1.0, 2.0]])
    assert isinstance(closed(x), Gaussian) and torch.equal(closed(x).covariance[0], cov)
    p = sampled(x)
    assert isinstance(p, Empirical) and p.samples.shape == (1, 4000, 2)
    torch.testing.assert_close(p.mean[0], x[0], rtol=0, atol=0.02)  # Monte Carlo: 4000 samples
    torch.testing.assert_close(p.covariance[0], cov, rtol=0, atol=0.01)
    for noise in (closed, sampled):  # fresh draws in both modes
        draws = noise.sample_locations(x, 4000, gen)[0]
        torch.testing.assert_close(torch.cov(draws.T), cov, rtol=0, atol=0.01)
        rebuilt = noise_from_config(noise.to_config())
        assert type(rebuilt(x)) is type(noise(x))
        assert torch.equal(rebuilt.covariance, noise.covariance)
    with pytest.raises(NoiseConfigError, match='std'):
        GaussianExecutionNoise.isotropic([-0.1, 0.1])

"""The base classes of the distribution kernels (``kernels/distribution_kernel.py``): the sample encoding of every
distribution type (a Gaussian's fixed base draws have exactly its mean and covariance; a Dirac is one sample of weight
1; an empirical batch keeps its weights, capped at ``max_samples``), the decoding and the dimension checks."""
import pytest
import torch

from uncertain_bo.distributions import Dirac, Empirical, Gaussian, InvalidDistributionError
from uncertain_bo.kernels import KernelMeanEmbeddingKernel


def test_gaussians_are_encoded_by_whitened_base_draws_with_their_exact_moments(gen):
    k = KernelMeanEmbeddingKernel(2, n_samples=32)
    a = torch.randn(3, 2, 2, generator=gen)
    g = Gaussian(torch.randn(3, 2, generator=gen), a @ a.transpose(-1, -2) + 0.1 * torch.eye(2))
    samples, weights = k.decode(k.encode(g))
    assert samples.shape == (3, 32, 2) and torch.allclose(weights, torch.full((3, 32), 1 / 32))
    torch.testing.assert_close(samples.mean(1), g.mean)
    centred = samples - g.mean.unsqueeze(1)
    torch.testing.assert_close(centred.transpose(1, 2) @ centred / 32, g.covariance)
    torch.testing.assert_close(k.encode(g), KernelMeanEmbeddingKernel(2, n_samples=32).encode(g))   # fixed draws


def test_diracs_are_one_sample_and_empirical_batches_keep_capped_weights(gen):
    k = KernelMeanEmbeddingKernel(2, max_samples=3)
    x = torch.randn(2, 2, generator=gen)
    samples, weights = k.decode(k.encode(Dirac(x)))
    assert torch.equal(samples[:, 0], x) and torch.equal(weights, torch.ones(2, 1))
    cloud = Empirical(torch.randn(2, 5, 2, generator=gen), torch.tensor([[1.0, 1, 2, 4, 4], [1, 1, 1, 1, 1]]))
    samples, weights = k.decode(k.encode(cloud))
    torch.testing.assert_close(samples, cloud.samples[:, :3])
    torch.testing.assert_close(weights, torch.tensor([[0.25, 0.25, 0.5], [1 / 3, 1 / 3, 1 / 3]]))


def test_wrong_dimensions_and_widths_are_refused():
    k = KernelMeanEmbeddingKernel(2)
    with pytest.raises(InvalidDistributionError, match='R\\^2, got R\\^3'):
        k.encode(Dirac(torch.zeros(1, 3)))
    with pytest.raises(InvalidDistributionError, match='width'):
        k.decode(torch.zeros(1, 7))

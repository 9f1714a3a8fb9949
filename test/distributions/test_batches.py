"""Tests for uncertain_bo.distributions.batches: Dirac, Gaussian and Empirical batches (validation, moments,
sampling, affine maps, concatenation, indexing)."""
import pytest
import torch

from uncertain_bo.distributions import Dirac, Empirical, Gaussian, InvalidDistributionError, cat, check_covariance


def test_zero_covariance_is_valid_dirac():
    assert check_covariance(torch.zeros(2, 2)) is None
    g = Gaussian(torch.zeros(1, 2), torch.zeros(2, 2))
    assert torch.equal(g.sample(5), torch.zeros(1, 5, 2))


def test_gaussian_rejects_bad_covariance_and_names_point():
    covs = torch.eye(2).repeat(3, 1, 1)
    covs[2, 0, 0] = -1.0
    with pytest.raises(InvalidDistributionError, match='point 2'):
        Gaussian(torch.zeros(3, 2), covs)


def test_gaussian_sampling_moments(gen):
    cov = torch.tensor([[2.0, 0.6], [0.6, 0.5]])
    g = Gaussian(torch.tensor([[1.0, -2.0]]), cov)
    s = g.sample(200_000, gen)[0]
    assert torch.allclose(s.mean(0), torch.tensor([1.0, -2.0]), atol=0.02)
    assert torch.allclose(torch.cov(s.T), cov, atol=0.03)


def test_empirical_weighted_moments_and_resampling(gen):
    samples = torch.tensor([[[0.0, 0.0], [2.0, 0.0]]])
    e = Empirical(samples, torch.tensor([[3.0, 1.0]]))
    assert torch.allclose(e.mean, torch.tensor([[0.5, 0.0]]))
    # var of x: 0.75*0.25 + 0.25*2.25 = 0.75
    assert torch.allclose(e.covariance[0, 0, 0], torch.tensor(0.75))
    s = e.sample(100_000, gen)
    assert abs(float((s[0, :, 0] == 2.0).double().mean()) - 0.25) < 0.01


def test_affine_maps_moments(gen):
    g = Gaussian(torch.tensor([[1.0, 2.0]]), torch.tensor([[4.0, 1.0], [1.0, 9.0]]))
    scale, shift = torch.tensor([0.5, 0.1]), torch.tensor([1.0, -1.0])
    a = g.affine(scale, shift)
    assert torch.allclose(a.mean, torch.tensor([[1.5, -0.8]]))
    assert torch.allclose(a.covariance, torch.tensor([[[1.0, 0.05], [0.05, 0.09]]]))
    e = Empirical(g.sample(50_000, gen)).affine(scale, shift)
    assert torch.allclose(e.covariance, a.covariance, atol=0.02)


def test_cat_mixes_dirac_and_gaussian():
    b = cat([Dirac(torch.ones(2, 2)), Gaussian(torch.zeros(1, 2), torch.eye(2))])
    assert isinstance(b, Gaussian) and len(b) == 3
    assert torch.equal(b.covariance[0], torch.zeros(2, 2))
    with pytest.raises(InvalidDistributionError, match='cannot mix'):
        cat([Dirac(torch.ones(1, 2)), Empirical(torch.zeros(1, 3, 2))])


def test_indexing_keeps_batch_dim():
    g = Gaussian(torch.arange(6.0).reshape(3, 2), torch.eye(2))
    assert len(g[1]) == 1 and torch.equal(g[1].mean, torch.tensor([[2.0, 3.0]]))
    assert len(g[-1]) == 1 and torch.equal(g[-1].mean, torch.tensor([[4.0, 5.0]]))


def test_particle_moments_equal_the_empirical_moments(gen):
    """The NumPy moment matching (particle clouds of the ROS layer) and :class:`Empirical`'s (tensors) agree to
    1e-12 on a random weighted cloud; a one-particle cloud is a Dirac; bad weights raise one-line errors."""
    import numpy as np

    from uncertain_bo.distributions import particle_moments
    x = torch.randn(500, 2, generator=gen, dtype=torch.float64) * torch.tensor([3.0, 0.5]) + 10.0
    w = torch.rand(500, generator=gen, dtype=torch.float64)
    mean, cov = particle_moments(x.numpy(), w.numpy())
    e = Empirical(x.unsqueeze(0), w.unsqueeze(0))
    np.testing.assert_allclose(mean, e.mean[0].numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(cov, e.covariance[0].numpy(), rtol=0, atol=1e-12)
    mean, cov = particle_moments(x.numpy())     # equal weights
    np.testing.assert_allclose(mean, x.mean(0).numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(cov, torch.cov(x.T, correction=0).numpy(), rtol=0, atol=1e-12)
    mean, cov = particle_moments([[1.0, 2.0]], [3.0])
    assert mean.tolist() == [1.0, 2.0] and not cov.any()
    for bad, match in (([1.0, -1.0], 'particle weights must be finite'), ([1.0], 'one per sample'),
                       ([0.0, 0.0], 'particle weights must have a positive total'),
                       ([1e308, 1e308], 'particle weights overflow')):
        with pytest.raises(ValueError, match=match):
            particle_moments([[0.0, 0.0], [1.0, 1.0]], bad)
    with pytest.raises(ValueError, match='empty'):
        particle_moments(np.zeros((0, 2)))

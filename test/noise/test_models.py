"""Tests for uncertain_bo.noise.models, the sample-based execution-noise models: moments against scipy, common
random numbers, gradients (configuration: test_config.py)."""
import math

import pytest
import torch
from scipy import stats

from uncertain_bo.distributions import Empirical
from uncertain_bo.noise import (DEFAULT_N_SAMPLES, BetaNoise, GaussianExecutionNoise, GaussianMixtureNoise,
                                NoiseConfigError, StepChi2Noise, VaryingBetaNoise, circular_gaussian,
                                noise_from_config)

M = 200_000


def offsets(noise, targets, gen, m=M):
    return noise.sample_locations(targets, m, gen) - targets.unsqueeze(-2)


def assert_moments(samples, mean, var, k=5.0):
    """Sample mean/variance within k standard errors of the exact values (per axis)."""
    samples = samples.reshape(-1, samples.shape[-1])
    n = samples.shape[0]
    mean, var = torch.as_tensor(mean, dtype=samples.dtype), torch.as_tensor(var, dtype=samples.dtype)
    se_mean = (var / n).sqrt()
    fourth = ((samples - mean) ** 4).mean(0)
    se_var = ((fourth - var ** 2) / n).sqrt()
    assert ((samples.mean(0) - mean).abs() <= k * se_mean + 1e-15).all(), (samples.mean(0), mean)
    assert ((samples.var(0) - var).abs() <= k * se_var + 1e-15).all(), (samples.var(0), var)


@pytest.mark.parametrize('a, b, scale', [(0.4, 0.2, 0.1), (0.5, 0.5, 0.3), (2.0, 5.0, 1.0)])
def test_beta_moments_and_law_match_scipy(a, b, scale, gen):
    noise = BetaNoise(a, b, scale)
    d = offsets(noise, torch.tensor([[0.2], [0.9]]), gen)
    ref = stats.beta(a, b, scale=scale)
    assert_moments(d, [ref.mean()], [ref.var()])
    assert d.min() >= -1e-12 and d.max() <= scale + 1e-12  # one-sided, loc = 0
    assert stats.kstest(d[0, :20_000, 0].numpy(), ref.cdf).pvalue > 1e-3


def test_step_chi2_switches_at_threshold(gen):
    noise = StepChi2Noise()  # paper: df 0.5 below 0.6, 7.0 above, scale 0.01
    d = offsets(noise, torch.tensor([[0.3], [0.59], [0.61], [0.9]]), gen)
    low, high = stats.chi2(0.5, scale=0.01), stats.chi2(7.0, scale=0.01)
    assert_moments(d[:2], [low.mean()], [low.var()])
    assert_moments(d[2:], [high.mean()], [high.var()])


def test_varying_beta_scale_follows_target(gen):
    noise = VaryingBetaNoise()  # code's 0.09 (sin 4πx + 1), beta(0.5, 0.5)
    for x in (0.05, 0.125, 0.42):
        s = 0.09 * (math.sin(4 * math.pi * x) + 1)
        ref = stats.beta(0.5, 0.5, scale=s)
        assert_moments(offsets(noise, torch.tensor([[x]]), gen), [ref.mean()], [ref.var()])
    # zero scale at sin = -1: a point mass
    assert offsets(noise, torch.tensor([[0.375]]), gen, 100).abs().max() < 1e-12


def test_gaussian_mixture_moments(gen):
    noise = GaussianMixtureNoise.from_stds([0.5, 0.5], [-0.017, 0.03], [0.010, 0.017])
    mean, cov = noise.mean_and_covariance()
    # independent closed form: E = Σ w μ, Var = Σ w (σ² + μ²) - E²
    e = 0.5 * (-0.017 + 0.03)
    v = 0.5 * (0.010 ** 2 + 0.017 ** 2 + 0.017 ** 2 + 0.03 ** 2) - e ** 2
    assert float(mean) == pytest.approx(e) and float(cov) == pytest.approx(v)
    d = offsets(noise, torch.tensor([[0.5]]), gen)
    assert_moments(d, [e], [v])
    # bimodal: the two modes are both visible
    hist = torch.histc(d, bins=20, min=-0.05, max=0.08)
    assert hist[4] > hist[7] and hist[12] > hist[7]


def test_gaussian_mixture_weights_respected(gen):
    noise = GaussianMixtureNoise.from_stds([0.2, 0.8], [[0.0, 0.0], [1.0, 1.0]], [1e-6, 1e-6])
    d = offsets(noise, torch.zeros(1, 2), gen, 50_000)
    frac = float((d[..., 0] > 0.5).double().mean())
    assert frac == pytest.approx(0.8, abs=5 * math.sqrt(0.16 / 50_000))


def test_circular_gaussian_10d(gen):
    noise = circular_gaussian(10, radius=0.5, std=0.1)
    d = offsets(noise, torch.zeros(1, 10), gen, 50_000)
    assert torch.allclose(d[..., :2].norm(dim=-1), torch.tensor(0.5, dtype=d.dtype))  # on the circle
    assert_moments(d[..., :2], [0.0, 0.0], [0.125, 0.125])  # r²/2 per axis
    assert_moments(d[..., 2:], [0.0] * 8, [0.01] * 8)


# ------------------------------------------------------------------ common random numbers
@pytest.mark.parametrize('noise', [BetaNoise(0.4, 0.2, 0.1), StepChi2Noise(), VaryingBetaNoise(),
                                   GaussianMixtureNoise.from_stds([0.5, 0.5], [-0.02, 0.03], [0.01, 0.02]),
                                   circular_gaussian(4),
                                   GaussianExecutionNoise.isotropic(0.1, 2, n_samples=DEFAULT_N_SAMPLES)])
def test_fixed_base_samples_are_deterministic(noise):
    x = torch.rand(5, noise.dim, generator=torch.Generator().manual_seed(3))
    a, b = noise(x), noise(x)
    assert isinstance(a, Empirical) and a.samples.shape == (5, noise.n_samples, noise.dim)
    assert torch.equal(a.samples, b.samples)
    twin = noise_from_config(noise.to_config())  # same seed -> same draws
    assert torch.equal(twin(x).samples, a.samples)
    noise.refresh()
    assert not torch.equal(noise(x).samples, a.samples)
    noise.refresh(twin.seed)
    assert torch.equal(noise(x).samples, a.samples)


def test_same_offsets_for_every_target():
    noise = BetaNoise(0.4, 0.2, 0.1, n_samples=50)
    s = noise(torch.tensor([[0.1], [0.7]])).samples
    assert torch.allclose(s[1] - s[0], torch.full_like(s[0], 0.6))
    # a smaller batch sees the same draws (the acquisition is a deterministic function of x)
    assert torch.equal(noise(torch.tensor([[0.7]])).samples[0], s[1])


def test_sample_executed_is_fresh_and_distributed(gen):
    noise = BetaNoise(0.4, 0.2, 0.1)
    x = torch.full((20_000, 1), 0.5)
    e = noise.sample_executed(x, gen)
    assert e.shape == (20_000, 1)
    assert e.unique().numel() > 19_000
    assert_moments(e - 0.5, [stats.beta(0.4, 0.2, scale=0.1).mean()], [stats.beta(0.4, 0.2, scale=0.1).var()])


# ------------------------------------------------------------------ gradients
def test_gradient_flows_through_x_plus_delta():
    noise = BetaNoise(0.4, 0.2, 0.1, n_samples=30)
    x = torch.tensor([[0.3], [0.6]], requires_grad=True)
    noise(x).samples.pow(2).sum().backward()
    s = noise(x.detach()).samples
    assert torch.allclose(x.grad, 2 * s.sum(1))  # d/dx Σ_j (x + δ_j)² = 2 Σ_j (x + δ_j)


def test_gradient_of_target_dependent_scale():
    noise = VaryingBetaNoise(n_samples=40)
    x = torch.tensor([[0.1], [0.3]], requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: noise(t).samples, (x,))
    y = noise(x).samples.sum()
    y.backward()
    base = noise.base_samples[:, 0]
    dscale = 0.09 * 4 * math.pi * torch.cos(4 * math.pi * x.detach())
    assert torch.allclose(x.grad, 40 + dscale * base.sum())


def test_circular_gradient_is_identity():
    noise = circular_gaussian(3)
    x = torch.zeros(2, 3, requires_grad=True)
    noise(x).samples.sum().backward()
    assert torch.allclose(x.grad, torch.full((2, 3), float(noise.n_samples)))


def test_targets_shape_checked():
    with pytest.raises(ValueError, match=r'\(q, 1\)'):
        BetaNoise(0.4, 0.2, 0.1)(torch.zeros(3, 2))


def test_weights_problem_shared_by_empirical_and_mixture():
    from uncertain_bo.distributions import Empirical, InvalidDistributionError, weights_problem

    assert weights_problem(torch.tensor([[0.2, 0.8]])) is None
    assert weights_problem(torch.tensor([[0.2, -0.1]])) == 'weights must be finite and non-negative'
    assert weights_problem(torch.tensor([[0.0, 0.0]])) == 'weights must have a positive total (per distribution)'
    with pytest.raises(InvalidDistributionError, match='positive total'):
        Empirical(torch.zeros(1, 2, 1), torch.zeros(1, 2))
    with pytest.raises(NoiseConfigError, match='weights'):
        GaussianMixtureNoise([float('nan'), 1.0], [[0.0], [1.0]], [[[1.0]], [[1.0]]])

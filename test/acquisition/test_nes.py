"""NES-EP (Fröhlich et al. 2020; ``acquisition/nes.py``): truncated moments, EP, kernels k_gf / k_g, robust max-value
samples and the NES-EP predictive, each against an independent oracle (scipy, Monte Carlo, dense grids)."""
import math

import pytest
import torch
from scipy.stats import truncnorm

from uncertain_bo.acquisition.nes import (NESEntropyReduction, dirac_query, max_value_levels, sample_robust_max_values,
                                          truncated_gaussian_ep, upper_truncated_moments)
from uncertain_bo.distributions import DTYPE, Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP

SIGMA_X = 0.05


def _model(n=6, seed=0, cov=None):
    """A 1-D GP on [0, 1] with fixed hyperparameters on a few points of sin(5πx²) + x/2."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, generator=g, dtype=DTYPE)
    y = torch.sin(5 * math.pi * x[:, 0] ** 2) + 0.5 * x[:, 0]
    gp = DistributionGP(torch.tensor([[0.0], [1.0]], dtype=DTYPE), standardize=False, priors=False)
    locs = Dirac(x) if cov is None else Gaussian(x, cov.expand(n, 1, 1))
    gp.set_data(locs, y)
    gp.set_hyperparameters(lengthscale=0.1, outputscale=1.0, noise=1e-4, mean=0.0)
    gp.eval()
    return gp, x, y


CANDIDATES = GaussianExecutionNoise.isotropic(SIGMA_X, dim=1)


def k(gp, a, b, diag=False):
    """Kernel (with the signal variance) between distribution batches."""
    return gp.covar_module.forward(gp.encode(a), gp.encode(b), diag=diag)


def test_upper_truncated_moments_match_scipy():
    m, v = torch.tensor([0.3, -1.0, 2.0], dtype=DTYPE), torch.tensor([0.5, 2.0, 0.1], dtype=DTYPE)
    u = torch.tensor([0.0, 1.5, -0.5], dtype=DTYPE)  # the last one far in the tail
    mean, var = upper_truncated_moments(m, v, u)
    for i in range(3):
        s = math.sqrt(v[i])
        dist = truncnorm(-math.inf, (u[i] - m[i]) / s, loc=float(m[i]), scale=s)
        assert float(mean[i]) == pytest.approx(dist.mean(), rel=1e-6, abs=1e-9)
        assert float(var[i]) == pytest.approx(dist.var(), rel=1e-4)


def test_ep_is_exact_for_one_factor():
    mu, sig = truncated_gaussian_ep(torch.tensor([0.4], dtype=DTYPE), torch.tensor([[0.8]], dtype=DTYPE), 0.1)
    dist = truncnorm(-math.inf, (0.1 - 0.4) / math.sqrt(0.8), loc=0.4, scale=math.sqrt(0.8))
    assert float(mu[0]) == pytest.approx(dist.mean(), rel=1e-8)
    assert float(sig[0, 0]) == pytest.approx(dist.var(), rel=1e-8)


def test_ep_moments_against_rejection_sampling():
    """EP's Gaussian against the moments of the truncated multivariate normal by rejection sampling."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(3, 3, generator=g, dtype=DTYPE)
    sigma0 = a @ a.T + 0.3 * torch.eye(3, dtype=DTYPE)
    mu0 = torch.tensor([0.2, -0.3, 0.5], dtype=DTYPE)
    upper = 0.4
    mu, sig = truncated_gaussian_ep(mu0, sigma0, upper)
    z = mu0 + torch.randn(400_000, 3, generator=g, dtype=DTYPE) @ torch.linalg.cholesky(sigma0).T
    kept = z[(z <= upper).all(-1)]
    sd = kept.std(0)
    assert ((mu - kept.mean(0)).abs() / sd).max() < 0.05
    assert ((sig.diagonal() / kept.var(0)) - 1).abs().max() < 0.1
    assert (mu <= upper).all()


def test_k_gf_and_k_g_against_monte_carlo():
    """k_gf = E_ξ k_f(x + ξ, x') and k_g = E_{ξ,ξ'} k_f(x + ξ, x' + ξ'), also for a training input with its own
    covariance Σ_i (E over that input's distribution too), against Monte Carlo over the plain SE kernel."""
    gp, _, _ = _model(cov=torch.tensor([[0.03 ** 2]], dtype=DTYPE))
    x, xp = torch.tensor([[0.40]], dtype=DTYPE), torch.tensor([[0.47]], dtype=DTYPE)
    g = torch.Generator().manual_seed(2)
    xi, xi2 = torch.randn(200_000, 1, generator=g, dtype=DTYPE), torch.randn(200_000, 1, generator=g, dtype=DTYPE)
    cand = CANDIDATES
    with torch.no_grad():
        def kf(a, b):  # plain SE kernel between paired points
            return k(gp, Dirac(a), Dirac(b), diag=True)
        k_gf = k(gp, cand(x), Dirac(xp))[0, 0]
        k_g = k(gp, cand(x), cand(xp))[0, 0]
        k_gi = k(gp, cand(x), Gaussian(xp, torch.tensor([[[0.03 ** 2]]], dtype=DTYPE)))[0, 0]
        mc_gf = kf(x + SIGMA_X * xi, xp.expand(len(xi), 1)).mean()
        mc_g = kf(x + SIGMA_X * xi, xp + SIGMA_X * xi2).mean()
        mc_gi = kf(x + SIGMA_X * xi, xp + 0.03 * xi2).mean()
    for exact, mc in ((k_gf, mc_gf), (k_g, mc_g), (k_gi, mc_gi)):
        assert float(exact) == pytest.approx(float(mc), rel=5e-3)


def test_robust_max_values_match_a_dense_grid_maximum():
    gp, _, _ = _model()
    bounds = torch.tensor([[0.0], [1.0]], dtype=DTYPE)
    mv, argmax, paths = sample_robust_max_values(gp, CANDIDATES, bounds, num=20, n_features=500, seed=4,
                                                 raw_points=64, polish=True)
    grid = torch.linspace(0, 1, 20_001, dtype=DTYPE)[:, None]
    with torch.no_grad():
        dense = paths(CANDIDATES(grid)).max(0).values
        at = paths(CANDIDATES(argmax)).diagonal()
    assert torch.allclose(mv, dense, atol=1e-6)   # L-BFGS-B from 64 points finds the grid maximum
    assert torch.allclose(mv, at)
    mv1, _, p1 = sample_robust_max_values(gp, CANDIDATES, bounds, num=20, n_features=500, seed=4)   # 1-D: 1024 points
    with torch.no_grad():
        assert torch.allclose(mv1, p1(CANDIDATES(grid)).max(0).values, atol=1e-4)
    levels = max_value_levels(mv, 3)
    assert levels.shape == (3,) and (levels[1:] >= levels[:-1]).all()


def test_robust_max_values_polish_under_no_grad_in_2d():
    """The L-BFGS-B polish (d > 1) takes its own gradients: a caller under ``torch.no_grad()`` (it raised) gets the
    same values as one without."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(8, 2, generator=g, dtype=DTYPE)
    gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE), standardize=False, priors=False)
    gp.set_data(Dirac(x), torch.sin(4 * x).sum(-1))
    gp.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=1e-3, mean=0.0)
    noise = GaussianExecutionNoise.isotropic(SIGMA_X, 2)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
    with torch.no_grad():
        mv, argmax, _ = sample_robust_max_values(gp, noise, bounds, num=4, n_features=100, seed=2, raw_points=64)
    mv2, argmax2, _ = sample_robust_max_values(gp, noise, bounds, num=4, n_features=100, seed=2, raw_points=64)
    torch.testing.assert_close(mv, mv2)
    torch.testing.assert_close(argmax, argmax2)


def test_nes_ep_predictive_against_rejection_sampling():
    """The EP predictive of f at the query given g ≤ g* (at the data and the candidate) against the moments of
    joint GP posterior samples (g(C), g(x), f(x)) | y with the same constraint imposed by rejection."""
    gp, x_train, y = _model(n=4, seed=5)
    c = x_train
    xq = torch.tensor([[0.35], [0.8]], dtype=DTYPE)
    with torch.no_grad():
        m_g, _ = gp.marginals(CANDIDATES(torch.cat([c, xq])))
        g_star = torch.tensor([float(m_g.max()) + 0.2], dtype=DTYPE)
        acq = NESEntropyReduction(gp, CANDIDATES, dirac_query, g_star, c)
        m_f, v_f, m_t, v_t = acq.moments(xq)
        # joint posterior of [g(C), g(xq), f(xq)] given y, by the dense formulas (mean 0, noise 1e-4)
        from uncertain_bo.distributions import cat
        test = cat([CANDIDATES(torch.cat([c, xq])), Dirac(xq)])
        kx = k(gp, test, Dirac(x_train))
        kxx = k(gp, Dirac(x_train), Dirac(x_train)) + 1e-4 * torch.eye(len(y), dtype=DTYPE)
        mean = kx @ torch.linalg.solve(kxx, y)
        cov = k(gp, test, test) - kx @ torch.linalg.solve(kxx, kx.T)
        cov = cov + 1e-9 * torch.eye(len(cov), dtype=DTYPE)
    g = torch.Generator().manual_seed(6)
    z = mean + torch.randn(400_000, len(mean), generator=g, dtype=DTYPE) @ torch.linalg.cholesky(cov).T
    nc = len(c)
    for j in range(2):
        keep = (z[:, :nc] <= g_star).all(-1) & (z[:, nc + j] <= g_star)
        f = z[keep, nc + 2 + j]
        assert float(m_t[j, 0]) == pytest.approx(float(f.mean()), abs=0.05 * float(f.std()))
        assert float(v_t[j, 0]) == pytest.approx(float(f.var()), rel=0.1)
    assert torch.allclose(v_f, cov.diagonal()[nc + 2:], rtol=1e-6)

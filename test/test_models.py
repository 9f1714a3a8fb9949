"""DistributionGP against a hand-written dense GP solve (numpy) and its own cheap-update path."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import DistributionGP

BOUNDS = torch.tensor([[0.0, -5.0], [10.0, 5.0]])


def data(n, gen):
    x = BOUNDS[0] + torch.rand(n, 2, generator=gen) * (BOUNDS[1] - BOUNDS[0])
    a = torch.randn(n, 2, 2, generator=gen) * 0.4
    locs = Gaussian(x, a @ a.transpose(-1, -2))
    y = torch.sin(x[:, 0]) + 0.3 * x[:, 1] + 0.05 * torch.randn(n, generator=gen)
    return locs, y


def expected_se_numpy(m1, s1, m2, s2, ell, sf2):
    """Eq. 80 in numpy (independent of the torch implementation)."""
    out = np.zeros((len(m1), len(m2)))
    w = np.diag(np.asarray(ell) ** 2)
    for i in range(len(m1)):
        for j in range(len(m2)):
            s = s1[i] + s2[j]
            dlt = m1[i] - m2[j]
            out[i, j] = sf2 * np.exp(-0.5 * dlt @ np.linalg.solve(w + s, dlt)) / np.sqrt(
                np.linalg.det(np.eye(len(ell)) + np.linalg.solve(w, s)))
    return out


def test_posterior_matches_dense_numpy_solve(gen):
    locs, y = data(25, gen)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False)
    gp.set_data(locs, y)
    ell, sf2, lam, m = [1.7, 2.5], 1.3, 0.02, 0.4
    gp.set_hyperparameters(lengthscale=ell, outputscale=sf2, noise=lam, mean=m)
    test = Gaussian(torch.tensor([[3.0, 1.0], [7.0, -2.0], [0.5, 4.0]]), torch.eye(2) * 0.3)
    mean, var = gp.posterior(test)

    M, S, Y = locs.mean.numpy(), locs.covariance.numpy(), y.numpy()
    Mt, St = test.mean.numpy(), test.covariance.numpy()
    K = expected_se_numpy(M, S, M, S, ell, sf2) + lam * np.eye(len(Y))
    Ks = expected_se_numpy(Mt, St, M, S, ell, sf2)
    Kss = np.diag(expected_se_numpy(Mt, St, Mt, St, ell, sf2))
    mu = m + Ks @ np.linalg.solve(K, Y - m)
    v = Kss - np.einsum('ij,ji->i', Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(mean.detach().numpy(), mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(var.detach().numpy(), v, rtol=1e-7, atol=1e-9)
    # information gain ½ log|I + K/λ|
    ig = 0.5 * np.linalg.slogdet(np.eye(len(Y)) + (K - lam * np.eye(len(Y))) / lam)[1]
    assert gp.information_gain() == pytest.approx(ig, rel=1e-9)


def test_rank_one_growth_equals_rebuild(gen):
    locs, y = data(40, gen)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs[:30], y[:30])
    gp.fit()
    test = Gaussian(torch.rand(8, 2, generator=gen) * 5, torch.eye(2) * 0.2)
    gp.posterior(test)  # build the cache so that append() grows it
    for i in range(30, 40):
        gp.append(locs[i], y[i:i + 1])
    grown = [t.detach() for t in gp.posterior(test)]
    gp._cache = None  # force a from-scratch factorisation
    rebuilt = [t.detach() for t in gp.posterior(test)]
    assert torch.allclose(grown[0], rebuilt[0], atol=1e-9)
    assert torch.allclose(grown[1], rebuilt[1], atol=1e-9)


def test_fit_improves_marginal_likelihood_and_predicts(gen):
    from gpytorch.mlls import ExactMarginalLogLikelihood
    locs, y = data(40, gen)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs, y)
    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    gp.train()
    before = float(mll(gp(*gp.train_inputs), gp.train_targets))
    assert gp.fit()
    gp.train()
    after = float(mll(gp(*gp.train_inputs), gp.train_targets))
    gp.eval()
    assert after > before
    x = torch.tensor([[2.0, 0.0], [8.0, 3.0]])
    mean, _ = gp.posterior(Dirac(x))
    truth = torch.sin(x[:, 0]) + 0.3 * x[:, 1]
    assert (mean - truth).abs().max() < 0.35


def test_rejects_non_finite_observations():
    gp = DistributionGP(BOUNDS)
    with pytest.raises(ValueError, match='NaN'):
        gp.set_data(Dirac(torch.zeros(2, 2)), torch.tensor([1.0, float('nan')]))


def test_predicted_robust_value_tracks_expectation(gen):
    """With fixed hyperparameters and dense noiseless data, μ̂(N(x, Σ)) ≈ E[f(x̃)], x̃ ~ N(x, Σ)."""
    f = lambda x: torch.sin(x[:, 0]) * torch.cos(0.5 * x[:, 1])  # noqa: E731
    grid = torch.stack(torch.meshgrid(torch.linspace(0, 10, 25), torch.linspace(-5, 5, 25),
                                      indexing='ij'), -1).reshape(-1, 2)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False)
    gp.set_data(Dirac(grid), f(grid))
    gp.set_hyperparameters(lengthscale=[1.0, 1.5], outputscale=1.0, noise=1e-6, mean=0.0)
    target = torch.tensor([[4.0, 1.0], [6.5, -2.0]])
    cov = torch.diag(torch.tensor([0.8, 0.5]) ** 2)
    mean, _ = gp.posterior(Gaussian(target, cov))
    samples = Gaussian(target, cov).sample(200_000, gen)
    mc = torch.stack([f(s).mean() for s in samples])
    assert torch.allclose(mean.detach(), mc, atol=0.01)

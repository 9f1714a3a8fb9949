"""Baselines IGP-UCB and UEI, the unscented transform, EI, and the theory for beta (Prop. 3, Eq. 20).

Oracles are independent of the code under test: moments of sigma points against the Gaussian they stand
for, EI against Monte Carlo, the unscented kernel against an explicit numpy double sum, beta against the
closed-form 2x2 determinant.
"""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition import METHODS, TheoryBeta, get_method
from uncertain_bo.acquisition.beta import effective_noise_std, prop3_sigma_f, se_lipschitz_constant
from uncertain_bo.acquisition.igp_ucb import input_noise_sigma_nu
from uncertain_bo.acquisition.uei import (UnscentedExpectedImprovement, expected_improvement,
                                          log_expected_improvement)
from uncertain_bo.distributions import Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.planner import Planner
from uncertain_bo.unscented import UnscentedRBFKernel, sigma_points, sigma_weights

UNIT = torch.tensor([[0.0, 0.0], [1.0, 1.0]])


def random_spd(d, gen, scale=0.05):
    a = torch.randn(d, d, generator=gen) * scale
    return a @ a.T + 0.1 * scale ** 2 * torch.eye(d)


# ------------------------------------------------------------------ unscented transform
@pytest.mark.parametrize('d', [1, 2, 3, 4])
@pytest.mark.parametrize('kappa', [1.0, 0.5, 2.0])
def test_sigma_points_reproduce_mean_and_covariance(d, kappa, gen):
    mean = torch.randn(3, d, generator=gen)
    cov = torch.stack([random_spd(d, gen) for _ in range(3)])
    pts, w = sigma_points(mean, cov, kappa)
    assert pts.shape == (3, 2 * d + 1, d) and w.shape == (2 * d + 1,)
    assert float(w.sum()) == pytest.approx(1.0, abs=1e-14)
    assert float(w[0]) == pytest.approx(kappa / (d + kappa))
    m = (w[:, None] * pts).sum(-2)
    c = torch.einsum('p,jpa,jpb->jab', w, pts - mean[:, None], pts - mean[:, None])
    torch.testing.assert_close(m, mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(c, cov, rtol=0, atol=1e-12)
    # the unscented transform is exact for quadratics: E[x^T A x] = m^T A m + tr(A Σ)
    a = torch.randn(d, d, generator=gen)
    quad_ut = (w * torch.einsum('jpa,ab,jpb->jp', pts, a, pts)).sum(-1)
    quad_exact = torch.einsum('ja,ab,jb->j', mean, a, mean) + torch.einsum('ab,jba->j', a, cov)
    torch.testing.assert_close(quad_ut, quad_exact, rtol=1e-10, atol=1e-10)


def test_sigma_points_shared_and_singular_covariance(gen):
    mean = torch.randn(4, 2, generator=gen)
    pts, w = sigma_points(mean, torch.diag(torch.tensor([0.04, 0.01])), 1.0)  # diagonal: element-wise sqrt
    torch.testing.assert_close(pts[:, 1] - mean, torch.tensor([math.sqrt(3) * 0.2, 0.0]).expand(4, 2))
    torch.testing.assert_close(pts[:, 4] - mean, torch.tensor([0.0, -math.sqrt(3) * 0.1]).expand(4, 2))
    pts0, _ = sigma_points(mean, torch.zeros(2, 2), 1.0)  # Dirac: every point is the mean
    torch.testing.assert_close(pts0, mean[:, None].expand(4, 5, 2))
    with pytest.raises(ValueError):
        sigma_weights(2, -2.0)


def se_numpy(a, b, ell):
    return np.exp(-0.5 * ((a[:, None] - b[None]) ** 2).sum(-1) / ell ** 2)


def test_unscented_kernel_dirac_is_se_and_gaussian_is_weighted_double_sum(gen):
    ell = 0.3
    k = UnscentedRBFKernel(2, kappa=1.0, clip_to_unit_cube=False)
    k.lengthscale = ell
    x = torch.rand(6, 2, generator=gen)
    kd = k(k.encode(Dirac(x)), k.encode(Dirac(x))).to_dense().detach().numpy()
    np.testing.assert_allclose(kd, se_numpy(x.numpy(), x.numpy(), ell), rtol=1e-12)
    covs = torch.stack([random_spd(2, gen, 0.1) for _ in range(6)])
    g = Gaussian(x, covs)
    kg = k(k.encode(g), k.encode(Dirac(x[:3]))).to_dense().detach().numpy()
    pts, w = sigma_points(x, covs, 1.0)
    pts, w = pts.numpy(), w.numpy()
    expected = np.array([[sum(w[p] * se_numpy(pts[i, p][None], x[j].numpy()[None], ell)[0, 0] for p in range(5))
                          for j in range(3)] for i in range(6)])
    np.testing.assert_allclose(kg, expected, rtol=1e-12)
    kgg = k(k.encode(g), k.encode(g)).to_dense().detach().numpy()
    expected_gg = np.array([[sum(w[p] * w[q] * se_numpy(pts[i, p][None], pts[j, q][None], ell)[0, 0]
                                 for p in range(5) for q in range(5)) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(kgg, expected_gg, rtol=1e-12)
    np.testing.assert_allclose(np.diag(kgg), k(k.encode(g), k.encode(g), diag=True).detach().numpy(), rtol=1e-12)
    assert np.linalg.eigvalsh(kgg).min() > -1e-12  # inner product of embeddings: PSD


def test_unscented_posterior_mean_is_sigma_point_average(gen):
    """UEI recommends by the unscented mean; the planner gets it from the kernel's posterior at N(x, Σ̂)."""
    gp = DistributionGP(UNIT, UnscentedRBFKernel(2), standardize=False, priors=False)
    x = torch.rand(15, 2, generator=gen)
    gp.set_data(Dirac(x), torch.sin(5 * x[:, 0]) + x[:, 1])
    gp.set_hyperparameters(lengthscale=0.2, outputscale=1.0, noise=0.01, mean=0.0)
    targets = torch.tensor([[0.3, 0.6], [0.5, 0.5]])
    cov = torch.eye(2) * 0.05 ** 2
    mean_ut, _ = gp.posterior(Gaussian(targets, cov))
    pts, w = sigma_points(targets, cov, 1.0)
    mean_pts, _ = gp.posterior(Dirac(pts.reshape(-1, 2)))
    torch.testing.assert_close(mean_ut, (mean_pts.reshape(2, 5) * w).sum(-1), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------ expected improvement
@pytest.mark.parametrize('mu,sigma,best', [(0.0, 1.0, 0.0), (0.3, 0.5, 1.0), (2.0, 0.2, 1.5), (-1.0, 2.0, 1.0)])
def test_expected_improvement_matches_monte_carlo(mu, sigma, best):
    gen = torch.Generator().manual_seed(7)
    z = mu + sigma * torch.randn(2_000_000, generator=gen)
    imp = (z - best).clamp_min(0)
    mc, se = float(imp.mean()), float(imp.std()) / math.sqrt(z.numel())
    ei = float(expected_improvement(torch.tensor(mu), torch.tensor(sigma), best))
    assert abs(ei - mc) < 4 * se + 1e-12, (ei, mc, se)
    assert float(log_expected_improvement(torch.tensor(mu), torch.tensor(sigma), best)) == pytest.approx(
        math.log(ei), rel=1e-9)


def test_log_ei_finite_with_gradient_far_in_the_tail():
    mu = torch.tensor(-30.0, requires_grad=True)
    v = log_expected_improvement(mu, torch.tensor(0.5), 1.0)
    v.backward()
    assert math.isfinite(float(v)) and float(mu.grad) > 0


def test_uei_is_weighted_ei_over_sigma_points(gen):
    gp = DistributionGP(UNIT, UnscentedRBFKernel(2), standardize=False, priors=False)
    x = torch.rand(12, 2, generator=gen)
    gp.set_data(Dirac(x), torch.cos(4 * x[:, 0]) * x[:, 1])
    gp.set_hyperparameters(lengthscale=0.2, outputscale=1.0, noise=0.01, mean=0.0)
    noise = GaussianExecutionNoise(torch.tensor([[0.01, 0.002], [0.002, 0.004]]))
    targets = torch.tensor([[0.2, 0.7], [0.6, 0.4], [0.98, 0.5]])
    plain = UnscentedExpectedImprovement(gp, noise, kappa=1.0, log=False, clip=True)
    logged = UnscentedExpectedImprovement(gp, noise, kappa=1.0, log=True, clip=True)
    best = float(gp.posterior(Dirac(x))[0].max())
    assert plain.best == pytest.approx(best)
    pts, w = sigma_points(targets, noise.covariance, 1.0)
    pts = pts.clamp(0, 1)
    expected = []
    for j in range(3):
        m, v = gp.posterior(Dirac(pts[j]))
        expected.append(float((w * expected_improvement(m, v.sqrt(), best)).sum()))
    got = plain(targets.unsqueeze(-2)).detach()
    torch.testing.assert_close(got, torch.tensor(expected), rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(logged(targets.unsqueeze(-2)).detach(), got.log(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ theory for beta
def test_prop3_and_theory_beta_against_hand_computation():
    # SE kernel, σ_f² = 1, ℓ = 0.1: ℓ_k = σ_f/ℓ = 10; Σ = diag(0.01, 0.01): tr = 0.02
    assert se_lipschitz_constant(0.1) == pytest.approx(10.0)
    assert se_lipschitz_constant([0.2, 0.1], outputscale=4.0) == pytest.approx(20.0)
    sigma_f = prop3_sigma_f(2.0, torch.eye(2) * 0.01, lengthscale=0.1)
    assert sigma_f == pytest.approx(2.0 * 10.0 * math.sqrt(0.02))
    sigma_nu = effective_noise_std(0.1, sigma_f)
    assert sigma_nu == pytest.approx(math.sqrt(8.0 + 0.01))
    assert input_noise_sigma_nu(2.0, torch.eye(2) * 0.01, 0.1, lengthscale=0.1) == pytest.approx(sigma_nu)

    # Eq. 20 with two Dirac observations 0.1 apart (ℓ = 0.1 => k12 = e^{-1/2}), λ = 0.5:
    # γ = ½ log det(I + K/λ) = ½ log((1 + 1/λ)² − (k12/λ)²) = ½ log(9 − 4/e)
    gp = DistributionGP(UNIT, standardize=False, priors=False)
    gp.set_data(Dirac(torch.tensor([[0.2, 0.5], [0.3, 0.5]])), torch.tensor([0.1, -0.2]))
    gp.set_hyperparameters(lengthscale=0.1, outputscale=1.0, noise=0.5, mean=0.0)
    gamma = 0.5 * math.log(9.0 - 4.0 / math.e)
    b, delta, s_nu = 2.5, 0.4, 0.7
    hand = b + s_nu * math.sqrt(2.0 * (gamma + 1.0 + math.log(1.0 / delta)))
    assert TheoryBeta(b, delta, s_nu)(2, gp) == pytest.approx(hand, rel=1e-12)


# ------------------------------------------------------------------ registry and planner wiring
def test_registry_describes_the_baselines():
    assert {'ugp_ucb', 'igp_ucb', 'uei'} <= set(METHODS)
    igp, uei = get_method('igp_ucb'), get_method('uei')
    assert igp.inputs == 'target' and not igp.robust_candidates
    assert uei.inputs == 'target' and uei.robust_candidates
    assert isinstance(uei().kernel(3), UnscentedRBFKernel) and uei().kernel(3).kappa == 1.0
    assert uei(kappa=0.5).kernel(3).kappa == 0.5


def test_method_settings_reach_the_method_and_unknown_ones_are_refused():
    planner = Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method='uei', method_settings={'kappa': 0.5})
    assert planner.method_object.kappa == 0.5 and planner.model.kernel.kappa == 0.5
    with pytest.raises(ValueError, match="method 'ugp_ucb'.*takes no settings"):
        Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method='ugp_ucb', method_settings={'kappa': 1})


@pytest.mark.parametrize('method', ['igp_ucb', 'uei'])
def test_baselines_train_on_targets_and_run_in_the_planner(method, gen):
    planner = Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method=method, n_initial=4, seed=1,
                      refit_every=0, beta=2.0)
    for _ in range(7):
        x = planner.suggest()
        assert ((x >= 0) & (x <= 1)).all()
        where = x + 0.05 * torch.randn(2, generator=gen)
        planner.observe(x, Gaussian((where + 0.02 * torch.randn(2, generator=gen)).reshape(1, 2),
                                    torch.eye(2) * 4e-4), float(torch.sin(3 * where).sum()))
    rec = planner.recommend()  # moves the last observation into the GP
    locs = planner.model.train_locations
    torch.testing.assert_close(locs.mean, planner.targets)          # GP inputs = commanded targets
    assert float(locs.covariance.abs().max()) == 0.0                # ... as points
    assert all(np.isfinite(d.acquisition_value) for d in planner.decisions[4:])
    mean, _ = planner.predict(planner.targets)
    assert rec.mean == pytest.approx(float(mean.max()))

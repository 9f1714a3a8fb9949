"""The best-posterior-mean-anywhere recommendation (``acquisition/recommendation.py``) against a dense grid of the
NumPy posterior mean of the robust objective, through the planner's ``'area_mean'`` rule and NES's own rule."""
import numpy as np
import torch

from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.planner import Planner

from . import oracle

BOX = torch.tensor([[0.0, 0.0], [4.0, 3.0]], dtype=DTYPE)
SIGMA = 0.3


def test_area_mean_is_the_grid_maximum_of_the_robust_mean_for_the_planner_rule_and_for_nes():
    recs = []
    for method, rule in (('ugp_ucb', 'area_mean'), ('nes_ep', None)):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method=method, n_initial=8, seed=4)
        for _ in range(8):
            x = p.suggest()
            p.observe(x, Dirac(x[None]), float(torch.sin(x[0]) * torch.cos(x[1])))
        recs.append(p.recommend(rule))
        hp = p.model.hyperparameters()
        locs = p.model.train_locations
        u = np.stack(np.meshgrid(np.linspace(0, 4, 161), np.linspace(0, 3, 121)), -1).reshape(-1, 2)
        mu, _ = oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), u,
                                 np.broadcast_to(np.eye(2) * SIGMA ** 2, (len(u), 2, 2)), hp['lengthscale'],
                                 hp['outputscale'], hp['noise'], hp['mean'])
        rec = recs[-1]
        assert rec.index == -1 and rec.mean >= mu.max() - 1e-6
        assert float(np.linalg.norm(rec.target.numpy() - u[np.argmax(mu)])) < 0.05
    torch.testing.assert_close(recs[0].target, recs[1].target, atol=1e-5, rtol=0)   # one rule, the same numbers


def _noisy_planner(n=14, seed=3):
    """A uGP-UCB planner fitted to ``n`` readings of a smooth field at scattered targets, odd readings with a
    reported variance, even ones without (their sensor's noise unknown)."""
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method='ugp_ucb', n_initial=8, seed=seed)
    rng = np.random.default_rng(seed)
    for k in range(n):
        x = torch.as_tensor(rng.uniform([0.0, 0.0], [4.0, 3.0]), dtype=DTYPE)
        y = float(torch.sin(x[0]) * torch.cos(x[1])) + 0.2 * rng.standard_normal()
        p.observe(x, Dirac(x[None]), y, reading_variance=0.04 if k % 2 else 0.0)
    return p


def test_sensor_mean_is_the_best_past_target_under_each_readings_own_noise():
    # oracle: the NumPy posterior with a per-reading noise -- the reported variance where one was reported, the
    # learned noise where none was -- and no learned extra noise on top
    p = _noisy_planner()
    rec = p.recommend('sensor_mean')
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    reported = p.model.reading_noise.numpy()
    lam = np.where(reported > 0, reported, hp['noise'])
    targets = p.targets.numpy()
    mu, cov = oracle.joint_posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), targets,
                                     np.broadcast_to(np.eye(2) * SIGMA ** 2, (len(targets), 2, 2)),
                                     hp['lengthscale'], hp['outputscale'], lam, hp['mean'])
    assert rec.index == int(np.argmax(mu))
    np.testing.assert_allclose(rec.mean, mu.max(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rec.std, np.sqrt(cov[rec.index, rec.index]), rtol=1e-3, atol=1e-6)


def test_sensor_mean_leaves_the_model_as_it_was():
    p = _noisy_planner()
    p.recommend('past_mean')                     # any refit due happens here
    before = p.model.hyperparameters()
    mean0, var0 = p.model.marginals(p.candidates(p.targets))
    p.recommend('sensor_mean')
    assert p.model.hyperparameters() == before
    mean1, var1 = p.model.marginals(p.candidates(p.targets))
    torch.testing.assert_close(mean1, mean0, rtol=0, atol=0)
    torch.testing.assert_close(var1, var0, rtol=0, atol=0)


def _peak_and_plateau(reading_variance):
    """A planner with readings on a 4 x 3 grid: 0 but for a plateau of 1.0 on the east column and one narrow peak of
    1.5 at (0.5, 1.5) (index 1), each with ``reading_variance``; hyperparameters pinned to what a fit on a
    narrow-peaked field gives: a lengthscale too long for the peak and a learned noise that explains it away."""
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method='ugp_ucb', n_initial=8, seed=1,
                refit_every=0)
    grid = [(x, y) for x in (0.5, 1.5, 2.5, 3.5) for y in (0.5, 1.5, 2.5)]
    for k, (x, y) in enumerate(grid):
        t = torch.tensor([x, y], dtype=DTYPE)
        p.observe(t, Dirac(t[None]), 1.5 if k == 1 else (1.0 if x > 3 else 0.0), reading_variance=reading_variance)
    p.model.set_hyperparameters(lengthscale=1.0, outputscale=1.0, noise=1.0, mean=0.0)
    return p, grid


def test_sensor_mean_keeps_a_narrow_peak_the_learned_noise_smooths_away():
    # on a quiet sensor (variance 1e-4) past_mean prefers the plateau; sensor_mean keeps the peak, as the highest
    # reading does
    p, grid = _peak_and_plateau(1e-4)
    assert p.recommend('highest_reading').index == 1
    assert p.recommend('sensor_mean').index == 1
    assert grid[p.recommend('past_mean').index][0] == 3.5


def test_top_mean_keeps_a_reading_clearly_above_the_rest_and_pools_a_tie():
    # quiet sensor: the peak is 0.5 above the plateau, far beyond 1.96 sqrt(2) x 0.01 -> kept. Noisy sensor (std
    # 0.5): 0.5 is within the band 1.39, so the peak and the plateau tie and the posterior mean picks the plateau
    quiet, _ = _peak_and_plateau(1e-4)
    assert quiet.recommend('top_mean').index == 1
    noisy, grid = _peak_and_plateau(0.25)
    rec = noisy.recommend('top_mean')
    assert grid[rec.index][0] == 3.5 and rec.index == noisy.recommend('past_mean').index


def test_top_mean_is_the_best_posterior_mean_among_readings_within_the_band_of_the_highest():
    # oracle: the band written out from each reading's variance (reported, else the learned noise) and the NumPy
    # posterior mean of the candidate distributions at the past targets
    p = _noisy_planner(n=16, seed=5)
    rec = p.recommend('top_mean')
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    y = p.y.numpy()
    var = np.where(p.model.reading_noise.numpy() > 0, p.model.reading_noise.numpy(), hp['noise'])
    top = int(np.argmax(y))
    tied = y >= y[top] - 1.96 * np.sqrt(2) * np.sqrt((var + var[top]) / 2)
    targets = p.targets.numpy()
    mu, _ = oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), targets,
                             np.broadcast_to(np.eye(2) * SIGMA ** 2, (len(targets), 2, 2)), hp['lengthscale'],
                             hp['outputscale'], hp['noise'] + p.model.reading_noise.numpy(), hp['mean'])
    assert 1 < tied.sum() < len(y)                         # the case where the band matters
    assert rec.index == int(np.argmax(np.where(tied, mu, -np.inf)))

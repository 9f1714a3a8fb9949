"""The recommendation rules (``acquisition/recommendation.py``): the best posterior mean anywhere against a dense grid
of the NumPy posterior mean of the robust objective, through the planner's ``'area_mean'`` rule and NES's own rule;
the rules over past readings against the NumPy posterior at the places measured, and the place they name: where the
reading was taken, not the target the rover was sent to."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.recommendation import RECOMMENDATION_RULES
from uncertain_bo.distributions import DTYPE, Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner
from uncertain_bo.team.mission import TeamPlanner

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


PEAK = torch.tensor([3.0, 2.0], dtype=DTYPE)


def _peak(x):
    return float(torch.exp(-((torch.as_tensor(x, dtype=DTYPE) - PEAK) ** 2).sum() / 0.5))


def _missed_target_planner(method='ugp_ucb', peak_location=PEAK):
    """Readings of a peak at (3, 2) on a 3 x 3 grid of reached targets (Dirac locations), and one measurement (index 9)
    whose target (0.5, 0.5) the rover never reached (its goal timed out): it stopped 2.9 m away, at ``peak_location``
    (a Gaussian location, std 0.1 m), where the reading is the highest of the run."""
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method=method, n_initial=8, seed=2)
    for x in (0.5, 1.5, 2.5):
        for y in (0.5, 1.5, 2.5):
            t = torch.tensor([x, y], dtype=DTYPE)
            p.observe(t, Dirac(t[None]), _peak(t))
    p.observe(torch.tensor([0.5, 0.5], dtype=DTYPE),
              Gaussian(peak_location.reshape(1, 2), 0.01 * torch.eye(2, dtype=DTYPE)[None]), 1.0, goal_timed_out=True)
    return p


@pytest.mark.parametrize('rule', [r for r in RECOMMENDATION_RULES if r != 'area_mean'])
def test_every_rule_over_readings_names_where_the_reading_was_taken_not_the_target_sent(rule):
    p = _missed_target_planner()
    rec = p.recommend(rule)
    assert rec.index == 9 and rec.measured
    torch.testing.assert_close(rec.target, PEAK)                  # the reading's location mean, not (0.5, 0.5)
    torch.testing.assert_close(rec.location.covariance[0], 0.01 * torch.eye(2, dtype=DTYPE))
    np.testing.assert_allclose(rec.where_measured()['covariance'], [[0.01, 0.0], [0.0, 0.01]])


@pytest.mark.parametrize('method', ['botorch_robust', 'ugp_risk', 'drbqo'])
def test_the_methods_own_rules_over_past_measurements_name_a_measured_place_too(method):
    p = _missed_target_planner(method)
    rec = p.recommend()
    assert rec.index >= 0 and rec.measured
    # the reached targets were measured at their targets (Dirac locations); the missed one where it stopped
    torch.testing.assert_close(rec.target, p.locations.mean[rec.index])
    torch.testing.assert_close(rec.location.mean, p.locations.mean[rec.index:rec.index + 1])


def _oracle_robust_mean(p, points):
    """NumPy posterior mean of the robust objective at N(points, Σ_E) ``(k, 2)``."""
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    mu, _ = oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), points,
                             np.broadcast_to(np.eye(2) * SIGMA ** 2, (len(points), 2, 2)), hp['lengthscale'],
                             hp['outputscale'], hp['noise'] + p.model.reading_noise.numpy(), hp['mean'])
    return mu


def test_past_mean_ranks_reached_targets_and_where_a_missed_one_was_measured_instead():
    # oracle: the NumPy posterior mean at N(place, Σ_E), the place of a reached target the target, of the missed
    # one (index 9) where its reading was taken
    p = _missed_target_planner()
    rec = p.recommend('past_mean')
    places = p.targets.numpy().copy()
    places[9] = PEAK.numpy()
    mu = _oracle_robust_mean(p, places)
    assert rec.index == int(np.argmax(mu)) == 9
    np.testing.assert_allclose(rec.mean, mu.max(), rtol=1e-4, atol=1e-6)


def test_a_reached_target_is_its_measurements_place_for_every_rule():
    # every target reached, each reading taken 0.3 m off it (execution noise): the rules rank the commands (the
    # robust objective is defined over them) and name the target, with the location distribution of its reading
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method='ugp_ucb', n_initial=8, seed=2)
    offset = torch.tensor([0.3, 0.0], dtype=DTYPE)
    for x in (0.5, 1.5, 2.5, 3.5):
        for y in (0.5, 1.5, 2.5):
            t = torch.tensor([x, y], dtype=DTYPE)
            p.observe(t, Gaussian((t + offset)[None], 0.01 * torch.eye(2, dtype=DTYPE)[None]), _peak(t + offset))
    for rule in [r for r in RECOMMENDATION_RULES if r != 'area_mean']:
        rec = p.recommend(rule)
        torch.testing.assert_close(rec.target, p.targets[rec.index])
        torch.testing.assert_close(rec.where_measured()['mean'], (p.targets[rec.index] + offset).tolist())
    assert p.recommend('past_mean').index == int(np.argmax(_oracle_robust_mean(p, p.targets.numpy())))
    assert p.recommend('highest_reading').index == int(torch.argmax(p.y))


def test_a_reading_taken_outside_the_search_bounds_is_reported_at_the_nearest_point_of_them():
    p = _missed_target_planner(peak_location=torch.tensor([4.4, 2.0], dtype=DTYPE))     # the box ends at x = 4
    rec = p.recommend('highest_reading')
    assert rec.index == 9
    torch.testing.assert_close(rec.target, torch.tensor([4.0, 2.0], dtype=DTYPE))
    torch.testing.assert_close(rec.location.mean[0], torch.tensor([4.4, 2.0], dtype=DTYPE))


def test_the_teams_recommendation_names_where_the_reading_was_taken():
    team = TeamPlanner()
    shared = _missed_target_planner()
    for name in ('rover0', 'rover1'):
        team.add_rover(name, shared)
    team.record('rover0', shared.recommend('highest_reading'))
    lone = _missed_target_planner(peak_location=torch.tensor([2.9, 2.1], dtype=DTYPE))   # without sharing
    solo = TeamPlanner()
    solo.add_rover('rover0', shared)
    solo.add_rover('rover1', lone)
    solo.record('rover0', shared.recommend('sensor_mean'))
    solo.record('rover1', lone.recommend('sensor_mean'))
    for t in (team, solo):
        rec = t.recommend()
        planner = t.recommending_planner()
        assert rec.index == 9
        torch.testing.assert_close(rec.target, planner.locations.mean[9])

"""Pathwise Thompson sampling of the robust objective (``acquisition/thompson.py``): over many decisions' paths the
score's Monte Carlo mean and variance approach the closed-form posterior of the robust objective (NumPy posterior of
the expected SE kernel, ``oracle.py``); the path is a deterministic function of the decision's seed; the method through
the planner (one rover, a batch, pending targets, equal planners decide the same)."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.thompson import RobustPathSample, RobustThompson, path_generator
from uncertain_bo.models.sample_paths import PosteriorSamplePaths

from . import oracle
from .gaussian_inputs import (BOX, EXEC_COV, LAM, MEAN0, SF2, ELL, gaussian_inputs_gp, noise_model,
                              observed_planner)

TARGETS = np.array([[0.0, 11.0], [3.3, 12.5], [6.0, 14.0], [-1.0, 13.0]])


@pytest.fixture(scope='module')
def data():
    return gaussian_inputs_gp()


def test_paths_mean_and_variance_approach_the_robust_posterior_by_monte_carlo(data):
    """One path per decision seed, as the method draws them: N = 600 decisions."""
    gp, x, covs, y = data
    mu, var = oracle.posterior(x, covs, y, TARGETS, [EXEC_COV] * len(TARGETS), ELL, SF2, LAM, MEAN0)
    n = 600
    with torch.no_grad():
        draws = np.stack([RobustPathSample(gp, noise_model(), PosteriorSamplePaths(gp, 1, 1000, path_generator(s)))
                          .score(torch.as_tensor(TARGETS)).numpy() for s in range(n)])
    se = np.sqrt(var / n)
    assert (np.abs(draws.mean(0) - mu) < 4 * se).all(), (draws.mean(0), mu, se)
    # sample variance: chi-square with n-1 dof has relative sd sqrt(2/(n-1)) ~ 0.058; RFF error of the prior term
    np.testing.assert_allclose(draws.var(0, ddof=1), var, rtol=0.3)
    # and the draws differ between decisions (the randomness that keeps rovers apart)
    assert draws.std(0).min() > 0


def test_the_path_is_a_function_of_the_decision_seed(data):
    gp = data[0]
    t = torch.as_tensor(TARGETS)

    def score(seed):
        with torch.no_grad():
            return RobustPathSample(gp, noise_model(), PosteriorSamplePaths(gp, 1, 200, path_generator(seed))).score(t)
    assert torch.equal(score(5), score(5))
    assert not torch.allclose(score(5), score(6))


def planner(seed=3):
    return observed_planner('ugp_ts', seed)


def test_one_rover_and_a_batch_through_the_planner():
    assert RobustThompson.fantasize_pending is False and not RobustThompson.uses_beta
    one = planner().suggest()
    assert one.shape == (2,) and ((one >= BOX[0]) & (one <= BOX[1])).all()
    torch.testing.assert_close(planner().suggest(), one)           # equal planners (a resumed run) decide the same
    assert not torch.allclose(planner(seed=4).suggest(), one)      # another run seed: another path
    batch = planner().suggest(q=3)
    assert batch.shape == (3, 2) and torch.pdist(batch).min() > 0.05
    x = planner().suggest(pending=batch[:2], position=BOX.mean(0))
    assert x.shape == (2,) and ((x >= BOX[0]) & (x <= BOX[1])).all()


def test_bad_setting_is_one_line_error():
    with pytest.raises(ValueError, match='n_features'):
        RobustThompson(n_features=0)

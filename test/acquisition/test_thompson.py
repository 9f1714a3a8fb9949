"""Pathwise Thompson sampling of the robust objective (``acquisition/thompson.py``): over many decisions' paths the
score's Monte Carlo mean and variance approach the closed-form posterior of the robust objective (NumPy posterior of
the expected SE kernel, ``oracle.py``); the path is a deterministic function of the decision's seed; the method through
the planner (one rover, a batch, pending targets, equal planners decide the same)."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.thompson import RobustPathSample, RobustThompson, path_generator
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.models.sample_paths import PosteriorSamplePaths
from uncertain_bo.optim import OptimizerSettings
from uncertain_bo.planner import Planner

from . import oracle

DT = torch.float64
BOX = torch.tensor([[-2.0, 10.0], [6.0, 14.0]], dtype=DT)
ELL, SF2, LAM, MEAN0 = (1.5, 0.8), 2.0, 0.05, 0.3
EXEC_COV = np.array([[0.09, 0.02], [0.02, 0.04]])
FAST = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=50)
TARGETS = np.array([[0.0, 11.0], [3.3, 12.5], [6.0, 14.0], [-1.0, 13.0]])


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(7)
    x = rng.uniform(BOX[0].numpy(), BOX[1].numpy(), (9, 2))
    a = rng.normal(size=(9, 2, 2)) * 0.2
    covs = a @ a.transpose(0, 2, 1)
    y = np.sin(x[:, 0]) + 0.5 * np.cos(x[:, 1])
    gp = DistributionGP(BOX, standardize=False, priors=False)
    gp.set_data(Gaussian(torch.as_tensor(x), torch.as_tensor(covs)), torch.as_tensor(y))
    gp.set_hyperparameters(lengthscale=list(ELL), outputscale=SF2, noise=LAM, mean=MEAN0)
    return gp, x, covs, y


def noise_model():
    return GaussianExecutionNoise(torch.as_tensor(EXEC_COV))


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


def field(x):
    return float(torch.sin(x[0]) + torch.cos(0.8 * x[1]))


def planner(seed=3):
    p = Planner(BOX, noise_model(), method='ugp_ts', n_initial=3, seed=seed, optimizer=FAST)
    g = torch.Generator().manual_seed(0)
    for _ in range(4):
        x = p.suggest()
        ex = x + 0.1 * torch.randn(2, generator=g, dtype=DT)
        p.observe(x, Gaussian(ex[None], 0.01 * torch.eye(2, dtype=DT)[None]), field(ex))
    return p


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

"""NES's baselines on BoTorch's acquisitions (``acquisition/bo_uu.py``): BO-UU UCB is m_g + 2 σ_g (BoTorch's β = 4),
BO-UU EI is log EI of the robust objective over the best mean anywhere, standard EI the same on points — each against
the NumPy posterior (``oracle.py``) — and MES is positive where the model is uncertain."""
import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

from . import oracle

BOX = torch.tensor([[0.0], [1.0]], dtype=DTYPE)
SIGMA = 0.05
FAST = OptimizerSettings(num_restarts=3, raw_samples=128, maxiter=100)


def planner(method):
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 1), method=method, n_initial=5, seed=0, optimizer=FAST)
    for _ in range(5):
        x = p.suggest()
        p.observe(x, Dirac(x[None]), float(torch.sin(5 * math.pi * x[0] ** 2) + 0.5 * x[0]))
    return p


def closed_form(p, x, robust=True):
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    cov = np.full((len(x), 1, 1), SIGMA ** 2 if robust else 0.0)
    return oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), x, cov,
                            hp['lengthscale'], hp['outputscale'], hp['noise'], hp['mean'])


X = np.array([[0.1], [0.45], [0.9]])


def test_bo_uu_ucb_is_the_mean_plus_two_standard_deviations_of_g():
    p = planner('bo_uu_ucb')
    acq = p.method_object.acquisition(p.snapshot())
    mu, var = closed_form(p, X)
    np.testing.assert_allclose(acq(torch.as_tensor(X).unsqueeze(-2)).detach().numpy(), mu + 2 * np.sqrt(var),
                               rtol=1e-8)
    p.suggest()
    assert p.decisions[-1].beta == 2.0          # recorded as the weight of σ, not BoTorch's β = 4


@pytest.mark.parametrize('method, robust', [('bo_uu_ei', True), ('ei', False)])
def test_ei_methods_are_log_ei_over_the_best_mean_anywhere(method, robust):
    p = planner(method)
    acq = p.method_object.acquisition(p.snapshot())
    grid = np.linspace(0, 1, 2001)[:, None]
    incumbent = closed_form(p, grid, robust)[0].max()
    assert float(acq.best_f) == pytest.approx(incumbent, abs=1e-6)        # the maximiser found the grid's best
    mu, var = closed_form(p, X, robust)
    s = np.sqrt(var)
    u = (mu - float(acq.best_f)) / s
    expected = np.log(s * (u * norm.cdf(u) + norm.pdf(u)))
    np.testing.assert_allclose(acq(torch.as_tensor(X).unsqueeze(-2)).detach().numpy(), expected, rtol=1e-6)


def test_mes_is_positive_and_largest_where_the_robust_objective_is_uncertain():
    p = planner('bo_uu_mes')
    acq = p.method_object.acquisition(p.snapshot())
    grid = torch.linspace(0, 1, 101, dtype=DTYPE)[:, None, None]
    with torch.no_grad():
        values = acq(grid)
    assert (values > -1e-9).all()
    _, var = closed_form(p, grid[:, 0].numpy())
    assert np.corrcoef(values.numpy(), var)[0, 1] > 0.3
    x = p.suggest()
    assert p.decisions[-1].phase == 'acquisition' and 0 <= float(x) <= 1

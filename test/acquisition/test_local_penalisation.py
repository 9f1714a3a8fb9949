"""Local penalisation (``acquisition/local_penalisation.py``): the penaliser against ``math.erfc`` at hand-computed z;
the penalised acquisition against softplus of the closed-form uGP-UCB (NumPy posterior, ``oracle.py``) — lowered in
the ball of a pending target, unchanged far away; L against finite differences of the NumPy posterior mean; the
method through the planner (q = 1 decides as uGP-UCB; a batch without fantasies)."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.local_penalisation import (LocalPenalisation, LocallyPenalisedUCB, lipschitz_constant,
                                                         local_penaliser)

from . import oracle
from .gaussian_inputs import (BOX, DT, EXEC_COV, LAM, MEAN0, SF2, ELL, gaussian_inputs_gp, noise_model,
                              observed_planner)


@pytest.fixture(scope='module')
def data():
    return gaussian_inputs_gp()


def robust_posterior(data, targets):
    gp, x, covs, y = data
    return oracle.posterior(x, covs, y, np.asarray(targets), [EXEC_COV] * len(targets), ELL, SF2, LAM, MEAN0)


def test_penaliser_is_half_erfc_of_minus_z_at_hand_computed_z():
    # centre (0, 0): mu 6, std 1.5; L = 2, M = 10. Target (3, 4) is 5 m away: z = (2*5 - 10 + 6) / (sqrt(2)*1.5)
    centres = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)
    targets = torch.tensor([[3.0, 4.0], [0.0, 0.0], [1.0, 1.0]], dtype=DT)
    got = local_penaliser(targets, centres, torch.tensor([6.0, 9.5], dtype=DT), torch.tensor([1.5, 0.25], dtype=DT),
                          2.0, 10.0)
    zs = [[6 / (math.sqrt(2) * 1.5), (2 * math.sqrt(13) - 0.5) / (math.sqrt(2) * 0.25)],
          [-4 / (math.sqrt(2) * 1.5), (2 * math.sqrt(2) - 0.5) / (math.sqrt(2) * 0.25)],
          [(2 * math.sqrt(2) - 4) / (math.sqrt(2) * 1.5), -0.5 / (math.sqrt(2) * 0.25)]]
    want = [[0.5 * math.erfc(-z) for z in row] for row in zs]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


def test_penaliser_rejects_a_negative_lipschitz_constant_or_zero_std():
    c = torch.zeros(1, 2, dtype=DT)
    with pytest.raises(ValueError, match='Lipschitz'):
        local_penaliser(c, c, torch.zeros(1, dtype=DT), torch.ones(1, dtype=DT), -1.0, 0.0)
    with pytest.raises(ValueError, match='standard deviations'):
        local_penaliser(c, c, torch.zeros(1, dtype=DT), torch.zeros(1, dtype=DT), 1.0, 0.0)


def test_penalised_acquisition_is_lowered_near_a_pending_target_and_unchanged_far_away(data):
    gp = data[0]
    beta, lipschitz = 2.0, 3.0
    pending = np.array([[0.0, 11.0]])
    mu_j, var_j = robust_posterior(data, pending)
    best = float(mu_j[0]) + 1.0             # ball radius (M - mu_j) / L = 1/3 m
    near = np.array([[0.0, 11.0], [0.1, 11.05]])
    far = np.array([[5.5, 13.8], [5.0, 10.2]])    # > 5 m away: L * dist - 1 >> sqrt(2) sigma_j
    acq = LocallyPenalisedUCB(gp, noise_model(), beta ** 2, lipschitz, best, X_pending=torch.as_tensor(pending))
    points = np.concatenate([near, far])
    mu, var = robust_posterior(data, points)
    softplus_ucb = np.log1p(np.exp(mu + beta * np.sqrt(var)))
    got = acq.score(torch.as_tensor(points)).detach().numpy()
    z = (lipschitz * np.linalg.norm(points - pending, axis=1) - best + mu_j[0]) / np.sqrt(2 * var_j[0])
    from scipy.special import erfc
    np.testing.assert_allclose(got, softplus_ucb * 0.5 * erfc(-z), rtol=1e-9)
    assert (got[:2] < 0.5 * softplus_ucb[:2]).all()                       # inside the ball: less than half
    np.testing.assert_allclose(got[2:], softplus_ucb[2:], rtol=1e-6)      # far away: as without pending targets
    # the model is not conditioned on the pending target (no fantasy): the UCB part is the plain model's
    assert acq.scoring_model is gp


def test_lipschitz_constant_matches_finite_differences_of_the_robust_posterior_mean(data):
    gp = data[0]
    got = lipschitz_constant(gp, noise_model(), BOX, n=2048, seed=0)
    g0, g1 = np.meshgrid(np.linspace(-2, 6, 33), np.linspace(10, 14, 17), indexing='ij')
    grid = np.stack([g0.ravel(), g1.ravel()], -1)
    h = 1e-4
    grads = []
    for e in np.eye(2):
        hi, lo = robust_posterior(data, grid + h * e)[0], robust_posterior(data, grid - h * e)[0]
        grads.append((hi - lo) / (2 * h))
    fd_max = float(np.hypot(*grads).max())
    assert 0.97 * fd_max <= got <= 1.05 * fd_max, (got, fd_max)


def planner(method, seed=3):
    return observed_planner(method, seed)


def test_one_rover_without_pending_targets_decides_as_ugp_ucb():
    assert LocalPenalisation.fantasize_pending is False and LocalPenalisation.uses_beta
    torch.testing.assert_close(planner('ugp_lp').suggest(), planner('ugp_ucb').suggest(), rtol=1e-6, atol=1e-6)


def test_a_batch_keeps_its_picks_apart_without_fantasies():
    p = planner('ugp_lp')
    batch = p.suggest(q=3)
    assert batch.shape == (3, 2) and ((batch >= BOX[0]) & (batch <= BOX[1])).all()
    assert torch.pdist(batch).min() > 0.05
    # another rover's target pending: the pick is not that target
    pending = batch[:1]
    x = planner('ugp_lp').suggest(pending=pending, position=BOX.mean(0))
    assert (x - pending[0]).norm() > 0.05


def test_bad_setting_is_one_line_error():
    with pytest.raises(ValueError, match='n_lipschitz'):
        LocalPenalisation(n_lipschitz=0)

"""The confirmation phase (``acquisition/confirmation.py``): the last readings of the budget re-measure measured places,
the more uncertain of the posterior-mean leader and its challenger (checked against the NumPy posterior of the robust
objective), and on a line of readings whose highest is a noise spike the readings spent there leave the
posterior-mean recommendation on the true peak while the highest reading stays on the spike."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

from . import oracle

BOX = torch.tensor([[0.0, 0.0], [10.0, 1.0]], dtype=DTYPE)
SIGMA = 0.05                     # execution noise: the candidate distribution of a place
PLACES = [(x + 0.5, 0.5) for x in range(10)]
PEAK, SPIKE = 7, 1               # the true peak at x = 7.5; a noise spike at x = 1.5


def truth(x: float) -> float:
    return math.exp(-(x - 7.5) ** 2 / 2.0)


def spiked_line(budget, confirmation_readings):
    """A uGP-UCB planner (hyperparameters pinned: lengthscale 1, signal variance 1, noise 0.04) holding one reading at
    each of ten places on a line: the truth plus 0.1, less 0.1 in turn, but the reading at x = 1.5 is 1.3 above the
    truth (the highest of all)."""
    p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method='ugp_ucb', n_initial=4, seed=0,
                refit_every=0, budget=budget, confirmation_readings=confirmation_readings)
    for k, (x, y) in enumerate(PLACES):
        t = torch.tensor([x, y], dtype=DTYPE)
        p.observe(t, Dirac(t[None]), truth(x) + (1.3 if k == SPIKE else 0.1 * (-1) ** k))
    p.model.set_hyperparameters(lengthscale=1.0, outputscale=1.0, noise=0.04, mean=0.0)
    return p


def test_confirmation_re_measures_the_more_uncertain_of_leader_and_challenger():
    p = spiked_line(budget=11, confirmation_readings=1)
    target = p.suggest()
    assert p.decisions[-1].phase == 'confirmation'
    # oracle: the NumPy posterior of the robust objective at the ten places
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    places = np.array(PLACES)
    mu, cov = oracle.joint_posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), places,
                                     np.broadcast_to(np.eye(2) * SIGMA ** 2, (10, 2, 2)), hp['lengthscale'],
                                     hp['outputscale'], hp['noise'], hp['mean'])
    sd = np.sqrt(np.diag(cov))
    leader = int(np.argmax(mu))
    others = [i for i in range(10) if i != leader]      # places 1 m apart: none within 2 x 0.05 m of the leader
    challenger = others[int(np.argmax((mu + 2 * sd)[others]))]
    expected = challenger if sd[challenger] > sd[leader] else leader
    np.testing.assert_allclose(target.numpy(), places[expected])
    assert {leader, challenger} == {PEAK, SPIKE}        # the spike is a contender, settled by re-measuring


def test_confirmation_readings_settle_a_noise_spike_for_the_posterior_mean():
    p = spiked_line(budget=16, confirmation_readings=6)
    for j in range(6):
        t = p.suggest()
        assert p.decisions[-1].phase == 'confirmation'
        assert min(float(torch.dist(t, torch.tensor(q, dtype=DTYPE))) for q in PLACES) < 1e-9   # a measured place
        p.observe(t, Dirac(t[None]), truth(float(t[0])) + 0.05 * (-1) ** j)
    assert p.recommend('highest_reading').target[0] == pytest.approx(1.5)   # the spike stays the highest reading
    assert p.recommend('past_mean').target[0] == pytest.approx(7.5)         # the true peak


def test_no_confirmation_before_the_last_readings_or_without_a_budget():
    for budget, k in ((12, 1), (None, 5), (11, 0)):
        p = spiked_line(budget=budget, confirmation_readings=k)
        p.suggest()
        assert p.decisions[-1].phase == 'acquisition'
    with pytest.raises(ValueError, match='confirmation_readings'):
        Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), confirmation_readings=-1)

"""Travel-aware acquisition and the online execution-noise model.

Oracles: the penalty in closed form; the learned covariance against the moment formula on synthetic
closed-loop arrivals, and against the true executed scatter of a simulated mission.
"""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition import UpperConfidenceBound
from uncertain_bo.acquisition.travel import TravelPenalty
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [30.0, 40.0]], dtype=torch.float64)   # diagonal 50 m


def _planner(**kw):
    return Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=4, seed=2, **kw)


def _observe(p, target, mean, std=0.3, y=1.0, **meta):
    cov = torch.eye(2, dtype=torch.float64)[None] * std ** 2
    p.observe(torch.as_tensor(target, dtype=torch.float64), Gaussian(torch.as_tensor(mean, dtype=torch.float64)[None],
                                                                     cov), y, **meta)


def test_travel_penalty_is_the_closed_form():
    p = _planner()
    for t in ([3.0, 4.0], [20.0, 30.0], [25.0, 5.0], [10.0, 20.0]):
        _observe(p, t, t, y=float(sum(t)) / 10)
    p.recommend()  # fits
    inner = UpperConfidenceBound(p.model, p.candidates, 2.0)
    pos = torch.tensor([3.0, 4.0], dtype=torch.float64)
    acq = TravelPenalty(inner, pos, BOX, weight=2.0, signal_std=5.0)
    x = torch.tensor([[3.0, 4.0], [21.0, 28.0], [30.0, 40.0]], dtype=torch.float64)
    expected = inner.score(x) - 2.0 * 5.0 * (x - pos).norm(dim=-1) / 50.0
    assert torch.allclose(acq.score(x), expected)
    assert torch.allclose(acq.score(x[:1]), inner.score(x[:1]))   # no cost where the rover is
    with pytest.raises(ValueError):
        TravelPenalty(inner, pos, BOX, weight=-1.0, signal_std=1.0)


def test_a_large_travel_weight_keeps_the_next_target_close():
    far = []
    for w in (0.0, 50.0):
        p = _planner(travel_weight=w)
        for t in ([3.0, 4.0], [27.0, 36.0], [27.0, 4.0], [3.0, 36.0], [15.0, 20.0]):
            _observe(p, t, t, y=float(np.sin(t[0] / 4) + np.cos(t[1] / 5)))
        x = p.suggest()
        far.append(float((x - p.position).norm()))
    assert far[1] < far[0] and far[1] < 5.0


def test_learned_execution_covariance_is_the_shrunk_closed_loop_moment():
    rng = np.random.default_rng(1)
    prior = GaussianExecutionNoise.isotropic(0.5, 2)
    p = Planner(BOX, prior, n_initial=4, seed=2, execution_noise_prior_weight=3.0)
    assert torch.allclose(p.learned_execution_covariance(), prior.covariance)
    s, n = torch.zeros(2, 2, dtype=torch.float64), 0
    for i in range(12):
        target = torch.tensor(rng.uniform([0, 0], [30, 40]), dtype=torch.float64)
        e = torch.tensor(rng.normal(0, [0.2, 0.1]), dtype=torch.float64)
        std = 0.3 + 0.05 * i
        timed_out = i % 5 == 4   # the rover never got there: says nothing about execution noise
        _observe(p, target, target + e, std=std, goal_timed_out=timed_out)
        if not timed_out:
            s += torch.outer(e, e) + torch.eye(2, dtype=torch.float64) * std ** 2
            n += 1
    expected = (3.0 * prior.covariance + s) / (3.0 + n)
    assert torch.allclose(p.learned_execution_covariance(), expected)
    assert torch.allclose(p.execution_noise.covariance, expected)      # candidates use it
    assert Planner(BOX, prior).learned_execution_covariance() is None    # fixed by default


def test_learned_execution_noise_resumes_from_the_journal(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), execution_noise_prior_weight=1.0, journal=journal)
    _observe(p, [5.0, 5.0], [5.4, 4.8])
    _observe(p, [9.0, 5.0], [9.0, 5.0], goal_timed_out=True)
    q = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), execution_noise_prior_weight=1.0, journal=journal)
    assert torch.allclose(q.learned_execution_covariance(), p.learned_execution_covariance())


def test_learning_needs_a_gaussian_prior():
    with pytest.raises(ValueError, match='GaussianExecutionNoise'):
        Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), execution_noise_prior_weight=-1.0)


@pytest.mark.slow
def test_learned_execution_noise_matches_the_simulated_rovers_true_scatter():
    """On the simulated rover (EKF + pure pursuit on the estimate) the learned covariance, without a prior,
    matches the scatter of the true executed positions around their targets."""
    from uncertain_bo.benchmarks import BenchSettings, run

    settings = BenchSettings(explorer=(('learn_execution_noise', True), ('execution_noise_prior_weight', 0.0)))
    result = run('rover', 'lawnmower', 0, 30, settings)
    e = np.array([np.subtract(r['executed'], r['target']) for r in result['records'] if not r['timed_out']])
    true_std = np.sqrt((e ** 2).mean(0))
    learned = result['planner']['execution_noise']
    std = np.array([float(v) for v in learned[learned.index('[') + 1:learned.index(']')].split(',')])
    np.testing.assert_allclose(std, true_std, rtol=0.25)

"""The execution noise learned online (ExecutionNoiseEstimator, through the Planner and on its own).

Oracles: the learned covariance against the moment formula on synthetic
closed-loop arrivals, against the true executed offsets of Monte Carlo arrivals simulated closed loop and open
loop (each form unbiased under its own execution model, biased under the other), against an eigenvalue clip by
NumPy, and against the true executed scatter of a simulated mission.
"""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.execution_noise_estimator import ExecutionNoiseEstimator
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [30.0, 40.0]], dtype=torch.float64)   # diagonal 50 m


def _observe(p, target, mean, std=0.3, y=1.0, **meta):
    cov = torch.eye(2, dtype=torch.float64)[None] * std ** 2
    p.observe(torch.as_tensor(target, dtype=torch.float64), Gaussian(torch.as_tensor(mean, dtype=torch.float64)[None],
                                                                     cov), y, **meta)


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


def _arrivals(loop, n, rng):
    """Monte Carlo (target, estimate, Σ^L) triples and the true executed offsets ξ = x̃ − x.

    Open loop: x̃ = x + ξ, ξ ~ N(0, Σ); x̂ = x̃ + η. Closed loop: the controller stops when the estimate is within a
    residual r ~ N(0, R) of the target, x̂ = x + r, and the truth is x̃ = x̂ − η. η ~ N(0, s_i² I) with s_i varying
    per arrival in both."""
    sigma = np.array([[0.30, 0.06], [0.06, 0.20]])                     # m²
    targets = rng.uniform([0.0, 0.0], [30.0, 40.0], (n, 2))
    loc_std = rng.uniform(0.2, 0.5, n)
    eta = loc_std[:, None] * rng.standard_normal((n, 2))
    if loop == 'open_loop':
        executed = targets + rng.multivariate_normal([0.0, 0.0], sigma, n)
        estimates = executed + eta
    else:
        estimates = targets + rng.multivariate_normal([0.0, 0.0], sigma, n)
        executed = estimates - eta
    return targets, estimates, loc_std, executed - targets


def _learn(loop, targets, estimates, loc_std, prior_weight=0.0):
    p = Planner(BOX, GaussianExecutionNoise.isotropic(3.0, 2), n_initial=1, execution_noise_prior_weight=prior_weight,
                execution_feedback=loop)
    for x, m, s in zip(targets, estimates, loc_std):
        _observe(p, x.tolist(), m.tolist(), std=float(s))
    return p.learned_execution_covariance().numpy()


@pytest.mark.parametrize('loop', ['closed_loop', 'open_loop'])
def test_learned_execution_covariance_converges_under_its_own_execution_model(loop):
    """Σ̂ from 500 simulated arrivals matches the second moment of the true executed offsets (the largest entry
    of their difference: median 0.022 m², 99th percentile 0.05 m² over 200 seeds); the other loop's form is off by
    ±2 E[Σ^L] ≈ 0.26 m² on the diagonal."""
    targets, estimates, loc_std, xi = _arrivals(loop, 500, np.random.default_rng(7))
    truth = xi.T @ xi / len(xi)
    np.testing.assert_allclose(_learn(loop, targets, estimates, loc_std), truth, atol=0.06, rtol=0)
    other = 'open_loop' if loop == 'closed_loop' else 'closed_loop'
    bias = np.diag(_learn(other, targets, estimates, loc_std) - truth)
    expected_bias = 2 * (loc_std ** 2).mean() * (1 if loop == 'open_loop' else -1)
    np.testing.assert_allclose(bias, expected_bias, atol=0.06)
    assert abs(expected_bias) > 0.2


def test_open_loop_estimate_is_projected_to_the_nearest_psd_matrix():
    """Arrivals closer to their targets than the reported localisation covariance allows make the open-loop
    difference indefinite; Σ̂ is its eigenvalue clip (NumPy's eigh, the Frobenius-nearest PSD matrix)."""
    prior, nu0 = 0.05 ** 2, 2.0
    targets = np.array([[5.0, 5.0], [10.0, 12.0], [20.0, 30.0]])
    e = np.array([[0.6, 0.55], [-0.5, -0.45], [0.05, 0.0]])
    raw = nu0 * prior * np.eye(2) + sum(np.outer(v, v) - 0.3 ** 2 * np.eye(2) for v in e)
    raw /= nu0 + len(e)
    w, v = np.linalg.eigh(raw)
    assert w.min() < -0.01 < 0.01 < w.max()
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.05, 2), execution_noise_prior_weight=nu0,
                execution_feedback='open_loop')
    for x, ei in zip(targets, e):
        _observe(p, x.tolist(), (x + ei).tolist(), std=0.3)
    np.testing.assert_allclose(p.learned_execution_covariance().numpy(), (v * w.clip(0)) @ v.T, atol=1e-12)
    assert torch.allclose(p.execution_noise.covariance, p.learned_execution_covariance())


def test_unknown_execution_feedback_is_refused():
    with pytest.raises(ValueError, match='execution_feedback must be one of closed_loop, open_loop'):
        Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), execution_noise_prior_weight=1.0,
                execution_feedback='open')


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


def arrival(target, offset, cov):
    target = torch.tensor(target, dtype=torch.float64)
    return target, Gaussian(target[None] + torch.tensor(offset, dtype=torch.float64), torch.tensor(cov))


def test_set_prior_keeps_the_evidence_and_noise_keeps_the_sampling_settings():
    prior = GaussianExecutionNoise(torch.eye(2, dtype=torch.float64) * 0.5, n_samples=32, seed=7)
    est = ExecutionNoiseEstimator(prior, 2.0)
    est.add(*arrival([0.0, 0.0], [1.0, 0.0], np.zeros((2, 2))))
    est.set_prior(GaussianExecutionNoise(torch.diag(torch.tensor([4.0, 1.0], dtype=torch.float64)), n_samples=32,
                                         seed=7))
    expected = (2.0 * np.diag([4.0, 1.0]) + np.outer([1.0, 0.0], [1.0, 0.0])) / 3.0
    assert np.allclose(est.covariance().numpy(), expected)
    noise = est.noise()
    assert not noise.closed_form and noise.n_samples == 32 and noise.seed == 7


@pytest.mark.parametrize('kwargs', [{'prior_weight': -1.0}, {'prior_weight': float('nan')},
                                    {'prior_weight': 1.0, 'feedback': 'sideways'}])
def test_invalid_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(0.5, 2), **kwargs)


def test_a_prior_of_another_dimension_is_refused():
    est = ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(0.5, 2), 1.0)
    with pytest.raises(ValueError, match='shape'):
        est.set_prior(GaussianExecutionNoise.isotropic(0.5, 3))

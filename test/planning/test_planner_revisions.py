"""Revised locations of stored readings (``Planner.revise``, planner_revisions.py): the GP, the learned execution
noise and the log end where a planner fed the revised locations from the start would be (independent oracles: a
DistributionGP and a planner built afresh); every rejected case changes nothing and is counted."""
import math

import pytest
import torch

from uncertain_bo.distributions import DTYPE, Dirac, Empirical, Gaussian, GaussianExecutionNoise, cat
from uncertain_bo.models import DistributionGP
from uncertain_bo.planning.planner import LocationRevision, Planner

BOUNDS = torch.tensor([[0.0, 0.0], [50.0, 50.0]], dtype=DTYPE)
HYPER = dict(lengthscale=[8.0, 11.0], outputscale=1.3, noise=0.05, mean=0.1)


def fixed_gp(bounds, kernel=None, input_noise=True):
    gp = DistributionGP(bounds, kernel, input_induced_noise=input_noise)
    gp.set_hyperparameters(**HYPER)
    return gp


def gaussian(xy, var=0.5, rho=0.0):
    cov = torch.tensor([[var, rho], [rho, 2 * var]], dtype=DTYPE)
    return Gaussian(torch.tensor([list(xy)], dtype=DTYPE), cov.unsqueeze(0))


def planner(**kw):
    kw.setdefault('refit_every', 0)                 # fixed hyperparameters: the oracle has the same
    kw.setdefault('model_factory', lambda b, k: fixed_gp(b, k))
    return Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=3, seed=0, **kw)


def readings(n=30, seed=0):
    """``(target or None, location, y, variance, stamp)``: every third a measurement, the rest en-route readings."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        xy = (torch.rand(2, generator=g, dtype=DTYPE) * 50).tolist()
        y = math.sin(xy[0] / 7) + math.cos(xy[1] / 9)
        target = torch.tensor(xy, dtype=DTYPE) if i % 3 == 0 else None
        out.append((target, gaussian([xy[0] + 0.4, xy[1] - 0.3], 0.3 + 0.1 * i, 0.05), y, 0.01, float(i)))
    return out


def feed(p, data):
    for target, loc, y, var, stamp in data:
        p.observe(target, loc, y, var, reading_stamp=stamp, pose_stamp=stamp)


def oracle_marginals(p, X, input_noise=True, first=None):
    """Posterior marginals of a GP built afresh on the planner's readings at their current locations (given the
    ``first`` rows at once, as the planner's GP was, and the rest appended: the output standardisation is that of the
    first data set until a fit)."""
    rows = p.observations.rows
    gp = fixed_gp(BOUNDS, input_noise=input_noise)
    for part in (rows[:first], rows[first:]) if first else (rows,):
        if part:
            (gp.append if gp.n else gp.set_data)(cat([r[1] for r in part]),
                                                 torch.tensor([r[2] for r in part], dtype=DTYPE),
                                                 torch.tensor([r[3] for r in part], dtype=DTYPE))
    return gp.marginals(p.candidates(X))


def keys_of(p, kind):
    return [r.key for r in p.readings if r.kind == kind]


X = torch.tensor([[5.0, 5.0], [25.0, 20.0], [40.0, 45.0], [12.0, 33.0]], dtype=DTYPE)


@pytest.mark.parametrize('input_noise', [False, True])
def test_revised_posterior_equals_a_model_built_afresh_on_the_revised_inputs(input_noise):
    p = planner(model_factory=lambda b, k: fixed_gp(b, k, input_noise))
    feed(p, readings())
    p.predict(X)                                      # the posterior cache exists: revisions refactor it
    cache = p.model._cache
    obs, en_route = keys_of(p, 'observation'), keys_of(p, 'en_route')
    batches = [[LocationRevision(en_route[-1], gaussian([30.0, 31.0], 0.1), 100.0)],      # the newest row only
               [LocationRevision(obs[0], gaussian([2.0, 3.0], 0.05), 100.0),                # the oldest row
                LocationRevision(en_route[4], gaussian([20.0, 10.0], 2.0, 0.3), 100.0)],
               [LocationRevision(en_route[4], gaussian([21.0, 11.0], 0.2), 101.0)]]          # again, newer
    for batch in batches:
        assert len(p.revise(batch).applied) == len(batch)
        p.model                                       # revisions reach the GP when it is read
        mean, var = p.model.marginals(p.candidates(X))
        want_mean, want_var = oracle_marginals(p, X, input_noise)
        assert torch.allclose(mean, want_mean, rtol=0, atol=1e-9)
        assert torch.allclose(var, want_var, rtol=0, atol=1e-9)
    assert p.model._cache is cache                    # refactored in place, not rebuilt
    assert p.revisions_applied == 4 and not p.revisions_rejected
    assert torch.equal(p.observations.rows[p.observations.row_of(*en_route[4])][1].mean,
                       torch.tensor([[21.0, 11.0]], dtype=DTYPE))


def test_a_revision_of_a_reading_the_gp_has_not_taken_yet_is_what_it_takes():
    p = planner()
    data = readings(12)
    feed(p, data[:8])
    p.predict(X)
    feed(p, data[8:])                                 # queued for the GP
    last = keys_of(p, 'en_route')[-1]
    p.revise([LocationRevision(last, gaussian([1.0, 49.0], 0.1), 50.0),
              LocationRevision(keys_of(p, 'observation')[0], gaussian([3.0, 3.0], 0.1), 50.0)])
    mean, var = p.predict(X)
    want_mean, want_var = oracle_marginals(p, X, first=8)
    assert torch.allclose(mean, want_mean, rtol=0, atol=1e-9)
    assert torch.allclose(var ** 2, want_var, rtol=0, atol=1e-9)


def test_sparse_posterior_takes_revisions():
    p = planner(sparse_above=10, inducing_points=6)
    feed(p, readings(20))
    p.predict(X)
    assert p.model.inducing is not None
    p.revise([LocationRevision(keys_of(p, 'observation')[1], gaussian([40.0, 2.0], 0.1), 100.0)])
    mean, var = p.predict(X)
    rows = p.observations.rows
    gp = fixed_gp(BOUNDS)
    gp.set_data(cat([r[1] for r in rows]), torch.tensor([r[2] for r in rows], dtype=DTYPE),
                torch.tensor([r[3] for r in rows], dtype=DTYPE))
    gp.inducing = p.model.inducing
    want_mean, want_var = gp.marginals(p.candidates(X))
    assert torch.allclose(mean, want_mean, rtol=0, atol=1e-9)
    assert torch.allclose(var ** 2, want_var, rtol=0, atol=1e-9)


@pytest.mark.parametrize('feedback', ['closed_loop', 'open_loop'])
def test_a_revised_arrival_reteaches_the_learned_execution_noise(feedback):
    kw = dict(execution_noise_prior_weight=2.0, execution_feedback=feedback)
    p = planner(**kw)
    data = readings(15)
    feed(p, data)
    obs = keys_of(p, 'observation')
    revised = {obs[1]: gaussian([10.0, 12.0], 0.02), obs[3]: gaussian([33.0, 7.0], 0.04)}
    p.revise([LocationRevision(k, loc, 100.0) for k, loc in revised.items()])
    # the oracle: a planner that stored the revised locations in the first place
    fresh = planner(**kw)
    j = 0
    for target, loc, y, var, stamp in data:
        if target is not None:
            loc = revised.get(('observation', j), loc)
            j += 1
        fresh.observe(target, loc, y, var)
    assert torch.allclose(p.learned_execution_covariance(), fresh.learned_execution_covariance(), rtol=0,
                          atol=1e-12)
    assert torch.allclose(p.execution_noise.covariance, fresh.execution_noise.covariance, rtol=0, atol=1e-12)
    assert not torch.allclose(p.learned_execution_covariance(), planner(**kw).learned_execution_covariance())


def test_a_method_on_targets_keeps_a_measurements_input_and_moves_an_en_route_readings():
    p = planner(method='gp_ucb')
    feed(p, readings(6))
    p.predict(X)
    before = p.model.train_locations.mean.clone()
    obs, en_route = keys_of(p, 'observation'), keys_of(p, 'en_route')
    p.revise([LocationRevision(obs[0], gaussian([20.0, 20.0]), 100.0),
              LocationRevision(en_route[0], gaussian([30.0, 30.0]), 100.0)])
    p.predict(X)
    after = p.model.train_locations.mean
    row_obs, row_er = p.observations.row_of(*obs[0]), p.observations.row_of(*en_route[0])
    assert torch.equal(after[row_obs], before[row_obs])                        # still its commanded target
    assert after[row_er].tolist() == [30.0, 30.0]
    assert p.locations.mean[0].tolist() == [20.0, 20.0]                       # the log holds the revised location


def _non_psd():
    return Gaussian(torch.tensor([[1.0, 1.0]], dtype=DTYPE), torch.tensor([[[1.0, 2.0], [2.0, 1.0]]], dtype=DTYPE),
                    validate=False)


def _nan_cov():
    return Gaussian(torch.tensor([[1.0, 1.0]], dtype=DTYPE),
                    torch.tensor([[[math.nan, 0.0], [0.0, 1.0]]], dtype=DTYPE), validate=False)


def _nan_mean():
    return Gaussian(torch.tensor([[math.nan, 1.0]], dtype=DTYPE), torch.eye(2, dtype=DTYPE)[None], validate=False)


@pytest.mark.parametrize('make, reason', [
    (lambda k: LocationRevision(('observation', 99), gaussian([1.0, 1.0]), 100.0), 'unknown reading'),
    (lambda k: LocationRevision(('en_route', -1), gaussian([1.0, 1.0]), 100.0), 'unknown reading'),
    (lambda k: LocationRevision(('measurement', 0), gaussian([1.0, 1.0]), 100.0), 'unknown reading'),
    (lambda k: LocationRevision(k, gaussian([1.0, 1.0]), 50.0), 'out of order'),            # older than the last
    (lambda k: LocationRevision(k, gaussian([1.0, 1.0]), 60.0), 'out of order'),            # as old as the last
    (lambda k: LocationRevision(k, gaussian([1.0, 1.0]), math.nan), 'out of order'),
    (lambda k: LocationRevision(k, _non_psd(), 100.0), 'invalid location'),
    (lambda k: LocationRevision(k, _nan_cov(), 100.0), 'invalid location'),
    (lambda k: LocationRevision(k, _nan_mean(), 100.0), 'invalid location'),
    (lambda k: LocationRevision(k, Dirac(torch.zeros(1, 3, dtype=DTYPE)), 100.0), 'invalid location'),
    (lambda k: LocationRevision(k, Empirical(torch.zeros(1, 5, 2, dtype=DTYPE)), 100.0), 'invalid location'),
])
def test_a_rejected_revision_changes_nothing_and_is_counted(tmp_path, make, reason):
    p = planner(journal=tmp_path / 'j.jsonl', execution_noise_prior_weight=1.0)
    feed(p, readings(9))
    key = keys_of(p, 'observation')[1]
    assert p.revise([LocationRevision(key, gaussian([2.0, 2.0]), 60.0)]).applied == [key]
    p.predict(X)
    state = ([r[1].mean.clone() for r in p.observations.rows], p.learned_execution_covariance().clone(),
             p.predict(X)[0].clone(), len(p.journal_file.records))
    outcome = p.revise([make(key)])
    assert outcome.applied == [] and outcome.rejected == {reason: 1} and p.revisions_rejected == {reason: 1}
    assert all(torch.equal(r[1].mean, m) for r, m in zip(p.observations.rows, state[0]))
    assert torch.equal(p.learned_execution_covariance(), state[1])
    assert torch.equal(p.predict(X)[0], state[2])
    assert len(p.journal_file.records) == state[3]                               # nothing journaled
    assert p.revisions_applied == 1


def test_a_revision_older_than_the_pose_it_would_revise_is_out_of_order():
    p = planner()
    feed(p, readings(4))                      # reading i has pose stamp i
    key = keys_of(p, 'en_route')[-1]          # pose stamp 2.0
    out = p.revise([LocationRevision(key, gaussian([1.0, 1.0]), 1.5),
                    LocationRevision(key, gaussian([1.0, 1.0]), 2.0)])   # as old as the estimate: taken
    assert out.rejected == {'out of order': 1} and out.applied == [key]


def test_a_batch_applies_what_is_valid_and_a_particle_reading_takes_particles():
    p = planner(model_factory=None, method='airbo', refit_every=1)
    g = torch.Generator().manual_seed(3)
    for i in range(4):
        p.observe(torch.tensor([10.0 * i + 5, 20.0], dtype=DTYPE),
                  Empirical(torch.randn(1, 8, 2, generator=g, dtype=DTYPE) + torch.tensor([10.0 * i + 5, 20.0])),
                  float(i), reading_stamp=float(i), pose_stamp=float(i))
    good = Empirical(torch.randn(1, 8, 2, generator=g, dtype=DTYPE) + 30.0)
    out = p.revise([LocationRevision(('observation', 0), gaussian([1.0, 1.0]), 9.0),     # a Gaussian: wrong kind
                    LocationRevision(('observation', 2), good, 9.0)])
    assert out.applied == [('observation', 2)] and out.rejected == {'invalid location': 1}
    assert torch.equal(p.locations.samples[2], good.samples[0])
    p.suggest()                                                                          # the GP takes it
    assert torch.equal(p.model.train_locations.samples[2], good.samples[0])

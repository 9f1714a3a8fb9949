"""En-route readings in the planner (``observe(None, ...)``): in the GP, not measurements; what each consumer of
targets does with them."""
import pytest
import torch

from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import InvalidObservationError, Planner

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)


def gaussian(x, y, var=0.04):
    return Gaussian(torch.tensor([[x, y]], dtype=DTYPE), var * torch.eye(2, dtype=DTYPE).unsqueeze(0))


def planner(method='ugp_ucb', **kw):
    return Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.3, 2), method=method, n_initial=2, seed=0, **kw)


def test_en_route_readings_join_the_gp_but_are_not_measurements(tmp_path):
    p = planner(execution_noise_prior_weight=2.0, journal=tmp_path / 'j.jsonl')
    p.observe(torch.tensor([1.0, 1.0]), gaussian(1.2, 0.9), 1.0)
    prior = p.learned_execution_covariance().clone()
    assert p.observe(None, gaussian(3.0, 3.0), 2.0, reading_variance=0.1) == 0
    assert p.observe(None, gaussian(5.0, 5.0), 3.0) == 1
    assert p.n == 1 and p.n_en_route == 2 and p.targets.shape == (1, 2) and p.y.tolist() == [1.0]
    assert torch.equal(p.learned_execution_covariance(), prior)   # no target: nothing to learn from
    p.predict(torch.tensor([[2.0, 2.0]], dtype=DTYPE))
    assert p.model.n == 3 and p.model.reading_noise.tolist() == [0.0, 0.1, 0.0]
    assert p.suggest().shape == (2,) and p.decisions[-1].index == 1      # the decision index counts stops
    records = p.journal_file.en_route
    assert [r['index'] for r in records] == [0, 1] and records[0]['measurements'] == 1
    assert 'target' not in records[0]
    with pytest.raises(InvalidObservationError):
        p.observe(None, Gaussian(torch.tensor([[1.0, 1.0]], dtype=DTYPE),
                                 torch.tensor([[[float('nan'), 0.0], [0.0, 1.0]]], dtype=DTYPE), validate=False), 1.0)
    assert p.n_en_route == 2


def test_highest_reading_rule_reports_where_the_highest_reading_was_taken():
    p = planner()
    p.observe(torch.tensor([1.0, 1.0]), gaussian(1.1, 1.0), 1.0)
    p.observe(torch.tensor([8.0, 8.0]), gaussian(8.0, 8.1), 2.0)
    p.observe(None, gaussian(4.0, 6.0), 5.0)
    rec = p.recommend('highest_reading')
    assert rec.index == -1 and torch.allclose(rec.target, torch.tensor([4.0, 6.0], dtype=DTYPE))
    p.observe(None, gaussian(10.4, 6.0), 7.0)        # a location estimate outside the box: clipped into it
    assert torch.allclose(p.recommend('highest_reading').target, torch.tensor([10.0, 6.0], dtype=DTYPE))
    p.observe(torch.tensor([2.0, 2.0]), gaussian(2.0, 2.0), 9.0)
    rec = p.recommend('highest_reading')
    assert rec.index == 2 and torch.equal(rec.target, p.targets[2])
    assert p.recommend('past_mean').index >= 0           # the posterior rules rank past targets only


def test_methods_on_targets_put_en_route_readings_at_their_location_estimate():
    p = planner(method='gp_ucb')
    p.observe(torch.tensor([1.0, 1.0]), gaussian(1.5, 1.5), 1.0)
    p.observe(None, gaussian(4.0, 6.0, var=0.5), 2.0)
    p.predict(torch.tensor([[2.0, 2.0]], dtype=DTYPE))
    locs = p.model.train_locations
    assert torch.allclose(locs.mean, torch.tensor([[1.0, 1.0], [4.0, 6.0]], dtype=DTYPE))   # target; estimate
    assert float(locs.covariance.abs().max()) == 0.0


@pytest.mark.parametrize('method', ['lawnmower', 'botorch_robust', 'drbqo'])
def test_methods_with_their_own_use_of_targets_decide_with_en_route_readings(method):
    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.3, 2), method=method, n_initial=2, seed=0, budget=6)
    for i, xy in enumerate([(1.0, 1.0), (8.0, 2.0), (5.0, 8.0)]):
        p.observe(torch.tensor(xy), gaussian(xy[0] + 0.1, xy[1]), float(i))
        p.observe(None, gaussian(xy[0] + 0.5, xy[1] + 0.5), float(i) + 0.5)
    target = p.suggest()
    assert target.shape == (2,) and bool(((target >= BOUNDS[0]) & (target <= BOUNDS[1])).all())
    assert p.recommend().target.shape == (2,)


def test_bounds_change_keeps_en_route_readings_in_order():
    p = planner()
    p.observe(torch.tensor([1.0, 1.0]), gaussian(1.0, 1.0), 1.0)
    p.observe(None, gaussian(3.0, 3.0), 2.0)
    p.observe(torch.tensor([5.0, 5.0]), gaussian(5.0, 5.0), 3.0)
    p.set_bounds(torch.tensor([[0.0, 0.0], [12.0, 12.0]], dtype=DTYPE))
    p.predict(torch.tensor([[2.0, 2.0]], dtype=DTYPE))
    assert p.model.train_y.tolist() == [1.0, 2.0, 3.0]

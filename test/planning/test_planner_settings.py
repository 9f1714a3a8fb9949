"""A planner's settings (uncertain_bo/planning/settings.py): checked at construction, changed during a run."""
import json

import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
NOISE = GaussianExecutionNoise.isotropic(0.5, 2)


@pytest.mark.parametrize('settings, message', [
    ({'bounds': torch.tensor([[0.0, 5.0], [10.0, 5.0]])}, r'bounds must be \(2, d\) with upper > lower'),
    ({'bounds': torch.tensor([0.0, 10.0])}, r'bounds must be \(2, d\)'),
    ({'n_initial': 0}, 'n_initial must be >= 1, got 0'),
    ({'refit_every': -1}, 'refit_every must be >= 0, got -1'),
    ({'fit_max_points': 2.5}, 'fit_max_points must be an integer >= 0, got 2.5'),
    ({'sparse_above': True}, 'sparse_above must be an integer >= 0, got True'),
    ({'inducing_points': -3}, 'inducing_points must be an integer >= 0, got -3'),
    ({'travel_weight': float('nan')}, 'travel_weight must be >= 0, got nan'),
    ({'execution_feedback': 'blind'}, 'execution_feedback must be one of'),
    ({'recommendation': 'best_guess'}, 'recommendation must be one of'),
])
def test_impossible_settings_are_refused_at_construction(settings, message):
    with pytest.raises(ValueError, match=message):
        Planner(**{'bounds': BOUNDS, 'execution_noise': NOISE, **settings})


def test_the_bounds_become_float64():
    assert Planner(torch.tensor([[0, 0], [10, 10]]), NOISE).bounds.dtype == torch.float64


def test_new_bounds_rebuild_the_design_in_them_and_are_journaled(tmp_path):
    path = tmp_path / 'j.jsonl'
    p = Planner(BOUNDS, NOISE, n_initial=4, journal=path)
    first = p.suggest()
    p.observe(first, Gaussian(first.reshape(1, 2), 0.01 * torch.eye(2).unsqueeze(0)), 1.0)
    small = torch.tensor([[0.0, 0.0], [2.0, 2.0]], dtype=torch.float64)
    p.set_bounds(small)
    assert ((p.initial_design >= 0.0) & (p.initial_design <= 2.0)).all()
    p.predict(small.mean(0, keepdim=True))                   # the GP takes its readings when it is next used
    assert p.model.n == 1                                     # the observation is kept in the new box's GP
    record = json.loads(path.read_text().splitlines()[-1])
    assert record['type'] == 'bounds' and record['bounds'] == small.tolist() and record['index'] == 1
    with pytest.raises(ValueError, match=r'bounds must be \(2, 2\) with upper > lower'):
        p.set_bounds(torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))


def test_a_start_orders_the_design_from_it_and_is_journaled_for_the_resumed_run(tmp_path):
    path = tmp_path / 'j.jsonl'
    p = Planner(BOUNDS, NOISE, n_initial=5, journal=path)
    corner = torch.tensor([10.0, 10.0], dtype=torch.float64)
    p.set_start(corner)
    nearest = min(p.initial_design, key=lambda t: float((t - corner).norm()))
    assert torch.equal(p.initial_design[0], nearest)
    again = Planner(BOUNDS, NOISE, n_initial=5, journal=path)
    assert torch.equal(again.initial_design, p.initial_design)
    x = p.suggest()
    p.observe(x, Gaussian(x.reshape(1, 2), 0.01 * torch.eye(2).unsqueeze(0)), 1.0)
    with pytest.raises(RuntimeError, match='before the first observation'):
        p.set_start(corner)


def test_beta_and_execution_noise_change_from_the_next_decision_on():
    p = Planner(BOUNDS, NOISE, n_initial=1, beta=3.0)
    p.set_beta(1.5)
    assert p.beta == 1.5 and p.beta_schedule(7, p.model) == 1.5
    wider = GaussianExecutionNoise.isotropic(1.0, 2)
    p.set_execution_noise(wider)
    assert p.execution_noise is wider


def test_assigned_settings_are_checked_and_the_ones_with_dependants_go_through_their_setter():
    """Before, an assignment such as ``planner.bounds = ...`` or ``planner.refit_every = -1`` went through unchecked
    (the GP, the design and the method kept the old box). Now the settings are one frozen value: a writable setting is
    checked (a bad value leaves the settings as they were), one with dependants names its setter."""
    p = Planner(BOUNDS, NOISE, refit_every=2)
    settings = p.settings
    with pytest.raises(ValueError, match='refit_every'):
        p.refit_every = -1
    assert p.settings is settings and p.refit_every == 2
    p.refit_every = 5
    assert p.refit_every == 5 and p.settings.model.refit_every == 5 and settings.model.refit_every == 2
    with pytest.raises(AttributeError, match='set_bounds'):
        p.bounds = BOUNDS * 2
    with pytest.raises(AttributeError, match='set_start'):
        p.start = torch.zeros(2)
    assert torch.equal(p.bounds, BOUNDS)

"""The method protocol: a method is one object the planner asks; adding one touches its own module only."""
import math

import pytest
import torch

from uncertain_bo.acquisition import (METHODS, Method, Proposal, Recommendation, UCBMethod,
                                      get_method, register)
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [10.0, 4.0]], dtype=torch.float64)


@pytest.fixture
def scratch_method():
    """Register a toy method for one test (and remove it afterwards)."""
    added = []

    def add(cls):
        added.append(cls.name)
        return register(cls)

    yield add
    for name in added:
        METHODS.pop(name, None)


def _observe(planner, x, y):
    planner.observe(x, Gaussian(x[None], 0.01 * torch.eye(2, dtype=torch.float64)[None]), y)


def test_a_new_method_decides_and_recommends_through_the_planner_unchanged(scratch_method):
    seen = []

    @scratch_method
    class Corner(Method):
        """Decides the decision space's upper corner minus a step; recommends the lowest reading."""
        name = 'test_corner'
        description = 'toy'
        inputs = 'target'

        def __init__(self, step: float = 1.0):
            self.step = step

        def decision_bounds(self, bounds):
            return torch.stack([bounds[0], bounds[0] + 0.5 * (bounds[1] - bounds[0])])

        def decide(self, ctx):
            seen.append((ctx.index, ctx.seed, len(ctx.y), tuple(ctx.bounds[1].tolist())))
            return Proposal(ctx.bounds[1] - self.step * ctx.index, 'toy', acquisition_value=float(ctx.index))

        def recommend(self, ctx, rule):
            if rule is not None:
                return None
            i = int(torch.argmin(ctx.y))
            return Recommendation(ctx.targets[i], float(ctx.y[i]), math.nan, i)

    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.1, 2), method='test_corner', seed=7,
                method_settings={'step': 0.5})
    for t in range(3):
        x = p.suggest()
        assert torch.equal(x, torch.tensor([5.0, 2.0], dtype=torch.float64) - 0.5 * t)
        assert p.decisions[-1].phase == 'toy' and p.decisions[-1].acquisition_value == t
        _observe(p, x, float(10 - t))
    assert seen == [(t, 7 * 100_003 + t, t, (5.0, 2.0)) for t in range(3)]
    assert p.recommend().index == 2                      # the method's own rule
    assert p.input_kind == 'target' and p.fitted_on is None  # nothing read ctx.model: no fit was paid for
    assert p.recommend('highest_reading').index == 0     # an explicit planner rule (it fits the GP)
    assert p.fitted_on == 3


def test_the_default_decision_is_the_initial_design_then_the_acquisition_maximiser(scratch_method):
    @scratch_method
    class Lower(UCBMethod):
        name = 'test_lower'
        description = 'UCB with beta from the schedule'

    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.1, 2), method='test_lower', n_initial=3, beta=2.5,
                seed=1)
    peak = torch.tensor([7.0, 1.0], dtype=torch.float64)
    for t in range(5):
        x = p.suggest()
        d = p.decisions[-1]
        if t < 3:
            assert torch.equal(x, p.initial_design[t]) and d.phase == 'initial' and math.isnan(d.beta)
        else:
            assert d.phase == 'acquisition' and d.beta == 2.5 and math.isfinite(d.acquisition_value)
            assert p.fitted_on == t  # reading ctx.model fitted the GP on every observation so far
        _observe(p, x, float(torch.exp(-((x - peak) ** 2).sum())))


def test_surveys_never_fit_the_gp_while_they_follow_their_plan():
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.1, 2), method='lawnmower', budget=6, seed=0)
    for t in range(6):
        x = p.suggest()
        assert p.decisions[-1].phase == 'survey'
        _observe(p, x, float(t))
    assert p.fitted_on is None
    ctx = p.snapshot()                       # the snapshot fits the GP when a method first reads its model
    assert p.schedule.fit_seconds == 0.0 and ctx.model is p.model and p.schedule.fit_seconds > 0 and p.fitted_on == 6


def test_methods_declare_their_training_inputs():
    kinds = {name: Planner(BOX, GaussianExecutionNoise.isotropic(0.1, 2), method=name).input_kind
             for name in ('ugp_ucb', 'gp_ucb', 'igp_ucb', 'uei', 'airbo', 'ugp_kme', 'lawnmower')}
    assert kinds == {'ugp_ucb': 'gaussian', 'gp_ucb': 'target', 'igp_ucb': 'target', 'uei': 'target',
                     'airbo': 'samples', 'ugp_kme': 'samples', 'lawnmower': 'gaussian'}


def test_registration_refuses_duplicates_and_unknown_input_kinds(scratch_method):
    class Again(Method):
        name = 'ugp_ucb'

    class Odd(Method):
        name = 'test_odd'
        inputs = 'voxels'

    with pytest.raises(ValueError, match='already registered'):
        register(Again)
    with pytest.raises(ValueError, match='inputs must be one of'):
        register(Odd)
    with pytest.raises(KeyError, match='known: .*ugp_ucb'):
        get_method('no_such_method')
    with pytest.raises(NotImplementedError, match='no acquisition'):
        Method().acquisition(None)


def test_a_batch_proposal_splits_into_its_picks_in_order():
    picks = [Proposal(torch.tensor([float(i), 0.0]), 'initial' if i == 0 else 'acquisition', float(i), 3.0, (0.1 * i,))
             for i in range(3)]
    batch = Proposal.stack(picks)
    assert batch.q == 3 and batch.targets.shape == (3, 2) and batch.phase == ('initial', 'acquisition', 'acquisition')
    again = batch.split()
    assert [p.acquisition_value for p in again] == [0.0, 1.0, 2.0] and again[2].seconds == (0.2,)
    assert all(torch.equal(a.target, b.target) for a, b in zip(again, picks))
    single = Proposal(torch.zeros(2), 'initial')
    assert single.q == 1 and single.split() == [single]


def test_pending_targets_must_be_finite_targets_of_the_box():
    p = Planner(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), GaussianExecutionNoise.isotropic(0.05, 2), n_initial=2)
    with pytest.raises(ValueError, match='pending must be'):
        p.suggest(q=1, pending=torch.tensor([[0.5, float('nan')]]))
    with pytest.raises(ValueError, match='q must be'):
        p.suggest(q=0)
    assert p.suggest(q=2, pending=torch.tensor([0.5, 0.5])).shape == (2, 2)   # the initial design, in order
    assert [d.index for d in p.decisions] == [0, 1] and [d.phase for d in p.decisions] == ['initial'] * 2

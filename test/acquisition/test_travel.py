"""The travel-aware acquisition (``acquisition/travel.py``): the penalty in closed form, for one target and for the
tour of a batch, and its effect on the planner's next target."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition import TargetUpperConfidenceBound
from uncertain_bo.acquisition.travel import TravelPenalty
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

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
    inner = TargetUpperConfidenceBound(p.model, p.candidates, 4.0)
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


def test_a_batch_pays_for_its_tour_in_order():
    """q = 2: the inner batch value less w σ_f (|x_1 - p| + |x_2 - x_1|) / D; the order of the batch matters."""
    p = _planner()
    for t in ([3.0, 4.0], [20.0, 30.0], [25.0, 5.0], [10.0, 20.0]):
        _observe(p, t, t, y=float(sum(t)) / 10)
    p.recommend()
    inner = TargetUpperConfidenceBound(p.model, p.candidates, 4.0)
    pos = torch.tensor([3.0, 4.0], dtype=torch.float64)
    acq = TravelPenalty(inner, pos, BOX, weight=2.0, signal_std=5.0)
    batch = torch.tensor([[[6.0, 8.0], [30.0, 40.0]], [[30.0, 40.0], [6.0, 8.0]]], dtype=torch.float64)
    tours = torch.tensor([5.0 + 40.0, 45.0 + 40.0], dtype=torch.float64)      # 3-4-5 triangles
    torch.testing.assert_close(acq(batch), inner(batch) - 2.0 * 5.0 * tours / 50.0)


def _decides_targets(name):
    """Every registered method but the surveys (they follow their own planned tour, ``plans_route``)."""
    from uncertain_bo.acquisition import METHODS
    return not METHODS[name].plans_route


def _travel_methods():
    from uncertain_bo.acquisition import METHODS
    return sorted(name for name in METHODS if _decides_targets(name))


@pytest.mark.parametrize('name', _travel_methods())
def test_travel_weight_changes_the_decision_of_every_method(name):
    """One decide path (``Method.decide_one``) for every method: the travel penalty moves each method's next target
    towards the rover. The field rises towards the far corner, the rover stands at the near one: a large weight brings
    the target closer than the method's own choice."""
    from uncertain_bo.acquisition.optimize import OptimizerSettings
    fast = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=20)
    from uncertain_bo.acquisition import METHODS
    settings = {'botorch_robust': {'num_restarts': 2, 'raw_samples': 64, 'n_w': 8}}.get(name)
    d = 2
    if getattr(METHODS[name], 'needs_contexts', False):   # a quadrature problem: the rover decides x, the last
        settings, d = {'contexts': [[4.0], [20.0], [36.0]], 'n_features': 200}, 1   # coordinate is the context
        if name == 'mtbo':                                 # its contexts are one-hot tasks: one task here
            settings = {'contexts': [[1.0]]}
    near = []
    for w in (0.0, 200.0):
        p = _planner(method=name, travel_weight=w, optimizer=fast, method_settings=settings, refit_every=0)
        for t in ([27.0, 36.0], [27.0, 4.0], [3.0, 36.0], [15.0, 20.0], [3.0, 4.0]):
            _observe(p, t, t, y=(t[0] + t[1]) / 70.0)
        x = p.suggest()
        near.append(float((x[:d] - p.position[:d]).norm()))
    assert near[1] < near[0], near

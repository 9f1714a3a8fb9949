"""``optim.maximize``: the known maximum of simple acquisitions in a box (an interior quadratic, one whose
maximiser lies outside the box so that the answer is its projection, the negated Branin function with its three
published minimisers), the bounds respected, and reproducible results under a seed."""
import math

import pytest
import torch
from botorch.acquisition import AcquisitionFunction

from uncertain_bo.acquisition.optimize import OptimizerSettings, maximize

DT = torch.float64


class Closed(AcquisitionFunction):
    """A closed-form acquisition of ``(b, 1, d)`` targets -> ``(b,)`` (no model)."""

    def __init__(self, fun):
        torch.nn.Module.__init__(self)
        self.fun = fun

    def forward(self, X):
        return self.fun(X.squeeze(-2))


def quadratic(centre, weights):
    return Closed(lambda x: -(weights * (x - centre) ** 2).sum(-1))


def neg_branin(x):
    """Negated Branin-Hoo; its maximum -0.397887 is at (-π, 12.275), (π, 2.275), (9.42478, 2.475)."""
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    x1, x2 = x[..., 0], x[..., 1]
    return -(a * (x2 - b * x1 ** 2 + c * x1 - r) ** 2 + s * (1 - t) * torch.cos(x1) + s)


def test_interior_maximum_of_a_quadratic():
    bounds = torch.tensor([[-1.0, 0.0, 2.0], [3.0, 5.0, 4.0]], dtype=DT)
    centre = torch.tensor([0.3, 4.2, 2.9], dtype=DT)
    x, value = maximize(quadratic(centre, torch.tensor([1.0, 4.0, 0.5], dtype=DT)), bounds, seed=0)
    torch.testing.assert_close(x, centre, rtol=0, atol=1e-5)
    assert value == pytest.approx(0.0, abs=1e-9) and x.shape == (3,) and x.dtype == DT


def test_maximiser_outside_the_box_gives_its_projection_and_never_leaves_the_bounds():
    bounds = torch.tensor([[0.0, 0.0], [1.0, 2.0]], dtype=DT)
    centre = torch.tensor([1.7, -0.4], dtype=DT)      # separable: the box maximum is the clipped centre
    x, value = maximize(quadratic(centre, torch.tensor([1.0, 3.0], dtype=DT)), bounds, seed=1)
    assert bool(((x >= bounds[0]) & (x <= bounds[1])).all())
    torch.testing.assert_close(x, torch.tensor([1.0, 0.0], dtype=DT), rtol=0, atol=1e-9)
    assert value == pytest.approx(-(0.7 ** 2 + 3 * 0.4 ** 2), rel=1e-9)


def test_branin_global_maximum():
    bounds = torch.tensor([[-5.0, 0.0], [10.0, 15.0]], dtype=DT)
    x, value = maximize(Closed(neg_branin), bounds, OptimizerSettings(num_restarts=10, raw_samples=256), seed=3)
    assert value == pytest.approx(-0.397887, abs=1e-5)
    optima = torch.tensor([[-math.pi, 12.275], [math.pi, 2.275], [9.42478, 2.475]], dtype=DT)
    assert float((optima - x).norm(dim=-1).min()) < 1e-3


def test_same_seed_same_result_whatever_ran_before_and_the_global_stream_is_left_alone():
    bounds = torch.tensor([[-5.0, 0.0], [10.0, 15.0]], dtype=DT)
    settings = OptimizerSettings(num_restarts=3, raw_samples=32, maxiter=5)   # stops early: the start matters
    first = maximize(Closed(neg_branin), bounds, settings, seed=11)
    torch.rand(7)                                      # move the global stream
    state = torch.get_rng_state()
    second = maximize(Closed(neg_branin), bounds, settings, seed=11)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(first[0], second[0]) and first[1] == second[1]
    others = {tuple(maximize(Closed(neg_branin), bounds, settings, seed=s)[0].tolist()) for s in range(12, 16)}
    assert len(others | {tuple(first[0].tolist())}) > 1   # the seed does pick the starts

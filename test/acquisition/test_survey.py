"""Survey baselines (``acquisition/survey.py``): the lawnmower's geometry (cell centres, one per cell, boustrophedon
adjacency, a shift of at most half a cell), the nearest-neighbour property of the random tour, and their phases in the
planner."""
import pytest
import torch

from uncertain_bo.acquisition.survey import grid_shape, lawnmower_targets, random_tour
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [200.0, 120.0]], dtype=torch.float64)


@pytest.mark.parametrize('n,w,h,shape', [(30, 1, 1, (6, 5)), (12, 1, 1, (4, 3)), (7, 1, 1, (7, 1)),
                                         (8, 8, 1, (8, 1)), (6, 3, 2, (3, 2)), (9, 1, 1, (3, 3))])
def test_grid_shape(n, w, h, shape):
    cols, rows = grid_shape(n, w, h)
    assert cols * rows >= n and (cols, rows) == shape


def test_grid_shape_rejects_bad_input():
    with pytest.raises(ValueError, match='n >= 1'):
        grid_shape(0, 1.0, 1.0)


@pytest.mark.parametrize('shift', [None, (0.5, -0.5), (-0.3, 0.2)])
def test_lawnmower_is_a_boustrophedon_over_cell_centres(shift):
    n = 12
    s = None if shift is None else torch.tensor(shift, dtype=torch.float64)
    pts = lawnmower_targets(BOX, n, start=torch.tensor([190.0, 5.0], dtype=torch.float64), shift=s)
    cols, rows = grid_shape(n, 200.0, 120.0)
    cell = torch.tensor([200.0 / cols, 120.0 / rows], dtype=torch.float64)
    assert pts.shape == (n, 2) and pts.dtype == BOX.dtype
    assert ((pts >= BOX[0]) & (pts <= BOX[1])).all()
    off = torch.zeros(2, dtype=torch.float64) if s is None else s
    idx = (pts - BOX[0]) / cell - 0.5 - off            # integer cell indices
    assert torch.allclose(idx, idx.round(), atol=1e-9)
    assert len({tuple(v) for v in idx.round().tolist()}) == n   # one target per cell
    # starts at the corner nearest the start (lower right), consecutive targets are neighbouring cells
    first = idx.round()[0]
    assert first.tolist() == [cols - 1, 0]
    steps = (idx.round()[1:] - idx.round()[:-1]).abs().sum(-1)
    assert (steps == 1).all()


def test_lawnmower_planner_shift_is_seeded_and_at_most_half_a_cell():
    def plan(method, seed):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method=method, seed=seed, budget=30)
        p.set_start(torch.tensor([100.0, 60.0], dtype=torch.float64))
        plan = p.method_object.plan(p.snapshot())
        return torch.stack([p.suggest()] + [plan[i] for i in range(1, 30)])

    a, b, a2 = plan('lawnmower', 1), plan('lawnmower', 2), plan('lawnmower', 1)
    fixed1, fixed2 = plan('lawnmower_fixed', 1), plan('lawnmower_fixed', 2)
    assert torch.equal(a, a2) and not torch.allclose(a, b) and torch.equal(fixed1, fixed2)
    cell = torch.tensor([200.0 / 6, 120.0 / 5], dtype=torch.float64)
    shift = (a.min(0).values - fixed1.min(0).values) / cell
    assert (shift.abs() <= 0.5 + 1e-12).all()


def test_random_tour_is_a_greedy_nearest_neighbour_tour():
    start = torch.tensor([10.0, 10.0], dtype=torch.float64)
    pts = random_tour(BOX, 25, seed=4, start=start)
    assert torch.equal(pts, random_tour(BOX, 25, seed=4, start=start))
    assert ((pts >= BOX[0]) & (pts <= BOX[1])).all()
    pos = start
    for i in range(len(pts)):
        remaining = pts[i:]
        assert (pts[i] - pos).norm() <= (remaining - pos).norm(dim=-1).min() + 1e-12
        pos = pts[i]


def test_survey_needs_the_budget_and_decides_survey_phases():
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method='random', seed=0)
    with pytest.raises(ValueError, match='budget'):
        p.suggest()
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method='lawnmower', seed=0, budget=3,
                n_initial=2)
    for _ in range(3):
        x = p.suggest()
        p.observe(x, Gaussian(x[None], 0.1 * torch.eye(2, dtype=torch.float64)[None]), float(x.sum()))
    assert [d.phase for d in p.decisions] == ['survey'] * 3
    rec = p.recommend()                       # the GP rule over past targets
    assert any(torch.equal(rec.target, t) for t in p.targets)
    assert p.suggest() is not None and p.decisions[-1].phase == 'acquisition'  # past the budget: the planner's rule

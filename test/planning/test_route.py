"""The visiting order of a set of targets (uncertain_bo/planning/route.py), against tours known in closed form and an
exhaustive NumPy search."""
import itertools

import numpy as np
import pytest
import torch

from uncertain_bo.planning.route import EXACT_UP_TO, nearest_neighbour_tour, shortest_open_tour

DT = torch.float64


def tour_length(points, start):
    """Length of the open path from ``start`` through ``points`` in their order (NumPy)."""
    path = np.vstack([np.asarray(start, dtype=float), np.asarray(points, dtype=float)])
    return np.linalg.norm(np.diff(path, axis=0), axis=1).sum()


def numpy_shortest(points, start):
    """The shortest open path length by trying every order (NumPy, independent of the module)."""
    pts, s = np.asarray(points), np.asarray(start)
    best = np.inf
    for order in itertools.permutations(range(len(pts))):
        path = np.vstack([s, pts[list(order)]])
        best = min(best, np.linalg.norm(np.diff(path, axis=0), axis=1).sum())
    return best


def on_a_line(xs):
    return torch.tensor([[x, 0.0] for x in xs], dtype=DT)


def test_a_line_is_driven_to_the_nearer_end_first_where_greedy_zig_zags():
    # from 0: nearest first goes 1, -2, 6 (1 + 3 + 8 = 12 m); the shortest goes -2, 1, 6 (2 + 3 + 5 = 10 m)
    points, start = on_a_line([1.0, -2.0, 6.0]), torch.zeros(2, dtype=DT)
    best = shortest_open_tour(points, start)
    assert best.tolist() == [1, 0, 2] and float(tour_length(points[best], start)) == pytest.approx(10.0)
    greedy = nearest_neighbour_tour(points, start)
    assert greedy.tolist() == [0, 1, 2] and float(tour_length(points[greedy], start)) == pytest.approx(12.0)


def test_the_corners_of_a_square_are_three_sides_from_one_corner():
    points = torch.tensor([[10.0, 10.0], [0.0, 10.0], [10.0, 0.0]], dtype=DT)
    order = shortest_open_tour(points, torch.zeros(2, dtype=DT))
    assert float(tour_length(points[order], torch.zeros(2, dtype=DT))) == pytest.approx(30.0)
    assert order[1].item() == 0                              # the far corner in the middle


@pytest.mark.parametrize('n', [1, 2, 5, EXACT_UP_TO])
def test_the_order_is_as_short_as_the_exhaustive_search(n):
    g = torch.Generator().manual_seed(n)
    points, start = 100 * torch.rand(n, 2, generator=g, dtype=DT), 100 * torch.rand(2, generator=g, dtype=DT)
    order = shortest_open_tour(points, start)
    assert sorted(order.tolist()) == list(range(n))
    assert float(tour_length(points[order], start)) == pytest.approx(numpy_shortest(points, start), rel=1e-12)


def test_beyond_the_exact_limit_the_tour_is_nearest_neighbour_and_an_empty_set_is_empty():
    g = torch.Generator().manual_seed(9)
    points, start = torch.rand(EXACT_UP_TO + 2, 2, generator=g, dtype=DT), torch.zeros(2, dtype=DT)
    assert torch.equal(shortest_open_tour(points, start), nearest_neighbour_tour(points, start))
    assert shortest_open_tour(points[:0], start).shape == (0,)


def test_dtype_and_device_follow_the_points():
    points = torch.tensor([[3.0, 0.0], [1.0, 0.0]], dtype=torch.float32)
    order = shortest_open_tour(points, torch.zeros(2, dtype=DT))
    assert order.tolist() == [1, 0] and order.device == points.device


@pytest.mark.parametrize('points, start, match', [
    (torch.zeros(3), torch.zeros(2), 'points must be'),
    (torch.zeros(3, 2), torch.zeros(3), 'start must be'),
    (torch.tensor([[0.0, float('nan')]]), torch.zeros(2), 'finite'),
])
def test_malformed_input_is_refused(points, start, match):
    with pytest.raises(ValueError, match=match):
        shortest_open_tour(points, start)


def literal_greedy(points, start):
    """The nearest-neighbour tour as its definition reads: a Python loop over the points left (ties: lower index)."""
    pts, pos, left, order = np.asarray(points), np.asarray(start, dtype=float), list(range(len(points))), []
    while left:
        j = min(left, key=lambda k: (np.linalg.norm(pts[k] - pos), k))
        order.append(j)
        left.remove(j)
        pos = pts[j]
    return order


@pytest.mark.parametrize('dim', [1, 2, 3])
def test_the_nearest_neighbour_tour_is_the_literal_greedy_loop_ties_included(dim):
    rng = np.random.default_rng(dim)
    for trial in range(30):
        pts = rng.uniform(0, 100, (int(rng.integers(1, 40)), dim))
        if trial % 2:
            pts = np.round(pts / 20) * 20          # a coarse grid: equal distances and repeated points
        start = rng.uniform(0, 100, dim)
        got = nearest_neighbour_tour(torch.as_tensor(pts, dtype=DT), torch.as_tensor(start, dtype=DT))
        assert got.tolist() == literal_greedy(pts, start)

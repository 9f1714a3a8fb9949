"""A lone rover's itinerary (uncertain_bo/planning/itinerary.py): how many targets a call decides, the order it
drives them in, and what is left to hand out."""
import itertools
import math
from types import SimpleNamespace

import torch

from uncertain_bo.planning.itinerary import Itinerary, lone_batch, visiting_order
from uncertain_bo.planning.keep_out import KeepOut

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)


def test_the_batch_size_of_a_lone_rovers_call():
    single = SimpleNamespace(batch_size=1, plans_route=False)
    batch = SimpleNamespace(batch_size=4, plans_route=False)
    assert lone_batch(batch, index=2, n_design=3, confirming=False, route_horizon=1) == (1, 1)    # design: one
    assert lone_batch(batch, index=5, n_design=3, confirming=True, route_horizon=1) == (1, 1)     # confirmation
    assert lone_batch(batch, index=3, n_design=3, confirming=False, route_horizon=3) == (4, 1)
    assert lone_batch(single, index=3, n_design=3, confirming=False, route_horizon=3) == (3, 3)   # look-ahead
    assert lone_batch(single, index=3, n_design=3, confirming=False, route_horizon=1) == (1, 1)


def test_the_visiting_order_is_the_shortest_open_path_and_a_horizon_keeps_its_first_stop():
    targets = torch.tensor([[9.0, 9.0], [1.0, 1.0], [5.0, 0.0], [2.0, 8.0]], dtype=torch.float64)
    start = torch.tensor([0.0, 0.0], dtype=torch.float64)

    def length(order):
        path = [start] + [targets[i] for i in order]
        return sum(math.dist(a.tolist(), b.tolist()) for a, b in zip(path, path[1:]))
    best = min(itertools.permutations(range(4)), key=length)     # oracle: every order tried
    order = visiting_order(targets, start, horizon=1)
    assert sorted(order) == [0, 1, 2, 3] and math.isclose(length(order), length(best))
    assert visiting_order(targets, start, horizon=4) == order[:1]


def test_a_keep_out_zone_drops_the_resumed_target_and_the_queued_ones_inside_it():
    itinerary = Itinerary()
    itinerary.resumed = torch.tensor([2.0, 2.0], dtype=torch.float64)
    itinerary.queue = [torch.tensor([2.5, 2.0], dtype=torch.float64), torch.tensor([8.0, 8.0], dtype=torch.float64)]
    keep_out = KeepOut()
    keep_out.add(torch.tensor([2.0, 2.0], dtype=torch.float64), 1.0)
    itinerary.drop_inside(keep_out)
    assert itinerary.take_resumed() is None and itinerary.queued(BOUNDS).tolist() == [[8.0, 8.0]]
    others = torch.tensor([[5.0, 5.0]], dtype=torch.float64)
    assert itinerary.pending(others).tolist() == [[8.0, 8.0], [5.0, 5.0]]    # queued first, then the others'
    assert itinerary.clear() == 1 and itinerary.pending(None) is None and itinerary.queued(BOUNDS).shape == (0, 2)

"""The initial design (uncertain_bo/planning/initial_design.py) as one rover of a team sees it (rover_design)."""
import pytest
import torch

from uncertain_bo.planning.initial_design import rover_design

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
# a hand-made design on a line (no two distances equal), so the tours are known without computing one
DESIGN = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [6.0, 0.0], [10.0, 0.0]], dtype=torch.float64)


def test_the_slots_not_handed_out_are_the_targets_nobody_took_toured_from_the_rover():
    measured = DESIGN[:1]                 # slot 0 was handed out and measured
    pending = DESIGN[3:4]                 # another rover drives to (6, 0)
    design = rover_design(DESIGN, 2, torch.tensor([9.0, 0.0]), measured, pending, BOUNDS)
    # slots 0-1 as designed; then from x = 9 the targets left (1, 3, 10): 10, 3, 1
    assert design[:, 0].tolist() == [0.0, 1.0, 10.0, 3.0, 1.0]


def test_nothing_taken_is_the_whole_rest_toured_and_a_used_up_design_is_unchanged():
    design = rover_design(DESIGN, 0, torch.tensor([2.6, 0.0]), None, None, BOUNDS)
    assert design[:, 0].tolist() == [3.0, 1.0, 0.0, 6.0, 10.0]
    assert rover_design(DESIGN, 5, torch.tensor([0.0, 0.0]), DESIGN, None, BOUNDS) is DESIGN


def test_everything_taken_is_padded_with_the_design_itself():
    # the slot handed out, then the design from its start (the keep-out rule still judges every pick)
    design = rover_design(DESIGN, 1, torch.tensor([0.0, 0.0]), DESIGN[:2], DESIGN[2:], BOUNDS)
    assert design[:, 0].tolist() == [0.0, 0.0, 1.0, 3.0, 6.0]


def test_a_design_target_moved_out_of_a_keep_out_zone_is_taken_where_it_was_measured():
    from uncertain_bo.planning.keep_out import KeepOut
    zones = KeepOut()
    zones.add(torch.tensor([3.0, -0.2], dtype=torch.float64), 0.5)    # (3, 0) is measured at (3, 0.3) instead
    measured = zones.admissible(DESIGN[2], BOUNDS).reshape(1, 2)
    assert measured.tolist()[0] == pytest.approx([3.0, 0.3], abs=1e-5)
    design = rover_design(DESIGN, 1, torch.tensor([2.2, 0.0]), measured, None, BOUNDS, zones)
    # slot 0 as designed; from x = 2.2 the targets left (1, 0, 6, 10), not (3, 0) again
    assert design[:, 0].tolist() == [0.0, 1.0, 0.0, 6.0, 10.0]
    # without the zone the same measurement takes nothing: (3, 0) is the nearest target left
    assert rover_design(DESIGN, 1, torch.tensor([2.2, 0.0]), measured, None, BOUNDS)[1, 0] == 3.0

"""A decision (uncertain_bo/planning/decision.py): a team rover's request checked, the journal record of a decision."""
import math

import pytest
import torch

from uncertain_bo.planning.decision import Decision, decision_record, team_request

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)


def test_a_decision_record_has_the_decisions_fields_and_no_nan():
    target = torch.tensor([1.0, 2.0], dtype=torch.float64)
    d = Decision(4, target, 'initial', 0.5, fit_seconds=0.25)
    record = decision_record(d, target, batch=1, position=0)
    assert record['type'] == 'decision' and record['index'] == 4 and record['target'] == [1.0, 2.0]
    assert record['phase'] == 'initial' and record['seconds'] == 0.5 and record['fit_seconds'] == 0.25
    assert record['acquisition_value'] is None and record['beta'] is None    # NaN in the initial phase: null
    assert math.isfinite(record['wall_time'])
    assert not {'kept_out_from', 'batch', 'rover'} & set(record)


def test_a_moved_target_its_batch_and_its_rover_are_recorded():
    proposed = torch.tensor([5.0, 5.0], dtype=torch.float64)
    moved = torch.tensor([6.5, 5.0], dtype=torch.float64)
    d = Decision(2, moved, 'acquisition', 1.0, acquisition_value=0.7, beta=3.0, rover='rover1')
    record = decision_record(d, proposed, batch=3, position=1)
    assert record['kept_out_from'] == [5.0, 5.0] and record['target'] == [6.5, 5.0]
    assert record['batch'] == {'size': 3, 'position': 1} and record['rover'] == 'rover1'
    assert record['acquisition_value'] == 0.7 and record['beta'] == 3.0
    # the same values in another tensor are a proposal the keep-out rule left alone only when it is the same object
    assert 'kept_out_from' not in decision_record(d, moved, batch=1, position=0)


def test_a_team_request_comes_back_on_the_bounds_with_one_pending_target_as_a_row():
    pending, position = team_request([1.0, 2.0], (3, 4), BOUNDS)
    assert pending.shape == (1, 2) and pending.dtype == torch.float64 and pending.tolist() == [[1.0, 2.0]]
    assert position.shape == (2,) and position.tolist() == [3.0, 4.0]
    assert team_request(None, None, BOUNDS) == (None, None)


@pytest.mark.parametrize('pending, position, message', [
    ([[1.0, 2.0, 3.0]], None, r'pending must be \(p, 2\)'),
    ([[1.0, float('nan')]], None, r'pending must be \(p, 2\)'),
    (None, [1.0, 2.0, 3.0], r'position must be \(2,\)'),
    (None, [float('inf'), 1.0], r'position must be \(2,\)'),
])
def test_a_team_request_that_is_not_finite_targets_is_refused(pending, position, message):
    with pytest.raises(ValueError, match=message):
        team_request(pending, position, BOUNDS)

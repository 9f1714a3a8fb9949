"""A decision (uncertain_bo/planning/decision.py): a team rover's request checked, the journal record of a decision."""
import math

import pytest
import torch

from uncertain_bo.planning.decision import Decision, batch_decisions, decision_record, team_request

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


def test_a_batch_bills_the_earlier_fits_to_its_first_decision_in_visiting_order():
    from uncertain_bo.acquisition import Proposal
    picks = [Proposal(torch.tensor([float(i), 0.0]), 'acquisition', 0.1 * i, 2.0, seconds=(0.5 + i,))
             for i in range(3)]
    targets = [p.target for p in picks]
    decisions = batch_decisions(picks, targets, order=[2, 0, 1], indices=[7, 8, 9], seconds=9.0, fit_seconds=0.4,
                                billed=0.25, rover='r1')
    assert [d.index for d in decisions] == [7, 8, 9] and [d.target[0].item() for d in decisions] == [2.0, 0.0, 1.0]
    assert [d.seconds for d in decisions] == [2.5 + 0.25, 0.5, 1.5]        # each pick's own time, the first billed
    assert [d.fit_seconds for d in decisions] == [0.4 + 0.25, 0.0, 0.0]
    assert all(d.rover == 'r1' for d in decisions) and decisions[0].acquisition_value == pytest.approx(0.2)
    # a route horizon's stop was decided from the whole look-ahead: it takes the batch's whole wall time
    stop = batch_decisions(picks, targets, order=[1], indices=[7], seconds=9.0, fit_seconds=0.0, billed=0.0,
                           horizon=3)
    assert len(stop) == 1 and stop[0].seconds == 9.0 and stop[0].rover is None

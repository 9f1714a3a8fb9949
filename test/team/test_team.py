"""A team of simulated rovers sharing one planner (uncertain_bo/team/mission.py): merged once, pending targets,
drops."""
import json

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian
from uncertain_bo.sim.mission import Mission, mission_parameters
from uncertain_bo.team.mission import Team, strip_bounds, team_parameters


def small_field(**explorer):
    """A 60 m x 60 m field, fixed GP hyperparameters (no fits): a mission takes about a second."""
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    return mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
                               'ekf': start, 'explorer': {'max_measurements': 8, 'n_initial': 4, 'refit_every': 0,
                                                          **explorer}})


def record_suggestions(team):
    """Wrap each planner's suggest: returns the list of ``(rover, pending (p, 2) or None, target)`` it fills."""
    calls = []
    for planner in team.planners:
        original = planner.suggest

        def suggest(*args, _original=original, **kwargs):
            target = _original(*args, **kwargs)
            calls.append((kwargs.get('rover'), kwargs.get('pending'), target.clone()))
            return target
        planner.suggest = suggest
    return calls


def test_two_rovers_store_every_measurement_once_in_the_shared_planner_with_its_rover(tmp_path):
    team = Team(small_field(), rovers=2, journal=tmp_path / 'journal.jsonl')
    result = team.run(max_sim_time=3000.0)
    planner = team.planners[0]
    assert result.completed and len(team.planners) == 1 and planner.n == 8 and len(result.measurements) == 8
    records = [json.loads(line) for line in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    observations = [r for r in records if r['type'] == 'observation']
    keys = [(r['rover'], r['seq']) for r in observations]
    assert len(observations) == 8 and len(set(keys)) == 8
    assert [r['index'] for r in observations] == list(range(8))
    by_rover = {name: [seq for rover, seq in keys if rover == name] for name in ('rover0', 'rover1')}
    assert all(seqs == list(range(len(seqs))) and seqs for seqs in by_rover.values())   # both measured, in order
    # each stored measurement is the one its rover took: the planner's rows are the journal's, rover by rover
    assert [rover for rover, _ in result.measurements] == [r['rover'] for r in observations]
    for (rover, m), r in zip(result.measurements, observations):
        assert np.allclose(r['location']['mean'], m.pose.xy) and r['y'] == m.reading.value
    assert torch.allclose(planner.y, torch.tensor([m.reading.value for _, m in result.measurements],
                                                  dtype=planner.y.dtype))
    decisions = [r for r in records if r['type'] == 'decision']
    assert {d['rover'] for d in decisions} == {'rover0', 'rover1'}


def test_a_rover_is_never_sent_to_a_target_another_rover_is_driving_to():
    """GP-BUCB alone proposes a target 3 mm from a pending one here (its fantasised reading keeps the high mean
    there); the pending targets' zones (uncertain_bo/planning/keep_out.py) send the rover at least 2 execution-noise std
    (1.5 m) away."""
    team = Team(small_field(max_measurements=10), rovers=3)
    calls = record_suggestions(team)
    result = team.run(max_sim_time=3000.0)
    assert result.completed and team.planners[0].n == 10
    with_pending = [(p, t) for _, p, t in calls if p is not None]
    assert len(with_pending) >= 8                           # not vacuous: most decisions had rovers on the way
    assert max(len(p) for p, _ in with_pending) == 2
    for pending, target in with_pending:
        assert float((pending - target).norm(dim=-1).min()) > 1.0   # farther than the arrival tolerance
    # the initial design is shared out, not started over by every rover: its 4 targets go to 4 decisions
    design = team.planners[0].initial_design
    initial = torch.stack([d.target for d in team.planners[0].decisions if d.phase == 'initial'])
    assert len(initial) == 4 and torch.cdist(design, initial).min(-1).values.max() < 1e-9


def test_a_team_with_more_rovers_than_n_initial_starts_each_rover_on_a_design_target_of_its_own():
    """Four rovers, ``n_initial: 3``: the fourth asks before any reading is stored, with every design target pending
    (the GP has no data for an acquisition). It gets the next point of the design's Sobol sequence: the four first
    targets are the 4-point design of the seed, each sent once, and the mission completes."""
    team = Team(small_field(n_initial=3), rovers=4)
    result = team.run(max_sim_time=3000.0)
    planner = team.planners[0]
    assert result.completed and planner.n == 8
    initial = torch.stack([d.target for d in planner.decisions if d.phase == 'initial'])
    unit = torch.quasirandom.SobolEngine(2, scramble=True, seed=planner.seed).draw(4, dtype=torch.float64)
    sobol = planner.bounds[0] + unit * (planner.bounds[1] - planner.bounds[0])
    assert len(initial) == 4 and torch.cdist(sobol, initial).min(-1).values.max() < 1e-9
    assert [d.phase for d in planner.decisions[:4]] == ['initial'] * 4


def test_a_silent_rover_is_dropped_its_target_released_and_the_other_completes_the_mission():
    team = Team(small_field(), rovers=2, silence_timeout=20.0)
    calls = record_suggestions(team)
    team.fail('rover1', at=27.0)     # after its first measurement, driving to its second target
    dropped_target, decided_before_drop = [], []
    original_drop = team.drop

    def drop(rover, reason=''):
        dropped_target.append(team.members[rover].view.target)
        decided_before_drop.append(len(calls))
        original_drop(rover, reason)
        assert len(team.pending(exclude='rover0')) == 0      # released at once
    team.drop = drop
    result = team.run(max_sim_time=3000.0)
    assert result.dropped == ['rover1'] and dropped_target[0] is not None   # it was driving to a target
    assert result.completed and team.planners[0].n == 8 and len(result.measurements) == 8
    rovers = [rover for rover, _ in result.measurements]
    assert 'rover1' in rovers and rovers[-1] == 'rover0'
    last_rover1 = max(i for i, r in enumerate(rovers) if r == 'rover1')
    assert all(r == 'rover0' for r in rovers[last_rover1 + 1:])
    # every observation kept once, each with its rover: the planner holds exactly the team's measurements
    assert len(team._merged) == 8 and sorted(team._merged.values()) == list(range(8))
    # rover0's decisions after the drop no longer see rover1's target pending
    later = [p for rover, p, _ in calls[decided_before_drop[0]:]]
    assert later and all(p is None for p in later) and all(rover == 'rover0' for rover, _, _ in
                                                           calls[decided_before_drop[0]:])
    assert any(p is not None and torch.allclose(p, dropped_target[0].reshape(1, -1)) for _, p, _ in calls)


def test_a_duplicated_or_late_measurement_is_merged_once():
    team = Team(small_field(), rovers=2)
    planner = team.planners[0]
    loc = Gaussian(torch.tensor([[10.0, 12.0]], dtype=torch.float64), torch.eye(2, dtype=torch.float64))
    target = torch.tensor([10.0, 12.0], dtype=torch.float64)
    assert team.merge('rover1', 1, target, loc, 3.0) == 0          # seq 1 arrives first (seq 0 delayed)
    assert team.merge('rover1', 1, target, loc, 3.0) == 0          # re-sent: already merged
    assert team.merge('rover0', 1, target, loc, 4.0) == 1          # another rover's seq 1 is another measurement
    assert team.merge('rover1', 0, target, loc, 5.0) == 2          # the delayed one still joins, once
    assert team.merge('rover1', 0, target, loc, 5.0) == 2
    assert planner.n == 3 and team.duplicates == 2 and planner.y.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(KeyError, match='unknown rover'):
        team.merge('rover7', 0, target, loc, 1.0)


def test_a_team_of_one_is_the_single_rover_mission():
    # a team rover decides one target at a time with the others' pending; the route horizon is a lone rover's
    single = Mission(small_field(route_horizon=1)).run(max_sim_time=3000.0)
    team = Team(small_field(route_horizon=1), rovers=1).run(max_sim_time=3000.0)
    assert team.completed and len(team.measurements) == len(single.measurements) == 8
    for (rover, a), b in zip(team.measurements, single.measurements):
        assert rover == 'rover0' and a.index == b.index and np.array_equal(a.target, b.target)
        assert a.reading == b.reading and np.array_equal(a.pose.xy, b.pose.xy) and np.array_equal(a.pose.cov,
                                                                                                  b.pose.cov)
    for a, b in zip(team.recommendations, single.recommendations):
        assert torch.equal(a.target, b.target) and a.mean == b.mean
    assert team.sim_time == single.sim_time


def test_independent_rovers_split_the_budget_and_lawnmowers_their_strips():
    team = Team(small_field(method='lawnmower', max_measurements=5), rovers=2, sharing=False, partition=True)
    result = team.run(max_sim_time=3000.0)
    assert result.completed and [p.n for p in team.planners] == [3, 2]
    for planner, strip in zip(team.planners, ([0.0, 30.0], [30.0, 60.0])):
        x = planner.targets[:, 0]
        assert bool(((x >= strip[0]) & (x <= strip[1])).all())
    best = team.recommend()
    assert best.mean == max(p.recommend().mean for p in team.planners)


def test_team_parameters_space_the_starts_and_seed_each_rover():
    params = small_field()
    p = [team_parameters(params, 3, i, spacing=10.0, sharing=False, partition=True) for i in range(3)]
    assert [q['sim_rover']['initial_x'] for q in p] == [20.0, 30.0, 40.0]
    assert [q['ekf']['initial_x'] for q in p] == [20.0, 30.0, 40.0]
    assert len({q['sim_rover']['seed'] for q in p}) == 3 and p[0]['sim_rover']['seed'] == 1
    assert [q['explorer']['max_measurements'] for q in p] == [3, 3, 2]
    assert p[2]['explorer']['search_bounds'] == strip_bounds([0.0, 60.0, 0.0, 60.0], 3, 2) == [40.0, 60.0, 0.0, 60.0]
    with pytest.raises(ValueError, match='partition needs sharing=False'):
        Team(params, rovers=2, partition=True)
    with pytest.raises(ValueError, match='rovers must be'):
        Team(params, rovers=0)


def test_the_ablation_without_pending_targets_sends_rovers_where_another_is_going():
    """``pending_targets=False`` (the bench's ``pending=false``) is what the pending mechanism prevents."""
    team = Team(small_field(max_measurements=10), rovers=3, spacing=2.0, pending_targets=False)
    calls = record_suggestions(team)
    team.run(max_sim_time=3000.0)
    assert all(p is None for _, p, _ in calls)
    going = [t for _, _, t in calls[:3]]      # the three rovers' first targets, decided at the start
    assert float(torch.cdist(torch.stack(going), torch.stack(going)).max()) < 1e-9

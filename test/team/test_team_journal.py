"""A team resuming its journal (uncertain_bo/team/journal.py, team_planner.py) and a rover joining mid-mission."""
import json
import logging

import pytest
import torch

from uncertain_bo.distributions import Gaussian
from uncertain_bo.team.mission import Team

from .test_team import record_suggestions, small_field


class Interrupt(Exception):
    """The planner's host stops (a crash) right after a decision was journaled."""


def interrupted_mission(journal, k, rovers=2):
    """Run a team until the first decision after its ``k``-th measurement, then stop it (the decision is journaled,
    its target not yet sent). Returns rover -> the target it was driving to or had just been given (the oracle:
    read from the running team, not from the journal)."""
    team = Team(small_field(), rovers=rovers, journal=journal)
    planner = team.planners[0]
    original = planner.suggest
    expected = {}

    def suggest(*args, **kwargs):
        target = original(*args, **kwargs)
        if planner.n >= k:
            expected.update({name: m.view.target.clone() for name, m in team.members.items()
                             if m.view.target is not None and name != kwargs['rover']})
            expected[kwargs['rover']] = target.clone()
            raise Interrupt
        return target
    planner.suggest = suggest
    with pytest.raises(Interrupt):
        team.run(max_sim_time=3000.0)
    assert planner.n == k
    return expected


def observations(journal):
    return [r for r in map(json.loads, journal.read_text().splitlines()) if r['type'] == 'observation']


def test_a_restarted_team_resumes_every_rovers_pending_target_and_completes_the_budget_once(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    expected = interrupted_mission(journal, 3)
    assert set(expected) == {'rover0', 'rover1'}        # both rovers had a target pending at the crash
    before = observations(journal)
    team = Team(small_field(), rovers=2, journal=journal)
    planner = team.planners[0]
    assert planner.n == 3 and team.released == {}
    for name, target in expected.items():
        assert torch.equal(team.members[name].view.resumed_target, target)
        assert team.members[name].view.seq == sum(r['rover'] == name for r in before)
        # its travel budget goes on from its own journaled totals (not the last rover's)
        own = [r['distance_driven_m'] for r in before if r['rover'] == name]
        assert team.members[name].explorer.budget.distance == pytest.approx(own[-1] if own else 0.0)
    calls = record_suggestions(team)
    result = team.run(max_sim_time=3000.0)
    assert result.completed and planner.n == 8 and len(result.measurements) == 5   # the same total budget
    obs = observations(journal)
    assert obs[:3] == before and [r['index'] for r in obs] == list(range(8))
    keys = [(r['rover'], r['seq']) for r in obs]
    assert len(set(keys)) == 8
    for name in expected:                                  # each rover numbers on: 0, 1, 2, ... across the restart
        seqs = [s for rover, s in keys if rover == name]
        assert seqs == list(range(len(seqs)))
        # its first measurement after the restart is at its pending target, before it was given a new one
        first = next(r for r in obs[3:] if r['rover'] == name)
        assert torch.allclose(torch.tensor(first['target']), expected[name].to(torch.float64))
    assert all(rover in expected for rover, _, _ in calls)
    # every observation in the model once: the planner's readings are the journal's, in order
    assert planner.y.tolist() == [r['y'] for r in obs]


def test_a_measurement_sent_again_after_the_restart_is_merged_once(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    interrupted_mission(journal, 3)
    before = observations(journal)
    team = Team(small_field(), rovers=2, journal=journal)
    planner = team.planners[0]
    old = before[1]
    loc = Gaussian(torch.tensor([old['location']['mean']]), torch.tensor([old['location']['covariance']]))
    index = team.merge(old['rover'], old['seq'], torch.tensor(old['target']), loc, old['y'])
    assert index == old['index'] and planner.n == 3 and team.duplicates == 1
    seq = team.members[old['rover']].view.seq
    assert seq == max(r['seq'] for r in before if r['rover'] == old['rover']) + 1
    assert team.merge(old['rover'], seq, torch.tensor(old['target']), loc, 7.0) == 3 and planner.n == 4
    assert observations(journal)[-1]['seq'] == seq and len(observations(journal)) == 4


def test_a_rover_absent_from_the_restarted_team_has_its_pending_target_released(tmp_path, caplog):
    journal = tmp_path / 'journal.jsonl'
    expected = interrupted_mission(journal, 3)
    with caplog.at_level(logging.WARNING, logger='uncertain_bo.team.mission'):
        team = Team(small_field(), rovers=1, journal=journal)
    assert set(team.released) == {'rover1'} and torch.equal(team.released['rover1'], expected['rover1'])
    assert 'rover1 is in the journal but not in the team' in caplog.text
    assert torch.equal(team.members['rover0'].view.resumed_target, expected['rover0'])
    calls = record_suggestions(team)
    result = team.run(max_sim_time=3000.0)
    assert result.completed and team.planners[0].n == 8
    assert calls and all(rover == 'rover0' and pending is None for rover, pending, _ in calls)   # nothing pending


def test_a_damaged_journal_line_is_skipped_and_counted_and_the_team_goes_on(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    interrupted_mission(journal, 3)
    lines = journal.read_text().splitlines()
    i = max(j for j, line in enumerate(lines) if json.loads(line)['type'] == 'observation' and
            json.loads(line)['index'] == 1)
    lines[i] = lines[i].replace('"y":', '"y":NaN,"was":', 1)
    journal.write_text('\n'.join(lines) + '\n')
    team = Team(small_field(), rovers=2, journal=journal)
    planner = team.planners[0]
    assert planner.n == 2 and planner.journal_damage['records_skipped'] == 1 and planner.next_index == 3
    result = team.run(max_sim_time=3000.0)
    assert result.completed and planner.n == 8
    indices = [r['index'] for r in observations(journal)]
    assert indices == list(range(9))                    # the damaged record stays in the file, its index unused
    assert planner.next_index == 9                      # index 1 was lost, never used again


def test_a_rover_joins_mid_mission_decides_with_the_others_pending_and_measures_into_the_one_model(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    team = Team(small_field(max_measurements=10), rovers=2, journal=journal)
    calls = record_suggestions(team)
    assert team.join(at=30.0) == 'rover2'
    result = team.run(max_sim_time=3000.0)
    planner = team.planners[0]
    assert result.completed and planner.n == 10 and 'rover2' in team.members
    first = next(i for i, (rover, _, _) in enumerate(calls) if rover == 'rover2')
    assert first > 0 and calls[first][1] is not None and len(calls[first][1]) == 2    # both others on their way
    assert torch.cdist(calls[first][2].reshape(1, -1), calls[first][1]).min() > 1.0
    obs = observations(journal)
    keys = [(r['rover'], r['seq']) for r in obs]
    assert len(obs) == 10 and len(set(keys)) == 10 and [r['index'] for r in obs] == list(range(10))
    joined = [s for rover, s in keys if rover == 'rover2']
    assert joined and joined == list(range(len(joined))) and obs[0]['rover'] != 'rover2'
    assert planner.y.tolist() == [r['y'] for r in obs]

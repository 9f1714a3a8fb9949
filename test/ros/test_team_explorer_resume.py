"""Team explorer node over real rclpy topics: a restart resumes every rover's pending target from the journal, and a
rover added to ``rovers`` at run time joins the mission.

Own rclpy context on ROS domain 211 (this worktree's range 210-219).
"""
import json

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from ros_spin import spin_until  # noqa: E402
import team_probe  # noqa: E402

DOMAIN_ID = 211
ALL = ('rover0', 'rover1', 'rover2')
STARTS = {'rover0': np.array([5.0, 5.0]), 'rover1': np.array([15.0, 5.0]), 'rover2': np.array([10.0, 15.0])}


def make_team(context, tmp_path, **params):
    return team_probe.make_team(context, tmp_path, **{
        'max_measurements': 5, 'rovers': ['rover0', 'rover1'], 'silence_timeout': 30.0, 'diagnostics_period': 0.5,
        **params})


class Probe(team_probe.TeamProbe):
    """The three rovers' estimates and sensors, and the goals each is sent."""

    def __init__(self, context):
        super().__init__(context, ALL)

    def at_goal_or_start(self, rover, value):
        self.report(rover, self.goal(rover) + 0.1 if self.goals[rover] else STARTS[rover], value)


def spin(context, node, probe):
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    return ex


def observations(tmp_path):
    return [r for r in map(json.loads, (tmp_path / 'journal.jsonl').read_text().splitlines())
            if r['type'] == 'observation']


def test_a_restarted_team_explorer_resends_each_pending_target_and_a_rover_joins_by_parameter(context, tmp_path):
    # 1. a mission: rover0 measures once and gets its second target; rover1 is driving to its first; the node stops
    node, probe = make_team(context, tmp_path), Probe(context)
    ex = spin(context, node, probe)
    try:
        assert spin_until(ex, lambda: probe.goals['rover0'] and probe.goals['rover1'],
                          every=lambda: [probe.report(r, STARTS[r], 1.0) for r in ('rover0', 'rover1')])
        first0 = probe.goal('rover0')
        assert spin_until(ex, lambda: node.planner.n == 1 and node.rovers['rover0'].view.target is not None,
                          timeout=10.0, every=lambda: [probe.report('rover0', first0 + 0.1, 42.0),
                                                       probe.report('rover1', STARTS['rover1'], 1.0)])
        pending = {r: node.rovers[r].view.target.numpy().copy() for r in ('rover0', 'rover1')}
        assert not np.allclose(pending['rover0'], first0)          # rover0's second target
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    assert [(r['rover'], r['seq']) for r in observations(tmp_path)] == [('rover0', 0)]

    # 2. restarted on the same run_dir: each rover is sent its pending target again, nothing decided anew
    node, probe = make_team(context, tmp_path), Probe(context)
    ex = spin(context, node, probe)
    try:
        assert node.planner.n == 1 and node.rovers['rover0'].view.seq == 1 and node.rovers['rover1'].view.seq == 0
        assert node.rovers['rover0'].measurements == 1
        assert spin_until(ex, lambda: probe.goals['rover0'] and probe.goals['rover1'],
                          every=lambda: [probe.report(r, STARTS[r], 1.0) for r in ('rover0', 'rover1')])
        for r in ('rover0', 'rover1'):
            assert np.allclose(probe.goal(r), pending[r]) and node.rovers[r].explorer.goal_reason == 'resumed'
        # 3. rover2 joins: a run-time change of rovers (what `ros2 param set` does); removing a rover is refused
        refused = node.set_parameters([Parameter('rovers', value=['rover0'])])[0]
        assert not refused.successful and 'cannot be removed' in refused.reason
        assert node.set_parameters([Parameter('rovers', value=list(ALL))])[0].successful
        assert 'rover2' in node.rovers
        assert spin_until(ex, lambda: probe.goals['rover2'], timeout=10.0,
                          every=lambda: [probe.report(r, STARTS[r], 1.0) for r in ALL])
        view2 = node.rovers['rover2'].view
        assert view2.pending_at_decision == 2                           # decided with both others' targets pending
        assert min(np.linalg.norm(probe.goal('rover2') - pending[r]) for r in pending) > 1.0
        # 4. every rover measures at its goal until the team's budget is reached
        assert spin_until(ex, lambda: node.done, timeout=30.0,
                          every=lambda: [probe.at_goal_or_start(r, 40.0 + i) for i, r in enumerate(ALL)])
        assert node.completed and node.planner.n == 5
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    obs = observations(tmp_path)
    keys = [(r['rover'], r['seq']) for r in obs]
    assert len(obs) == 5 and len(set(keys)) == 5 and [r['index'] for r in obs] == list(range(5))
    for r in ('rover0', 'rover1'):        # each resumed rover's first measurement after the restart: its pending target
        first = next(o for o in obs[1:] if o['rover'] == r)
        assert np.allclose(first['target'], pending[r])
    assert ('rover0', 1) in keys and ('rover1', 0) in keys and ('rover2', 0) in keys
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert set(result['rovers']) == set(ALL) and sum(v['measurements'] for v in result['rovers'].values()) == 5

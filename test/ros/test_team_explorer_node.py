"""Team explorer node over real rclpy topics: two namespaced rovers, one planner; a silent rover is dropped.

Own rclpy context on ROS domain 195 (this worktree's range 190-209).
"""
import json
import re

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from uncertain_bo.parameters.specs import ParameterError  # noqa: E402
from ros_spin import spin_until  # noqa: E402
import team_probe  # noqa: E402

DOMAIN_ID = 195
ROVERS = ('rover0', 'rover1')


def make_team(context, tmp_path, **params):
    return team_probe.make_team(context, tmp_path, **{
        'max_measurements': 3, 'rovers': list(ROVERS), 'silence_timeout': 1.0, 'diagnostics_period': 0.2, **params})


def test_two_rovers_one_planner_and_a_silent_rover_is_dropped(context, tmp_path):
    node = make_team(context, tmp_path)
    probe = team_probe.TeamProbe(context, ROVERS)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    try:
        starts = {'rover0': np.array([5.0, 5.0]), 'rover1': np.array([15.0, 5.0])}
        assert spin_until(ex, lambda: all(probe.goals.values()),
                          every=lambda: [probe.report(r, starts[r], 1.0) for r in ROVERS])
        g0, g1 = probe.goal('rover0'), probe.goal('rover1')
        assert np.linalg.norm(g0 - g1) > 1.0                       # the second decision had the first pending
        assert node.team.pending(exclude='rover0').shape == (1, 2)  # rover1's target is pending for rover0
        # rover1 goes silent while rover0 drives (reports on the way): rover1 is dropped, its target released
        assert spin_until(ex, lambda: node.team.dropped == ['rover1'], timeout=10.0,
                          every=lambda: probe.report('rover0', starts['rover0'], 1.0))
        assert node.rovers['rover1'].view.target is None and len(node.team.pending(exclude='rover0')) == 0
        assert node.planner.n == 0
        # rover0 measures at each of its targets until the team's budget is reached, deciding alone
        assert spin_until(ex, lambda: node.done, timeout=30.0,
                          every=lambda: probe.report('rover0', probe.goal('rover0') + 0.1, 42.0))
        assert node.team.dropped == ['rover1'] and node.rovers['rover0'].view.pending_at_decision == 0
        assert spin_until(ex, lambda: len(probe.diagnostics) >= 2 and len(probe.markers) >= 1, timeout=5.0)
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    records = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    obs = [r for r in records if r['type'] == 'observation']
    assert [(r['rover'], r['seq']) for r in obs] == [('rover0', 0), ('rover0', 1), ('rover0', 2)]
    assert {r['rover'] for r in records if r['type'] == 'decision'} == set(ROVERS)
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['measurements'] == 3 and result['rovers']['rover0']['measurements'] == 3
    # the drop names the silent input's topic and type
    assert re.match(r'no (pose on /rover1/odometry/filtered \(nav_msgs/msg/Odometry\)|reading on /rover1/reading '
                    r'\(sensor_msgs/msg/Temperature\)) for 1\.\d s.*silence_timeout = 1 s',
                    result['rovers']['rover1']['dropped'])
    # one DiagnosticStatus per rover, named with it; the dropped one says so
    last = {s.name: s for s in probe.diagnostics[-1].status}
    assert set(last) == {'team_explorer: rover0 exploration', 'team_explorer: rover1 exploration'}
    assert last['team_explorer: rover1 exploration'].level == DiagnosticStatus.WARN
    assert last['team_explorer: rover1 exploration'].message.startswith('dropped')
    # markers: the shared scene and each rover's path
    namespaces = {m.ns for m in probe.markers[-1].markers}
    assert {'measurements', 'recommendation', 'rover0/path', 'rover1/path'} <= namespaces


def test_rovers_must_be_distinct_namespaces(context, tmp_path):
    with pytest.raises(ParameterError, match='twice'):
        make_team(context, tmp_path, rovers=['rover0', 'rover0'])
    with pytest.raises(ParameterError, match='not a valid namespace'):
        make_team(context, tmp_path, rovers=['/rover0'])


def test_every_rover_silent_ends_the_mission_not_completed(context, tmp_path):
    node = make_team(context, tmp_path, silence_timeout=0.5)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    try:
        assert spin_until(ex, lambda: node.done, timeout=5.0)
        assert not node.completed and node.team.dropped == list(ROVERS) and node.planner.n == 0
    finally:
        ex.shutdown()
        node.destroy_node()
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['stopped_because'] == 'every rover was dropped' and result['recommended_target'] is None
    assert all(result['rovers'][r]['dropped'] for r in ROVERS)

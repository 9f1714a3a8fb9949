"""Team explorer node's log at the end of a mission: the team's end once; a rover that ends on its own (here: its
sensor's readings are all refused, max_consecutive_skips = 1) once, at info, with its name and reason; the
library's log records (forwarded to the node's logger, as the executable does) do not repeat either.

The node's log is read where an operator reads it: the ROS logger's console output (stderr). Own rclpy context on
ROS domain 217 (this worktree's range 215-229).
"""
import re

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.team_explorer import TEAM_EXPLORER_PARAMS, TeamExplorerNode  # noqa: E402
from ros_spin import spin_until  # noqa: E402
import team_probe  # noqa: E402

DOMAIN_ID = 217
ROVERS = ('rover0', 'rover1')
BUDGET = 4


def test_the_team_end_and_a_rovers_own_end_are_logged_once(context, tmp_path, capfd):
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'dwell_time': 0.2, 'run_dir': str(tmp_path), 'n_initial': 5,
              'tick_rate': 50.0, 'max_speed': 0.0, 'max_measurements': BUDGET, 'rovers': list(ROVERS),
              'silence_timeout': 5.0, 'reading_range': [0.0, 100.0], 'reading_timeout': 0.3, 'reading_retries': 0,
              'max_consecutive_skips': 1, 'diagnostics_period': 0.2}
    node = TeamExplorerNode(context=context, forward_library_logs=True,
                            parameter_overrides=parameter_overrides(values, TEAM_EXPLORER_PARAMS))
    probe = team_probe.TeamProbe(context, ROVERS)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    starts = {'rover0': np.array([5.0, 5.0]), 'rover1': np.array([15.0, 5.0])}

    def report():
        for r in ROVERS:      # rover1's sensor reads 1000: outside reading_range, every reading refused
            probe.report(r, probe.goal(r) + 0.1 if probe.goals[r] else starts[r], 1.0 if r == 'rover0' else 1000.0)

    try:
        capfd.readouterr()
        assert spin_until(ex, lambda: node.done, timeout=60.0, every=report)
        for _ in range(50):     # a few more ticks and status periods after the end
            ex.spin_once(timeout_sec=0.01)
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    assert node.completed and node.planner.n == BUDGET
    assert node.rovers['rover1'].explorer.done_reason.startswith('1 targets in a row could not be measured')
    lines = capfd.readouterr().err.splitlines()
    team_end = [s for s in lines if 'team done' in s]
    assert len(team_end) == 1 and '[INFO]' in team_end[0], team_end
    own = [s for s in lines if 'in a row could not be measured' in s]
    assert len(own) == 1, own
    assert '[INFO]' in own[0] and re.search(r'\]: rover1: ', own[0]), own
    # the team's budget ends rover0: that is the team's end, said once
    budget = [s for s in lines if f'max_measurements = {BUDGET} reached' in s]
    assert len(budget) <= 1, budget
    assert not [s for s in lines if 'mission ends' in s and 'rover' not in s], 'an end without the rover'

"""``uncertain-bo demo --rovers N``: N simulated rovers on one clock, their EKFs and pure_pursuits in namespaces and
one team_explorer, over real ROS 2 topics (uncertain_bo/ros/team_graph.py). ROS domains 196 and 197.

A 60 m x 60 m patch of the real field and 6 measurements keep each run near 15 s.
"""
import json

import pytest

pytest.importorskip('rclpy')
pytestmark = [pytest.mark.ros, pytest.mark.slow]

SMALL = """sim_rover:
  ros__parameters:
    field_extent: [0.0, 60.0, 0.0, 60.0]
    initial_x: 30.0
    initial_y: 30.0
    status_period: 0.0
ekf:
  ros__parameters:
    initial_x: 30.0
    initial_y: 30.0
explorer:
  ros__parameters:
    n_initial: 4
"""


def journal(run_dir):
    return [json.loads(line) for line in (run_dir / 'journal.jsonl').read_text().splitlines()]


def test_demo_with_two_rovers_journals_every_measurement_once_with_its_rover(tmp_path, monkeypatch, capsys):
    from uncertain_bo.cli import main
    monkeypatch.setenv('ROS_DOMAIN_ID', '196')
    params = tmp_path / 'small.yaml'
    params.write_text(SMALL)
    out = tmp_path / 'run'
    assert main(['demo', '--rovers', '2', '--measurements', '6', '--params', str(params), '--out', str(out),
                 '--timeout', '120']) == 0
    printed = capsys.readouterr().out
    assert 'team of 2: 6 measurements' in printed and "team's regret" in printed
    assert '  rover0: ' in printed and '  rover1: ' in printed
    records = journal(out)
    obs = [r for r in records if r['type'] == 'observation']
    keys = [(r['rover'], r['seq']) for r in obs]
    assert len(obs) == 6 and len(set(keys)) == 6 and [r['index'] for r in obs] == list(range(6))
    for rover in ('rover0', 'rover1'):                     # both measured, each its own sequence in order
        seqs = [seq for name, seq in keys if name == rover]
        assert seqs == list(range(len(seqs))) and seqs
    assert {r['rover'] for r in records if r['type'] == 'decision'} == {'rover0', 'rover1'}
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['completed'] and summary['dropped'] == [] and summary['final_regret'] is not None
    assert sum(r['measurements'] for r in summary['rovers'].values()) == 6
    # the rovers started where team_parameters puts them: 10 m apart along x, centred on the configured start
    parameters = json.loads((out / 'parameters.json').read_text())
    assert parameters['sim_rover']['initial_x'] == 30.0
    first = {r['rover']: r['location']['mean'] for r in reversed(obs)}
    assert first['rover0'] != first['rover1']


def test_a_silenced_rover_is_dropped_and_the_other_completes_the_mission(tmp_path, monkeypatch):
    import uncertain_bo.team.mission as team_module
    from uncertain_bo.ros.team_graph import run_team_demo
    monkeypatch.setenv('ROS_DOMAIN_ID', '197')
    decisions = []      # (rover, targets pending at the decision, rovers dropped then)
    original = team_module.RoverView.suggest

    def suggest(view):
        target = original(view)
        decisions.append((view.name, view.pending_at_decision, list(view._team.dropped)))
        return target
    monkeypatch.setattr(team_module.RoverView, 'suggest', suggest)
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    summary = run_team_demo(tmp_path, {
        'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'status_period': 0.0, **start}, 'ekf': start,
        'explorer': {'max_measurements': 6, 'n_initial': 4}}, rovers=2, timeout=120, silence=('rover1', 1),
        silence_timeout=10.0)
    assert summary['completed'] and summary['dropped'] == ['rover1'] and summary['silenced'] == 'rover1/ekf'
    assert 'no pose' in summary['rovers']['rover1']['dropped']
    obs = [r for r in journal(tmp_path) if r['type'] == 'observation']
    assert len(obs) == 6 and len({(r['rover'], r['seq']) for r in obs}) == 6
    assert obs[-1]['rover'] == 'rover0' and summary['rovers']['rover0']['measurements'] >= 4
    # before the drop rover0 decided with rover1's target pending; after it, alone (the target was released)
    before = [p for rover, p, dropped in decisions if rover == 'rover0' and not dropped]
    after = [p for rover, p, dropped in decisions if dropped]
    assert any(p == 1 for p in before) and after and all(p == 0 for p in after)
    assert all(rover == 'rover0' for rover, _, dropped in decisions if dropped)


def test_silence_argument_is_checked():
    from uncertain_bo.ros.team_graph import parse_silence
    from uncertain_bo.user_errors import UsageError
    assert parse_silence('rover1:3', 2) == ('rover1', 3) and parse_silence(None, 2) is None
    for bad, n in (('rover2:1', 2), ('rover1:0', 2), ('rover1', 2), ('rover0:1', 1)):
        with pytest.raises(UsageError, match='--silence'):
            parse_silence(bad, n)

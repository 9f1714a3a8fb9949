"""``uncertain-bo demo`` and the world outside its process (uncertain_bo/ros/graph_session.py): its DDS graph is
private unless asked, and SIGINT stops it with the report written. The end-to-end cases run the real command in a
subprocess and send it a real SIGINT."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from .test_team_graph import SMALL  # noqa: E402  (a 60 m x 60 m patch of the field: short drives)

DOMAIN_ID = 90 + os.getpid() % 10      # 90..99: apart from the other modules' domains (conftest.py)


def test_a_signal_only_asks_the_graph_to_stop_and_the_session_leaves_nothing_behind(monkeypatch):
    """In a session SIGINT sets the stop request (no KeyboardInterrupt in whatever the main thread runs); rclpy's own
    handlers are not installed; the discovery settings are the context's only, the handlers are back afterwards."""
    from uncertain_bo.ros.graph_session import graph_session
    monkeypatch.setenv('ROS_AUTOMATIC_DISCOVERY_RANGE', 'SUBNET')
    monkeypatch.setenv('ROS_LOCALHOST_ONLY', '1')
    before = signal.getsignal(signal.SIGINT)
    with graph_session('off', DOMAIN_ID) as stop:
        try:
            assert not stop
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)          # a second one changes nothing
            time.sleep(0.05)
            assert stop.signal == 'SIGINT'
        finally:
            rclpy.shutdown()
    assert signal.getsignal(signal.SIGINT) is before
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'SUBNET' and os.environ['ROS_LOCALHOST_ONLY'] == '1'
    with pytest.raises(ValueError, match='discovery must be one of off, localhost, subnet'):
        with graph_session('wan', DOMAIN_ID):
            pass


def _seen_by_a_spy(proc, out, seconds):
    """Node names a node of this process on ``DOMAIN_ID`` (discovery on this machine) sees while the demo
    subprocess ``proc`` runs, once its log ``out`` shows the first measurement."""
    ctx = rclpy.Context()
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    try:
        rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    finally:
        del os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']
    spy = rclpy.create_node('spy', context=ctx)
    seen: set[str] = set()
    try:
        deadline = time.monotonic() + 240
        while 'measurement 1/' not in out.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, out.read_text()[-3000:]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.1)
            seen |= set(spy.get_node_names())
    finally:
        spy.destroy_node()
        rclpy.shutdown(context=ctx)
    return seen - {'spy'}


#: a ROS 2 process on this machine that discovery on this machine should see: the spy's control
CONTROL = ('import rclpy, sys, time; rclpy.init(domain_id=int(sys.argv[1])); n = rclpy.create_node("control"); '
           'time.sleep(600)')


@pytest.mark.slow
def test_the_demo_is_private_by_default_and_ctrl_c_writes_its_report(tmp_path):
    """Nothing outside the demo's process sees its nodes (it publishes /clock and goal_pose, Nav2's goal topic): a
    spy on the same domain on this machine sees another process's node there but none of the demo's. A real SIGINT
    then stops the demo: exit status 130, summary.json and run.png written, the run marked interrupted."""
    params = tmp_path / 'small.yaml'
    params.write_text(SMALL)
    out = tmp_path / 'demo.log'
    cmd = [sys.executable, '-m', 'uncertain_bo.cli', 'demo', '--params', str(params), '--out', str(tmp_path / 'run'),
           '--domain-id', str(DOMAIN_ID)]
    control = subprocess.Popen([sys.executable, '-c', CONTROL, str(DOMAIN_ID)],
                               env={**os.environ, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
    with open(out, 'w') as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        seen = _seen_by_a_spy(proc, out, 3.0)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=180)
    finally:
        for p in (proc, control):
            if p.poll() is None:
                p.kill()
    text = out.read_text()
    assert 'control' in seen and not seen & {'explorer', 'sim_rover', 'ekf', 'pure_pursuit'}, (seen, text[-2000:])
    assert 'DDS: discovery off' in text
    assert rc == 130, text[-3000:]
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['interrupted'] == 'SIGINT' and not summary['completed'] and summary['measurements'] >= 1
    assert (tmp_path / 'run' / 'run.png').is_file()


def test_the_demo_graph_exchanges_stamped_commands_unless_a_file_says_otherwise(tmp_path):
    """sim_rover and pure_pursuit in the demo: TwistStamped, so the lockstep tells a late command from an answer; a
    params file's choice for either node is both nodes' (one topic, one type)."""
    from uncertain_bo.ros.graph import prepare_graph
    _, params, _ = prepare_graph(tmp_path / 'a')
    assert params['sim_rover']['stamped_cmd_vel'] is True and params['pure_pursuit']['stamped_cmd_vel'] is True
    robot = tmp_path / 'robot.yaml'
    robot.write_text('pure_pursuit:\n  ros__parameters:\n    stamped_cmd_vel: false\n')
    _, params, _ = prepare_graph(tmp_path / 'b', extra_files=[robot])
    assert params['sim_rover']['stamped_cmd_vel'] is False and params['pure_pursuit']['stamped_cmd_vel'] is False


def test_a_ros_domain_id_that_is_no_domain_id_is_one_line_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    from uncertain_bo.cli import main
    monkeypatch.setenv('ROS_DOMAIN_ID', 'abc')
    assert main(['demo', '--out', str(tmp_path / 'run')]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: ROS_DOMAIN_ID: 'abc' is not a ROS domain id from 0 to 232 (fix it, unset it or give "
                   '--domain-id)')
    assert not (tmp_path / 'run').exists()

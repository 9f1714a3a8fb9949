"""Recording on the nodes themselves (``record: true``), over real rclpy topics on the wall clock: a run of the
explorer node with its decisions on the background thread (a robot's defaults: arrival times from the middleware,
not monotonic with the cycles) and particle clouds for poses replays to the same measurements and targets; a restart
records anew and its replay says what it lacks; a disk that fails stops the recording, not the mission, and says so
on /diagnostics; a team explorer records every rover's inputs and goals.

Own rclpy context on ROS domain 170 + pid % 30, apart from the other ROS test modules.
"""
import errno
import json
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('rosbags')
pytestmark = pytest.mark.ros

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import Point, Pose, PoseArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from ros_spin import spin_until  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.explorer.states import State  # noqa: E402
from ros.test_explorer_node import Probe, make_explorer  # noqa: E402

DOMAIN_ID = 170 + os.getpid() % 30


def journal(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


#: a particle cloud's offsets from its centre (m): five particles
CLOUD = np.array([[0.0, 0.0], [0.3, 0.0], [-0.3, 0.1], [0.1, 0.3], [0.0, -0.3]])


def run_mission(context, tmp_path, measurements=2, during=None, limit=None, cloud=False):
    """The explorer node (recording, ``limit`` measurements in all) and a probe rover that jumps to each goal and reads
    there for ``measurements`` more; its pose an Odometry, or with ``cloud`` a PoseArray particle cloud (AMCL's
    ``particle_cloud``); ``during(node)`` is called once the first goal is out. Returns what the probe saw on
    /diagnostics."""
    node = make_explorer(context, tmp_path, record=True, max_measurements=limit or measurements, gp_map_cells=10,
                         **({'pose_source': 'particle_cloud'} if cloud else {}))
    probe = Probe(context)
    if cloud:
        particles = probe.node.create_publisher(PoseArray, 'particle_cloud', 10)

        def publish_cloud(xy):
            msg = PoseArray(header=cv.make_header(probe.now(), 'map'))
            msg.poses = [Pose(position=Point(x=float(x), y=float(y))) for x, y in np.asarray(xy) + CLOUD]
            particles.publish(msg)
        probe.publish_pose = publish_cloud
    diagnostics = []
    probe.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    try:
        assert spin_until(ex, lambda: bool(probe.goals), every=lambda: probe.publish_pose([10.0, 10.0]))
        if during is not None:
            during(node)
        done = node.explorer.planner.n
        for k in range(done, done + measurements):
            def at_target():
                goal = probe.goals[-1].pose.position
                probe.publish_pose(np.array([goal.x, goal.y]) + 0.1)
                probe.publish_reading(40.0 + k + 0.01 * len(probe.goals))
            assert spin_until(ex, lambda: node.explorer.planner.n > k, every=at_target, timeout=30)
        # done: the recommendation after the last measurement (a background job) has been taken on a cycle
        assert spin_until(ex, lambda: node.explorer.state is State.DONE, timeout=30)
        seen = len(diagnostics)
        assert spin_until(ex, lambda: len(diagnostics) > seen, timeout=10)     # the next diagnostics go out
    finally:
        ex.shutdown()
        node.destroy_node()                                   # closes the recording
        probe.node.destroy_node()
    return diagnostics


def test_a_wall_clock_run_with_background_decisions_replays_identically(context, tmp_path, capsys):
    """Poses as particle clouds (PoseArray): the recording keeps each cloud's bytes, the replay reads them again."""
    from uncertain_bo.cli import main

    run_mission(context, tmp_path / 'run', measurements=2, cloud=True)
    live = journal(tmp_path / 'run' / 'journal.jsonl')
    assert live[0]['parameters']['decide_in_background']
    assert main(['replay', str(tmp_path / 'run' / 'recording'), '--out', str(tmp_path / 'replay')]) == 0
    replayed = journal(tmp_path / 'replay' / 'journal.jsonl')
    for kind, fields in (('observation', ('y', 'target', 'location', 'reading_stamp', 'pose_stamp')),
                         ('decision', ('index', 'target'))):
        a = [{k: r[k] for k in fields} for r in live if r['type'] == kind]
        b = [{k: r[k] for k in fields} for r in replayed if r['type'] == kind]
        assert len(a) == 2 and a == b, kind
    for r in live:                 # each location the recorded cloud's moments (the explorer's default policy)
        if r['type'] == 'observation':
            assert np.allclose(r['location']['mean'], np.array(r['target']) + 0.1 + CLOUD.mean(axis=0))
            assert np.allclose(r['location']['covariance'], np.cov(CLOUD.T, bias=True))
    report = json.loads((tmp_path / 'replay' / 'replay.json').read_text())
    assert report['background_decisions']['recorded'] >= 3 and report['background_decisions']['without_record'] == 0


def test_a_failing_disk_stops_the_recording_not_the_mission(context, tmp_path):
    def disk_full(node):
        bag = node.recording.sinks[0]

        def full(*args):
            raise OSError(errno.ENOSPC, 'No space left on device')
        bag._writer.write = full

    diagnostics = run_mission(context, tmp_path / 'run', measurements=2, during=disk_full)
    assert sum(r['type'] == 'observation' for r in journal(tmp_path / 'run' / 'journal.jsonl')) == 2
    values = [{kv.key: kv.value for kv in s.values} for d in diagnostics for s in d.status
              if s.name == 'explorer: exploration']
    stopped = [v['recording stopped'] for v in values if 'recording stopped' in v]
    assert stopped and 'No space left on device' in stopped[-1]
    assert int(values[-1]['recording messages dropped']) > 0


def test_a_restart_records_anew_and_its_replay_says_what_it_lacks(context, tmp_path, capsys):
    from rosbags.rosbag2 import Reader

    from uncertain_bo.cli import main
    from uncertain_bo.recording.contents import CUSTOM_DATA_KEY

    run_mission(context, tmp_path / 'run', measurements=1)
    run_mission(context, tmp_path / 'run', measurements=1, limit=2)          # resumes the journal
    assert (tmp_path / 'run' / 'recording').is_dir() and (tmp_path / 'run' / 'recording-2').is_dir()
    with Reader(tmp_path / 'run' / 'recording-2') as reader:
        custom = json.loads(reader.storage.metadata.custom[CUSTOM_DATA_KEY])
        journal_topic = [c for c in reader.connections if c.topic == '/explorer/journal']
        texts = [raw for _, _, raw in reader.messages(connections=journal_topic)]
    assert custom['resumed_records'] >= 3                  # start, decision, observation, recommendation, ...
    assert main(['replay', str(tmp_path / 'run' / 'recording-2'), '--out', str(tmp_path / 'replay')]) == 0
    out = capsys.readouterr().out
    assert out.startswith('warning: the recorded run began by resuming a journal of') and '\n' in out
    report = json.loads((tmp_path / 'replay' / 'replay.json').read_text())
    assert report['compared_with_recording']['observation']['recorded'] == 1   # only what this run measured
    assert len(texts) == 1 + sum(1 for r in journal(tmp_path / 'run' / 'journal.jsonl')[custom['resumed_records']
                                                                                        + 1:])


class TopicSpy:
    """A recording sink (``write``, ``values``, ``close``) that keeps the topics written to it."""

    def __init__(self):
        self.topics = set()

    def write(self, topic, msgtype, data, log_time):
        self.topics.add(topic)
        return True

    def values(self):
        return {}

    def close(self):
        return True


def test_a_team_recording_holds_every_rovers_inputs_and_goals(context, tmp_path, capsys):
    from rosbags.rosbag2 import Reader

    from team_probe import TeamProbe, make_team
    from uncertain_bo.cli import main
    from uncertain_bo.recording.contents import CUSTOM_DATA_KEY

    rovers = ['rover0', 'rover1']
    node = make_team(context, tmp_path / 'run', rovers=rovers, record=True, max_measurements=4)
    spy = TopicSpy()
    node.recording.sinks.append(spy)                       # what reaches the recording's sinks, by topic
    probe = TeamProbe(context, rovers)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    try:
        start = {'rover0': np.array([5.0, 5.0]), 'rover1': np.array([15.0, 15.0])}
        goals = {f'/{r}/goal_pose' for r in rovers}
        assert spin_until(ex, lambda: all(probe.goals[r] for r in rovers) and goals <= spy.topics,
                          every=lambda: [probe.report(r, start[r], 1.0) for r in rovers], timeout=20)
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    with Reader(tmp_path / 'run' / 'recording') as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        custom = json.loads(reader.storage.metadata.custom[CUSTOM_DATA_KEY])
    for r in rovers:
        assert topics[f'/{r}/odometry/filtered'] == 'nav_msgs/msg/Odometry'
        assert topics[f'/{r}/reading'] == 'sensor_msgs/msg/Temperature'
        assert topics[f'/{r}/goal_pose'] == 'geometry_msgs/msg/PoseStamped'
    assert topics['/team_explorer/cycle'] == 'std_msgs/msg/Float64'
    assert custom['team'] and set(custom['inputs']) == set(rovers)
    assert main(['replay', str(tmp_path / 'run' / 'recording'), '--out', str(tmp_path / 'replay')]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and 'team explorer' in err and '\n' not in err
    assert not (tmp_path / 'replay').exists()

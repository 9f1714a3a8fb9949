"""Record and replay (issue 33 items 1-2): a short simulated mission recorded with ``record: true`` opens with rosbags
and with the mcap reader (neither of them the project's code), holds the documented topics and types, and replays
through ``uncertain-bo replay`` to the same measurements and targets as its journal; a recording made like ``ros2 bag
record`` (sqlite3, inputs only) replays on its own clock; and every mistake ends in one line, exit 2, nothing
written."""
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('rclpy')
pytest.importorskip('rosbags')
pytest.importorskip('mcap_ros2')
pytestmark = [pytest.mark.ros]

ROOT = Path(__file__).resolve().parents[2]

#: what docs/ros2.md ("Recording") says a recording of the explorer node holds (default names, root namespace)
DOCUMENTED = {
    '/odometry/filtered': 'nav_msgs/msg/Odometry',
    '/reading': 'sensor_msgs/msg/Temperature',
    '/explorer/cycle': 'std_msgs/msg/Float64',
    '/explorer/decider': 'std_msgs/msg/String',
    '/explorer/journal': 'std_msgs/msg/String',
    '/goal_pose': 'geometry_msgs/msg/PoseStamped',
    '/plan': 'nav_msgs/msg/Path',
    '/explorer/markers': 'visualization_msgs/msg/MarkerArray',
    '/explorer/gp_mean': 'nav_msgs/msg/OccupancyGrid',
    '/explorer/gp_std': 'nav_msgs/msg/OccupancyGrid',
    '/diagnostics': 'diagnostic_msgs/msg/DiagnosticArray',
}


#: after test_team_graph.SMALL (a 60 m x 60 m patch): 3 measurements, decisions on the background thread (the
#: explorer node's default on a robot; the demo decides inline unless told)
RECORDED_RUN = """explorer:
  ros__parameters:
    max_measurements: 3
    n_initial: 2
    decide_in_background: true
"""


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    """``uncertain-bo demo --record`` on test_team_graph's small patch with :data:`RECORDED_RUN`, in this process."""
    from ros.test_team_graph import SMALL
    from uncertain_bo.cli import main

    tmp = tmp_path_factory.mktemp('recorded')
    (tmp / 'small.yaml').write_text(SMALL)
    (tmp / 'run.yaml').write_text(RECORDED_RUN)
    out = tmp / 'run'
    assert main(['demo', '--record', '--params', str(tmp / 'small.yaml'), '--params', str(tmp / 'run.yaml'),
                 '--out', str(out), '--timeout', '300']) == 0
    assert json.loads((out / 'summary.json').read_text())['measurements'] == 3
    return out


def test_record_and_foxglove_reach_the_explorer_of_the_demo_and_of_the_team_demo(tmp_path, monkeypatch):
    """``demo --record --foxglove PORT`` sets the explorer's ``record`` and ``foxglove_port``; with ``--rovers`` the
    team explorer's."""
    from uncertain_bo.cli import main
    from uncertain_bo.ros import demo_cli, graph, team_graph

    seen = {}
    monkeypatch.setattr(demo_cli, 'run_demo', lambda out, overrides, **kw: seen.update(one=overrides) or {})
    monkeypatch.setattr(team_graph, 'run_team_demo', lambda out, overrides, **kw: seen.update(team=overrides) or {})
    for extra in ([], ['--rovers', '2']):
        main(['demo', '--record', '--foxglove', '8765', '--out', str(tmp_path / f'run{len(extra)}'), *extra])
    assert seen['one']['explorer']['record'] is True and seen['one']['explorer']['foxglove_port'] == 8765
    team = team_graph.team_node_parameters(graph.load_graph_parameters(overrides=seen['team']), 2)['team_explorer']
    assert team['record'] is True and team['foxglove_port'] == 8765


def journal(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_the_recording_opens_with_rosbags_and_mcap_and_holds_the_documented_topics(run):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from rosbags.highlevel import AnyReader

    bag = run / 'recording'
    with AnyReader([bag]) as reader:
        topics = {c.topic: c.msgtype for c in reader.connections}
        odometry = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages()
                    if c.topic == '/odometry/filtered']
    assert topics == DOCUMENTED
    mcap_file, = bag.glob('*.mcap')
    with open(mcap_file, 'rb') as f:
        decoded = {}
        for schema, channel, _, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            decoded.setdefault(channel.topic, (schema.name, msg))
    assert {t: name for t, (name, _) in decoded.items()} == DOCUMENTED
    grid = decoded['/explorer/gp_mean'][1]
    assert grid.info.width * grid.info.height == len(grid.data) > 0
    assert odometry[0].header.frame_id == 'map' and odometry[0].pose.covariance[0] > 0
    docs = (ROOT / 'docs' / 'ros2.md').read_text()
    section = docs[docs.index('## Recording'):]
    for topic, msgtype in DOCUMENTED.items():        # the documented table says the same
        assert topic.split('/')[-1] in section and msgtype in section


def test_the_shipped_foxglove_layout_shows_topics_the_recording_holds(run):
    """config/foxglove_layout.json opened on a recording of ``demo --record`` shows what is there, in those types."""
    from rosbags.highlevel import AnyReader

    from .test_live_view import layout_topics
    from uncertain_bo.recording.layout import LAYOUT_TOPICS

    shown = layout_topics(json.loads((ROOT / 'config' / 'foxglove_layout.json').read_text()))
    with AnyReader([run / 'recording']) as reader:
        recorded = {c.topic: c.msgtype for c in reader.connections}
    assert shown and {t: recorded.get(t) for t in shown} == {t: LAYOUT_TOPICS[t] for t in shown}


def test_its_own_recording_replays_to_the_same_measurements_and_targets(run, tmp_path, capsys):
    from uncertain_bo.cli import main

    assert main(['replay', str(run / 'recording'), '--out', str(tmp_path / 'replay')]) == 0
    live, replayed = journal(run / 'journal.jsonl'), journal(tmp_path / 'replay' / 'journal.jsonl')
    for kind, fields in (('observation', ('index', 'y', 'target', 'location', 'reading_stamp', 'pose_stamp')),
                         ('decision', ('index', 'target', 'phase'))):
        a = [{k: r[k] for k in fields} for r in live if r['type'] == kind]
        b = [{k: r[k] for k in fields} for r in replayed if r['type'] == kind]
        assert len(a) == 3 and a == b, kind            # equal numbers, not close ones
    report = json.loads((tmp_path / 'replay' / 'replay.json').read_text())
    assert report['cycles_from'] == 'the recording' and report['background_decisions']['without_record'] == 0
    assert report['compared_with_recording']['observation']['all_identical']
    assert (tmp_path / 'replay' / 'summary.json').is_file() and (tmp_path / 'replay' / 'run.png').is_file()
    assert 'observations 3/3 identical; decisions 3/3 identical' in capsys.readouterr().out


def copy_topics(src, dst, topics, storage='sqlite3'):
    """A bag holding only ``topics`` of ``src``, as ``ros2 bag record TOPICS`` would have (no description)."""
    from rosbags.rosbag2 import Reader, StoragePlugin, Writer

    with Reader(src) as reader, Writer(dst, version=9, storage_plugin=StoragePlugin[storage.upper()]) as writer:
        connections = [c for c in reader.connections if c.topic in topics]
        out = {c.id: writer.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest)
               for c in connections}
        for c, t, raw in reader.messages(connections=connections):
            writer.write(out[c.id], t, raw)


def test_a_ros2_bag_record_of_the_inputs_replays_on_its_own_clock(run, tmp_path):
    """sqlite3, inputs only: no cycles, no parameters, no journal. Every measurement is a recorded reading located
    at a recorded pose estimate (the oracle: the bag's own messages, read by rosbags)."""
    from rosbags.highlevel import AnyReader

    from uncertain_bo.cli import main

    bag = tmp_path / 'inputs'
    copy_topics(run / 'recording', bag, {'/odometry/filtered', '/reading'})
    params = tmp_path / 'robot.yaml'
    params.write_text('explorer:\n  ros__parameters:\n    search_bounds: [0.0, 60.0, 0.0, 60.0]\n'
                      '    max_measurements: 2\n    n_initial: 2\n')
    assert main(['replay', str(bag), '--out', str(tmp_path / 'replay'), '--params', str(params)]) == 0
    with AnyReader([bag]) as reader:
        msgs = [(c.topic, reader.deserialize(raw, c.msgtype)) for c, _, raw in reader.messages()]
    readings = {m.temperature for t, m in msgs if t == '/reading'}
    poses = {(m.pose.pose.position.x, m.pose.pose.position.y) for t, m in msgs if t == '/odometry/filtered'}
    obs = [r for r in journal(tmp_path / 'replay' / 'journal.jsonl') if r['type'] == 'observation']
    assert len(obs) == 2
    for r in obs:
        assert r['y'] in readings and tuple(r['location']['mean']) in poses
    report = json.loads((tmp_path / 'replay' / 'replay.json').read_text())
    assert report['cycles_from'].startswith('every 1/tick_rate') and 'compared_with_recording' not in report


def test_map_reads_a_recordings_readings_as_the_runs_journal_has_them(run, tmp_path, capsys):
    """``uncertain-bo map RECORDING``: the readings, location means and covariances of the run folder's journal; a
    recording without the explorer's journal (``ros2 bag record``) is one line, exit 2, nothing written."""
    from uncertain_bo.cli import main
    from uncertain_bo.survey_map.sources import read_survey

    recorded, journaled = read_survey(run / 'recording'), read_survey(run)
    for name in ('xy', 'covariance', 'value', 'variance'):
        assert np.array_equal(getattr(recorded, name), getattr(journaled, name)), name
    assert recorded.n == 3 and recorded.source == run / 'recording'
    bag = tmp_path / 'inputs'
    copy_topics(run / 'recording', bag, {'/odometry/filtered', '/reading'}, storage='mcap')
    assert main(['map', str(bag), '--out', str(tmp_path / 'map')]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith('error: ') and '\n' not in err and f'uncertain-bo replay {bag} --out DIR' in err, err
    assert not (tmp_path / 'map').exists()


# ------------------------------------------------------------------------- mistakes: one line, exit 2, nothing written
def _inputs_only(run, tmp_path, topics):
    copy_topics(run / 'recording', tmp_path / 'bag', topics, storage='mcap')
    return tmp_path / 'bag'


def _damaged(run, tmp_path):
    bag = tmp_path / 'bag'
    shutil.copytree(run / 'recording', bag)
    mcap_file, = bag.glob('*.mcap')
    data = bytearray(mcap_file.read_bytes())
    data[100:164] = b'\xff' * 64
    mcap_file.write_bytes(bytes(data))
    return bag


def _linked_out(run, tmp_path):
    (tmp_path / 'out').mkdir()
    mcap_file, = (run / 'recording').glob('*.mcap')
    (tmp_path / 'out' / 'replay.json').symlink_to(mcap_file)
    return run / 'recording'


def _empty(run, tmp_path):
    (tmp_path / 'x.mcap').write_bytes(b'')
    return tmp_path / 'x.mcap'


def _out_with_run(run, tmp_path):
    (tmp_path / 'out').mkdir()
    (tmp_path / 'out' / 'journal.jsonl').write_text('{}\n')
    return run / 'recording'


MISTAKES = {
    'missing file': (lambda run, tmp: tmp / 'nowhere.mcap', [], r'nowhere.mcap: no such file or folder'),
    'a csv, not a bag': (lambda run, tmp: (tmp / 'survey.csv', (tmp / 'survey.csv').write_text('x,y\n1,2\n'))[0], [],
                         r'survey.csv is not a recording'),
    'no pose topic': (lambda run, tmp: _inputs_only(run, tmp, {'/reading'}), [],
                      r'has no pose topic /odometry/filtered \(nav_msgs/msg/Odometry\): its topics are /reading '
                      r'\(sensor_msgs/msg/Temperature\); set parameter pose_source'),
    'reading of another type': (lambda run, tmp: run / 'recording', ['--params', 'float64'],
                                r'has /reading as sensor_msgs/msg/Temperature, not std_msgs/msg/Float64: '
                                r'.*set reading_type: temperature in --params'),
    'pose on another topic': (lambda run, tmp: run / 'recording', ['--remap', 'odometry/filtered:=/odom'],
                              r'has no pose topic /odom .*set --remap odom:=/odometry/filtered'),
    'damaged mcap': (_damaged, [], r'cannot read the recording .*damaged or truncated'),
    'empty file': (_empty, [], r'x.mcap is an empty file, not a recording'),
    'folder not a bag': (lambda run, tmp: tmp, [], r'is a folder without metadata.yaml: not a rosbag2 recording'),
    'out onto the input': (_linked_out, [], r'--out .*replay.json is the recording .*\(a link to it\)'),
    'out in the bag': (lambda run, tmp: run / 'recording', ['--out-inside'], r'--out .* is inside the recording'),
    'out holding a run': (_out_with_run, [], r'holds a run already \(journal.jsonl\)'),
}


@pytest.mark.parametrize('mistake', list(MISTAKES))
def test_replay_mistakes_end_in_one_line_exit_2_nothing_written(run, tmp_path, capsys, mistake):
    from uncertain_bo.cli import main

    make, extra, expected = MISTAKES[mistake]
    bag = make(run, tmp_path)
    out = tmp_path / 'out'
    args = ['replay', str(bag), '--out', str(out)]
    if extra == ['--params', 'float64']:
        (tmp_path / 'p.yaml').write_text('explorer:\n  ros__parameters:\n    reading_type: float64\n')
        extra = ['--params', str(tmp_path / 'p.yaml')]
    if extra == ['--out-inside']:
        args[3], extra = str(bag / 'replay'), []
        out = bag / 'replay'
    before = sorted(p.name for p in out.iterdir()) if out.is_dir() else None
    bag_files = {p: p.read_bytes() for p in (run / 'recording').iterdir()}
    assert main(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith('error: ') and '\n' not in err, err
    assert re.search(expected, err), err
    assert (sorted(p.name for p in out.iterdir()) if out.is_dir() else None) == before     # nothing written
    assert {p: p.read_bytes() for p in (run / 'recording').iterdir()} == bag_files


def test_a_recording_made_before_a_rename_replays_with_its_parameters_under_their_new_names(tmp_path):
    """A recording's parameters (its description, else its journal header) are the explorer's of that run: one made
    before frame_id and arrival_tolerance were renamed to Nav2's terms replayed with the default frame ('map'),
    refusing every pose of an 'odom'-frame run."""
    from types import SimpleNamespace
    from uncertain_bo.ros.replay import replay_parameters
    recording = SimpleNamespace(description={'parameters': {'frame_id': 'odom', 'arrival_tolerance': 0.3}})
    values, source = replay_parameters(recording, [], None, tmp_path / 'out')
    assert values['global_frame'] == 'odom' and values['xy_goal_tolerance'] == 0.3
    assert source == "the recording's parameters"

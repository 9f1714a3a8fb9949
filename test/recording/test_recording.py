"""Recording without ROS: the rosbag2 writer (read back by rosbags and by the mcap reader, neither of them ours), what
it does when the disk fails or falls behind, background decisions replayed at the recorded cycle, and the one-line
refusals of paths that are no recording."""
import errno
import threading
import time

import numpy as np
import pytest
import yaml

pytest.importorskip('rosbags')
pytest.importorskip('mcap_ros2')

from rosbags.typesys import Stores, get_typestore  # noqa: E402

from uncertain_bo.recording.bag_reader import RecordingError, open_recording  # noqa: E402
from uncertain_bo.recording.bag_writer import BagWriter  # noqa: E402

STORE = get_typestore(Stores.LATEST)


def cdr(msgtype, **fields):
    """A message serialised by rosbags (an implementation independent of the nodes' rclpy)."""
    return bytes(STORE.serialize_cdr(STORE.types[msgtype](**fields), msgtype))


def float64(value):
    return cdr('std_msgs/msg/Float64', data=float(value))


def text(value):
    return cdr('std_msgs/msg/String', data=value)


def test_a_bag_opens_with_rosbags_and_mcap_in_the_order_written(tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    from rosbags.highlevel import AnyReader

    bag = BagWriter(tmp_path / 'bag', custom_data={'k': 'v'})
    written = []
    for i in range(30):                    # equal log times on two topics: the order written must survive
        t = 1_000_000_000 + (i // 3) * 100_000_000
        topic, data = (('/a/cycle', float64(i)) if i % 2 else ('/a/journal', text(f'record {i}')))
        assert bag.write(topic, 'std_msgs/msg/Float64' if i % 2 else 'std_msgs/msg/String', data, t)
        written.append((topic, t, float(i) if i % 2 else f'record {i}'))
    assert bag.close()
    assert bag.written == 30 and bag.dropped == 0 and bag.stopped is None

    meta = yaml.safe_load((tmp_path / 'bag' / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert meta['storage_identifier'] == 'mcap' and meta['message_count'] == 30
    assert {t['topic_metadata']['name']: t['topic_metadata']['type'] for t in meta['topics_with_message_count']} \
        == {'/a/cycle': 'std_msgs/msg/Float64', '/a/journal': 'std_msgs/msg/String'}
    assert meta['custom_data']['k'] == 'v' and meta['custom_data']['uncertain_bo.messages_dropped'] == '0'

    with AnyReader([tmp_path / 'bag']) as reader:
        got = [(c.topic, t, reader.deserialize(raw, c.msgtype).data) for c, t, raw in reader.messages()]
    assert got == written
    mcap_file, = (tmp_path / 'bag').glob('*.mcap')
    with open(mcap_file, 'rb') as f:
        decoded = [(ch.topic, m.log_time, msg.data) for _, ch, m, msg in
                   make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages(log_time_order=False)]
    assert decoded == written


def test_a_failing_disk_stops_the_recording_not_the_caller(tmp_path, caplog):
    bag = BagWriter(tmp_path / 'bag')
    assert bag.write('/x', 'std_msgs/msg/Float64', float64(1), 1)
    deadline = time.monotonic() + 10
    while bag.written < 1 and time.monotonic() < deadline:   # the writer thread has it on disk
        time.sleep(0.01)
    calls = []

    def full(connection, t, data):
        calls.append(t)
        raise OSError(errno.ENOSPC, 'No space left on device')

    bag._writer.write = full
    for k in range(2, 6):
        bag.write('/x', 'std_msgs/msg/Float64', float64(k), k)      # never raises
    bag.close()
    assert bag.stopped is not None and 'No space left on device' in bag.stopped
    assert calls == [2]                                 # one attempt: then it stopped writing
    assert bag.written == 1 and bag.dropped >= 4
    assert not bag.write('/x', 'std_msgs/msg/Float64', float64(9), 9)
    values = bag.values()
    assert 'No space left on device' in values['recording stopped'] and values['recording messages'] == 1
    assert any('recording stopped' in r.getMessage() for r in caplog.records)


def test_a_slow_disk_drops_messages_instead_of_blocking(tmp_path):
    bag = BagWriter(tmp_path / 'bag', queue_size=2)
    release = threading.Event()
    real = bag._writer.write

    def slow(*args):
        release.wait(10)
        real(*args)

    bag._writer.write = slow
    results = [bag.write('/x', 'std_msgs/msg/Float64', float64(k), k) for k in range(10)]   # returns at once
    assert results.count(False) >= 6 and bag.dropped == results.count(False)
    release.set()
    assert bag.close()
    assert bag.written == results.count(True)


# -------------------------------------------------------------------- background decisions at the recorded cycle
def _mission(tmp_path, decider):
    """A ROS-free explorer whose acquisition decisions run on ``decider``; returns (explorer, host, sent) where
    ``sent`` gets the cycle time at which each goal went out."""
    import torch

    from uncertain_bo.distributions import GaussianExecutionNoise
    from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer
    from uncertain_bo.parameters.specs import validate
    from uncertain_bo.planning.planner import Planner

    from recording_host import RecordingHost

    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 3,
                                        'dwell_time': 0.5, 'goal_timeout': 30.0, 'reading_timeout': 2.0,
                                        'max_speed': 0.0, 'num_restarts': 1, 'raw_samples': 32, 'refit_every': 2})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=2, journal=tmp_path / 'journal.jsonl', seed=3)
    host = RecordingHost()
    sent = []
    send = host.send_goal
    host.send_goal = lambda target: (sent.append(explorer.now), send(target))
    explorer = Explorer(planner, host, params, decider=decider)
    return explorer, host, sent


def _live_events(explorer, host):
    """Drive the explorer as a host would (a rover that walks to each goal at 8 m/s, readings that vary along the
    way, a cycle every 0.1 s) and return the events it handed in, in order."""
    from uncertain_bo.explorer import PoseEstimate, Reading, State

    events, t, xy = [], 0.0, np.array([25.0, 25.0])
    for step in range(1, 8000):
        if explorer.state is State.DONE:
            break
        t = round(step * 0.05, 6)
        if host.goals:
            gap = host.goals[-1] - xy
            xy = xy + gap * min(1.0, 0.4 / max(np.linalg.norm(gap), 1e-9))
        now = [('pose', PoseEstimate(t, 'map', xy.copy(), np.eye(2) * 0.04))]
        if step % 5 == 0:
            now.append(('reading', Reading(t, float(np.sin(xy[0] / 7.0) + xy[1] / 30.0 + t / 1000.0))))
        if step % 2 == 0:
            now.append(('tick', t))
        _hand_in(explorer, now)
        events += now
        if explorer.state is State.DECIDING:
            time.sleep(0.005)       # the rover's clock runs on while the planner thinks (polls only by the cycle)
    return events


def _hand_in(explorer, events):
    for kind, item in events:
        if kind == 'pose':
            explorer.on_pose(item, item.stamp)
        elif kind == 'reading':
            explorer.on_reading(item, item.stamp)
        else:
            explorer.now = item
            explorer.tick(item)


def test_background_decisions_replay_at_the_recorded_cycle(tmp_path):
    import json
    from concurrent.futures import ThreadPoolExecutor

    from uncertain_bo.recording.decider import RecordingDecider, ReplayDecider
    from uncertain_bo.recording.replay import compare, decider_polls

    records = []
    pool = ThreadPoolExecutor(max_workers=1)
    live, live_host, live_sent = _mission(tmp_path / 'live', RecordingDecider(pool, records.append))
    live.now = 0.0
    events = _live_events(live, live_host)
    pool.shutdown()
    assert len(live_host.measurements) == 3
    polls = decider_polls([json.dumps(r) for r in records])
    assert len(polls) == 6 and any(p > 0 for p in polls.values())    # decisions and recommendations took cycles

    replayed, host, sent = _mission(tmp_path / 'replay', ReplayDecider(polls))
    replayed.now = 0.0
    _hand_in(replayed, events)
    assert sent == live_sent                                        # each target sent at the same cycle
    assert np.array_equal(np.array(host.goals), np.array(live_host.goals))
    load = [[json.loads(line) for line in (tmp_path / d / 'journal.jsonl').read_text().splitlines()]
            for d in ('live', 'replay')]
    result = compare(*load)
    assert result['observation']['all_identical'] and result['decision']['all_identical']
    assert result['observation']['recorded'] == 3

    inline, inline_host, inline_sent = _mission(tmp_path / 'inline', None)   # deciding in the cycle instead
    inline.now = 0.0
    _hand_in(inline, events)
    assert inline_sent != live_sent


# -------------------------------------------------------------------- what is no recording
@pytest.mark.parametrize('make, expected', [
    (lambda p: p, 'no such file or folder'),
    (lambda p: (p.write_bytes(b''), p)[1], 'is an empty file, not a recording'),
    (lambda p: (p.mkdir(), (p / 'notes.txt').write_text('x'), p)[2], 'is a folder without metadata.yaml'),
    (lambda p: (p.write_text('x,y\n1,2\n'), p)[1], 'is not a recording'),
])
def test_what_is_no_recording_is_refused_in_one_line(tmp_path, make, expected):
    path = make(tmp_path / 'thing')
    with pytest.raises(RecordingError, match=expected) as err:
        open_recording(path)
    assert '\n' not in str(err.value)


def _small_bag(path):
    bag = BagWriter(path)
    for k in range(2000):
        bag.write('/x', 'std_msgs/msg/String', text('a fairly long record %d ' % k * 20), k)
    bag.close()
    mcap_file, = path.glob('*.mcap')
    return mcap_file


@pytest.mark.parametrize('damage', ['magic', 'record', 'summary', 'cut'])
def test_a_damaged_mcap_is_refused_in_one_line(tmp_path, damage):
    mcap_file = _small_bag(tmp_path / 'bag')
    data = bytearray(mcap_file.read_bytes())
    n = len(data)
    where = {'magic': slice(0, 8), 'record': slice(100, 164), 'summary': slice(n - 200, n - 100)}
    if damage == 'cut':
        data = data[:n // 2]                                      # a recorder killed half way: no summary, no end
    else:
        data[where[damage]] = b'\xff' * (where[damage].stop - where[damage].start)
    mcap_file.write_bytes(bytes(data))
    for path in (tmp_path / 'bag', mcap_file):
        with pytest.raises(RecordingError, match='cannot read the recording .*(damaged or truncated)') as err:
            open_recording(path).check(['/x'])
        assert '\n' not in str(err.value)

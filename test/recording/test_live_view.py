"""The live view without ROS tooling (issue 33 item 4): foxglove-sdk's WebSocket server as the explorer node runs it
(``foxglove_port``), checked by a client of Foxglove's WebSocket protocol (the server's ``advertise`` of channels with
their schemas, a subscription, binary message frames; the SDK speaks the subprotocol ``foxglove.sdk.v1``); and the
shipped Foxglove layout, which shows only what an explorer's recording or live view holds."""
import asyncio
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

#: what a recording of the explorer node holds (docs/ros2.md, "Recording"; test_replay.DOCUMENTED)
RECORDED = {'/explorer/gp_mean', '/explorer/gp_std', '/explorer/markers', '/plan', '/goal_pose', '/diagnostics',
            '/reading', '/explorer/journal', '/explorer/cycle', '/explorer/decider', '/odometry/filtered'}


class Client:
    """A Foxglove WebSocket client (tornado's websocket client; the SDK's subprotocol, or foxglove_bridge's)."""

    def __init__(self, url):
        self.url, self.channels, self.frames = url, {}, []

    async def connect(self):
        from tornado.websocket import websocket_connect
        self.ws = await websocket_connect(self.url, subprotocols=['foxglove.sdk.v1', 'foxglove.websocket.v1'])
        return self

    async def read_until(self, cond, timeout=10.0):
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not cond() and loop.time() < end:
            try:
                msg = await asyncio.wait_for(self.ws.read_message(), max(end - loop.time(), 0.01))
            except asyncio.TimeoutError:
                break
            if isinstance(msg, bytes):
                self.frames.append(msg)
            elif msg is not None:
                op = json.loads(msg)
                if op.get('op') == 'advertise':
                    self.channels.update({c['topic']: c for c in op['channels']})
        return cond()

    def subscribe(self, topic, sub_id=1):
        self.ws.write_message(json.dumps({'op': 'subscribe', 'subscriptions': [
            {'id': sub_id, 'channelId': self.channels[topic]['id']}]}))


def test_the_live_view_advertises_ros_channels_and_sends_their_bytes():
    pytest.importorskip('foxglove', reason='foxglove-sdk is not installed (pip install foxglove-sdk)')
    pytest.importorskip('tornado', reason='the test client needs tornado')
    from rosbags.typesys import Stores, get_typestore

    from uncertain_bo.recording.definitions import definition
    from uncertain_bo.recording.live import LiveView

    store = get_typestore(Stores.LATEST)
    t = store.types
    stamp = t['builtin_interfaces/msg/Time'](sec=5, nanosec=0)
    origin = t['geometry_msgs/msg/Pose'](position=t['geometry_msgs/msg/Point'](x=0.0, y=0.0, z=0.0),
                                         orientation=t['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0))
    grid = t['nav_msgs/msg/OccupancyGrid'](
        header=t['std_msgs/msg/Header'](stamp=stamp, frame_id='map'),
        info=t['nav_msgs/msg/MapMetaData'](map_load_time=stamp, resolution=1.5, width=2, height=1, origin=origin),
        data=np.array([10, 90], dtype=np.int8))
    data = bytes(store.serialize_cdr(grid, 'nav_msgs/msg/OccupancyGrid'))
    live = LiveView(0)
    try:
        assert live.write('/explorer/gp_mean', 'nav_msgs/msg/OccupancyGrid', data, 5_000_000_000)

        async def session():
            client = await Client(live.url).connect()
            assert await client.read_until(lambda: '/explorer/gp_mean' in client.channels)
            client.subscribe('/explorer/gp_mean')
            await asyncio.sleep(0.3)                 # the subscription reaches the server
            live.write('/explorer/gp_mean', 'nav_msgs/msg/OccupancyGrid', data, 6_000_000_000)
            assert await client.read_until(lambda: client.frames)
            client.ws.close()
            return client

        client = asyncio.run(session())
    finally:
        live.close()
    channel = client.channels['/explorer/gp_mean']
    assert channel['encoding'] == 'cdr' and channel['schemaName'] == 'nav_msgs/msg/OccupancyGrid'
    assert channel['schemaEncoding'] == 'ros2msg'
    assert channel['schema'] == definition('nav_msgs/msg/OccupancyGrid')[0]
    assert 'MSG: nav_msgs/MapMetaData' in channel['schema']
    frame = client.frames[0]
    opcode, sub_id, log_time = struct.unpack_from('<BIQ', frame)
    assert (opcode, sub_id, log_time) == (1, 1, 6_000_000_000) and frame[13:] == data


@pytest.mark.ros
def test_an_explorer_node_with_foxglove_port_serves_its_topics(context, tmp_path):
    pytest.importorskip('foxglove', reason='foxglove-sdk is not installed (pip install foxglove-sdk)')
    pytest.importorskip('tornado', reason='the test client needs tornado')
    import socket
    import threading

    from rclpy.executors import SingleThreadedExecutor

    from ros.test_explorer_node import Probe, make_explorer

    with socket.socket() as s:                   # a free port
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    node = make_explorer(context, tmp_path, foxglove_port=port, diagnostics_period=0.2)
    probe = Probe(context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            probe.publish_pose([10.0, 10.0])
            ex.spin_once(timeout_sec=0.02)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    want = {'/explorer/markers', '/diagnostics', '/odometry/filtered', '/explorer/cycle', '/goal_pose', '/plan'}
    try:
        async def session():
            client = await Client(f'ws://127.0.0.1:{port}').connect()
            await client.read_until(lambda: want <= set(client.channels), timeout=20)
            client.ws.close()
            return client

        client = asyncio.run(session())
    finally:
        stop.set()
        thread.join(5)
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()
    assert want <= set(client.channels)
    assert client.channels['/explorer/markers']['schemaName'] == 'visualization_msgs/msg/MarkerArray'
    assert all(c['encoding'] == 'cdr' and c['schemaEncoding'] == 'ros2msg' for c in client.channels.values())
    assert not (tmp_path / 'recording').exists()             # a live view only: record is false


def _panels(tree):
    if isinstance(tree, str):
        return [tree]
    return _panels(tree['first']) + _panels(tree['second'])


def layout_topics(layout):
    """The topics a Foxglove layout's panels show (3D panels' topics, a panel's topic, plot paths)."""
    shown = set()
    for config in layout['configById'].values():
        shown |= set(config.get('topics', {}))
        shown |= {config[k] for k in ('topicToRender', 'topicPath') if k in config}
        shown |= {p['value'].split('.')[0] for p in config.get('paths', [])}
    return shown


def test_the_shipped_foxglove_layout_shows_recorded_topics_and_is_generated():
    from uncertain_bo.recording.layout import LAYOUT_TOPICS, render

    text = (ROOT / 'config' / 'foxglove_layout.json').read_text()
    assert text == render(), 'regenerate: python -m uncertain_bo.recording.layout > config/foxglove_layout.json'
    layout = json.loads(text)
    assert set(layout) >= {'configById', 'layout', 'globalVariables', 'userNodes', 'playbackConfig'}
    panels = _panels(layout['layout'])
    assert sorted(panels) == sorted(layout['configById'])           # every panel placed once
    assert {p.split('!')[0] for p in panels} <= {'3D', 'DiagnosticSummary', 'DiagnosticStatusPanel', 'Plot',
                                                 'RawMessages'}
    shown = layout_topics(layout)
    assert shown == set(LAYOUT_TOPICS) and shown <= RECORDED
    three_d = layout['configById']['3D!gp_mean']
    assert three_d['followTf'] == 'map' and three_d['topics']['/explorer/gp_mean']['visible']
    assert three_d['topics']['/explorer/markers']['visible'] and three_d['topics']['/plan']['visible']


DOMAIN_ID = 140 + os.getpid() % 30

"""Recording an explorer's run (parameters ``record``, ``record_path``) and showing it live (``foxglove_port``).

What is recorded, as a rosbag2 folder with MCAP storage (what ``ros2 bag record`` writes; ``ros2 bag info``,
``rosbags``, ``mcap``, Foxglove and RViz's bag players open it) beside the journal:

- **inputs**, exactly as the explorer got them, in that order, each with its arrival time as the log time: the pose
  estimates or particle clouds (a cloud as the bytes received), the readings, the revised path
  (:class:`~uncertain_bo.ros.rover_inputs.RoverInputs`' ``tap``, :func:`~uncertain_bo.ros.revised_path.
  subscribe_revised_path`'s). The explorer looks nothing up in TF, so there are no transforms to record;
- **the measurement cycle**: the time of each cycle, the cycle at which each background decision was taken, every
  journal record (decisions with their metadata, measurements, recommendations) on ``~/cycle``, ``~/decider``,
  ``~/journal`` (:mod:`uncertain_bo.recording.contents`);
- **what the explorer publishes**: ``goal_pose``, ``plan``, ``~/markers`` (targets, measured locations with their
  covariance ellipses, the recommendation), ``~/gp_mean`` and ``~/gp_std`` (the GP maps as ``nav_msgs/OccupancyGrid``,
  after every measurement) and ``/diagnostics``: received from its own publishers, as a bag recorder would.

The bag is written on a thread of its own (:class:`~uncertain_bo.recording.bag_writer.BagWriter`): recording never
holds the explorer up, and a disk that fills up stops the recording (a warning, and ``recording stopped`` in
``/diagnostics``), not the explorer; the journal is the source of truth. With ``foxglove_port`` the same messages go
to Foxglove live (:class:`~uncertain_bo.recording.live.LiveView`). The nodes' hooks are :func:`start_recording`
(None when neither is asked for), :meth:`Recording.add_rover`, :meth:`Recording.cycle`, :meth:`Recording.decider`,
:meth:`Recording.values` and :meth:`Recording.close`.
"""
from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Callable

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Path as PathMsg
from rclpy.node import Node
from rclpy.serialization import serialize_message
from std_msgs.msg import Float64, String
from visualization_msgs.msg import MarkerArray

from ..parameters.specs import Param
from ..recording.contents import (CUSTOM_DATA_KEY, CYCLE_TOPIC, CYCLE_TYPE, DECIDER_TOPIC, JOURNAL_TOPIC, TEXT_TYPE,
                                  describe)
from .qos import LATCHED, RELIABLE_10
from .rover_inputs import RoverInputs, node_clock_ns, type_name

__all__ = ['RECORDING_PARAMS', 'Recording', 'start_recording', 'free_folder']

log = logging.getLogger(__name__)

RECORDING_PARAMS = [
    Param('record', False, "record the run to a rosbag2 folder with MCAP storage (record_path): the inputs as the "
          'explorer got them (pose estimates or particle clouds, readings, the revised path), its measurement cycle, '
          'decisions and journal (~/cycle, ~/decider, ~/journal) and what it publishes (goal_pose, plan, ~/markers, '
          '~/gp_mean, ~/gp_std, /diagnostics); `uncertain-bo replay` replays it. Written on a thread of its own: a '
          'full disk stops the recording, never the explorer (the journal is the source of truth)', read_only=True),
    Param('record_path', '', "the recording's folder; empty = <run_dir>/recording. A recording never overwrites one: "
          'an existing folder gets -2, -3, ... (a restart on the same run_dir records anew)', read_only=True),
    Param('foxglove_port', 0, "serve the recorded topics live to Foxglove on ws://127.0.0.1:PORT (foxglove-sdk's "
          'WebSocket server, for a machine without foxglove_bridge; config/foxglove_layout.json shows them); 0 = off',
          range=(0, 65535), read_only=True),
]

#: what every explorer publishes and a recording keeps: relative topic, message class, QoS
_OUTPUTS = [('~/markers', MarkerArray, LATCHED), ('~/gp_mean', OccupancyGrid, LATCHED),
            ('~/gp_std', OccupancyGrid, LATCHED), ('/diagnostics', DiagnosticArray, RELIABLE_10)]
#: what a rover's goals are recorded from (under the rover's namespace in a team)
_ROVER_OUTPUTS = [('goal_pose', PoseStamped, LATCHED), ('plan', PathMsg, LATCHED)]


def free_folder(path: Path) -> Path:
    """``path`` if nothing is there, else the first of ``path-2``, ``path-3``, ... that is free."""
    candidate, n = Path(path), 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = Path(f'{path}-{n}')
    return candidate


def start_recording(node: Node, params: dict[str, Any], run_dir: Path, journal, team: bool = False
                    ) -> 'Recording | None':
    """The recording and live view ``params`` ask for (``record``, ``record_path``, ``foxglove_port``), or None when
    neither. One that cannot start (the folder cannot be created, the port is taken, foxglove-sdk missing) is logged
    as a warning and left out: the explorer runs without it.

    Args:
        node: the explorer node.
        params: its validated parameters.
        run_dir: its run folder (the default recording is ``run_dir/recording``).
        journal: the planner's :class:`~uncertain_bo.journal.journal.Journal` (mirrored on ``~/journal``), or None.
        team: the team explorer.
    """
    sinks = []
    if params['record']:
        from ..recording.bag_writer import BagWriter
        path = free_folder(Path(params['record_path'] or Path(run_dir) / 'recording'))
        try:
            sinks.append(BagWriter(path))
            log.info('recording to %s', path)
        except Exception as exc:  # noqa: BLE001 - rosbags' WriterError, OSError: run without a recording
            log.warning('not recording: cannot create %s: %s', path, exc)
    if params['foxglove_port']:
        try:
            from ..recording.live import LiveView
            sinks.append(LiveView(params['foxglove_port']))
            log.info('live view for Foxglove on %s', sinks[-1].url)
        except Exception as exc:  # noqa: BLE001 - ImportError, a port in use: run without the live view
            log.warning('no live view on port %d: %s', params['foxglove_port'], exc)
    if not sinks:
        return None
    return Recording(node, params, sinks, journal, team)


class Recording:
    """The messages of one explorer node's run, to its sinks (a :class:`~uncertain_bo.recording.bag_writer.BagWriter`,
    a :class:`~uncertain_bo.recording.live.LiveView`); see the module docstring. Every method is called on the node's
    executor thread and returns at once.

    Args:
        node: the explorer node.
        params: its parameters (described in the bag's ``custom_data``).
        sinks: where the messages go (``write(topic, type, data, log_time)``, ``values()``, ``close()``).
        journal: the run's journal, mirrored on ``~/journal`` (None: none).
        team: a team explorer.

    Example:
        A sink that keeps the topics written (the bag writer and the live view are the real ones):

        >>> import rclpy
        >>> from uncertain_bo.ros.recording import Recording
        >>> class Sink:
        ...     topics = []
        ...     def write(self, topic, msgtype, data, log_time): self.topics.append(topic)
        ...     def values(self): return {'recording messages': len(self.topics)}
        ...     def close(self): return True
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = rclpy.create_node('explorer', context=ctx)
        >>> recording = Recording(node, {}, [Sink()], journal=None)
        >>> recording.cycle(12.5)                          # the measurement cycle ran at 12.5 s
        >>> Sink.topics, recording.values()
        (['/explorer/cycle'], {'recording messages': 1})
        >>> recording.close(); node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node: Node, params: dict[str, Any], sinks: list, journal, team: bool = False):
        self.node, self.params, self.sinks, self.team = node, params, sinks, team
        self._journal = journal
        self._mirrored = self._resumed = len(journal.records) if journal is not None else 0   # a restart's records
        self.topics = {what: node.resolve_topic_name(name) for what, name in
                       (('cycle', CYCLE_TOPIC), ('decider', DECIDER_TOPIC), ('journal', JOURNAL_TOPIC))}
        self.inputs: dict[str, dict[str, dict[str, str]]] = {}
        self._subscriptions = [self._record_output(*output) for output in _OUTPUTS]
        self._closed = False
        if journal is not None:
            self._text(self.topics['journal'], json.dumps(journal.header), 0)

    # ------------------------------------------------------------------ hooks
    def add_rover(self, inputs: RoverInputs, name: str = '', revised_path_sub=None) -> None:
        """Record a rover's inputs (its :class:`~uncertain_bo.ros.rover_inputs.RoverInputs`, its revised path
        subscription if any) and its goals (``goal_pose``, ``plan`` under its namespace ``name``)."""
        inputs.tap = lambda what, msg, ns: self.message(inputs.topic(what), self._input_type(inputs, what), msg, ns)
        described = {what: {'topic': inputs.topic(what), 'type': self._input_type(inputs, what)}
                     for what in inputs.types}
        if revised_path_sub is not None:
            described['revised_path'] = {'topic': revised_path_sub.topic_name, 'type': type_name(PathMsg)}
        self.inputs[name] = described
        prefix = f'{name}/' if name else ''
        self._subscriptions += [self._record_output(prefix + topic, cls, qos) for topic, cls, qos in _ROVER_OUTPUTS]

    def path_tap(self) -> Callable[[str, Any], None]:
        """The ``tap`` of :func:`~uncertain_bo.ros.revised_path.subscribe_revised_path`: ``tap(topic, msg)``."""
        return lambda topic, msg: self.message(topic, type_name(PathMsg), msg, node_clock_ns(self.node))

    def cycle(self, now: float) -> None:
        """The explorer's cycle runs at ``now`` (node clock, s): recorded on ``~/cycle`` (the value exactly, the log
        time in ns), after the journal records written since the last cycle."""
        self._mirror_journal()
        ns = int(round(now * 1e9)) if math.isfinite(now) and now > 0 else 0
        self._write(self.topics['cycle'], CYCLE_TYPE, serialize_message(Float64(data=float(now))), ns)

    def decider(self, executor):
        """``executor`` (the explorer's decider) with its background jobs recorded on ``~/decider``
        (:class:`~uncertain_bo.recording.decider.RecordingDecider`); None stays None."""
        if executor is None:
            return None
        from ..recording.decider import RecordingDecider
        return RecordingDecider(executor, lambda record: self._text(self.topics['decider'], json.dumps(record),
                                                                    node_clock_ns(self.node) or 0))

    def values(self) -> dict[str, Any]:
        """For ``/diagnostics``: the recording's folder, messages written and dropped, why it stopped; the live view's
        address."""
        out: dict[str, Any] = {}
        for sink in self.sinks:
            out.update(sink.values())
        return out

    def close(self) -> None:
        """Mirror the journal's last records, describe the run in the bag's ``custom_data`` and close every sink
        (the bag's writer gets :data:`~uncertain_bo.recording.bag_writer.CLOSE_TIMEOUT` s). Idempotent."""
        if self._closed:
            return
        self._mirror_journal()
        self._closed = True
        custom = describe(self.node.get_fully_qualified_name(), self.team, _plain(self.params), self.inputs,
                          self.topics, self._resumed)
        for sink in self.sinks:
            if hasattr(sink, 'custom_data'):
                sink.custom_data[CUSTOM_DATA_KEY] = custom
            if not sink.close():
                log.warning('recording: %s was not closed in time (messages still queued)', getattr(sink, 'path', sink))
        for sub in self._subscriptions:
            self.node.destroy_subscription(sub)
        self._subscriptions = []

    # ------------------------------------------------------------------ messages
    def message(self, topic: str, msgtype: str, msg, ns: int | None) -> None:
        """Record ``msg`` (a message object, or its serialised bytes) of ``msgtype`` on ``topic``, arrived at ``ns``
        (integer ns on the node clock; None: before the clock ran, recorded at log time 0)."""
        if self._closed:
            return
        data = msg if isinstance(msg, (bytes, bytearray, memoryview)) else serialize_message(msg)
        self._write(topic, msgtype, data, ns or 0)

    def _write(self, topic: str, msgtype: str, data: bytes, ns: int) -> None:
        for sink in self.sinks:
            sink.write(topic, msgtype, data, ns)

    def _text(self, topic: str, text: str, ns: int) -> None:
        self._write(topic, TEXT_TYPE, serialize_message(String(data=text)), ns)

    def _mirror_journal(self) -> None:
        if self._journal is None or self._closed:
            return
        records = self._journal.records
        end = len(records)           # records appended meanwhile (the decider thread) go with the next cycle
        ns = node_clock_ns(self.node) or 0
        for record in records[self._mirrored:end]:
            self._text(self.topics['journal'], json.dumps(record), ns)
        self._mirrored = end

    def _record_output(self, topic: str, cls, qos):
        """Subscribe ``topic`` (what the node publishes) as bytes and record each message as it arrives."""
        resolved, name = self.node.resolve_topic_name(topic), type_name(cls)
        return self.node.create_subscription(
            cls, resolved, lambda raw: self._write(resolved, name, raw, node_clock_ns(self.node) or 0), qos, raw=True)

    @staticmethod
    def _input_type(inputs: RoverInputs, what: str) -> str:
        if what == 'pose' and inputs.p['pose_source'] == 'particle_cloud':
            return inputs.p['particle_cloud_type']
        return type_name(inputs.types[what])


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as JSON values (tuples as lists)."""
    return json.loads(json.dumps(params, default=list))

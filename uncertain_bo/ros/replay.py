"""``uncertain-bo replay BAG --out DIR``: a rosbag2 recording fed through the explorer's measurement cycle, offline.

The recording's pose estimates (or particle clouds), readings and revised path go, on the recording's own clock (each
message's log time is its arrival time), into the ROS-free :class:`~uncertain_bo.explorer.Explorer` that the explorer
node runs, through the same conversions (:class:`~uncertain_bo.ros.rover_inputs.RoverMessages`,
:func:`~uncertain_bo.ros.revised_path.revise`); nothing is published, no node is started. The replay writes a run
folder: ``journal.jsonl`` (the measurements and the decisions the explorer would have made), ``explorer_result.json``,
``replay.json`` (what was replayed, the targets, and how the journal compares with the one the recording holds),
``summary.json`` and ``run.png`` (``uncertain-bo report``'s summary and map of a run without ground truth).

**Parameters**: the shipped ``config/explorer.yaml``, then the parameters the recording holds (the explorer's own
recording), then ``--params`` files (their ``explorer`` section), then ``--method``. **Topics**: the inputs the
recording describes, else the explorer's defaults for ``pose_source``, ``particle_cloud_type`` and ``reading_type``
(``/odometry/filtered``, ``/reading``, ...), renamed by ``--remap FROM:=TO`` as ``ros2 run`` remaps them.
**Cycles**: the recorded ones (``~/cycle``) and background decisions taken at the recorded cycle (``~/decider``);
a recording without them (``ros2 bag record``) gets a cycle every ``1/tick_rate`` s of its clock. What is identical
and what is not: :mod:`uncertain_bo.recording.replay`.

Mistakes end in one line, exit status 2, nothing written: a path that is no recording (missing, empty, a folder
without ``metadata.yaml``, a file of another kind), a damaged MCAP (every message is read once before anything is
written), a recording without the topics the parameters need (the message lists the topics it has and the parameter
or remap to set), an invalid parameter, an ``--out`` that is an input or already holds a run.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

__all__ = ['add_parser', 'run', 'replay_parameters', 'input_topics']

log = logging.getLogger(__name__)


def add_parser(sub) -> None:
    p = sub.add_parser(
        'replay', help="replay a rosbag2 recording (MCAP or sqlite3) through the explorer's measurement cycle",
        description="Feed a rosbag2 recording's pose estimates and readings through the explorer's measurement cycle "
                    "on the recording's own clock, offline, and write the journal (measurements and the decisions "
                    'the explorer would have made), explorer_result.json, replay.json (the targets, and how the '
                    "journal compares with the one the recording holds), summary.json and run.png. The explorer's "
                    'own recording (record: true, uncertain-bo demo --record) replays to the same measurements and '
                    'targets; a ros2 bag record of your robot replays with the topics and types set like the '
                    "explorer's (pose_source, reading_type in --params, --remap).")
    p.add_argument('bag', type=Path, help='the recording: a rosbag2 folder (metadata.yaml + .mcap or .db3) or one '
                   '.mcap / .db3 file')
    p.add_argument('--out', type=Path, required=True, help='run folder to write (new, or without a journal)')
    p.add_argument('--method', default=None, help="explorer method (default: the recording's, else "
                   "config/explorer.yaml's): what another method would have decided on the same inputs")
    p.add_argument('--params', type=Path, action='append', default=[],
                   help='ROS 2 parameter file(s): their explorer section, applied after the recording\'s parameters '
                        '(pose_source, reading_type, search_bounds, ...)')
    p.add_argument('--remap', action='append', default=[], metavar='FROM:=TO',
                   help="rename an input topic as ros2 run's -r does, e.g. odometry/filtered:=/odometry/global "
                        '(repeatable)')
    p.set_defaults(func=run)


# ---------------------------------------------------------------------------------------------- parameters, topics
def replay_parameters(recording, files: list[Path], method: str | None, out: Path) -> tuple[dict[str, Any], str]:
    """The explorer's validated parameters for the replay and where they came from (module docstring).

    Raises:
        ParameterError: an invalid value or a name the explorer does not have (in a file: with its line).
    """
    from ..parameters.files import node_parameters, unknown_parameters
    from ..parameters.specs import ParameterError, config_path, renamed_parameter, validate
    from .explorer_parameters import EXPLORER_NODE_PARAMS

    names = {p.name for p in EXPLORER_NODE_PARAMS}
    values = dict(node_parameters([config_path('explorer.yaml')], 'explorer'))
    # a recording made before a parameter was renamed (RENAMED_PARAMETERS) holds it under its old name
    recorded = {renamed_parameter(k, names) or k: v for k, v in _recorded_parameters(recording).items()}
    source = 'config/explorer.yaml'
    if recorded:
        values.update({k: v for k, v in recorded.items() if k in names})
        source = "the recording's parameters"
    unknown = [u for f in files for u in unknown_parameters([f], 'explorer', names)]
    if unknown:
        raise ParameterError('; '.join(map(str, unknown)))
    if files:
        values.update(node_parameters(files, 'explorer'))
        source += ', ' + ', '.join(map(str, files))
    if method is not None:
        values['method'] = method
        source += f', --method {method}'
    values.update(run_dir=str(out), record=False, foxglove_port=0, exit_when_done=False)
    return validate(EXPLORER_NODE_PARAMS, {k: v for k, v in values.items() if k in names}), source


def _recorded_parameters(recording) -> dict[str, Any]:
    """The explorer's parameters the recording holds: its description, else its mirrored journal header."""
    if recording.description and isinstance(recording.description.get('parameters'), dict):
        return recording.description['parameters']
    topic = _own_topic(recording, 'journal')
    if topic is None:
        return {}
    for _, _, raw in recording.messages([topic]):
        header = json.loads(_text(raw))
        return header.get('parameters', {}) if header.get('type') == 'header' else {}
    return {}


def _own_topic(recording, what: str) -> str | None:
    """The recording's ``~/cycle``, ``~/decider`` or ``~/journal`` topic (:mod:`uncertain_bo.recording.contents`),
    by its description, else by name and type; None when it has none."""
    from ..recording.contents import CYCLE_TYPE, TEXT_TYPE
    if recording.description:
        topic = recording.description.get('topics', {}).get(what)
        return topic if topic in recording.topics else None
    want = CYCLE_TYPE if what == 'cycle' else TEXT_TYPE
    found = [t for t, m in recording.topics.items() if t.endswith('/' + what) and m == want]
    return found[0] if len(found) == 1 else None


def input_topics(params: dict[str, Any], recording, remaps: list[str]) -> dict[str, tuple[str, str, str]]:
    """``'pose'``, ``'reading'`` (and ``'revised_path'`` when ``revised_path_topic`` is set) -> ``(topic, message
    type, the parameter that chose the type)``: the recording's own description where its types are what the
    parameters ask for, else the explorer's default names in the root namespace; then ``remaps``.

    Raises:
        UsageError: a malformed ``--remap``.
    """
    from ..user_errors import UsageError
    from .reading_messages import READING_TYPES
    from .rover_inputs import POSE_SOURCES, type_name

    cloud = params['pose_source'] == 'particle_cloud'
    pose_type = params['particle_cloud_type'] if cloud else type_name(POSE_SOURCES[params['pose_source']][0])
    wanted = {'pose': (POSE_SOURCES[params['pose_source']][1], pose_type,
                       'particle_cloud_type' if cloud else 'pose_source'),
              'reading': ('reading', type_name(READING_TYPES[params['reading_type']][0]), 'reading_type')}
    if params['revised_path_topic']:
        wanted['revised_path'] = (params['revised_path_topic'], 'nav_msgs/msg/Path', 'revised_path_topic')
    described = ((recording.description or {}).get('inputs') or {}).get('', {})
    out = {}
    for what, (name, msgtype, parameter) in wanted.items():
        own = described.get(what, {})
        topic = own['topic'] if own.get('type') == msgtype and own.get('topic') else '/' + name.lstrip('/')
        out[what] = (topic, msgtype, parameter)
    for rule in remaps:
        if ':=' not in rule:
            raise UsageError(f'--remap {rule!r}: write FROM:=TO, e.g. odometry/filtered:=/odometry/global')
        src, dst = ('/' + part.strip().lstrip('/') for part in rule.split(':=', 1))
        matched = [w for w, (topic, _, _) in out.items() if topic == src]
        if not matched:
            raise UsageError(f"--remap {rule!r}: {src} is none of the replay's inputs "
                             f"({', '.join(t for t, _, _ in out.values())})")
        for what in matched:
            out[what] = (dst, *out[what][1:])
    return out


def _check_topics(recording, topics: dict[str, tuple[str, str, str]], own: list[str]) -> None:
    """Raises UsageError naming what is missing, the topics the recording has, and what to set: the parameter value
    that reads the type the topic has, else a ``--remap`` to a topic of the wanted type (not one of the recording's
    own ``own`` topics), else the parameter."""
    from ..user_errors import UsageError
    for what, (topic, msgtype, parameter) in topics.items():
        have = recording.topics.get(topic)
        if have == msgtype and recording.counts.get(topic, 0) > 0:
            continue
        if have is None:
            problem = f'has no {what} topic {topic} ({msgtype})'
        elif have != msgtype:
            problem = f'has {topic} as {have}, not {msgtype}'
        else:
            problem = f'has no message on {topic}'
        same_type = sorted(t for t, m in recording.topics.items() if m == msgtype and t != topic and t not in own)
        setting = _setting_for(what, have) if have not in (None, msgtype) else None
        if setting is not None:
            hint = f'{setting} in --params'
        elif same_type:
            hint = f'--remap {topic.lstrip("/")}:={same_type[0]}'
        else:
            hint = f'parameter {parameter} in --params' + (' or --remap' if what != 'revised_path' else '')
        raise UsageError(f'recording {recording.path} {problem}: its topics are {recording.listing()}; set {hint}')


def _setting_for(what: str, msgtype: str) -> str | None:
    """The explorer parameter setting that reads input ``what`` as ``msgtype`` (``'reading_type: temperature'``)."""
    from .reading_messages import READING_TYPES
    from .rover_inputs import PARTICLE_CLOUD_TYPES, POSE_SOURCES, type_name

    if what == 'reading':
        return next((f'reading_type: {name}' for name, (cls, _) in READING_TYPES.items()
                     if type_name(cls) == msgtype), None)
    if what == 'pose':
        if msgtype in PARTICLE_CLOUD_TYPES:
            return f'pose_source: particle_cloud, particle_cloud_type: {msgtype}'
        return next((f'pose_source: {name}' for name, (cls, _) in POSE_SOURCES.items()
                     if name != 'particle_cloud' and type_name(cls) == msgtype), None)
    return None


# ---------------------------------------------------------------------------------------------- the command
def run(args) -> int:
    from ..reporting.output_files import check_outputs, same_file, write_text
    from ..recording.bag_reader import open_recording
    from ..recording.replay import REPLAY_OUTPUTS
    from ..user_errors import UsageError, check_run_dir

    t0 = time.perf_counter()
    recording = open_recording(args.bag)
    out = check_run_dir(args.out, '--out')
    bag_folder = recording.path if recording.path.is_dir() else recording.path.parent
    if recording.path.is_dir() and (same_file(out, bag_folder) or bag_folder.resolve() in out.resolve().parents):
        raise UsageError(f'--out {out} is inside the recording {recording.path}: give a folder outside it')
    inputs = [*((f, 'the recording') for f in recording.files), *((f, 'the parameter file') for f in args.params)]
    if recording.path.is_dir():
        inputs.append((recording.path / 'metadata.yaml', "the recording's metadata"))
    check_outputs([(out / name, '--out') for name in REPLAY_OUTPUTS], inputs)
    if (out / 'journal.jsonl').exists() or (out / 'journal.jsonl').is_symlink():
        raise UsageError(f'--out {out} holds a run already (journal.jsonl): give a new folder (a replay starts a new '
                         'run)')
    if recording.description and recording.description.get('team'):
        raise UsageError(f'{recording.path} is a team explorer\'s recording (rovers '
                         f"{', '.join(recording.description.get('inputs', {}))}): replay takes one explorer's")
    params, source = replay_parameters(recording, args.params, args.method, out)
    topics = input_topics(params, recording, args.remap)
    own = {what: _own_topic(recording, what) for what in ('cycle', 'decider', 'journal')}
    _check_topics(recording, topics, [t for t in own.values() if t])
    streams = [t for t, _, _ in topics.values()] + [t for t in own.values() if t]
    recording.check(streams)                 # a damaged file fails here, before anything is written
    out.mkdir(parents=True, exist_ok=True)
    result = replay(recording, params, topics, own, out)
    result.update(recording=str(recording.path), parameters_from=source,
                  inputs={w: {'topic': t, 'type': m} for w, (t, m, _) in topics.items()},
                  wall_seconds=round(time.perf_counter() - t0, 3))
    write_text(out / 'replay.json', json.dumps(result, indent=2))
    _report(out, result)
    return 0


def replay(recording, params: dict[str, Any], topics: dict[str, tuple[str, str, str]], own: dict[str, str | None],
           out: Path) -> dict[str, Any]:
    """Feed ``recording`` through a new explorer writing its run folder ``out``; returns ``replay.json``'s fields.

    Args:
        recording: the opened recording (:func:`~uncertain_bo.recording.bag_reader.open_recording`).
        params: the explorer's validated parameters (``run_dir`` = ``out``).
        topics: the inputs (:func:`input_topics`).
        own: the recording's ``'cycle'``, ``'decider'``, ``'journal'`` topics (None: absent).
        out: the run folder.
    """
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64

    from ..explorer import Explorer, State, planner_from_parameters
    from ..journal.journal import Journal
    from ..recording.decider import ReplayDecider
    from ..recording.replay import ReplayHost, compare, decider_polls
    from .rover_inputs import RoverMessages, pose_message_type, seconds

    texts = {what: [_text(raw) for _, _, raw in recording.messages([own[what]])] if own[what] else []
             for what in ('decider', 'journal')}
    planner = planner_from_parameters(params, journal=out / 'journal.jsonl',
                                      metadata={'node': 'uncertain-bo replay', 'parameters': params,
                                                'replay_of': str(recording.path)})
    decider = ReplayDecider(decider_polls(texts['decider'])) if params['decide_in_background'] else None
    host = ReplayHost()
    explorer = Explorer(planner, host, params, decider=decider, result_file=out / 'explorer_result.json')
    messages = RoverMessages(explorer, params)
    handlers = _handlers(params, topics, messages, explorer, pose_message_type, deserialize_message)
    cycles = own['cycle']
    period = 1.0 / params['tick_rate']
    next_tick: float | None = None
    counts = {'messages': 0, 'cycles': 0, 'unreadable': 0}
    for topic, ns, raw in recording.messages([*handlers, *([cycles] if cycles else [])]):
        if host.done:
            break                                     # the mission ended (the live node stops there too)
        if topic == cycles:
            explorer.tick(deserialize_message(raw, Float64).data)
            counts['cycles'] += 1
            continue
        now = seconds(ns) if ns > 0 else None
        if cycles is None and now is not None:       # ros2 bag record: a cycle every 1/tick_rate s of its clock
            next_tick = now if next_tick is None else next_tick
            while next_tick < now and not host.done:
                explorer.tick(next_tick)
                counts['cycles'] += 1
                next_tick += period
        counts['messages'] += 1
        if not handlers[topic](raw, now):
            counts['unreadable'] += 1
    recorded = [json.loads(t) for t in texts['journal']]
    replayed = Journal(out / 'journal.jsonl', read_only=True, strict=False).records
    result: dict[str, Any] = {
        'cycles_from': 'the recording' if cycles else f'every 1/tick_rate = {period:g} s of its clock',
        'background_decisions': ({'recorded': len(decider_polls(texts['decider'])), 'without_record': decider.missing}
                                 if decider is not None else None),
        **counts, 'measurements': planner.n, 'completed': explorer.state is State.DONE,
        'stopped_because': explorer.done_reason,
        'decisions': [{k: r.get(k) for k in ('index', 'target', 'phase')} for r in replayed
                      if r.get('type') == 'decision'],
        'goals_sent': len(host.goals),
        'recording_messages_dropped': int(recording.custom_data.get('uncertain_bo.messages_dropped', 0) or 0),
    }
    if recorded:
        result['compared_with_recording'] = compare(recorded, replayed)
    resumed = int((recording.description or {}).get('resumed_records') or 0)
    if resumed:
        result['warning'] = (f'the recorded run began by resuming a journal of {resumed} records (a restart): the '
                             'replay starts a new one without them, so its decisions may differ')
    return result


def _handlers(params, topics, messages, explorer, pose_message_type, deserialize_message) -> dict[str, Any]:
    """Input topic -> ``handle(raw, now)`` (False: the bytes could not be read as the type: refused as the live node
    refuses a malformed message)."""
    from .reading_messages import READING_TYPES
    from .revised_path import revise

    def deserialised(cls, what, use):
        def handle(raw: bytes, now):
            try:
                msg = deserialize_message(raw, cls)
            except Exception as exc:  # noqa: BLE001 - bytes of another type or layout
                explorer.received['poses' if what == 'pose' else 'readings'] += 1
                explorer.reject(what if what != 'revised_path' else 'pose', 'malformed message', str(exc))
                return False
            use(msg, now)
            return True
        return handle

    def cloud(raw: bytes, now) -> bool:
        messages.cloud(raw, now)
        return True

    out = {}
    pose_topic = topics['pose'][0]
    if params['pose_source'] == 'particle_cloud':
        out[pose_topic] = cloud                       # read from its bytes, as the live node does
    else:
        out[pose_topic] = deserialised(pose_message_type(params['pose_source']), 'pose', messages.pose)
    out[topics['reading'][0]] = deserialised(READING_TYPES[params['reading_type']][0], 'reading', messages.reading)
    if 'revised_path' in topics:
        from nav_msgs.msg import Path as PathMsg
        out[topics['revised_path'][0]] = deserialised(PathMsg, 'revised_path',
                                                      lambda msg, now: revise(explorer, params, msg))
    return out


def _text(raw: bytes) -> str:
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import String
    return deserialize_message(raw, String).data


def _report(out: Path, result: dict[str, Any]) -> None:
    """The replay's summary and map (``uncertain-bo report``'s, for a run without ground truth) and what it printed."""
    from ..reporting.run_report import plot_field_run, summarize_run

    lines = [f"warning: {result['warning']}"] if result.get('warning') else []
    lines.append(f"replayed {result['messages']} messages and {result['cycles']} cycles of {result['recording']} "
                 f"({result['cycles_from']}): {result['measurements']} measurements, "
                 f"{len(result['decisions'])} decisions"
                 + (f", ended: {result['stopped_because']}" if result['stopped_because'] else ', not ended'))
    compared = result.get('compared_with_recording')
    if compared:
        lines.append('compared with the journal the recording holds: ' + '; '.join(
            f"{kind}s {c['identical']}/{c['recorded']} identical"
            + ('' if c['all_identical'] else f" (replayed {c['replayed']})")
            for kind, c in compared.items() if c['recorded'] or c['replayed']))
    if result['measurements']:
        summarize_run(out)
        png = plot_field_run(out)
        lines.append(f"wrote {out / 'journal.jsonl'}, {out / 'replay.json'}, {out / 'summary.json'}, {png}")
    else:
        lines.append(f"no measurement: wrote {out / 'journal.jsonl'} and {out / 'replay.json'}")
    print('\n'.join(lines), flush=True)

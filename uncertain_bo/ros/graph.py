"""The simulated exploration graph in one process, without ``ros2 launch``.

``uncertain-bo demo`` (alias ``sim``) starts the same four nodes as ``launch/sim.launch.py`` —
``sim_rover``, ``ekf`` (or ``particle_filter`` when sim_rover's ``localiser`` is ``'pf'``), ``pure_pursuit``
and ``explorer`` — from the same YAML files
(``config/sim.yaml``, ``config/explorer.yaml``, plus any ``--params`` files), on one executor. They talk
over real ROS 2 topics (DDS), exactly as separate processes would.

A ``SingleThreadedExecutor`` is used, not a ``MultiThreadedExecutor``: measured on 2 cores it runs the
lockstep simulation about twice as fast (rclpy's executor overhead, not computation, is the bottleneck,
and the GIL serialises Python callbacks anyway), and callbacks run in arrival order. While the explorer
decides, simulated time stands still (the lockstep clock waits for the control loop), so the decision
latency costs no simulated rover time; on a real rover it does, and it is reported in summary.json.
A recorder node keeps the true and estimated trajectory for the report. When the explorer has made its
last measurement the run is scored against the field (``summary.json``) and drawn (``run.png``). The command line
is :mod:`uncertain_bo.ros.demo_cli` (a team of rovers: :mod:`uncertain_bo.ros.team_graph`).
"""
from __future__ import annotations

import bisect
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..parameters.files import declared_parameters, unknown_parameters
from ..parameters.specs import ParameterError, config_path, validate
from ..parameters.files import node_parameters, unknown_sections
from ..reporting.units import simulated_reading_unit
from ..user_errors import check_run_dir
from .graph_session import StopRequest, graph_session, resolve_domain_id
from .launch_args import LOCALISERS

__all__ = ['run_demo', 'spin_in_background',
           'stop_graph', 'prepare_graph', 'NODES', 'LOCALISER_NODES', 'graph_nodes']

log = logging.getLogger(__name__)

#: node name -> (module, class, spec attribute, use_sim_time)
NODES = {
    'sim_rover': ('uncertain_bo.ros.sim_rover', 'SimRoverNode', 'SIM_ROVER_PARAMS', False),
    'ekf': ('uncertain_bo.ros.ekf', 'EkfNode', 'EKF_ALL_PARAMS', True),
    'particle_filter': ('uncertain_bo.ros.particle_filter', 'ParticleFilterNode', 'PF_ALL_PARAMS', True),
    'pure_pursuit': ('uncertain_bo.ros.pure_pursuit', 'PurePursuitNode', 'PURE_PURSUIT_ALL_PARAMS', True),
    'explorer': ('uncertain_bo.ros.explorer', 'ExplorerNode', 'EXPLORER_NODE_PARAMS', True),
}


#: sim_rover's ``localiser`` -> the node that runs it (the launch files' table)
LOCALISER_NODES = LOCALISERS


def graph_nodes(params: dict[str, dict[str, Any]]) -> list[str]:
    """Names of the nodes to start for validated ``params``: one localiser node, chosen by sim_rover's
    ``localiser``, and the others."""
    skip = set(LOCALISER_NODES.values()) - {LOCALISER_NODES[params['sim_rover']['localiser']]}
    return [n for n in NODES if n not in skip]


def load_graph_parameters(extra_files: list[Path] | None = None,
                          overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Validated parameters of every node: shipped YAML, then ``extra_files``, then ``overrides``; the explorer's
    ``search_bounds`` and ``reading_unit`` follow the simulated field unless a file or override sets them
    (:func:`~uncertain_bo.reporting.units.simulated_reading_unit`).

    Raises:
        ParameterError: a value is invalid or a file is malformed (before any node starts).
    """
    import importlib

    files = [config_path('sim.yaml'), config_path('explorer.yaml'), *(extra_files or [])]
    known = [*NODES, 'run_recorder']
    for f, key in unknown_sections(extra_files or [], ['/' + n for n in known]):
        raise ParameterError(f'parameter file {f}: section {key!r} names no node of the simulation; known: '
                             f"{', '.join(NODES)} (or '/**' for all)")
    user_bounds = 'search_bounds' in {**node_parameters(extra_files or [], 'explorer'),
                                      **(overrides or {}).get('explorer', {})}
    specs = {name: getattr(importlib.import_module(module), spec_attr)
             for name, (module, _, spec_attr, _) in NODES.items()}
    unknown = [u for name in NODES for u in unknown_parameters(extra_files or [], name, [p.name for p in specs[name]])]
    if unknown:   # every misspelt name, with its file and line, before any value is judged
        raise ParameterError('; '.join(map(str, unknown)))
    out = {}
    for name, (_, _, _, sim_time) in NODES.items():
        values = {**declared_parameters(files, name, [p.name for p in specs[name]]), **(overrides or {}).get(name, {})}
        values['use_sim_time'] = sim_time
        out[name] = validate(specs[name], values)
    _match_reading_types(out, extra_files or [], overrides or {})
    user_explorer = {**node_parameters(extra_files or [], 'explorer'), **(overrides or {}).get('explorer', {})}
    if 'reading_unit' not in user_explorer:
        out['explorer']['reading_unit'] = simulated_reading_unit(out['sim_rover']['field'])   # the field's, not °C
    from ..sim.mission import search_whole_field
    return out if user_bounds else search_whole_field(out)


def _match_reading_types(params: dict[str, dict[str, Any]], extra_files: list[Path],
                         overrides: dict[str, dict[str, Any]]) -> None:
    """The simulated sensor publishes the message type the explorer reads: a robot's params file names the
    explorer's ``reading_type`` (e.g. ``float64`` for a std_msgs/Float64 probe) and the simulation stands in
    for that sensor. Two different types set explicitly for both nodes are a mistake (one topic, two types).

    Raises:
        ParameterError: ``reading_type`` set differently for sim_rover and explorer.
    """
    def user_set(node: str) -> bool:
        return 'reading_type' in {**node_parameters(extra_files, node), **overrides.get(node, {})}

    want, have = params['explorer']['reading_type'], params['sim_rover']['reading_type']
    if want == have:
        return
    if user_set('sim_rover') and user_set('explorer'):
        raise ParameterError(f"reading_type is {have!r} for sim_rover but {want!r} for explorer: both use the topic "
                             "'reading', so they must agree (set it once, for explorer)")
    if user_set('sim_rover'):
        params['explorer']['reading_type'] = have
    else:
        params['sim_rover']['reading_type'] = want


def prepare_graph(run_dir: Path, overrides: dict[str, dict[str, Any]] | None = None,
                  extra_files: list[Path] | None = None) -> tuple[Path, dict[str, dict[str, Any]], Any]:
    """What the demo graphs check and write before any node starts: ``(run_dir, validated parameters of every node,
    the field)``; the explorer's ``run_dir`` set, inline decisions unless a file says otherwise, goals on topics,
    ``parameters.json`` written.

    Raises:
        ParameterError, FieldError, UsageError, JournalError: as :func:`run_demo` (nothing is started); UsageError
            also for an output of the run folder that is one of the demo's inputs (a parameter file, the field file,
            the journal: :func:`~uncertain_bo.reporting.output_files.check_outputs`).
    """
    from ..journal.journal import Journal
    from ..reporting.output_files import check_outputs, write_text
    from ..sim.field import Field
    from ..sim.world import start_outside
    from .launch_args import bounds_outside

    run_dir = check_run_dir(run_dir, 'run folder')
    params = load_graph_parameters(extra_files, overrides)
    check_outputs([(run_dir / name, 'the run folder\'s') for name in DEMO_OUTPUTS],
                  [*((f, 'the parameter file') for f in extra_files or []),
                   (params['sim_rover']['field'], 'the field file'), (run_dir / 'journal.jsonl', 'the journal')])
    from .check import check_graph
    for warning in check_graph(params):   # what `uncertain-bo check` finds across the nodes, before any start
        log.warning(warning)
    sim = params['sim_rover']
    field = Field.load(sim['field'], extent=sim['field_extent'])   # before anything starts or is written
    reason = start_outside(sim, field) or bounds_outside(params['explorer']['search_bounds'], field.bounds)
    if reason:
        raise ParameterError(reason)
    if os.path.lexists(run_dir / 'journal.jsonl'):   # an unreadable journal (or a pipe) fails here, before any write
        Journal(run_dir / 'journal.jsonl', read_only=True, strict=False)   # damaged records: the resume skips them
    params['explorer']['run_dir'] = str(run_dir)
    if 'decide_in_background' not in {**node_parameters(extra_files or [], 'explorer'),
                                      **(overrides or {}).get('explorer', {})}:
        # One process: the executor thread runs the lockstep simulation flat out, and a decision thread would
        # get the GIL only between its callbacks (decisions of 0.05 s took 5-40 s, while simulated time ran
        # on). Deciding inline pauses the simulated world during a decision, as a lockstep clock should.
        params['explorer']['decide_in_background'] = False
    _stamp_commands(params, extra_files or [], overrides or {})
    if params['explorer'].get('goal_interface', 'topic') != 'topic':
        # a robot's params file may name Nav2's action; the simulated graph's controller is pure_pursuit
        log.info("goal_interface %r -> 'topic': the simulation drives with pure_pursuit, not Nav2",
                 params['explorer']['goal_interface'])
        params['explorer']['goal_interface'] = 'topic'
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text(run_dir / 'parameters.json', json.dumps(params, indent=2))
    return run_dir, params, field


#: what a demo writes in its run folder besides the journal
DEMO_OUTPUTS = ('parameters.json', 'trajectory.csv', 'explorer_result.json', 'summary.json', 'run.png')


def _stamp_commands(params: dict[str, dict[str, Any]], extra_files: list[Path],
                    overrides: dict[str, dict[str, Any]]) -> None:
    """``sim_rover`` and ``pure_pursuit`` exchange ``TwistStamped`` commands (``stamped_cmd_vel``), so the lockstep
    tells a late command from the answer to its last step (:mod:`uncertain_bo.ros.sim_rover`), unless a file or
    an override sets ``stamped_cmd_vel`` for either node: then both take that value (one topic, one type)."""
    nodes = ('sim_rover', 'pure_pursuit')
    chosen = [n for n in nodes if 'stamped_cmd_vel' in {**node_parameters(extra_files, n), **overrides.get(n, {})}]
    stamped = params[chosen[0]]['stamped_cmd_vel'] if chosen else True
    for n in nodes:
        params[n]['stamped_cmd_vel'] = stamped


#: s the demo waits at exit for a decision still running on the executor thread
DECISION_JOIN_TIMEOUT = 60.0


def spin_in_background(executor) -> tuple[threading.Thread, list[BaseException]]:
    """Spin ``executor`` on a daemon thread; returns the thread and the list that receives the exception that
    ended the spinning, if any (for the caller to report)."""
    errors: list[BaseException] = []

    def spin():
        try:
            executor.spin()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return thread, errors


def stop_graph(executor, thread, nodes) -> None:
    """Shut ``executor`` down, wait for its spinning ``thread`` (either may be None: start-up failed) and destroy
    ``nodes`` and the rclpy context. The nodes decide inline in these graphs: a Ctrl-C during a decision must let
    that callback end before its nodes and the context are destroyed (else the process aborts: "terminate called
    without an active exception", 3 of 4 runs of bench/resume_pf_en_route.py)."""
    import rclpy
    if executor is not None:
        executor.shutdown(timeout_sec=1.0)
    if thread is not None:
        thread.join(timeout=DECISION_JOIN_TIMEOUT)
    for n in nodes:
        n.destroy_node()
    if rclpy.ok():
        rclpy.shutdown()


def run_demo(run_dir: Path, overrides: dict[str, dict[str, Any]] | None = None, *,
             extra_files: list[Path] | None = None, timeout: float = 1800.0, discovery: str = 'off',
             domain_id: int | None = None, stop: StopRequest | None = None) -> dict[str, Any]:
    """Run the simulated exploration graph until the explorer is done, SIGINT or SIGTERM asks it to stop, or
    ``timeout``; write the report.

    Args:
        run_dir: output folder (journal, trajectory, summary.json, run.png).
        overrides: node name -> parameter values applied last.
        extra_files: extra parameter files.
        timeout: wall-clock limit, s.
        discovery: who sees the graph's DDS traffic (:data:`~uncertain_bo.ros.graph_session.DISCOVERY`; default
            nothing outside this process).
        domain_id: ROS domain id (None: ``ROS_DOMAIN_ID``, else 0).
        stop: the caller's request to stop, already taking SIGINT and SIGTERM
            (:func:`~uncertain_bo.ros.graph_session.stop_on_signals`); None: the graph's own.

    Returns:
        The summary dict (``completed`` False if the run timed out or was stopped; ``interrupted`` the signal's
        name when a signal stopped it).

    Raises:
        ParameterError: invalid parameters, or ``search_bounds`` not inside the field (nothing is started).
        uncertain_bo.sim.field.FieldError: the field cannot be loaded (nothing is started).
        uncertain_bo.user_errors.UsageError: ``run_dir`` is a file.
        uncertain_bo.journal.journal.JournalError: the run folder's journal cannot be resumed.
    """
    import importlib

    from rclpy.executors import SingleThreadedExecutor

    from ..explorer import State, execution_noise_summary
    from ..sim.report import plot_run, summarize, write_trajectory
    from .params import parameter_overrides

    domain_id = resolve_domain_id(domain_id)   # a bad ROS_DOMAIN_ID is found before anything is written
    run_dir, params, field = prepare_graph(run_dir, overrides, extra_files)
    sim = params['sim_rover']

    with graph_session(discovery, domain_id, stop) as stop:   # a Ctrl-C stops the graph, the report is written
        nodes = {}
        executor = thread = None
        wall0 = time.monotonic()
        try:
            for name in graph_nodes(params):
                module, cls_name, spec_attr, _ = NODES[name]
                cls = getattr(importlib.import_module(module), cls_name)
                specs = getattr(importlib.import_module(module), spec_attr)
                nodes[name] = cls(parameter_overrides=parameter_overrides(params[name], specs))
            recorder = _recorder_node()
            executor = SingleThreadedExecutor()
            for n in [*nodes.values(), recorder]:
                executor.add_node(n)
            thread, errors = spin_in_background(executor)
            explorer = nodes['explorer'].explorer
            completed = False
            while thread.is_alive() and time.monotonic() - wall0 < timeout and not stop:
                if nodes['explorer'].explorer.state is State.DONE:
                    completed = True
                    break
                time.sleep(0.1)
            if errors:
                raise errors[0]
            if not completed:
                log.error('demo stopped after %.0f s wall time with %d/%d measurements (state: %s)%s',
                          time.monotonic() - wall0, explorer.planner.n, params['explorer']['max_measurements'],
                          explorer.state.value, f' by {stop.signal}' if stop else '')
            sim_stats = nodes['sim_rover'].stats()
            trajectory = recorder.rows()
            truth_at = recorder.truth_at
        finally:
            stop_graph(executor, thread, nodes.values())
        wall = time.monotonic() - wall0

        write_trajectory(run_dir / 'trajectory.csv', trajectory)
        cov = np.diag(np.square(params['explorer']['execution_noise_std']))
        interrupted = stop.signal if stop and not completed else None
        extra = {'completed': completed, 'interrupted': interrupted, 'wall_time_s': wall, 'simulation': sim_stats,
                 'stopped_because': explorer.done_reason or (f'interrupted ({interrupted})' if interrupted else None),
                 'execution_noise_model': execution_noise_summary(explorer.planner),
                 **_execution_scatter(explorer.planner.journal_file, truth_at)}
        summary = summarize(run_dir, field, cov, extra=extra)
        ex = params['explorer']
        png = plot_run(run_dir, field, cov, title=f'{ex["method"]} exploration ({sim["localiser"]} localiser), '
                                                  f'{summary["measurements"]} measurements')
        _print_result(summary, run_dir, png)
    return summary


def _execution_scatter(journal, truth_at) -> dict[str, Any]:
    """Where the rover really was when reading vs target (execution noise) and vs estimate (localisation
    error of the location distribution's mean)."""
    from ..journal.journal import location_from_record

    exec_err, loc_err = [], []
    for r in journal.observations:
        stamp = r.get('reading_stamp')
        true_xy = truth_at(stamp) if stamp is not None else None
        if true_xy is None:
            continue
        exec_err.append(true_xy - np.asarray(r['target']))
        loc_err.append(true_xy - location_from_record(r['location']).mean[0].numpy())  # any location kind
    if not exec_err:
        return {}
    e, l_ = np.array(exec_err), np.array(loc_err)
    return {'measured_execution_std': e.std(0, ddof=1).tolist() if len(e) > 1 else None,
            'measured_execution_mean': e.mean(0).tolist(),
            'localisation_rms_error': float(np.sqrt((l_ ** 2).sum(1).mean()))}


def _print_result(summary: dict[str, Any], run_dir: Path, png: Path) -> None:
    from ..sim.report import result_lines

    lines = ['', '=' * 78, *result_lines(summary)]
    if summary.get('decision_seconds_median_acquisition') is not None:
        lines.append(f"median decision time {summary['decision_seconds_median_acquisition']:.3f} s; "
                     f"simulation {summary['simulation']['real_time_factor']:.0f}x real time; "
                     f"wall time {summary['wall_time_s']:.0f} s")
    lines += [f'run folder: {run_dir}  (journal.jsonl, summary.json, {png.name})', '=' * 78]
    print('\n'.join(lines), flush=True)


class _TruthBuffer:
    """Ground-truth positions by stamp (downsampled) for looking up where a reading was really taken."""

    def __init__(self, period: float = 0.1):
        self.period = period
        self.t: list[float] = []
        self.xy: list[np.ndarray] = []

    def add(self, t: float, xy: np.ndarray) -> None:
        if not self.t or t - self.t[-1] >= self.period or t < self.t[-1]:
            if self.t and t < self.t[-1]:  # time went backwards: simulation restarted
                self.t.clear()
                self.xy.clear()
            self.t.append(t)
            self.xy.append(xy)

    def at(self, t: float) -> np.ndarray | None:
        if not self.t:
            return None
        i = bisect.bisect_left(self.t, t)
        cands = [j for j in (i - 1, i) if 0 <= j < len(self.t)]
        j = min(cands, key=lambda k: abs(self.t[k] - t))
        return self.xy[j] if abs(self.t[j] - t) <= 1.0 else None


def _recorder_node():
    from nav_msgs.msg import Odometry
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from .conversions import odometry_to_pose

    class Recorder(Node):
        def __init__(self):
            super().__init__('run_recorder', parameter_overrides=[Parameter('use_sim_time', value=True)])
            self.truth = _TruthBuffer()
            self._rows: list[tuple[float, float, float, float, float]] = []
            self._est = None
            self.create_subscription(Odometry, 'ground_truth', self._on_truth, 50)
            self.create_subscription(Odometry, 'odometry/filtered', self._on_est, 50)

        def _on_est(self, msg):
            self._est = odometry_to_pose(msg).xy

        def _on_truth(self, msg):
            p = odometry_to_pose(msg)
            self.truth.add(p.stamp, p.xy)
            if self._est is not None and (not self._rows or p.stamp - self._rows[-1][0] >= 1.0):
                self._rows.append((p.stamp, *map(float, p.xy), *map(float, self._est)))

        def rows(self):
            return list(self._rows)

        def truth_at(self, t):
            return self.truth.at(t)

    return Recorder()

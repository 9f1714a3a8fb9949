"""Several rovers, one map, in one process: ``uncertain-bo demo --rovers N`` (issue 23).

The graph of ``launch/team.launch.py`` on one executor, over real ROS 2 topics (DDS), from the same YAML files as
the single-rover demo (:mod:`uncertain_bo.ros.graph`, whose checks run first: :func:`~uncertain_bo.ros.graph.
prepare_graph`):

- one ``sim_rover`` simulating the N rovers on one clock (``rovers: [rover0, ...]``; in lockstep a rover that stops
  answering is no longer waited for: :mod:`uncertain_bo.ros.sim_rover`);
- per rover, in namespace ``roverI``: its localiser (``ekf`` or ``particle_filter``) and ``pure_pursuit``;
- ONE ``team_explorer`` (:mod:`uncertain_bo.ros.team_explorer`) serving them with one planner and one journal.

Rover ``i``'s start and seeds come from :func:`uncertain_bo.team.mission.team_parameters` (``spacing`` m apart along x,
centred on the configured start; simulation and particle-filter seeds ``seed + 7919 i``), the same rule as the
in-process :class:`~uncertain_bo.team.mission.Team` and the launch file. ``silence`` stops a rover's localiser after the
team's K-th measurement (a failure drill): its pose stops, the team explorer drops it after ``silence_timeout``,
its pending target is released and the others finish the mission. The run is scored as the single-rover demo's
(``summary.json``: the team's final recommendation and its regret); per-rover progress is logged by the team
explorer and summed up at the end.
"""
from __future__ import annotations

import importlib
import logging
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..parameters.specs import ParameterError
from ..user_errors import UsageError
from .graph import LOCALISER_NODES, NODES, prepare_graph, spin_in_background, stop_graph
from .graph_session import StopRequest, graph_session, resolve_domain_id

__all__ = ['run_team_demo', 'team_node_parameters', 'parse_silence']

log = logging.getLogger(__name__)


def parse_silence(text: str | None, rovers: int) -> tuple[str, int] | None:
    """``'rover1:3'`` -> ``('rover1', 3)`` (None for None).

    Raises:
        UsageError: not ``roverI:K`` with ``I`` < ``rovers`` and ``K`` >= 1, or a team of one.
    """
    if text is None:
        return None
    m = re.fullmatch(r'(rover(\d+)):(\d+)', text.strip())
    if m is None or int(m.group(2)) >= rovers or int(m.group(3)) < 1 or rovers < 2:
        raise UsageError(f'--silence {text!r}: expected ROVER:K with ROVER one of rover0..rover{rovers - 1} and '
                         'K >= 1, in a team of at least 2 (--rovers)')
    return m.group(1), int(m.group(3))


def team_node_parameters(params: dict[str, dict[str, Any]], rovers: int, *,
                         silence_timeout: float | None = None) -> dict[str, dict[str, Any]]:
    """Parameters of the team graph's nodes from the validated single-rover graph's ``params``: ``'sim_rover'``
    (all rovers), ``'team_explorer'``, and per rover ``'roverI/<localiser>'`` and ``'roverI/pure_pursuit'``
    (start and seeds by :func:`~uncertain_bo.team.mission.team_parameters`; frames ``roverI/base_link``)."""
    from ..team.mission import rover_names, team_parameters
    from .team_explorer import TEAM_EXPLORER_PARAMS

    names = rover_names(rovers)
    spacing = float(params['sim_rover']['spacing'])
    out = {'sim_rover': {**params['sim_rover'], 'rovers': names}}
    keep = {p.name for p in TEAM_EXPLORER_PARAMS}
    out['team_explorer'] = {k: v for k, v in params['explorer'].items() if k in keep or k == 'use_sim_time'}
    out['team_explorer']['rovers'] = names
    if silence_timeout is not None:
        out['team_explorer']['silence_timeout'] = float(silence_timeout)
    localiser = LOCALISER_NODES[params['sim_rover']['localiser']]
    for i, name in enumerate(names):
        p = team_parameters(params, rovers, i, spacing=spacing)
        out[f'{name}/{localiser}'] = {**p[localiser], 'base_frame': f'{name}/base_link'}
        out[f'{name}/pure_pursuit'] = dict(p['pure_pursuit'])
    return out


def run_team_demo(run_dir: Path, overrides: dict[str, dict[str, Any]] | None = None, *, rovers: int = 2,
                  extra_files: list[Path] | None = None, timeout: float = 1800.0,
                  silence: tuple[str, int] | None = None, silence_timeout: float | None = None,
                  discovery: str = 'off', domain_id: int | None = None,
                  stop: StopRequest | None = None) -> dict[str, Any]:
    """Run the team graph until the team explorer is done, SIGINT or SIGTERM asks it to stop, or ``timeout``; write
    and print the report.

    Args:
        run_dir: output folder (journal.jsonl with every measurement's rover, explorer_result.json, summary.json).
        overrides: node name -> parameter values applied last (``'explorer'`` ones go to the team explorer).
        rovers: N >= 2.
        extra_files: extra parameter files.
        timeout: wall-clock limit, s.
        silence: ``(rover, K)``: stop that rover's localiser after the team's K-th measurement.
        silence_timeout: the team explorer's ``silence_timeout`` (s; default its parameter's).
        discovery, domain_id, stop: who sees the graph's DDS traffic and the caller's request to stop, as
            :func:`~uncertain_bo.ros.graph.run_demo`.

    Returns:
        The summary dict: ``completed`` (the team explorer finished), ``interrupted`` (the signal that stopped it,
        or None), ``rovers`` (per rover: measurements,
        dropped, why it ended), ``dropped``, the team's ``final_regret`` and the rest of
        :func:`~uncertain_bo.sim.report.summarize`'s.

    Raises:
        ParameterError, FieldError, UsageError, JournalError: as :func:`~uncertain_bo.ros.graph.run_demo`; a
        journal already in ``run_dir`` (the demo starts a new team mission; a ``team_explorer`` restarted on its
        ``run_dir`` resumes it).
    """
    from rclpy.executors import SingleThreadedExecutor

    from ..sim.report import summarize
    from .params import parameter_overrides
    from .team_explorer import TEAM_EXPLORER_PARAMS, TeamExplorerNode

    if (Path(run_dir) / 'journal.jsonl').is_file():
        raise ParameterError(f'{run_dir} holds a journal: demo --rovers starts a new mission (give a new --out; '
                             'a team_explorer restarted on a run_dir resumes its journal)')
    domain_id = resolve_domain_id(domain_id)   # a bad ROS_DOMAIN_ID is found before anything is written
    run_dir, params, field = prepare_graph(run_dir, overrides, extra_files)
    team_params = team_node_parameters(params, rovers, silence_timeout=silence_timeout)
    localiser = LOCALISER_NODES[params['sim_rover']['localiser']]

    with graph_session(discovery, domain_id, stop) as stop:   # a Ctrl-C stops the graph, the report is written
        nodes: dict[str, Any] = {}
        executor = thread = None
        wall0 = time.monotonic()
        silenced: str | None = None
        try:
            for key, values in team_params.items():
                ns, _, name = key.rpartition('/')
                if name == 'team_explorer':
                    nodes[key] = TeamExplorerNode(parameter_overrides=parameter_overrides(values,
                                                                                          TEAM_EXPLORER_PARAMS))
                    continue
                module, cls_name, spec_attr, _ = NODES[name]
                mod = importlib.import_module(module)
                specs = getattr(mod, spec_attr)
                nodes[key] = getattr(mod, cls_name)(namespace=ns or None,
                                                    parameter_overrides=parameter_overrides(values, specs))
            team = nodes['team_explorer']
            executor = SingleThreadedExecutor()
            for n in nodes.values():
                executor.add_node(n)
            thread, errors = spin_in_background(executor)
            while thread.is_alive() and time.monotonic() - wall0 < timeout and not team.done and not stop:
                if silence is not None and silenced is None and team.planner.n >= silence[1]:
                    silenced = f'{silence[0]}/{localiser}'
                    executor.remove_node(nodes[silenced])      # its pose stops: the team explorer will drop it
                    log.warning('failure drill: %s stopped after measurement %d', silenced, team.planner.n)
                time.sleep(0.05)
            if errors:
                raise errors[0]
            completed = team.completed
            if not completed:
                log.error('team demo stopped after %.0f s wall time with %d/%d measurements%s',
                          time.monotonic() - wall0, team.planner.n, params['explorer']['max_measurements'],
                          f' by {stop.signal}' if stop else '')
            per_rover = {name: {'measurements': r.measurements, 'dropped': r.dropped_reason,
                                'stopped_because': r.explorer.done_reason,
                                'distance_driven_m': r.explorer.budget.distance}
                         for name, r in team.rovers.items()}
            dropped, duplicates = list(team.team.dropped), team.team.duplicates
            sim_stats = nodes['sim_rover'].stats()
        finally:
            stop_graph(executor, thread, nodes.values())
        cov = np.diag(np.square(params['explorer']['execution_noise_std']))
        summary = summarize(run_dir, field, cov, extra={
            'completed': completed, 'interrupted': stop.signal if stop and not completed else None,
            'wall_time_s': time.monotonic() - wall0, 'simulation': sim_stats,
            'rovers': per_rover, 'dropped': dropped, 'duplicates': duplicates, 'silenced': silenced})
        _print_team_result(summary, run_dir)
    return summary


def _print_team_result(summary: dict[str, Any], run_dir: Path) -> None:
    from ..sim.report import result_lines

    lines = ['', '=' * 78, f"team of {len(summary['rovers'])}: {summary['measurements']} measurements"]
    for name, r in summary['rovers'].items():
        lines.append(f"  {name}: {r['measurements']} measurements, {r['distance_driven_m']:.0f} m driven (odometer)"
                     + (f"; dropped: {r['dropped']}" if r['dropped'] else
                        f"; ended: {r['stopped_because']}" if r['stopped_because'] else ''))
    lines += result_lines(summary, whose="team's ")
    lines.append(f"wall time {summary['wall_time_s']:.0f} s")
    lines += [f'run folder: {run_dir}  (journal.jsonl: each measurement with its rover; summary.json)', '=' * 78]
    print('\n'.join(lines), flush=True)

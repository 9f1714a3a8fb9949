"""``uncertain-bo demo`` (alias ``sim``): its command line, which runs :func:`uncertain_bo.ros.graph.run_demo` for one
rover or :func:`uncertain_bo.ros.team_graph.run_team_demo` for a team (``--rovers N``, ``--silence``).
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from ..parameters.files import node_parameters
from ..parameters.specs import ParameterError, config_path
from ..user_errors import check_run_dir
from .graph import NODES, log, run_demo
from .graph_session import add_arguments as add_session_arguments, bounded_integer, resolve_domain_id, stop_on_signals

__all__ = ['add_parser']


def _positive_seconds(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds > 0."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f'{text!r} is not a number of seconds > 0')
    return value


#: ``--rovers``, ``--foxglove``
_rover_count = bounded_integer(1, 16, 'a number of rovers')
_port = bounded_integer(1, 65535, 'a TCP port')


def _shipped_defaults() -> dict[str, Any]:
    """The shipped config's field, localiser, method and max_measurements (what demo runs without options)."""
    try:
        sim = node_parameters([config_path('sim.yaml')], 'sim_rover')
        ex = node_parameters([config_path('explorer.yaml')], 'explorer')
    except (ParameterError, FileNotFoundError):
        return {}
    return {'field': sim.get('field'), 'localiser': sim.get('localiser'), 'method': ex.get('method'),
            'measurements': ex.get('max_measurements')}


def add_parser(sub) -> None:
    from ..acquisition import METHODS
    from ..sim.field import FIELD_NAMES

    shipped = _shipped_defaults()
    fields = '; '.join(f'{name!r}: {text}' for name, text in FIELD_NAMES.items()).replace('%', '%%')
    for name in ('demo', 'sim'):
        p = sub.add_parser(
            name, help='simulated rover explores a real field over ROS 2 topics (uGP-UCB explorer)'
            if name == 'demo' else 'alias of demo',
            description='Start sim_rover, ekf, pure_pursuit and explorer in one process (real DDS topics, '
                        'simulated time), run the exploration, then write summary.json and run.png. Parameter '
                        'files (--params) are checked as `uncertain-bo check` does, before anything starts.')
        p.add_argument('--field', default=None,
                       help=f"field (default {shipped.get('field', 'jacksboro-smooth')!r}, config/sim.yaml's "
                            f'sim_rover field): a named field - {fields} - or a .npz grid / .csv of x,y,value')
        p.add_argument('--out', type=Path, default=None, help='run folder (default runs/demo-<date-time>); '
                       'an existing journal there is resumed')
        p.add_argument('--seed', type=int, default=None, help='seed of simulation noise and explorer (default 0)')
        p.add_argument('--measurements', type=int, default=None,
                       help=f"number of measurements (default {shipped.get('measurements', 30)}, "
                            "config/explorer.yaml's max_measurements)")
        p.add_argument('--method', default=None,
                       help=f"explorer method or baseline (default {shipped.get('method', 'ugp_ucb')!r}): "
                            f"{', '.join(sorted(METHODS))} (the explorer parameter `method`; "
                            '`uncertain-bo bench --help` describes them)')
        p.add_argument('--localiser', choices=('ekf', 'pf'), default=None,
                       help=f"simulated localiser: 'ekf' or 'pf' (particle filter; the explorer then takes the "
                            f"particle cloud as its pose source); default {shipped.get('localiser', 'ekf')!r}")
        p.add_argument('--params', type=Path, action='append', default=[],
                       help='extra ROS 2 parameter YAML file(s), applied after the shipped ones (checked first)')
        p.add_argument('--timeout', type=_positive_seconds, default=1800.0,
                       help='wall-clock limit, s (> 0; default 1800)')
        p.add_argument('--rovers', type=_rover_count, default=1,
                       help='number of rovers (default 1); N >= 2: N simulated rovers in namespaces rover0.. on one '
                            'clock, each with its localiser and pure_pursuit, and ONE team_explorer sharing one GP '
                            '(--measurements is the team\'s budget)')
        p.add_argument('--silence', default=None, metavar='ROVER:K',
                       help="failure drill (with --rovers): stop ROVER's localiser after the team's K-th measurement; "
                            'the team_explorer drops it after silence_timeout and the others finish the mission')
        p.add_argument('--record', action='store_true',
                       help="record the explorer's inputs, cycle, decisions, journal and GP maps to a rosbag2 folder "
                            '(MCAP) OUT/recording: `ros2 bag info`, Foxglove and `uncertain-bo replay` open it')
        p.add_argument('--foxglove', type=_port, default=None, metavar='PORT',
                       help='serve the same topics live to Foxglove on ws://127.0.0.1:PORT (foxglove-sdk); import '
                            'config/foxglove_layout.json there')
        add_session_arguments(p)
        p.set_defaults(func=_cli)


def _cli(args) -> int:
    from .check import check_parameter_files

    # every mistake in the command line and the parameter files ends here, before anything starts or is written
    if args.params:
        shipped = [config_path('sim.yaml'), config_path('explorer.yaml')]
        for warning in check_parameter_files(args.params, base_files=shipped).raise_errors().warnings:
            log.warning(warning)
    overrides: dict[str, dict[str, Any]] = {n: {} for n in NODES}
    if args.field is not None:
        overrides['sim_rover']['field'] = args.field
    if args.seed is not None:
        overrides['sim_rover']['seed'] = args.seed
        overrides['explorer']['seed'] = args.seed
    if args.measurements is not None:
        overrides['explorer']['max_measurements'] = args.measurements
    if args.method is not None:
        overrides['explorer']['method'] = args.method
    if args.record:
        overrides['explorer']['record'] = True
    if args.foxglove is not None:
        overrides['explorer']['foxglove_port'] = args.foxglove
    if args.localiser is not None:
        overrides['sim_rover']['localiser'] = args.localiser
        if args.localiser == 'pf':
            overrides['explorer']['pose_source'] = 'particle_cloud'
    out = args.out or Path('runs') / ('demo-' + _dt.datetime.now().strftime('%Y%m%d-%H%M%S'))
    check_run_dir(out, '--out')
    args.domain_id = resolve_domain_id(args.domain_id)
    # a Ctrl-C from here on stops the graph (at once if it comes before the graph runs) and the report is written
    with stop_on_signals() as stop:
        session = {'discovery': args.discovery, 'domain_id': args.domain_id, 'stop': stop}
        if args.rovers > 1 or args.silence is not None:
            from .team_graph import parse_silence, run_team_demo
            silence = parse_silence(args.silence, args.rovers)
            summary = run_team_demo(out, overrides, rovers=args.rovers, extra_files=args.params,
                                    timeout=args.timeout, silence=silence, **session)
        else:   # user mistakes (ParameterError, FieldError, JournalError, UsageError) end in one line: cli.main
            summary = run_demo(out, overrides, extra_files=args.params, timeout=args.timeout, **session)
    return 130 if summary.get('interrupted') else 0 if summary.get('completed') else 1

"""``uncertain-bo report RUN_DIR``: summary.json and run.png of an existing simulated run."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ['add_parser']


def add_parser(sub) -> None:
    p = sub.add_parser('report', help='score a simulated run against the field and plot it',
                       description='Recompute summary.json (robust optimum by grid convolution, regret per '
                                   'measurement) and run.png for a run folder written by the explorer.')
    p.add_argument('run_dir', type=Path, help='folder with journal.jsonl')
    p.add_argument('--field', default=None,
                   help="field: 'jacksboro', 'jacksboro-rough', 'jacksboro-smooth' or a .npz/.csv path "
                        "(default: the run's own, from its parameters.json; else the shipped config/sim.yaml's)")
    p.add_argument('--extent', type=float, nargs=4, metavar=('XMIN', 'XMAX', 'YMIN', 'YMAX'),
                   help="field rectangle in m (default: the run's own field_extent, the field file's, or "
                        '0 200 0 200)')
    p.add_argument('--execution-std', type=float, nargs=2, default=None, metavar=('SX', 'SY'),
                   help='execution-noise std of the robust objective, m (default: the explorer\'s '
                        'execution_noise_std recorded in the journal header)')
    p.add_argument('--compare', type=Path, action='append', default=[], metavar='RUN_DIR',
                   help='another run on the same field (e.g. a survey): draw both side by side, paths and regret '
                        'against distance driven, into RUN_DIR/compare.png (repeatable)')
    p.set_defaults(func=run)


def run(args) -> int:
    from ..journal import Journal
    from .field import Field
    from .report import plot_run, summarize

    # read-only: a mistyped folder is an error (nothing is created) and a running mission's journal is
    # never modified; the field is checked before anything is written
    journal = Journal(args.run_dir / 'journal.jsonl', read_only=True)
    std = args.execution_std or journal.header.get('parameters', {}).get('execution_noise_std', [2.0, 2.0])
    cov = np.diag(np.square(std))
    spec, extent = args.field, args.extent
    if spec is None:  # the field the run was simulated on (demo and sim.launch.py write parameters.json)
        sim = _run_parameters(args.run_dir).get('sim_rover') or _shipped_sim_parameters()
        spec = sim.get('field', 'jacksboro')
        extent = extent if extent is not None else sim.get('field_extent')
    field = Field.load(spec, extent=extent)
    summary = summarize(args.run_dir, field, cov)
    png = plot_run(args.run_dir, field, cov)
    keys = ('measurements', 'recommended_target', 'final_regret', 'final_normalised_regret')
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    print(f'wrote {args.run_dir / "summary.json"} and {png}')
    if args.compare:
        from .report import plot_comparison
        out = plot_comparison([args.run_dir, *args.compare], field, cov, args.run_dir / 'compare.png')
        print(f'wrote {out}')
    return 0


def _shipped_sim_parameters() -> dict:
    """``sim_rover``'s field and extent from the shipped ``config/sim.yaml`` (runs started by
    ``sim.launch.py`` without a ``field`` argument)."""
    from ..parameters import config_path, node_parameters

    return node_parameters([config_path('sim.yaml')], 'sim_rover')


def _run_parameters(run_dir: Path) -> dict:
    """The run's ``parameters.json`` (empty if it has none or it is unreadable)."""
    try:
        params = json.loads((run_dir / 'parameters.json').read_text())
    except (OSError, ValueError):
        return {}
    return params if isinstance(params, dict) else {}

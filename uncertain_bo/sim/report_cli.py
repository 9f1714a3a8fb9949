"""``uncertain-bo report RUN_DIR``: summary.json and run.png of an existing run.

A simulated run (its ``parameters.json`` names the simulated field, as ``uncertain-bo demo`` writes it) or a run
given ``--field`` is scored against that field (:mod:`uncertain_bo.sim.report`: regret against the robust
optimum within the run's search bounds). Any other run has no ground truth (a real robot's run folder): it is
reported without regret, the GP drawn over its own search bounds and in its own units
(:mod:`uncertain_bo.reporting.run_report`); it is never scored against the simulator's default field.

Nothing is written onto the report's inputs (:func:`~uncertain_bo.reporting.output_files.check_outputs`: a
``summary.json``, ``run.png`` or ``compare.png`` that is, or links to, a journal, the field file or another file the
report reads is one ``error:`` line, exit 2), and each output is written atomically.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ['add_parser']


def add_parser(sub) -> None:
    p = sub.add_parser('report', help='summarise and plot a run (scored against its field when it has one)',
                       description='Recompute summary.json and run.png for a run folder written by the explorer. '
                                   'A simulated run (or one given --field) is scored against its field: robust '
                                   'optimum within the search bounds by grid convolution, regret per measurement. '
                                   'A real robot\'s run has no ground truth: no regret, the GP over its own search '
                                   'bounds, in its units.')
    p.add_argument('run_dir', type=Path, help='folder with journal.jsonl')
    p.add_argument('--field', default=None,
                   help="ground truth to score against: 'jacksboro', 'jacksboro-rough', 'jacksboro-smooth' or a "
                        ".npz/.csv path (default: the run's own simulated field, from its parameters.json; a run "
                        'without one is reported without regret)')
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
    from ..journal.journal import Journal
    from .field import Field
    from .report import plot_run, summarize

    # read-only: a mistyped folder is an error (nothing is created) and a running mission's journal is
    # never modified; the field is checked before anything is written
    _check_outputs(args)
    journal = Journal(args.run_dir / 'journal.jsonl', read_only=True)
    std = args.execution_std or journal.header.get('parameters', {}).get('execution_noise_std', [2.0, 2.0])
    cov = np.diag(np.square(std))
    spec, extent = args.field, args.extent
    if spec is None:  # the field the run was simulated on (uncertain-bo demo writes parameters.json)
        sim = _run_parameters(args.run_dir).get('sim_rover')
        if not sim:
            if extent is not None:
                from ..user_errors import UsageError
                from .field_spec import _check_extent
                _check_extent(extent, '--extent')   # a malformed rectangle is named as such
                raise UsageError('--extent is the rectangle of --field: this run has no simulated field, give '
                                 '--field too to score it against a known field')
            return _report_without_truth(args.run_dir)
        spec = sim.get('field', 'jacksboro')
        extent = extent if extent is not None else sim.get('field_extent')
    field = Field.load(spec, extent=extent)
    summary = summarize(args.run_dir, field, cov)
    png = plot_run(args.run_dir, field, cov)
    keys = ('measurements', 'recommended_target', 'reading_unit', 'final_regret', 'final_normalised_regret')
    print(json.dumps(_shown(summary, keys), indent=2, ensure_ascii=False))
    print(f'wrote {args.run_dir / "summary.json"} and {png}')
    if args.compare:
        from .report import plot_comparison
        out = plot_comparison([args.run_dir, *args.compare], field, cov, args.run_dir / 'compare.png')
        print(f'wrote {out}')
    return 0


def _report_without_truth(run_dir: Path) -> int:
    """A run with no simulated field: summary and plot without regret (:mod:`uncertain_bo.reporting.run_report`)."""
    from ..reporting.run_report import plot_field_run, summarize_run

    summary = summarize_run(run_dir)
    png = plot_field_run(run_dir)
    keys = ('measurements', 'search_bounds', 'reading_unit', 'recommended_target', 'predicted_robust_value',
            'predicted_std', 'targets_skipped')
    print(json.dumps(_shown(summary, keys), indent=2, ensure_ascii=False))
    print(f'no ground truth for this run (no simulated field in its parameters.json): no regret; give --field to '
          f'score it against a known field\nwrote {run_dir / "summary.json"} and {png}')
    return 0


#: what a report reads in a run folder, and what it writes there
REPORT_INPUTS = ('journal.jsonl', 'parameters.json', 'explorer_result.json', 'trajectory.csv')
REPORT_OUTPUTS = ('summary.json', 'run.png')


def _check_outputs(args) -> None:
    """Refuse a report that would write onto one of its inputs (a link at an output's place to a journal, ...).

    Raises:
        uncertain_bo.user_errors.UsageError: an output is an input (nothing is written).
    """
    from ..reporting.output_files import check_outputs

    runs = [args.run_dir, *args.compare]
    outputs = [(d / name, 'the report') for d in runs for name in REPORT_OUTPUTS]
    if args.compare:
        outputs.append((args.run_dir / 'compare.png', 'the comparison'))
    inputs = [(d / name, f"the run's {name}") for d in runs for name in REPORT_INPUTS]
    if args.field is not None and Path(args.field).exists():
        inputs.append((Path(args.field), 'the field file'))
    check_outputs(outputs, inputs)


#: summary keys in the field's units, printed with the precision of the field (summary.json keeps every digit)
FIELD_VALUES = ('final_regret', 'predicted_robust_value')


def _shown(summary: dict, keys: tuple[str, ...]) -> dict:
    """``keys`` of ``summary`` as printed: field values with the decimals the spread of the run's readings asks
    for (:func:`~uncertain_bo.sim.report.summary_format`), a std to 2 significant digits, positions to the cm."""
    from .report import summary_format

    fmt = summary_format(summary)
    out = {}
    for k in keys:
        v = summary.get(k)
        if isinstance(v, float) and not math.isfinite(v):
            pass
        elif isinstance(v, float) and k in FIELD_VALUES:
            v = float(fmt(v))
        elif isinstance(v, float) and k in ('predicted_std', 'final_normalised_regret'):
            v = float(f'{v:.3g}' if k == 'final_normalised_regret' else f'{v:.2g}')
        elif k == 'recommended_target' and v:
            v = [round(float(c), 2) for c in v]
        out[k] = v
    return out


def _run_parameters(run_dir: Path) -> dict:
    """The run's ``parameters.json`` (empty if it has none or it is unreadable)."""
    try:
        params = json.loads((run_dir / 'parameters.json').read_text())
    except (OSError, ValueError):
        return {}
    return params if isinstance(params, dict) else {}

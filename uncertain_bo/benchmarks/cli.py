"""``uncertain-bo bench`` and ``uncertain-bo plot``.

::

    uncertain-bo bench --problem rkhs2d --method ugp_ucb,igp_ucb,uei --seeds 10 --iterations 400 \\
        --mismatch 0.25,0.5,1,2,5,10 --out runs/bench/rkhs2d
    uncertain-bo bench --problem michalewicz4d --method ugp_ucb,igp_ucb --seeds 5 --beta 1,2,3,5,10 \\
        --out runs/bench/michalewicz_beta
    uncertain-bo bench --problem double-peak-beta --method airbo,ugp_kme,skl,erbf,gp_ucb --seeds 12 \\
        --out runs/bench/double-peak-beta
    uncertain-bo plot runs/bench/rkhs2d
"""
from __future__ import annotations

import argparse
import sys
from itertools import product
from pathlib import Path

__all__ = ['add_parser', 'bench_main', 'plot_main']


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(',') if v.strip()]


def _betas(text: str) -> list[str | float]:
    return [v.strip() if v.strip() == 'theory' else float(v) for v in text.split(',') if v.strip()]


def _name_value(text: str, flag: str = '--explorer-param') -> tuple[str, object]:
    """``'name=value'`` -> ``(name, value)`` with the value parsed as YAML (numbers, booleans, lists)."""
    import yaml

    name, sep, value = text.partition('=')
    if not sep or not name.strip():
        raise ValueError(f'{flag} expects NAME=VALUE, got {text!r}')
    try:
        return name.strip(), yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise ValueError(f'{flag} {text!r}: the value is not valid YAML ({exc.problem})') from None


def _problem_grid(texts: list[str]) -> list[tuple[tuple[str, object], ...]]:
    """``--problem-param`` values -> the grid of problem-parameter settings (a YAML list value is a sweep)."""
    pairs = [_name_value(t, '--problem-param') for t in texts]
    axes = [[(n, v) for v in (value if isinstance(value, list) else [value])] for n, value in pairs]
    return [tuple(c) for c in product(*axes)]


def _params_file(path: str, explorer: tuple, sim: tuple) -> tuple[tuple, tuple]:
    """``--params FILE`` -> (explorer pairs, sim pairs) with the file's values first and the command line's
    ``--explorer-param`` / ``--sim-param`` after them; parameters a node has only under ROS (``use_sim_time``,
    topics) are left out, as the in-process mission does.

    Raises:
        ValueError: the file cannot be read, has a section for none of the nodes, or gives a node a parameter under
            the name it had before it was renamed (:data:`~uncertain_bo.parameters.specs.RENAMED_PARAMETERS`: it would
            be left out with the ROS-only ones, its value silently not used).
    """
    from ..explorer import EXPLORER_PARAMS
    from ..parameters.files import node_parameters, unknown_parameters, unknown_sections
    from ..parameters.rcl_yaml import no_parameters_warning
    from ..sim.ekf import EKF_PARAMS
    from ..sim.particle_filter import PF_PARAMS
    from ..sim.pure_pursuit import PURE_PURSUIT_PARAMS
    from ..sim.world import WORLD_PARAMS

    specs = {'explorer': EXPLORER_PARAMS, 'sim_rover': WORLD_PARAMS, 'ekf': EKF_PARAMS,
             'particle_filter': PF_PARAMS, 'pure_pursuit': PURE_PURSUIT_PARAMS}
    warning = no_parameters_warning(path)
    if warning:     # it runs, with the shipped parameters: say so (one line)
        print(f'warning: {warning} (config/explorer.yaml, config/sim.yaml)', file=sys.stderr)
    bad = unknown_sections([path], [f'/{n}' for n in specs])
    if bad:
        raise ValueError(f'--params {path}: section {bad[0][1]!r} is none of the nodes {", ".join(specs)}')
    file_explorer, file_sim = [], []
    for node, spec in specs.items():
        names = {p.name for p in spec}
        renamed = [u for u in unknown_parameters([path], node, names) if u.renamed]
        if renamed:
            raise ValueError(str(renamed[0]))
        for name, value in node_parameters([path], node).items():
            if name not in names:
                continue
            if node == 'explorer':
                file_explorer.append((name, value))
            else:
                file_sim.append((name if node == 'sim_rover' else f'{node}.{name}', value))
    return tuple(file_explorer) + explorer, tuple(file_sim) + sim


def _flag_overrides(explorer: tuple, args: argparse.Namespace, betas: list, iterations: int) -> list[str]:
    """Explorer values (``--explorer-param``, ``--params``) that the rover problems do not use because bench's
    own flag (:data:`EXPLORER_FLAGS`) sets that setting, each as a warning naming the flag and what it uses."""
    used = {'beta': betas, 'num_restarts': [args.restarts], 'raw_samples': [args.raw_samples],
            'max_measurements': [iterations]}
    if args.n_initial is not None:     # not given: the explorer's n_initial / refit_every are used
        used['n_initial'] = [args.n_initial]
    if args.refit_every is not None:
        used['refit_every'] = [args.refit_every]
    out = []
    for name, value in dict(explorer).items():   # the last value of a name is the one that would apply
        if name in used and any(v != value for v in used[name]):
            out.append(f'explorer parameter {name}={value!r} is not used: bench sets it with {EXPLORER_FLAGS[name]} '
                       f'({", ".join(map(str, used[name]))})')
    return out


def _suite_fields(text: str, field: str | None) -> list[str]:
    """``--suite NAME[:PART]`` -> the fields to run (ValueError for a bad name or part, or with --field)."""
    from .suite import load_suite

    if field is not None:
        raise ValueError('--suite runs every field of the suite; leave out --field')
    name, _, part = text.partition(':')
    return load_suite(name.strip()).field_names(part.strip() or None)


#: explorer parameters that bench sets with flags of its own (the rover problems take these flags, not the
#: explorer's values from --explorer-param / --params)
EXPLORER_FLAGS = {'beta': '--beta', 'n_initial': '--n-initial', 'refit_every': '--refit-every',
                  'num_restarts': '--restarts', 'raw_samples': '--raw-samples', 'max_measurements': '--iterations'}


def add_parser(subparsers) -> None:
    """Register ``bench`` and ``plot`` (from the registries' plain data: :mod:`uncertain_bo.registries`, no torch)."""
    from ..registries import method_descriptions, node_specs
    from ..registries import problems as registered_problems
    from ..parameters.flags import flag_help, flag_type, list_flag_type

    known = registered_problems()   # the package's, and those installed packages declare as entry points
    problems = sorted(known)
    methods = method_descriptions()

    spec = {p.name: p for p in node_specs('explorer')}
    b = subparsers.add_parser('bench', help='run benchmark problems (parallel over seeds)',
                              description='Run methods on a benchmark problem over seeds; write per-iteration '
                                          'records (CSV + JSON) and summaries to --out. `--list-problems` lists the '
                                          "problems, `--describe PROBLEM` shows one problem's parameters and "
                                          'defaults.',
                              epilog=registry_help(known, methods),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument('--problem', default=None, metavar='PROBLEM', choices=problems,
                   help='the benchmark problem (required to run): ' + ', '.join(problems))
    b.add_argument('--list-problems', action='store_true', help='list every problem with its description, and exit')
    b.add_argument('--describe', default=None, metavar='PROBLEM', choices=problems,
                   help="show a problem's description, defaults (methods, seeds, iterations, beta) and its "
                        'parameters (--problem-param) with their defaults, and exit')
    b.add_argument('--method', default=None,
                   help="comma-separated methods and baselines (default: the problem's, see --describe): "
                        + ', '.join(methods))
    b.add_argument('--explorer-param', action='append', default=[], metavar='NAME=VALUE',
                   help='rover problems: an explorer parameter over the shipped config/explorer.yaml, e.g. '
                        'travel_weight=1.0 (repeatable; YAML value syntax); bench sets '
                        + ', '.join(f'{n} with {f}' for n, f in EXPLORER_FLAGS.items())
                        + ' (n_initial and refit_every: the explorer\'s unless given)')
    b.add_argument('--problem-param', action='append', default=[], metavar='NAME=VALUE',
                   help='a parameter of the problem (see its description), e.g. rho=0.5 for the quadrature problems, '
                        'learn_execution_noise=true for rkhs2d (the configured model becomes the prior of an online '
                        'estimate); a YAML list sweeps it: rho=[0.1,0.3,0.5,1,3] (repeatable)')
    b.add_argument('--sim-param', action='append', default=[], metavar='NAME=VALUE',
                   help='rover problems: a simulation parameter over the shipped config/sim.yaml, e.g. '
                        'reading_noise_std=0.05 (sim_rover) or ekf.NAME=VALUE / pure_pursuit.NAME=VALUE / '
                        'particle_filter.NAME=VALUE (repeatable; YAML value syntax)')
    b.add_argument('--params', default=None, metavar='FILE',
                   help='rover problems: a ROS 2 parameter file (explorer, sim_rover, ekf, particle_filter, '
                        'pure_pursuit sections) applied over the shipped ones; --explorer-param and --sim-param '
                        'apply over it')
    b.add_argument('--suite', default=None, metavar='NAME[:PART]',
                   help="rover problems: run every field of a shipped field suite (e.g. 'fields', or "
                        "'fields:tuning' / 'fields:held_out' for one part), each with its own sensor noise and "
                        'localisation setting; writes suite.md (per field and the median over fields, paired '
                        'Wilcoxon tests) and suite_regret_vs_distance.png to --out')
    b.add_argument('--baselines', default='gp_ucb,lawnmower,random,botorch_robust', metavar='M1,M2',
                   help='--suite: methods every other method is tested against (default '
                        'gp_ucb,lawnmower,random,botorch_robust)')
    b.add_argument('--field', default=None,
                   help="rover problems: the simulated field, a name (jacksboro, jacksboro-rough, ...; a suite field "
                        "such as terrain-ridges brings its own sensor noise and localisation) or a .npz/.csv path "
                        "(default: the problem's)")
    b.add_argument('--seeds', type=int, default=None, help='number of seeds 0..N-1 (default: the problem\'s)')
    b.add_argument('--seed-offset', type=int, default=0, help='first seed (default 0)')
    b.add_argument('--iterations', type=int, default=None, help='queries per run (default: the problem\'s)')
    b.add_argument('--beta', default=None, type=list_flag_type(spec['beta'], ('theory',)),
                   help=flag_help(spec['beta'], "comma-separated beta values: numbers and/or 'theory' (several "
                                  'values = a sweep)', "the problem's, see --describe"))
    b.add_argument('--mismatch', default='1', help='comma-separated ratios sigma_hat_x / sigma_x (default 1)')
    b.add_argument('--ugp-noise', default='execution', choices=['execution', 'output', 'location'],
                   help="noise sigma_nu the theory assigns to uGP-UCB: 'execution' (default, the paper's 6.1 "
                        "setting: Prop. 3 on the execution-noise model, as for IGP-UCB), 'output' (sigma_zeta "
                        "alone) or 'location' (Prop. 3 on the localisation covariance)")
    b.add_argument('--refit-every', type=flag_type(spec['refit_every']), default=None,
                   help=flag_help(spec['refit_every'], 'GP refit schedule; 0 = fixed hyperparameters',
                                  "the problem's; rover problems: the explorer's"))
    b.add_argument('--n-initial', type=flag_type(spec['n_initial']), default=None,
                   help=flag_help(spec['n_initial'], 'initial design size',
                                  "the problem's; rover problems: the explorer's"))
    b.add_argument('--restarts', type=flag_type(spec['num_restarts']), default=spec['num_restarts'].default,
                   help=flag_help(spec['num_restarts'], 'L-BFGS-B restarts of the acquisition maximiser'))
    b.add_argument('--raw-samples', type=flag_type(spec['raw_samples']), default=spec['raw_samples'].default,
                   help=flag_help(spec['raw_samples'], 'quasi-random candidates scored to choose the restarts'))
    b.add_argument('--n-jobs', type=int, default=2, help='parallel worker processes (default 2)')
    b.add_argument('--force', action='store_true', help='recompute runs already in --out')
    b.add_argument('--out', default=None, help='output directory (required to run)')
    b.add_argument('--plot', action='store_true', help='draw the figures when done')
    b.add_argument('--backend', choices=['joblib', 'dask'], default=None,
                   help='where runs execute: joblib (default: --n-jobs local processes) or dask (--scheduler)')
    b.add_argument('--scheduler', default=None, metavar='ADDRESS',
                   help='Dask scheduler: tcp://HOST:PORT (workers: `dask worker ADDRESS`), a scheduler file .json, '
                        'or local:N (a LocalCluster of N worker processes; default local:--n-jobs); implies '
                        '--backend dask')
    b.add_argument('--protocol', nargs='?', const='', default=None, metavar='NAME',
                   help="run a paper's protocol (problem, methods, budgets, seeds, metric) shipped with the package; "
                        'without NAME: list them with their size and estimated CPU hours (--seeds N runs the '
                        'first N seeds of it)')
    b.add_argument('--list-protocols', action='store_true', help='list the shipped protocols (as --protocol alone)')
    b.set_defaults(func=bench_main, uses_torch=False)   # it configures torch once it needs it

    p = subparsers.add_parser('plot', help='draw regret figures of a bench output directory',
                              description='Mean ± std regret curves (and mismatch / beta sweeps) as PNG.')
    p.add_argument('dir', help='output directory of `uncertain-bo bench`')
    p.add_argument('--std', type=float, default=1.0, help='half-width of the bands in std (default 1)')
    p.add_argument('--band', choices=['std', 'quartiles'], default='std',
                   help='curves: mean ± std (default) or median with the 25-75 %% band (NES benchmarks)')
    p.add_argument('--out', default=None, help='where to write the PNGs (default: DIR)')
    p.add_argument('--suite', default=None, metavar='NAME[:PART]',
                   help='also rewrite the suite table and figure (suite.md, suite.json, suite_regret_vs_distance.png) '
                        'of a `bench --suite` directory')
    p.add_argument('--baselines', default='gp_ucb,lawnmower,random,botorch_robust', metavar='M1,M2',
                   help='--suite: methods every other method is tested against')
    p.set_defaults(func=plot_main)


def _one_line(text: str) -> str:
    return ' '.join(str(text).split())


def registry_help(problems: dict[str, dict] | None = None, methods: dict[str, str] | None = None) -> str:
    """``bench --help``'s epilog: every registered problem, method and named field, from their registries
    (``problems``, ``methods``: :func:`uncertain_bo.registries.problems` and
    :func:`~uncertain_bo.registries.method_descriptions` when not given)."""
    import textwrap

    from ..registries import method_descriptions
    from ..registries import problems as registered_problems
    from ..sim.field_spec import FIELD_NAMES

    def table(title: str, rows: dict[str, str]) -> list[str]:
        width = max(map(len, rows)) + 2
        out = [title]
        for name, text in rows.items():
            out += textwrap.wrap(_one_line(text), 110, initial_indent=f'  {name:<{width}}',
                                 subsequent_indent=' ' * (width + 2)) or [f'  {name}']
        return out + ['']

    problems = registered_problems() if problems is None else problems
    methods = method_descriptions() if methods is None else methods
    lines = table('problems (uncertain-bo bench --describe PROBLEM shows its parameters and defaults):',
                  {name: p['description'] for name, p in sorted(problems.items())})
    lines += table('methods and baselines (--method):', methods)
    lines += table('named fields (--field; or a .npz grid / .csv of x,y,value):', dict(FIELD_NAMES))
    return '\n'.join(lines)


def describe_problem(name: str) -> str:
    """A problem's description, defaults and parameters (``bench --describe``)."""
    from ..registries import method_descriptions, problems

    p = problems()[name]
    methods = method_descriptions()
    lines = [f'{name}: {_one_line(p["description"])}', '',
             f'  iterations {p["default_iterations"]}, seeds {p["default_seeds"]}, beta {p["default_beta"]}',
             f'  methods: {p["default_methods"]}']
    for m in p['default_methods'].split(','):
        if m in methods:
            lines.append(f'    {m}: {_one_line(methods[m])}')
    if p['params']:
        lines.append('  parameters (--problem-param NAME=VALUE; a YAML list sweeps):')
        lines += [f'    {k} = {v!r}' for k, v in p['params'].items()]
    else:
        lines.append('  parameters: none (--problem-param does not apply)')
    return '\n'.join(lines)


def bench_main(args: argparse.Namespace) -> int:
    if args.list_problems:
        from ..registries import problems
        for name, problem in sorted(problems().items()):
            print(f'{name}: {_one_line(problem["description"])}')
        return 0
    if args.describe:
        print(describe_problem(args.describe))
        return 0

    from ..cli import configure_torch_threads
    configure_torch_threads()      # not before: the lists above import no torch
    from ..acquisition import get_method
    from ..acquisition.optimize import OptimizerSettings
    from . import BenchSettings, expand, get_problem
    from .backends import BackendError, resolve_backend
    from .runner import run_many_reporting, write_tables
    if args.protocol is not None or args.list_protocols:
        from .protocol import protocol_main
        return protocol_main(args)
    for flag, value in (('--problem', args.problem), ('--out', args.out)):
        if value is None:
            print(f'error: uncertain-bo bench: {flag} is required to run a benchmark (see uncertain-bo bench '
                  '--help; --list-problems lists the problems, --protocol NAME runs a paper\'s protocol)',
                  file=sys.stderr)
            return 2

    from ..reporting.output_files import check_outputs
    from ..user_errors import UsageError
    from .runner import TABLES
    try:   # the tables (and a suite's report) go into --out: never onto the parameter or field file
        check_outputs([(Path(args.out) / name, '--out') for name in TABLES],
                      [(args.params, '--params'), (args.field, '--field')])
    except UsageError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    for flag, value in (('--iterations', args.iterations), ('--seeds', args.seeds)):
        if value is not None and value < 1:   # 0 must not fall back to the problem's default
            print(f'error: {flag} must be a positive integer, got {value}', file=sys.stderr)
            return 2
    try:
        problem = get_problem(args.problem)
        methods = [m.strip() for m in (args.method or problem.default_methods).split(',') if m.strip()]
        for m in methods:
            get_method(m)
    except KeyError as exc:
        print(f'error: {exc.args[0]}', file=sys.stderr)
        return 2
    try:
        explorer = tuple(_name_value(p) for p in args.explorer_param)
        sim = tuple(_name_value(p, '--sim-param') for p in args.sim_param)
        if args.params:
            explorer, sim = _params_file(args.params, explorer, sim)
        grid = _problem_grid(args.problem_param)
        for params in grid:
            problem.param_values(BenchSettings(problem=params))
        fields = [args.field]
        if args.suite:
            fields = _suite_fields(args.suite, args.field)
        for fld in fields:
            if hasattr(problem, 'check'):
                problem.check(BenchSettings(field=fld, explorer=explorer, sim=sim))
            elif explorer or sim or fld is not None:
                problem.instance_for(0, BenchSettings(field=fld, explorer=explorer, sim=sim))
    except ValueError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    betas = _betas(args.beta) if args.beta else [problem.default_beta]
    seeds = range(args.seed_offset, args.seed_offset + (problem.default_seeds if args.seeds is None else args.seeds))
    iterations = problem.default_iterations if args.iterations is None else args.iterations
    if hasattr(problem, 'check'):   # the rover problems: say which explorer values bench's own flags replace
        for warning in _flag_overrides(explorer, args, betas, iterations):
            print(f'warning: {warning}', file=sys.stderr)
    optimizer = OptimizerSettings(num_restarts=args.restarts, raw_samples=args.raw_samples)
    settings = [BenchSettings(beta=b, mismatch=r, ugp_noise=args.ugp_noise, refit_every=args.refit_every,
                              n_initial=args.n_initial, optimizer=optimizer, field=fld,
                              explorer=explorer, problem=params, sim=sim)
                for fld, r, b, params in product(fields, _floats(args.mismatch), betas, grid)]
    try:   # a method the problem cannot run by design: one line before any run (not a failure per run)
        for m in methods:
            problem.check_method(m, settings[0])
    except ValueError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    specs = expand(args.problem, methods, seeds, iterations, settings)
    print(f'{len(specs)} run(s): {args.problem}, methods {",".join(methods)}, seeds {seeds.start}..{seeds.stop - 1}, '
          f'{iterations} iterations, beta {betas}, mismatch {args.mismatch}; {args.n_jobs} worker(s) -> {args.out}',
          file=sys.stderr, flush=True)
    try:
        backend, scheduler = resolve_backend(args.backend, args.scheduler)
    except BackendError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    outcome = run_many_reporting(specs, args.out, n_jobs=args.n_jobs, force=args.force, backend=backend,
                                 scheduler=scheduler)
    if isinstance(outcome, int):
        return outcome
    results, failed = outcome
    write_tables(results, args.out, command={k: v for k, v in vars(args).items() if k != 'func'})
    if args.suite:
        from .suite_report import write_suite_report
        for path in write_suite_report(results, args.out, args.suite,
                                       baselines=[m.strip() for m in args.baselines.split(',') if m.strip()]):
            print(f'wrote {path}')
        return 0
    from .metrics import markdown_tables, summarize
    summary = summarize(results)
    for g in summary['groups']:
        print(f'{g["method"]:10s} {g["variant"]:28s} n={g["n_runs"]:2d}  mean regret @{g["iterations"]}: '
              f'{g["mean_regret_mean"]:.4f} ± {g["mean_regret_std"]:.4f}   recommendation regret: '
              f'{g["rec_regret_mean"]:.4f} ± {g["rec_regret_std"]:.4f}'
              + ('' if g.get('n_within_tolerance') is None else
                 f'   within {g["argmax_tolerance"]:g} of the robust optimiser: '
                 f'{g["n_within_tolerance"]}/{g["n_runs"]}'))
    table = markdown_tables(summary)
    if table:
        print()
        print(table)
    if args.plot:
        from .plots import plot_directory
        for path in plot_directory(results, args.out):
            print(f'wrote {path}')
    return 1 if failed else 0


def plot_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .plots import plot_directory
    from .runner import load_runs

    if args.suite:
        from .suite import SuiteError, load_suite
        try:
            load_suite(args.suite.partition(':')[0]).field_names(args.suite.partition(':')[2] or None)
        except SuiteError as exc:
            print(f'error: {exc}', file=sys.stderr)
            return 2
    results = load_runs(args.dir)
    if not results:
        print(f'error: no runs in {Path(args.dir) / "runs"}', file=sys.stderr)
        return 1
    import json

    from .runner import write_tables
    old = Path(args.dir) / 'summary.json'
    try:
        command = json.loads(old.read_text()).get('command') if old.exists() else None
    except (OSError, json.JSONDecodeError):
        command = None
    write_tables(results, args.dir, command=command)  # tables from every run in DIR/runs
    if args.suite:
        from .suite_report import write_suite_report
        for path in write_suite_report(results, args.out or args.dir, args.suite,
                                       baselines=[m.strip() for m in args.baselines.split(',') if m.strip()]):
            print(f'wrote {path}')
    for path in plot_directory(results, args.out or args.dir, std_mult=args.std, band=args.band):
        print(f'wrote {path}')
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry with only these two subcommands (the ``uncertain-bo`` command includes them)."""
    from ..cli import OneLineParser

    parser = OneLineParser(prog='uncertain-bo')
    add_parser(parser.add_subparsers(dest='command', required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == '__main__':
    sys.exit(main())

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


def add_parser(subparsers) -> None:
    """Register ``bench`` and ``plot``."""
    b = subparsers.add_parser('bench', help='run benchmark problems (parallel over seeds)',
                              description='Run methods on a benchmark problem over seeds; write per-iteration '
                                          'records (CSV + JSON) and summaries to --out.')
    b.add_argument('--problem', required=True,
                   help='rkhs2d | michalewicz4d | rover | rover-pf | rover-degraded | rkhs1d-gauss | double-peak-beta '
                        '| bumped-bowl-10d | nes-sin | nes-rkhs | nes-gmm | nes-poly | nes-hartmann3 | nes-hartmann6 '
                        '(each also -ml: free lengthscale fit) | nes-within-model (registered problems)')
    b.add_argument('--method', default=None,
                   help="comma-separated methods and baselines (default: the problem's: ugp_ucb,igp_ucb,uei for "
                        'rkhs2d, michalewicz4d; ugp_ucb,gp_ucb,lawnmower,random,botorch_robust for the rover '
                        "problems; airbo,ugp_kme,skl,erbf,gp_ucb for AIRBO's problems)")
    b.add_argument('--explorer-param', action='append', default=[], metavar='NAME=VALUE',
                   help='rover problems: an explorer parameter over the shipped config/explorer.yaml, e.g. '
                        'travel_weight=1.0 (repeatable; YAML value syntax)')
    b.add_argument('--problem-param', action='append', default=[], metavar='NAME=VALUE',
                   help='a parameter of the problem (see its description), e.g. rho=0.5 for the quadrature problems, '
                        'learn_execution_noise=true for rkhs2d (the configured model becomes the prior of an online '
                        'estimate); a YAML list sweeps it: rho=[0.1,0.3,0.5,1,3] (repeatable)')
    b.add_argument('--field', default=None,
                   help="rover problems: the simulated field, a name (jacksboro, jacksboro-rough, ...) or a .npz/.csv "
                        "path (default: the problem's)")
    b.add_argument('--seeds', type=int, default=None, help='number of seeds 0..N-1 (default: the problem\'s)')
    b.add_argument('--seed-offset', type=int, default=0, help='first seed (default 0)')
    b.add_argument('--iterations', type=int, default=None, help='queries per run (default: the problem\'s)')
    b.add_argument('--beta', default=None,
                   help="comma-separated beta values: numbers and/or 'theory' (default: the problem's; "
                        "several values = a sweep)")
    b.add_argument('--mismatch', default='1', help='comma-separated ratios sigma_hat_x / sigma_x (default 1)')
    b.add_argument('--ugp-noise', default='execution', choices=['execution', 'output', 'location'],
                   help="noise sigma_nu the theory assigns to uGP-UCB: 'execution' (default, the paper's 6.1 "
                        "setting: Prop. 3 on the execution-noise model, as for IGP-UCB), 'output' (sigma_zeta "
                        "alone) or 'location' (Prop. 3 on the localisation covariance)")
    b.add_argument('--refit-every', type=int, default=None, help='GP refit schedule (default: the problem\'s)')
    b.add_argument('--n-initial', type=int, default=None, help='initial design size (default: the problem\'s)')
    b.add_argument('--restarts', type=int, default=10, help='L-BFGS-B restarts (default 10)')
    b.add_argument('--raw-samples', type=int, default=512, help='raw samples for the starts (default 512)')
    b.add_argument('--n-jobs', type=int, default=2, help='parallel worker processes (default 2)')
    b.add_argument('--force', action='store_true', help='recompute runs already in --out')
    b.add_argument('--out', required=True, help='output directory')
    b.add_argument('--plot', action='store_true', help='draw the figures when done')
    b.set_defaults(func=bench_main)

    p = subparsers.add_parser('plot', help='draw regret figures of a bench output directory',
                              description='Mean ± std regret curves (and mismatch / beta sweeps) as PNG.')
    p.add_argument('dir', help='output directory of `uncertain-bo bench`')
    p.add_argument('--std', type=float, default=1.0, help='half-width of the bands in std (default 1)')
    p.add_argument('--band', choices=['std', 'quartiles'], default='std',
                   help='curves: mean ± std (default) or median with the 25-75 %% band (NES benchmarks)')
    p.add_argument('--out', default=None, help='where to write the PNGs (default: DIR)')
    p.set_defaults(func=plot_main)


def bench_main(args: argparse.Namespace) -> int:
    from ..acquisition import get_method
    from ..optim import OptimizerSettings
    from . import BenchSettings, expand, get_problem, run_many
    from .runner import write_tables

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
        grid = _problem_grid(args.problem_param)
        for params in grid:
            problem.param_values(BenchSettings(problem=params))
    except ValueError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    betas = _betas(args.beta) if args.beta else [problem.default_beta]
    seeds = range(args.seed_offset, args.seed_offset + (problem.default_seeds if args.seeds is None else args.seeds))
    iterations = problem.default_iterations if args.iterations is None else args.iterations
    optimizer = OptimizerSettings(num_restarts=args.restarts, raw_samples=args.raw_samples)
    settings = [BenchSettings(beta=b, mismatch=r, ugp_noise=args.ugp_noise, refit_every=args.refit_every,
                              n_initial=args.n_initial, optimizer=optimizer, field=args.field,
                              explorer=explorer, problem=params)
                for r, b, params in product(_floats(args.mismatch), betas, grid)]
    specs = expand(args.problem, methods, seeds, iterations, settings)
    print(f'{len(specs)} run(s): {args.problem}, methods {",".join(methods)}, seeds {seeds.start}..{seeds.stop - 1}, '
          f'{iterations} iterations, beta {betas}, mismatch {args.mismatch}; {args.n_jobs} worker(s) -> {args.out}',
          file=sys.stderr, flush=True)
    try:
        results = run_many(specs, args.out, n_jobs=args.n_jobs, force=args.force)
    except ValueError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    write_tables(results, args.out, command={k: v for k, v in vars(args).items() if k != 'func'})
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
    return 0


def plot_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .plots import plot_directory
    from .runner import load_runs

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
    for path in plot_directory(results, args.out or args.dir, std_mult=args.std, band=args.band):
        print(f'wrote {path}')
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry with only these two subcommands (the ``uncertain-bo`` command includes them)."""
    parser = argparse.ArgumentParser(prog='uncertain-bo')
    add_parser(parser.add_subparsers(dest='command', required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == '__main__':
    sys.exit(main())

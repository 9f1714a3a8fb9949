"""A paper's experimental protocol as data: ``uncertain-bo bench --protocol NAME``.

Each protocol is a YAML file in ``uncertain_bo/benchmarks/protocols/`` (shipped with the package): the problem,
methods, budget (evaluations per run, initial design included), repetitions (seeds), the swept settings and the
metric, as the paper states them, and a list of the places where the project deviates and why. A protocol has one
or more ``parts`` (e.g. a main comparison and a β sweep over fewer seeds); runs shared by two parts run once.

Schema::

    title: ...                       # one line
    paper: Authors, "Title", venue year
    source: § and figure / table
    parts:
      - problem: NAME                # a registered problem
        methods: [m1, m2]            # registered methods
        seeds: N                     # repetitions: seeds 0..N-1
        iterations: T                # evaluations per run, the initial design included
        beta: [theory | number, ...]         # optional (default: the problem's)
        mismatch: [ratio, ...]               # optional (default [1])
        problem_params: {name: value | [values]}   # optional; a list sweeps the parameter
        n_initial: n0                        # optional (default: the problem's)
    metric:
      name: ...                      # what the paper calls it
      key: rec_regret                # a per-iteration record field
      statistic: mean_std | mean_2std | mean_ci96 | median_quartiles
      best_so_far: false             # true where the paper plots the best value so far
      higher_is_better: false
      also: [other record fields]    # reported beside it, same statistic
    deviations: [...]

The estimate of a protocol's CPU hours comes from ``protocols/run_times.yaml``: per problem and method, CPU seconds
per evaluation measured on the project's machine (``bench/protocol_run_times.py`` measures and writes it; the file
says how).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from itertools import product
from typing import Any, Sequence

import numpy as np
import yaml

__all__ = ['Part', 'Metric', 'Protocol', 'protocol_names', 'load_protocol', 'protocol_specs', 'run_times',
           'estimate_cpu_seconds', 'protocol_summary', 'summary_markdown', 'list_table', 'STATISTICS']

#: how a metric is aggregated over seeds (each the paper's wording)
STATISTICS = {
    'mean_std': 'mean ± std',
    'mean_2std': 'mean ± 2 std',
    'mean_ci96': 'mean [96 % confidence interval of the mean, t distribution]',
    'median_quartiles': 'median [25 %, 75 %]',
}

_PART_KEYS = {'problem', 'methods', 'seeds', 'iterations', 'beta', 'mismatch', 'problem_params', 'n_initial'}
_METRIC_KEYS = {'name', 'key', 'statistic', 'best_so_far', 'higher_is_better', 'also'}
_TOP_KEYS = {'title', 'paper', 'source', 'parts', 'metric', 'deviations'}


@dataclass(frozen=True)
class Part:
    """One grid of runs of a protocol (see the module docstring for the fields).

    Example:
        Fig. 2 of the uGP-UCB paper: one part, the execution-noise mismatch swept:

        >>> [part] = load_protocol('ugp-ucb-2019-rkhs2d').parts
        >>> part.problem, part.methods, part.seeds, part.iterations, part.mismatch
        ('rkhs2d', ('ugp_ucb', 'igp_ucb', 'uei'), 10, 400, (0.25, 0.5, 1.0, 2.0, 5.0, 10.0))
    """

    problem: str
    methods: tuple[str, ...]
    seeds: int
    iterations: int
    beta: tuple[str | float, ...] | None = None
    mismatch: tuple[float, ...] = (1.0,)
    problem_params: tuple[tuple[str, Any], ...] = ()
    n_initial: int | None = None


@dataclass(frozen=True)
class Metric:
    """The paper's metric: a per-iteration record field and how it is aggregated over seeds.

    Example:
        NES reports the inference regret of the recommendation as median and quartiles over seeds:

        >>> metric = load_protocol('nes-2020-sin').metric
        >>> metric.key, metric.statistic, STATISTICS[metric.statistic], metric.also
        ('rec_regret', 'median_quartiles', 'median [25 %, 75 %]', ('rec_distance',))
    """

    name: str
    key: str
    statistic: str
    best_so_far: bool = False
    higher_is_better: bool = False
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Protocol:
    """A paper's experimental protocol (module docstring): its parts, metric and the project's deviations.

    Example:
        A shipped protocol as the runs ``uncertain-bo bench --protocol`` makes of it (3 seeds instead of 50),
        and a protocol whose budget cannot be:

        >>> protocol = load_protocol('nes-2020-sin')
        >>> protocol.paper
        'Fröhlich, ... AISTATS 2020'
        >>> specs = protocol_specs(protocol, seeds=3)
        >>> len(specs), specs[0].key
        (21, 'nes-sin__nes_ep__beta=-_mismatch=1__seed0')
        >>> parse_protocol('mine', 'title: t\\npaper: p\\nparts: [{problem: rkhs2d, methods: ugp_ucb, seeds: 0, '
        ...                'iterations: 10}]\\nmetric: {name: regret, key: rec_regret, statistic: mean_std}')
        Traceback (most recent call last):
        ...
        ValueError: protocol 'mine', part 1: seeds must be a positive integer, got 0
    """

    name: str
    title: str
    paper: str
    source: str
    parts: tuple[Part, ...]
    metric: Metric
    deviations: tuple[str, ...] = field(default=())


def _dir():
    return resources.files('uncertain_bo.benchmarks') / 'protocols'


def protocol_names() -> list[str]:
    """Names of the shipped protocols (file stems), sorted."""
    return sorted(p.name[:-5] for p in _dir().iterdir() if p.name.endswith('.yaml') and p.name != 'run_times.yaml')


def _check_keys(where: str, data: dict, allowed: set[str], required: set[str]) -> None:
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f'{where}: unknown key(s) {", ".join(sorted(unknown))} '
                         f'(allowed: {", ".join(sorted(allowed))})')
    missing = required - set(data)
    if missing:
        raise ValueError(f'{where}: missing key(s) {", ".join(sorted(missing))}')


def _as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def parse_protocol(name: str, text: str) -> Protocol:
    """A :class:`Protocol` from YAML text.

    Raises:
        ValueError: invalid YAML, unknown or missing keys, a non-positive budget, an unknown statistic.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f'protocol {name!r}: not valid YAML ({exc})') from None
    if not isinstance(data, dict):
        raise ValueError(f'protocol {name!r}: expected a mapping at the top level')
    _check_keys(f'protocol {name!r}', data, _TOP_KEYS, {'title', 'paper', 'parts', 'metric'})
    parts = []
    for i, p in enumerate(data['parts'] or []):
        where = f'protocol {name!r}, part {i + 1}'
        _check_keys(where, p, _PART_KEYS, {'problem', 'methods', 'seeds', 'iterations'})
        for k in ('seeds', 'iterations'):
            if not isinstance(p[k], int) or p[k] < 1:
                raise ValueError(f'{where}: {k} must be a positive integer, got {p[k]!r}')
        params = tuple((k, v) for k, v in sorted((p.get('problem_params') or {}).items()))
        parts.append(Part(problem=p['problem'], methods=tuple(_as_list(p['methods'])), seeds=p['seeds'],
                          iterations=p['iterations'],
                          beta=None if p.get('beta') is None else tuple(_as_list(p['beta'])),
                          mismatch=tuple(float(r) for r in _as_list(p.get('mismatch', 1.0))),
                          problem_params=params, n_initial=p.get('n_initial')))
    if not parts:
        raise ValueError(f'protocol {name!r}: no parts')
    m = data['metric']
    _check_keys(f'protocol {name!r}, metric', m, _METRIC_KEYS, {'name', 'key', 'statistic'})
    if m['statistic'] not in STATISTICS:
        raise ValueError(f'protocol {name!r}: unknown statistic {m["statistic"]!r} (known: {", ".join(STATISTICS)})')
    metric = Metric(name=m['name'], key=m['key'], statistic=m['statistic'], best_so_far=bool(m.get('best_so_far')),
                    higher_is_better=bool(m.get('higher_is_better')), also=tuple(m.get('also') or ()))
    return Protocol(name=name, title=data['title'], paper=data['paper'], source=data.get('source', ''),
                    parts=tuple(parts), metric=metric, deviations=tuple(data.get('deviations') or ()))


def load_protocol(name: str) -> Protocol:
    """The shipped protocol ``name``.

    Raises:
        KeyError: no such protocol (the message lists the known ones).
        ValueError: the file is invalid.
    """
    if name not in protocol_names():
        raise KeyError(f'unknown protocol {name!r}; known: {", ".join(protocol_names())}')
    return parse_protocol(name, (_dir() / f'{name}.yaml').read_text(encoding='utf-8'))


def protocol_specs(protocol: Protocol, *, seeds: int | None = None, seed_offset: int = 0,
                   methods: Sequence[str] | None = None, optimizer=None) -> list:
    """The protocol's runs as :class:`~uncertain_bo.benchmarks.runner.RunSpec` (duplicates across parts once).

    Args:
        protocol: the protocol.
        seeds: run only seeds ``seed_offset .. seed_offset + seeds - 1`` of each part (at most the part's own
            count; None = the protocol's).
        seed_offset: first seed.
        methods: keep only these methods (None = all).
        optimizer: :class:`~uncertain_bo.acquisition.optimize.OptimizerSettings` for every run (None = the default).

    Raises:
        KeyError: a problem or method the protocol names is not registered.
        ValueError: a problem parameter the problem does not declare.
    """
    from ..acquisition import get_method
    from ..acquisition.optimize import OptimizerSettings
    from .base import BenchSettings
    from .problem_registry import get_problem
    from .runner import expand

    optimizer = optimizer or OptimizerSettings()
    specs, seen = [], set()
    for part in protocol.parts:
        problem = get_problem(part.problem)
        for m in part.methods:
            get_method(m)
        chosen = [m for m in part.methods if methods is None or m in methods]
        if not chosen:
            continue
        n = part.seeds if seeds is None else min(seeds, part.seeds)
        axes = [[(k, v) for v in _as_list(value)] for k, value in part.problem_params]
        settings = []
        for r, b, params in product(part.mismatch, part.beta or (problem.default_beta,),
                                    [tuple(c) for c in product(*axes)]):
            s = BenchSettings(beta=b, mismatch=r, n_initial=part.n_initial, optimizer=optimizer, problem=params)
            problem.param_values(s)
            settings.append(s)
        for spec in expand(part.problem, chosen, range(seed_offset, seed_offset + n), part.iterations, settings):
            if spec.key not in seen:
                seen.add(spec.key)
                specs.append(spec)
    return specs


def run_times() -> dict[str, Any]:
    """The measured run-time table ``protocols/run_times.yaml`` (``{}`` where it is absent)."""
    path = _dir() / 'run_times.yaml'
    if not path.is_file():
        return {}
    return yaml.safe_load(path.read_text(encoding='utf-8')) or {}


def estimate_cpu_seconds(specs: Sequence, table: dict[str, Any] | None = None) -> tuple[float, list[str]]:
    """Estimated CPU seconds of ``specs`` and the ``problem/method`` pairs without a measurement.

    Per run: ``setup + per_evaluation * T + growth * T (T + 1) / 2`` with the problem's and method's measured
    coefficients (``run_times.yaml``: CPU seconds per evaluation at the start of a run, and its growth per
    evaluation as the model grows).
    """
    table = run_times() if table is None else table
    times = table.get('times', {})
    total, missing = 0.0, []
    for s in specs:
        entry = times.get(s.problem, {}).get(s.method)
        if entry is not None and 'same_as' in entry:   # the same decisions as another method
            entry = times.get(s.problem, {}).get(entry['same_as'])
        if entry is None:
            missing.append(f'{s.problem}/{s.method}')
            continue
        t = s.iterations
        total += entry['per_evaluation'] * t + entry['growth'] * t * (t + 1) / 2
    return total, sorted(set(missing))


# ---------------------------------------------------------------------------------------------------------------
# summary in the paper's metric


def _statistic(values: Sequence[float], statistic: str) -> dict[str, float]:
    a = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if a.size == 0:
        return {'n': 0}
    out = {'n': int(a.size), 'mean': float(a.mean()), 'std': float(a.std(ddof=1)) if a.size > 1 else 0.0,
           'median': float(np.median(a)), 'q25': float(np.quantile(a, 0.25)), 'q75': float(np.quantile(a, 0.75))}
    if statistic == 'mean_ci96' and a.size > 1:
        from scipy import stats
        h = float(stats.t.ppf(0.98, a.size - 1)) * out['std'] / math.sqrt(a.size)
        out['ci96'] = [out['mean'] - h, out['mean'] + h]
    return out


def _format(st: dict[str, float], statistic: str) -> str:
    if not st.get('n'):
        return '–'
    if statistic == 'median_quartiles':
        return f'{st["median"]:.3g} [{st["q25"]:.3g}, {st["q75"]:.3g}]'
    if statistic == 'mean_2std':
        return f'{st["mean"]:.3g} ± {2 * st["std"]:.2g}'
    if statistic == 'mean_ci96' and 'ci96' in st:
        return f'{st["mean"]:.3g} [{st["ci96"][0]:.3g}, {st["ci96"][1]:.3g}]'
    return f'{st["mean"]:.3g} ± {st["std"]:.2g}'


def _best_so_far(records: Sequence[dict[str, Any]], key: str, higher: bool) -> float | None:
    vals = [r.get(key) for r in records if r.get(key) is not None]
    return (max(vals) if higher else min(vals)) if vals else None


def protocol_summary(results: Sequence[dict[str, Any]], protocol: Protocol) -> dict[str, Any]:
    """The paper's metric per configuration (problem, method, variant) over seeds.

    For each group: ``final`` — the metric at the last evaluation (the final recommendation), aggregated with the
    protocol's statistic; ``best_so_far`` (where the protocol's metric is best-so-far) — the best value over the
    run's evaluations (smallest regret, largest value), aggregated the same way; ``also`` — each further field's
    final value. Returns ``{'protocol', 'metric', 'statistic', 'groups': [...]}``.
    """
    from .metrics import group_runs, strategy_label

    m = protocol.metric
    groups = []
    for (problem, method, variant), rs in group_runs(results).items():
        g = {'problem': problem, 'method': method, 'variant': variant, 'label': strategy_label(rs[0]['spec']),
             'n_runs': len(rs), 'seeds': sorted(r['spec']['seed'] for r in rs),
             'iterations': rs[0]['spec']['iterations'],
             'final': _statistic([r['records'][-1].get(m.key) if r['records'] else None for r in rs], m.statistic)}
        if m.best_so_far:
            g['best_so_far'] = _statistic([_best_so_far(r['records'], m.key, m.higher_is_better) for r in rs],
                                          m.statistic)
        g['also'] = {k: _statistic([r['records'][-1].get(k) if r['records'] else None for r in rs], m.statistic)
                     for k in m.also}
        groups.append(g)
    return {'protocol': protocol.name, 'paper': protocol.paper, 'source': protocol.source, 'metric': m.name,
            'key': m.key, 'statistic': m.statistic, 'best_so_far': m.best_so_far, 'groups': groups}


def summary_markdown(summary: dict[str, Any], protocol: Protocol) -> str:
    """The summary as a Markdown table (one row per configuration)."""
    m = protocol.metric
    stat = STATISTICS[m.statistic]
    cols = [f'final recommendation: {m.name}, {stat}']
    if m.best_so_far:
        cols.append(f'best so far, {stat}')
    cols += [f'{k} (final)' for k in m.also]
    lines = [f'### {protocol.name}: {protocol.title}', '', f'{protocol.paper}; {protocol.source}.', '',
             '| problem | strategy | seeds | evaluations | ' + ' | '.join(cols) + ' |',
             '|---|---|---|---|' + '---|' * len(cols)]
    for g in summary['groups']:
        row = [g['problem'], g['label'] + (f' ({g["variant"].split("_mismatch=")[1]})'
                                           if '_mismatch=' in g['variant'] and not g['variant'].endswith('=1')
                                           and '_mismatch=1_' not in g['variant'] else ''),
               str(g['n_runs']), str(g['iterations']), _format(g['final'], m.statistic)]
        if m.best_so_far:
            row.append(_format(g['best_so_far'], m.statistic))
        row += [_format(g['also'][k], m.statistic) for k in m.also]
        lines.append('| ' + ' | '.join(row) + ' |')
    return '\n'.join(lines) + '\n'


def list_table(names: Sequence[str] | None = None) -> str:
    """Every protocol with its size (runs, evaluations) and estimated CPU hours, as plain text."""
    table = run_times()
    rows = [('protocol', 'runs', 'evaluations', 'CPU h (est.)', 'source')]
    notes = []
    for name in names or protocol_names():
        p = load_protocol(name)
        specs = protocol_specs(p)
        secs, missing = estimate_cpu_seconds(specs, table)
        est = f'{secs / 3600:.1f}' if not missing else f'≥ {secs / 3600:.1f}'
        if missing:
            notes.append(f'{name}: no measured run time for {", ".join(missing)}')
        rows.append((name, str(len(specs)), str(sum(s.iterations for s in specs)), est,
                     f'{p.paper.split(",")[0].split(" & ")[0]} et al. {p.paper.rsplit(" ", 1)[-1]}, '
                     f'{p.source.split(" (")[0]}'))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out = [f'{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}  {r[4]}'
           for r in rows]
    how = table.get('how', '').strip()
    if how:
        out += ['', 'CPU hours: ' + ' '.join(how.split())]
    return '\n'.join(out + notes)


#: ``bench`` options a protocol fixes (flag, attribute, value meaning "not given")
_FIXED = (('--problem', 'problem', None), ('--iterations', 'iterations', None), ('--beta', 'beta', None),
          ('--mismatch', 'mismatch', '1'), ('--problem-param', 'problem_param', []),
          ('--explorer-param', 'explorer_param', []), ('--field', 'field', None), ('--n-initial', 'n_initial', None),
          ('--refit-every', 'refit_every', None), ('--ugp-noise', 'ugp_noise', 'execution'))


def protocol_main(args) -> int:
    """``uncertain-bo bench --protocol [NAME]`` (the ``bench`` arguments): list, or run one protocol and report
    its metric. Exit 0; 1 if runs failed; 2 for a usage error (nothing written)."""
    import json
    import sys
    from pathlib import Path

    from ..acquisition.optimize import OptimizerSettings
    from .backends import resolve_backend
    from .runner import run_many_reporting, write_tables

    if args.list_protocols or not args.protocol:
        print(list_table())
        return 0
    given = [flag for flag, attr, unset in _FIXED if getattr(args, attr, unset) != unset]
    if given:
        print(f'error: --protocol sets the problem, budget and settings; drop {", ".join(given)} (--seeds N runs '
              'the first N seeds, --method a subset of the methods)', file=sys.stderr)
        return 2
    if args.out is None:
        print('error: --protocol NAME needs --out DIR', file=sys.stderr)
        return 2
    try:
        protocol = load_protocol(args.protocol)
        methods = None if args.method is None else [m.strip() for m in args.method.split(',') if m.strip()]
        named = {m for part in protocol.parts for m in part.methods}
        if methods is not None and not set(methods) <= named:
            raise ValueError(f'protocol {protocol.name!r} has no method(s) {", ".join(sorted(set(methods) - named))} '
                             f'(it runs {", ".join(sorted(named))})')
        if args.seeds is not None and args.seeds < 1:
            raise ValueError(f'--seeds must be a positive integer, got {args.seeds}')
        optimizer = OptimizerSettings(num_restarts=args.restarts, raw_samples=args.raw_samples)
        specs = protocol_specs(protocol, seeds=args.seeds, seed_offset=args.seed_offset, methods=methods,
                               optimizer=optimizer)
        full = protocol_specs(protocol)
        backend, scheduler = resolve_backend(args.backend, args.scheduler)
    except (KeyError, ValueError) as exc:
        print(f'error: {exc.args[0]}', file=sys.stderr)
        return 2
    secs, missing = estimate_cpu_seconds(specs)
    size = 'full size' if len(specs) == len(full) else f'reduced: {len(specs)} of the protocol\'s {len(full)} runs'
    print(f'{protocol.name}: {protocol.title}\n{len(specs)} run(s) ({size}), '
          f'{sum(s.iterations for s in specs)} evaluations, about {secs / 3600:.1f} CPU hours'
          + (f' (no measured time for {", ".join(missing)})' if missing else '')
          + f'; {backend}' + (f' {scheduler or "local"}' if backend == 'dask' else f', {args.n_jobs} process(es)')
          + f' -> {args.out}', file=sys.stderr, flush=True)
    outcome = run_many_reporting(specs, args.out, n_jobs=args.n_jobs, force=args.force, backend=backend,
                                 scheduler=scheduler)
    if isinstance(outcome, int):
        return outcome
    results, failed = outcome
    command = {k: v for k, v in vars(args).items() if k != 'func'}
    write_tables(results, args.out, command=command)
    summary = protocol_summary(results, protocol)
    summary.update(size=size, runs=len(results), protocol_runs=len(full), command=command)
    md = summary_markdown(summary, protocol)
    Path(args.out, 'protocol_summary.json').write_text(json.dumps(summary, indent=1))
    Path(args.out, 'protocol_summary.md').write_text(md)
    print(md)
    if args.plot:
        from .plots import plot_directory
        for path in plot_directory(results, args.out):
            print(f'wrote {path}')
    return 1 if failed else 0

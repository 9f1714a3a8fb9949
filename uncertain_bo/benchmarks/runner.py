"""Benchmark runner: one run = one problem instance x one method x one seed, driven through the shared
:class:`~uncertain_bo.planning.planner.Planner` (suggest -> world.measure -> observe -> recommend).

:func:`run` returns per-iteration records; :func:`run_many` runs a grid of configurations in parallel on a
backend (:mod:`~uncertain_bo.benchmarks.backends`: local processes with joblib, or a Dask cluster; one torch
and one BLAS thread per run), prints one progress line per finished run, and writes

- ``DIR/runs/<key>.json`` — one file per run (config, instance facts, records), written by the calling process
  as soon as the run comes back, whichever backend ran it, so an interrupted sweep resumes where it stopped
  (existing files with the same configuration are reused);
- ``DIR/records.csv`` — every iteration of every run, long format;
- ``DIR/summary.json`` and ``DIR/summary.csv`` — the command's configuration, per-run finals and
  per-configuration aggregates (see :mod:`~uncertain_bo.benchmarks.metrics`);
- ``DIR/summary.md`` — exploration problems: the strategy table and the paired comparisons against the
  baselines, in Markdown.
"""
from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

import torch

from ..acquisition import get_method
from .base import DEFAULT_UGP_NOISE, BenchSettings, Problem
from .problem_registry import get_problem

__all__ = ['RunSpec', 'RunsFailed', 'run', 'run_many', 'run_many_reporting',
           'write_tables', 'load_runs', 'RECORD_FIELDS']

#: scalar fields of one iteration record (vectors are flattened to ``name_0 .. name_{d-1}`` in the CSV)
RECORD_FIELDS = ['t', 'phase', 'y', 'robust_value', 'regret', 'mean_regret', 'rec_index', 'rec_value',
                 'rec_regret', 'rec_predicted', 'rec_distance', 'reading_regret', 'best_visited_regret',
                 'rec_nregret', 'reading_nregret', 'best_visited_nregret', 'distance_driven', 'sim_time',
                 'seconds', 'fit_seconds', 'beta_t', 'acquisition_value']
VECTOR_FIELDS = ['target', 'executed', 'location_mean', 'rec_target']


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid.

    Example:
        The grid of one ``uncertain-bo bench`` call, and the run file one spec writes (``DIR/runs/<key>.json``):

        >>> specs = expand('rkhs2d', ['ugp_ucb', 'uei'], seeds=range(2), iterations=50, settings=[BenchSettings()])
        >>> len(specs), specs[0]
        (4, RunSpec(problem='rkhs2d', method='ugp_ucb', seed=0, iterations=50, settings=BenchSettings(...)))
        >>> specs[0].key
        'rkhs2d__ugp_ucb__beta=theory_mismatch=1__seed0'
        >>> specs[2].variant                          # UEI has no beta
        'beta=-_mismatch=1'
    """

    problem: str
    method: str
    seed: int
    iterations: int
    settings: BenchSettings = field(default_factory=BenchSettings)

    @property
    def variant(self) -> str:
        """Configuration label shared by all seeds, e.g. ``beta=theory_mismatch=1``."""
        uses_beta = get_problem(self.problem).uses_beta(get_method(self.method))
        label = f'beta={self.settings.beta_label(uses_beta)}_mismatch={self.settings.mismatch:g}'
        if self.settings.ugp_noise != DEFAULT_UGP_NOISE:
            label += f'_ugpnoise={self.settings.ugp_noise}'
        if self.settings.field is not None:
            label += f'_field={field_label(self.settings.field)}'
        for name, value in self.settings.explorer + self.settings.problem + self.settings.sim:
            label += f'_{name}={value:g}' if isinstance(value, float) else f'_{name}={value}'
        return _short_label(label)

    @property
    def key(self) -> str:
        return f'{self.problem}__{self.method}__{self.variant}__seed{self.seed}'

    def to_json(self) -> dict[str, Any]:
        s = asdict(self.settings)
        s['explorer'] = [list(kv) for kv in s['explorer']]  # as JSON reads it back (resume compares)
        if not s['explorer']:
            del s['explorer']  # runs written before the option existed still resume
        s['problem'] = [list(kv) for kv in s['problem']]
        if not s['problem']:
            del s['problem']
        s['sim'] = [list(kv) for kv in s['sim']]
        if not s['sim']:
            del s['sim']
        return {'problem': self.problem, 'method': self.method, 'seed': self.seed, 'iterations': self.iterations,
                'variant': self.variant, 'settings': s}


def _short_label(label: str, limit: int = 150) -> str:
    """``label`` itself, or (longer than ``limit`` characters: many parameters) its head and a hash of the whole,
    so that a run's file name stays within file-system limits and still tells configurations apart."""
    if len(label) <= limit:
        return label
    import hashlib

    return f'{label[:limit - 12]}_h{hashlib.sha1(label.encode()).hexdigest()[:10]}'


def field_label(spec: str) -> str:
    """File-name-safe label of a field specification (a name, or a path's stem)."""
    return Path(spec).stem.replace('_', '-') if ('/' in spec or '.' in spec) else spec


def _vec(x) -> list[float]:
    return [float(v) for v in torch.as_tensor(x).reshape(-1)]


def _num(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def run(problem: str | Problem, method: str, seed: int, iterations: int,
        settings: BenchSettings = BenchSettings()) -> dict[str, Any]:
    """One benchmark run.

    Args:
        problem: registered problem name or a :class:`~uncertain_bo.benchmarks.base.Problem`.
        method: registered method name.
        seed: selects the instance (objective), the world's noise stream and the planner's seed; the same
            seed gives every method the same objective and noise stream.
        iterations: number of queries ``T``.
        settings: β, model mismatch, schedules (``beta=None`` = the problem's default).

    Returns:
        ``{'spec', 'instance', 'planner', 'records', 'final', 'wall_seconds'}``; ``planner`` holds the planner's
        settings at the end (``execution_covariance``: the final execution-noise covariance, the learned
        :math:`\\hat\\Sigma` where it is learned online); ``records`` holds one dict per iteration
        with ``t`` (1-based), ``target``, ``executed``, ``location_mean``, ``y``, ``robust_value``
        :math:`g(\\mathbf x_t)`, ``regret`` :math:`\\hat r_t = g^* - g(\\mathbf x_t)`, ``mean_regret``
        :math:`\\hat R_t / t`, the recommendation after the query (``rec_target``, its true robust value
        ``rec_value``, ``rec_regret`` (the robust regret of paper Eq. 17 for AIRBO's problems), the model's
        ``rec_predicted``, the Euclidean distance ``rec_distance`` to the robust optimiser), the decision's
        ``seconds`` and
        ``fit_seconds``, ``beta_t`` and ``acquisition_value``; the rule "the place of the highest reading so
        far" (``reading_regret``: its measurement's :attr:`~uncertain_bo.planning.planner.Planner.measured_places` row,
        the target where it was reached) and the best true measurement position so far (``best_visited_regret``,
        :math:`\\min_{i \\le t} g^* - g(\\tilde{\\mathbf x}_i)`); where the instance has a
        :attr:`~uncertain_bo.benchmarks.base.Instance.regret_scale` (the rover problems:
        :math:`g^* - \\operatorname{median} g`) the three regrets divided by it (``rec_nregret``,
        ``reading_nregret``, ``best_visited_nregret``, the demo's normalised regret); and, for simulated
        missions, the cumulative true path length ``distance_driven`` (m) and ``sim_time`` (s) at the reading;
        where the localiser revised stored readings (``ekf.smooth_on_fix``), ``location_mean_revised``: the
        measurement's location mean in the model at the end (``location_mean`` is where it was taken), and
        ``final['revisions_applied']``.
        Each record also carries ``rec_<name>`` for every value of the instance's
        :meth:`~uncertain_bo.benchmarks.base.Instance.extra_values` at the recommendation (e.g. the quadrature
        problems' empirical mean and ρ-regrets at other radii), and ``final`` repeats the last as
        ``extra_<name>``. ``final`` adds ``distance_driven_m``, ``mission_time_s``, ``edge_fraction`` (share of the
        decided, non-initial targets lying on the box edge) and, for each recommendation rule of
        :data:`~uncertain_bo.planning.planner.RECOMMENDATION_RULES`, ``rule_<name>``: the final regret of that rule
        (normalised where the instance has a regret scale).
    """
    prob = get_problem(problem) if isinstance(problem, str) else problem
    settings = prob.resolve(settings)
    meth = get_method(method)
    inst = prob.instance_for(seed, settings)
    x_star, g_star = inst.optimum
    scale = inst.regret_scale
    records: list[dict[str, Any]] = []
    cum = 0.0
    best_y = best_visited = None  # (reading, its target's regret); smallest regret of a true position
    extra_names: set[str] = set()  # the instance's extra_values

    def norm(r: float) -> float | None:
        return r / scale if scale else None

    def record(planner, target, m, decision, rec) -> None:
        nonlocal cum, best_y, best_visited
        t = len(records) + 1
        place = planner.measured_places[-1]          # this measurement's place: its target, if it was reached
        g_t, g_rec, g_exe, g_place = (float(v) for v in inst.robust_value(torch.stack(
            [target.reshape(-1), rec.target.reshape(-1), m.executed.reshape(-1), place.reshape(-1)]).to(x_star)))
        regret = g_star - g_t
        cum += regret
        if best_y is None or m.y > best_y[0]:
            best_y = (m.y, g_star - g_place)
        best_visited = min(g_star - g_exe, best_visited if best_visited is not None else math.inf)
        extra = {k: float(v[0]) for k, v in inst.extra_values(rec.target.reshape(1, -1).to(x_star)).items()}
        extra_names.update(extra)
        records.append({
            't': t, 'phase': decision.phase, 'target': _vec(target), 'executed': _vec(m.executed),
            'location_mean': _vec(m.location.mean), 'y': m.y, 'robust_value': g_t, 'regret': regret,
            'mean_regret': cum / t, 'rec_index': rec.index, 'rec_target': _vec(rec.target),
            'rec_value': g_rec, 'rec_regret': g_star - g_rec, 'rec_predicted': rec.mean,
            'rec_distance': float((rec.target.reshape(-1) - x_star.reshape(-1)).norm()),
            'reading_regret': best_y[1], 'best_visited_regret': best_visited, 'rec_nregret': norm(g_star - g_rec),
            'reading_nregret': norm(best_y[1]), 'best_visited_nregret': norm(best_visited),
            'seconds': decision.seconds, 'fit_seconds': decision.fit_seconds,
            'beta_t': _num(decision.beta), 'acquisition_value': _num(decision.acquisition_value),
            **{f'rec_{k}': v for k, v in extra.items()}, **m.extra})

    t_start = time.perf_counter()
    planner = inst.drive(meth, settings, seed, iterations, record)
    wall = time.perf_counter() - t_start
    revised = planner.observations.locations if planner.revisions_applied else None
    if revised is not None and len(revised.mean) == len(records):   # where the model holds each reading at the end
        for r, mean in zip(records, revised.mean):
            r['location_mean_revised'] = _vec(mean)
    rules = {}
    if records:
        from ..acquisition.recommendation import RECOMMENDATION_RULES
        for rule in RECOMMENDATION_RULES:
            x = planner.recommend(rule).target.reshape(1, -1).to(x_star)
            r = g_star - float(inst.robust_value(x)[0])
            rules[f'rule_{rule}'] = norm(r) if scale else r
    spec = RunSpec(prob.name, method, seed, iterations, settings)
    last = records[-1] if records else {}
    acq = [r['seconds'] for r in records if r['phase'] == 'acquisition']
    final = {'mean_regret': last.get('mean_regret'), 'rec_regret': last.get('rec_regret'),
             'rec_distance': last.get('rec_distance'),
             'min_regret': min((r['regret'] for r in records), default=None),
             'median_decision_seconds': float(torch.tensor(acq).median()) if acq else None,
             'reading_regret': last.get('reading_regret'), 'best_visited_regret': last.get('best_visited_regret'),
             'rec_normalised_regret': last.get('rec_nregret'), 'reading_normalised_regret': last.get('reading_nregret'),
             'best_visited_normalised_regret': last.get('best_visited_nregret'),
             'distance_driven_m': last.get('distance_driven'), 'mission_time_s': last.get('sim_time'),
             'edge_fraction': _edge_fraction(planner), 'en_route_readings': planner.n_en_route, **rules,
             **({'revisions_applied': planner.revisions_applied} if planner.revisions_applied else {}),
             **{f'extra_{k[4:]}': v for k, v in last.items() if k.startswith('rec_') and k[4:] in extra_names}}
    return {'spec': spec.to_json(), 'instance': {**inst.info(), 'optimum_value': g_star,
                                                 'optimum': _vec(x_star)},
            'planner': {'n_initial': planner.n_initial, 'refit_every': planner.refit_every,
                        'execution_noise': repr(planner.execution_noise), 'beta': repr(planner.beta),
                        'execution_covariance': (planner.execution_noise.covariance.tolist()
                                                 if hasattr(planner.execution_noise, 'covariance') else None),
                        'hyperparameters': planner.model.hyperparameters()},
            'records': records, 'final': final, 'wall_seconds': wall}


def _edge_fraction(planner) -> float | None:
    """Share of the decided (not initial-design, not survey) targets that lie on the search-box edge."""
    decided = [d.target for d in planner.decisions if d.phase == 'acquisition']
    if not decided:
        return None
    x = torch.stack(decided).to(planner.bounds)
    tol = 1e-6 * (planner.bounds[1] - planner.bounds[0])
    edge = ((x - planner.bounds[0]).abs() <= tol) | ((planner.bounds[1] - x).abs() <= tol)
    return float(edge.any(-1).double().mean())


def _write_run(result: dict[str, Any], out_dir: str) -> None:
    """``out_dir/runs/<key>.json``, atomically (a run is on disk whole or not at all)."""
    path = Path(out_dir) / 'runs' / f'{result["key"]}.json'
    tmp = path.with_suffix('.json.tmp')
    tmp.write_text(json.dumps(result))
    os.replace(tmp, path)


class RunsFailed(RuntimeError):
    """Some runs of :func:`run_many` failed (the others are written). ``failures``: ``[(key, reason), ...]``;
    ``results``: the finished runs in ``specs`` order.

    Example:
        A run whose settings its problem cannot honour (``rkhs2d`` has no field) fails; :func:`run_many` raises
        after the other runs:

        >>> spec = RunSpec('rkhs2d', 'ugp_ucb', seed=0, iterations=5, settings=BenchSettings(field='ridge'))
        >>> try:
        ...     run_many([spec], n_jobs=1, progress=False)
        ... except RunsFailed as failed:
        ...     print(failed.failures[0][1])
        ValueError: problem 'rkhs2d' has no field, explorer or simulator to configure (--field, ...
    """

    def __init__(self, failures: list[tuple[str, str]], results: list[dict[str, Any]]):
        super().__init__(f'{len(failures)} run(s) failed: ' + '; '.join(f'{k}: {e}' for k, e in failures))
        self.failures, self.results = failures, results


def _existing(spec: RunSpec, out_dir: str | None) -> dict[str, Any] | None:
    if out_dir is None:
        return None
    path = Path(out_dir) / 'runs' / f'{spec.key}.json'
    if not path.exists():
        return None
    try:
        result = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return result if result.get('spec') == spec.to_json() else None


def expand(problem: str, methods: Sequence[str], seeds: Iterable[int], iterations: int,
           settings: Sequence[BenchSettings]) -> list[RunSpec]:
    """The grid of runs; configurations a method cannot tell apart (β values for a method without β)
    collapse to one."""
    specs, seen = [], set()
    prob = get_problem(problem)
    for s in settings:
        s = prob.resolve(s)
        for method in methods:
            meth = get_method(method)
            canon = s if prob.uses_beta(meth) else replace(s, beta=prob.default_beta)
            canon = canon if meth.inputs != 'target' else replace(canon, ugp_noise=DEFAULT_UGP_NOISE)
            for seed in seeds:
                spec = RunSpec(problem, method, seed, iterations, canon)
                if spec.key in seen:
                    continue
                seen.add(spec.key)
                specs.append(spec)
    return specs


def run_many(specs: Sequence[RunSpec], out_dir: str | Path | None = None, n_jobs: int = 2,
             force: bool = False, progress: TextIO | bool = True, backend: str = 'joblib',
             scheduler: str | None = None) -> list[dict[str, Any]]:
    """Run ``specs`` on ``backend`` (:mod:`~uncertain_bo.benchmarks.backends`: ``'joblib'``, ``n_jobs`` local
    processes; ``'dask'``, a Dask cluster at ``scheduler``), one torch and one BLAS thread per run.

    Finished runs come back to this process and are written to ``out_dir/runs`` at once, whichever backend ran
    them; with ``force=False`` runs already there with the same configuration are loaded instead of recomputed.
    Prints one line per finished run to ``progress`` (a text stream; True = standard error, False = silent).
    Returns the results in ``specs`` order and writes the tables (:func:`write_tables`).

    Raises:
        RunsFailed: after every other run finished and the tables of those are written, if some runs raised or
            were lost with their worker (Dask: after one retry).
        BackendError: the backend cannot start (a ``ValueError``).
    """
    from .backends import execute

    if progress is True:
        progress = sys.stderr
    out = str(out_dir) if out_dir is not None else None
    if out is not None:
        (Path(out) / 'runs').mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    todo = []
    for spec in specs:
        old = None if force else _existing(spec, out)
        if old is not None:
            results[spec.key] = old
        else:
            todo.append(spec)
    total, done = len(specs), len(results)
    if done and progress:
        print(f'reusing {done} finished run(s) from {out}/runs', file=progress, flush=True)
    t0 = time.perf_counter()
    failures: list[tuple[str, str]] = []
    for outcome in execute(todo, run, backend=backend, n_jobs=n_jobs, scheduler=scheduler,
                           progress=progress or None):
        done += 1
        key = todo[outcome.index].key
        if outcome.error is not None:
            failures.append((key, outcome.error))
            if progress:
                print(f'[{done}/{total}] {key}: FAILED, {outcome.error} (elapsed {time.perf_counter() - t0:.0f} s)',
                      file=progress, flush=True)
            continue
        result = outcome.result
        if out is not None:
            _write_run(result, out)
        results[key] = result
        if progress:
            f = result['final']
            print(f'[{done}/{total}] {key}: mean regret {f["mean_regret"]:.4f}, '
                  f'recommendation regret {f["rec_regret"]:.4f}, {result["wall_seconds"]:.0f} s '
                  f'(elapsed {time.perf_counter() - t0:.0f} s)', file=progress, flush=True)
    ordered = [results[s.key] for s in specs if s.key in results]
    if out is not None and ordered:
        write_tables(ordered, out)
    if failures:
        raise RunsFailed(failures, ordered)
    return ordered


def load_runs(out_dir: str | Path) -> list[dict[str, Any]]:
    """All run results in ``out_dir/runs`` (sorted by key)."""
    return [json.loads(p.read_text()) for p in sorted((Path(out_dir) / 'runs').glob('*.json'))]


#: the files :func:`write_tables` (and a suite's report, :mod:`~uncertain_bo.benchmarks.suite_report`) write in
#: a benchmark's output folder
TABLES = ('records.csv', 'summary.json', 'summary.md', 'summary.csv', 'suite.json', 'suite.md')


def write_tables(results: Sequence[dict[str, Any]], out_dir: str | Path,
                 command: dict[str, Any] | None = None) -> None:
    """``records.csv`` (every iteration), ``summary.json``, ``summary.csv`` (aggregates) and, for exploration
    problems, ``summary.md`` in ``out_dir``."""
    from .metrics import FINAL_STATS, markdown_tables, summarize

    from ..reporting.output_files import replacing, write_text

    out = Path(out_dir)
    dims = {len(r['records'][0]['target']) for r in results if r['records']}
    d = max(dims) if dims else 0
    head = ['problem', 'method', 'variant', 'beta', 'mismatch', 'field', 'seed']
    cols = head + RECORD_FIELDS + [f'{v}_{i}' for v in VECTOR_FIELDS for i in range(d)]
    with replacing(out / 'records.csv') as (tmp,), open(tmp, 'w', newline='') as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for res in results:
            s = res['spec']
            for rec in res['records']:
                row = [s['problem'], s['method'], s['variant'], s['settings']['beta'], s['settings']['mismatch'],
                       s['settings'].get('field'), s['seed']] + [rec.get(k) for k in RECORD_FIELDS]
                for v in VECTOR_FIELDS:
                    row += list(rec[v]) + [None] * (d - len(rec[v]))
                w.writerow(row)
    summary = summarize(results)
    if command is not None:
        summary['command'] = command
    write_text(out / 'summary.json', json.dumps(summary, indent=1))
    md = markdown_tables(summary)
    if md:
        write_text(out / 'summary.md', md)
    keys = ['problem', 'method', 'variant', 'beta', 'mismatch', 'field', 'n_runs', 'iterations', 'mean_regret_mean',
            'mean_regret_std', 'rec_regret_mean', 'rec_regret_std', 'rec_distance_median', 'argmax_tolerance',
            'n_within_tolerance', 'median_decision_seconds', 'p90_decision_seconds', 'median_wall_seconds']
    stats = [k for k in FINAL_STATS if any(k in g for g in summary['groups'])]
    keys += [f'{k}_{s}' for k in stats for s in ('median', 'mean', 'std')]
    with replacing(out / 'summary.csv') as (tmp,), open(tmp, 'w', newline='') as fh:
        w = csv.DictWriter(fh, keys, extrasaction='ignore')
        w.writeheader()
        for g in summary['groups']:
            w.writerow({**g, **{f'{k}_{s}': g[k][s] for k in stats if k in g for s in ('median', 'mean', 'std')}})


def run_many_reporting(specs: Sequence[RunSpec], out_dir: str | Path, *, n_jobs: int, force: bool, backend: str,
                       scheduler: str | None) -> tuple[list, int] | int:
    """:func:`run_many` for the command line: failed runs and usage errors as one ``error:`` line on stderr.

    Returns:
        ``(results, number of failed runs)``, or an exit code: 2 for a usage error (an unusable backend or
        settings: nothing run), 1 when no run succeeded.
    """
    from .backends import BackendError
    failed = 0
    try:
        results = run_many(specs, out_dir, n_jobs=n_jobs, force=force, backend=backend, scheduler=scheduler)
    except RunsFailed as exc:
        results, failed = exc.results, len(exc.failures)
        print(f'error: {exc}', file=sys.stderr)
    except (ValueError, BackendError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    if not results:
        return 1
    return results, failed

"""Benchmark throughput: runs per minute on 1 and 2 local Dask workers against joblib with 1 and 2 processes, on the
same runs, and the per-run overhead of the Dask path.

Throughput: each repetition runs the same sweep (default: ``nes-sin``, methods ``ei`` and ``bo_uu_ucb``, seeds 0-3,
the protocol's 23 evaluations: 8 runs of a few CPU seconds) once per configuration, each in a fresh Python process
that calls ``run_many`` the way ``uncertain-bo bench`` does (``--n-jobs 1``, ``--n-jobs 2``, ``--scheduler local:1``,
``--scheduler local:2``); the configurations are interleaved within a repetition (the order rotates) so that drift
in the machine's load hits them alike. Reported: the median over repetitions of runs per minute, from
``run_many``'s elapsed time (cluster or process-pool start-up and the workers' imports included), and the ratio
Dask / joblib per repetition (paired).

Per-run overhead of the Dask path: 40 one-evaluation runs, in one process, through a warmed one-worker
``LocalCluster`` (workers started and the package imported before timing) against the same runs in-process;
(Dask elapsed - in-process elapsed) / 40. The cluster's start-up (one worker, package imported) is timed apart.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/dask_throughput.py [--reps 3]

CPU per run: the same run alternately in-process and on a one-worker LocalCluster, CPU seconds of the computing
thread (``--cpu-pairs``; the load does not inflate CPU time as it does wall time).

Prints the load average before and after each repetition: on a shared machine, quote it with the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = {'joblib-1': ('joblib', 1, None), 'joblib-2': ('joblib', 2, None),
           'dask-1': ('dask', 1, 'local:1'), 'dask-2': ('dask', 2, 'local:2')}


def specs(problem: str, methods: str, seeds: int, iterations: int | None):
    from uncertain_bo.benchmarks import BenchSettings, expand, get_problem

    t = iterations or get_problem(problem).default_iterations
    return expand(problem, methods.split(','), range(seeds), t, [BenchSettings()])


def child(args) -> None:
    """One configuration, timed inside a fresh process; prints one JSON line."""
    t_import = time.perf_counter()
    from uncertain_bo.benchmarks import run_many

    backend, n_jobs, scheduler = CONFIGS[args.child]
    runs = specs(args.problem, args.methods, args.seeds, args.iterations)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        results = run_many(runs, out, n_jobs=n_jobs, backend=backend, scheduler=scheduler, force=True,
                           progress=False)
        elapsed = time.perf_counter() - t0
    print(json.dumps({'config': args.child, 'runs': len(results), 'elapsed': elapsed,
                      'import': t0 - t_import, 'run_wall': sum(r['wall_seconds'] for r in results)}))


def overhead(n: int) -> dict:
    """Per-run overhead of the Dask path on a warmed one-worker cluster (see the module docstring)."""
    from distributed import Client, LocalCluster

    from uncertain_bo.benchmarks import run_many

    runs = specs('nes-sin', 'ei', n, 1)
    run_many(runs[:1], None, n_jobs=1, progress=False)          # warm this process
    t0 = time.perf_counter()
    run_many(runs, None, n_jobs=1, progress=False)
    local = time.perf_counter() - t0
    t0 = time.perf_counter()
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as c:
        c.run(lambda: __import__('uncertain_bo.benchmarks.runner') and None)
        start = time.perf_counter() - t0
        run_many(runs[:1], None, backend='dask', scheduler=cluster.scheduler_address, progress=False)   # warm
        t0 = time.perf_counter()
        run_many(runs, None, backend='dask', scheduler=cluster.scheduler_address, progress=False)
        dask = time.perf_counter() - t0
    return {'runs': n, 'local_s': local, 'dask_s': dask, 'per_run_overhead_ms': 1000 * (dask - local) / n,
            'cluster_start_s': start}


def _timed(spec) -> dict:
    from uncertain_bo.benchmarks.backends import compute
    from uncertain_bo.benchmarks.runner import run

    w0, c0 = time.perf_counter(), time.thread_time()
    compute(spec, run)
    return {'wall': time.perf_counter() - w0, 'cpu': time.thread_time() - c0}


def cpu_pairs(n: int) -> list[tuple[dict, dict]]:
    """The same run (nes-sin, ei, 23 evaluations) alternately in this process and on a one-worker LocalCluster:
    the CPU seconds of the computing thread (``time.thread_time``), which the machine's load does not inflate."""
    from distributed import Client, LocalCluster

    spec = specs('nes-sin', 'ei', 1, None)[0]
    _timed(spec)
    out = []
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as c:
        c.submit(_timed, spec, pure=False).result()
        for _ in range(n):
            out.append((_timed(spec), c.submit(_timed, spec, pure=False).result()))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--problem', default='nes-sin')
    ap.add_argument('--methods', default='ei,bo_uu_ucb')
    ap.add_argument('--seeds', type=int, default=4)
    ap.add_argument('--iterations', type=int, default=None)
    ap.add_argument('--configs', default=','.join(CONFIGS))
    ap.add_argument('--overhead-runs', type=int, default=40)
    ap.add_argument('--cpu-pairs', type=int, default=3, help='in-process / Dask-worker pairs of one run (CPU seconds)')
    ap.add_argument('--child', default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0
    import logging
    logging.getLogger('distributed').setLevel(logging.WARNING)
    configs = args.configs.split(',')
    base = [sys.executable, __file__, '--problem', args.problem, '--methods', args.methods, '--seeds', str(args.seeds)]
    if args.iterations:
        base += ['--iterations', str(args.iterations)]
    rows = {c: [] for c in configs}
    for rep in range(args.reps):
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        load0 = os.getloadavg()[0]
        for c in order:
            out = subprocess.run(base + ['--child', c], capture_output=True, text=True, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            rows[c].append(r)
            print(f'rep {rep}: {c:9s} {r["runs"]} runs in {r["elapsed"]:6.1f} s = {60 * r["runs"] / r["elapsed"]:5.1f} '
                  f'runs/min (runs themselves {r["run_wall"]:.1f} s wall)', flush=True)
        print(f'rep {rep}: load average {load0:.2f} -> {os.getloadavg()[0]:.2f}', flush=True)
    print('\nmedian runs per minute (min-max):')
    rate = {c: [60 * r['runs'] / r['elapsed'] for r in rows[c]] for c in configs}
    for c in configs:
        print(f'  {c:9s} {statistics.median(rate[c]):6.2f}  ({min(rate[c]):.2f}-{max(rate[c]):.2f})')
    for n in ('1', '2'):
        if f'dask-{n}' in rate and f'joblib-{n}' in rate:
            ratio = [d / j for d, j in zip(rate[f'dask-{n}'], rate[f'joblib-{n}'])]
            print(f'  dask-{n} / joblib-{n}, paired per repetition: median {statistics.median(ratio):.3f} '
                  f'({", ".join(f"{v:.3f}" for v in ratio)})')
    if args.overhead_runs:
        o = overhead(args.overhead_runs)
        print(f'\nDask path, warmed one-worker LocalCluster: {o["runs"]} one-evaluation runs in {o["dask_s"]:.2f} s '
              f'against {o["local_s"]:.2f} s in-process: {o["per_run_overhead_ms"]:.0f} ms per run; cluster start '
              f'with the package imported {o["cluster_start_s"]:.1f} s (load {os.getloadavg()[0]:.2f})')
    if args.cpu_pairs:
        print('\none run (nes-sin, ei, 23 evaluations), CPU s of the computing thread [wall s]: '
              'in-process / Dask worker')
        for a, b in cpu_pairs(args.cpu_pairs):
            print(f'  {a["cpu"]:.2f} [{a["wall"]:.0f}] / {b["cpu"]:.2f} [{b["wall"]:.0f}]   '
                  f'(load {os.getloadavg()[0]:.1f})', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())

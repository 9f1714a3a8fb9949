"""Measure CPU seconds per run for every (problem, method) of the shipped protocols and write the table
``uncertain_bo/benchmarks/protocols/run_times.yaml`` that ``uncertain-bo bench --protocol`` estimates CPU hours from.

For each pair: runs on seeds 0..S-1 (default 2) with the protocol's first configuration of that pair, one torch and
one BLAS thread, at ``min(T, n0 + HORIZON)`` evaluations (``T``: the longest run the protocols ask for; ``n0``: the
problem's initial design; protocols of 200+ evaluations at 100), timed by the process's CPU clock
(``time.process_time``: not inflated by other work on a shared machine). The per-evaluation cost profile comes from
the run's own records (each decision's wall seconds, plus the rest of the run spread evenly over the evaluations),
fitted by least squares as ``a + b t`` and scaled so that it sums to the measured CPU seconds; the table stores
``per_evaluation = a`` and ``growth = b`` (CPU s), so a run of ``T`` evaluations costs ``a T + b T (T + 1) / 2``.
One-off set-up (oracle grids, cached on disk per machine) is timed before and stored apart (``setup_seconds``).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/protocol_run_times.py [--seeds 2]

Resumable: pairs already in the table are kept (``--force`` re-measures). ``emp_drbqo`` and ``maximin_bqo_*`` make
``drbqo``'s and ``bqo_*``'s decisions and only report differently: they are entered as ``same_as`` those.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np
import yaml

TABLE = Path(__file__).resolve().parents[1] / 'uncertain_bo' / 'benchmarks' / 'protocols' / 'run_times.yaml'

HOW = """CPU seconds measured on the project's development machine (2 shared cores, x86-64, load average 2-22 from
other work; one torch and one BLAS thread per run, nice 10) by bench/protocol_run_times.py: per problem and method,
the entry's `seeds` at `measured_iterations` evaluations (seeds 0-1 at min(T, n0 + 30) for the problems measured
first; seed 0 at min(T, n0 + 20) or min(T, n0 + 10), and 50 for the protocols of 300-400 evaluations, as the load
rose to 15-22), CPU clock of the process; the per-evaluation cost a + b t is fitted to the runs' own per-decision
timings and scaled to the measured CPU seconds, and runs longer than measured are extrapolated with it. Estimates
within a factor of about 2 (more for the extrapolated 300-400-evaluation runs); set-up (oracle grids, cached once per
machine) is not included."""


#: methods whose decisions (the costly part) are another method's; only their report differs
SAME_AS = {'emp_drbqo': 'drbqo', 'maximin_bqo_ei': 'bqo_ei', 'maximin_bqo_ts': 'bqo_ts'}


def pairs():
    """``{(problem, method): (longest T, first spec)}`` over every shipped protocol."""
    from uncertain_bo.benchmarks.protocol import load_protocol, protocol_names, protocol_specs

    out = {}
    for name in protocol_names():
        for spec in protocol_specs(load_protocol(name)):
            key = (spec.problem, spec.method)
            if key not in out or spec.iterations > out[key][0]:
                out[key] = (max(spec.iterations, out.get(key, (0,))[0]), out.get(key, (0, spec))[1])
    return out


def horizon(problem: str, t: int, span: int, long: int = 100) -> int:
    from uncertain_bo.benchmarks import get_problem

    if t >= 200:
        return long
    n0 = getattr(get_problem(problem), 'n_initial', None) or 10
    return min(t, n0 + span)


def measure(spec, seeds: int, iterations: int) -> dict:
    from dataclasses import replace

    from uncertain_bo.benchmarks.runner import run

    cpu, wall, per_eval = [], [], []
    for seed in range(seeds):
        s = replace(spec, seed=seed, iterations=iterations)
        c0, w0 = time.process_time(), time.perf_counter()
        res = run(s.problem, s.method, s.seed, s.iterations, s.settings)
        c, w = time.process_time() - c0, time.perf_counter() - w0
        cpu.append(c)
        wall.append(w)
        dec = np.array([r['seconds'] if r['phase'] == 'acquisition' else 0.0 for r in res['records']])
        rest = max(w - dec.sum(), 0.0) / len(dec)
        per_eval.append((dec + rest) * (c / w))   # CPU seconds per evaluation, shape from the wall timings
    t = np.arange(1, iterations + 1, dtype=float)
    y = np.mean(per_eval, axis=0)
    b, a = np.polyfit(t, y, 1)
    if b < 0:
        a, b = y.mean(), 0.0
    scale = float(np.mean(cpu)) / (a * iterations + b * iterations * (iterations + 1) / 2)
    return {'per_evaluation': float(f'{a * scale:.4g}'), 'growth': float(f'{b * scale:.4g}'),
            'measured_iterations': iterations,
            'seeds': seeds, 'cpu_seconds': [round(v, 2) for v in cpu], 'wall_seconds': [round(v, 2) for v in wall]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seeds', type=int, default=2)
    ap.add_argument('--span', type=int, default=30, help='evaluations after the initial design (default 30)')
    ap.add_argument('--merge', nargs='+', default=None, metavar='TABLE',
                    help='merge tables measured apart (--table) into --table, then stop')
    ap.add_argument('--long', type=int, default=100, help='evaluations measured for protocols of 200+ (default 100)')
    ap.add_argument('--only', default=None, help='comma-separated problems to measure (default: all)')
    ap.add_argument('--force', action='store_true')
    ap.add_argument('--table', default=str(TABLE), help='where to write (default: the package\'s run_times.yaml)')
    args = ap.parse_args(argv)
    table_path = Path(args.table)

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    from uncertain_bo.benchmarks import get_problem

    table = yaml.safe_load(table_path.read_text()) if table_path.exists() else {}
    table['how'] = ' '.join(HOW.split())
    times = table.setdefault('times', {})
    setup = table.setdefault('setup_seconds', {})
    if args.merge:
        for other in args.merge:
            data = yaml.safe_load(Path(other).read_text()) or {}
            for problem, entries in data.get('times', {}).items():
                times.setdefault(problem, {}).update(entries)
            setup.update(data.get('setup_seconds', {}))
        table_path.write_text(yaml.safe_dump(table, sort_keys=True, width=118, allow_unicode=True))
        return 0
    todo = sorted(pairs().items(), key=lambda kv: (kv[1][0], kv[0]))
    only = set(args.only.split(',')) if args.only else None
    for (problem, method), (t_max, spec) in todo:
        if only and problem not in only:
            continue
        t_m = horizon(problem, t_max, args.span, args.long)
        if method in SAME_AS:   # the same decisions as another method, reported differently: its time
            times.setdefault(problem, {})[method] = {'same_as': SAME_AS[method]}
            continue
        if times.get(problem, {}).get(method) and not args.force:
            continue
        if problem not in setup:
            c0 = time.process_time()
            get_problem(problem).instance_for(0, spec.settings).optimum   # oracle grids, caches
            setup[problem] = round(time.process_time() - c0, 1)
        load = os.getloadavg()[0]
        entry = measure(spec, args.seeds, t_m)
        entry['load_average'] = round(load, 1)
        entry['date'] = datetime.date.today().isoformat()
        times.setdefault(problem, {})[method] = entry
        est = entry['per_evaluation'] * t_max + entry['growth'] * t_max * (t_max + 1) / 2
        print(f'{problem:28s} {method:16s} T={t_m:3d}: CPU {np.mean(entry["cpu_seconds"]):7.1f} s/run '
              f'(wall {np.mean(entry["wall_seconds"]):7.1f}), at T={t_max}: {est:7.1f} s, load {load:.1f}',
              flush=True)
        table_path.write_text(yaml.safe_dump(table, sort_keys=True, width=118, allow_unicode=True))
    table_path.write_text(yaml.safe_dump(table, sort_keys=True, width=118, allow_unicode=True))   # same_as entries
    return 0


if __name__ == '__main__':
    sys.exit(main())

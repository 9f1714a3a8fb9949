"""Which registered methods run on which registered problems: every method x every problem, one seed, a few
iterations with quick settings (two initial measurements, fixed hyperparameters, a small maximiser), one process per
run with a wall-clock limit. Prints a Markdown table: ``ok``, ``F`` (failed) or ``R`` (refused by design:
:meth:`~uncertain_bo.benchmarks.base.Problem.check_method`, the one-line usage error ``uncertain-bo bench`` gives
before any run), then the reasons with the pairs.

Not a unit test (all 34 problems: about 1100 runs; docs/benchmarks.md, "Which method runs on which problem").
Usage::

    .venv/bin/python bench/method_problem_matrix.py [--problems a,b] [--methods a,b] [--iterations 3]
        [--n-jobs 2] [--timeout 120]
"""
from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import time
from collections import Counter


def one(args: tuple[str, str, int]) -> tuple[str, str, str, float]:
    problem, method, iterations = args
    import torch
    torch.set_num_threads(1)
    from uncertain_bo.benchmarks import BenchSettings, get_problem, run

    quick = BenchSettings.quick(n_initial=2)
    t0 = time.perf_counter()
    try:
        get_problem(problem).check_method(method, quick)     # what uncertain-bo bench checks before any run
    except ValueError as exc:
        return problem, method, f'refused ({str(exc).split(": ", 1)[-1][:90]})', time.perf_counter() - t0
    try:
        run(problem, method, seed=0, iterations=iterations, settings=quick)
        return problem, method, 'ok', time.perf_counter() - t0
    except Exception as exc:   # the point is to list what fails
        return problem, method, f'failed ({type(exc).__name__}: {str(exc).splitlines()[0][:90]})', \
            time.perf_counter() - t0


def main() -> None:
    from uncertain_bo.acquisition import METHODS
    from uncertain_bo.benchmarks import problem_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--problems', default=','.join(problem_names()))
    ap.add_argument('--methods', default=','.join(sorted(METHODS)))
    ap.add_argument('--iterations', type=int, default=3)
    ap.add_argument('--n-jobs', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=120.0, help='seconds per run before it counts as failed')
    args = ap.parse_args()
    problems, methods = args.problems.split(','), args.methods.split(',')
    jobs = [(p, m, args.iterations) for p in problems for m in methods]
    t0 = time.perf_counter()
    results = {}
    with mp.get_context('spawn').Pool(args.n_jobs, maxtasksperchild=200) as pool:
        pending = [(job, pool.apply_async(one, (job,))) for job in jobs]
        for (p, m, _), res in pending:
            try:
                results[p, m] = res.get(args.timeout)[2]
            except mp.TimeoutError:
                results[p, m] = f'failed (over {args.timeout:g} s)'
    print(f'{len(jobs)} runs, {args.iterations} iterations, {time.perf_counter() - t0:.0f} s, '
          f'{datetime.date.today()}\n')
    print('| problem | ' + ' | '.join(methods) + ' |')
    print('|' + '---|' * (len(methods) + 1))
    for p in problems:
        print(f'| {p} | ' + ' | '.join(results[p, m][0].upper() if results[p, m] != 'ok' else 'ok'
                                       for m in methods) + ' |')
    print('\nF = failed, R = refused before any run (one usage error):')
    for reason, n in Counter(r for r in results.values() if r != 'ok').most_common():
        pairs = [f'{p}/{m}' for (p, m), r in results.items() if r == reason]
        print(f'- {n} x {reason}: {", ".join(pairs[:8])}{" ..." if n > 8 else ""}')


if __name__ == '__main__':
    main()

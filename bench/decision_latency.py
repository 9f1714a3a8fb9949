"""Decision latency of the explorer's planner: GP update (marginal-likelihood refit) + acquisition maximisation.

Issue target (2-core machine): median <= 0.5 s at 30 observations, <= 2 s at 300.

The data are what the explorer sees: targets in a 200 m x 200 m area, EKF-like location distributions
(per-point covariances), readings from the real elevation field. For each size n the planner holds n
observations, then each timed decision adds one observation and calls ``suggest()`` (which refits the
hyperparameters, as in the demo, and maximises uGP-UCB with 10 restarts / 512 raw samples).

    .venv/bin/python bench/decision_latency.py [--sizes 30 300] [--repeats 10]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner
from uncertain_bo.cli import configure_torch_threads
from uncertain_bo.sim.field import Field


def run(n: int, repeats: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    field = Field.default()
    bounds = torch.tensor([[0.0, 0.0], [200.0, 200.0]])
    planner = Planner(bounds, GaussianExecutionNoise.isotropic(2.0, 2), n_initial=1, seed=seed)

    def observe_random():
        target = rng.uniform(0, 200, 2)
        where = target + rng.normal(0, 2.0, 2)
        a = rng.normal(0, 0.7, (2, 2))
        cov = a @ a.T + 0.1 * np.eye(2)
        y = float(field.value(where[None])[0]) + rng.normal(0, 2.0)
        planner.observe(torch.tensor(target), Gaussian(torch.tensor(where[None]), torch.tensor(cov[None])), y)

    for _ in range(n):
        observe_random()
    times, fits = [], []
    for _ in range(repeats):
        observe_random()
        t0 = time.perf_counter()
        planner.suggest()
        times.append(time.perf_counter() - t0)
        fits.append(planner.decisions[-1].fit_seconds)
    return {'n': n, 'median_s': statistics.median(times), 'max_s': max(times),
            'median_fit_s': statistics.median(fits), 'times_s': times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sizes', type=int, nargs='+', default=[30, 300])
    ap.add_argument('--repeats', type=int, default=10)
    ap.add_argument('--json', help='also write results to this file')
    args = ap.parse_args()
    configure_torch_threads()  # as the explorer runs: one intra-op thread (see cli.configure_torch_threads)
    targets = {30: 0.5, 300: 2.0}
    results = []
    print(f'torch threads: {torch.get_num_threads()}')
    for n in args.sizes:
        r = run(n, args.repeats)
        results.append(r)
        tgt = targets.get(n)
        verdict = '' if tgt is None else f"  target <= {tgt} s: {'met' if r['median_s'] <= tgt else 'MISSED'}"
        print(f"n = {n:4d}: median decision {r['median_s']:.3f} s (fit {r['median_fit_s']:.3f} s), "
              f"max {r['max_s']:.3f} s{verdict}")
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump(results, fh, indent=2)


if __name__ == '__main__':
    main()

"""Decision latency with en-route readings: where the exact GP stops being cheap, and what the capped fit buys.

Issue 10, item 5: "decision latency <= 1 s at 2,000 readings". The data are what the explorer sees with
``en_route_spacing``: 30 measurements (stops) at random targets in a 200 m x 200 m area and ``n - 30`` en-route
readings spaced evenly along the straight legs between them, each with an EKF-like location covariance, readings
from the real elevation field plus noise. For each size ``n`` the script times, with one torch thread, in CPU
seconds of the process (the latency on a core of its own; wall times beside them on a shared machine):

- the components: the hyperparameter fit on all ``n`` readings (``--full-fit-max``: skipped above it) and on the
  capped subset (``fit_max_points``), the posterior cache build (Cholesky of the ``n x n`` kernel matrix and its
  inverse factor), one rank-one growth, and one acquisition maximisation (uGP-UCB, 10 restarts, 512 raw samples);
- decisions as the explorer makes them: each adds one leg (``--leg`` en-route readings and a stop) and calls
  ``suggest()``, which moves the new readings into the GP by rank-one updates, refits the hyperparameters
  (``refit_every = 1``, as the explorer's default) on the capped subset, rebuilds the posterior on all readings and
  maximises the acquisition. Median and p90 over ``--repeats`` decisions.

    PYTHONPATH=. python bench/en_route_latency.py [--sizes 300 1000 2000 4000] [--repeats 5] [--fit-max-points 500]
        [--sparse-above 1000 --inducing-points 500]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

from uncertain_bo.cli import configure_torch_threads
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner
from uncertain_bo.sim.field import Field

STOPS = 30


class Stream:
    """Stops and en-route readings as the explorer hands them to the planner."""

    def __init__(self, planner: Planner, seed: int):
        self.planner, self.rng = planner, np.random.default_rng(seed)
        self.field = Field.default()
        self.position = np.array([100.0, 100.0])

    def _location(self, where: np.ndarray):
        a = self.rng.normal(0, 0.5, (2, 2))
        cov = a @ a.T + 0.05 * np.eye(2)
        y = float(self.field.value(where[None])[0]) + self.rng.normal(0, 1.0)
        return Gaussian(torch.tensor(where[None], dtype=DTYPE), torch.tensor(cov[None], dtype=DTYPE)), y

    def leg(self, en_route: int) -> None:
        target = self.rng.uniform(0, 200, 2)
        for s in np.linspace(0, 1, en_route + 2)[1:-1]:
            loc, y = self._location(self.position + s * (target - self.position) + self.rng.normal(0, 0.5, 2))
            self.planner.observe(None, loc, y, reading_variance=1.0)
        loc, y = self._location(target + self.rng.normal(0, 1.0, 2))
        self.planner.observe(torch.tensor(target, dtype=DTYPE), loc, y, reading_variance=1.0)
        self.position = target


def _timed(fn) -> float:
    """CPU seconds of this process spent in ``fn`` (one torch thread: the latency on a core of its own, whatever
    else the machine runs; :func:`_wall` gives the wall time beside it)."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def _wall(fn) -> tuple[float, float]:
    """``(CPU seconds, wall seconds)`` of ``fn``."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def run(n: int, repeats: int, leg: int, fit_max_points: int, full_fit_max: int, sparse_above: int = 0,
        inducing_points: int = 500, seed: int = 0) -> dict:
    bounds = torch.tensor([[0.0, 0.0], [200.0, 200.0]], dtype=DTYPE)
    planner = Planner(bounds, GaussianExecutionNoise.isotropic(0.75, 2), n_initial=1, seed=seed,
                      fit_max_points=fit_max_points, noise_prior='lognormal', in_box_exploration=True,
                      sparse_above=sparse_above, inducing_points=inducing_points)
    stream = Stream(planner, seed)
    per_leg = max((n - STOPS) // STOPS, 0)
    for i in range(STOPS):
        stream.leg(per_leg + (1 if i < (n - STOPS) - per_leg * STOPS else 0))
    planner.suggest()                     # moves everything into the GP and fits (untimed warm-up)
    model = planner.model
    out: dict = {'n': model.n, 'fit_max_points': fit_max_points, 'sparse_above': sparse_above,
                 'inducing_points': inducing_points, 'posterior': 'exact' if model.inducing is None else 'sparse'}
    torch.manual_seed(seed)
    if model.n <= full_fit_max:
        out['fit_all_s'] = _timed(lambda: model.fit())
    subset = planner.fit_subset()
    out['fit_subset_points'] = model.n if subset is None else int(subset.numel())
    out['fit_subset_s'] = _timed(lambda: model.fit(subset=subset))
    out['cache_build_s'] = _timed(lambda: model._posterior_cache())
    loc, y = stream._location(np.array([50.0, 50.0]))
    out['rank_one_s'] = _timed(lambda: model.append(loc, torch.tensor([y], dtype=DTYPE)))
    planner.refit_every = 0               # acquisition alone: no fit, the cache is warm
    t = []
    for _ in range(3):
        planner.decisions.clear()
        t.append(_timed(planner.suggest))
    out['acquisition_s'] = statistics.median(t)
    if model.inducing is not None:         # the sparse posterior against the exact one on a grid
        g = torch.linspace(2.0, 198.0, 40, dtype=DTYPE)
        grid = torch.cartesian_prod(g, g)
        with torch.no_grad():
            ms, vs = model.marginals(planner.candidates(grid))
            inducing, model.inducing = model.inducing, None
            me, ve = model.marginals(planner.candidates(grid))
            model.inducing = inducing
        spread = float(me.std())
        out['sparse_mean_rmse_over_field_std'] = float((ms - me).pow(2).mean().sqrt()) / spread
        out['sparse_std_ratio_median'] = float((vs / ve).median())
    planner.refit_every = 1
    times, walls, fits = [], [], []
    for _ in range(repeats):
        stream.leg(leg)
        cpu, wall = _wall(planner.suggest)
        times.append(cpu)
        walls.append(wall)
        fits.append(planner.decisions[-1].fit_seconds)
    times.sort()
    out.update({'decisions': repeats, 'median_s': statistics.median(times),
                'p90_s': times[min(len(times) - 1, int(np.ceil(0.9 * len(times))) - 1)],
                'median_wall_s': statistics.median(walls), 'median_fit_wall_s': statistics.median(fits),
                'times_s': times, 'n_final': planner.model.n})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sizes', type=int, nargs='+', default=[300, 1000, 2000, 4000])
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--leg', type=int, default=20, help='en-route readings added before each timed decision')
    ap.add_argument('--fit-max-points', type=int, default=500)
    ap.add_argument('--full-fit-max', type=int, default=1000, help='time the fit on all readings up to this n')
    ap.add_argument('--sparse-above', type=int, default=0, help='sparse posterior beyond this many readings (0: exact)')
    ap.add_argument('--inducing-points', type=int, default=500)
    ap.add_argument('--json', help='also write results to this file')
    args = ap.parse_args()
    configure_torch_threads()
    print(f'torch threads: {torch.get_num_threads()}, fit_max_points = {args.fit_max_points}, sparse_above = '
          f'{args.sparse_above}, inducing_points = {args.inducing_points}')
    results = []
    for n in args.sizes:
        r = run(n, args.repeats, args.leg, args.fit_max_points, args.full_fit_max, args.sparse_above,
                args.inducing_points)
        results.append(r)
        full = f"fit(all) {r['fit_all_s']:.2f} s, " if 'fit_all_s' in r else ''
        verdict = f"  target <= 1 s: {'met' if r['median_s'] <= 1.0 else 'MISSED'}" if n == 2000 else ''
        print(f"n = {r['n']:5d} ({r['posterior']}): decision median {r['median_s']:.3f} s, p90 {r['p90_s']:.3f} s "
              f"(wall {r['median_wall_s']:.3f} s, fit wall {r['median_fit_wall_s']:.3f} s) | "
              f"{full}fit({r['fit_subset_points']}) {r['fit_subset_s']:.2f} s, "
              f"cache {r['cache_build_s']:.3f} s, rank-one {r['rank_one_s'] * 1e3:.1f} ms, "
              f"acquisition {r['acquisition_s']:.3f} s{verdict}"
              + (f" | sparse vs exact: mean RMSE {r['sparse_mean_rmse_over_field_std']:.3f} field std, std ratio "
                 f"{r['sparse_std_ratio_median']:.2f}" if 'sparse_std_ratio_median' in r else ''), flush=True)
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump(results, fh, indent=2)


if __name__ == '__main__':
    main()

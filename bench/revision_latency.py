"""Decision time with revised locations at n = 300 readings, against the same stream without revisions.

Issue 32's target: "keep decisions <= 0.5 s median at n = 300 with revisions". The data are en_route_latency.py's
stream (30 stops at random targets in a 200 m x 200 m area, en-route readings evenly along the legs, EKF-like
location covariances, the real elevation field plus noise), grown to ``--n`` readings with the explorer's defaults
(``refit_every = 1``, ``fit_max_points = 150``, exact posterior below ``sparse_above = 1000``). Then ``--repeats``
timed decisions, each after one more leg (``--leg`` en-route readings and a stop), in three scenarios on the same
stream:

- ``none``: no revision (the baseline);
- ``smoother``: before each decision a fixed-lag smoother revises the readings of the last two legs (a fix at the
  stop: means moved by a few decimetres, covariances shrunk);
- ``loop closure``: before each decision every stored reading is revised (a rigid correction of the whole past).

The planner journals to ``--journal-dir`` (default: a temporary folder): ``Planner.revise`` writes each revision
durably before it applies it, so its time (CPU and wall) is reported beside the decision's. And the components at
``n`` with the cache warm and hyperparameters fixed: a full rebuild of the exact posterior (``ExactPrediction.build``:
kernel matrix, Cholesky, inverse factor), the refactorisation the planner uses (``refactor_from``: rows from the first
revised one on), and for reference a low-rank (Woodbury) update of a dense inverse for the same rows, which the cache
could not use as is (it keeps the inverse Cholesky factor that marginals and joint covariances read).

CPU seconds of the process with one torch thread (the latency on a core of its own), wall seconds beside them.

    PYTHONPATH=. python bench/revision_latency.py [--n 300] [--repeats 7] [--leg 10] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from en_route_latency import STOPS, Stream, _timed, _wall   # noqa: E402  (the same stream and clocks)

from uncertain_bo.cli import configure_torch_threads                     # noqa: E402
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise   # noqa: E402
from uncertain_bo.models.prediction import ExactPrediction               # noqa: E402
from uncertain_bo.planning.planner import LocationRevision, Planner               # noqa: E402

SCENARIOS = ('none', 'smoother', 'loop closure')


def revisions(planner: Planner, scenario: str, leg: int, stamp: float, rng: np.random.Generator):
    """The revisions a scenario hands the planner before a decision."""
    readings = planner.readings
    if scenario == 'smoother':
        readings = readings[-2 * (leg + 1):]
    shift = rng.normal(0, 0.3, 2) if scenario == 'smoother' else np.array([1.5, -1.0])
    out = []
    for r in readings:
        loc = planner.observations.rows[planner.observations.row_of(*r.key)][1]
        mean = loc.mean + torch.tensor(shift, dtype=DTYPE)
        out.append(LocationRevision(r.key, Gaussian(mean, loc.covariance * 0.5), stamp, scenario))
    return out


def build(n: int, seed: int, journal: str | None) -> tuple[Planner, Stream]:
    bounds = torch.tensor([[0.0, 0.0], [200.0, 200.0]], dtype=DTYPE)
    planner = Planner(bounds, GaussianExecutionNoise.isotropic(0.75, 2), n_initial=1, seed=seed, fit_max_points=150,
                      sparse_above=1000, noise_prior='lognormal', in_box_exploration=True, journal=journal)
    stream = Stream(planner, seed)
    per_leg = max((n - STOPS) // STOPS, 0)
    for i in range(STOPS):
        stream.leg(per_leg + (1 if i < (n - STOPS) - per_leg * STOPS else 0))
    planner.suggest()                     # moves everything into the GP and fits (untimed warm-up)
    return planner, stream


def decisions(scenario: str, n: int, repeats: int, leg: int, journal_dir: str, seed: int = 0) -> dict:
    planner, stream = build(n, seed, os.path.join(journal_dir, f'{scenario.replace(" ", "_")}.jsonl'))
    rng = np.random.default_rng(seed)
    cpu, wall, revise_cpu, revise_wall, revised = [], [], [], [], []
    for i in range(repeats):
        stream.leg(leg)
        if scenario != 'none':
            revs = revisions(planner, scenario, leg, 1000.0 + i, rng)
            c, w = _wall(lambda: planner.revise(revs))
            revise_cpu.append(c)
            revise_wall.append(w)
            revised.append(len(revs))
        c, w = _wall(planner.suggest)
        cpu.append(c)
        wall.append(w)
    assert not planner.revisions_rejected
    return {'scenario': scenario, 'n_first': n + leg + 1, 'n_last': planner.model.n, 'decisions': repeats,
            'median_s': statistics.median(cpu), 'max_s': max(cpu), 'median_wall_s': statistics.median(wall),
            'revised_per_decision': statistics.median(revised) if revised else 0,
            'revise_median_s': statistics.median(revise_cpu) if revise_cpu else 0.0,
            'revise_median_wall_s': statistics.median(revise_wall) if revise_wall else 0.0, 'times_s': cpu}


def components(n: int, lag: int, seed: int = 0) -> dict:
    planner, _ = build(n, seed, None)
    planner.refit_every = 0
    model = planner.model
    cache = model._posterior_cache()
    n = model.n
    out = {'n': n, 'rows_revised_smoother': lag}
    reps = 5
    with torch.no_grad():
        out['rebuild_s'] = statistics.median(_timed(lambda: ExactPrediction.build(model)) for _ in range(reps))
        for name, start in (('refactor_smoother_s', n - lag), ('refactor_all_s', 0)):
            out[name] = statistics.median(_timed(lambda: cache.refactor_from(model, start)) for _ in range(reps))
    # the low-rank reference: K^{-1} of the revised matrix from K^{-1} (dense) by Woodbury, rank 2k
    with torch.no_grad():
        enc = model.encode(model.train_locations).detach()
        k = model.covar_module.forward(enc, enc) + torch.diag(model.noise_diagonal())
        kinv = torch.cholesky_inverse(torch.linalg.cholesky(k))
        rows = torch.arange(n - lag, n)
        moved = enc.clone()
        moved[rows, :2] += 0.01
        k_new = model.covar_module.forward(moved, moved) + torch.diag(model.noise_diagonal())
        delta = k_new - k

        def woodbury():
            e = torch.zeros(n, lag, dtype=DTYPE)
            e[rows, torch.arange(lag)] = 1.0
            d_cols = delta[:, rows].clone()
            d_cols[rows] *= 0.5                      # the corner block split between the two factors
            u = torch.cat([e, d_cols], 1)            # delta = u v^T
            v = torch.cat([d_cols, e], 1)
            ku = kinv @ u
            small = torch.eye(2 * lag, dtype=DTYPE) + v.T @ ku
            return kinv - ku @ torch.linalg.solve(small, v.T @ kinv)

        out['woodbury_smoother_s'] = statistics.median(_timed(woodbury) for _ in range(reps))
        exact = torch.cholesky_inverse(torch.linalg.cholesky(k_new))
        out['woodbury_max_error'] = float((woodbury() - exact).abs().max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=300)
    ap.add_argument('--repeats', type=int, default=7)
    ap.add_argument('--leg', type=int, default=10, help='en-route readings added before each timed decision')
    ap.add_argument('--journal-dir', default=None, help='where the planners journal (default: a temporary folder)')
    ap.add_argument('--json', help='also write results to this file')
    args = ap.parse_args()
    configure_torch_threads()
    results = {'components': None, 'decisions': []}
    with tempfile.TemporaryDirectory() as tmp:
        journal_dir = args.journal_dir or tmp
        for scenario in SCENARIOS:
            r = decisions(scenario, args.n, args.repeats, args.leg, journal_dir)
            results['decisions'].append(r)
            print(f"{scenario:>12}: decision median {r['median_s']:.3f} s (max {r['max_s']:.3f} s, wall "
                  f"{r['median_wall_s']:.3f} s) at n = {r['n_first']}..{r['n_last']}"
                  + (f"; {r['revised_per_decision']:.0f} readings revised per decision, Planner.revise "
                     f"{r['revise_median_s'] * 1e3:.1f} ms CPU, {r['revise_median_wall_s'] * 1e3:.1f} ms wall "
                     '(journaled)' if scenario != 'none' else ''), flush=True)
    c = results['components'] = components(args.n, 2 * (args.leg + 1))
    print(f"components at n = {c['n']}: full rebuild {c['rebuild_s'] * 1e3:.1f} ms, refactor from the last "
          f"{c['rows_revised_smoother']} rows {c['refactor_smoother_s'] * 1e3:.1f} ms, refactor all "
          f"{c['refactor_all_s'] * 1e3:.1f} ms, Woodbury (dense inverse, reference) for the last "
          f"{c['rows_revised_smoother']} rows {c['woodbury_smoother_s'] * 1e3:.1f} ms "
          f"(max error {c['woodbury_max_error']:.1e})")
    target = results['decisions']
    verdict = all(r['median_s'] <= 0.5 for r in target)
    print(f"target: decisions <= 0.5 s median at n = {args.n} with revisions: {'met' if verdict else 'NOT MET'}")
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump(results, fh, indent=2)


if __name__ == '__main__':
    main()

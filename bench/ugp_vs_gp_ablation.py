"""Why uGP-UCB and GP-UCB differ on the rover: a ladder of variants between them, on a field suite.

``gp_ucb`` trains its GP on the commanded targets as points and scores candidate targets as points; ``ugp_ucb``
trains on the location distributions of the localisation filter (mean and covariance, the expected SE kernel) and
scores a candidate target x by its execution-noise distribution P̂_x. The variants in between change one of the
two at a time:

================================  ===========================================  ===================
variant                           GP inputs                                    candidates
================================  ===========================================  ===================
``gp_ucb``                        commanded targets (points)                   points
``ablate_target_robust``          commanded targets (points)                   P̂_x
``ablate_mean_point``             location means of the filter (points)        points
``ablate_gaussian_point``         location distributions (mean, covariance)    points
``ugp_ucb``                       location distributions (mean, covariance)    P̂_x
================================  ===========================================  ===================

Everything else is the shipped explorer configuration (in-box exploration, highest-reading recommendation, β = 3);
``in_box_exploration`` is switched with ``--explorer-param in_box_exploration=false`` like any explorer parameter.
The variants exist only in this script (registered at import, run in this process: ``--n-jobs`` is forced to 1;
run several copies of the script on different variants to use more cores). Every run records the final
hyperparameters (``planner.hyperparameters`` in its JSON), so the fitted lengthscales are compared on the same runs.

Usage::

    python bench/ugp_vs_gp_ablation.py --variants ablate_mean_point,ablate_gaussian_point \\
        --suite fields:tuning --seeds 16 --out runs/ablation
    python bench/ugp_vs_gp_ablation.py --report runs/ablation runs/base   # per-field medians, paired tests

The report reads every run directory given (``<dir>/runs/*.json`` of ``uncertain-bo bench``) and pairs each variant
with ``gp_ucb`` and ``ugp_ucb`` over shared (field, seed) pairs (two-sided Wilcoxon signed-rank).
"""
from __future__ import annotations

import argparse
import glob
import json
import re
import statistics
import sys

from uncertain_bo.acquisition.igp_ucb import IGPUCB
from uncertain_bo.acquisition.method import register
from uncertain_bo.acquisition.ugp_ucb import UGPUCB
from uncertain_bo.distributions import Dirac
from uncertain_bo.planning.planner import Planner

VARIANTS = ('ablate_target_robust', 'ablate_mean_point', 'ablate_gaussian_point')


@register
class TargetRobust(IGPUCB):
    name = 'ablate_target_robust'
    description = 'ablation: GP on commanded targets, candidates scored through the execution-noise model'
    robust_candidates = True


@register
class GaussianPoint(UGPUCB):
    name = 'ablate_gaussian_point'
    description = 'ablation: GP on location distributions, candidates scored as points'
    robust_candidates = False


@register
class MeanPoint(UGPUCB):
    name = 'ablate_mean_point'
    description = "ablation: GP on the location distributions' means as points, candidates scored as points"
    robust_candidates = False


_gp_input = Planner._gp_input


def _mean_input(self, target, location):
    """The location distribution's mean as a point for ``ablate_mean_point``; the planner's rule otherwise."""
    if self.method == MeanPoint.name:
        return Dirac(location.mean.reshape(1, -1))
    return _gp_input(self, target, location)


Planner._gp_input = _mean_input


def _runs(dirs):
    out = {}
    for d in dirs:
        for f in glob.glob(f'{d}/runs/*.json'):
            m = re.search(r'rover__(\w+?)__(.*)field=([a-z0-9-]+)(.*?)__seed(\d+)', f)
            if not m:
                continue
            run = json.load(open(f))
            # the method, and the explorer parameters the run changed (the bench writes them after the field)
            extra = m[4].strip('_')
            tag = m[1] + (f'+{extra}' if extra else '')
            out[(tag, m[3], int(m[5]))] = run
    return out


def report(dirs) -> None:
    from scipy.stats import wilcoxon
    runs = _runs(dirs)
    methods = sorted({k[0] for k in runs})
    fields = sorted({k[1] for k in runs})

    def value(run, what):
        fin = run['final']
        if what == 'lengthscale':
            return min(run['planner']['hyperparameters']['lengthscale'])
        return fin[what]

    for what in ('rule_highest_reading', 'best_visited_normalised_regret', 'distance_driven_m', 'lengthscale'):
        print(f'\n## {what}: median per field; paired against gp_ucb / ugp_ucb (lower / higher, p)\n')
        print('| variant | ' + ' | '.join(fields) + ' | all: vs gp_ucb | all: vs ugp_ucb |')
        print('|---' * (len(fields) + 3) + '|')
        for m in methods:
            cells, pairs = [], {'gp_ucb': ([], []), 'ugp_ucb': ([], [])}
            for f in fields:
                seeds = sorted(s for (mm, ff, s) in runs if mm == m and ff == f)
                vals = [value(runs[(m, f, s)], what) for s in seeds]
                cells.append(f'{statistics.median(vals):.3g}' if vals else '-')
                for ref in pairs:
                    for s in seeds:
                        if (ref, f, s) in runs:
                            pairs[ref][0].append(value(runs[(m, f, s)], what))
                            pairs[ref][1].append(value(runs[(ref, f, s)], what))
            tests = []
            for ref, (a, b) in pairs.items():
                diff = [x - y for x, y in zip(a, b)]
                if m == ref or not any(diff):
                    tests.append('-')
                    continue
                tests.append(f'{sum(d < 0 for d in diff)} / {sum(d > 0 for d in diff)}, '
                             f'p = {wilcoxon(a, b).pvalue:.2g}')
            print(f'| {m} | ' + ' | '.join(cells) + ' | ' + ' | '.join(tests) + ' |')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--variants', default=','.join(VARIANTS))
    ap.add_argument('--report', nargs='+', metavar='DIR', help='report the runs in these bench output directories')
    args, rest = ap.parse_known_args(argv)
    if args.report:
        report(args.report)
        return 0
    unknown = set(args.variants.split(',')) - set(VARIANTS) - {'gp_ucb', 'ugp_ucb'}
    if unknown:
        print(f'unknown variant(s) {", ".join(sorted(unknown))}; known: {", ".join(VARIANTS)}', file=sys.stderr)
        return 2
    from uncertain_bo.cli import main as cli
    return cli(['bench', '--problem', 'rover', '--method', args.variants, *rest, '--n-jobs', '1'])


if __name__ == '__main__':
    sys.exit(main())

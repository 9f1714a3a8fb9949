"""Where a recommendation over past measurements should point when targets are reached: the commanded target or
the location mean of its reading (docs/methods.md, "The recommendation names a place that was measured").

On the paper-style world of ``test/planning/test_planner.py`` (a tall narrow bump and a broad robust one on [0, 1]²,
execution noise 0.08, localisation noise 0.04, uGP-UCB, 25 measurements, every target reached), per seed: the
normalised robust regret ``(g* - g(x)) / g*`` of ``'past_mean'`` ranked over the targets and over the location
means (clamped into the box), and of the highest reading at its target and at its location mean, then the medians
and paired Wilcoxon p-values. No assertions.

Usage::

    .venv/bin/python bench/recommendation_place.py [--seeds 16]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.stats import wilcoxon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'test'))
from planning.test_planner import g, run  # noqa: E402  (the test's world and its closed-form robust objective)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=16)
    args = ap.parse_args()
    g_star = float(g(torch.tensor([[0.7, 0.7]])))
    rows = []
    print('seed  past_mean@target  past_mean@location  highest@target  highest@location')
    for seed in range(args.seeds):
        p = run(seed)
        p.recommend('past_mean')                                   # a fit that is due
        locations = p.locations.mean.clamp(0.0, 1.0)
        with torch.no_grad():
            at_targets, _ = p.model.marginals(p.candidates(p.targets))
            at_locations, _ = p.model.marginals(p.candidates(locations))
        best = int(torch.argmax(p.y))
        places = [p.targets[int(torch.argmax(at_targets))], locations[int(torch.argmax(at_locations))],
                  p.targets[best], locations[best]]
        rows.append([(g_star - float(g(x.reshape(1, 2)))) / g_star for x in places])
        print(f'{seed:4d}  ' + '  '.join(f'{v:16.4f}' for v in rows[-1]), flush=True)
    a = np.array(rows)
    for name, i in (('past_mean', 0), ('highest reading', 2)):
        print(f'{name}: median at the target {np.median(a[:, i]):.4f}, at the location mean '
              f'{np.median(a[:, i + 1]):.4f}; the location mean better on {(a[:, i + 1] < a[:, i]).sum()} of '
              f'{len(a)}, Wilcoxon p = {wilcoxon(a[:, i], a[:, i + 1]).pvalue:.3g}')


if __name__ == '__main__':
    main()

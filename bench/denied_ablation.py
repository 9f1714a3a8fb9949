"""Ablation of issue 32's mechanisms on a part of the ``denied`` suite: runs of several configurations of one method
(one ``uncertain-bo bench --suite`` output directory each, same seeds), drawn on one regret-against-distance figure
(:func:`uncertain_bo.benchmarks.suite_report.plot_regret_vs_distance`: median curves per field and over the fields,
the median final point with interquartile bars) and tabulated as Markdown: per configuration the median final
normalised regret and distance over all (field, seed) pairs with their interquartile ranges, and the paired Wilcoxon
signed-rank test against the first configuration (pairs matched by field and seed).

Usage::

    python bench/denied_ablation.py --suite denied:tuning --out docs/img/denied_ablation.png \\
        'both off=runs/final/denied_base' 'smoothing on=runs/smooth/on' 're-localisation on=runs/relocalise/on'
"""
import argparse
import sys

import numpy as np
from scipy.stats import wilcoxon

from uncertain_bo.benchmarks.runner import load_runs
from uncertain_bo.benchmarks.suite_report import plot_regret_vs_distance


def finals(runs) -> dict:
    """``{(field, seed): (regret, distance)}``: each run's final own-recommendation regret and distance (m)."""
    return {(r['spec']['settings'].get('field'), r['spec']['seed']):
            (r['final']['rec_normalised_regret'], r['final']['distance_driven_m']) for r in runs}


def quartiles(v) -> str:
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return f'{med:.3f} [{q1:.3f}, {q3:.3f}]' if med < 10 else f'{med:.0f} [{q1:.0f}, {q3:.0f}]'


def paired(a: dict, b: dict, k: int) -> str:
    keys = sorted(set(a) & set(b))
    d = np.array([a[x][k] - b[x][k] for x in keys])
    if not np.any(d):
        return f'{len(keys)} pairs, all equal'
    return f'{int((d < 0).sum())} / {int((d > 0).sum())}, p = {wilcoxon(d).pvalue:.2g}'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('configs', nargs='+', help="LABEL=DIR: a bench --suite output directory; the first is the "
                                               'reference of the paired tests')
    ap.add_argument('--suite', required=True, help='NAME:PART of the runs (field order of the figure)')
    ap.add_argument('--out', required=True, help='the PNG to write')
    args = ap.parse_args(argv)
    everything, table = [], []
    for item in args.configs:
        label, _, directory = item.rpartition('=')
        runs = load_runs(directory)
        for r in runs:                   # the figure's legend names the configuration by its label
            r['spec'] = {**r['spec'], 'method': label, 'variant': 'beta=-', 'settings': {
                **r['spec']['settings'], 'explorer': [], 'problem': [], 'sim': []}}
        everything += runs
        table.append((label, finals(runs)))
    plot_regret_vs_distance(everything, args.out, args.suite)
    ref_label, ref = table[0]
    print(f'| configuration | pairs | regret, median [IQR] | distance m, median [IQR] | regret lower / higher than '
          f'{ref_label}, p | distance lower / higher, p |')
    print('|---|---|---|---|---|---|')
    for label, f in table:
        v = np.array(list(f.values()))
        tests = ('–', '–') if f is ref else (paired(f, ref, 0), paired(f, ref, 1))
        print(f'| {label} | {len(f)} | {quartiles(v[:, 0])} | {quartiles(v[:, 1])} | {tests[0]} | {tests[1]} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())

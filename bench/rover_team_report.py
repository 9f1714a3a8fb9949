"""Rover teams (issue 23): regret against the team's mission time and total distance, from ``rover-team`` runs.

Reads the runs of one or more ``uncertain-bo bench --problem rover-team`` output folders (``DIR/runs/*.json``) and
prints Markdown tables, one row per configuration (method, rovers, sharing; the ``pending=false`` ablation and any
``--explorer-param`` are named in the row):

1. per configuration (method, rovers, sharing): the final normalised recommendation regret, the team's mission
   time (simulated s until the 30th measurement: the slowest rover's clock) and the team's total distance (m), medians
   over seeds;
2. the time to reach the 1-rover explorer's final regret: for each seed, the team mission time of the first
   measurement after which the N-rover run's recommendation regret is at or below the 1-rover ``ugp_ucb`` run's
   final regret (same seed), divided by that 1-rover run's mission time; the median ratio, how many seeds reached it
   at all within the team's 30 measurements, and how many within 0.45x (the issue's target);
3. the regret at equal team mission time ``T`` and at equal total distance ``D``: each run's recommendation regret
   after its last measurement at or before ``T`` (``D``); a run already finished keeps its final recommendation; a run
   with no measurement yet counts as regret 1 (the median of the field); paired by seed against the 3-rover shared
   explorer, two-sided Wilcoxon signed-rank p-values (scipy); and the final regret, mission time and distance of
   every configuration with as many rovers paired the same way against it (batch rules against fantasies).
4. with ``--latency DIR``: the decision wall time (s) of decisions made with 2 pending targets, by the number of
   measurements the planner held when it decided, from a long run (``--iterations 90 --problem-param rovers=3``).

With ``--by-field`` (runs of several fields, e.g. one ``bench --field NAME`` folder per field of the field suite) it
prints instead one row per field and a row over all fields for the issue's targets: the 1-rover explorer's final
regret and mission time, the 3-rover shared team's, how many seeds reach the 1-rover regret within 0.45x its mission
time, and the regret at equal team mission time ``T`` of the 3-rover shared team against 3 independent explorers
and 3 partitioned lawnmowers (median, two-sided Wilcoxon p paired by seed; in the row over all fields, medians of
the per-field medians and p paired by (field, seed); the time ratio's median is over every (field, seed)). Mission
times differ between fields (where the targets lie, how far apart), so ``T`` is each of ``--fractions`` times the
1-rover explorer's median mission time on that field. A second table gives each field's shared ``ugp_ucb`` teams by
size (1, 2, 3 rovers: whichever were run): final regret, mission time and total distance.

Usage::

    .venv/bin/python bench/rover_team_report.py OUT/shared OUT/independent [OUT/nopending ...] [--times 250,350,450]
        [--distances 800,1200] [--latency OUT/n90]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from scipy.stats import wilcoxon


def load(dirs, field=None):
    """``{(method, rovers, sharing, seed): run}`` of the runs in ``DIR/runs/*.json`` (only ``field``'s if given)."""
    runs = {}
    for d in dirs:
        for path in sorted(Path(d, 'runs').glob('*.json')):
            r = json.loads(path.read_text())
            if field is not None and r['spec']['settings'].get('field') != field:
                continue
            params = dict(r['spec']['settings'].get('problem', []))
            rovers = int(params.get('rovers', 1))
            sharing = bool(params.get('sharing', True)) and r['spec']['method'] not in ('lawnmower', 'random')
            method = r['spec']['method'] + ('' if params.get('pending', True) else ' (no pending targets)')
            method += ''.join(f', {k}={v:g}' if isinstance(v, float) else f', {k}={v}'
                              for k, v in r['spec']['settings'].get('explorer', []))
            runs[(method, rovers, sharing, r['spec']['seed'])] = r
    return runs


def label(method, rovers, sharing):
    if method == 'lawnmower':
        return f'{rovers} lawnmower{"s" if rovers > 1 else ""} (strips)'
    if method == 'random':
        return f'{rovers} random tour{"s" if rovers > 1 else ""}'
    if method.endswith(' (no pending targets)'):
        return f'{rovers} {method.split()[0]} explorers, shared model, no pending targets (ablation)'
    base, _, explorer = method.partition(', ')
    explorer = f' ({explorer})' if explorer else ''
    if rovers == 1:
        return f'1 {base} explorer{explorer}'
    return f'{rovers} {base} explorers, {"shared model" if sharing else "independent"}{explorer}'


def at(records, key, limit):
    """Recommendation regret after the last measurement with ``key`` <= ``limit`` (1.0 before any)."""
    seen = [r for r in records if r[key] <= limit]
    return seen[-1]['rec_nregret'] if seen else 1.0


def med(values):
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else math.nan


def fields_of(dirs):
    """The fields of the runs in ``dirs``, in the order first met."""
    seen = {}
    for d in dirs:
        for path in sorted(Path(d, 'runs').glob('*.json')):
            seen.setdefault(json.loads(path.read_text())['spec']['settings'].get('field'), None)
    return list(seen)


def time_ratios(runs, config):
    """Per seed: the team mission time at which ``config`` first reaches the 1-rover explorer's final regret, over
    that explorer's mission time (inf: never within its budget)."""
    out = {}
    for (m, n, s, seed), run in runs.items():
        one = runs.get(('ugp_ucb', 1, True, seed))
        if (m, n, s) != config or one is None:
            continue
        goal, t1 = one['final']['rec_normalised_regret'], one['final']['mission_time_s']
        hit = [r['sim_time'] for r in run['records'] if r['rec_nregret'] <= goal]
        out[seed] = hit[0] / t1 if hit else math.inf
    return out


def by_field(dirs, fractions):
    """The per-field table of the issue's targets (module docstring, ``--by-field``)."""
    ref, one = ('ugp_ucb', 3, True), ('ugp_ucb', 1, True)
    others = {'3 independent': ('ugp_ucb', 3, False), '3 lawnmowers': ('lawnmower', 3, False)}
    head = ['field', 'seeds', '1 rover: regret / time s', '3 shared: regret / time s', 'seeds <= 0.45x (median ratio)']
    head += [f'{f:g}x: 3 shared vs {name}' for f in fractions for name in others]
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '---|' * len(head))
    pooled = defaultdict(list)      # column -> [(mine, theirs)] over (field, seed)
    per_field = defaultdict(list)   # column -> per-field medians
    for fld in fields_of(dirs):
        runs = load(dirs, fld)
        seeds = sorted(s for (m, n, sh, s) in runs if (m, n, sh) == ref and (*one, s) in runs)
        if not seeds:
            continue
        cells = [fld, str(len(seeds))]
        t_one = med([runs[(*one, s)]['final']['mission_time_s'] for s in seeds])
        for c in (one, ref):
            reg, t = (med([runs[(*c, s)]['final'][k] for s in seeds])
                      for k in ('rec_normalised_regret', 'mission_time_s'))
            per_field[c].append((reg, t))
            cells.append(f'{reg:.3f} / {t:.0f}')
        ratios = time_ratios(runs, ref)
        rs = [ratios[s] for s in seeds]
        pooled['ratios'].extend(rs)
        cells.append(f'{sum(x <= 0.45 for x in rs)}/{len(rs)} ({statistics.median(rs):.2f})')
        for f in fractions:
            T = f * t_one
            for name, c in others.items():
                common = [s for s in seeds if (*c, s) in runs]
                mine = [at(runs[(*ref, s)]['records'], 'sim_time', T) for s in common]
                theirs = [at(runs[(*c, s)]['records'], 'sim_time', T) for s in common]
                pooled[(f, name)].extend(zip(mine, theirs))
                per_field[(f, name)].append((med(mine), med(theirs)))
                diffs = [a - b for a, b in zip(mine, theirs)]
                p = wilcoxon(diffs).pvalue if any(diffs) else 1.0
                cells.append(f'{med(mine):.3f} vs {med(theirs):.3f} (p={p:.3f})')
        print('| ' + ' | '.join(cells) + ' |')
    if not per_field:
        return
    ratios = pooled['ratios']
    cells = ['median over fields', str(len(ratios))]
    for c in (one, ref):
        cells.append(f'{med([r for r, _ in per_field[c]]):.3f} / {med([t for _, t in per_field[c]]):.0f}')
    cells.append(f'{sum(x <= 0.45 for x in ratios)}/{len(ratios)} ({statistics.median(ratios):.2f}, over all seeds)')
    for f in fractions:
        for name in others:
            pairs = pooled[(f, name)]
            diffs = [a - b for a, b in pairs]
            p = wilcoxon(diffs).pvalue if any(diffs) else 1.0
            mf = per_field[(f, name)]
            cells.append(f'{med([a for a, _ in mf]):.3f} vs {med([b for _, b in mf]):.3f} (p={p:.3f})')
    print('| ' + ' | '.join(cells) + ' |')


def team_sizes(dirs):
    """Per field, the shared ``ugp_ucb`` team of each size N: final regret, mission time (s) and total distance (m),
    medians over seeds, and the median of the per-field medians (``--by-field``)."""
    keys = ('rec_normalised_regret', 'mission_time_s', 'distance_driven_m')
    table, sizes = {}, set()
    for fld in fields_of(dirs):
        runs = load(dirs, fld)
        by_n = defaultdict(list)
        for (m, n, shared, _), run in runs.items():
            if m == 'ugp_ucb' and shared:
                by_n[n].append(run['final'])
        table[fld] = {n: ([med([f[k] for f in finals]) for k in keys], len(finals)) for n, finals in by_n.items()}
        sizes |= set(by_n)
    sizes = sorted(sizes)
    print('\nShared ugp_ucb teams by size: final regret / mission time s / total distance m (medians over seeds):\n')
    print('| field | ' + ' | '.join(f'{n} rover{"s" if n > 1 else ""} (seeds)' for n in sizes) + ' |')
    print('|---|' + '---|' * len(sizes))
    for fld, row in table.items():
        cells = [f'{row[n][0][0]:.3f} / {row[n][0][1]:.0f} / {row[n][0][2]:.0f} ({row[n][1]})' if n in row else '-'
                 for n in sizes]
        print(f'| {fld} | ' + ' | '.join(cells) + ' |')
    cells = []
    for n in sizes:
        vals = [row[n][0] for row in table.values() if n in row]
        cells.append(' / '.join(f'{med([v[i] for v in vals]):{fmt}}' for i, fmt in enumerate(('.3f', '.0f', '.0f')))
                     + f' ({len(vals)} fields)')
    print('| median over fields | ' + ' | '.join(cells) + ' |')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('dirs', nargs='+')
    ap.add_argument('--times', default='250,350,450')
    ap.add_argument('--distances', default='800,1200')
    ap.add_argument('--latency', default=None)
    ap.add_argument('--by-field', action='store_true', help='one row per field (runs of several fields)')
    ap.add_argument('--fractions', default='0.25,0.35,0.45',
                    help='--by-field: equal-time points as fractions of the 1-rover mission time')
    args = ap.parse_args()
    if args.by_field:
        by_field(args.dirs, [float(x) for x in args.fractions.split(',')])
        team_sizes(args.dirs)
        return
    runs = load(args.dirs)
    configs = sorted({k[:3] for k in runs}, key=lambda c: (not c[0].startswith('ugp_ucb'), c[0], not c[2], c[1]))
    seeds = defaultdict(list)
    for (m, n, s, seed) in runs:
        seeds[(m, n, s)].append(seed)

    print('| team | seeds | final regret (median) | mission time s (median) | total distance m (median) |')
    print('|---|---|---|---|---|')
    for c in configs:
        rs = [runs[(*c, s)] for s in sorted(seeds[c])]
        print(f'| {label(*c)} | {len(rs)} | {med([r["final"]["rec_normalised_regret"] for r in rs]):.3f} | '
              f'{med([r["final"]["mission_time_s"] for r in rs]):.0f} | '
              f'{med([r["final"]["distance_driven_m"] for r in rs]):.0f} |')

    print('\nTime to reach the 1-rover explorer\'s final regret (same seed), as a share of its mission time:\n')
    print('| team | seeds | reached | median time ratio | seeds <= 0.45x |')
    print('|---|---|---|---|---|')
    for c in configs:
        ratios = []
        for seed in sorted(seeds[c]):
            one = runs.get(('ugp_ucb', 1, True, seed))   # the shipped 1-rover explorer
            if one is None:
                continue
            goal, t1 = one['final']['rec_normalised_regret'], one['final']['mission_time_s']
            hit = [r['sim_time'] for r in runs[(*c, seed)]['records'] if r['rec_nregret'] <= goal]
            ratios.append(hit[0] / t1 if hit else math.inf)
        if ratios:
            reached = [x for x in ratios if math.isfinite(x)]
            print(f'| {label(*c)} | {len(ratios)} | {len(reached)} | {statistics.median(ratios):.2f} | '
                  f'{sum(x <= 0.45 for x in ratios)} |')

    ref = ('ugp_ucb', 3, True)
    print(f'\nFinal values paired by seed against {label(*ref)} (median; p: two-sided Wilcoxon signed-rank):\n')
    print('| team | seeds | final regret | mission time s | total distance m |')
    print('|---|---|---|---|---|')
    finals = (('rec_normalised_regret', '.3f'), ('mission_time_s', '.0f'), ('distance_driven_m', '.0f'))
    for c in configs:
        common = sorted(set(seeds[c]) & set(seeds.get(ref, [])))
        if not common or c[1] != ref[1]:
            continue
        cells = []
        for key, fmt in finals:
            mine = [runs[(*c, s)]['final'][key] for s in common]
            cell = f'{med(mine):{fmt}}'
            if c != ref:
                diffs = [a - runs[(*ref, s)]['final'][key] for a, s in zip(mine, common)]
                cell += f' (p={wilcoxon(diffs).pvalue if any(diffs) else 1.0:.3f})'
            cells.append(cell)
        print(f'| {label(*c)} | {len(common)} | ' + ' | '.join(cells) + ' |')

    for key, limits, unit in (('sim_time', args.times, 's'), ('distance_driven', args.distances, 'm')):
        what = 'team mission time' if key == 'sim_time' else 'total team distance'
        print(f'\nRegret at equal {what} (median over seeds; p: Wilcoxon signed-rank against '
              f'{label(*ref)}, paired by seed):\n')
        limits = [float(x) for x in limits.split(',')]
        print('| team | ' + ' | '.join(f'{x:g} {unit}' for x in limits) + ' |')
        print('|---|' + '---|' * len(limits))
        for c in configs:
            cells = []
            for x in limits:
                common = sorted(set(seeds[c]) & set(seeds.get(ref, [])))
                mine = [at(runs[(*c, s)]['records'], key, x) for s in common]
                cell = f'{med(mine):.3f}'
                if c != ref and common:
                    theirs = [at(runs[(*ref, s)]['records'], key, x) for s in common]
                    diffs = [a - b for a, b in zip(mine, theirs)]
                    p = wilcoxon(diffs).pvalue if any(diffs) else 1.0
                    cell += f' (p={p:.3f})'
                cells.append(cell)
            print(f'| {label(*c)} | ' + ' | '.join(cells) + ' |')

    if args.latency:
        print('\nDecision time with 2 pending targets (long run):\n')
        print('| measurements held when deciding | decisions | median s | max s |')
        print('|---|---|---|---|')
        for path in sorted(Path(args.latency, 'runs').glob('*.json')):
            records = json.loads(path.read_text())['records']
            rows = [(r['measurements_at_decision'], r['seconds']) for r in records if r.get('pending') == 2]
            for lo, hi in ((0, 30), (30, 60), (60, 90)):
                sel = [s for n, s in rows if lo <= n < hi]
                if sel:
                    print(f'| {lo}-{hi - 1} | {len(sel)} | {statistics.median(sel):.3f} | {max(sel):.3f} |')


if __name__ == '__main__':
    main()

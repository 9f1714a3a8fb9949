r"""Aggregates over runs: regret curves (mean ± std over seeds) and final-value tables.

Metrics (paper §6.1): the uncertain-inputs regret of a query :math:`\hat r_t = g^* - g(\mathbf x_t)` with
:math:`g(\mathbf x) = \mathbb E[f(\tilde{\mathbf x}) | \mathbf x]` under the true execution noise, its running
mean :math:`\hat R_t / t` (the paper's curves; an upper bound on the simple regret :math:`\min_{i\le t}\hat r_i`),
and the regret of the method's recommendation :math:`g^* - g(\mathbf x^*_t)` (AIRBO's robust regret, Eq. 17, when
:math:`g` is its Monte Carlo robust value). Where a problem defines an ``argmax_tolerance`` (AIRBO's 1-D problems:
0.02), a group also counts the runs whose final recommendation lies within it of the robust optimiser.

Exploration problems (the rover) add what a rover pays and what a field engineer compares against: the
normalised regret :math:`(g^* - g(\mathbf x)) / (g^* - \operatorname{median} g)` of the method's own
recommendation, of the rule "place of the highest reading" (its target where it was reached) and of the best true
measurement position; the distance driven and the mission time — each as median, mean and sample std over seeds — and
:func:`paired_comparisons`: every method against every baseline over their shared seeds (Wilcoxon signed-rank,
``scipy.stats.wilcoxon``, two-sided). :func:`markdown_tables` writes both as the tables of the README.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from ..acquisition.recommendation import RECOMMENDATION_RULES

__all__ = ['group_runs', 'curves', 'quantile_curves', 'summarize', 'paired_comparisons', 'markdown_tables',
           'FINAL_STATS']

#: the planner's recommendation rules, each scored on every run (``final['rule_<name>']``)
RULES = tuple(RECOMMENDATION_RULES)

#: per-run finals aggregated as median / mean / std where present (exploration problems)
FINAL_STATS = ('rec_normalised_regret', 'reading_normalised_regret', 'best_visited_normalised_regret',
               'reading_regret', 'best_visited_regret', 'distance_driven_m', 'mission_time_s', 'edge_fraction',
               *(f'rule_{r}' for r in RULES))

GROUP_KEYS = ('problem', 'method', 'variant')


def group_runs(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """Runs grouped by ``(problem, method, variant)`` (i.e. over seeds), in first-seen order."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[tuple(r['spec'][k] for k in GROUP_KEYS)].append(r)
    return dict(groups)


def curves(runs: Sequence[dict[str, Any]], key: str = 'mean_regret') -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, mean, std)`` of a per-iteration quantity over runs (truncated to the shortest run)."""
    n = min(len(r['records']) for r in runs)
    vals = np.array([[rec[key] for rec in r['records'][:n]] for r in runs], dtype=float)
    t = np.arange(1, n + 1)
    return t, vals.mean(0), vals.std(0, ddof=1) if len(runs) > 1 else np.zeros(n)


def quantile_curves(runs: Sequence[dict[str, Any]], key: str = 'rec_regret',
                    q: tuple[float, float, float] = (0.25, 0.5, 0.75)) -> tuple[np.ndarray, np.ndarray]:
    """``(t, quantiles (3, T))`` of a per-iteration quantity over runs (default: 25 %, median, 75 %; the
    figures of Fröhlich et al. 2020), truncated to the shortest run."""
    n = min(len(r['records']) for r in runs)
    vals = np.array([[rec[key] for rec in r['records'][:n]] for r in runs], dtype=float)
    return np.arange(1, n + 1), np.quantile(vals, q, axis=0)


def _quartiles(values: Sequence[float | None]) -> list[float] | None:
    v = [x for x in values if x is not None and np.isfinite(x)]
    return [float(x) for x in np.quantile(v, (0.25, 0.5, 0.75))] if v else None


def _mean_std(x: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def _stats(values: Sequence[float | None]) -> dict[str, float] | None:
    v = [x for x in values if x is not None and np.isfinite(x)]
    if not v:
        return None
    a = np.asarray(v, dtype=float)
    return {'median': float(np.median(a)), 'mean': float(a.mean()),
            'std': float(a.std(ddof=1)) if a.size > 1 else 0.0, 'n': int(a.size)}


def strategy_label(spec: dict[str, Any]) -> str:
    """A run's method and everything that tells its configuration apart from the other configurations of the same
    problem, mismatch and field: β where the method uses it, a non-default uGP noise source, and every explorer
    and problem parameter (``--explorer-param``, ``--problem-param``), e.g. ``ugp_ucb (β=3.0,
    learn_execution_noise=True)``. ``spec`` is a run's ``spec`` (``method``, ``variant``, ``settings``)."""
    s, variant = spec['settings'], spec['variant']
    parts = [] if variant.startswith('beta=-') else [f'β={s["beta"]}']
    if '_ugpnoise=' in variant:
        parts.append(f'ugp_noise={s["ugp_noise"]}')
    for name, value in [*s.get('explorer', []), *s.get('problem', []), *s.get('sim', [])]:
        parts.append(f'{name}={value:g}' if isinstance(value, float) else f'{name}={value}')
    return spec['method'] + (f' ({", ".join(parts)})' if parts else '')


def _pair_key(run: dict[str, Any]) -> tuple:
    """What two runs must share to be paired: problem, mismatch, field, uGP noise, simulation parameters (β may
    differ)."""
    s = run['spec']
    return (s['problem'], float(s['settings']['mismatch']), s['settings'].get('field'), s['settings']['ugp_noise'],
            tuple(tuple(kv[:1]) + (repr(kv[1]),) for kv in s['settings'].get('sim', [])))


def _rule_value(run: dict[str, Any], rule: str) -> float | None:
    f = run['final']
    if rule == 'own':
        v = f.get('rec_normalised_regret')
        return f.get('rec_regret') if v is None else v
    if rule == 'reading':
        v = f.get('reading_normalised_regret')
        return f.get('reading_regret') if v is None else v
    return f.get('distance_driven_m')


#: methods every other method is also compared against: plain GP-UCB ignores location uncertainty, so the
#: comparison says whether modelling it pays
REFERENCES = ('gp_ucb',)


def paired_comparisons(results: Sequence[dict[str, Any]],
                       references: Sequence[str] = REFERENCES) -> list[dict[str, Any]]:
    """Each method against each baseline (and each of ``references``) over shared seeds (same problem,
    mismatch and field).

    For each pair of configurations, three comparisons: the method's own recommendation against the
    baseline's own and against the baseline's highest-reading rule (normalised regret where the problem has
    one, else the raw recommendation regret), and the distance driven (where recorded). ``diff_median`` is
    the median over seeds of method − baseline (negative = the method is better for regret and distance),
    ``wins``/``losses`` count seeds where the method is lower/higher, ``p`` is the two-sided Wilcoxon
    signed-rank p-value (``scipy.stats.wilcoxon``; None with fewer than 2 non-zero differences).
    """
    from scipy.stats import wilcoxon

    from ..acquisition import METHODS

    groups = group_runs(results)
    out = []
    base = {k: rs for k, rs in groups.items() if getattr(METHODS.get(k[1]), 'baseline', False)}
    refs = {k: rs for k, rs in groups.items() if k[1] in references}
    for key, rs in groups.items():
        if key in base:
            continue
        for bkey, brs in {**refs, **base}.items():
            if bkey[0] != key[0] or bkey[1] == key[1]:
                continue
            by_seed = {(_pair_key(r), r['spec']['seed']): r for r in brs}
            pairs = [(r, by_seed[(_pair_key(r), r['spec']['seed'])]) for r in rs
                     if (_pair_key(r), r['spec']['seed']) in by_seed]
            for what, rule_m, rule_b in (('regret', 'own', 'own'), ('regret', 'own', 'reading'),
                                         ('distance', 'distance', 'distance')):
                vals = [(_rule_value(a, rule_m), _rule_value(b, rule_b)) for a, b in pairs]
                vals = [(a, b) for a, b in vals if a is not None and b is not None]
                if not vals:
                    continue
                d = np.array([a - b for a, b in vals])
                p = None
                if np.count_nonzero(d) >= 2:
                    p = float(wilcoxon(d).pvalue)
                out.append({'problem': key[0], 'method': key[1], 'variant': key[2], 'baseline': bkey[1],
                            'baseline_variant': bkey[2], 'label': strategy_label(rs[0]['spec']),
                            'baseline_label': strategy_label(brs[0]['spec']), 'metric': what,
                            'rule': f'{rule_m} vs {rule_b}' if what == 'regret' else 'distance driven',
                            'n_pairs': len(vals), 'method_median': float(np.median([a for a, _ in vals])),
                            'baseline_median': float(np.median([b for _, b in vals])),
                            'diff_median': float(np.median(d)), 'wins': int((d < 0).sum()),
                            'losses': int((d > 0).sum()), 'p': p})
    return out


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-run finals and per-configuration aggregates (mean and sample std over seeds; the final recommendation's
    regret and distance to the robust optimiser as quartiles ``[25 %, median, 75 %]``; medians and
    :data:`FINAL_STATS` for exploration problems), and :func:`paired_comparisons`."""
    runs, groups = [], []
    for r in results:
        s = r['spec']
        runs.append({'key': r.get('key'), 'problem': s['problem'], 'method': s['method'], 'variant': s['variant'],
                     'seed': s['seed'], 'iterations': s['iterations'], **r['final'],
                     'optimum_value': r['instance']['optimum_value'], 'wall_seconds': r['wall_seconds']})
    for (problem, method, variant), rs in group_runs(results).items():
        s = rs[0]['spec']
        mr = _mean_std([r['final']['mean_regret'] for r in rs])
        rr = _mean_std([r['final']['rec_regret'] for r in rs])
        secs = [rec['seconds'] for r in rs for rec in r['records'] if rec['phase'] == 'acquisition']
        dist = [r['final'].get('rec_distance') for r in rs]
        dist = None if any(v is None for v in dist) else dist
        tols = {r['instance'].get('argmax_tolerance') for r in rs}
        tol = tols.pop() if len(tols) == 1 else None
        groups.append({
            'problem': problem, 'method': method, 'variant': variant, 'label': strategy_label(s),
            'beta': '-' if variant.startswith('beta=-') else s['settings']['beta'],
            'mismatch': s['settings']['mismatch'], 'ugp_noise': s['settings']['ugp_noise'],
            'n_runs': len(rs), 'seeds': sorted(r['spec']['seed'] for r in rs), 'iterations': s['iterations'],
            'mean_regret_mean': mr[0], 'mean_regret_std': mr[1], 'rec_regret_mean': rr[0], 'rec_regret_std': rr[1],
            'rec_distance_median': float(np.median(dist)) if dist else None,
            'rec_regret_quartiles': _quartiles([r['final']['rec_regret'] for r in rs]),
            'rec_distance_quartiles': _quartiles(dist or []),
            'argmax_tolerance': tol,
            'n_within_tolerance': int(sum(v <= tol for v in dist)) if tol is not None and dist else None,
            'median_decision_seconds': float(np.median(secs)) if secs else None,
            'p90_decision_seconds': float(np.percentile(secs, 90)) if secs else None,
            'median_wall_seconds': float(np.median([r['wall_seconds'] for r in rs])),
            'field': s['settings'].get('field'),
            **{k: st for k in FINAL_STATS if (st := _stats([r['final'].get(k) for r in rs])) is not None}})
    return {'runs': runs, 'groups': groups, 'comparisons': paired_comparisons(results)}


def _ms(st: dict[str, float] | None, fmt: str = '.2f') -> str:
    return '–' if not st else f'{st["median"]:{fmt}} / {st["mean"]:{fmt}} ± {st["std"]:{fmt}}'


def markdown_tables(summary: dict[str, Any]) -> str:
    """README-style Markdown: one table per problem and field (strategies: final normalised regret of the own
    rule and of the highest-reading rule, best visited, distance driven, mission time, decision time,
    edge share), then the paired comparisons. Empty for problems without exploration statistics."""
    lines: list[str] = []
    by_problem: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    from ..acquisition import METHODS

    def order(g):
        return (bool(getattr(METHODS.get(g['method']), 'baseline', False)), g['method'])

    for g in sorted(summary['groups'], key=order):
        if 'rec_normalised_regret' in g:
            by_problem[(g['problem'], g.get('field'), g['mismatch'])].append(g)
    for (problem, fld, mismatch), gs in by_problem.items():
        title = f'{problem}' + (f', field {fld}' if fld else '') + (f', mismatch {mismatch:g}' if mismatch != 1 else '')
        lines += [f'### {title} ({gs[0]["n_runs"]} seeds, {gs[0]["iterations"]} measurements)', '',
                  '| strategy | final recommendation, normalised regret (median / mean ± std) | highest reading '
                  '| best visited | distance driven, m (median) | mission time, s (median) | decision, s '
                  '(median / p90) | targets on the edge |',
                  '|---|---|---|---|---|---|---|---|']
        for g in gs:
            name = g['label']
            dec = ('–' if g['median_decision_seconds'] is None else
                   f'{g["median_decision_seconds"]:.2f} / {g["p90_decision_seconds"]:.2f}')
            dist, tm, edge = g.get('distance_driven_m'), g.get('mission_time_s'), g.get('edge_fraction')
            dist = '–' if not dist else f'{dist["median"]:.0f}'
            tm = '–' if not tm else f'{tm["median"]:.0f}'
            edge = '–' if not edge else f'{100 * edge["mean"]:.0f} %'
            lines.append(f'| {name} | {_ms(g.get("rec_normalised_regret"))} | '
                         f'{_ms(g.get("reading_normalised_regret"))} | '
                         f'{_ms(g.get("best_visited_normalised_regret"))} | {dist} | {tm} | {dec} | {edge} |')
        if any(f'rule_{r}' in g for g in gs for r in RULES):
            lines += ['', 'Final regret of every recommendation rule on the same runs (median / mean ± std):', '',
                      '| strategy | ' + ' | '.join(RULES) + ' |', '|---|' + '---|' * len(RULES)]
            for g in gs:
                name = g['label']
                lines.append(f'| {name} | ' + ' | '.join(_ms(g.get(f'rule_{r}')) for r in RULES) + ' |')
        comps = [c for c in summary.get('comparisons', []) if c['problem'] == problem
                 and any((c['method'], c['variant']) == (g['method'], g['variant']) for g in gs)]
        if comps:
            lines += ['', '| method | baseline | compared | n | median method / baseline | wins / losses | '
                      'Wilcoxon p |', '|---|---|---|---|---|---|---|']
            for c in comps:
                p = '–' if c['p'] is None else f'{c["p"]:.3g}'
                lines.append(f'| {c["label"]} | {c["baseline_label"]} | {c["rule"]} | {c["n_pairs"]} | '
                             f'{c["method_median"]:.3g} / {c["baseline_median"]:.3g} | '
                             f'{c["wins"]} / {c["losses"]} | {p} |')
        lines.append('')
    return '\n'.join(lines)

r"""Aggregates over runs: regret curves (mean ± std over seeds) and final-value tables.

Metrics (paper §6.1): the uncertain-inputs regret of a query :math:`\hat r_t = g^* - g(\mathbf x_t)` with
:math:`g(\mathbf x) = \mathbb E[f(\tilde{\mathbf x}) | \mathbf x]` under the true execution noise, its running
mean :math:`\hat R_t / t` (the paper's curves; an upper bound on the simple regret :math:`\min_{i\le t}\hat r_i`),
and the regret of the method's recommendation :math:`g^* - g(\mathbf x^*_t)` (AIRBO's robust regret, Eq. 17, when
:math:`g` is its Monte Carlo robust value). Where a problem defines an ``argmax_tolerance`` (AIRBO's 1-D problems:
0.02), a group also counts the runs whose final recommendation lies within it of the robust optimiser.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np

__all__ = ['group_runs', 'curves', 'summarize']

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


def _mean_std(x: Sequence[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-run finals and per-configuration aggregates (mean and sample std over seeds)."""
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
            'problem': problem, 'method': method, 'variant': variant,
            'beta': '-' if variant.startswith('beta=-') else s['settings']['beta'],
            'mismatch': s['settings']['mismatch'], 'ugp_noise': s['settings']['ugp_noise'],
            'n_runs': len(rs), 'seeds': sorted(r['spec']['seed'] for r in rs), 'iterations': s['iterations'],
            'mean_regret_mean': mr[0], 'mean_regret_std': mr[1], 'rec_regret_mean': rr[0], 'rec_regret_std': rr[1],
            'rec_distance_median': float(np.median(dist)) if dist else None,
            'argmax_tolerance': tol,
            'n_within_tolerance': int(sum(v <= tol for v in dist)) if tol is not None and dist else None,
            'median_decision_seconds': float(np.median(secs)) if secs else None,
            'median_wall_seconds': float(np.median([r['wall_seconds'] for r in rs]))})
    return {'runs': runs, 'groups': groups}

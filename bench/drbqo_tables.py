"""Tables of the DRBQO benchmarks (Nguyen et al. 2020, Fig. 3 / Table 1 style) from `uncertain-bo bench` output.

For every problem and method of one or more output directories: the final ρ-regret of the recommendation
(mean ± sample std over seeds and the 96 % interval of the mean, t distribution, as the paper reports) for
each ρ, the empirical mean E_{P̂n}[f(x̂_T, w)] and, for the cross-validation problems, the test error (%).
Methods whose decisions and recommendation do not depend on ρ (BQO-TS, BQO-EI, MTBO) are run once; their
ρ-regret at every ρ of the grid is read from the same runs (``rec_rho_regret_<ρ>``). Then DRBQO at each ρ it
was run with against every other method over their shared seeds (ρ-regret at that ρ, and test error for the
cross-validation problems): median of each, wins / losses of DRBQO (lower is a win) and the two-sided Wilcoxon
signed-rank p-value (``scipy.stats.wilcoxon``; '–' with fewer than 2 non-zero differences).

    python bench/drbqo_tables.py runs/drbqo/logistic [more dirs] [--out table.md]
"""
from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

from uncertain_bo.acquisition import METHODS
from uncertain_bo.benchmarks import load_runs


def interval(values) -> str:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return '–'
    m = a.mean()
    if a.size == 1:
        return f'{m:.3g} (n=1)'
    s = a.std(ddof=1)
    h = stats.t.ppf(0.98, a.size - 1) * s / math.sqrt(a.size)
    return f'{m:.3g} ± {s:.2g} [{m - h:.3g}, {m + h:.3g}] (n={a.size})'


def depends_on_rho(method: str) -> bool:
    cls = METHODS.get(method)
    return bool(getattr(cls, 'robust_decision', True) or getattr(cls, 'robust_recommendation', True))


def rho_of(run) -> float | None:
    rho = run['instance'].get('rho')   # the problem's radius (its default when not set)
    return None if rho is None else float(rho)


def rho_regret(run, rho: float) -> float | None:
    """A run's final ρ-regret at ``rho``: its own recommendation regret when it ran at ``rho``, else the
    recorded ``extra_rho_regret_<ρ>`` of a method whose runs do not depend on ρ (None otherwise)."""
    if depends_on_rho(run['spec']['method']):
        return run['final']['rec_regret'] if rho_of(run) == rho else None
    return run['final'].get(f'extra_rho_regret_{rho:g}')


def paired(rs, rhos, reference: str = 'drbqo') -> list[str]:
    """Markdown rows: ``reference`` at each ρ against every other method over shared seeds (module docstring)."""
    rows = []
    for rho in rhos:
        ref = {r['spec']['seed']: r for r in rs if r['spec']['method'] == reference and rho_of(r) == rho}
        if not ref:
            continue
        for m in dict.fromkeys(r['spec']['method'] for r in rs):
            if m == reference:
                continue
            other = {r['spec']['seed']: r for r in rs if r['spec']['method'] == m
                     and (rho_of(r) == rho or not depends_on_rho(m))}
            for what, get in (('ρ-regret', lambda r: rho_regret(r, rho)),
                              ('test error %', lambda r: r['final'].get('extra_test_error'))):
                pairs = [(get(ref[s]), get(other[s])) for s in sorted(ref.keys() & other.keys())]
                pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
                if not pairs:
                    continue
                d = np.array([a - b for a, b in pairs])
                p = f'{stats.wilcoxon(d).pvalue:.3g}' if np.count_nonzero(d) >= 2 else '–'
                rows.append(f'| {reference} (ρ = {rho:g}) | {m} | {what} | {len(pairs)} | '
                            f'{np.median([a for a, _ in pairs]):.3g} / {np.median([b for _, b in pairs]):.3g} | '
                            f'{int((d < 0).sum())} / {int((d > 0).sum())} | {p} |')
    return rows


def tables(runs) -> str:
    by_problem = defaultdict(list)
    for r in runs:
        by_problem[r['spec']['problem']].append(r)
    out = []
    for problem, rs in by_problem.items():
        rhos = sorted({rho_of(r) for r in rs if rho_of(r) is not None}
                      | {float(k[len('rho_regret_'):]) for r in rs for k in r['final'] if k.startswith('extra_rho_')
                         for k in [k[len('extra_'):]]})
        methods = list(dict.fromkeys(r['spec']['method'] for r in rs))
        seeds = sorted({r['spec']['seed'] for r in rs})
        iters = sorted({r['spec']['iterations'] for r in rs})
        out += [f'### {problem} (seeds {seeds[0]}..{seeds[-1]}, T = {",".join(map(str, iters))})', '',
                'Final ρ-regret of the recommendation, mean ± std [96 % interval of the mean]:', '',
                '| method | ' + ' | '.join(f'ρ = {r:g}' for r in rhos) + ' |', '|---|' + '---|' * len(rhos)]
        extras = defaultdict(lambda: defaultdict(list))
        for m in methods:
            row = []
            for rho in rhos:
                if depends_on_rho(m):
                    vals = [r['final']['rec_regret'] for r in rs if r['spec']['method'] == m and rho_of(r) == rho]
                else:
                    key = f'extra_rho_regret_{rho:g}'
                    vals = [r['final'][key] for r in rs if r['spec']['method'] == m and key in r['final']]
                row.append(interval(vals))
            out.append(f'| {m} | ' + ' | '.join(row) + ' |')
            for r in rs:
                if r['spec']['method'] != m:
                    continue
                label = f'{m} (ρ = {rho_of(r):g})' if depends_on_rho(m) else m
                for k in ('extra_empirical_value', 'extra_test_error'):
                    if k in r['final']:
                        extras[k][label].append(r['final'][k])
        for k, title in (('extra_empirical_value', 'Empirical mean E_P̂n[f(x̂_T, w)] of the recommendation'),
                         ('extra_test_error', 'Test error (%) at the recommendation')):
            if extras[k]:
                out += ['', f'{title}, mean ± std [96 % interval]:', '', '| method | value |', '|---|---|']
                out += [f'| {label} | {interval(v)} |' for label, v in sorted(extras[k].items())]
        rows = paired(rs, rhos)
        if rows:
            out += ['', 'Paired over shared seeds (lower is better for both metrics):', '',
                    '| method | against | metric | n | median method / other | wins / losses | Wilcoxon p |',
                    '|---|---|---|---|---|---|---|'] + rows
        out.append('')
    return '\n'.join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('dirs', nargs='+')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    runs = [r for d in args.dirs for r in load_runs(d)]
    text = tables(runs)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == '__main__':
    main()

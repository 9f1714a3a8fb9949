"""Figures like the paper's (Oliveira et al. 2019, Figs. 2-3) from a benchmark output directory.

- ``<problem>_mean_regret.png`` — mean uncertain-inputs regret :math:`\\hat R_t/t` against ``t``, mean ± k std
  over seeds, one curve per method, one panel per configuration (β, mismatch);
- ``<problem>_recommendation_regret.png`` — regret of the recommendation :math:`g^* - g(\\mathbf x^*_t)` (AIRBO's
  robust regret, Eq. 17, on its problems);
- ``<problem>_recommendation_distance.png`` — distance :math:`\\|\\mathbf x^*_t - \\mathbf x^*\\|` of the
  recommendation to the robust optimiser, with the problem's ``argmax_tolerance`` as a dashed line (problems
  that define one: AIRBO's 1-D problems);
- ``<problem>_mismatch.png`` — final mean regret against :math:`\\hat\\sigma_x/\\sigma_x` (log axis), when the
  directory holds more than one mismatch ratio (Fig. 2 right);
- ``<problem>_beta.png`` — final mean regret against β, when it holds more than one fixed β (Fig. 3 right);
- exploration problems (the rover), one pair per field: ``<problem>[_<field>]_final_regret.png`` — final
  normalised regret of every strategy over seeds (box and points; the own recommendation and the
  highest-reading rule side by side), and ``<problem>[_<field>]_regret_vs_distance.png`` — median normalised
  regret of the recommendation after each measurement against the median distance driven by then (lines),
  with every seed's final (distance, regret) as points.
"""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..reporting.output_files import save_figure
from ..reporting.plot_style import legend_outside
from .base import DEFAULT_UGP_NOISE
from .metrics import curves, group_runs, quantile_curves

__all__ = ['plot_directory']

COLORS = {'nes_ep': 'tab:red', 'nes_rs': 'darkred', 'bo_uu_ei': 'tab:purple', 'bo_uu_ucb': 'tab:olive',
          'bo_uu_mes': 'tab:pink', 'ei': 'black',
          'ugp_ucb': 'tab:blue', 'igp_ucb': 'tab:orange', 'uei': 'tab:green', 'airbo': 'tab:red',
          'airbo_empirical': 'tab:pink', 'ugp_kme': 'tab:blue', 'skl': 'tab:purple', 'erbf': 'tab:brown',
          'gp_ucb': 'tab:gray', 'lawnmower': 'tab:olive', 'lawnmower_fixed': 'khaki', 'random': 'tab:cyan',
          'botorch_robust': 'tab:red'}
LABELS = {'nes_ep': 'NES-EP', 'nes_rs': 'NES-RS', 'bo_uu_ei': 'BO-UU EI', 'bo_uu_ucb': 'BO-UU UCB',
          'bo_uu_mes': 'BO-UU MES', 'ei': 'standard EI',
          'ugp_ucb': 'uGP-UCB', 'igp_ucb': 'IGP-UCB', 'uei': 'UEI', 'airbo': 'AIRBO',
          'airbo_empirical': 'AIRBO (empirical MMD)', 'ugp_kme': 'uGP (KME)', 'skl': 'SKL-UCB', 'erbf': 'ERBF-UCB',
          'gp_ucb': 'GP-UCB', 'lawnmower': 'lawnmower', 'lawnmower_fixed': 'lawnmower (unshifted)',
          'random': 'random tour', 'botorch_robust': 'BoTorch robust (qLogNEI)'}


def _order(method: str) -> tuple[int, str]:
    return (list(LABELS).index(method) if method in LABELS else len(LABELS), method)


def _label(method: str) -> str:
    return LABELS.get(method, method)


def _color(method: str, i: int) -> str:
    return COLORS.get(method, f'C{3 + i % 7}')


def _panel_key(run: dict[str, Any]) -> tuple[str, float, str]:
    s = run['spec']['settings']
    return str(s['beta']), float(s['mismatch']), s['ugp_noise']


def _finals(runs: Sequence[dict[str, Any]], key: str = 'mean_regret') -> np.ndarray:
    return np.array([r['final'][key] for r in runs], dtype=float)


def plot_directory(results: Sequence[dict[str, Any]], out_dir: str | Path, std_mult: float = 1.0,
                   band: str = 'std') -> list[Path]:
    """Draw every applicable figure for ``results`` into ``out_dir``; returns the written files.

    ``band``: ``'std'`` (mean ± ``std_mult`` std over seeds) or ``'quartiles'`` (median with the 25/75 %
    band, as Fröhlich et al. 2020 plot; the distance of the recommendation to the robust optimiser is then drawn
    for every problem)."""
    if band not in ('std', 'quartiles'):
        raise ValueError(f"band must be 'std' or 'quartiles', got {band!r}")
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    written: list[Path] = []
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        by_problem[r['spec']['problem']].append(r)
    for problem, runs in by_problem.items():
        # panels: one per (β, mismatch) configuration; β-free methods (variant 'beta=-') join every panel
        panels: dict[tuple[str, float, str], list[dict[str, Any]]] = defaultdict(list)
        free = [r for r in runs if r['spec']['variant'].startswith('beta=-')]
        for r in runs:
            if not r['spec']['variant'].startswith('beta=-'):
                panels[_panel_key(r)].append(r)
        for r in free:
            keys = [k for k in panels if k[1] == float(r['spec']['settings']['mismatch'])] or [_panel_key(r)]
            for k in keys:
                panels[k].append(r)
        keys = sorted(panels, key=lambda k: (k[1], k[2], _beta_sort(k[0])))
        metrics = [('mean_regret', 'mean_regret', r'mean regret $\hat R_t / t$'),
                   ('rec_regret', 'recommendation_regret', r'recommendation regret')]
        tols = {r['instance'].get('argmax_tolerance') for r in runs}
        tol = tols.pop() if len(tols) == 1 else None
        if ((tol is not None or band == 'quartiles')
                and all('rec_distance' in rec for r in runs for rec in r['records'])):
            metrics.append(('rec_distance', 'recommendation_distance', 'distance of the recommendation to x*'))
        for metric, fname, ylabel in metrics:
            cols = min(3, len(keys))
            rows = math.ceil(len(keys) / cols)
            fig, axes = plt.subplots(rows, cols, figsize=(7.8 * cols, 3.8 * rows), squeeze=False)
            for ax, key in zip(axes.flat, keys):
                groups = sorted(group_runs(panels[key]).items(), key=lambda kv: _order(kv[0][1]))
                for i, ((_, method, variant), rs) in enumerate(groups):
                    c = _color(method, i)
                    if band == 'quartiles':
                        t, (low, mid, high) = quantile_curves(rs, metric)
                    else:
                        t, mid, std = curves(rs, metric)
                        low, high = mid - std_mult * std, mid + std_mult * std
                    params = ''.join(f', {n}={v:g}' if isinstance(v, float) else f', {n}={v}'
                                     for n, v in rs[0]['spec']['settings'].get('problem', []))
                    ax.plot(t, mid, color=c, label=f'{_label(method)}{params} (n={len(rs)})')
                    ax.fill_between(t, low, high, color=c, alpha=0.2, lw=0)
                beta, mismatch, noise = key
                title = f'{problem}: beta={beta}, ' + r'$\hat\sigma_x/\sigma_x$' + f'={mismatch:g}'
                ax.set_title(title + ('' if noise == DEFAULT_UGP_NOISE else f', uGP noise={noise}'), fontsize=9)
                ax.set_xlabel('iteration t')
                ax.set_ylabel(ylabel)
                if metric == 'rec_distance' and tol is not None:
                    ax.axhline(tol, color='k', ls='--', lw=0.8, label=f'tolerance {tol:g}')
                ax.set_yscale('log')
                ax.grid(alpha=0.3, which='both')
                legend_outside(ax, 'right', fontsize=8)
            for ax in list(axes.flat)[len(keys):]:
                ax.axis('off')
            fig.suptitle('median, shaded: 25-75 % over seeds' if band == 'quartiles' else
                         f'shaded: mean ± {std_mult:g} std over seeds', fontsize=8)
            fig.tight_layout()
            path = out / f'{problem}_{fname}.png'
            save_figure(fig, path, dpi=120, bbox_inches='tight')
            plt.close(fig)
            written.append(path)
        written += _sweep_plot(plt, runs, problem, out, 'mismatch', std_mult)
        written += _sweep_plot(plt, runs, problem, out, 'beta', std_mult)
        written += _exploration_plots(plt, runs, problem, out)
    return written


def _exploration_plots(plt, runs, problem: str, out: Path) -> list[Path]:
    """Final normalised regret per strategy, and regret against distance driven (one pair per field)."""
    runs = [r for r in runs if r['final'].get('rec_normalised_regret') is not None]
    by_field: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        by_field[(r['spec']['settings'].get('field'), float(r['spec']['settings']['mismatch']))].append(r)
    written = []
    for (fld, mismatch), rs in by_field.items():
        from .runner import field_label
        stem = problem + (f'_{field_label(fld)}' if fld else '') + (f'_mismatch{mismatch:g}' if mismatch != 1 else '')
        title = problem + (f', field {fld}' if fld else '')
        groups = sorted(group_runs(rs).items(), key=lambda kv: _order(kv[0][1]))
        names = [m + ('' if v.startswith('beta=-') else f' β={v.split("_")[0][5:]}') for (_, m, v), _ in groups]
        # final regret per strategy: own rule and highest-reading rule
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(groups), 4.2))
        for i, ((_, method, _), g) in enumerate(groups):
            c = _color(method, i)
            for off, key, hatch in ((-0.18, 'rec_normalised_regret', None), (0.18, 'reading_normalised_regret', '//')):
                v = _finals(g, key)
                v = v[np.isfinite(v)]
                if not v.size:
                    continue
                bp = ax.boxplot(v, positions=[i + off], widths=0.3, patch_artist=True, showfliers=False)
                for box in bp['boxes']:
                    box.set(facecolor=c, alpha=0.35 if hatch else 0.6, hatch=hatch)
                jitter = np.linspace(-0.06, 0.06, v.size)
                ax.plot(i + off + jitter, v, '.', color=c, ms=4)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([_label(m) if n == m else n for ((_, m, _), _), n in zip(groups, names)],
                           rotation=20, fontsize=8)
        ax.set_ylabel('final normalised regret $(g^*-g(x))/(g^*-\\mathrm{median}\\,g)$')
        ax.set_title(f'{title}: left box = own recommendation, right (hatched) = highest reading; '
                     f'{len(groups[0][1]) if groups else 0} seeds', fontsize=8)
        ax.grid(alpha=0.3, axis='y')
        fig.tight_layout()
        path = out / f'{stem}_final_regret.png'
        save_figure(fig, path, dpi=120)
        plt.close(fig)
        written.append(path)
        # regret against distance driven
        if not all(rec.get('distance_driven') is not None and np.isfinite(rec['distance_driven'])
                   for r in rs for rec in r['records']):
            continue
        fig, ax = plt.subplots(figsize=(9.0, 4.4))
        for i, ((_, method, _), g) in enumerate(groups):
            c = _color(method, i)
            n = min(len(r['records']) for r in g)
            dist = np.median([[rec['distance_driven'] for rec in r['records'][:n]] for r in g], axis=0)
            reg = np.median([[rec['rec_nregret'] for rec in r['records'][:n]] for r in g], axis=0)
            label = _label(method) if names[i] == method else names[i]
            ax.plot(dist, reg, '-', color=c, label=f'{label} (median of {len(g)})')
            ax.plot([r['final']['distance_driven_m'] for r in g], [r['final']['rec_normalised_regret'] for r in g],
                    'o', color=c, ms=3, alpha=0.5)
        ax.set_xlabel('distance driven (m, true path of the simulated rover)')
        ax.set_ylabel('normalised regret of the recommendation')
        ax.set_title(f'{title}: line = median over seeds after each measurement; dots = final per seed', fontsize=8)
        ax.grid(alpha=0.3)
        legend_outside(ax, 'right')
        fig.tight_layout()
        path = out / f'{stem}_regret_vs_distance.png'
        save_figure(fig, path, dpi=120, bbox_inches='tight')
        plt.close(fig)
        written.append(path)
    return written


def _beta_sort(b: str) -> float:
    try:
        return float(b)
    except ValueError:
        return -1.0


def _params_label(run: dict[str, Any]) -> str:
    """``', name=value'`` for each problem parameter a run sets (empty for the problem's defaults)."""
    return ''.join(f', {n}={v:g}' if isinstance(v, float) else f', {n}={v}'
                   for n, v in run['spec']['settings'].get('problem', []))


def _sweep_noise(runs) -> str | None:
    """The ``ugp_noise`` setting a sweep shows: the one non-default setting when every method's runs share one
    (e.g. a whole study run with ``--ugp-noise output``), else None (the default's runs only)."""
    per_method: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        per_method[r['spec']['method']].add(r['spec']['settings']['ugp_noise'])
    other = set().union(*per_method.values()) - {DEFAULT_UGP_NOISE}
    return other.pop() if len(other) == 1 and all(len(v) == 1 for v in per_method.values()) else None


def _sweep_plot(plt, runs, problem: str, out: Path, axis: str, std_mult: float) -> list[Path]:
    """Final mean regret against the mismatch ratio or against fixed β (one line per method and problem-parameter
    setting, e.g. uGP-UCB with a fixed and with a learned execution-noise model)."""
    series: dict[tuple[str, str], dict[float, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    noise = _sweep_noise(runs)
    for r in runs:
        s = r['spec']['settings']
        if s['ugp_noise'] not in (DEFAULT_UGP_NOISE, noise):
            continue
        if axis == 'mismatch':
            x = float(s['mismatch'])
        else:
            if r['spec']['variant'].startswith('beta=-') or float(s['mismatch']) != 1.0:
                continue
            try:
                x = float(s['beta'])
            except (TypeError, ValueError):
                continue
        series[(r['spec']['method'], _params_label(r))][x].append(r)
    xs = {x for d in series.values() for x in d}
    if len(xs) < 2:
        return []
    fig, ax = plt.subplots(figsize=(8.0, 4))
    for i, ((method, params), pts) in enumerate(sorted(series.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1]))):
        x = np.array(sorted(pts))
        finals = [_finals(pts[v]) for v in x]
        mean = np.array([f.mean() for f in finals])
        std = np.array([f.std(ddof=1) if f.size > 1 else 0.0 for f in finals])
        ax.errorbar(x, mean, yerr=std_mult * std, marker='s' if params else 'o', capsize=3,
                    color=_color(method, i) if not params else f'C{3 + i % 7}', ls='--' if params else '-',
                    label=_label(method) + params)
    if axis == 'mismatch':
        ax.set_xscale('log')
        ax.set_xlabel(r'$\hat\sigma_x / \sigma_x$')
    else:
        ax.set_xlabel(r'$\beta$')
    iters = max(r['spec']['iterations'] for r in runs)
    ax.set_ylabel(f'mean regret after {iters} iterations')
    ax.set_title(f'{problem}: error bars ± {std_mult:g} std' + (f', uGP noise={noise}' if noise else ''), fontsize=9)
    ax.grid(alpha=0.3, which='both')
    legend_outside(ax, 'right', fontsize=8)
    fig.tight_layout()
    path = out / f'{problem}_{axis}.png'
    save_figure(fig, path, dpi=120, bbox_inches='tight')
    plt.close(fig)
    return [path]

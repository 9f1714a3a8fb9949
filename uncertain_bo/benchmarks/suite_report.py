"""One table for a suite run (``uncertain-bo bench --suite NAME``): per field and the median over fields, with
paired tests, and one figure of regret against distance driven.

For each field and strategy (method plus its β and parameters, :func:`~uncertain_bo.benchmarks.metrics.
strategy_label`): the median over seeds of the final normalised regret
:math:`(g^* - g(\\mathbf x)) / (g^* - \\operatorname{median} g)` of the strategy's own recommendation, of the
best visited position and of the highest reading, the distance driven and the mission time. Then, per part of
the suite (tuning, held-out, all), the median over fields of those per-field medians, and every strategy
against each baseline: per field the two-sided Wilcoxon signed-rank test over shared seeds
(``scipy.stats.wilcoxon``), and over the part the same test on every shared (field, seed) pair. Written to
``DIR/suite.md`` and ``DIR/suite.json``; :func:`plot_regret_vs_distance` draws ``DIR/suite_regret_vs_distance.png``.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..reporting.output_files import save_figure, write_text
from .metrics import strategy_label

__all__ = ['suite_summary', 'suite_markdown', 'write_suite_report', 'plot_regret_vs_distance']

#: per-run finals the table reports (run['final'] keys) and their column titles
COLUMNS = (('rec_normalised_regret', 'own recommendation'), ('best_visited_normalised_regret', 'best visited'),
           ('reading_normalised_regret', 'highest reading'), ('distance_driven_m', 'distance, m'),
           ('mission_time_s', 'mission time, s'))


#: differences of normalised regret smaller than this are ties (rounding of the same recommended position)
TIE = 1e-9


def _median(values: Sequence[float | None]) -> float | None:
    v = [x for x in values if x is not None and np.isfinite(x)]
    return float(np.median(v)) if v else None


def _wilcoxon(diffs: np.ndarray) -> float | None:
    from scipy.stats import wilcoxon

    return float(wilcoxon(diffs).pvalue) if np.count_nonzero(diffs) >= 2 else None


def suite_summary(results: Sequence[dict[str, Any]], suite: str, baselines: Sequence[str] = ()) -> dict[str, Any]:
    """Per-field medians, medians over fields per part, and paired tests against ``baselines``.

    Args:
        results: run results of :func:`~uncertain_bo.benchmarks.runner.run_many` (rover problems, one field
            per run in ``spec.settings.field``).
        suite: ``NAME`` or ``NAME:PART`` as given to ``--suite``.
        baselines: method names every strategy is tested against (their own strategies are tested against
            the other baselines).

    Returns:
        ``{'suite', 'fields': [{'field', 'part', 'strategies': {label: {column: median, 'n': seeds}}}],
        'parts': {part: {label: {column: median over fields}}}, 'tests': [...]}``; each test has
        ``strategy``, ``baseline``, ``part`` (or ``field``), ``n_pairs``, ``wins``, ``losses`` (seeds where the
        strategy's own-recommendation regret is lower / higher), ``diff_median`` and Wilcoxon ``p``.
    """
    from .suite import load_suite

    spec = load_suite(suite.partition(':')[0])
    runs: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    method_of: dict[str, str] = {}
    for r in results:
        label = strategy_label(r['spec'])
        method_of[label] = r['spec']['method']
        runs[(r['spec']['settings'].get('field'), label)][r['spec']['seed']] = r['final']
    order = [f for f in spec.field_names() if any(k[0] == f for k in runs)]
    labels = list(dict.fromkeys(k[1] for k in runs))
    fields = []
    for f in order:
        strat = {}
        for lab in labels:
            finals = runs.get((f, lab))
            if finals:
                strat[lab] = {c: _median([x.get(c) for x in finals.values()]) for c, _ in COLUMNS}
                strat[lab]['n'] = len(finals)
        fields.append({'field': f, 'part': spec.part_of(f), 'strategies': strat})
    parts: dict[str, dict[str, dict[str, float | None]]] = {}
    present = {e['part'] for e in fields}
    for part in ('tuning', 'held_out', 'all'):
        fs = [e for e in fields if part == 'all' or e['part'] == part]
        if not fs or (part == 'all' and len(present) < 2):
            continue
        parts[part] = {lab: {c: _median([e['strategies'].get(lab, {}).get(c) for e in fs]) for c, _ in COLUMNS}
                       for lab in labels}
    tests = []
    base_labels = [lab for lab in labels if method_of[lab] in baselines]
    done: set[tuple[str, str]] = set()
    for lab in labels:
        for blab in base_labels:
            if blab == lab or (blab, lab) in done:
                continue
            done.add((lab, blab))
            pooled: dict[str, list[float]] = defaultdict(list)
            for e in fields:
                a, b = runs.get((e['field'], lab), {}), runs.get((e['field'], blab), {})
                d = [a[s]['rec_normalised_regret'] - b[s]['rec_normalised_regret'] for s in sorted(set(a) & set(b))
                     if a[s].get('rec_normalised_regret') is not None
                     and b[s].get('rec_normalised_regret') is not None]
                if not d:
                    continue
                d = np.asarray(d)
                tests.append(_test(lab, blab, d, field=e['field']))
                pooled[e['part']] += d.tolist()
                pooled['all'] += d.tolist()
            for part, d in pooled.items():
                if part != 'all' or len(present) > 1:
                    tests.append(_test(lab, blab, np.asarray(d), part=part))
    return {'suite': suite, 'fields': fields, 'parts': parts, 'tests': tests, 'baselines': list(baselines),
            'methods': method_of}


def _test(lab: str, blab: str, d: np.ndarray, **where) -> dict[str, Any]:
    d = np.where(np.abs(d) < TIE, 0.0, d)      # the same position up to rounding is a tie, not a win
    return {'strategy': lab, 'baseline': blab, **where, 'n_pairs': int(d.size), 'wins': int((d < 0).sum()),
            'losses': int((d > 0).sum()), 'diff_median': float(np.median(d)), 'p': _wilcoxon(d)}


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return '–'
    return f'{v:.0f}' if abs(v) >= 100 else f'{v:.{digits}g}'


def suite_markdown(summary: dict[str, Any]) -> str:
    """The suite table in Markdown: one block per field, the medians over fields per part, the paired tests."""
    heads = ' | '.join(t for _, t in COLUMNS)
    lines = [f'## Suite {summary["suite"]}: final normalised regret (median over seeds)', '']
    for e in summary['fields']:
        n = max((s['n'] for s in e['strategies'].values()), default=0)
        lines += [f'### {e["field"]} ({e["part"].replace("_", "-")}, {n} seeds)', '',
                  f'| strategy | {heads} |', '|---|' + '---|' * len(COLUMNS)]
        for lab, s in e['strategies'].items():
            lines.append(f'| {lab} | ' + ' | '.join(_fmt(s[c]) for c, _ in COLUMNS) + ' |')
        tests = [t for t in summary['tests'] if t.get('field') == e['field']]
        if tests:
            lines += ['', '| strategy | baseline | n | wins / losses | median difference | Wilcoxon p |',
                      '|---|---|---|---|---|---|']
            lines += [f'| {t["strategy"]} | {t["baseline"]} | {t["n_pairs"]} | {t["wins"]} / {t["losses"]} | '
                      f'{t["diff_median"]:+.3g} | {_fmt(t["p"])} |' for t in tests]
        lines.append('')
    for part, strat in summary['parts'].items():
        nf = sum(1 for e in summary['fields'] if part == 'all' or e['part'] == part)
        where = 'the whole suite' if part == 'all' else f'the {part.replace("_", "-")} set'
        lines += [f'### Median over the {nf} field(s) of {where}', '', f'| strategy | {heads} |',
                  '|---|' + '---|' * len(COLUMNS)]
        lines += [f'| {lab} | ' + ' | '.join(_fmt(s[c]) for c, _ in COLUMNS) + ' |' for lab, s in strat.items()]
        lines += _target_lines(strat, summary.get('methods', {}))
        tests = [t for t in summary['tests'] if t.get('part') == part]
        if tests:
            lines += ['', 'Paired over every shared (field, seed):', '',
                      '| strategy | baseline | n | wins / losses | median difference | Wilcoxon p |',
                      '|---|---|---|---|---|---|']
            lines += [f'| {t["strategy"]} | {t["baseline"]} | {t["n_pairs"]} | {t["wins"]} / {t["losses"]} | '
                      f'{t["diff_median"]:+.3g} | {_fmt(t["p"])} |' for t in tests]
        lines.append('')
    return '\n'.join(lines)


def _target_lines(strat: dict[str, dict[str, float | None]], methods: dict[str, str]) -> list[str]:
    """The issue's ratios for each strategy that is not a survey: its median regret over the better survey's
    (lawnmower or random, whichever median is lower) and its median distance over the lawnmower's."""
    surveys = {lab: s for lab, s in strat.items() if methods.get(lab, lab) in ('lawnmower', 'random')
               and s.get('rec_normalised_regret') is not None}
    if not surveys:
        return []
    best = min(surveys, key=lambda lab: surveys[lab]['rec_normalised_regret'])
    lawns = [s for lab, s in strat.items() if methods.get(lab, lab) == 'lawnmower']
    ref, lawn = surveys[best]['rec_normalised_regret'], lawns[0].get('distance_driven_m') if lawns else None
    out = ['', f'Against the surveys (better survey here: {best}):', '']
    for lab, s in strat.items():
        if lab in surveys or s.get('rec_normalised_regret') is None:
            continue
        r = s['rec_normalised_regret'] / ref if ref else None
        d = s['distance_driven_m'] / lawn if lawn and s.get('distance_driven_m') is not None else None
        out.append(f'- {lab}: regret {_fmt(r)} x the {best}\'s, distance {_fmt(d)} x the lawnmower\'s')
    return out


def _final_cross(ax, finals: np.ndarray, colour) -> None:
    """Mark the median final ``(distance, regret)`` of ``finals`` ``(seeds, 2)`` with its interquartile range along
    both axes (error bars from the 25th to the 75th percentile)."""
    q1, med, q3 = np.percentile(finals, [25, 50, 75], axis=0)
    med = np.maximum(med, 1e-4)
    ax.errorbar(med[0], med[1], xerr=[[med[0] - q1[0]], [q3[0] - med[0]]],
                yerr=[[med[1] - max(q1[1], 1e-4)], [max(q3[1], 1e-4) - med[1]]], fmt='o', ms=4, color=colour,
                elinewidth=1.0, capsize=2)


def plot_regret_vs_distance(results: Sequence[dict[str, Any]], path: str | Path, suite: str) -> Path:
    """One PNG: per field, the median over seeds of the own recommendation's normalised regret against the
    median distance driven after each measurement, one line per strategy (log regret axis), ending in a point at the
    median final distance and regret with their interquartile ranges as bars; a last panel takes the median of those
    curves over the fields, measurement by measurement."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    from .suite import load_suite

    order = load_suite(suite.partition(':')[0]).field_names()
    curves: dict[str, dict[str, list[list[tuple[float, float]]]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        pts = [(rec.get('distance_driven'), rec.get('rec_nregret')) for rec in r['records']]
        if pts and all(a is not None and b is not None for a, b in pts):
            curves[r['spec']['settings'].get('field')][strategy_label(r['spec'])].append(pts)
    fields = [f for f in order if f in curves]
    panels = fields + (['median over fields'] if len(fields) > 1 else [])
    ncol = min(3, max(1, len(panels)))
    nrow = max(1, -(-len(panels) // ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.3 * nrow), squeeze=False)
    labels = sorted({lab for f in fields for lab in curves[f]})
    colours = {lab: plt.cm.tab10(i % 10) for i, lab in enumerate(labels)}
    medians: dict[str, list[np.ndarray]] = defaultdict(list)      # per strategy: each field's median curve
    for ax, f in zip(axes.ravel(), panels):
        items = curves[f].items() if f in curves else []
        for lab, runs in items:
            n = min(len(p) for p in runs)
            med = np.median(np.array([p[:n] for p in runs], dtype=float), axis=0)    # (t, 2) over seeds
            medians[lab].append(med)
            ax.plot(med[:, 0], np.maximum(med[:, 1], 1e-4), color=colours[lab], label=lab, lw=1.4)
            _final_cross(ax, np.array([p[-1] for p in runs], dtype=float), colours[lab])
        if f not in curves:             # the last panel: median over fields after each measurement
            for lab, meds in medians.items():
                n = min(len(m) for m in meds)
                med = np.median(np.array([m[:n] for m in meds]), axis=0)
                ax.plot(med[:, 0], np.maximum(med[:, 1], 1e-4), color=colours[lab], lw=2.0)
        ax.set_yscale('log')
        ax.set_title(f, fontsize=9, fontweight='bold' if f not in curves else 'normal')
        ax.set_xlabel('distance driven, m (median)', fontsize=8)
        ax.set_ylabel('normalised regret (median)', fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(panels):]:
        ax.axis('off')
    handles = [plt.Line2D([], [], color=colours[lab], lw=2) for lab in labels]
    fig.legend(handles, labels, loc='lower center', ncol=min(4, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(f'suite {suite}: regret of the recommendation against distance driven', fontsize=10)
    fig.tight_layout(rect=(0, 0.05 + 0.02 * (len(labels) // 4), 1, 0.97))
    path = Path(path)
    save_figure(fig, path, dpi=80)
    plt.close(fig)
    return path


def write_suite_report(results: Sequence[dict[str, Any]], out_dir: str | Path, suite: str,
                       baselines: Sequence[str] = ()) -> list[Path]:
    """Write ``suite.md``, ``suite.json`` and ``suite_regret_vs_distance.png`` to ``out_dir``; returns the paths."""
    out = Path(out_dir)
    summary = suite_summary(results, suite, baselines)
    write_text(out / 'suite.json', json.dumps(summary, indent=1))
    write_text(out / 'suite.md', suite_markdown(summary))
    return [out / 'suite.md', out / 'suite.json', plot_regret_vs_distance(results, out / 'suite_regret_vs_distance.png',
                                                                          suite)]

r"""Run report of a simulated exploration: ``summary.json`` and a PNG, from the run's journal.

The simulation knows the true field :math:`f`, so it can score the explorer with the robust objective
:math:`g = f * \mathcal N(0, \Sigma_E)` (the field convolved with the execution noise, computed by dense
grid convolution): the **uncertain-inputs regret** of each target :math:`\hat r_t = g^* - g(\mathbf x_t)`
(Oliveira et al. 2019, Eq. 4) and the regret of the recommendation after each measurement
:math:`g^* - g(\mathbf x^{rec}_t)` at the place it names, also normalised as
:math:`(g^* - g(\mathbf x^{rec})) / (g^* - \mathrm{median}\, g)` (:math:`g^*` and the median over the run's
``search_bounds``, :mod:`~uncertain_bo.sim.robust_optimum`), beside the rule a survey would use (the
place of the highest reading so far: its target, where the rover did not reach it where the reading was taken)
and the costs a rover pays: the distance driven and the mission time, as the explorer measured them
(``distance_driven_m``, ``mission_time_s``: its odometer on the pose estimates and its clock, the numbers of
``explorer_result.json``, :func:`~uncertain_bo.reporting.run_report.run_totals`), and the simulation's own
``true_path_length_m`` (path length of the 1 Hz true trajectory, m: it differs from the odometer by the localisation
error along the path and by any driving the explorer did not see, e.g. while it refused poses), each per measurement
and for the run. :func:`plot_comparison` draws two runs of
the same field side by side (e.g. the explorer and a survey).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..distributions import DTYPE, GaussianExecutionNoise
from ..journal.journal import Journal
from ..reporting.output_files import replacing, save_figure, write_text
from ..planning.planner import Planner
from ..reporting.plot_style import MAP_MARKER, legend_outside, scatter_targets, unit_label
from ..reporting.run_report import (draw_revisions, measured_place, reading_locations, revision_totals,
                                    run_search_bounds, run_totals)
from ..reporting.units import ValueFormat
from .field import Field
from .robust_optimum import robust_optimum

__all__ = ['summarize', 'plot_run', 'plot_comparison', 'read_trajectory', 'write_trajectory',
           'distance_at', 'summary_format', 'result_lines']


def write_trajectory(path: str | Path, rows: list[tuple[float, float, float, float, float]]) -> Path:
    """Write ``(t, true_x, true_y, est_x, est_y)`` rows (s, m) as CSV."""
    path = Path(path)
    with replacing(path) as (tmp,), open(tmp, 'w', newline='') as fh:   # whole or not at all
        w = csv.writer(fh)
        w.writerow(['t', 'true_x', 'true_y', 'est_x', 'est_y'])
        w.writerows(rows)
    return path


def read_trajectory(path: str | Path) -> np.ndarray | None:
    """``(k, 5)`` trajectory array or None if the file is missing or empty."""
    path = Path(path)
    if not path.exists():
        return None
    data = np.genfromtxt(path, delimiter=',', skip_header=1, ndmin=2)
    return data if data.size else None


def distance_at(trajectory: np.ndarray | None, stamps: list[float | None]) -> list[float | None]:
    """True path length (m) by each stamp: path length of the true trajectory ``(k, 5)`` rows ``(t, true x,
    true y, ...)`` up to that time (the whole trajectory for ``inf``; None without a trajectory or a stamp)."""
    if trajectory is None or len(trajectory) < 2:
        return [None] * len(stamps)
    t = trajectory[:, 0]
    cum = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(trajectory[:, 1:3], axis=0).T))])
    return [None if s is None else float(np.interp(s, t, cum)) for s in stamps]


def summarize(run_dir: str | Path, field: Field, execution_cov: np.ndarray,
              extra: dict[str, Any] | None = None, search_bounds: list[float] | None = None) -> dict[str, Any]:
    """Score a run against the field's robust optimum within the search bounds and write ``summary.json``.

    Args:
        run_dir: folder holding ``journal.jsonl``.
        field: the true field :math:`f`.
        execution_cov: ``(2, 2)`` execution-noise covariance :math:`\\Sigma_E` of the robust objective, m².
        extra: more fields for the summary (e.g. measured arrival scatter, wall time); they replace what
            the explorer's ``explorer_result.json`` says (``stopped_because``, ``execution_noise_model``: the
            execution-noise model at the end, learned or configured, as std along x and y in m and correlation).
        search_bounds: ``[xmin, xmax, ymin, ymax]`` m where :math:`g^*` and the normaliser's median are taken
            (:func:`~uncertain_bo.sim.robust_optimum.robust_optimum`); default: the run's, from its journal header
            (the whole field when none is recorded).

    Returns:
        The summary dict (also written to ``run_dir/summary.json``).

    Raises:
        uncertain_bo.journal.journal.JournalError: no journal in ``run_dir``, or a damaged one.
    """
    run_dir = Path(run_dir)
    journal = Journal(run_dir / 'journal.jsonl', read_only=True)  # never touches a running mission's file
    robust = field.convolved(np.asarray(execution_cov, dtype=float))
    if search_bounds is None:
        search_bounds = run_search_bounds(journal.header)
    g_star_xy, g_star, g_median = robust_optimum(robust, search_bounds)
    span = g_star - g_median
    obs = journal.observations
    recs = {r['index']: r for r in journal.records if r.get('type') == 'recommendation'}
    decisions = [r for r in journal.records if r.get('type') == 'decision']
    per = []
    trajectory = read_trajectory(run_dir / 'trajectory.csv')
    true_path = distance_at(trajectory, [r.get('reading_stamp') for r in obs])
    best = None  # (highest reading so far, the regret of its measurement's place)
    revisions = journal.revisions
    for r, d in zip(obs, true_path):
        target = np.asarray(r['target'])
        g_t, g_place = (float(v) for v in robust.value(np.array([target, measured_place(r, search_bounds)])))
        if best is None or r['y'] > best[0]:
            best = (r['y'], g_star - g_place)
        row = {'index': r['index'], 'target': target.tolist(), 'y': r['y'],
               **reading_locations(journal, r, revisions),         # revised, where it was (and where it was taken)
               'target_robust_value': g_t, 'uncertain_inputs_regret': g_star - g_t,
               'highest_reading_normalised_regret': best[1] / span if span > 0 else math.nan,
               'distance_driven_m': r.get('distance_driven_m'), 'true_path_length_m': d,
               'reading_stamp': r.get('reading_stamp'),
               'goal_timed_out': bool(r.get('goal_timed_out', False))}
        if r['index'] in recs:
            x_rec = np.asarray(recs[r['index']]['target'])
            g_rec = float(robust.value(x_rec[None])[0])
            row.update(recommendation=x_rec.tolist(), recommendation_robust_value=g_rec,
                       recommendation_regret=g_star - g_rec,
                       normalised_regret=(g_star - g_rec) / span if span > 0 else math.nan)
        per.append(row)
    final = per[-1] if per else {}
    regrets = [p['uncertain_inputs_regret'] for p in per]
    totals = run_totals(run_dir, obs)
    if totals['mission_time_s'] is None:          # a journal without the explorer's clock: the last reading's stamp
        totals['mission_time_s'] = final.get('reading_stamp')
    summary = {
        'measurements': len(obs),
        'recommended_target': final.get('recommendation'),
        'recommended_robust_value': final.get('recommendation_robust_value'),
        'predicted_robust_value': recs[max(recs)]['mean'] if recs else None,
        'predicted_std': recs[max(recs)]['std'] if recs else None,
        'robust_optimum': {'target': np.asarray(g_star_xy).tolist(), 'value': g_star,
                           'field_median_of_g': g_median, 'method': 'dense grid convolution',
                           'search_bounds': search_bounds,
                           'execution_noise_covariance': np.asarray(execution_cov).tolist()},
        'field_max': float(np.max(field.grid()[2])),
        'reading_unit': field.unit,
        'final_regret': final.get('recommendation_regret'),
        'final_normalised_regret': final.get('normalised_regret'),
        'final_highest_reading_normalised_regret': final.get('highest_reading_normalised_regret'),
        **totals,
        'true_path_length_m': distance_at(trajectory, [math.inf])[0],
        'method': journal.header.get('method'),
        'mean_uncertain_inputs_regret': float(np.mean(regrets)) if regrets else None,
        'decision_seconds': [d['seconds'] for d in decisions if 'seconds' in d],   # optional in the journal
        'decision_seconds_median_acquisition': _median(
            [d['seconds'] for d in decisions if d.get('phase') == 'acquisition' and 'seconds' in d]),
        **revision_totals(revisions),
        'per_measurement': per,
        **_explorer_result(run_dir),
        **(extra or {}),
    }
    write_text(run_dir / 'summary.json', json.dumps(summary, indent=2))
    return summary


def summary_format(summary: dict[str, Any]) -> ValueFormat:
    """The format of a summary's field values: the precision the spread of its readings asks for
    (:class:`~uncertain_bo.reporting.units.ValueFormat`)."""
    return ValueFormat.of(p['y'] for p in summary.get('per_measurement') or [])


def result_lines(summary: dict[str, Any], whose: str = '') -> list[str]:
    """The final block's lines of a scored run (``uncertain-bo demo``, a team's with ``whose="team's "``): the
    recommendation with its predicted and true robust value, the field's robust optimum and the regret, in the
    precision and unit of the field (:func:`summary_format`)."""
    rec, opt = summary.get('recommended_target'), summary['robust_optimum']
    fmt, unit = summary_format(summary), (f" {summary['reading_unit']}" if summary.get('reading_unit') else '')
    lines = []
    if rec:
        lines.append(f"robust peak believed at ({rec[0]:.1f}, {rec[1]:.1f}) m: predicted E[f] = "
                     f"{fmt.pm(summary['predicted_robust_value'], summary.get('predicted_std'))}, true g = "
                     f"{fmt(summary['recommended_robust_value'])}{unit}")
    lines.append(f"field's robust optimum g* = {fmt(opt['value'])} at ({opt['target'][0]:.1f}, "
                 f"{opt['target'][1]:.1f}) m (median of g: {fmt(opt['field_median_of_g'])})")
    if summary.get('final_normalised_regret') is not None:
        lines.append(f"{whose}regret g* - g(x_rec) = {fmt(summary['final_regret'])}  (normalised "
                     f"{summary['final_normalised_regret']:.3f})")
    return lines


def _explorer_result(run_dir: Path) -> dict[str, Any]:
    """Why the explorer ended and its final execution-noise model, from the ``explorer_result.json`` it
    wrote (empty when the run has none, or it is unreadable)."""
    try:
        result = json.loads((run_dir / 'explorer_result.json').read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(result, dict):
        return {}
    return {'stopped_because': result.get('stopped_because'),
            'execution_noise_model': result.get('execution_noise')}


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def plot_run(run_dir: str | Path, field: Field, execution_cov: np.ndarray, *,
             title: str = '', grid_points: int = 60, ellipse_scale: float | None = None) -> Path:
    """Draw the run: field + trajectory + targets + 2σ location ellipses + recommendation; GP mean of the
    robust objective; regret per measurement. Writes ``run_dir/run.png``.

    The GP panel refits the run's planner from its journal (the same model the explorer used). Location
    ellipses of a few decimetres are invisible on a field of hundreds of metres, so they are magnified by
    ``ellipse_scale`` (default: so that the median ellipse is about 5 % of the field width; the legend says by
    how much).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.patches import Ellipse

    run_dir = Path(run_dir)
    journal = Journal(run_dir / 'journal.jsonl', read_only=True)  # never touches a running mission's file
    summary_path = run_dir / 'summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    xs, ys, z = field.grid()
    xmin, xmax, ymin, ymax = field.bounds
    obs = journal.observations
    targets = np.array([r['target'] for r in obs]) if obs else np.zeros((0, 2))
    revisions = journal.revisions
    locs = [journal.location(r, revisions) for r in obs]            # revised, where they were
    rovers = [r.get('rover') for r in obs]               # a team's: each measurement's rover (None: one rover)
    traj = read_trajectory(run_dir / 'trajectory.csv')

    fig, axes = plt.subplots(1, 3, figsize=(17, 6.0), gridspec_kw={'width_ratios': [1, 1, 0.8]})
    ax = axes[0]
    im = ax.imshow(z, origin='lower', extent=(xmin, xmax, ymin, ymax), cmap='terrain', aspect='equal')
    fig.colorbar(im, ax=ax, shrink=0.8, label=unit_label('field f', field.unit))
    if traj is not None:
        ax.plot(traj[:, 1], traj[:, 2], '-', color='k', lw=0.8, alpha=0.7, label='true trajectory')
    if len(targets):
        if ellipse_scale is None:
            sd = np.median([np.sqrt(max(float(np.linalg.eigvalsh(loc.covariance[0].numpy()).max()), 0.0))
                            for loc in locs])
            ellipse_scale = max(1.0, round(0.05 * (xmax - xmin) / (2 * 2 * sd))) if sd > 0 else 1.0
        scatter_targets(ax, targets, rovers, numbers=True)
        for loc in locs:
            mean, cov = loc.mean[0].numpy(), loc.covariance[0].numpy()
            evals, evecs = np.linalg.eigh(cov)
            angle = math.degrees(math.atan2(evecs[1, 1], evecs[0, 1]))
            w, h = ellipse_scale * 2 * 2 * np.sqrt(np.maximum(evals[::-1], 0))  # 2σ ellipse, magnified
            ax.add_patch(Ellipse(mean, w, h, angle=angle, fill=False, color='blue', lw=0.9))
        scale_txt = f' ×{ellipse_scale:g}' if ellipse_scale != 1 else ''
        ax.plot([], [], color='blue', lw=0.9, label=f'location 2σ{scale_txt} (localiser)')
    draw_revisions(ax, journal)
    if summary and summary.get('recommended_target'):
        r = summary['recommended_target']
        ax.scatter([r[0]], [r[1]], marker='*', s=260, color='gold', edgecolor='k', label='recommendation',
                   **{**MAP_MARKER, 'zorder': 5})
        o = summary['robust_optimum']['target']
        ax.scatter([o[0]], [o[1]], marker='P', s=120, color='white', edgecolor='k', label='robust optimum g*',
                   **{**MAP_MARKER, 'zorder': 5})
    ax.set(xlim=(xmin, xmax), ylim=(ymin, ymax), xlabel='x (m)', ylabel='y (m)', title='field, path, samples')
    legend_outside(ax, 'below')

    ax = axes[1]
    if len(obs) >= 2:
        header = journal.header
        planner = Planner(torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE),
                          GaussianExecutionNoise(torch.as_tensor(execution_cov, dtype=DTYPE)),
                          method=header.get('method', 'ugp_ucb'), journal=None)
        for r, loc in zip(obs, locs):
            planner.observe(torch.tensor(r['target'], dtype=DTYPE), loc, float(r['y']))
        gx, gy = np.linspace(xmin, xmax, grid_points), np.linspace(ymin, ymax, grid_points)
        pts = np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2)
        mean, _ = planner.predict(torch.as_tensor(pts, dtype=DTYPE))
        im = ax.imshow(mean.numpy().reshape(grid_points, grid_points), origin='lower',
                       extent=(xmin, xmax, ymin, ymax), cmap='terrain', aspect='equal')
        fig.colorbar(im, ax=ax, shrink=0.8, label=unit_label('GP mean of E[f(x̃)]', field.unit))
        scatter_targets(ax, targets, rovers, size=20, label=False)
    ax.set(xlim=(xmin, xmax), ylim=(ymin, ymax), xlabel='x (m)', title='GP posterior mean (robust objective)')

    ax = axes[2]
    if summary and summary['per_measurement']:
        per = summary['per_measurement']
        t = [p['index'] + 1 for p in per]
        ax.plot(t, [p['uncertain_inputs_regret'] for p in per], 'o-', ms=3, label='target regret g* − g(x_t)')
        if 'recommendation_regret' in per[-1]:
            ax.plot(t, [p.get('recommendation_regret', np.nan) for p in per], 's-', ms=3,
                    label='recommendation regret')
        ax.set(xlabel='measurement', ylabel=unit_label('regret', field.unit), title='uncertain-inputs regret')
        ax.grid(alpha=0.3)
        legend_outside(ax, 'below', ncol=1, fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = save_figure(fig, run_dir / 'run.png', dpi=110, bbox_inches='tight')
    plt.close(fig)
    return out


def plot_comparison(run_dirs: list[str | Path], field: Field, execution_cov: np.ndarray, out: str | Path) -> Path:
    """Two (or more) runs on the same field side by side: field with each run's true path, targets,
    measured locations and recommendation; then normalised regret of the recommendation (solid) and of the
    highest-reading rule (dashed) against the distance driven, every run on one axis.

    Args:
        run_dirs: run folders (each with ``journal.jsonl``; ``trajectory.csv`` for the distance).
        field: the true field, shared by the runs.
        execution_cov: ``(2, 2)`` execution-noise covariance of the robust objective, m².
        out: the PNG to write.

    Returns:
        ``out``.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    summaries = [summarize(d, field, execution_cov) for d in run_dirs]
    xs, ys, z = field.grid()
    xmin, xmax, ymin, ymax = field.bounds
    n = len(run_dirs)
    fig, axes = plt.subplots(1, n + 1, figsize=(5.6 * n + 6, 5.6))
    colors = ['tab:blue', 'tab:red', 'tab:green', 'tab:purple']
    for ax, run_dir, summ, c in zip(axes, run_dirs, summaries, colors):
        ax.imshow(z, origin='lower', extent=(xmin, xmax, ymin, ymax), cmap='terrain', aspect='equal')
        traj = read_trajectory(Path(run_dir) / 'trajectory.csv')
        if traj is not None:
            ax.plot(traj[:, 1], traj[:, 2], '-', color='k', lw=0.7, alpha=0.7, label='true path')
        per = summ['per_measurement']
        if per:
            t = np.array([p['target'] for p in per])
            loc = np.array([p['location_mean'] for p in per])
            ax.scatter(t[:, 0], t[:, 1], marker='x', color=c, s=25, label='targets', **MAP_MARKER)
            ax.scatter(loc[:, 0], loc[:, 1], marker='.', color='k', s=12, label='measured (location mean)',
                       **MAP_MARKER)
        if summ.get('recommended_target'):
            r = summ['recommended_target']
            ax.scatter([r[0]], [r[1]], marker='*', s=240, color='gold', edgecolor='k', label='recommendation',
                       **{**MAP_MARKER, 'zorder': 5})
        o = summ['robust_optimum']['target']
        ax.scatter([o[0]], [o[1]], marker='P', s=110, color='white', edgecolor='k', label='robust optimum',
                   **{**MAP_MARKER, 'zorder': 5})
        reg, dist = summ.get('final_normalised_regret'), summ.get('distance_driven_m')
        ax.set_title(f'{_run_name(summ, run_dir)}: regret {_fmt(reg)}, '
                     f'{_fmt(dist, ".0f")} m driven', fontsize=9)
        ax.set(xlim=(xmin, xmax), ylim=(ymin, ymax), xlabel='x (m)', ylabel='y (m)')
        legend_outside(ax, 'below', ncol=2)
    ax = axes[-1]
    for run_dir, summ, c in zip(run_dirs, summaries, colors):
        per = summ['per_measurement']
        d = [p['distance_driven_m'] for p in per]
        if not per or any(v is None for v in d):
            continue
        label = _run_name(summ, run_dir)
        ax.plot(d, [p.get('normalised_regret', np.nan) for p in per], '-o', ms=3, color=c,
                label=f'{label}: recommendation')
        ax.plot(d, [p['highest_reading_normalised_regret'] for p in per], '--', color=c, alpha=0.7,
                label=f'{label}: highest reading')
    ax.set(xlabel="distance driven (m, the explorer's odometer)",
           ylabel='normalised regret (g* − g(x)) / (g* − median g)',
           title='regret against distance driven')
    ax.grid(alpha=0.3)
    legend_outside(ax, 'below', ncol=2)
    fig.tight_layout()
    out = save_figure(fig, Path(out), dpi=110, bbox_inches='tight')
    plt.close(fig)
    return out


def _run_name(summary: dict[str, Any], run_dir: str | Path) -> str:
    """A compared run's name: its method and its folder (two runs of one method are told apart)."""
    method = summary.get('method')
    return f'{method} ({Path(run_dir).name})' if method else Path(run_dir).name


def _fmt(v: float | None, spec: str = '.2f') -> str:
    return '–' if v is None or not math.isfinite(v) else format(v, spec)

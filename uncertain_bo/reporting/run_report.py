"""Report of a run without ground truth: a real robot's run folder (no simulated field to score it against).

A field run has no true field, so it has no regret: the report gives what the run itself knows, in the run's
own search bounds and units. :func:`summarize_run` writes ``summary.json`` (measurements, the final
recommendation and its predicted robust value, reading statistics, distance and time, targets skipped and
their keep-out zones, decision times); :func:`plot_field_run` draws ``run.png``: the GP posterior mean and
standard deviation of the robust objective over the run's ``search_bounds`` (the planner refitted from the
journal, as the explorer had it), with the targets, the location distributions' 2σ ellipses, the
recommendation and the keep-out zones, and the readings per measurement.

The search bounds, method, execution noise and reading type come from the journal's header (the explorer
records its parameters there); a run folder's ``parameters.json`` is not needed. The unit of the readings is the
run's (:func:`~uncertain_bo.reporting.units.reading_unit`: the explorer's ``reading_unit``, else the unit its reading
type's message defines); a run without one is labelled with its reading type, never with a unit it did not give.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .output_files import save_figure, write_text
from .plot_style import MAP_MARKER, legend_outside, scatter_targets, unit_label
from .units import reading_unit

__all__ = ['summarize_run', 'plot_field_run', 'run_search_bounds', 'measured_place', 'run_totals', 'reading_label',
           'draw_revisions', 'reading_locations', 'revision_totals']


def reading_label(what: str, params: dict[str, Any]) -> str:
    """``what`` labelled with the unit of a run's readings (its explorer parameters): ``'what [unit]'`` where the run
    gives a unit (:func:`~uncertain_bo.reporting.units.reading_unit`), else ``'what (<reading_type> readings)'``, else
    ``what``."""
    unit = reading_unit(params)
    kind = params.get('reading_type')
    if unit or not (isinstance(kind, str) and kind):
        return unit_label(what, unit)
    return f'{what} ({kind} readings)'


def run_search_bounds(header: dict[str, Any]) -> list[float] | None:
    """``[xmin, xmax, ymin, ymax]`` m of a journal header: the explorer's ``search_bounds`` parameter, else the
    planner's ``bounds`` (``[[xmin, ymin], [xmax, ymax]]``); None when neither is recorded."""
    params = header.get('parameters') or {}
    b = params.get('search_bounds')
    if isinstance(b, (list, tuple)) and len(b) == 4:
        return [float(v) for v in b]
    b = header.get('bounds')
    if isinstance(b, (list, tuple)) and len(b) == 2 and all(len(r) == 2 for r in b):
        return [float(b[0][0]), float(b[1][0]), float(b[0][1]), float(b[1][1])]
    return None


def measured_place(record: dict[str, Any], search_bounds: list[float] | None) -> list[float]:
    """The place an ``observation`` record measured, as :attr:`~uncertain_bo.planning.planner.Planner.measured_places`
    has it: its target, or where its reading was taken (its location mean, clamped into ``search_bounds`` ``[xmin, xmax,
    ymin, ymax]`` when given) when the rover did not reach the target (``goal_timed_out``)."""
    from ..journal.journal import location_from_record

    if not record.get('goal_timed_out', False):
        return [float(v) for v in record['target']]
    mean = location_from_record(record['location']).mean[0].tolist()
    if search_bounds is None:
        return mean
    lo, hi = search_bounds[0::2], search_bounds[1::2]
    return [min(max(v, a), b) for v, a, b in zip(mean, lo, hi)]


def reading_locations(journal: Any, record: dict, revisions: dict) -> dict[str, Any]:
    """A stored reading's place in a report: ``location_mean``, where the model holds it (its last revision, else where
    it was taken), and for a revised one ``location_mean_as_taken`` (``revisions``:
    :attr:`~uncertain_bo.journal.journal.Journal.revisions`)."""
    from ..journal.journal import location_from_record

    out = {'location_mean': journal.location(record, revisions).mean[0].tolist()}
    if (record.get('type', 'observation'), record['index']) in revisions:
        out['location_mean_as_taken'] = location_from_record(record['location']).mean[0].tolist()
    return out


def revision_totals(revisions: dict) -> dict[str, int]:
    """``readings_revised`` and ``revisions`` (records) of a journal's
    :attr:`~uncertain_bo.journal.journal.Journal.revisions`."""
    return {'readings_revised': len(revisions), 'revisions': sum(len(v) for v in revisions.values())}


def draw_revisions(ax: Any, journal: Any, color: str = 'red') -> int:
    """Draw a thin line from where each reading (measurement or en-route) of ``journal`` was placed when it was taken
    to where its last revision places it (:mod:`uncertain_bo.planning.revisions`), and a dot there; returns how many
    readings were revised (nothing drawn for none)."""
    from matplotlib.collections import LineCollection

    from ..journal.journal import location_from_record

    revisions = journal.revisions
    pairs = [(location_from_record(r['location']).mean[0].tolist(), journal.location(r, revisions).mean[0].tolist())
             for r in journal.records if (r.get('type'), r.get('index')) in revisions]
    if pairs:
        ax.add_collection(LineCollection(pairs, colors=color, linewidths=0.8, zorder=4))
        ax.scatter([b[0] for _, b in pairs], [b[1] for _, b in pairs], s=6, color=color, zorder=4,
                   label=f'revised location ({len(pairs)} readings; line from where it was taken)')
    return len(pairs)


def _result(run_dir: Path) -> dict[str, Any]:
    try:
        result = json.loads((run_dir / 'explorer_result.json').read_text())
    except (OSError, ValueError):
        return {}
    return result if isinstance(result, dict) else {}


def run_totals(run_dir: str | Path, observations: list[dict[str, Any]]) -> dict[str, float | None]:
    """The run's ``{'distance_driven_m', 'mission_time_s'}``, one definition in every file of a run folder: the
    explorer's odometer and mission clock (:mod:`uncertain_bo.explorer.budget`: the path through the pose estimates
    it accepted, m, the time since its first pose, s; what ``max_distance`` and ``max_mission_time`` are charged)
    at the mission's end, as ``explorer_result.json`` gives them (a team's: the sum of its rovers' distances, the
    longest rover's time), else as the journal's last ``observation`` records (each rover's last) have them; None
    where neither says. A simulated run's true path length is another quantity
    (:func:`~uncertain_bo.sim.report.summarize`: ``true_path_length_m``)."""
    result = _result(Path(run_dir))
    rovers = result.get('rovers')
    parts = list(rovers.values()) if isinstance(rovers, dict) and rovers else [result]
    if not all(isinstance(p, dict) and _finite(p.get('distance_driven_m')) for p in parts):
        last: dict[Any, dict[str, Any]] = {}
        for r in observations:            # each rover's (or the one rover's) last record
            last[r.get('rover')] = r
        parts = list(last.values())
    distance = [p['distance_driven_m'] for p in parts if _finite(p.get('distance_driven_m'))]
    time = [p['mission_time_s'] for p in parts if _finite(p.get('mission_time_s'))]
    return {'distance_driven_m': float(sum(distance)) if distance else None,
            'mission_time_s': float(max(time)) if time else None}


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def summarize_run(run_dir: str | Path) -> dict[str, Any]:
    """Summary of a run without ground truth, written to ``run_dir/summary.json`` (module docstring).

    Returns:
        The summary: ``ground_truth`` None and no regret keys; ``search_bounds`` (m), ``reading_unit``,
        ``recommended_target`` and ``predicted_robust_value`` (the last recommendation the explorer journaled),
        ``readings`` (min, max, mean), ``per_measurement`` rows, ``distance_driven_m``, ``mission_time_s``
        (:func:`run_totals`),
        ``targets_skipped``, ``keep_out_zones``, ``relocalisations`` (the re-localisations the explorer decided:
        :mod:`~uncertain_bo.explorer.relocalising`), ``decision_seconds``, ``stopped_because``.

    Raises:
        uncertain_bo.journal.journal.JournalError: no journal in ``run_dir``, or a damaged one.
    """
    from ..journal.journal import Journal

    run_dir = Path(run_dir)
    journal = Journal(run_dir / 'journal.jsonl', read_only=True)   # never touches a running mission's file
    header, obs = journal.header, journal.observations
    params = header.get('parameters') or {}
    recs = {r['index']: r for r in journal.records if r.get('type') == 'recommendation'}
    zones = [r for r in journal.records if r.get('type') == 'keep_out']
    per = []
    revisions = journal.revisions
    for r in obs:
        row = {'index': r['index'], 'target': r['target'], 'y': r['y'],
               **reading_locations(journal, r, revisions),          # revised, where it was
               'distance_driven_m': r.get('distance_driven_m'), 'mission_time_s': r.get('mission_time_s'),
               'goal_timed_out': bool(r.get('goal_timed_out', False))}
        if r['index'] in recs:
            row.update(recommendation=recs[r['index']]['target'], predicted_robust_value=recs[r['index']]['mean'])
        per.append(row)
    ys = [r['y'] for r in obs]
    last = recs[max(recs)] if recs else None
    result = _result(run_dir)
    reading_type = params.get('reading_type')
    summary = {
        'ground_truth': None,
        'measurements': len(obs),
        'method': header.get('method'),
        'search_bounds': run_search_bounds(header),
        'reading_type': reading_type,
        'reading_unit': reading_unit(params),
        'recommended_target': last['target'] if last else None,
        'predicted_robust_value': last['mean'] if last else None,
        'predicted_std': last['std'] if last else None,
        'readings': ({'min': min(ys), 'max': max(ys), 'mean': float(np.mean(ys))} if ys else None),
        **run_totals(run_dir, obs),
        **revision_totals(revisions),
        'targets_skipped': len(zones),
        'keep_out_zones': [{k: z.get(k) for k in ('index', 'centre', 'radius', 'reason')} for z in zones],
        'relocalisations': sum(r.get('type') == 'relocalisation' and r.get('phase') == 'start'
                               for r in journal.records),
        'decision_seconds': [d['seconds'] for d in journal.records   # 'seconds' is optional in the journal
                             if d.get('type') == 'decision' and 'seconds' in d],
        'stopped_because': result.get('stopped_because'),
        'execution_noise_model': result.get('execution_noise'),
        'per_measurement': per,
    }
    write_text(run_dir / 'summary.json', json.dumps(summary, indent=2))
    return summary


def plot_field_run(run_dir: str | Path, grid_points: int = 60) -> Path:
    """Draw a run without ground truth into ``run_dir/run.png``: GP mean and std of the robust objective over the
    run's search bounds, with targets, 2σ location ellipses, recommendation and keep-out zones; readings per
    measurement.

    Raises:
        uncertain_bo.journal.journal.JournalError: no journal in ``run_dir``, or a damaged one.
        ValueError: the journal records no search bounds.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import torch
    from matplotlib.patches import Circle, Ellipse

    from ..distributions import DTYPE, GaussianExecutionNoise
    from ..journal.journal import Journal
    from ..planning.planner import Planner

    run_dir = Path(run_dir)
    journal = Journal(run_dir / 'journal.jsonl', read_only=True)
    header = journal.header
    bounds = run_search_bounds(header)
    if bounds is None:
        raise ValueError(f'{run_dir / "journal.jsonl"} records no search bounds: cannot draw the run')
    xmin, xmax, ymin, ymax = bounds
    params = header.get('parameters') or {}
    std = params.get('execution_noise_std') or [0.75, 0.75]

    obs = journal.observations
    summary_path = run_dir / 'summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    targets = np.array([r['target'] for r in obs]) if obs else np.zeros((0, 2))
    revisions = journal.revisions
    locs = [journal.location(r, revisions) for r in obs]          # revised, where they were

    fig, axes = plt.subplots(1, 3, figsize=(17, 5.6), gridspec_kw={'width_ratios': [1, 1, 0.8]})
    extent = (xmin, xmax, ymin, ymax)
    if len(obs) >= 2:
        planner = Planner(torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE),
                          GaussianExecutionNoise.isotropic([float(s) for s in std]),
                          method=header.get('method', 'ugp_ucb'), journal=None)
        for r, loc in zip(obs, locs):
            planner.observe(torch.tensor(r['target'], dtype=DTYPE), loc, float(r['y']),
                            float(r.get('reading_variance', 0.0) or 0.0))
        gx, gy = np.linspace(xmin, xmax, grid_points), np.linspace(ymin, ymax, grid_points)
        pts = np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2)
        mean, sd = planner.predict(torch.as_tensor(pts, dtype=DTYPE))
        panels = ((axes[0], mean, reading_label('GP mean of E[f(x̃)]', params)),
                  (axes[1], sd, reading_label('GP std', params)))
        for ax, values, label in panels:
            im = ax.imshow(values.detach().numpy().reshape(grid_points, grid_points), origin='lower',
                           extent=extent, cmap='viridis' if ax is axes[0] else 'magma', aspect='equal')
            fig.colorbar(im, ax=ax, shrink=0.8, label=label)
    rovers = [r.get('rover') for r in obs]               # a team's: each measurement's rover (None: one rover)
    for ax in axes[:2]:
        if len(targets):
            scatter_targets(ax, targets, rovers, size=25, label=ax is axes[0])
        for z in summary.get('keep_out_zones') or []:
            ax.add_patch(Circle(z['centre'], z['radius'], fill=False, color='orange', lw=1.2, ls='--'))
        if summary.get('keep_out_zones'):
            ax.plot([], [], color='orange', ls='--', label='keep-out (not measurable)')
        ax.set(xlim=(xmin, xmax), ylim=(ymin, ymax), xlabel='x (m)', ylabel='y (m)')
    for loc in locs:
        mean_xy, cov = loc.mean[0].numpy(), loc.covariance[0].numpy()
        evals, evecs = np.linalg.eigh(cov)
        angle = math.degrees(math.atan2(evecs[1, 1], evecs[0, 1]))
        w, h = 2 * 2 * np.sqrt(np.maximum(evals[::-1], 0))
        axes[0].add_patch(Ellipse(mean_xy, w, h, angle=angle, fill=False, color='white', lw=0.8))
    if locs:
        axes[0].plot([], [], color='white', lw=0.8, label='location 2σ')
    draw_revisions(axes[0], journal)
    rec = summary.get('recommended_target')
    if rec:
        axes[0].scatter([rec[0]], [rec[1]], marker='*', s=260, color='gold', edgecolor='k',
                        label='recommendation', **{**MAP_MARKER, 'zorder': 5})
    axes[0].set_title('GP posterior mean (robust objective), search bounds')
    axes[1].set_title('GP posterior std')
    legend_outside(axes[0], 'below')
    ax = axes[2]
    if obs:
        ax.plot([r['index'] + 1 for r in obs], [r['y'] for r in obs], 'o-', ms=3, label='reading')
        ax.set(xlabel='measurement', ylabel=reading_label('reading', params),
               title='readings (no ground truth: no regret)')
        ax.grid(alpha=0.3)
    fig.suptitle(f'{header.get("method", "")} run without ground truth: {len(obs)} measurements', fontsize=10)
    fig.tight_layout()
    out = save_figure(fig, run_dir / 'run.png', dpi=110, bbox_inches='tight')
    plt.close(fig)
    return out

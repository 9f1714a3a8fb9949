"""The run's result: what the explorer writes to ``result_file`` when the mission ends (:func:`run_result`, written
atomically by :func:`write_result`) and the execution-noise model it reports (:func:`execution_noise_summary`).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from ..planning.planner import Planner, Recommendation

__all__ = ['run_result', 'write_result', 'execution_noise_summary']


def execution_noise_summary(planner: Planner) -> dict[str, Any] | None:
    r"""The planner's current Gaussian execution-noise model :math:`\hat\Sigma` as std along x and y (m) and
    correlation, with whether it is learned online (:meth:`~uncertain_bo.planning.planner.Planner.
    learned_execution_covariance`) or configured; None for a non-Gaussian model.

    Returns:
        ``{'source': 'learned' | 'configured', 'std': [sx, sy], 'correlation': rho, 'covariance': [[...]]}``.
    """
    learned = planner.learned_execution_covariance()
    cov = learned if learned is not None else getattr(planner.execution_noise, 'covariance', None)
    if cov is None or tuple(cov.shape) != (2, 2):
        return None
    c = cov.detach().cpu().double().numpy()
    sx, sy = math.sqrt(max(c[0, 0], 0.0)), math.sqrt(max(c[1, 1], 0.0))
    rho = float(c[0, 1] / (sx * sy)) if sx > 0 and sy > 0 else 0.0
    return {'source': 'learned' if learned is not None else 'configured', 'std': [sx, sy], 'correlation': rho,
            'covariance': c.tolist()}


def run_result(planner: Planner, rec: Recommendation | None, rejected: Mapping[str, int], targets_skipped: int,
               stopped_because: str | None, totals: Mapping[str, float]) -> dict[str, Any]:
    """The run's result as written to ``result_file``: the recommendation ``rec`` (None before any measurement: the
    place ``recommended_target``, where the reading it names was taken ``recommended_location`` (mean, m, and
    covariance, m², of its location distribution; None for a place that was not measured), which measurement that is
    ``recommended_measurement`` (-1: an en-route reading or a place not measured), the predicted robust value and
    std), counts (measurements, en-route readings, ``rejected`` inputs by category, ``targets_skipped``), why it ended
    (``stopped_because``), the budget ``totals`` (distance driven, m, mission time, s), the execution-noise model
    (:func:`execution_noise_summary`), ``revisions``: revised locations applied and rejected by reason
    (:mod:`uncertain_bo.planning.revisions`), and ``journal_damage``: what resuming the journal skipped
    (:attr:`~uncertain_bo.planning.planner.Planner.journal_damage`: records skipped, records missing, the problems by
    line)."""
    return {'recommended_target': rec.target.tolist() if rec is not None else None,
            'recommended_location': rec.where_measured() if rec is not None else None,
            'recommended_measurement': rec.index if rec is not None else None,
            'predicted_robust_value': rec.mean if rec is not None else None,
            'predicted_std': rec.std if rec is not None else None,
            'measurements': planner.n, 'en_route_readings': planner.n_en_route,
            'rejected': dict(rejected), 'targets_skipped': targets_skipped,
            'keep_out_zones': [z.record() for z in planner.keep_out.zones],
            'stopped_because': stopped_because, **totals,
            'execution_noise': execution_noise_summary(planner),
            'revisions': {'applied': planner.revisions_applied, 'rejected': dict(planner.revisions_rejected)},
            'journal_damage': planner.journal_damage}


def write_result(path: str | Path, result: Mapping[str, Any]) -> None:
    """Write ``result`` to ``path`` as JSON, atomically (a crash leaves the old file or the new one, never half of
    one).

    Raises:
        OSError: it could not be written (the temporary file is removed).
    """
    path = Path(path)
    tmp = path.with_suffix(path.suffix + '.tmp')
    try:
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise

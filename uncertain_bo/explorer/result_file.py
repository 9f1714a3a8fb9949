"""The run's result: what the explorer writes to ``result_file`` when the mission ends (:meth:`ResultFile.result`,
written atomically) and the execution-noise model it reports (:func:`execution_noise_summary`).
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any

from ..planner import Planner, Recommendation

__all__ = ['ResultFile', 'execution_noise_summary']


def execution_noise_summary(planner: Planner) -> dict[str, Any] | None:
    r"""The planner's current Gaussian execution-noise model :math:`\hat\Sigma` as std along x and y (m) and
    correlation, with whether it is learned online (:meth:`~uncertain_bo.planner.Planner.
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


class ResultFile:
    """The result file of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: it reads the
    explorer's planner, counters, budget and ``result_file``)."""

    def result(self, rec: Recommendation | None) -> dict[str, Any]:
        """The run's result as written to ``result_file``: the recommendation (None before any measurement: the
        place ``recommended_target``, where the reading it names was taken ``recommended_location`` (mean, m, and
        covariance, m², of its location distribution; None for a place that was not measured), which measurement
        that is ``recommended_measurement`` (-1: an en-route reading or a place not measured), the predicted robust
        value and std), counts (measurements, en-route readings, rejected inputs), why it ended, distance driven (m),
        mission time (s), the execution-noise model (:func:`execution_noise_summary`), ``revisions``: revised
        locations applied and rejected by reason (:mod:`uncertain_bo.planner_revisions`), and ``journal_damage``: what
        resuming the journal skipped (:attr:`~uncertain_bo.planner.Planner.journal_damage`: records skipped, records
        missing, the problems by line)."""
        now = self._last_now if self._last_now is not None else 0.0
        return {'recommended_target': rec.target.tolist() if rec is not None else None,
                'recommended_location': rec.where_measured() if rec is not None else None,
                'recommended_measurement': rec.index if rec is not None else None,
                'predicted_robust_value': rec.mean if rec is not None else None,
                'predicted_std': rec.std if rec is not None else None,
                'measurements': self.planner.n, 'en_route_readings': self.planner.n_en_route,
                'rejected': dict(self.rejected), 'targets_skipped': self.skipped_targets,
                'keep_out_zones': [z.record() for z in self.planner.keep_out.zones],
                'stopped_because': self.done_reason, **self.budget.totals(now),
                'execution_noise': execution_noise_summary(self.planner),
                'revisions': {'applied': self.planner.revisions_applied,
                              'rejected': dict(self.planner.revisions_rejected)},
                'journal_damage': self.planner.journal_damage}

    def _write_result(self, rec: Recommendation | None) -> None:
        path = Path(self.result_file)
        tmp = path.with_suffix(path.suffix + '.tmp')
        try:
            tmp.write_text(json.dumps(self.result(rec), indent=2))
            os.replace(tmp, path)  # atomic: a crash leaves the old file or the new one, never half of one
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

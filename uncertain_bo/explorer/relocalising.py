"""Re-localisation as a decision: before a new target is sent, the explorer may first drive to a fix source at a
known place (a UWB anchor, a fiducial, an open-sky clearing) or take the surfacing action, when its position is too
uncertain for the model.

**The rule** (``relocalise_kappa`` > 0; off by default). Before a target decided by the planner is sent, with
σ_L = sqrt((var x + var y) / 2) the newest pose estimate's per-axis position std and ℓ the model's smallest
fitted lengthscale (input units, m):

- σ_L > κ ℓ (``relocalise_kappa``): the regime where the location error blurs what a reading says about the field
  (the expected SE kernel's shrinkage factor |I + Σ_L / ℓ²|^-1/2 falls below 1 / (1 + κ²)); below it a fix buys the
  model little;
- among the fix sources (``fix_sources``: ``x, y, radius, cost`` each) whose radius the rover is not already
  within, the one with the smallest detour plus cost, |p − c| + |c − t| − |p − t| + cost (p the position estimate,
  c the source, t the target; m), if that is within ``relocalise_max_detour``: drive to its centre (a
  ``relocalising`` stage), wait there until the covariance has dropped (to half the threshold, or to half of what
  it was and no longer falling), at most ``relocalise_max_time`` s, then send the target;
- else, when the vehicle has a surfacing action (``surface_cost`` > 0 s, within ``relocalise_max_time``) and its
  host offers it (:meth:`~uncertain_bo.explorer.outputs.ExplorerOutputs.request_surfacing`), stop, ask for it and
  wait as above (at most ``surface_cost`` + :data:`SURFACE_MARGIN` s);
- else the target is sent as it is.

The rule is not re-applied to the same target (a source that gave no fix is not a loop). A run-time change of the
parameters applies from the next target. Every re-localisation is journaled, append-only: a ``relocalisation``
record with ``phase: 'start'`` (kind, source, position, σ_L, ℓ, detour or cost, the target it was taken for) and
one with ``phase: 'end'`` (σ_L after it, the time it took, why it ended); they store no reading and number no
index, so a resumed run counts each reading once and knows how many re-localisations the run took
(:attr:`Relocalising.count`, :mod:`~uncertain_bo.reporting.run_report`). A restart during a re-localisation
resumes the pending target, to which the rule applies again.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..parameters.explorer_checks import fix_sources_problem
from ..planning.planner import Planner
from .area import GOAL_TOLERANCE, distance_outside
from .estimates import PoseEstimate, position_std

__all__ = ['Relocalising', 'Relocalisation', 'fix_source_array', 'fix_sources_problem', 'SURFACE_MARGIN', 'ARRIVED',
           'RESEND']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: a surfacing re-localisation waits at most the action's ``surface_cost`` plus this (s) for the fix
SURFACE_MARGIN = 30.0
#: the wait ends once σ_L has not fallen by more than SETTLE_DROP (relative) for SETTLE_TIME s
SETTLE_TIME = 3.0
SETTLE_DROP = 0.05

#: what :meth:`Relocalising.step` asks of the explorer: stop the rover at the fix source; send its goal again
ARRIVED = 'arrived'
RESEND = 'resend'


def fix_source_array(values: Any) -> np.ndarray:
    """``fix_sources`` as a ``(k, 4)`` array ``x, y, radius, cost`` of the sources with a positive radius."""
    v = np.asarray(values, dtype=float).reshape(-1, 4)
    return v[v[:, 2] > 0]


@dataclass
class Relocalisation:
    """A re-localisation under way: ``kind`` ``'fix_source'`` or ``'surface'``, the source's row in
    ``fix_sources`` (None for surfacing), its centre, the target it was taken for, when it started and the σ_L then,
    when the rover started waiting (None while driving to the source), and the σ_L history of the wait.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer.relocalising import Relocalisation
        >>> r = Relocalisation('fix_source', 0, np.array([5.0, 5.0]), np.array([40.0, 40.0]), threshold=1.0,
        ...                    started=12.0, sigma_start=3.2)
        >>> r.kind, r.waiting_since is None                # still driving to the source
        ('fix_source', True)
    """

    kind: str
    source: int | None
    centre: np.ndarray | None
    target: np.ndarray
    threshold: float
    started: float
    sigma_start: float
    waiting_since: float | None = None
    last_drop: tuple[float, float] | None = None     # (time, σ_L) when σ_L last fell by more than SETTLE_DROP
    limit: float = 0.0


class Relocalising:
    """The re-localisation rule and the re-localisation under way (module docstring): the explorer asks
    :meth:`start` before it sends a target, and :meth:`step` in its ``relocalising`` stage; it sends the goals and
    stops they ask for.

    Args:
        planner: its model's lengthscale; its journal receives the ``relocalisation`` records.
        params: the explorer's parameters, read live (``relocalise_kappa``, ``fix_sources``,
            ``relocalise_max_detour``, ``relocalise_max_time``, ``surface_cost``, ``search_bounds``,
            ``xy_goal_tolerance``, ``goal_timeout``).

    Attributes:
        current: the re-localisation under way (:class:`Relocalisation`), or None.
        count: re-localisations started in this run (a resumed journal's included).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters, PoseEstimate
        >>> from uncertain_bo.explorer.relocalising import Relocalising
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> relocalising = Relocalising(planner_from_parameters(params), params)
        >>> params['relocalise_kappa']                    # the rule is off by default: no detour before a target
        0.0
        >>> pose = PoseEstimate(1.0, 'map', np.array([5.0, 5.0]), np.diag([9.0, 9.0]))
        >>> relocalising.start(np.array([40.0, 40.0]), pose, 1.0, request_surfacing=None) is None
        True
    """

    def __init__(self, planner: Planner, params: dict[str, Any]):
        self.planner = planner
        self.params = params
        self.current: Relocalisation | None = None
        self._skip: np.ndarray | None = None     # the target the rule was applied to last (never twice)
        journal = planner.journal_file
        self.count = sum(1 for r in (journal.records if journal is not None else ())
                         if r.get('type') == 'relocalisation' and r.get('phase') == 'start')

    def _lengthscale(self) -> float | None:
        """The model's smallest fitted lengthscale (m), None for a kernel without one."""
        try:
            return float(min(self.planner.model.hyperparameters()['lengthscale']))
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def start(self, target: np.ndarray, pose: PoseEstimate | None, now: float,
              request_surfacing: Callable[[], bool] | None) -> Relocalisation | None:
        """Apply the rule (module docstring) before ``target`` ``(2,)`` is sent, the rover estimated at ``pose``.
        Returns the re-localisation that started (journaled; the explorer drives to its ``centre``, or for
        surfacing, which ``request_surfacing`` has asked the host for, stops and waits), or None: send the target."""
        kappa = float(self.params['relocalise_kappa'])
        if kappa <= 0 or pose is None:
            return None
        if self._skip is not None and np.array_equal(self._skip, target):
            return None
        ell = self._lengthscale()
        sigma = position_std(pose.cov)
        if ell is None or not sigma > kappa * ell:
            return None
        self._skip = np.array(target, dtype=float)
        p, t = np.asarray(pose.xy, dtype=float), np.asarray(target, dtype=float)
        best = None
        for i, (x, y, radius, cost) in enumerate(fix_source_array(self.params['fix_sources'])):
            c = np.array([x, y])
            if np.linalg.norm(p - c) <= radius or distance_outside(c, self.params) > GOAL_TOLERANCE:
                continue
            detour = np.linalg.norm(p - c) + np.linalg.norm(c - t) - np.linalg.norm(p - t)
            if detour + cost <= self.params['relocalise_max_detour'] and (best is None or detour + cost < best[0]):
                best = (detour + cost, i, c, detour)
        record = {'lengthscale': ell, 'threshold': kappa * ell, 'target': t.tolist()}
        if best is not None:
            _, i, c, detour = best
            self.current = Relocalisation('fix_source', i, c, t, kappa * ell, now, sigma,
                                          limit=float(self.params['relocalise_max_time']))
            self._journal('start', p, sigma, now, source=i, centre=c.tolist(), detour_m=float(detour), **record)
            log.info('re-localising first: position std %.2f m > %.2g x lengthscale %.3g m; driving to fix source '
                     '%d at (%.1f, %.1f) (detour %.1f m), then to (%.2f, %.2f)', sigma, kappa, ell, i, *c, detour,
                     *t)
            return self.current
        cost = float(self.params['surface_cost'])
        if cost > 0 and cost <= self.params['relocalise_max_time'] and request_surfacing is not None \
                and request_surfacing():
            self.current = Relocalisation('surface', None, None, t, kappa * ell, now, sigma,
                                          limit=cost + SURFACE_MARGIN)
            self._journal('start', p, sigma, now, cost_s=cost, **record)
            log.info('re-localising first: position std %.2f m > %.2g x lengthscale %.3g m; surfacing (%.0f s), then '
                     'to (%.2f, %.2f)', sigma, kappa, ell, cost, *t)
            self.current.waiting_since = now
            return self.current
        return None

    def step(self, now: float, pose: PoseEstimate | None, resend_due: Callable[[], bool]) -> Any:
        """The ``relocalising`` stage at ``now``, the rover estimated at ``pose``: drive to the source, then wait for
        the fix. Returns :data:`ARRIVED` (stop the rover: the wait starts), :data:`RESEND` (send the source's goal
        again: ``resend_due()`` said so), the target ``(2,)`` to send once it has ended (journaled; also when none is
        under way: a restart's state, ``None`` then), or False meanwhile."""
        r = self.current
        if r is None:
            return None
        if r.waiting_since is None:
            if pose is not None and np.linalg.norm(pose.xy - r.centre) <= self.params['xy_goal_tolerance']:
                r.waiting_since = now
                return ARRIVED
            if now - r.started > self.params['goal_timeout']:
                return self._end(now, pose, 'fix source not reached within goal_timeout')
            return RESEND if resend_due() else False
        sigma = position_std(pose.cov) if pose is not None else r.sigma_start
        if r.last_drop is None or sigma < r.last_drop[1] * (1 - SETTLE_DROP):
            r.last_drop = (now, sigma)
        if sigma <= 0.5 * r.threshold:
            return self._end(now, pose, 'position std below half the threshold')
        if sigma <= 0.5 * r.sigma_start and now - r.last_drop[0] >= SETTLE_TIME:
            return self._end(now, pose, 'position std halved and settled')
        if now - r.waiting_since >= r.limit:
            return self._end(now, pose, 'no fix within the time allowed')
        return False

    def resume(self, now: float, pose: PoseEstimate | None) -> Relocalisation | None:
        """After a pause taken while re-localising: the same re-localisation again, its clocks restarted (the
        explorer re-sends the fix source's goal while ``waiting_since`` is None). None when none is under way."""
        r = self.current
        if r is None or pose is None:
            return None
        r.started = now
        if r.waiting_since is not None:
            r.waiting_since, r.last_drop = now, None
        return r

    def _end(self, now: float, pose: PoseEstimate | None, why: str) -> np.ndarray:
        r = self.current
        self.current = None
        sigma = position_std(pose.cov) if pose is not None else float('nan')
        self._journal('end', pose.xy if pose is not None else r.target, sigma, now, kind=r.kind,
                      seconds=float(now - r.started), reason=why)
        log.info('re-localisation (%s) ended after %.0f s: %s; position std %.2f m (was %.2f m)', r.kind,
                 now - r.started, why, sigma, r.sigma_start)
        return r.target

    def _journal(self, phase: str, position, sigma: float, now: float, **fields: Any) -> None:
        if phase == 'start':
            self.count += 1
            fields = {'kind': self.current.kind, **fields}
        rec = {'type': 'relocalisation', 'phase': phase, 'index': self.planner.n,
               'position': [float(v) for v in position], 'sigma_l': float(sigma) if math.isfinite(sigma) else None,
               'stamp': float(now), 'wall_time': time.time(), **fields}
        self.planner.journal_writer.write({k: v for k, v in rec.items() if v is not None})

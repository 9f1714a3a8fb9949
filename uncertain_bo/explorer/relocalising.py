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
(:attr:`Relocalising.relocalisations`, :mod:`~uncertain_bo.run_report`). A restart during a re-localisation
resumes the pending target, to which the rule applies again.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .inputs import position_std
from .states import State

__all__ = ['Relocalising', 'Relocalisation', 'fix_source_array', 'fix_sources_problem', 'SURFACE_MARGIN']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: a surfacing re-localisation waits at most the action's ``surface_cost`` plus this (s) for the fix
SURFACE_MARGIN = 30.0
#: the wait ends once σ_L has not fallen by more than SETTLE_DROP (relative) for SETTLE_TIME s
SETTLE_TIME = 3.0
SETTLE_DROP = 0.05


def fix_sources_problem(values: Any) -> str | None:
    """Why ``fix_sources`` (a flat list ``x, y, radius, cost, ...``) is not well formed, or None."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size % 4:
        return (f"parameter 'fix_sources' = {list(values)!r} is invalid: expected x, y, radius, cost for each fix "
                f'source (a multiple of 4 numbers, metres; cost: metres of detour), got {v.size}')
    if np.any(v.reshape(-1, 4)[:, 2:] < 0):
        return f"parameter 'fix_sources' = {list(values)!r} is invalid: each source needs a radius >= 0 and a cost >= 0"
    return None


def fix_source_array(values: Any) -> np.ndarray:
    """``fix_sources`` as a ``(k, 4)`` array ``x, y, radius, cost`` of the sources with a positive radius."""
    v = np.asarray(values, dtype=float).reshape(-1, 4)
    return v[v[:, 2] > 0]


@dataclass
class Relocalisation:
    """A re-localisation under way: ``kind`` ``'fix_source'`` or ``'surface'``, the source's row in
    ``fix_sources`` (None for surfacing), its centre, the target it was taken for, when it started and the σ_L then,
    when the rover started waiting (None while driving to the source), and the σ_L history of the wait."""

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
    """The re-localisation of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: before a target
    is sent it may hold it and move the explorer into the ``relocalising`` stage; its tick drives to the fix
    source or waits for the surfacing fix, then sends the held target)."""

    @property
    def relocalisations(self) -> int:
        """Re-localisations started in this run (a resumed journal's included)."""
        return self._reloc_count

    def _init_relocalising(self) -> None:
        """No re-localisation under way; the count of a resumed journal's."""
        self._reloc: Relocalisation | None = None
        self._reloc_skip: np.ndarray | None = None     # the target the rule was applied to last (never twice)
        journal = self.planner.journal_file
        self._reloc_count = sum(1 for r in (journal.records if journal is not None else ())
                                if r.get('type') == 'relocalisation' and r.get('phase') == 'start')

    def _lengthscale(self) -> float | None:
        """The model's smallest fitted lengthscale (m), None for a kernel without one."""
        try:
            return float(min(self.planner.model.hyperparameters()['lengthscale']))
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def _relocalise_first(self, target: np.ndarray, now: float) -> bool:
        """Apply the rule (module docstring) before ``target`` ``(2,)`` is sent. Returns True when a re-localisation
        started (the target is held and sent after it)."""
        kappa = float(self.params['relocalise_kappa'])
        pose = self.latest_pose
        if kappa <= 0 or pose is None:
            return False
        if self._reloc_skip is not None and np.array_equal(self._reloc_skip, target):
            return False
        ell = self._lengthscale()
        sigma = position_std(pose.cov)
        if ell is None or not sigma > kappa * ell:
            return False
        self._reloc_skip = np.array(target, dtype=float)
        p, t = np.asarray(pose.xy, dtype=float), np.asarray(target, dtype=float)
        best = None
        for i, (x, y, radius, cost) in enumerate(fix_source_array(self.params['fix_sources'])):
            c = np.array([x, y])
            if np.linalg.norm(p - c) <= radius or self._outside_goal_area(c):
                continue
            detour = np.linalg.norm(p - c) + np.linalg.norm(c - t) - np.linalg.norm(p - t)
            if detour + cost <= self.params['relocalise_max_detour'] and (best is None or detour + cost < best[0]):
                best = (detour + cost, i, c, detour)
        record = {'lengthscale': ell, 'threshold': kappa * ell, 'target': t.tolist()}
        if best is not None:
            _, i, c, detour = best
            self._reloc = Relocalisation('fix_source', i, c, t, kappa * ell, now, sigma,
                                         limit=float(self.params['relocalise_max_time']))
            self._journal_relocalisation('start', p, sigma, now, source=i, centre=c.tolist(),
                                         detour_m=float(detour), **record)
            log.info('re-localising first: position std %.2f m > %.2g x lengthscale %.3g m; driving to fix source '
                     '%d at (%.1f, %.1f) (detour %.1f m), then to (%.2f, %.2f)', sigma, kappa, ell, i, *c, detour,
                     *t)
            self.target = c
            self.state = State.RELOCALISING
            self._goal_time = now
            self.goal_resend.sent(now, p, c)
            self._send_goal(c)
            return True
        cost = float(self.params['surface_cost'])
        request = getattr(self.outputs, 'request_surfacing', None)
        if cost > 0 and cost <= self.params['relocalise_max_time'] and request is not None and request():
            self._reloc = Relocalisation('surface', None, None, t, kappa * ell, now, sigma,
                                         limit=cost + SURFACE_MARGIN)
            self._journal_relocalisation('start', p, sigma, now, cost_s=cost, **record)
            log.info('re-localising first: position std %.2f m > %.2g x lengthscale %.3g m; surfacing (%.0f s), then '
                     'to (%.2f, %.2f)', sigma, kappa, ell, cost, *t)
            self._stop()
            self.target = None
            self.state = State.RELOCALISING
            self._reloc.waiting_since = now
            return True
        return False

    def _outside_goal_area(self, xy: np.ndarray) -> bool:
        from .area import GOAL_TOLERANCE, distance_outside
        return distance_outside(xy, self.params) > GOAL_TOLERANCE

    def _relocalise_tick(self, now: float) -> None:
        """The ``relocalising`` stage: drive to the source, then wait for the fix; then send the held target."""
        r, pose = self._reloc, self.latest_pose
        if r is None:                        # nothing under way (a restart's state): decide
            self.state = State.DECIDING
            return
        if r.waiting_since is None:
            if pose is not None and np.linalg.norm(pose.xy - r.centre) <= self.params['arrival_tolerance']:
                self._stop()
                r.waiting_since = now
            elif now - r.started > self.params['goal_timeout']:
                self._end_relocalisation(now, 'fix source not reached within goal_timeout')
            elif self.goal_resend.due(now, pose.xy if pose is not None else None, r.centre):
                self._send_goal(r.centre)
            return
        sigma = position_std(pose.cov) if pose is not None else r.sigma_start
        if r.last_drop is None or sigma < r.last_drop[1] * (1 - SETTLE_DROP):
            r.last_drop = (now, sigma)
        if sigma <= 0.5 * r.threshold:
            self._end_relocalisation(now, 'position std below half the threshold')
        elif sigma <= 0.5 * r.sigma_start and now - r.last_drop[0] >= SETTLE_TIME:
            self._end_relocalisation(now, 'position std halved and settled')
        elif now - r.waiting_since >= r.limit:
            self._end_relocalisation(now, 'no fix within the time allowed')

    def _resume_relocalising(self, now: float) -> bool:
        """After a pause taken while re-localising: the same re-localisation again, its clocks restarted (the fix
        source's goal re-sent). Returns False when none is under way."""
        r, pose = self._reloc, self.latest_pose
        if r is None or pose is None:
            return False
        self.state = State.RELOCALISING
        r.started = now
        if r.waiting_since is None:
            self.goal_resend.sent(now, pose.xy, r.centre)
            self._send_goal(r.centre)
        else:
            r.waiting_since, r.last_drop = now, None
        return True

    def _end_relocalisation(self, now: float, why: str) -> None:
        r, pose = self._reloc, self.latest_pose
        self._reloc = None
        sigma = position_std(pose.cov) if pose is not None else float('nan')
        self._journal_relocalisation('end', pose.xy if pose is not None else r.target, sigma, now, kind=r.kind,
                                     seconds=float(now - r.started), reason=why)
        log.info('re-localisation (%s) ended after %.0f s: %s; position std %.2f m (was %.2f m)', r.kind,
                 now - r.started, why, sigma, r.sigma_start)
        self.state = State.DECIDING
        self._send(r.target, now)

    def _journal_relocalisation(self, phase: str, position, sigma: float, now: float, **fields: Any) -> None:
        if phase == 'start':
            self._reloc_count += 1
            fields = {'kind': self._reloc.kind, **fields}
        journal = self.planner.journal_file
        if journal is None:
            return
        rec = {'type': 'relocalisation', 'phase': phase, 'index': self.planner.n,
               'position': [float(v) for v in position], 'sigma_l': float(sigma) if math.isfinite(sigma) else None,
               'stamp': float(now), 'wall_time': time.time(), **fields}
        journal.append({k: v for k, v in rec.items() if v is not None})

r"""Revised trajectories: the localiser's corrected past poses re-place the explorer's stored readings.

A smoother after a fix, a SLAM back end after a loop closure, publishes a **revised trajectory**: a list of stamped
poses (:class:`~uncertain_bo.explorer.estimates.PoseEstimate`: stamp, frame, mean, covariance) covering a stretch of the
past. :meth:`TrajectoryRevisions.revise` maps each stored reading of this rover to the revised pose at the
reading's own stamp and hands the planner the revisions (:meth:`~uncertain_bo.planning.planner.Planner.revise`,
:mod:`uncertain_bo.planning.revisions`):

- **which poses**: each one is checked as a pose estimate is on arrival (:meth:`~uncertain_bo.explorer.inputs.
  InputStreams.pose_problem`: frame ``global_frame``, finite stamp and position within range, a finite, symmetric, PSD
  covariance); an invalid one is left out and counted (``'revision: <what was wrong>'``). No pose gate: a revision is
  allowed to move the past by more than the rover could drive, which is what a loop closure does;
- **which readings**: every stored reading with a stamp (measurements and en-route readings; a team rover's own:
  :meth:`~uncertain_bo.planning.planner.Planner.stored_readings`) that the trajectory covers;
- **the revised pose at a reading's stamp** ``t``: the linear interpolation of the mean and of the covariance (a
  convex combination of PSD matrices, so PSD) between the two revised poses around ``t`` when both lie within
  ``max_pose_age`` of it (the tolerance a reading is paired with a pose by); the nearer of them when only it does;
  none (the reading keeps its location) when neither does. A smoother's keyframes are often further apart than
  ``max_pose_age``: a reading between two distant keyframes is not guessed at;
- **only a change**: a reading is revised only when the revised pose moves its location mean, or its position
  standard deviation (the square root of the covariance's trace), by more than ``revision_min_shift`` (m); a back end
  that republishes its whole path every second journals nothing new while nothing moves;
- **what it becomes**: the location distribution a new pose would get (:class:`~uncertain_bo.explorer.
  location_policy.LocationPolicy`): a Gaussian, or in a run of particles ``max_particles`` draws of the revised
  Gaussian; with a ``sensor_offset``, at the sensor for the revised pose's heading (a revised pose needs one then;
  without a yaw covariance the heading counts as exact, and with ``keep_covariance`` the stored covariance, the
  sensor's already, is kept as it is: only the mean moves);
- **its stamp**: the trajectory's (the message's header stamp): the planner rejects and counts revisions older than
  a reading's last one or than the pose it was stored with (``'revision: out of order'``), so a late, stale
  trajectory changes nothing.

Counts are in :attr:`~uncertain_bo.explorer.state_machine.Explorer.rejected` (the diagnostics) under
``'revision: ...'``; the planner keeps its own (:attr:`~uncertain_bo.planning.planner.Planner.
revisions_rejected`).
"""
from __future__ import annotations

import bisect
import logging
import math
from collections import deque
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from ..distributions.lever_arm import wrap_angle
from ..planning.planner import Planner
from ..planning.revisions import LocationRevision, RevisionOutcome
from .estimates import PoseEstimate, position_trace
from .inputs import InputStreams
from .location_policy import LocationPolicy

__all__ = ['TrajectoryRevisions', 'pose_at', 'HELD_TRAJECTORIES']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: revised trajectories held while the planner is busy deciding (the oldest beyond it are dropped: a newer revision of
#: a reading supersedes an older one anyway)
HELD_TRAJECTORIES = 8


def pose_at(trajectory: Sequence[PoseEstimate], stamp: float, tolerance: float) -> PoseEstimate | None:
    """The revised pose at ``stamp`` (s) of a ``trajectory`` sorted by stamp (a
    :class:`~uncertain_bo.explorer.estimates.PoseEstimate` stamped ``stamp``, without particles): the linear
    interpolation between the poses around ``stamp`` when both lie within ``tolerance`` (s) of it (of the mean, the
    covariance, and where both have them of the heading along the shorter arc and of the yaw covariance row), the
    nearer one when only it does, None when neither does (module docstring)."""
    stamps = [p.stamp for p in trajectory]
    i = bisect.bisect_left(stamps, stamp)
    after = trajectory[i] if i < len(trajectory) else None
    before = trajectory[i - 1] if i > 0 else None
    near_before = before is not None and stamp - before.stamp <= tolerance
    near_after = after is not None and after.stamp - stamp <= tolerance
    if near_before and near_after and after.stamp > before.stamp:
        w = (stamp - before.stamp) / (after.stamp - before.stamp)
        yaw = yaw_cov = None
        if before.yaw is not None and after.yaw is not None:
            yaw = float(wrap_angle(before.yaw + w * wrap_angle(after.yaw - before.yaw)))
        if before.yaw_cov is not None and after.yaw_cov is not None:
            yaw_cov = (1 - w) * np.asarray(before.yaw_cov, dtype=float) + w * np.asarray(after.yaw_cov, dtype=float)
        return PoseEstimate(stamp, before.frame_id, (1 - w) * np.asarray(before.xy) + w * np.asarray(after.xy),
                            (1 - w) * np.asarray(before.cov) + w * np.asarray(after.cov), yaw=yaw, yaw_cov=yaw_cov)
    nearer = after if near_after else before if near_before else None
    if nearer is None:
        return None
    return PoseEstimate(stamp, nearer.frame_id, np.asarray(nearer.xy, dtype=float), np.asarray(nearer.cov, dtype=float),
                        yaw=nearer.yaw, yaw_cov=nearer.yaw_cov)


class TrajectoryRevisions:
    """Revised trajectories re-place the stored readings they cover (module docstring).

    Args:
        planner: whose stored readings are revised (:meth:`~uncertain_bo.planning.planner.Planner.revise`).
        params: the explorer's parameters, read live (``global_frame``, ``max_pose_age``, ``revision_min_shift``).
        inputs: the pose checks (:meth:`~uncertain_bo.explorer.inputs.InputStreams.pose_problem`) and where poses
            left out are counted.
        locations: the location distribution a revised pose gives.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import (EXPLORER_PARAMS, InputStreams, LocationPolicy, planner_from_parameters,
        ...                                    PoseEstimate)
        >>> from uncertain_bo.explorer.revisions import TrajectoryRevisions
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> planner = planner_from_parameters(params)
        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> at = Gaussian(torch.tensor([[10.0, 10.0]]), 0.04 * torch.eye(2).unsqueeze(0))
        >>> _ = planner.observe(torch.tensor([10.0, 10.0]), at, 21.3, reading_stamp=5.0)   # a reading taken at t = 5 s
        >>> revisions = TrajectoryRevisions(planner, params, InputStreams(params, lambda: False),
        ...                                 LocationPolicy(planner, params))
        >>> smoothed = [PoseEstimate(t, 'map', np.array([12.0, 10.0]), 0.05 * np.eye(2)) for t in (4.9, 5.1)]
        >>> outcome = revisions.revise(smoothed, stamp=9.0, source='smoother')
        >>> len(outcome.applied), planner.locations.mean[0].tolist()   # re-placed 2 m east
        (1, [12.0, 10.0])
    """

    def __init__(self, planner: Planner, params: dict[str, Any], inputs: InputStreams, locations: LocationPolicy):
        self.planner = planner
        self.params = params
        self.inputs = inputs
        self.locations = locations
        self._held: deque = deque(maxlen=HELD_TRAJECTORIES)   # trajectories waiting for the planner

    def hold(self, poses: Sequence[PoseEstimate], stamp: float, source: str, keep_covariance: bool) -> None:
        """Keep a trajectory that arrived while the planner is busy (the newest :data:`HELD_TRAJECTORIES`)."""
        self._held.append((list(poses), stamp, source, keep_covariance))

    def apply_held(self) -> None:
        """Revise with the trajectories held while the planner was busy, oldest first."""
        while self._held:
            self.revise(*self._held.popleft())

    def revise(self, poses: Sequence[PoseEstimate], stamp: float, source: str = 'revised_trajectory',
               keep_covariance: bool = False) -> RevisionOutcome:
        """Re-place the stored readings a revised trajectory covers (module docstring).

        Args:
            poses: the revised poses (any order; ``frame_id`` the explorer's ``global_frame``, stamps on the clock of
                the readings).
            stamp: when the localiser made the revision (s; e.g. the message's header stamp).
            source: where it came from, for the journal.
            keep_covariance: the poses carry no covariance of their own (a ``nav_msgs/Path``): each reading keeps
                its stored location's covariance and only its mean moves (the poses' ``cov`` is not read).

        Returns:
            What the planner applied and rejected (:class:`~uncertain_bo.planning.revisions.RevisionOutcome`); poses
            left out are counted in the inputs' ``rejected`` only.
        """
        valid = []
        for pose in poses:
            problem = self.inputs.pose_problem(pose)
            if problem is None:
                valid.append(pose)
            else:
                self.inputs.reject('revision', *problem)
        valid.sort(key=lambda p: p.stamp)
        outcome = RevisionOutcome()
        if not valid:
            return outcome
        tolerance = float(self.params['max_pose_age'])
        min_shift = float(self.params['revision_min_shift'])
        first, last = valid[0].stamp - tolerance, valid[-1].stamp + tolerance
        log_ = self.planner.observations
        current = {r.key: row[1] for r, row in zip(log_.readings, log_.rows)}
        revisions = []
        for reading in self.planner.stored_readings():
            if reading.stamp is None or not first <= reading.stamp <= last:
                continue
            revised = pose_at(valid, reading.stamp, tolerance)
            if revised is None:
                continue
            old = current[reading.key]
            if keep_covariance:   # the stored location's covariance, the sensor's: no second lever arm on it
                revised = replace(revised, cov=old.covariance[0].cpu().numpy(), yaw_cov=None)
            xy, cov = self.locations.sensor_gaussian(revised)
            moved = float(np.linalg.norm(xy - old.mean[0].cpu().numpy()))
            spread = abs(math.sqrt(max(position_trace(cov), 0.0))
                         - math.sqrt(max(float(old.covariance[0].trace()), 0.0)))
            if max(moved, spread) <= min_shift:
                continue
            location = self.locations.location(replace(revised, frame_id=self.params['global_frame']), warn=False)
            revisions.append(LocationRevision(reading.key, location, float(stamp), source))
        if not revisions:
            return outcome
        outcome = self.planner.revise(revisions)
        for what, reason, detail in outcome.rejections:
            self.inputs.reject('revision', reason, f'{what}: {detail}')
        if outcome.applied:
            log.info('%s: %d reading(s) re-placed at their revised locations (%d rejected)', source,
                     len(outcome.applied), len(outcome.rejections))
        return outcome

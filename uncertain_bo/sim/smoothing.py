"""The simulated localiser's revised past into the explorer: fixed-lag smoothing on fixes (issue 32, item 2).

With ``ekf.smooth_on_fix`` the EKF keeps the last ``smoothing_lag`` seconds of its steps and smooths them (extended
RTS) when a fix ends a dead-reckoning stretch and when a stretch of fixes ends (:meth:`~uncertain_bo.sim.ekf.
PlanarEKF.revised_past`). :func:`revise_stored_readings` is what the in-process rover loop
(:class:`~uncertain_bo.sim.mission.RoverLoop`, one rover or each of a team) does then: it takes the smoothed poses,
with their covariances, at the stamps of the explorer's stored readings inside the window and hands them to
:meth:`~uncertain_bo.explorer.Explorer.on_revised_trajectory`, the one path every revised trajectory takes (the ROS
explorer's ``revised_path_topic`` too, which the ``ekf`` node's ``smoothed_path`` feeds: :mod:`uncertain_bo.ros.ekf`).
The explorer re-places each reading that moves by more than ``revision_min_shift`` and the planner journals the
revisions (append-only ``revision`` records, replayed by resume and ``report``).

The backward pass runs only from the oldest stored reading inside the window on, so a smoothing costs the steps since
that reading (at most the lag), not the mission.
"""
from __future__ import annotations

import numpy as np

from ..explorer import Explorer, PoseEstimate
from ..planning.revisions import RevisionOutcome

__all__ = ['SOURCE', 'revise_stored_readings']

#: the journal's ``source`` of these revisions
SOURCE = 'ekf_smoother'


def revise_stored_readings(ekf, explorer: Explorer, frame: str) -> RevisionOutcome | None:
    """Hand the explorer the EKF's revised past when a smoothing is due (module docstring).

    Args:
        ekf: the rover's :class:`~uncertain_bo.sim.ekf.PlanarEKF` (any other localiser: nothing to do), after it
            fused the current step.
        explorer: the rover's measurement cycle; its planner's
        :meth:`~uncertain_bo.planning.planner.Planner.stored_readings`
            are the readings revised.
        frame: the pose estimates' frame id.

    Returns:
        What the explorer applied and rejected, or None when no smoothing was due.
    """
    if not getattr(ekf, 'smoothing_due', bool)():      # a particle filter has none
        return None
    start = ekf.t - float(ekf.params['smoothing_lag'])
    stamps = sorted({r.stamp for r in explorer.planner.stored_readings()
                     if r.stamp is not None and start <= r.stamp <= ekf.t})
    past = ekf.revised_past(since=stamps[0] if stamps else ekf.t)
    if not stamps:
        return RevisionOutcome()
    ts = np.asarray(stamps)
    after = np.searchsorted(past.t, ts).clip(0, len(past.t) - 1)
    before = (after - 1).clip(0)
    nearest = np.where(np.abs(past.t[before] - ts) < np.abs(past.t[after] - ts), before, after)
    poses = [PoseEstimate(float(past.t[i]), frame, past.x[i, :2].copy(), past.P[i, :2, :2].copy(),
                          yaw=float(past.x[i, 2]), yaw_cov=past.P[i, 2, :3].copy())     # a sensor_offset needs them
             for i in sorted(set(nearest.tolist()))]
    return explorer.on_revised_trajectory(poses, float(ekf.t), SOURCE)

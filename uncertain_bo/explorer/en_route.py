"""En-route readings: readings taken while driving, between the targets.

With ``en_route_spacing > 0``, once the position estimate is ``en_route_spacing`` (straight line) from where the
last reading was stored, the first reading stamped after that moment is paired with the pose estimate at its
stamp (:meth:`~uncertain_bo.explorer.inputs.InputStreams.pose_at`, the measurements' pairing rule; refusals are
counted under ``'en-route reading: ...'``) and stored as an en-route reading (``Planner.observe(None, ...)``): in
the GP, not a measurement (``max_measurements`` counts stops), no target, so not in the learned execution noise.
Straight-line spacing rather than path length: the estimate's jitter does not add up, and the readings are
spread in space, which is what the GP learns from. :attr:`~uncertain_bo.explorer.state_machine.Explorer.
en_route_readings` counts them; the result file too.
"""
from __future__ import annotations

import math

import numpy as np

from ..distributions import InvalidDistributionError
from ..planner import InvalidObservationError
from .inputs import WAIT

__all__ = ['EnRoute']


class EnRoute:
    """En-route readings of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: it reads the
    explorer's inputs and stores readings in its planner)."""

    def _en_route(self, now: float) -> None:
        """Take an en-route reading when one is due (see :mod:`~uncertain_bo.explorer.en_route`)."""
        pose = self.latest_pose
        if pose is None:
            return
        if self._en_route_from is None:
            self._en_route_from = pose.xy.copy()
        if self._en_route_due is None:
            if np.linalg.norm(pose.xy - self._en_route_from) < self.params['en_route_spacing']:
                return
            self._en_route_due = pose.stamp
        reading = self.inputs.latest_reading
        if reading is None:
            return
        stamp = reading.stamp if reading.stamp is not None else now
        if stamp < self._en_route_due:
            return                                  # the next reading comes later
        paired = self.inputs.pose_at(stamp, now, 'en-route reading')
        if paired is WAIT:
            return
        if paired is None:                          # refused (counted): the next reading is due
            self._en_route_due = math.nextafter(stamp, math.inf)
            return
        self._en_route_due = None
        variance = reading.variance if reading.variance > 0 else float(self.params['reading_noise_std']) ** 2
        meta = {'reading_stamp': stamp, 'pose_stamp': paired.stamp, 'reading_variance': variance,
                'frame_id': paired.frame_id, **self.budget.totals(now)}
        try:
            location = self.locations.location(paired)
            meta['location_source'] = self.locations.describe(paired, location)
            self.planner.observe(None, location, float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:  # defensive: validated on arrival
            self.reject('en-route reading', 'invalid observation', str(exc))
            return
        self.locations.stored(location)
        self._en_route_from = np.asarray(paired.xy, dtype=float).copy()

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
from typing import Any

import numpy as np

from .inputs import WAIT, InputStreams
from .storing import Storing

__all__ = ['EnRoute']


class EnRoute:
    """En-route readings while driving (see :mod:`~uncertain_bo.explorer.en_route`).

    Args:
        params: the explorer's parameters, read live (``en_route_spacing``).
        inputs: the pose and reading buffers (the pose at a reading's stamp).
        store: where the readings are stored (no target: ``Planner.observe(None, ...)``).
    """

    def __init__(self, params: dict[str, Any], inputs: InputStreams, store: Storing):
        self.params = params
        self.inputs = inputs
        self.store = store
        self._from: np.ndarray | None = None   # where the last reading was stored (the spacing counts from there)
        self._due: float | None = None         # stamp from which an en-route reading is due

    def count_from(self, xy: np.ndarray, restart: bool = True) -> None:
        """The spacing counts from ``xy`` ``(2,)`` m (a reading was stored there); ``restart=False``: only when it
        counts from nowhere yet (a leg starts)."""
        if restart:
            self._from = np.asarray(xy, dtype=float).copy()
            self._due = None
        elif self._from is None:
            self._from = np.asarray(xy, dtype=float).copy()

    def step(self, now: float) -> None:
        """Take an en-route reading when one is due (see :mod:`~uncertain_bo.explorer.en_route`)."""
        pose = self.inputs.latest_pose
        if pose is None:
            return
        if self._from is None:
            self._from = pose.xy.copy()
        if self._due is None:
            if np.linalg.norm(pose.xy - self._from) < self.params['en_route_spacing']:
                return
            self._due = pose.stamp
        reading = self.inputs.latest_reading
        if reading is None:
            return
        stamp = reading.stamp if reading.stamp is not None else now
        if stamp < self._due:
            return                                  # the next reading comes later
        paired = self.inputs.pose_at(stamp, now, 'en-route reading')
        if paired is WAIT:
            return
        if paired is None:                          # refused (counted): the next reading is due
            self._due = math.nextafter(stamp, math.inf)
            return
        self._due = None
        if self.store.store('en-route reading', None, paired, reading, stamp, now) is not None:
            self._from = np.asarray(paired.xy, dtype=float).copy()

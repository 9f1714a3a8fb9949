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

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import (EXPLORER_PARAMS, InputStreams, LocationPolicy, planner_from_parameters,
        ...                                    PoseEstimate, Reading, TravelBudget)
        >>> from uncertain_bo.explorer.en_route import EnRoute
        >>> from uncertain_bo.explorer.storing import Storing
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0,
        ...                                     'en_route_spacing': 5.0})   # a reading every 5 m driven
        >>> planner = planner_from_parameters(params)
        >>> inputs = InputStreams(params, collecting=lambda: False)
        >>> en_route = EnRoute(params, inputs, Storing(planner, params, inputs, LocationPolicy(planner, params),
        ...                                            TravelBudget(params)))
        >>> for t in range(8):                             # driving along x at 1 m/s, a reading each second
        ...     _ = inputs.add_pose(PoseEstimate(t, 'map', np.array([t, 10.0]), 0.1 * np.eye(2)), t, lambda p: p)
        ...     _ = inputs.add_reading(Reading(t, 20.0 + t), t)
        ...     en_route.step(now=t)
        >>> planner.n_en_route                             # at x = 5 m
        1
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

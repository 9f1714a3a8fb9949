"""Storing a reading paired with a pose estimate in the planner: the reading's variance (the sensor's own when the
message carries one, else ``reading_noise_std``²), its location distribution (:class:`~uncertain_bo.explorer.
location_policy.LocationPolicy`) and the metadata journaled with it (stamps, frame, budget totals, where the location
came from). Measurements (:mod:`~uncertain_bo.explorer.measuring`) and en-route readings
(:mod:`~uncertain_bo.explorer.en_route`) are stored alike; only the target differs (none for an en-route reading).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..distributions import DTYPE, InvalidDistributionError, LocationDistributions
from ..planning.planner import InvalidObservationError, Planner
from .budget import TravelBudget
from .estimates import PoseEstimate, Reading
from .inputs import InputStreams
from .location_policy import LocationPolicy

__all__ = ['Storing']


@dataclass(frozen=True)
class Storing:
    """Stores ``(pose, reading)`` pairs in the planner (module docstring).

    Args:
        planner: where the pairs go (:meth:`~uncertain_bo.planning.planner.Planner.observe`).
        params: the explorer's parameters, read live (``reading_noise_std``).
        inputs: where a pair the planner refuses is counted.
        locations: the location distribution a pose gives (told of each stored one).
        budget: the totals journaled with each pair.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import (EXPLORER_PARAMS, InputStreams, LocationPolicy, planner_from_parameters,
        ...                                    PoseEstimate, Reading, TravelBudget)
        >>> from uncertain_bo.explorer.storing import Storing
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> planner = planner_from_parameters(params)
        >>> store = Storing(planner, params, InputStreams(params, lambda: False), LocationPolicy(planner, params),
        ...                 TravelBudget(params))
        >>> pose = PoseEstimate(2.0, 'map', np.array([10.2, 9.9]), np.diag([0.04, 0.04]))
        >>> index, location = store.store('measurement', np.array([10.0, 10.0]), pose, Reading(2.0, 21.3), 2.0, now=2.1)
        >>> index, location.mean.tolist(), planner.y.tolist()
        (0, [[10.2, 9.9]], [21.3])
    """

    planner: Planner
    params: dict[str, Any]
    inputs: InputStreams
    locations: LocationPolicy
    budget: TravelBudget

    def store(self, what: str, target: np.ndarray | None, pose: PoseEstimate, reading: Reading, stamp: float | None,
              now: float, fields: dict[str, Any] | None = None,
              flags: dict[str, Any] | None = None) -> tuple[int, LocationDistributions] | None:
        """Store ``reading`` (stamped ``stamp``, s) at ``pose`` for ``target`` ``(2,)`` m (None: an en-route
        reading) at ``now``, with the extra journal ``fields`` (before the budget totals) and ``flags`` (after them).
        Returns the planner's index and the stored location distribution, or None when the planner refuses the pair
        (counted as ``'<what>: invalid observation'``; defensive: inputs are validated on arrival)."""
        variance = reading.variance if reading.variance > 0 else float(self.params['reading_noise_std']) ** 2
        meta = {'reading_stamp': stamp, 'pose_stamp': pose.stamp, 'reading_variance': variance,
                'frame_id': pose.frame_id, **(fields or {}), **self.budget.totals(now), **(flags or {})}
        try:
            location = self.locations.location(pose)
            meta['location_source'] = self.locations.describe(pose, location)
            index = self.planner.observe(None if target is None else torch.as_tensor(target, dtype=DTYPE), location,
                                         float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:
            self.inputs.reject(what, 'invalid observation', str(exc))
            return None
        self.locations.stored(location)
        return index, location

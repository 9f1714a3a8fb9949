"""What the explorer hands its host: the actions it asks for (:class:`ExplorerOutputs`, implemented by the ROS
node and the in-process runner) and a stored measurement (:class:`Measurement`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..distributions import LocationDistributions
from ..planning.planner import Recommendation
from .estimates import PoseEstimate, Reading

__all__ = ['ExplorerOutputs', 'Measurement']


@dataclass(frozen=True)
class Measurement:
    """A stored measurement (what went into the planner): its index, target ``(2,)`` m, the pose estimate of
    ``base_link`` it was paired with, the reading, whether the goal timed out, and the location distribution stored
    for it (batch of 1: where the sensor was, :class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import PoseEstimate, Reading
        >>> from uncertain_bo.explorer.outputs import Measurement
        >>> pose = PoseEstimate(3.0, 'map', np.array([10.2, 9.8]), np.diag([0.04, 0.09]))
        >>> m = Measurement(0, np.array([10.0, 10.0]), pose, Reading(3.0, 21.3), timed_out=False)
        >>> xy, cov = m.place                              # no stored location: the pose estimate's
        >>> xy, np.diag(cov)
        (array([10.2,  9.8]), array([0.04, 0.09]))
    """

    index: int
    target: np.ndarray
    pose: PoseEstimate
    reading: Reading
    timed_out: bool
    location: LocationDistributions | None = None

    @property
    def place(self) -> tuple[np.ndarray, np.ndarray]:
        """``(mean (2,) m, covariance (2, 2) m²)`` of where the reading was taken: the stored location's (the sensor's),
        else the pose estimate's."""
        if self.location is None:
            return np.asarray(self.pose.xy, dtype=float), np.asarray(self.pose.cov, dtype=float)
        return self.location.mean[0].cpu().numpy(), self.location.covariance[0].cpu().numpy()


class ExplorerOutputs(Protocol):
    """What the explorer asks its host (ROS node or in-process runner) to do.

    Example:
        A host implements the four callbacks (the ROS node publishes goals; an in-process runner moves a simulated
        rover):

        >>> import numpy as np
        >>> from uncertain_bo.explorer.outputs import ExplorerOutputs
        >>> class Printer(ExplorerOutputs):
        ...     def send_goal(self, target): print('goal', target)
        ...     def stop(self, position): print('stop at', position)
        ...     def measured(self, measurement, recommendation): print('measured', measurement.index)
        ...     def finished(self, recommendation): print('done')
        >>> Printer().send_goal(np.array([4.0, 2.0]))
        goal [4. 2.]
    """

    def send_goal(self, target: np.ndarray) -> None:
        """Drive to ``target`` ``(2,)`` (map frame, m)."""

    def stop(self, position: np.ndarray) -> None:
        """Cancel the current goal and hold at ``position``."""

    def measured(self, measurement: Measurement, recommendation: Recommendation) -> None:
        """A measurement was stored; ``recommendation`` is the planner's current best target."""

    def finished(self, recommendation: Recommendation) -> None:
        """All measurements done (or a budget spent: :attr:`Explorer.done_reason`)."""

    # Optional: a host whose vehicle has a surfacing action (an AUV) also implements
    # ``request_surfacing() -> bool``: take the action now (stop, rise, one absolute fix, dive); True when it was
    # asked for. The explorer asks for it only with ``surface_cost`` > 0 (:mod:`~uncertain_bo.explorer.relocalising`).

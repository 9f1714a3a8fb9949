"""Goals that cannot be lost: the current goal is sent again until the controller is seen to act.

A goal published once on a topic is lost when the controller has not matched the publisher yet (it started
later, or discovery is slow) or its subscription is volatile while the publisher's is not: the rover then sits
until ``goal_timeout``. The ROS node publishes goals latched (transient local, so a late transient-local
subscriber such as ``pure_pursuit``'s ``plan`` still gets the last one), and the explorer re-sends the goal every
``goal_resend_period`` seconds until the controller is **seen to act**: the position estimate has come
:data:`ACTING_DISTANCE` closer to the target than where it was when the goal was first sent. Re-sending the
same goal is harmless for the controllers it is meant for (``pure_pursuit`` keeps following an identical goal;
Nav2's topic interface restarts its navigation to the same pose). With Nav2's action interface the goal's
acceptance is acknowledged, so the ROS node does not re-send there.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ['GoalResend', 'ACTING_DISTANCE']

#: the controller acts once the estimate is this much closer to the target than at the first send, m
ACTING_DISTANCE = 0.5


class GoalResend:
    """When to send the current goal again (see the module docstring).

    Args:
        params: the explorer's parameters, read live (``goal_resend_period``, s; 0 = never re-send).

    Attributes:
        resent: goals sent again so far (all goals of the run).

    Example:
        A goal sent to a controller that does not act on it is due again every ``goal_resend_period``:

        >>> import numpy as np
        >>> from uncertain_bo.explorer.goal_resend import GoalResend
        >>> resend = GoalResend({'goal_resend_period': 2.0})
        >>> target, rover = np.array([20.0, 0.0]), np.array([0.0, 0.0])
        >>> resend.sent(0.0, rover, target)
        >>> [resend.due(t, rover, target) for t in (1.0, 2.5, 3.0, 4.6)], resend.resent
        ([False, True, False, True], 2)
    """

    def __init__(self, params: Mapping[str, Any]):
        self.params = params
        self.resent = 0
        self._last_send = -math.inf
        self._start_distance: float | None = None
        self._acting = True

    def sent(self, now: float, position: np.ndarray | None, target: np.ndarray) -> None:
        """A new goal ``target`` ``(2,)`` m was sent at ``now`` s, the rover estimated at ``position``."""
        self._last_send = now
        self._start_distance = (None if position is None
                                else float(np.hypot(*(np.asarray(target, float) - np.asarray(position, float)))))
        self._acting = False

    def due(self, now: float, position: np.ndarray | None, target: np.ndarray) -> bool:
        """True when the goal should be sent again now (and counts it); False once the controller acts."""
        period = float(self.params['goal_resend_period'])
        if self._acting or period <= 0:
            return False
        if position is not None:
            d = float(np.hypot(*(np.asarray(target, float) - np.asarray(position, float))))
            if self._start_distance is None:
                self._start_distance = d
            elif d <= self._start_distance - ACTING_DISTANCE:
                self._acting = True
                return False
        if now - self._last_send < period:
            return False
        self._last_send = now
        self.resent += 1
        return True

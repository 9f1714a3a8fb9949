"""The current leg of a mission: the target the rover is sent to, why, and since when.

A leg starts when the explorer sends the rover towards a target (a fresh decision, a restart's pending target, the
same target again after a pause, or a re-localisation's fix source) and ends when the target is measured, skipped
or refused. ``goal_timeout`` counts from the leg's start on the host's clock; a clock that jumps backwards (a
simulation reset) moves the start with it. The goal's re-sending (:mod:`~uncertain_bo.explorer.goal_resend`) and the
goals themselves (:mod:`~uncertain_bo.explorer.commands`) are not this module's.
"""
from __future__ import annotations

import time

import numpy as np

__all__ = ['Leg']


class Leg:
    """The target the rover is under way to, why its goal was (last) sent and when the leg started.

    Attributes:
        target: ``(2,)`` m in the global frame, or None between legs.
        reason: why the goal was (last) sent: ``'new'`` (a fresh decision; also before the first goal),
            ``'resumed'`` (the journal's pending decision after a restart), ``'after pause'``, or ``'resent'`` (the
            controller was not seen to act on it).
        started: host-clock time the leg started, s (``goal_timeout`` counts from it).
        decided_wall_time: ``time.time()`` when the last decided target was sent (None before the first).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer.leg import Leg
        >>> leg = Leg()
        >>> leg.start(np.array([10.0, 5.0]), now=100.0)
        >>> leg.timed_out(now=150.0, goal_timeout=60.0), leg.timed_out(now=161.0, goal_timeout=60.0)
        (False, True)
        >>> leg.shift(-100.0)   # the host's clock jumped back 100 s (a simulation reset)
        >>> leg.started, leg.target
        (0.0, array([10.,  5.]))
    """

    def __init__(self):
        self.target: np.ndarray | None = None
        self.reason = 'new'
        self.started = 0.0
        self.decided_wall_time: float | None = None

    def start(self, target: np.ndarray, now: float) -> None:
        """The rover is sent towards ``target`` ``(2,)`` m at host-clock time ``now`` (s): a fresh goal clock."""
        self.target = target
        self.started = now

    def decided(self) -> None:
        """The target about to be sent was decided now (wall clock: the operator view shows when)."""
        self.decided_wall_time = time.time()

    def clear(self) -> None:
        """The leg ended without a measurement (its target refused, or given up for a re-localisation)."""
        self.target = None

    def timed_out(self, now: float, goal_timeout: float) -> bool:
        """More than ``goal_timeout`` s of host-clock time since the leg started."""
        return now - self.started > goal_timeout

    def shift(self, seconds: float) -> None:
        """The host's clock jumped by ``seconds`` (negative: backwards): the leg's start moves with it."""
        self.started += seconds

"""The surfacing action: an absolute fix that costs time (an AUV rising for GNSS, a rover stopping to sight a
landmark).

While the action lasts (``surface_duration`` simulated seconds from its request) the rover is stopped: every
velocity command is replaced by zero (it decelerates within its acceleration limits); at the end one absolute
fix is had, with ``surface_fix_std`` per coordinate. :class:`~uncertain_bo.sim.world.SimWorld` takes the action
when asked (:meth:`~uncertain_bo.sim.world.SimWorld.request_surfacing`: an explorer, a rule or an operator) and,
with ``surface_every`` > 0, by itself once the true path since the last absolute fix (of any source) reaches that
distance: the periodic surfacing of a dead-reckoning AUV mission. Nothing decides here whether surfacing is worth
its time; :class:`Surfacing` only keeps the action's clock.
"""
from __future__ import annotations

from typing import Any, Mapping

from uncertain_bo.parameters.specs import Param
from uncertain_bo.sim.rover import _ensure

__all__ = ['SURFACING_PARAMS', 'Surfacing']

SURFACING_PARAMS = [
    Param('surface_duration', 60.0, 'time the surfacing action costs (s): the rover stops for this long (an AUV '
          'rising, taking a GNSS fix and diving again) and gets one absolute fix at its end', range=(0.0, 1e5)),
    Param('surface_fix_std', 3.0, 'standard deviation of each coordinate of the fix the surfacing action gets (m)',
          range=(0.001, 100.0)),
    Param('surface_every', 0.0, 'surfacing rule: take the surfacing action once the true path driven since the '
          'last absolute fix (any source) reaches this (m); 0 = only when requested (SimWorld.request_surfacing, '
          "the mission runner's relocalise hook)", range=(0.0, 1e7)),
]


class Surfacing:
    """The clock of the surfacing action.

    Args:
        params: values for ``SURFACING_PARAMS`` (a live dict is read at use time).

    Attributes:
        until: simulated time (s) at which the current action ends; None when none is under way.
        count: actions started so far.
        time_spent: simulated seconds spent in finished actions.

    Example:
        An AUV surfaces for a fix: held for ``surface_duration`` (60 s by default), one action at a time:

        >>> surfacing = Surfacing({'surface_duration': 60.0, 'surface_fix_std': 3.0, 'surface_every': 500.0})
        >>> surfacing.request(t=10.0), surfacing.active, surfacing.request(t=11.0)
        (True, True, False)
        >>> surfacing.ends_at(50.0), surfacing.ends_at(70.0), surfacing.time_spent     # the fix is due at 70 s
        (False, True, 60.0)
        >>> surfacing.due(distance_since_fix=520.0)             # the surface_every rule
        True
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, SURFACING_PARAMS)
        self.until: float | None = None
        self.started: float | None = None
        self.count = 0
        self.time_spent = 0.0

    @property
    def active(self) -> bool:
        """Whether an action is under way (the rover is held stopped)."""
        return self.until is not None

    def request(self, t: float) -> bool:
        """Start the action at simulated time ``t`` (s). Returns False (and changes nothing) when one is already
        under way."""
        if self.active:
            return False
        self.started, self.until = float(t), float(t) + float(self.params['surface_duration'])
        self.count += 1
        return True

    def ends_at(self, t: float) -> bool:
        """True once, at the first step time ``t`` (s) at or after the action's end: the action is over and its fix
        is due."""
        if self.until is None or t < self.until - 1e-9:
            return False
        self.time_spent += t - self.started
        self.until = self.started = None
        return True

    def due(self, distance_since_fix: float) -> bool:
        """Whether the ``surface_every`` rule asks for the action after ``distance_since_fix`` metres of true path
        since the last absolute fix (never while one is under way)."""
        every = self.params['surface_every']
        return every > 0 and not self.active and distance_since_fix >= every

"""Mission budgets beside ``max_measurements``: distance driven (``max_distance``, m) and mission time
(``max_mission_time``, s); 0 switches a budget off.

A mission must not exceed a budget, so it ends *before* a target it cannot afford:

- **distance**: when the next target is further (straight line from the current position estimate) than the
  distance left, the target is not sent and the mission ends. Should the driven path grow past the budget all
  the same (a detour, a path longer than the straight line), the rover is stopped there and measures where it
  stands (free in distance: it does not move), then the mission ends.
- **time**: the time of a leg is predicted as its straight-line length over the mean driving speed so far plus
  the mean time a stop at a target has taken (dwell and reading; ``dwell_time`` before the first), with no
  prediction before the first leg has been driven; a target that would finish after the budget is not sent
  and the mission ends. When the budget runs out anyway, the rover is stopped and the
  mission ends at once (a measurement under way is abandoned).

The distance driven is measured on the pose estimates the explorer receives (the rover's own odometer of the
localisation output, as on a real rover): the path through successive estimates, advanced in steps of at least
:data:`ODOMETER_STEP` so that the estimate's jitter while standing still does not add up, and closed at every
stop (arrival at a target, and the start of the next leg), so that straight legs are counted in full. Estimates whose
covariance trace exceeds ``max_covariance_trace`` (diverged localisation) do not move it, nor do estimates the pose
gate rejected (:mod:`~uncertain_bo.explorer.pose_gate`: a glitch never reaches it), and a re-anchoring of the
gate (:meth:`TravelBudget.relocated`) moves it without adding the jump. Both totals are
journaled with every measurement, so a resumed mission continues its budgets where it stopped.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ['TravelBudget', 'ODOMETER_STEP']

#: least displacement of the position estimate that the odometer adds up, m (estimate jitter below it while
#: standing still is not distance driven; a leg's last fraction of a step is added with the next step). On the
#: simulated rover (2 m GNSS-like fixes at 1 Hz, EKF; 2 seeds of 10 measurements) the odometer reads 1.7 %
#: over the true path length with 2 m (about 9 % over with 1 m: the corrections at each fix zig-zag the
#: estimate; 0.5-1.3 % under with 3 m)
ODOMETER_STEP = 2.0


class TravelBudget:
    """Distance driven and mission time of a run, against ``max_distance`` and ``max_mission_time``.

    Args:
        params: the explorer's parameters, read live (``max_distance``, ``max_mission_time``, ``dwell_time``,
            ``max_covariance_trace``).
        distance: distance already driven (a resumed journal's), m.
        elapsed: mission time already spent (a resumed journal's), s.

    Attributes:
        driving_time: time spent driving to targets so far, s (for the mean speed).

    Example:
        Position estimates along x (covariance trace 0.5 m²) against ``max_distance`` = 10 m:

        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS
        >>> from uncertain_bo.explorer.budget import TravelBudget
        >>> from uncertain_bo.parameters.specs import validate
        >>> budget = TravelBudget(validate(EXPLORER_PARAMS, {'max_distance': 10.0}))
        >>> for x in (0.0, 3.0, 6.0, 12.0):
        ...     budget.moved_to(np.array([x, 0.0]), trace=0.5)
        >>> budget.distance, budget.distance_spent()
        (12.0, 'max_distance = 10 m driven (12.0 m)')
    """

    def __init__(self, params: Mapping[str, Any], distance: float = 0.0, elapsed: float = 0.0):
        self.params = params
        self._distance = float(distance)
        self.driving_time = 0.0
        self._elapsed0 = float(elapsed)
        self._start: float | None = None
        self._anchor: np.ndarray | None = None      # where the odometer last advanced
        self._last: np.ndarray | None = None        # the latest position estimate it accepted
        self._stops: list[float] = []               # how long each stop at a target took (dwell + reading), s

    # ------------------------------------------------------------ measuring
    def start(self, now: float) -> None:
        """The mission clock starts (first pose): idempotent."""
        if self._start is None:
            self._start = now

    def shift(self, dt: float) -> None:
        """The host clock jumped by ``dt`` s (simulation reset): keep the elapsed time."""
        if self._start is not None:
            self._start += dt

    def elapsed(self, now: float) -> float:
        """Mission time at ``now``, s (0 before :meth:`start`)."""
        return self._elapsed0 + (0.0 if self._start is None else max(now - self._start, 0.0))

    def moved_to(self, xy: np.ndarray, trace: float) -> None:
        """A new position estimate ``xy`` ``(2,)`` m with covariance trace ``trace`` m²."""
        if not trace <= self.params['max_covariance_trace']:
            return
        xy = np.array(xy, dtype=float)
        self._last = xy
        if self._anchor is None:
            self._anchor = xy
            return
        step = self._pending()
        if step >= ODOMETER_STEP:
            self._distance += step
            self._anchor = xy

    def relocated(self, xy: np.ndarray) -> None:
        """The position estimate moved to ``xy`` ``(2,)`` m without the rover driving there (the pose gate
        re-anchored after a re-initialised localisation): the step under way is closed where it was, and the
        odometer continues from ``xy``; the jump is not distance driven."""
        self.stopped()
        xy = np.array(xy, dtype=float)
        self._anchor = self._last = xy

    def stopped(self) -> None:
        """The rover stopped (at a target, or stopped there): close the odometer's current step."""
        if self._last is not None and self._anchor is not None:
            self._distance += self._pending()
            self._anchor = self._last

    def _pending(self) -> float:
        """Distance from where the odometer last advanced to the latest estimate, m."""
        if self._last is None or self._anchor is None:
            return 0.0
        return float(np.hypot(*(self._last - self._anchor)))

    @property
    def distance(self) -> float:
        """Distance driven so far, m (the steps added up plus the step under way)."""
        return self._distance + self._pending()

    def drove(self, dt: float) -> None:
        """``dt`` s spent driving to a target."""
        self.driving_time += max(dt, 0.0)

    def measured(self, seconds: float) -> None:
        """A stop at a target (arrival to stored measurement) took ``seconds``."""
        self._stops.append(max(float(seconds), 0.0))

    @property
    def stop_time(self) -> float:
        """Expected duration of a stop at a target, s: the mean so far, else ``dwell_time``."""
        return float(np.mean(self._stops)) if self._stops else float(self.params['dwell_time'])

    @property
    def speed(self) -> float | None:
        """Mean driving speed so far, m/s (None before anything was driven)."""
        if self.driving_time <= 0.0 or self.distance <= 0.0:
            return None
        return self.distance / self.driving_time

    # ------------------------------------------------------------ deciding
    def distance_spent(self) -> str | None:
        """Why the distance budget is spent (None if it is not, or off)."""
        limit = self.params['max_distance']
        if limit > 0 and self.distance >= limit:
            return f'max_distance = {limit:g} m driven ({self.distance:.1f} m)'
        return None

    def time_spent(self, now: float) -> str | None:
        """Why the time budget is spent at ``now`` (None if it is not, or off)."""
        limit = self.params['max_mission_time']
        if limit > 0 and self.elapsed(now) >= limit:
            return f'max_mission_time = {limit:g} s used ({self.elapsed(now):.1f} s)'
        return None

    def spent(self, now: float) -> str | None:
        """Why a budget is spent at ``now`` (None if none is)."""
        return self.distance_spent() or self.time_spent(now)

    def unaffordable(self, now: float, position: np.ndarray, target: np.ndarray) -> str | None:
        """Why driving from ``position`` to ``target`` (both ``(2,)`` m) and measuring there would exceed a
        budget, or None if it fits (straight-line distance; time at the mean speed so far plus
        :attr:`stop_time`)."""
        leg = float(np.hypot(*(np.asarray(target, float) - np.asarray(position, float))))
        where = f'({target[0]:.2f}, {target[1]:.2f})'
        limit = self.params['max_distance']
        if limit > 0 and self.distance + leg > limit:
            return (f'the next target {where} is {leg:.1f} m away, but only {max(limit - self.distance, 0.0):.1f} m '
                    f'of max_distance = {limit:g} m remain')
        limit, speed = self.params['max_mission_time'], self.speed
        if limit > 0 and speed is not None:
            need = leg / speed + self.stop_time
            left = limit - self.elapsed(now)
            if need > left:
                return (f'the next target {where} needs about {need:.0f} s ({leg:.1f} m at the mean speed '
                        f'{speed:.2f} m/s, then {self.stop_time:.1f} s to measure), but only {max(left, 0.0):.0f} s of '
                        f'max_mission_time = {limit:g} s remain')
        return None

    def totals(self, now: float) -> dict[str, float]:
        """``{'distance_driven_m', 'mission_time_s'}`` at ``now`` (what the journal records)."""
        return {'distance_driven_m': round(self.distance, 3), 'mission_time_s': round(self.elapsed(now), 3)}

    @staticmethod
    def resumed(params: Mapping[str, Any], observations: list[dict[str, Any]]) -> 'TravelBudget':
        """The budget of a run that continues ``observations`` (journal records; their last totals)."""
        last = observations[-1] if observations else {}
        d, t = last.get('distance_driven_m'), last.get('mission_time_s')
        ok = all(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 for v in (d, t))
        return TravelBudget(params, d, t) if ok else TravelBudget(params)

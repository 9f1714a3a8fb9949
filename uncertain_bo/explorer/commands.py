"""Commands to the rover: the one place where goals and stops leave the explorer, and the invariant they keep.

**Invariant** (whatever the inputs): every goal lies inside ``search_bounds`` (to
:data:`~uncertain_bo.explorer.area.GOAL_TOLERANCE`), and every "hold here" stop inside ``search_bounds`` widened by
``area_margin`` (:mod:`~uncertain_bo.explorer.area`). Every :meth:`ExplorerOutputs.send_goal
<uncertain_bo.explorer.outputs.ExplorerOutputs.send_goal>` and :meth:`~uncertain_bo.explorer.outputs.ExplorerOutputs.
stop` of the explorer goes through :class:`Commands`, which checks it:

- **a goal** outside ``search_bounds`` is refused: an error in the log, counted (``'goal: outside search_bounds'``),
  the rover is stopped if it was under way, and the next target is decided anew. The planner's targets never are
  (the acquisition is maximised in the bounds; keep-out zones move a target to the nearest admissible point of the
  bounds); a journal's pending target resumed with other bounds, or a target re-sent (after a pause, or by the goal
  re-sending) after ``search_bounds`` changed at run time, can be;
- **a stop** holds the rover where it is believed to be: the newest accepted pose estimate within
  ``max_covariance_trace`` (:attr:`~uncertain_bo.explorer.inputs.InputStreams.trusted_pose`: never a diverged or
  rejected estimate; pose estimates outside the area are rejected, so it lies inside), moved onto the area's edge
  should ``search_bounds`` have changed since (an error in the log, counted: ``'goal: hold outside the area'``).
"""
from __future__ import annotations

import logging

import numpy as np

from .area import GOAL_TOLERANCE, area_text, distance_outside
from .states import State

__all__ = ['Commands']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: the stages in which the rover may be under way to a goal
_UNDER_WAY = (State.DRIVING, State.DWELLING, State.MEASURING, State.RELOCALISING)


class Commands:
    """The commands of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: it calls the host's
    outputs, and on a refused goal sets the explorer's target and state)."""

    def _send_goal(self, target: np.ndarray) -> bool:
        """Send ``target`` ``(2,)`` m as the goal unless :meth:`_goal_refused`. Returns whether it was sent."""
        if self._goal_refused(target):
            return False
        self.outputs.send_goal(target)
        return True

    def _goal_refused(self, target: np.ndarray) -> bool:
        """True (and the goal refused: logged, counted, the rover stopped if it is under way, the next target decided
        anew) when ``target`` ``(2,)`` m lies outside ``search_bounds``."""
        outside = distance_outside(target, self.params)
        if outside <= GOAL_TOLERANCE:
            return False
        where = f'({float(target[0]):.6g}, {float(target[1]):.6g})'
        self.rejected['goal: outside search_bounds'] += 1
        self.last_reason = (f'goal {where} refused: {outside:.3g} m outside {area_text(self.params)} (a resumed '
                            'target of other bounds, or search_bounds changed since it was decided)')
        log.error('%s; deciding a new target', self.last_reason)
        if self.state in _UNDER_WAY:
            self._stop()
        self.target = None
        self.state = State.DECIDING
        return True

    def _stop(self) -> np.ndarray | None:
        """Stop the rover and hold it where it is believed to be (:meth:`_hold_position`). Returns that position
        (None when none is known: nothing was ever sent)."""
        where = self._hold_position()
        if where is not None:
            self.outputs.stop(where)
        return where

    def _hold_position(self) -> np.ndarray | None:
        """Where a stop holds the rover, ``(2,)`` m: the trusted pose estimate (else the newest one, else the target),
        moved onto the edge of ``search_bounds`` + ``area_margin`` if it lies outside (logged, counted)."""
        pose = self.inputs.trusted_pose or self.latest_pose
        if pose is not None:
            xy = np.asarray(pose.xy, dtype=float)
        elif self.target is not None:
            xy = np.asarray(self.target, dtype=float)
        else:
            return None
        margin = float(self.params['area_margin'])
        if distance_outside(xy, self.params, margin) <= GOAL_TOLERANCE:
            return xy.copy()
        xmin, xmax, ymin, ymax = self.params['search_bounds']
        held = np.array([min(max(xy[0], xmin - margin), xmax + margin), min(max(xy[1], ymin - margin), ymax + margin)])
        self.rejected['goal: hold outside the area'] += 1
        self.last_reason = (f'stop: the rover is believed at ({xy[0]:.6g}, {xy[1]:.6g}), outside '
                            f'{area_text(self.params, margin)} (search_bounds changed?): held at ({held[0]:.2f}, '
                            f'{held[1]:.2f}) on its edge')
        log.error(self.last_reason)
        return held

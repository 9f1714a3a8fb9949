"""Commands to the rover: the one place where goals and stops leave the explorer, and the invariant they keep.

**Invariant** (whatever the inputs): every goal lies inside ``search_bounds`` (to
:data:`~uncertain_bo.explorer.area.GOAL_TOLERANCE`), and every "hold here" stop inside ``search_bounds`` widened by
``area_margin`` (:mod:`~uncertain_bo.explorer.area`). Every :meth:`ExplorerOutputs.send_goal
<uncertain_bo.explorer.outputs.ExplorerOutputs.send_goal>` and :meth:`~uncertain_bo.explorer.outputs.ExplorerOutputs.
stop` of the explorer goes through :class:`Commands`, which checks it:

- **a goal** outside ``search_bounds`` is refused: an error in the log, counted (``'goal: outside search_bounds'``),
  and the explorer stops the rover if it was under way and decides the next target anew. The planner's targets never
  are (the acquisition is maximised in the bounds; keep-out zones move a target to the nearest admissible point of
  the bounds); a journal's pending target resumed with other bounds, or a target re-sent (after a pause, or by the
  goal re-sending) after ``search_bounds`` changed at run time, can be;
- **a stop** holds the rover where it is believed to be: the newest accepted pose estimate within
  ``max_covariance_trace`` (:attr:`~uncertain_bo.explorer.inputs.InputStreams.trusted_pose`: never a diverged or
  rejected estimate; pose estimates outside the area are rejected, so it lies inside), moved onto the area's edge
  should ``search_bounds`` have changed since (an error in the log, counted: ``'goal: hold outside the area'``).

Goals also go out again until the controller is seen to act on them (:attr:`Commands.resend`,
:mod:`~uncertain_bo.explorer.goal_resend`).
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

import numpy as np

from .area import GOAL_TOLERANCE, area_text, distance_outside
from .goal_resend import GoalResend
from .inputs import InputStreams
from .outputs import ExplorerOutputs

__all__ = ['Commands']

log = logging.getLogger('uncertain_bo.explorer.state_machine')


class Commands:
    """Goals and stops to the host, checked against the area (module docstring).

    Args:
        params: the explorer's parameters, read live (``search_bounds``, ``area_margin``, ``goal_resend_period``).
        inputs: where the rover is believed to be (:attr:`~uncertain_bo.explorer.inputs.InputStreams.trusted_pose`,
            the newest pose) and where refusals are counted (:meth:`~uncertain_bo.explorer.inputs.InputStreams.
            reject`'s counters and ``last_reason``).
        outputs: the host's :class:`~uncertain_bo.explorer.outputs.ExplorerOutputs`.

    Attributes:
        resend: when to send the current goal again (:class:`~uncertain_bo.explorer.goal_resend.GoalResend`).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, InputStreams, planner_from_parameters
        >>> from uncertain_bo.explorer.commands import Commands
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> class Host:                                   # the host's ExplorerOutputs (goals only here)
        ...     def send_goal(self, target): print('goal_pose', target)
        >>> inputs = InputStreams(params, collecting=lambda: False)
        >>> commands = Commands(params, inputs, Host())
        >>> commands.send_goal(np.array([10.0, 20.0]))
        goal_pose [10. 20.]
        True
        >>> commands.send_goal(np.array([80.0, 20.0]))    # outside search_bounds: refused and counted
        False
        >>> dict(inputs.rejected)
        {'goal: outside search_bounds': 1}
    """

    def __init__(self, params: Mapping[str, Any], inputs: InputStreams, outputs: ExplorerOutputs):
        self.params = params
        self.inputs = inputs
        self.outputs = outputs
        self.resend = GoalResend(params)

    def refused(self, target: np.ndarray) -> bool:
        """True (logged and counted) when the goal ``target`` ``(2,)`` m lies outside ``search_bounds``; the caller
        then stops the rover if it is under way and decides anew."""
        outside = distance_outside(target, self.params)
        if outside <= GOAL_TOLERANCE:
            return False
        where = f'({float(target[0]):.6g}, {float(target[1]):.6g})'
        self.inputs.rejected['goal: outside search_bounds'] += 1
        self.inputs.last_reason = (f'goal {where} refused: {outside:.3g} m outside {area_text(self.params)} (a '
                                   'resumed target of other bounds, or search_bounds changed since it was decided)')
        log.error('%s; deciding a new target', self.inputs.last_reason)
        return True

    def send_goal(self, target: np.ndarray) -> bool:
        """Send ``target`` ``(2,)`` m as the goal unless :meth:`refused`. Returns whether it was sent."""
        if self.refused(target):
            return False
        self.outputs.send_goal(target)
        return True

    def stop(self, target: np.ndarray | None) -> np.ndarray | None:
        """Stop the rover and hold it where it is believed to be (:meth:`hold_position`; ``target`` ``(2,)`` m, the
        current goal, where nothing better is known). Returns that position (None when none is known: nothing was
        ever sent)."""
        where = self.hold_position(target)
        if where is not None:
            self.outputs.stop(where)
        return where

    def hold_position(self, target: np.ndarray | None) -> np.ndarray | None:
        """Where a stop holds the rover, ``(2,)`` m: the trusted pose estimate (else the newest one, else ``target``),
        moved onto the edge of ``search_bounds`` + ``area_margin`` if it lies outside (logged, counted)."""
        pose = self.inputs.trusted_pose or self.inputs.latest_pose
        if pose is not None:
            xy = np.asarray(pose.xy, dtype=float)
        elif target is not None:
            xy = np.asarray(target, dtype=float)
        else:
            return None
        margin = float(self.params['area_margin'])
        if distance_outside(xy, self.params, margin) <= GOAL_TOLERANCE:
            return xy.copy()
        xmin, xmax, ymin, ymax = self.params['search_bounds']
        held = np.array([min(max(xy[0], xmin - margin), xmax + margin), min(max(xy[1], ymin - margin), ymax + margin)])
        self.inputs.rejected['goal: hold outside the area'] += 1
        self.inputs.last_reason = (f'stop: the rover is believed at ({xy[0]:.6g}, {xy[1]:.6g}), outside '
                                   f'{area_text(self.params, margin)} (search_bounds changed?): held at '
                                   f'({held[0]:.2f}, {held[1]:.2f}) on its edge')
        log.error(self.inputs.last_reason)
        return held

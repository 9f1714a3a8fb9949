"""Deciding: the next target from the planner (a target a restart left pending first, then a fresh decision),
inline or on the ``decider`` executor while inputs keep arriving, and sending it as the goal once the budgets
allow it; run-time parameter changes, which wait while the planner is busy on the decider.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import Any, Mapping

import numpy as np

from ..keep_out import NoAdmissibleTargetError
from .parameters import update_planner
from .states import State

__all__ = ['Deciding']

log = logging.getLogger('uncertain_bo.explorer.state_machine')


class Deciding:
    """The deciding stage of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: it reads and
    sets the explorer's state, target, goal clock and decider futures)."""

    @property
    def deciding_in_background(self) -> bool:
        """True while a decision runs on :attr:`decider` (the planner must not be changed meanwhile)."""
        return any(f is not None and not f.done() for f in (self._decision, self._recommendation_future))

    @property
    def _recommendation_future(self) -> Future | None:
        return self._recommending[1] if self._recommending is not None else None

    def _background_idle(self) -> bool:
        """No decision or recommendation is pending on the decider (the planner may be changed)."""
        return self._decision is None and self._recommending is None

    def apply_parameters(self, changed: Mapping[str, Any]) -> None:
        """Make run-time changes of :attr:`params` (already stored there) take effect: planner settings through
        :func:`~uncertain_bo.explorer.parameters.update_planner` (β, refit period, optimiser, execution noise,
        search bounds), the pose buffer size, and a journal record of the change. Everything else is read live.
        While a decision runs in the background the planner's settings are changed once it has finished
        (before its target is sent)."""
        journal = self.planner.journal_file
        if journal is not None:
            journal.append({'type': 'parameters', 'changed': dict(changed), 'index': self.planner.n,
                            'wall_time': time.time()})
        self._apply(changed)

    def _apply(self, changed: Mapping[str, Any]) -> None:
        if not self._background_idle():
            self._pending_changes.update(changed)
            log.info('parameters changed while deciding: %s (applied when the decision ends)',
                     ', '.join(f'{k} = {v}' for k, v in changed.items()))
            return
        update_planner(self.planner, self.params, changed)
        if 'pose_buffer_size' in changed:
            self.inputs.resize(self.params['pose_buffer_size'])
        log.info('parameters changed at run time: %s', ', '.join(f'{k} = {v}' for k, v in changed.items()))

    def _decide(self, now: float) -> None:
        if self._recommending is not None:
            measurement, future = self._recommending
            if not future.done():
                return              # the recommendation after the last measurement (and its GP fit) runs
            self._recommending = None
            self._after_measurement(measurement, future.result())
            if self._pending_changes:
                changes, self._pending_changes = self._pending_changes, {}
                self._apply(changes)
            return                  # the next tick checks the limits, then decides
        if self._decision is None:
            if self._unsent is not None:       # a budget stopped it; limits were raised since
                target, self._unsent = self._unsent, None
                self._send(target, now)
                return
            resumed = self.planner.take_resumed_target()
            if resumed is not None:
                target, self.goal_reason = resumed.numpy(), 'resumed'
                log.info('resuming the journal\'s pending target %d: (%.2f, %.2f)', self.planner.n + 1, *target)
                self._send(target, now)
                return
            if self.decider is None:
                try:
                    target = self.planner.suggest().numpy()
                except NoAdmissibleTargetError as exc:
                    self._finish(str(exc), stop=False)
                    return
                self.goal_reason = 'new'
                self._send(target, now)
                return
            self._decision = self.decider.submit(self.planner.suggest)
            return
        if not self._decision.done():
            return                  # inputs, timers and diagnostics go on meanwhile
        decision, self._decision = self._decision, None
        try:
            target = decision.result().numpy()  # an exception in the decision propagates as it would inline
        except NoAdmissibleTargetError as exc:
            self._finish(str(exc), stop=False)
            return
        self.goal_reason = 'new'
        if self._pending_changes:
            changes, self._pending_changes = self._pending_changes, {}
            self._apply(changes)
        self._send(target, now)

    def _send(self, target: np.ndarray, now: float) -> None:
        pose = self.latest_pose
        position = pose.xy if pose is not None else self.planner.position.numpy()
        if self._goal_refused(target):         # outside search_bounds: decided anew (commands.py)
            return
        if self._relocalise_first(target, now):   # a fix source or surfacing first (relocalising.py)
            return
        reason = self.budget.unaffordable(now, position, target)
        if reason is not None:
            self._unsent = target
            self._finish(reason, stop=False)
            return
        self.budget.stopped()      # the leg starts here: the odometer's step so far is complete
        self.last_decision_wall_time = time.time()
        self.target = target
        self._goal_time = now
        self._timed_out = False
        self._retries = 0
        self.state = State.DRIVING
        if self._en_route_from is None and pose is not None:
            self._en_route_from = np.asarray(pose.xy, dtype=float).copy()   # en-route spacing counts from here
        self.goal_resend.sent(now, position, target)
        self._send_goal(target)

"""Deciding: where the planner's work runs and what it hands back — the next target (a target a budget held back
first, then one a restart left pending, then a fresh decision) and the recommendation after a measurement — inline,
or on the ``decider`` executor while inputs keep arriving; run-time parameter changes, which wait while the planner
is busy on the decider.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Executor, Future
from typing import Any, Mapping

import numpy as np

from ..planning.planner import Planner, Recommendation
from .inputs import InputStreams
from .outputs import Measurement
from .parameters import update_planner

__all__ = ['Deciding']

log = logging.getLogger('uncertain_bo.explorer.state_machine')


class Deciding:
    """The planner's work for the explorer's deciding stage, inline or on an executor.

    Args:
        planner: the planner that decides and recommends (its journal records run-time parameter changes).
        params: the explorer's parameters (a run-time change is handed to :func:`~uncertain_bo.explorer.parameters.
            update_planner`).
        inputs: the input buffers (``pose_buffer_size`` changes resize them).
        executor: where decisions and recommendations run (None: inline; the host owns it).

    Attributes:
        unsent: a decided target a budget did not let the explorer send (sent first once a limit is raised), or None.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, InputStreams, planner_from_parameters
        >>> from uncertain_bo.explorer.deciding import Deciding
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> planner = planner_from_parameters(params)
        >>> deciding = Deciding(planner, params, InputStreams(params, lambda: False), executor=None)
        >>> target, why = deciding.next_target()          # inline: the planner decides now
        >>> why, target.shape, bool(np.all((0.0 <= target) & (target <= 50.0)))
        ('new', (2,), True)
    """

    def __init__(self, planner: Planner, params: dict[str, Any], inputs: InputStreams, executor: Executor | None):
        self.planner = planner
        self.params = params
        self.inputs = inputs
        self.executor = executor
        self.unsent: np.ndarray | None = None
        self._decision: Future | None = None
        # a stored measurement whose recommendation (and the GP fit it brings) runs on the executor
        self._recommending: tuple[Measurement, Future] | None = None
        self._pending_changes: dict[str, Any] = {}

    @property
    def busy(self) -> bool:
        """True while a decision or recommendation runs on the executor (the planner must not be changed)."""
        return any(f is not None and not f.done() for f in (self._decision, self._recommendation_future))

    @property
    def _recommendation_future(self) -> Future | None:
        return self._recommending[1] if self._recommending is not None else None

    @property
    def idle(self) -> bool:
        """No decision or recommendation is pending on the executor (the planner may be changed)."""
        return self._decision is None and self._recommending is None

    @property
    def recommending(self) -> bool:
        """A recommendation after a measurement was handed to the executor and not collected yet."""
        return self._recommending is not None

    def apply_parameters(self, changed: Mapping[str, Any]) -> None:
        """Journal run-time changes of ``params`` (already stored there) and make them take effect (:meth:`apply`)."""
        self.planner.journal_writer.write({'type': 'parameters', 'changed': dict(changed), 'index': self.planner.n,
                                           'wall_time': time.time()})
        self.apply(changed)

    def apply(self, changed: Mapping[str, Any]) -> None:
        """Planner settings through :func:`~uncertain_bo.explorer.parameters.update_planner` and the pose buffer
        size; while the executor works, once it has finished (:meth:`apply_pending`)."""
        if not self.idle:
            self._pending_changes.update(changed)
            log.info('parameters changed while deciding: %s (applied when the decision ends)',
                     ', '.join(f'{k} = {v}' for k, v in changed.items()))
            return
        update_planner(self.planner, self.params, changed)
        if 'pose_buffer_size' in changed:
            self.inputs.resize(self.params['pose_buffer_size'])
        log.info('parameters changed at run time: %s', ', '.join(f'{k} = {v}' for k, v in changed.items()))

    def apply_pending(self) -> None:
        """Apply the changes that arrived while the executor worked."""
        if self._pending_changes:
            changes, self._pending_changes = self._pending_changes, {}
            self.apply(changes)

    def recommend_after(self, m: Measurement) -> Recommendation | None:
        """The recommendation after measurement ``m``: inline, or handed to the executor (None; collect it with
        :meth:`collect_recommendation`): it refits the GP when the schedule says so (seconds), and the host's
        executor keeps taking poses and readings meanwhile (they would queue up and arrive stale)."""
        if self.executor is None:
            return self.planner.recommend()
        self._recommending = (m, self.executor.submit(self.planner.recommend))
        return None

    def collect_recommendation(self) -> tuple[Measurement, Recommendation] | None:
        """The measurement and its recommendation once the executor has finished it (then the changes held
        meanwhile apply), else None."""
        measurement, future = self._recommending
        if not future.done():
            return None
        self._recommending = None
        return measurement, future.result()

    def next_target(self) -> tuple[np.ndarray, str | None] | None:
        """The next target ``(2,)`` m and why (``'new'``, ``'resumed'``; None for a target a budget held back),
        or None while the executor decides (inputs, timers and diagnostics go on meanwhile).

        Raises:
            NoAdmissibleTargetError: the keep-out zones leave no admissible target.
        """
        if self._decision is None:
            if self.unsent is not None:       # a budget stopped it; limits were raised since
                target, self.unsent = self.unsent, None
                return target, None
            resumed = self.planner.take_resumed_target()
            if resumed is not None:
                target = resumed.numpy()
                log.info('resuming the journal\'s pending target %d: (%.2f, %.2f)', self.planner.n + 1, *target)
                return target, 'resumed'
            if self.executor is None:
                return self.planner.suggest().numpy(), 'new'
            self._decision = self.executor.submit(self.planner.suggest)
            return None
        if not self._decision.done():
            return None
        decision, self._decision = self._decision, None
        target = decision.result().numpy()  # an exception in the decision propagates as it would inline
        self.apply_pending()
        return target, 'new'

    def drain(self) -> tuple[Measurement, Recommendation] | None:
        """Wait for the executor's work (the planner is not used from two threads): a decision is dropped (it is
        journaled, its target is not sent); a recommendation is returned with its measurement."""
        if self._decision is not None:
            self._decision.exception()
            self._decision = None
        if self._recommending is None:
            return None
        m, future = self._recommending
        self._recommending = None
        return m, future.result()

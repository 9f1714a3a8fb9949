"""Measuring: dwelling at the target, pairing a reading of the measuring window with the pose estimate
(:meth:`~uncertain_bo.explorer.inputs.InputStreams.pair`), storing the pair in the planner, and skipping a target
that cannot be measured.

A future-stamped reading can never hold up the measuring stage, which measures or skips the target within
``reading_timeout`` x (``reading_retries`` + 1). A skipped target is reported as "sensor silent" only when no
reading arrived at all, else with the reasons the readings were refused. It becomes a **keep-out zone**
(:mod:`uncertain_bo.planning.keep_out`, radius ``keep_out_radius``): journaled, counted in the diagnostics and the
result file, and no later decision of any method proposes a target in it; ``max_consecutive_skips`` skips in a row end
the mission. A skipped attempt counts against the time and distance budgets (driven, waited for), not against
``max_measurements``. The pair's location distribution follows the method
(:class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..planning.keep_out import default_radius
from ..planning.planner import Planner
from .budget import TravelBudget
from .inputs import InputStreams
from .outputs import Measurement
from .storing import Storing

__all__ = ['Measuring', 'SKIP']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: what :meth:`Measuring.measure` returns for a target that cannot be measured
SKIP = 'skip'


class Measuring:
    """A stop at a target: the dwell, the measuring window with its retries, the stored pair or the skip.

    Args:
        planner: where a skipped target is kept out (:meth:`~uncertain_bo.planning.planner.Planner.add_keep_out`).
        params: the explorer's parameters, read live (``dwell_time``, ``reading_timeout``, ``reading_retries``,
            ``keep_out_radius``, ``execution_noise_std``, ``xy_goal_tolerance``, ``max_consecutive_skips``).
        inputs: the pose and reading buffers (the window's pair, rejections).
        store: where the pair is stored.
        budget: where the stop's duration is counted.

    Attributes:
        timed_out: the goal of this stop timed out (the rover is measured where it stopped).
        retries: measuring windows retried at this stop.
        goal_timeouts: goals that timed out in this run.
        skipped_targets: targets of this run that could not be measured.
        window_start: when the current measuring window opened (host clock, s).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import (EXPLORER_PARAMS, InputStreams, LocationPolicy, planner_from_parameters,
        ...                                    PoseEstimate, Reading, TravelBudget)
        >>> from uncertain_bo.explorer.measuring import Measuring
        >>> from uncertain_bo.explorer.storing import Storing
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> planner, budget = planner_from_parameters(params), TravelBudget(params)
        >>> inputs = InputStreams(params, collecting=lambda: True)
        >>> store = Storing(planner, params, inputs, LocationPolicy(planner, params), budget)
        >>> measuring = Measuring(planner, params, inputs, store, budget)
        >>> target = np.array([10.0, 10.0])
        >>> _ = inputs.add_pose(PoseEstimate(0.0, 'map', target, 0.1 * np.eye(2)), 0.0, lambda p: p)
        >>> measuring.open_window(now=0.0)
        >>> _ = inputs.add_reading(Reading(0.5, 21.3), 0.5)
        >>> _ = inputs.add_pose(PoseEstimate(0.6, 'map', target, 0.1 * np.eye(2)), 0.6, lambda p: p)
        >>> m = measuring.measure(0.6, target)            # the reading paired with the pose nearest in time
        >>> m.index, m.reading.value, m.pose.stamp, planner.n
        (0, 21.3, 0.6, 1)
    """

    def __init__(self, planner: Planner, params: dict[str, Any], inputs: InputStreams, store: Storing,
                 budget: TravelBudget):
        self.planner = planner
        self.params = params
        self.inputs = inputs
        self.store = store
        self.budget = budget
        self.timed_out = False
        self.retries = 0
        self.goal_timeouts = 0
        self.skipped_targets = 0
        self.window_start = 0.0
        self._dwell_end = self._stop_start = 0.0
        self._consecutive_skips = 0

    def new_goal(self, timed_out: bool = False) -> None:
        """A goal was sent (``timed_out``: no goal; the last one timed out and the rover measures where it is)."""
        self.timed_out = timed_out
        self.retries = 0

    def shift(self, dt: float) -> None:
        """The host clock jumped by ``dt`` s: move the stage's clocks with it."""
        self._dwell_end += dt
        self.window_start += dt
        self._stop_start += dt

    def stopped(self, now: float, dwell: bool = True) -> None:
        """The rover stopped at ``now`` (arrived, or its goal was given up): the stop's clock starts; ``dwell``:
        the dwell starts too."""
        self.budget.stopped()
        self._stop_start = now
        if dwell:
            self._dwell_end = now + self.params['dwell_time']

    def dwelt(self, now: float) -> bool:
        """True once the dwell is over at ``now`` (the measuring window opens: :meth:`open_window`)."""
        return now >= self._dwell_end

    def open_window(self, now: float) -> None:
        self.window_start = now
        self.inputs.open_window()

    def measure(self, now: float, target: np.ndarray) -> Measurement | str | None:
        """The measuring window at ``now``: the stored :class:`~uncertain_bo.explorer.outputs.Measurement` of
        ``target`` ``(2,)`` m once a pair is found, :data:`SKIP` when the target cannot be measured after its
        retries (``inputs.last_reason`` says why), None meanwhile."""
        pair = self.inputs.pair(now, self.window_start)
        if pair is not None:
            return self._store(*pair, target, now)
        if self.inputs.readings or now - self.window_start <= self.params['reading_timeout']:
            return None
        if self.retries < self.params['reading_retries']:
            self.retries += 1
            log.warning('no valid %s within reading_timeout = %.1f s; retry %d/%d', self.inputs.named('reading'),
                        self.params['reading_timeout'], self.retries, self.params['reading_retries'])
            self.window_start = now
            return None
        where = f'({target[0]:.2f}, {target[1]:.2f})'
        received, rejects = self.inputs.window_received, self.inputs.window_rejects
        if received == 0:
            self.inputs.rejected['measurement: sensor silent, target skipped'] += 1
            self.inputs.last_reason = f"sensor silent at target {where}: no {self.inputs.named('reading')} arrived"
        else:
            why = ', '.join(f'{n} {c}' for c, n in rejects.most_common()) or 'none paired'
            self.inputs.rejected['measurement: no usable reading, target skipped'] += 1
            self.inputs.last_reason = (f'no usable reading at target {where}: {received} readings '
                                       f"arrived but none could be used ({why}; {self.inputs.named('reading')})")
        return SKIP

    def skip(self, now: float, target: np.ndarray) -> str | None:
        """``target`` ``(2,)`` m could not be measured after its retries: keep it out of every later decision
        (:meth:`~uncertain_bo.planning.planner.Planner.add_keep_out`, journaled). The attempt counts against the time
        and distance budgets (it was driven to and waited for, and its stop joins the mean stop time of the time
        budget's prediction), not against ``max_measurements``, which counts stored measurements. Returns why the
        mission ends (``max_consecutive_skips`` in a row), else None (decide anew)."""
        reason = self.inputs.last_reason
        radius = self.params['keep_out_radius'] or default_radius(self.params['execution_noise_std'],
                                                                  self.params['xy_goal_tolerance'])
        self.planner.add_keep_out(target, radius, reason or 'not measurable')
        self.skipped_targets += 1
        self._consecutive_skips += 1
        self.budget.measured(now - self._stop_start)
        log.warning('%s: skipping it%s; no target within %.2f m of it will be proposed again (%d keep-out zones)',
                    reason, f' after {self.retries} retries' if self.retries else '', radius,
                    len(self.planner.keep_out))
        limit = self.params['max_consecutive_skips']
        if limit and self._consecutive_skips >= limit:
            return (f'{self._consecutive_skips} targets in a row could not be measured (max_consecutive_skips '
                    f'= {limit}): is the sensor publishing, and is reading_range right? last: {reason}')
        return None

    def _store(self, pose, reading, target: np.ndarray, now: float) -> Measurement | None:
        """Store the pair in the planner; None when it refuses it (counted)."""
        stored = self.store.store('measurement', target, pose, reading, reading.stamp, now,
                                  fields={'goal_timed_out': self.timed_out},
                                  flags={'reading_stamped_on_arrival': True} if reading.stamped_on_arrival else None)
        if stored is None:
            return None
        index, location = stored
        self._consecutive_skips = 0
        self.budget.measured(now - self._stop_start)
        return Measurement(index, target.copy(), pose, reading, self.timed_out, location)

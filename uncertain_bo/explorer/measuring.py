"""Measuring: dwelling at the target, pairing a reading of the measuring window with the pose estimate
(:meth:`~uncertain_bo.explorer.inputs.InputStreams.pair`), storing the pair in the planner, and skipping a target
that cannot be measured.

A future-stamped reading can never hold up the measuring stage, which measures or skips the target within
``reading_timeout`` x (``reading_retries`` + 1). A skipped target is reported as "sensor silent" only when no
reading arrived at all, else with the reasons the readings were refused. It becomes a **keep-out zone**
(:mod:`uncertain_bo.keep_out`, radius ``keep_out_radius``): journaled, counted in the diagnostics and the result
file, and no later decision of any method proposes a target in it; ``max_consecutive_skips`` skips in a row end
the mission. A skipped attempt counts against the time and distance budgets (driven, waited for), not against
``max_measurements``. The pair's location distribution follows the method
(:class:`~uncertain_bo.explorer.location_policy.LocationPolicy`).
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from ..distributions import DTYPE, InvalidDistributionError
from ..keep_out import default_radius
from ..planner import InvalidObservationError, Recommendation
from .inputs import PoseEstimate, Reading
from .outputs import Measurement
from .states import State

__all__ = ['Measuring']

log = logging.getLogger('uncertain_bo.explorer.state_machine')


class Measuring:
    """The dwelling and measuring stages of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it:
    it reads and sets the explorer's state, target, stage timers and counters)."""

    def _start_dwell(self, now: float) -> None:
        self.budget.stopped()
        self._stop_start = now
        self.state = State.DWELLING
        self._dwell_end = now + self.params['dwell_time']

    def _measure(self, now: float) -> None:
        pair = self.inputs.pair(now, self._measure_start)
        if pair is not None:
            self._store(*pair, now)
            return
        if self.inputs.readings or now - self._measure_start <= self.params['reading_timeout']:
            return
        if self._retries < self.params['reading_retries']:
            self._retries += 1
            log.warning('no valid %s within reading_timeout = %.1f s; retry %d/%d', self.inputs.named('reading'),
                        self.params['reading_timeout'], self._retries, self.params['reading_retries'])
            self._measure_start = now
            return
        where = f'({self.target[0]:.2f}, {self.target[1]:.2f})'
        received, rejects = self.inputs.window_received, self.inputs.window_rejects
        if received == 0:
            self.rejected['measurement: sensor silent, target skipped'] += 1
            self.last_reason = f"sensor silent at target {where}: no {self.inputs.named('reading')} arrived"
        else:
            why = ', '.join(f'{n} {c}' for c, n in rejects.most_common()) or 'none paired'
            self.rejected['measurement: no usable reading, target skipped'] += 1
            self.last_reason = (f'no usable reading at target {where}: {received} readings '
                                f"arrived but none could be used ({why}; {self.inputs.named('reading')})")
        self._skip(now)

    def _skip(self, now: float) -> None:
        """The target could not be measured after its retries: keep it out of every later decision
        (:meth:`~uncertain_bo.planner.Planner.add_keep_out`, journaled) and decide anew, or end the mission after
        ``max_consecutive_skips`` in a row. The attempt counts against the time and distance budgets (it was
        driven to and waited for, and its stop joins the mean stop time of the time budget's prediction), not
        against ``max_measurements``, which counts stored measurements."""
        radius = self.params['keep_out_radius'] or default_radius(self.params['execution_noise_std'],
                                                                  self.params['arrival_tolerance'])
        self.planner.add_keep_out(self.target, radius, self.last_reason or 'not measurable')
        self.skipped_targets += 1
        self._consecutive_skips += 1
        self.budget.measured(now - self._stop_start)
        log.warning('%s: skipping it%s; no target within %.2f m of it will be proposed again (%d keep-out zones)',
                    self.last_reason, f' after {self._retries} retries' if self._retries else '', radius,
                    len(self.planner.keep_out))
        limit = self.params['max_consecutive_skips']
        if limit and self._consecutive_skips >= limit:
            self._finish(f'{self._consecutive_skips} targets in a row could not be measured (max_consecutive_skips '
                         f'= {limit}): is the sensor publishing, and is reading_range right? last: '
                         f'{self.last_reason}', stop=False)
            return
        self.state = State.DECIDING

    def _store(self, pose: PoseEstimate, reading: Reading, now: float) -> None:
        # the sensor's own variance when the message carries one, else the configured reading_noise_std²
        variance = reading.variance if reading.variance > 0 else float(self.params['reading_noise_std']) ** 2
        meta = {'reading_stamp': reading.stamp, 'pose_stamp': pose.stamp, 'reading_variance': variance,
                'frame_id': pose.frame_id, 'goal_timed_out': self._timed_out, **self.budget.totals(now)}
        if reading.stamped_on_arrival:
            meta['reading_stamped_on_arrival'] = True
        try:
            location = self.locations.location(pose)
            meta['location_source'] = self.locations.describe(pose, location)
            index = self.planner.observe(torch.as_tensor(self.target, dtype=DTYPE), location,
                                         float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:  # defensive: validated on arrival
            self.reject('measurement', 'invalid observation', str(exc))
            return
        self.locations.stored(location)
        self._consecutive_skips = 0
        self._en_route_from = np.asarray(pose.xy, dtype=float).copy()
        self._en_route_due = None
        self.budget.measured(now - self._stop_start)
        m = Measurement(index, self.target.copy(), pose, reading, self._timed_out, location)
        if self.decider is not None:
            # the recommendation refits the GP when the schedule says so (seconds): on the decider, so that the
            # host's executor keeps taking poses and readings meanwhile (they would queue up and arrive stale)
            self._recommending = (m, self.decider.submit(self.planner.recommend))
            self.state = State.DECIDING
            return
        self._after_measurement(m, self.planner.recommend())

    def _after_measurement(self, m: Measurement, rec: Recommendation) -> None:
        """Journal the recommendation after measurement ``m``, tell the host, then end or decide next."""
        index = m.index
        journal = self.planner.journal_file
        if journal is not None:
            journal.append(rec.record(index))
        self.outputs.measured(m, rec)
        if self.planner.n >= self.params['max_measurements']:
            self._end(f"max_measurements = {self.params['max_measurements']} reached")
            self._report_finish(rec)
        else:
            self.state = State.DECIDING

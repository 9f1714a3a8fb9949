"""The end of a mission: ``max_measurements`` or a budget (``max_distance``, ``max_mission_time``:
:mod:`~uncertain_bo.explorer.budget`), whichever is first; :attr:`~uncertain_bo.explorer.state_machine.Explorer.
done_reason` says which. Raising a limit at run time continues the mission. The end is reported once (result
file, host's ``finished``), after the work still running on the decider and once the journal holds every record.
"""
from __future__ import annotations

import logging

from ..planner import Recommendation
from .states import State

__all__ = ['MissionEnd', 'LIMITS']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: the parameters that end a mission (a change at run time re-evaluates a finished one)
LIMITS = ('max_measurements', 'max_distance', 'max_mission_time')


class MissionEnd:
    """The end of :class:`~uncertain_bo.explorer.state_machine.Explorer`'s mission (a part of it: it reads and
    sets the explorer's state, ``done_reason`` and end bookkeeping, and tells the host).

    Attributes:
        log_end: log the end (info, ``'mission ends: <reason>'``); False where the host logs it itself (the team
            explorer: each rover's end with its name, the team's end once).
    """

    log_end = True

    def _limits(self) -> tuple:
        return tuple(self.params[k] for k in LIMITS)

    def _limits_raised(self, now: float) -> bool:
        """Finished, but a limit changed at run time and none is reached any more: continue (True)."""
        if self._done_limits is None or self._limits() == self._done_limits:
            return False
        if self.planner.n >= self.params['max_measurements'] or self.budget.spent(now):
            self._done_limits = self._limits()
            return False
        log.info('limits raised (%s): continuing', ', '.join(f'{k} = {self.params[k]}' for k in LIMITS))
        self.done_reason = None
        self._finish_reported = False
        self._done_limits = None
        self.state = State.WAITING_FOR_POSE
        return True

    def _stop_for_limits(self, now: float) -> bool:
        """End the mission when ``max_measurements`` is reached (lowered at run time) or the time budget is
        spent, and, before a decision, when the distance budget is. Returns True if it ended."""
        if self.planner.n >= self.params['max_measurements'] and self._recommending is None:
            self._finish(f"max_measurements = {self.params['max_measurements']} reached", stop=True)
            return True
        reason = self.budget.time_spent(now)
        if reason is None and self.state in (State.WAITING_FOR_POSE, State.DECIDING) and self._background_idle():
            reason = self.budget.distance_spent()
        if reason is not None:
            self._finish(reason, stop=True)
            return True
        return False

    def _end(self, reason: str) -> None:
        self.state = State.DONE
        self.done_reason = reason
        self._done_limits = self._limits()

    def _finish(self, reason: str, stop: bool) -> None:
        if stop and self.state in (State.DRIVING, State.DWELLING, State.MEASURING, State.RELOCALISING):
            self._stop()
        self._end(reason)
        if self.log_end:
            log.info('mission ends: %s', reason)
        self._report_finish()

    def _report_finish(self, rec: Recommendation | None = None) -> None:
        """Write the result file and tell the host, once per end. A mission that a budget ended before its first
        measurement has no recommendation: the result file says so, the host is not called. Work still running
        on the decider is waited for first (the planner is not used from two threads)."""
        if self._finish_reported:
            return
        if self._decision is not None:
            self._decision.exception()           # wait; the decision is journaled, its target is not sent
            self._decision = None
        if self._recommending is not None:
            m, future = self._recommending
            self._recommending = None
            rec = future.result()
            journal = self.planner.journal_file
            if journal is not None:
                journal.append(rec.record(m.index))
            self.outputs.measured(m, rec)
        if self.journal_fault is not None:
            log.error('mission ended (%s) but %s: the end is reported once they are written', self.done_reason,
                      self.journal_fault)
            return                               # tick() retries the journal, then reports
        self._finish_reported = True
        if self.planner.n:
            rec = rec if rec is not None else self.planner.recommend()
        if self.result_file is not None:
            try:
                self._write_result(rec)
            except OSError as exc:               # a full disk at the very end: the journal holds the run
                log.error('could not write the result file %s: %s (the journal holds every measurement)',
                          self.result_file, exc)
        if rec is not None:
            self.outputs.finished(rec)

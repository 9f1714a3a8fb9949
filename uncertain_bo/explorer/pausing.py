"""Pausing: the explorer stops the rover and takes no measurement while localisation has diverged or the journal
cannot be written, and resumes towards the same target once neither holds.

- **Localisation divergence:** when the trace of the newest pose's position covariance exceeds
  ``max_covariance_trace`` the explorer stops the rover and pauses (no measurement is taken); it resumes
  towards the same target once the trace is back below ``RESUME_FRACTION`` of the threshold.
- **Storage faults:** when the journal cannot write (a full disk, EIO, a read-only or vanished run folder:
  :attr:`~uncertain_bo.journal.Journal.fault`) the records stay in memory, in order (the measurement in flight is
  in the planner and its journal record is held), and the explorer pauses as for localisation: it stops the rover,
  logs the reason once, takes no measurement and retries the journal every :data:`JOURNAL_RETRY_PERIOD` s; once
  every held record is written it resumes (the same target again). A mission that ends while records are held
  reports its end (result file, host's ``finished``) only once they are written
  (:mod:`~uncertain_bo.explorer.mission_end`).
"""
from __future__ import annotations

import logging

from .inputs import position_trace
from .parameters import RESUME_FRACTION
from .states import State

__all__ = ['Pausing', 'JOURNAL_RETRY_PERIOD']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: while the journal cannot write, the explorer retries it at most this often (s, host clock)
JOURNAL_RETRY_PERIOD = 1.0

#: the stages in which the rover may be moving or holding a goal: a pause from them stops it
_ACTIVE = ('driving', 'dwelling', 'measuring', 'deciding', 'relocalising')


class Pausing:
    """The pause of :class:`~uncertain_bo.explorer.state_machine.Explorer` (a part of it: it reads and sets the
    explorer's state, ``paused_reason`` and pause bookkeeping, and stops the rover or re-sends its goal through
    the host's outputs)."""

    @property
    def journal_fault(self) -> str | None:
        """Why the journal cannot write and how many records it holds in memory meanwhile (``'journal not
        writable: [Errno 28] No space left on device: ...; 2 record(s) held in memory'``), None when every record
        is on disk (or the planner has no journal)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            return None
        return f'{journal.fault}; {journal.held} record(s) held in memory'

    def _check_pause(self, now: float) -> bool:
        """Pause while localisation has diverged or the journal cannot write; resume when neither holds.

        Pausing stops the rover (when it may be moving or holding a goal) and logs each cause once; resuming
        re-sends the target of a pause taken on the way to it or at it. Returns True while paused."""
        causes = {k: v for k, v in (('localisation', self._localisation_problem()),
                                    ('journal', self._journal_problem(now))) if v is not None}
        if not causes:
            if self.state is State.PAUSED:
                self._resume(now)
            return False
        for kind, reason in causes.items():
            if kind not in self._pause_causes:
                if kind == 'localisation':
                    log.error('%s: rover stopped, no measurements until it is below %.3g m²', reason,
                              RESUME_FRACTION * self.params['max_covariance_trace'])
                else:
                    log.error('%s: rover stopped, no measurements until the journal can be written (retried every '
                              '%g s)', reason, JOURNAL_RETRY_PERIOD)
        for kind in set(self._pause_causes) - set(causes):
            log.warning('%s recovered; still paused: %s', kind, '; '.join(causes.values()))
        self._pause_causes = causes
        self.paused_reason = '; '.join(causes.values())
        if self.state is not State.PAUSED:
            self._paused_from = self.state
            self.state = State.PAUSED
            if self._paused_from.value in _ACTIVE:
                self._stop()                 # held at the trusted position, never a diverged estimate's
        return True

    def _localisation_problem(self) -> str | None:
        """Why localisation stops the mission (newest pose's covariance trace over ``max_covariance_trace``; once
        paused for it, until below ``RESUME_FRACTION`` of it), or None."""
        paused = 'localisation' in self._pause_causes
        pose = self.latest_pose
        if pose is None:
            return self._pause_causes['localisation'] if paused else None
        trace = position_trace(pose.cov)
        limit = self.params['max_covariance_trace']
        if trace <= (RESUME_FRACTION * limit if paused else limit):
            if paused:
                log.warning('localisation recovered (covariance trace %.3g m²)', trace)
            return None
        if paused:
            return self._pause_causes['localisation']
        return (f'localisation diverged: position covariance trace {trace:.3g} m² > '
                f'max_covariance_trace = {limit:g} m²')

    def _journal_problem(self, now: float) -> str | None:
        """Why the journal stops the mission (:attr:`journal_fault`), or None. Retries the held records every
        :data:`JOURNAL_RETRY_PERIOD` s (the first retry a period after the fault was seen)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            self._journal_retry_at = None
            return None
        if self._journal_retry_at is None:
            self._journal_retry_at = now
        elif not 0.0 <= now - self._journal_retry_at < JOURNAL_RETRY_PERIOD:
            self._journal_retry_at = now
            if journal.retry():
                log.warning('journal writable again: every held record written')
                self._journal_retry_at = None
                return None
        return self.journal_fault

    def _resume(self, now: float) -> None:
        """Leave the pause: the same target again (with a fresh goal clock) when the pause was taken on the way
        to it or at it (the same re-localisation, when taken during one), else start over from waiting for a
        pose."""
        log.warning('resuming after the pause (%s)', self.paused_reason)
        self.paused_reason = None
        self._pause_causes = {}
        self.inputs.readings.clear()
        pose = self.latest_pose
        if self._paused_from is State.RELOCALISING and self._resume_relocalising(now):
            return
        if (self.target is not None and pose is not None
                and self._paused_from in (State.DRIVING, State.DWELLING, State.MEASURING)):
            self.goal_reason = 'after pause'
            self.state = State.DRIVING
            self._goal_time = now
            self.goal_resend.sent(now, pose.xy, self.target)
            self._send_goal(self.target)     # refused when search_bounds changed meanwhile: decided anew
        else:
            self.state = State.WAITING_FOR_POSE

"""Pausing: the explorer stops the rover and takes no measurement while localisation has diverged or the journal
cannot be written, and resumes towards the same target once neither holds.

- **Localisation divergence:** when the trace of the newest pose's position covariance exceeds
  ``max_covariance_trace`` the explorer stops the rover and pauses (no measurement is taken); it resumes
  towards the same target once the trace is back below ``RESUME_FRACTION`` of the threshold.
- **Storage faults:** when the journal cannot write (a full disk, EIO, a read-only or vanished run folder:
  :attr:`~uncertain_bo.journal.journal.Journal.fault`) the records stay in memory, in order (the measurement in flight
  is in the planner and its journal record is held), and the explorer pauses as for localisation: it stops the rover,
  logs the reason once, takes no measurement and retries the journal every :data:`JOURNAL_RETRY_PERIOD` s; once
  every held record is written it resumes (the same target again). A mission that ends while records are held
  reports its end (result file, host's ``finished``) only once they are written
  (:mod:`~uncertain_bo.explorer.mission_end`).
"""
from __future__ import annotations

import logging
from typing import Any

from ..planning.planner import Planner
from .estimates import PoseEstimate, position_trace
from .parameters import RESUME_FRACTION

__all__ = ['Pausing', 'JOURNAL_RETRY_PERIOD']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: while the journal cannot write, the explorer retries it at most this often (s, host clock)
JOURNAL_RETRY_PERIOD = 1.0


class Pausing:
    """Whether the explorer must pause, and why (module docstring); the explorer stops the rover and resumes.

    Args:
        planner: whose journal is watched and retried.
        params: the explorer's parameters, read live (``max_covariance_trace``).

    Attributes:
        reason: why the explorer is paused (None unless it is): the causes, ``'; '``-joined.
        paused_from: the stage the pause was taken in (None before the first pause).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters, PoseEstimate
        >>> from uncertain_bo.explorer.pausing import Pausing
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0,
        ...                                     'max_covariance_trace': 4.0})
        >>> pausing = Pausing(planner_from_parameters(params), params)
        >>> diverged = PoseEstimate(1.0, 'map', np.array([5.0, 5.0]), np.diag([3.0, 3.0]))
        >>> pausing.check(1.0, diverged), pausing.reason
        (True, 'localisation diverged: position covariance trace 6 m² > max_covariance_trace = 4 m²')
        >>> pausing.check(2.0, PoseEstimate(2.0, 'map', np.array([5.0, 5.0]), np.diag([0.5, 0.5])))
        False
    """

    def __init__(self, planner: Planner, params: dict[str, Any]):
        self.planner = planner
        self.params = params
        self.reason: str | None = None
        self.paused_from = None
        self._causes: dict[str, str] = {}        # 'localisation' / 'journal' -> reason, while paused
        self._retry_at: float | None = None      # host time of the last journal retry while faulted

    @property
    def journal_fault(self) -> str | None:
        """Why the journal cannot write and how many records it holds in memory meanwhile (``'journal not
        writable: [Errno 28] No space left on device: ...; 2 record(s) held in memory'``), None when every record
        is on disk (or the planner has no journal)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            return None
        return f'{journal.fault}; {journal.held} record(s) held in memory'

    def check(self, now: float, pose: PoseEstimate | None) -> bool:
        """Whether the explorer must be paused at ``now`` with the newest pose estimate ``pose``: localisation has
        diverged or the journal cannot write. Logs each new cause once and sets :attr:`reason`; False (and the
        causes forgotten by :meth:`resumed`) once neither holds."""
        causes = {k: v for k, v in (('localisation', self._localisation_problem(pose)),
                                    ('journal', self.journal_problem(now))) if v is not None}
        if not causes:
            return False
        for kind, reason in causes.items():
            if kind not in self._causes:
                if kind == 'localisation':
                    log.error('%s: rover stopped, no measurements until it is below %.3g m²', reason,
                              RESUME_FRACTION * self.params['max_covariance_trace'])
                else:
                    log.error('%s: rover stopped, no measurements until the journal can be written (retried every '
                              '%g s)', reason, JOURNAL_RETRY_PERIOD)
        for kind in set(self._causes) - set(causes):
            log.warning('%s recovered; still paused: %s', kind, '; '.join(causes.values()))
        self._causes = causes
        self.reason = '; '.join(causes.values())
        return True

    def resumed(self) -> None:
        """The pause ends (logged)."""
        log.warning('resuming after the pause (%s)', self.reason)
        self.reason = None
        self._causes = {}

    def _localisation_problem(self, pose: PoseEstimate | None) -> str | None:
        """Why localisation stops the mission (``pose``'s covariance trace over ``max_covariance_trace``; once
        paused for it, until below ``RESUME_FRACTION`` of it), or None."""
        paused = 'localisation' in self._causes
        if pose is None:
            return self._causes['localisation'] if paused else None
        trace = position_trace(pose.cov)
        limit = self.params['max_covariance_trace']
        if trace <= (RESUME_FRACTION * limit if paused else limit):
            if paused:
                log.warning('localisation recovered (covariance trace %.3g m²)', trace)
            return None
        if paused:
            return self._causes['localisation']
        return (f'localisation diverged: position covariance trace {trace:.3g} m² > '
                f'max_covariance_trace = {limit:g} m²')

    def journal_problem(self, now: float) -> str | None:
        """Why the journal stops the mission (:attr:`journal_fault`), or None. Retries the held records every
        :data:`JOURNAL_RETRY_PERIOD` s (the first retry a period after the fault was seen)."""
        journal = self.planner.journal_file
        if journal is None or journal.fault is None:
            self._retry_at = None
            return None
        if self._retry_at is None:
            self._retry_at = now
        elif not 0.0 <= now - self._retry_at < JOURNAL_RETRY_PERIOD:
            self._retry_at = now
            if journal.retry():
                log.warning('journal writable again: every held record written')
                self._retry_at = None
                return None
        return self.journal_fault

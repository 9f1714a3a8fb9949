"""The planner's journal: resuming a :class:`~uncertain_bo.planner.Planner` from one (its start, observations,
decisions and keep-out zones replayed; the pending target of a decision without its observation handed back once),
and the numbering that never uses an index twice.

A planner opened on an existing journal resumes from its observations; records the journal's schema refuses
(:mod:`uncertain_bo.journal_schema`: damaged, duplicated) are skipped and counted (:attr:`PlannerJournal.
journal_damage`), and a ``resume`` record declares the indices lost, so the journal numbers on after the highest
index it ever held (:attr:`PlannerJournal.next_index`). The records themselves are written where they happen
(:meth:`~uncertain_bo.planner.Planner.observe`, :meth:`~uncertain_bo.planner.Planner.suggest`: :func:`~uncertain_bo.
decision.decision_record`, the run-time changes of :mod:`uncertain_bo.planner_settings`, keep-out zones).
"""
from __future__ import annotations

import logging
import time
from typing import Any

import torch
from torch import Tensor

from .decision import Decision
from .distributions import LocationDistributions
from .journal import Journal, location_to_record, replay
from .keep_out import KeepOut

__all__ = ['PlannerJournal']

log = logging.getLogger('uncertain_bo.planner')   # the planner's log, as before the split


class PlannerJournal:
    """The journal side of :class:`~uncertain_bo.planner.Planner` (a part of it: it reads and sets the planner's
    journal, numbering offsets, decisions, keep-out zones and resumed target)."""

    @property
    def next_index(self) -> int:
        """The journal index of the next measurement: :attr:`n`, plus the observations a resumed journal lost
        (damaged records skipped, lines missing), so an index is never used twice."""
        return self.n + self._index_offset

    @property
    def journal_damage(self) -> dict[str, Any]:
        """What resuming the journal skipped: ``records_skipped`` (damaged or duplicated records and unreadable
        lines left out), ``records_missing`` (index gaps) and ``problems`` (up to 20 lines ``'line 17: observation
        ...'``; a damaged header field, ignored, among them)."""
        return {**self._journal_damage, 'problems': list(self._journal_damage['problems'])}

    @property
    def journal_file(self) -> Journal | None:
        return self._journal

    @property
    def resumed_target(self) -> Tensor | None:
        """The journal's pending target (see :meth:`take_resumed_target`) without taking it."""
        return self._resumed_target

    def take_resumed_target(self) -> Tensor | None:
        """The target of the journal's pending decision, once (None otherwise).

        A run resumed from a journal whose last decision has no observation yet (the process stopped while
        the rover drove there) should send the rover to that target again instead of deciding anew: the
        decision is already journaled, and the initial design or the acquisition would choose it again
        anyway. Returns ``(d,)`` and forgets it; later calls (and :meth:`suggest`) decide as usual.
        """
        target, self._resumed_target = self._resumed_target, None
        return target

    def forget_resumed(self) -> None:
        """Drop the journal's pending target and the batch queued after it: a team hands its rovers' pending
        targets back per rover (:mod:`uncertain_bo.team_journal`), where the last decision is only one rover's."""
        self._resumed_target = None
        self._queue = []

    def _replay(self, journal: Journal) -> None:
        run = replay(journal, self.dim, self._validate)
        if run.start is not None:
            self.start = run.start
            self._design = self._initial_design()
            self._method = self._new_method()
        for target, loc, y, variance, reached, reading in run.observations:  # target None: an en-route reading
            self._store(target, loc, y, variance, reached=reached, reading=reading)
        refused = self._replay_revisions(run.revisions)   # planner_revisions.py: the last of each reading wins
        self.decisions += [Decision(**d) for d in run.decisions]
        self.keep_out = KeepOut.from_records(journal.records, self.dim)
        self._resume_numbering(journal, len(run.observations), refused)
        pending = [d for d in self.decisions if d.index == self.next_index]

        def usable(t: Tensor) -> bool:
            return (t.numel() == self.dim and bool(torch.isfinite(t).all())
                    and bool(((t >= self.bounds[0]) & (t <= self.bounds[1])).all()))

        if pending:
            t = pending[-1].target
            if usable(t):
                if bool(self.keep_out.inside(t.reshape(1, -1))[0]):
                    log.info('journal %s: the pending target %s was kept out (not measurable): deciding anew',
                             journal.path, t.tolist())
                else:
                    self._resumed_target = t.clone()
                    # the rest of a batch decided with it, still to visit in order
                    ahead = {d.index: d.target for d in self.decisions if d.index > self.next_index}
                    k = self.next_index + 1
                    while k in ahead and usable(ahead[k]) and not bool(self.keep_out.inside(
                            ahead[k].reshape(1, -1))[0]):
                        self._queue.append(ahead[k].clone())
                        k += 1
            else:
                log.warning('journal %s: pending target %s is outside the search bounds: deciding anew',
                            journal.path, t.tolist())
        if self.n or pending:
            log.debug('resumed %d observations from %s%s', self.n, journal.path,
                      ' (with a pending target)' if self._resumed_target is not None else '')

    def _resume_numbering(self, journal: Journal, replayed: int, refused_revisions: int = 0) -> None:
        """After a replay: number on after the highest index the journal held, count what it lost, and, when it
        lost anything, append a ``resume`` record declaring the lost indices (:mod:`uncertain_bo.journal_schema`)."""
        checked = journal.checked
        self._index_offset = checked.next_index - self.n
        self._en_route_offset = checked.next_en_route_index - self.n_en_route
        kept = sum(r.get('type') in ('observation', 'en_route') for r in journal.records)
        # records the schema kept that this planner cannot use (another dimension; a revision of such a reading):
        # left out, counted; their indices stay in the file, so the numbering above already passes them
        refused = kept - replayed + refused_revisions
        self._journal_damage = {
            'records_skipped': checked.skipped + refused, 'records_missing': checked.missing,
            'problems': [f'line {d.line}: {d.message}' for d in checked.damage[:20]]}
        if not (checked.damage or refused):
            return
        lost, lost_en_route = checked.lost_indices, checked.lost_en_route_indices
        log.warning('journal %s: resumed %d measurements and %d en-route readings; %d damaged record(s) skipped, '
                    '%d missing (observation indices lost: %s)', journal.path, self.n, self.n_en_route,
                    self._journal_damage['records_skipped'], checked.missing, lost or 'none')
        self._journal.append({'type': 'resume', 'measurements': self.n, 'lost_indices': lost,
                              'lost_en_route_indices': lost_en_route,
                              'records_skipped': self._journal_damage['records_skipped'], 'wall_time': time.time()})

    def _journal_reading(self, target: Tensor | None, location: LocationDistributions, y: float,
                         reading_variance: float, meta: dict[str, Any]) -> int:
        """Journal one validated reading before it is stored: an ``observation`` record with its ``target``
        ``(d,)``, or with ``target`` None an ``en_route`` record (with the measurement count it follows). Returns its
        index (:attr:`next_index`, or among the en-route readings)."""
        if target is None:
            index = self.n_en_route + self._en_route_offset
            kind, where = 'en_route', {'measurements': self.next_index}
        else:
            index = self.next_index
            kind, where = 'observation', {'target': target.tolist()}
        if self._journal is not None:
            self._journal.append({'type': kind, 'index': index, **where, 'location': location_to_record(location),
                                  'y': float(y), 'reading_variance': float(reading_variance), 'wall_time': time.time(),
                                  **meta})
        return index

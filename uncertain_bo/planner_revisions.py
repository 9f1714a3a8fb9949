r"""Revised trajectories re-place past readings: the planner's side.

A localiser revises the past when later data arrive: a fix after a long dead-reckoning leg (fixed-lag or RTS
smoothing), a loop closure of a SLAM back end, a corrected ``map -> odom`` transform (REP-105: the odom frame is
continuous, the map frame jumps). Each stored reading, a measurement or an en-route reading, then has a better
location distribution than the one it was stored with. :meth:`PlannerRevisions.revise` takes such
:class:`LocationRevision` s, one per reading, and for each it accepts:

1. **checks** it, before anything changes (a rejected revision changes nothing, is counted in
   :attr:`PlannerRevisions.revisions_rejected` by reason and logged):

   - ``'unknown reading'``: no stored reading has its ``(kind, index)`` (not taken yet, lost to a damaged journal,
     or another run's);
   - ``'out of order'``: its stamp (the localiser's, s) is not after the reading's last accepted revision, or is
     before the pose estimate the reading was stored with (:func:`~uncertain_bo.journal_schema.revision_order_problem`,
     the schema's rule, so a resumed journal and a running planner agree); a stamp that is not a finite number;
   - ``'invalid location'``: not one distribution over the search space, a non-finite mean, a covariance that is not
     finite, symmetric and PSD (:meth:`~uncertain_bo.observation_log.ObservationLog.location_problem`, the project's
     one check), or another kind than the reading's: a reading stored with particles (an empirical distribution)
     takes a revision of as many particles, one stored parametrically (Gaussian or Dirac) a Gaussian or Dirac one.
     The explorer makes a revised pose the location distribution a new pose would get
     (:mod:`uncertain_bo.explorer.revisions`: in a run of particles, draws of the revised Gaussian);

2. **journals** it (an append-only ``revision`` record: nothing is rewritten; resume, ``report`` and ``export``
   replay it, :mod:`uncertain_bo.journal_schema`): the accepted revisions of one call with one write and one fsync
   (a loop closure revising every reading costs one fsync, not one per reading);
3. **replaces** the reading's location in the observation log (its reading, target and place in the GP's row order
   stay), in the GP (queued like a new reading, :meth:`~uncertain_bo.model_schedule.ModelSchedule.revise`; at the
   next decision one refactorisation of the cached posterior from the first revised row on,
   :meth:`~uncertain_bo.models.DistributionGP.revise`; hyperparameters refit on the schedule), and in the learned
   execution noise when the reading is a reached measurement (the revised pair re-teaches it:
   :meth:`~uncertain_bo.execution_noise_estimator.ExecutionNoiseEstimator.revise`). A method whose GP trains on the
   commanded targets keeps a measurement's input (its target) and moves an en-route reading's (its location mean).

The result equals a planner that had stored the revised locations in the first place (the GP's posterior, the
learned execution noise; tested against one built afresh).
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from .distributions import Empirical, LocationDistributions
from .journal import location_to_record
from .journal_schema import revision_order_problem
from .observation_log import READING_KINDS, StoredReading

__all__ = ['LocationRevision', 'RevisionOutcome', 'PlannerRevisions', 'REVISION_REJECTIONS']

log = logging.getLogger('uncertain_bo.planner')

#: why a revision is rejected (the keys of :attr:`PlannerRevisions.revisions_rejected`)
REVISION_REJECTIONS = ('unknown reading', 'out of order', 'invalid location')


@dataclass(frozen=True)
class LocationRevision:
    """A revised location distribution of one stored reading.

    Attributes:
        reading: ``(kind, index)``: ``'observation'`` or ``'en_route'`` and the reading's journal index (what
            :meth:`~uncertain_bo.planner.Planner.observe` returned; :class:`~uncertain_bo.observation_log.
            StoredReading`).
        location: the revised location distribution (batch of 1, m).
        stamp: the localiser's stamp of the revision (s, the clock of the pose stamps): when the revised estimate was
            made, e.g. the header stamp of a smoother's corrected path. Revisions of one reading apply in stamp order.
        source: where it came from, for the journal (``'revised_path'``, ...); '' = not said.
    """

    reading: tuple[str, int]
    location: LocationDistributions
    stamp: float
    source: str = ''


@dataclass
class RevisionOutcome:
    """What :meth:`PlannerRevisions.revise` did with a batch of revisions.

    Attributes:
        applied: ``(kind, index)`` of each reading revised, in order.
        rejections: ``(which reading, reason, detail)`` of each revision rejected, in order (``('en_route 4',
            'out of order', 'stamped ...')``; reasons: :data:`REVISION_REJECTIONS`).
    """

    applied: list[tuple[str, int]] = field(default_factory=list)
    rejections: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def rejected(self) -> Counter:
        """reason -> revisions rejected for it."""
        return Counter(reason for _, reason, _ in self.rejections)

    @property
    def problems(self) -> list[str]:
        """One line per rejected revision (``"en_route 4: out of order: ..."``)."""
        return [f'{what}: {reason}: {detail}' for what, reason, detail in self.rejections]

    def reject(self, what: str, reason: str, detail: str) -> None:
        self.rejections.append((what, reason, detail))


class PlannerRevisions:
    """The revisions side of :class:`~uncertain_bo.planner.Planner` (a part of it: it reads and changes the planner's
    observation log, model schedule, execution-noise estimator and journal)."""

    def _init_revisions(self) -> None:
        #: revisions rejected so far, by reason (:data:`REVISION_REJECTIONS`)
        self.revisions_rejected: Counter = Counter()
        #: revisions applied so far (this process's and a resumed journal's)
        self.revisions_applied = 0
        self._revision_stamps: dict[int, float] = {}   # row -> stamp of its last accepted revision

    @property
    def readings(self) -> list[StoredReading]:
        """Every stored reading (measurements and en-route readings) in arrival order: which it is, its stamps and
        team keys (:class:`~uncertain_bo.observation_log.StoredReading`)."""
        return list(self.observations.readings)

    def stored_readings(self) -> list[StoredReading]:
        """The readings a revised trajectory of this planner's rover may re-place: all of them (a team rover's view
        gives its own only, :class:`~uncertain_bo.team_planner.RoverView`)."""
        return self.readings

    def revision_stamp(self, kind: str, index: int) -> float | None:
        """The stamp of reading ``(kind, index)``'s last accepted revision (s), None if it has none."""
        row = self.observations.row_of(kind, index)
        return None if row is None else self._revision_stamps.get(row)

    def revise(self, revisions: Iterable[LocationRevision]) -> RevisionOutcome:
        """Re-place stored readings at revised location distributions (module docstring): each revision is checked in
        turn (a later one of the same reading against the earlier one), the accepted ones are journaled together (one
        write and one fsync, :meth:`~uncertain_bo.journal.Journal.append_many`) and applied; a rejected one changes
        nothing and is counted (:attr:`revisions_rejected`). Nothing is raised for a bad revision (a batch from a
        smoother is applied as far as it is valid); the GP takes the revisions at the next decision, prediction or
        recommendation.

        Args:
            revisions: :class:`LocationRevision` s, in order (a later one of the same reading must be newer).

        Returns:
            What was applied and rejected (:class:`RevisionOutcome`).
        """
        outcome = RevisionOutcome()
        accepted = self._check_revisions(revisions, outcome)
        if accepted and self._journal is not None:
            self._journal.append_many([revision_record(self.observations.readings[row], rev) for row, rev in accepted])
        self._apply_revisions(accepted, outcome)
        for reason, count in outcome.rejected.items():
            self.revisions_rejected[reason] += count
        if outcome.rejections:
            log.warning('%d revision(s) rejected (%s); first: %s', len(outcome.rejections),
                        ', '.join(f'{n} {r}' for r, n in outcome.rejected.items()), outcome.problems[0])
        return outcome

    def reject_revision(self, what: str, reason: str, detail: str) -> None:
        """Count a revision rejected before it could name a stored reading (a team's unknown ``(rover, seq)``)."""
        self.revisions_rejected[reason] += 1
        log.warning('revision of %s rejected: %s: %s', what, reason, detail)

    def _check_revisions(self, revisions: Iterable[LocationRevision],
                         outcome: RevisionOutcome) -> list[tuple[int, LocationRevision]]:
        """``(row, revision)`` of the revisions that pass the checks (module docstring), in order; the others are
        rejected into ``outcome``. Nothing changes."""
        accepted = []
        stamps = dict(self._revision_stamps)       # as if the accepted ones were applied in turn
        for rev in revisions:
            what = _describe(rev.reading)
            row = self._revision_row(rev.reading)
            if row is None:
                outcome.reject(what, 'unknown reading', 'no stored reading has it (not taken yet, or lost)')
                continue
            stamp = rev.stamp
            if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp):
                outcome.reject(what, 'out of order', f'its stamp {stamp!r} is not a finite number of seconds')
                continue
            problem = revision_order_problem(float(stamp), stamps.get(row), self.observations.readings[row].pose_stamp)
            if problem:
                outcome.reject(what, 'out of order', problem)
                continue
            problem = (self.observations.location_problem(rev.location)
                       or _kind_problem(self.observations.rows[row][1], rev.location))
            if problem:
                outcome.reject(what, 'invalid location', problem)
                continue
            stamps[row] = float(stamp)
            accepted.append((row, rev))
        return accepted

    def _apply_revisions(self, accepted: list[tuple[int, LocationRevision]], outcome: RevisionOutcome) -> None:
        for row, rev in accepted:
            target = self.observations.rows[row][0]
            old = self.observations.replace_location(row, rev.location)
            if target is None or self._method.inputs != 'target':   # a target-trained measurement's input: its target
                self.schedule.revise(row, self._gp_input(target, rev.location))
            if self.observations.reached_at(row) and self.execution_estimator is not None:
                self.execution_estimator.revise(target, old, rev.location)
            self._revision_stamps[row] = float(rev.stamp)
            self.revisions_applied += 1
            outcome.applied.append(self.observations.readings[row].key)
        if accepted and self.execution_estimator is not None:
            self.execution_noise = self.execution_estimator.noise()

    def _revision_row(self, key: Any) -> int | None:
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] in READING_KINDS
                and isinstance(key[1], int) and not isinstance(key[1], bool)):
            return None
        return self.observations.row_of(*key)

    def _replay_revisions(self, records: list[dict[str, Any]]) -> int:
        """Apply a resumed journal's ``revision`` records (already checked by the schema), without journaling them
        again. Returns how many this planner refused (counted with the journal's damage)."""
        from .journal import location_from_record

        outcome = RevisionOutcome()
        revisions = []
        for rec in records:
            try:
                location = location_from_record(rec['location'])
            except (KeyError, TypeError, ValueError) as exc:
                outcome.reject(_describe((rec.get('revises'), rec.get('index'))), 'invalid location', str(exc))
                continue
            revisions.append(LocationRevision((rec['revises'], rec['index']), location, rec['stamp'],
                                              rec.get('source', '')))
        self._apply_revisions(self._check_revisions(revisions, outcome), outcome)
        for problem in outcome.problems:
            log.warning('journal %s: skipping revision: %s', self._journal.path, problem)
        return len(outcome.problems)


def revision_record(reading: StoredReading, rev: LocationRevision) -> dict[str, Any]:
    """The journal's ``revision`` record of ``rev``, a revision of ``reading`` (its rover and seq where it has them)."""
    rec = {'type': 'revision', 'revises': reading.kind, 'index': reading.index, 'stamp': float(rev.stamp),
           'location': location_to_record(rev.location), 'wall_time': time.time()}
    if rev.source:
        rec['source'] = rev.source
    if reading.rover is not None:
        rec['rover'] = reading.rover
    if reading.seq is not None:
        rec['seq'] = reading.seq
    return rec


def _describe(key: Any) -> str:
    if isinstance(key, tuple) and len(key) == 2:
        return f'{key[0]} {key[1]}'
    return repr(key)


def _kind_problem(current: LocationDistributions, new: LocationDistributions) -> str | None:
    """Why ``new`` cannot replace ``current`` in the training batch (their kinds cannot mix), or None."""
    if isinstance(current, Empirical) != isinstance(new, Empirical):
        return ('the reading was stored with particles: revise it with particles (an empirical distribution)'
                if isinstance(current, Empirical) else
                'the reading was stored as a Gaussian: revise it with a Gaussian (or a Dirac), not particles')
    if isinstance(current, Empirical) and new.samples.shape[1] != current.samples.shape[1]:
        return f'{new.samples.shape[1]} particles; the reading was stored with {current.samples.shape[1]}'
    return None

r"""Revised trajectories re-place past readings: the planner's side.

A localiser revises the past when later data arrive: a fix after a long dead-reckoning leg (fixed-lag or RTS
smoothing), a loop closure of a SLAM back end, a corrected ``map -> odom`` transform (REP-105: the odom frame is
continuous, the map frame jumps). Each stored reading, a measurement or an en-route reading, then has a better
location distribution than the one it was stored with. :meth:`~uncertain_bo.planning.planner.Planner.revise` takes such
:class:`LocationRevision` s, one per reading, and for each it accepts:

1. **checks** it, before anything changes (a rejected revision changes nothing, is counted in
   :attr:`~uncertain_bo.planning.planner.Planner.revisions_rejected` by reason and logged):

   - ``'unknown reading'``: no stored reading has its ``(kind, index)`` (not taken yet, lost to a damaged journal,
     or another run's);
   - ``'out of order'``: its stamp (the localiser's, s) is not after the reading's last accepted revision, or is
     before the pose estimate the reading was stored with (:func:`~uncertain_bo.journal.check.revision_order_problem`,
     the schema's rule, so a resumed journal and a running planner agree); a stamp that is not a finite number;
   - ``'invalid location'``: not one distribution over the search space, a non-finite mean, a covariance that is not
     finite, symmetric and PSD (:meth:`~uncertain_bo.planning.observation_log.ObservationLog.location_problem`, the
     project's one check), or another kind than the reading's: a reading stored with particles (an empirical
     distribution) takes a revision of as many particles, one stored parametrically (Gaussian or Dirac) a Gaussian or
     Dirac one. The explorer makes a revised pose the location distribution a new pose would get
     (:mod:`uncertain_bo.explorer.revisions`: in a run of particles, draws of the revised Gaussian);

2. **journals** it (an append-only ``revision`` record: nothing is rewritten; resume, ``report`` and ``export``
   replay it, :mod:`uncertain_bo.journal.schema`): the accepted revisions of one call with one write and one fsync
   (a loop closure revising every reading costs one fsync, not one per reading);
3. **replaces** the reading's location in the observation log (its reading, target and place in the GP's row order
   stay), in the GP (queued like a new reading, :meth:`~uncertain_bo.planning.model_schedule.ModelSchedule.revise`; at
   the next decision one refactorisation of the cached posterior from the first revised row on,
   :meth:`~uncertain_bo.models.DistributionGP.revise`; hyperparameters refit on the schedule), and in the learned
   execution noise when the reading is a reached measurement (the revised pair re-teaches it:
   :meth:`~uncertain_bo.planning.execution_noise_estimator.ExecutionNoiseEstimator.revise`). A method whose GP trains on
   the commanded targets keeps a measurement's input (its target) and moves an en-route reading's (its location mean).

The result equals a planner that had stored the revised locations in the first place (the GP's posterior, the
learned execution noise; tested against one built afresh).
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..distributions import Empirical, LocationDistributions
from ..journal.journal import location_from_record, location_to_record
from ..journal.check import revision_order_problem
from .observation_log import READING_KINDS, ObservationLog, StoredReading

if TYPE_CHECKING:
    from .reading_store import ReadingStore

__all__ = ['LocationRevision', 'RevisionOutcome', 'LocationRevisions', 'REVISION_REJECTIONS', 'revision_record',
           'revisions_from_records']

log = logging.getLogger('uncertain_bo.planning.planner')

#: why a revision is rejected (the keys of :attr:`~uncertain_bo.planning.planner.Planner.revisions_rejected`)
REVISION_REJECTIONS = ('unknown reading', 'out of order', 'invalid location')


@dataclass(frozen=True)
class LocationRevision:
    """A revised location distribution of one stored reading.

    Attributes:
        reading: ``(kind, index)``: ``'observation'`` or ``'en_route'`` and the reading's journal index (what
            :meth:`~uncertain_bo.planning.planner.Planner.observe` returned;
            :class:`~uncertain_bo.planning.observation_log.StoredReading`).
        location: the revised location distribution (batch of 1, m).
        stamp: the localiser's stamp of the revision (s, the clock of the pose stamps): when the revised estimate was
            made, e.g. the header stamp of a smoother's corrected path. Revisions of one reading apply in stamp order.
        source: where it came from, for the journal (``'revised_path'``, ...); '' = not said.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> revised = Gaussian(torch.tensor([[1.0, 2.25]]), 0.01 * torch.eye(2)[None])
        >>> revision = LocationRevision(('observation', 0), revised, stamp=1712.4, source='revised_path')
        >>> revision.reading, revision.location.mean.tolist()
        (('observation', 0), [[1.0, 2.25]])
    """

    reading: tuple[str, int]
    location: LocationDistributions
    stamp: float
    source: str = ''


@dataclass
class RevisionOutcome:
    """What :meth:`~uncertain_bo.planning.planner.Planner.revise` did with a batch of revisions.

    Attributes:
        applied: ``(kind, index)`` of each reading revised, in order.
        rejections: ``(which reading, reason, detail)`` of each revision rejected, in order (``('en_route 4',
            'out of order', 'stamped ...')``; reasons: :data:`REVISION_REJECTIONS`).

    Example:
        >>> outcome = RevisionOutcome(applied=[('observation', 0)])
        >>> outcome.reject('en_route 4', 'out of order', 'stamped 10.000 s, not after the last revision (12.000 s)')
        >>> dict(outcome.rejected), outcome.problems[0][:24]
        ({'out of order': 1}, 'en_route 4: out of order')
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


class LocationRevisions:
    """The revisions of one planner's readings: the checks (module docstring) against its observation log, the stamps
    of the revisions accepted so far, the counts, and applying a batch (:meth:`revise`: journaled, then put in place
    in the readings' store: the log, the GP, the learned execution noise).

    Example:
        A revision of a stored reading is accepted; one of a reading not stored is rejected and counted:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> from uncertain_bo.planning.observation_log import ObservationLog
        >>> log = ObservationLog(2)
        >>> log.add(torch.tensor([1.0, 2.0]), Dirac(torch.tensor([[1.1, 2.0]])), 0.7)
        >>> revised = Dirac(torch.tensor([[1.0, 2.05]]))
        >>> outcome = RevisionOutcome()
        >>> accepted = LocationRevisions().check([LocationRevision(('observation', 0), revised, 5.0),
        ...                                       LocationRevision(('observation', 9), revised, 5.0)], log, outcome)
        >>> [row for row, _ in accepted], outcome.problems
        ([0], ['observation 9: unknown reading: no stored reading has it (not taken yet, or lost)'])
    """

    def __init__(self):
        #: revisions rejected so far, by reason (:data:`REVISION_REJECTIONS`)
        self.rejected: Counter = Counter()
        #: revisions applied so far (this process's and a resumed journal's)
        self.applied = 0
        self._stamps: dict[int, float] = {}   # row -> stamp of its last accepted revision

    def stamp(self, row: int | None) -> float | None:
        """The stamp of row ``row``'s last accepted revision (s), None if it has none."""
        return None if row is None else self._stamps.get(row)

    def check(self, revisions: Iterable[LocationRevision], observations: ObservationLog,
              outcome: RevisionOutcome) -> list[tuple[int, LocationRevision]]:
        """``(row, revision)`` of the ``revisions`` of readings of ``observations`` that pass the checks (module
        docstring; a later revision of the same reading against the earlier one), in order; the others are rejected
        into ``outcome``. Nothing changes."""
        accepted = []
        stamps = dict(self._stamps)       # as if the accepted ones were applied in turn
        for rev in revisions:
            what = _describe(rev.reading)
            row = _row(rev.reading, observations)
            if row is None:
                outcome.reject(what, 'unknown reading', 'no stored reading has it (not taken yet, or lost)')
                continue
            stamp = rev.stamp
            if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp):
                outcome.reject(what, 'out of order', f'its stamp {stamp!r} is not a finite number of seconds')
                continue
            problem = revision_order_problem(float(stamp), stamps.get(row), observations.readings[row].pose_stamp)
            if problem:
                outcome.reject(what, 'out of order', problem)
                continue
            problem = (observations.location_problem(rev.location)
                       or _kind_problem(observations.rows[row][1], rev.location))
            if problem:
                outcome.reject(what, 'invalid location', problem)
                continue
            stamps[row] = float(stamp)
            accepted.append((row, rev))
        return accepted

    def revise(self, revisions: Iterable[LocationRevision], store: 'ReadingStore',
               write_many: Callable[[list[dict[str, Any]]], Any]) -> RevisionOutcome:
        """Check ``revisions`` in turn (:meth:`check`), journal the accepted ones together (``write_many``: one write
        and one fsync, :meth:`~uncertain_bo.planning.journal_writer.JournalWriter.write_many`), put them in place
        (:meth:`apply`) and count the rejected ones (:meth:`count`); nothing is raised for a bad revision."""
        outcome = RevisionOutcome()
        observations = store.observations
        accepted = self.check(revisions, observations, outcome)
        write_many([revision_record(observations.readings[row], rev) for row, rev in accepted])
        self.apply(accepted, outcome, store)
        self.count(outcome)
        return outcome

    def apply(self, accepted: list[tuple[int, LocationRevision]], outcome: RevisionOutcome,
              store: 'ReadingStore') -> None:
        """Put each accepted ``(row, revision)`` in place (:meth:`~uncertain_bo.planning.reading_store.ReadingStore.
        relocate`), note its stamp and count it into ``outcome``."""
        store.relocate([(row, rev.location) for row, rev in accepted])
        for row, rev in accepted:
            self._stamps[row] = float(rev.stamp)
            self.applied += 1
            outcome.applied.append(store.observations.readings[row].key)

    def count(self, outcome: RevisionOutcome) -> None:
        """Count the rejections of ``outcome`` and log them (one line)."""
        for reason, n in outcome.rejected.items():
            self.rejected[reason] += n
        if outcome.rejections:
            log.warning('%d revision(s) rejected (%s); first: %s', len(outcome.rejections),
                        ', '.join(f'{n} {r}' for r, n in outcome.rejected.items()), outcome.problems[0])

    def reject(self, what: str, reason: str, detail: str) -> None:
        """Count a revision rejected before it could name a stored reading (a team's unknown ``(rover, seq)``)."""
        self.rejected[reason] += 1
        log.warning('revision of %s rejected: %s: %s', what, reason, detail)


def revisions_from_records(records: list[dict[str, Any]], outcome: RevisionOutcome) -> list[LocationRevision]:
    """The :class:`LocationRevision` s of a resumed journal's ``revision`` records (already checked by the schema);
    a location that does not parse is rejected into ``outcome``."""
    revisions = []
    for rec in records:
        try:
            location = location_from_record(rec['location'])
        except (KeyError, TypeError, ValueError) as exc:
            outcome.reject(_describe((rec.get('revises'), rec.get('index'))), 'invalid location', str(exc))
            continue
        revisions.append(LocationRevision((rec['revises'], rec['index']), location, rec['stamp'],
                                          rec.get('source', '')))
    return revisions


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


def _row(key: Any, observations: ObservationLog) -> int | None:
    if not (isinstance(key, tuple) and len(key) == 2 and key[0] in READING_KINDS
            and isinstance(key[1], int) and not isinstance(key[1], bool)):
        return None
    return observations.row_of(*key)


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

"""The run's one journal writer (:class:`JournalWriter`): every record of a run goes through it, the planner's
(readings, decisions, settings changed, keep-out zones, revisions, a resume's losses) and the explorer's own
(:meth:`JournalWriter.write`: recommendations, parameters, pauses, ...), with the numbering that never uses an index
twice; and what a resumed journal hands back (:func:`pending_after_resume`: the pending target of a decision without
its observation, and the rest of its batch).

A planner opened on an existing journal resumes from its observations; records the journal's schema refuses
(:mod:`uncertain_bo.journal.schema`: damaged, duplicated) are skipped and counted (:attr:`JournalWriter.damage`),
and a ``resume`` record declares the indices lost, so the journal numbers on after the highest index it ever held
(:meth:`JournalWriter.index`). A planner without a journal has a writer too: it numbers and writes nothing.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Iterable

import torch
from torch import Tensor

from .decision import Decision
from ..distributions import LocationDistributions
from ..journal.journal import Journal, location_to_record
from .keep_out import KeepOut

__all__ = ['JournalWriter', 'pending_after_resume']

log = logging.getLogger('uncertain_bo.planning.planner')   # the planner's log, as before the split


class JournalWriter:
    """The journal of one run, or none (``path`` None: nothing is written, the numbering is the count).

    Args:
        path: the journal file (an existing one is opened for resuming: :attr:`file` holds its records).
        metadata: a new journal's header fields.

    Raises:
        JournalError: the journal cannot be opened (:class:`~uncertain_bo.journal.journal.Journal`).

    Example:
        >>> import tempfile, torch
        >>> from pathlib import Path
        >>> from uncertain_bo.distributions import Dirac
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     writer = JournalWriter(Path(run_dir) / 'journal.jsonl', {'method': 'ugp_ucb'})
        ...     index = writer.reading(torch.tensor([1.0, 2.0]), Dirac(torch.tensor([[1.1, 2.0]])), 0.7, 0.0, {}, 0, 0)
        ...     print(index, [r['type'] for r in writer.file.records])
        0 ['observation']
    """

    def __init__(self, path: str | Path | None, metadata: dict[str, Any]):
        self.file: Journal | None = None if path is None else Journal(Path(path), metadata=metadata)
        # journal index minus stored count (> 0 after resuming a journal that lost records): indices stay unique
        self.index_offset = 0
        self.en_route_offset = 0
        self._damage: dict[str, Any] = {'records_skipped': 0, 'records_missing': 0, 'problems': []}

    def write(self, record: dict[str, Any]) -> None:
        """Append one record (durably; a storage fault holds it in memory, :attr:`~uncertain_bo.journal.journal.Journal.
        fault`); nothing without a journal. The explorer's records go here too."""
        if self.file is not None:
            self.file.append(record)

    def write_many(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` with one write and one fsync
        (:meth:`~uncertain_bo.journal.journal.Journal.append_many`)."""
        if self.file is not None and records:
            self.file.append_many(records)

    def index(self, n: int) -> int:
        """The journal index of measurement number ``n`` (0-based count of stored measurements)."""
        return n + self.index_offset

    @property
    def damage(self) -> dict[str, Any]:
        """What resuming the journal skipped: ``records_skipped`` (damaged or duplicated records and unreadable
        lines left out), ``records_missing`` (index gaps) and ``problems`` (up to 20 lines ``'line 17: observation
        ...'``; a damaged header field, ignored, among them)."""
        return {**self._damage, 'problems': list(self._damage['problems'])}

    def reading(self, target: Tensor | None, location: LocationDistributions, y: float, reading_variance: float,
                meta: dict[str, Any], n: int, n_en_route: int) -> int:
        """Journal one validated reading before it is stored, ``n`` measurements and ``n_en_route`` en-route
        readings being stored: an ``observation`` record with its ``target`` ``(d,)``, or with ``target`` None an
        ``en_route`` record (with the measurement index it follows). Returns its index (among the measurements or
        the en-route readings)."""
        if target is None:
            index = n_en_route + self.en_route_offset
            kind, where = 'en_route', {'measurements': self.index(n)}
        else:
            index = self.index(n)
            kind, where = 'observation', {'target': target.tolist()}
        self.write({'type': kind, 'index': index, **where, 'location': location_to_record(location), 'y': float(y),
                    'reading_variance': float(reading_variance), 'wall_time': time.time(), **meta})
        return index

    def resumed(self, n: int, n_en_route: int, refused: int) -> None:
        """After a replay that stored ``n`` measurements and ``n_en_route`` en-route readings and refused ``refused``
        records the schema kept (another dimension; a revision of such a reading): number on after the highest index
        the journal held, count what it lost, and, when it lost anything, append a ``resume`` record declaring the
        lost indices (:mod:`uncertain_bo.journal.schema`)."""
        journal = self.file
        checked = journal.checked
        self.index_offset = checked.next_index - n
        self.en_route_offset = checked.next_en_route_index - n_en_route
        self._damage = {'records_skipped': checked.skipped + refused, 'records_missing': checked.missing,
                        'problems': [f'line {d.line}: {d.message}' for d in checked.damage[:20]]}
        if not (checked.damage or refused):
            return
        lost = checked.lost_indices
        log.warning('journal %s: resumed %d measurements and %d en-route readings; %d damaged record(s) skipped, '
                    '%d missing (observation indices lost: %s)', journal.path, n, n_en_route,
                    self._damage['records_skipped'], checked.missing, lost or 'none')
        self.write({'type': 'resume', 'measurements': n, 'lost_indices': lost,
                    'lost_en_route_indices': checked.lost_en_route_indices,
                    'records_skipped': self._damage['records_skipped'], 'wall_time': time.time()})


def pending_after_resume(decisions: Iterable[Decision], next_index: int, keep_out: KeepOut, bounds: Tensor,
                         path: Path) -> tuple[Tensor | None, list[Tensor]]:
    """What a resumed run still has to visit: the target of the journal's pending decision (the one of measurement
    ``next_index``, which has no observation yet) and the rest of the batch decided with it, in order; ``(None, [])``
    when there is none, when it lies outside ``bounds`` ``(2, d)`` or when a keep-out zone covers it (then the run
    decides anew; logged, naming the journal ``path``)."""
    decisions = list(decisions)
    d = bounds.shape[1]

    def usable(t: Tensor) -> bool:
        return (t.numel() == d and bool(torch.isfinite(t).all())
                and bool(((t >= bounds[0]) & (t <= bounds[1])).all()))

    pending = [dec for dec in decisions if dec.index == next_index]
    if not pending:
        return None, []
    t = pending[-1].target
    if not usable(t):
        log.warning('journal %s: pending target %s is outside the search bounds: deciding anew', path, t.tolist())
        return None, []
    if bool(keep_out.inside(t.reshape(1, -1))[0]):
        log.info('journal %s: the pending target %s was kept out (not measurable): deciding anew', path, t.tolist())
        return None, []
    ahead = {dec.index: dec.target for dec in decisions if dec.index > next_index}
    queue, k = [], next_index + 1
    while k in ahead and usable(ahead[k]) and not bool(keep_out.inside(ahead[k].reshape(1, -1))[0]):
        queue.append(ahead[k].clone())
        k += 1
    return t.clone(), queue

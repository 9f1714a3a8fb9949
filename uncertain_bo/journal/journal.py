"""Durable, versioned observations journal (JSON Lines).

A run's journal is the record of every (target, location distribution, reading) pair and every decision.
It is written as things happen: each record is one JSON line, flushed and ``fsync`` ed before
:meth:`Journal.append` returns, so a crash or power loss loses at most the record being written. On
load, a torn (partially written) last line is detected, reported and skipped; the rest loads (a last
line that only lacks its newline but holds a whole JSON object is complete, and kept). A line in the middle
that holds no record (not JSON, cut short, nested deeper than :data:`MAX_DEPTH`, an unpaired surrogate) is
damage like a record that breaks the schema: an error naming the line for a report or an export, skipped and
counted on resume (nothing is guessed from it).

Loading is total: every line loads, is skipped and counted, or the journal is refused with a
:class:`JournalError` (one line for the user): a path that is not a regular file (a named pipe would block the
reader, a device never ends), a first line that is not an ``uncertain_bo`` header, or a header version that is
not an integer >= 1 or is newer than this reader's.

Layout::

    {"type": "header", "format": "uncertain_bo.journal.journal", "version": 1, "run_id": ..., "created": ..., ...}
    {"type": "observation", "index": 0, "target": [x, y], "location": {...}, "y": 412.3, ...}
    {"type": "en_route", "index": 0, "measurements": 1, "location": {...}, "y": 410.9, ...}
    {"type": "decision", "index": 1, "target": [...], "seconds": 0.21, ...}
    {"type": "revision", "revises": "observation", "index": 0, "stamp": 1712.4, "location": {...}, ...}

``en_route`` records are readings taken while driving (no target; ``measurements`` = measurements stored
before it); ``revision`` records are revised locations of earlier readings, append-only (the reading's own record
keeps where it was taken; :attr:`Journal.revisions`, :meth:`Journal.location`; :mod:`uncertain_bo.planning.revisions`);
``keep_out`` records (``index``, ``centre``, ``radius``, ``reason``) are targets that could not be
measured and are never proposed again (:mod:`uncertain_bo.planning.keep_out`); a ``resume`` record declares the indices
a resumed run lost to damage (:mod:`uncertain_bo.journal.check`). A reader that does not know a record type
skips it, so the version stays 1.

**Storage faults** (:mod:`uncertain_bo.journal.storage_faults`). Opening a journal for writing is strict: a run
whose header cannot be written does not start (:class:`JournalError` naming the file and the OS error). After that,
:meth:`Journal.append` never raises an ``OSError``: a record the disk refuses is held in memory, in order, with
every later one, and written exactly once when the disk takes it (:attr:`Journal.fault` says why meanwhile).

Every record is checked against the journal's schema on load (:mod:`uncertain_bo.journal.schema`: fields, finite
values within sane magnitudes, valid covariances, observation and en-route indices 0, 1, 2, ... each once, and the
semantic checks: the run's identity, points within the search area plus a plausible margin, plausible lost
indices). A journal read for a report or an export (``read_only``) with a record that breaks it is an error naming
the line; a run resuming its journal skips such a record, counts it (:attr:`Journal.checked`) and says so.

A new journal's header carries a ``run_id``, and :meth:`Journal.append` writes it into every record, so a line of
another run's journal is recognised as foreign (:mod:`uncertain_bo.journal.schema`).
"""
from __future__ import annotations

import csv
import json
import logging
import math
import os
import secrets
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import torch

from ..distributions import DTYPE, Dirac, Empirical, Gaussian, LocationDistributions
from .check import INDEXED, Checked, Damage, check_journal
from .lines import indexed_type, parse_line
from .schema import header_problem, version_problem
from .storage_faults import DurableAppend, _encode
from ..user_errors import user_error

__all__ = ['Journal', 'JournalError', 'location_to_record', 'location_from_record', 'FORMAT', 'VERSION']

FORMAT = 'uncertain_bo.journal.journal'
VERSION = 1

log = logging.getLogger(__name__)


@user_error
class JournalError(RuntimeError):
    """The journal cannot be read or written (wrong format, newer version, damaged middle line).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     try:
        ...         Journal(Path(run_dir) / 'journal.jsonl', read_only=True)
        ...     except JournalError as exc:
        ...         print(exc)
        no journal at .../journal.jsonl
    """


def location_to_record(location: LocationDistributions) -> dict[str, Any]:
    """JSON-able record of a single location distribution (batch of size 1)."""
    if len(location) != 1:
        raise ValueError(f'expected one location distribution, got a batch of {len(location)}')
    if isinstance(location, Dirac):
        return {'kind': 'dirac', 'mean': location.mean[0].tolist()}
    if isinstance(location, Gaussian):
        return {'kind': 'gaussian', 'mean': location.mean[0].tolist(),
                'covariance': location.covariance[0].tolist()}
    if isinstance(location, Empirical):
        rec = {'kind': 'empirical', 'samples': location.samples[0].tolist()}
        if location.is_weighted:
            rec['weights'] = location.weights[0].tolist()
        return rec
    raise TypeError(f'cannot journal {type(location).__name__}')


def location_from_record(rec: dict[str, Any]) -> LocationDistributions:
    """Inverse of :func:`location_to_record` (validates the parameters)."""
    kind = rec.get('kind')
    if kind == 'dirac':
        return Dirac(torch.tensor([rec['mean']], dtype=DTYPE))
    if kind == 'gaussian':
        return Gaussian(torch.tensor([rec['mean']], dtype=DTYPE),
                        torch.tensor([rec['covariance']], dtype=DTYPE))
    if kind == 'empirical':
        w = rec.get('weights')
        return Empirical(torch.tensor([rec['samples']], dtype=DTYPE),
                         None if w is None else torch.tensor([w], dtype=DTYPE))
    raise JournalError(f'unknown location kind {kind!r}')


@dataclass
class Journal(DurableAppend):
    """Append-only JSON-lines journal of one run.

    Opening an existing file resumes it: its records are loaded (a torn last line is skipped with a
    warning and truncated away so new records start on a clean line).

    A file holding nothing but a torn header (the process was killed while creating it) is started
    afresh: nothing had been recorded yet.

    Args:
        path: journal file (created with its parent directories if missing).
        metadata: extra header fields for a new journal (run id, parameters, ...).
        read_only: only read (for export or inspection while a run may still be writing it): a torn last
            line is skipped but not truncated, a missing file is an error, and :meth:`append` refuses.
        strict: a record that breaks the schema (:mod:`uncertain_bo.journal.schema`) is an error naming its line
            (True), or is skipped, counted in :attr:`checked` and logged (False). Default: strict when
            ``read_only`` (a report or an export of a damaged journal would be wrong), lenient when resuming (a
            mission outlives a damaged record).

    Raises:
        JournalError: the path is not a regular file (a folder, a named pipe, a device); the file is not an
            ``uncertain_bo`` journal, its header's version is not an integer >= 1 or is newer than this reader's;
            (read-only) it does not exist; strict, a line holds no record or a record breaks the schema; or (not
            read-only) it or its folder cannot be created or written (the OS error is in the message).

    Attributes:
        checked: what the schema check found: the damage (:attr:`~uncertain_bo.journal.check.Checked.skipped`
            records left out, :attr:`~uncertain_bo.journal.check.Checked.missing` index gaps) and the next free
            observation and en-route indices.
        header: the header record.
        records: every record after the header, in order, including those still held in memory.
        skipped: torn last lines skipped on load (0 or 1).
        fault: why records are held in memory (``'journal not writable: [Errno 28] No space left on device:
            ...'``), None when every record is on disk (:mod:`~uncertain_bo.journal.storage_faults`).
        faults: how many times writing stopped working (a fault that clears and comes back counts again).
        write_failures: failed write attempts (each append or :meth:`retry` while faulted is one).

    Example:
        One observation written durably, then the file read back for a report:

        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     journal = Journal(Path(run_dir) / 'journal.jsonl', metadata={'method': 'ugp_ucb'})
        ...     on_disk = journal.append({'type': 'observation', 'index': 0, 'target': [1.0, 2.0],
        ...                               'location': {'kind': 'dirac', 'mean': [1.1, 2.0]}, 'y': 0.7})
        ...     again = Journal(journal.path, read_only=True)
        >>> on_disk, [r['type'] for r in again.records], again.observations[0]['y'], again.checked.damage
        (True, ['observation'], 0.7, [])
    """

    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    read_only: bool = False
    strict: bool | None = None
    header: dict[str, Any] = field(init=False)
    records: list[dict[str, Any]] = field(init=False, default_factory=list)
    skipped: int = field(init=False, default=0)
    fault: str | None = field(init=False, default=None)
    faults: int = field(init=False, default=0)
    write_failures: int = field(init=False, default=0)
    checked: Checked = field(init=False, default_factory=Checked)

    def __post_init__(self):
        self.path = Path(self.path)
        self._held: list[bytes] = []          # encoded records not written yet (a storage fault), in order
        self._torn_from: int | None = None    # file size to cut back to before writing (a failed cut)
        self._lock = threading.Lock()         # the decider thread and the host's may append
        if self.read_only:
            raw = self._read()
            if raw is None:
                raise JournalError(f'no journal at {self.path}')
            self._load(raw)
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            raw = self._read()
        except OSError as exc:
            raise JournalError(f'cannot write the journal {self.path}: {exc}') from exc
        try:
            if raw:
                self._load(raw)
            else:
                self._new_header()
        except OSError as exc:
            raise JournalError(f'cannot write the journal {self.path}: {exc}') from exc

    def _read(self) -> bytes | None:
        """The file's bytes, or None when there is none. Only a regular file is read: a named pipe would block
        (a reader waits for a writer), a device such as /dev/zero never ends; opened without blocking and judged by
        what was opened, so the check and the read are of the same file.

        Raises:
            JournalError: the path is something else than a regular file, or cannot be read.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise JournalError(f'{self.path} is a folder, not a journal file') from None
        except OSError as exc:
            raise JournalError(f'cannot read the journal {self.path}: {exc}') from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                what = 'a folder' if stat.S_ISDIR(mode) else 'a named pipe' if stat.S_ISFIFO(mode) else \
                    'a device' if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else 'a socket' if stat.S_ISSOCK(mode) \
                    else 'not a regular file'
                raise JournalError(f'{self.path} is {what}, not a journal file: give the run folder\'s '
                                   'journal.jsonl, a regular file')
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b''.join(chunks)
        except OSError as exc:
            raise JournalError(f'cannot read the journal {self.path}: {exc}') from None
        finally:
            os.close(fd)

    def _new_header(self) -> None:
        self.header = {'type': 'header', 'format': FORMAT, 'version': VERSION,
                       'created': time.time(), 'run_id': secrets.token_hex(8), **self.metadata}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._write_line(fd, _encode(self.header))
        finally:
            os.close(fd)

    @property
    def observations(self) -> list[dict[str, Any]]:
        """Observation records (measurements at a commanded target) in order."""
        return [r for r in self.records if r.get('type') == 'observation']

    @property
    def en_route(self) -> list[dict[str, Any]]:
        """En-route reading records (taken while driving, no target) in order."""
        return [r for r in self.records if r.get('type') == 'en_route']

    @property
    def revisions(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """``(kind, index)`` -> the ``revision`` records of that reading (``'observation'`` or ``'en_route'``), in
        order: the last is its location now (:mod:`uncertain_bo.planning.revisions`; the schema kept only revisions in
        order, of readings it kept)."""
        out: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for r in self.records:
            if r.get('type') == 'revision':
                out.setdefault((r['revises'], r['index']), []).append(r)
        return out

    def location(self, record: dict[str, Any],
                 revisions: dict[tuple[str, int], list[dict[str, Any]]] | None = None) -> LocationDistributions:
        """The location distribution of an ``observation`` or ``en_route`` record now: its last revision's, else its
        own (as taken). ``revisions``: :attr:`revisions`, when the caller has it already."""
        revs = (self.revisions if revisions is None else revisions).get((record['type'], record['index']))
        return location_from_record(revs[-1]['location'] if revs else record['location'])

    def append(self, record: dict[str, Any]) -> bool:
        """Keep one record in :attr:`records` and write it durably (flush + fsync), after any records still held
        from a storage fault (:mod:`~uncertain_bo.journal.storage_faults`).

        Returns:
            True if it and every earlier record are on disk; False if they are held in memory (:attr:`fault`
            says why; :meth:`retry` or the next append writes them).

        Raises:
            JournalError: the journal was opened read-only.
            ValueError: the record has no ``type`` or holds values JSON cannot represent exactly
                (NaN/inf); nothing is kept.
        """
        return self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> bool:
        """Keep several records in :attr:`records` and write them durably with one write and one fsync (a batch of
        revisions: :mod:`uncertain_bo.planning.revisions`): on disk all of them or, after a storage fault, none (held in
        memory, as :meth:`append`'s). A crash during the write may leave a prefix of them, the last line torn, which
        the loader treats as any torn last record.

        Returns, raises:
            as :meth:`append`; a record that cannot be encoded keeps the whole batch out.
        """
        if self.read_only:
            raise JournalError(f'journal {self.path} was opened read-only')
        run_id = self.header.get('run_id')
        batch, lines = [], []
        for record in records:
            if 'type' not in record:
                raise ValueError('journal records need a "type"')
            if isinstance(run_id, str) and 'run_id' not in record:   # the run it belongs to (journal_schema)
                record = {**record, 'run_id': run_id}
            batch.append(record)
            lines.append(_encode(record))
        if not batch:
            return self.retry()
        with self._lock:
            self.records.extend(batch)
            self._held.append(b''.join(lines))
            return self._flush()

    def _load(self, raw: bytes) -> None:
        lines = raw.split(b'\n')
        torn_tail = lines[-1] != b''  # last line without newline: possibly torn
        parsed: list[tuple[int, dict[str, Any]]] = []   # (file line, record)
        unreadable: list[tuple[int, str, dict]] = []     # (file line, why it holds no record, its type and index)
        last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            rec, problem = parse_line(line)
            if problem is None:
                parsed.append((i + 1, rec))
            elif i == last:
                log.warning('journal %s: skipping torn last record (%d bytes): %s', self.path, len(line), problem)
                self.skipped += 1
            else:
                unreadable.append((i + 1, problem, indexed_type(line)))
        # A last line without its newline that parses as a whole JSON object is complete (a torn write
        # cannot end in the object's closing brace): kept; the newline is added before the next append.
        if torn_tail and not self.skipped and not self.read_only:
            with open(self.path, 'ab') as fh:
                fh.write(b'\n')
                fh.flush()
                os.fsync(fh.fileno())
        if self.skipped and not self.read_only:
            with open(self.path, 'r+b') as fh:  # drop the torn bytes so appends start on a clean line
                fh.truncate(len(b'\n'.join(lines[:last])) + 1 if last > 0 else 0)
                fh.flush()
                os.fsync(fh.fileno())
            if not parsed and not unreadable:  # killed while writing the header: nothing was recorded yet
                log.warning('journal %s held only a torn header: starting it afresh', self.path)
                self._new_header()
                return
        first = min(([parsed[0][0]] if parsed else []) + [u[0] for u in unreadable[:1]], default=None)
        if first is None or not parsed or parsed[0][0] != first or parsed[0][1].get('type') != 'header' \
                or parsed[0][1].get('format') != FORMAT:
            raise JournalError(f'{self.path} is not an {FORMAT} file (no header line)')
        header_line, self.header = parsed[0]
        problem = version_problem(self.header)
        if problem:
            raise JournalError(f'{self.path} line {header_line}: {problem}: the journal\'s version cannot be read '
                               '(a damaged header: fix the line, e.g. "version": 1)')
        if self.header['version'] > VERSION:
            raise JournalError(f'{self.path} has journal version {self.header["version"]}; this uncertain_bo '
                               f'reads up to version {VERSION}: upgrade uncertain_bo')
        self._check(header_line, parsed[1:], unreadable)

    def _check(self, header_line: int, lines: list[tuple[int, dict[str, Any]]],
               unreadable: list[tuple[int, str, dict[str, Any]]]) -> None:
        """Keep the records the schema accepts (:mod:`uncertain_bo.journal.schema`); strict, refuse any damage."""
        self.checked = check_journal(self.header, lines, unreadable)
        strict = self.read_only if self.strict is None else self.strict
        problem = header_problem(self.header, [rec for _, rec in lines])
        if strict and problem:
            raise JournalError(f'{self.path} line {header_line}: {problem} (a damaged journal: fix the line; a resumed '
                               'run ignores the field)')
        if strict and self.checked.damage:
            d = self.checked.damage[0]
            advice = ('a line was removed or moved' if not d.skipped else
                      'fix the line; a resumed run skips it' if d.kind in (*INDEXED, '') else 'fix or remove the line')
            raise JournalError(f'{self.path} line {d.line}: {d.message} (a damaged journal: {advice})')
        if problem:   # kept (its format and version are valid), the field ignored; counted among the problems
            self.checked.damage.insert(0, Damage(header_line, f'{problem} (the field is ignored)', skipped=False,
                                                 kind='header'))
        for d in self.checked.damage:
            log.warning('journal %s line %d: %s (%s)', self.path, d.line, d.message,
                        'record skipped' if d.skipped else 'record kept')
        self.records = self.checked.records

    def export_csv(self, path: str | Path, en_route: bool = False) -> Path:
        """Write the observations as CSV (:meth:`write_csv`) to ``path``, atomically (a failure leaves no half-written
        file: :func:`~uncertain_bo.reporting.output_files.replacing`).

        Returns:
            The CSV path.

        Raises:
            uncertain_bo.user_errors.UsageError: the file cannot be written (the OS error, one line).
        """
        from ..reporting.output_files import replacing

        with replacing(path) as (tmp,):
            with open(tmp, 'w', newline='', encoding='utf-8') as fh:
                self.write_csv(fh, en_route)
        return Path(path)

    def write_csv(self, fh: IO[str], en_route: bool = False) -> None:
        """Write the observations as CSV to ``fh``: index, target, location mean and covariance as taken, reading,
        stamps and any other field; with ``en_route``, the en-route readings instead (the same columns without the
        target). A journal with ``revision`` records adds, after ``y``, each reading's location now (its last
        revision's, else as taken: ``revised_mean_*``, ``revised_cov_*``), its number of ``revisions`` and the
        ``revision_stamp`` of the last one (empty where none)."""
        obs = self.en_route if en_route else self.observations
        revisions = self.revisions
        extra = sorted({k for r in obs for k in r
                        if k not in ('type', 'index', 'target', 'location', 'y', 'run_id')})
        w = csv.writer(fh)
        d = location_from_record(obs[0]['location']).dim if obs else 2
        moments = [f'mean_{i}' for i in range(d)] + [f'cov_{i}{j}' for i in range(d) for j in range(d)]
        revised = ([f'revised_{c}' for c in moments] + ['revisions', 'revision_stamp']) if revisions else []
        w.writerow(['index'] + ([] if en_route else [f'target_{i}' for i in range(d)]) + moments + ['kind', 'y']
                   + revised + extra)
        for r in obs:
            loc = location_from_record(r['location'])
            row = [r['index'], *([] if en_route else r['target']), *loc.mean[0].tolist(),
                   *loc.covariance[0].reshape(-1).tolist(), r['location']['kind'], r['y']]
            if revisions:
                revs = revisions.get((r['type'], r['index']), [])
                now = self.location(r, revisions)
                row += [*now.mean[0].tolist(), *now.covariance[0].reshape(-1).tolist(), len(revs),
                        revs[-1]['stamp'] if revs else '']
            w.writerow(row + [_csv_value(r.get(k)) for k in extra])


def _csv_value(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    if isinstance(v, float) and not math.isfinite(v):
        return ''
    return v

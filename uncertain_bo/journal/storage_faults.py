"""Journal storage faults: how a :class:`~uncertain_bo.journal.journal.Journal` writes its records durably and what it
does when the disk refuses them.

Opening a journal for writing is strict: a run whose header cannot be written does not start
(:class:`JournalError` naming the file and the OS error). After that, :meth:`Journal.append` never raises an
``OSError`` (ENOSPC, EIO, EFBIG, a read-only or vanished run folder, on open, write, flush or fsync): the record is
kept in :attr:`Journal.records` and held, encoded, in memory with every later one, in order; each later
:meth:`~Journal.append` and each :meth:`~Journal.retry` writes the held records first. While records are held,
:attr:`Journal.fault` says why (the explorer pauses on it and reports it). Each record reaches the file exactly
once: a record counts as written only after its line and its ``fsync`` succeeded, and a failed write is cut back
(``os.ftruncate``) to the size the file had before it, so the retry neither duplicates it nor leaves a torn line
before it (if the cut fails too, the next attempt cuts first and writes nothing until it has). A journal file that
vanished (its folder remounted or recreated without it) is written again whole from memory (header and every
record, to a temporary file renamed over it); a missing folder is not created (that would hide an unmounted
disk): the records stay held until it is back. Held records exist only in memory: a crash while records are held
loses them (the explorer pauses meanwhile, so no new measurement joins them).

Why truncate-on-failure rather than a per-line checksum or write-then-rename: a prefix of a JSON object line is
never a complete JSON object (it lacks the closing brace), so the reader already refuses a torn last line
without guessing and needs no checksum (which would also change the format older readers share); the cut keeps
a fault's leftovers from ever becoming a damaged *middle* line; and rewriting the whole file per record costs
O(file) each time, where appending costs O(record). Journals written before stay readable unchanged.
"""
from __future__ import annotations

import json
import logging
import os
from typing import Any

__all__ = ['DurableAppend']

log = logging.getLogger('uncertain_bo.journal.journal')   # the journal's log, as before the split


class DurableAppend:
    """The writing side of :class:`~uncertain_bo.journal.journal.Journal` (a part of it: it writes the journal's held
    records, ``_held``, to its ``path`` and keeps ``fault``, ``faults`` and ``write_failures``).

    Example:
        Every record on disk: nothing held, nothing to retry:

        >>> import tempfile
        >>> from pathlib import Path
        >>> from uncertain_bo.journal.journal import Journal
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     journal = Journal(Path(run_dir) / 'journal.jsonl')
        ...     written = journal.append({'type': 'start', 'position': [0.0, 0.0]})
        ...     print(written, journal.held, journal.retry(), journal.fault)
        True 0 True None
    """

    @property
    def held(self) -> int:
        """Records kept in memory because a storage fault kept them from the file (0 when all are written)."""
        return sum(line.count(b'\n') for line in self._held)   # an entry may be a batch of lines (append_many)

    def retry(self) -> bool:
        """Write the records held after a storage fault, in order. Never raises ``OSError``.

        Returns:
            True when none is held any more.
        """
        with self._lock:
            return self._flush() if self._held else True

    def _flush(self) -> bool:
        """Write the held records one by one (each cut back on failure); True when all are written."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)   # no O_CREAT: a file without its header is no journal
        except FileNotFoundError as exc:
            if not self.path.parent.is_dir():
                return self._failed(exc)
            return self._rewrite()
        except OSError as exc:
            return self._failed(exc)
        written = 0
        try:
            if self._torn_from is not None:
                os.ftruncate(fd, self._torn_from)
                os.fsync(fd)
                self._torn_from = None
            while self._held:
                self._write_line(fd, self._held[0])
                self._held.pop(0)
                written += 1
        except OSError as exc:
            return self._failed(exc)
        finally:
            _close(fd)
        return self._recovered(written)

    def _write_line(self, fd: int, line: bytes) -> None:
        """Append ``line`` and fsync; on failure cut the file back to its size before (or remember to)."""
        before = os.fstat(fd).st_size
        try:
            _write_all(fd, line)
        except OSError:
            try:
                os.ftruncate(fd, before)
                os.fsync(fd)
            except OSError:
                self._torn_from = before       # the next attempt cuts first
            raise

    def _rewrite(self) -> bool:
        """The file vanished (its folder is there): write the whole journal again from memory."""
        tmp = self.path.with_name(self.path.name + '.tmp')
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _write_all(fd, b''.join(_encode(r) for r in [self.header, *self.records]))
            finally:
                _close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            return self._failed(exc)
        try:      # the file holds every record now, so only the rename's own durability is left to chance
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                _close(dfd)
        except OSError as exc:
            log.warning('journal %s: could not fsync its folder after writing it again: %s', self.path, exc)
        log.warning('journal %s had vanished: written again from memory (header and %d records)', self.path,
                    len(self.records))
        n, self._held, self._torn_from = len(self._held), [], None
        return self._recovered(n)

    def _failed(self, exc: OSError) -> bool:
        self.write_failures += 1
        if exc.errno is not None and exc.strerror:
            reason = f'[Errno {exc.errno}] {exc.strerror}: {str(self.path)!r}'
        else:
            reason = str(exc)
        reason = f'journal not writable: {reason}'
        if self.fault is None:
            self.faults += 1
            log.warning('%s; %d record(s) held in memory, written when the disk takes them again', reason,
                        len(self._held))
        elif reason != self.fault:
            log.warning('%s (was: %s)', reason, self.fault)
        self.fault = reason
        return False

    def _recovered(self, written: int) -> bool:
        if self.fault is not None:
            log.warning('journal %s writable again: %d held record(s) written', self.path, written)
            self.fault = None
        return True


def _encode(record: dict[str, Any]) -> bytes:
    """One journal line (UTF-8, newline-terminated). Raises ValueError for NaN/inf."""
    return (json.dumps(record, allow_nan=False, separators=(',', ':')) + '\n').encode('utf-8')


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (``os.write`` may take part of it, e.g. on a nearly full disk), then fsync."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError as exc:     # the data was fsynced before: nothing is lost
        log.debug('journal: close failed: %s', exc)

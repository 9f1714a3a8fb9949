"""A rosbag2 recording written on a thread of its own: the folder ``ros2 bag record`` writes (``metadata.yaml`` and
an MCAP file), by ``rosbags``' writer, never in the caller's way.

:meth:`BagWriter.write` only queues the serialised message (bounded: :data:`QUEUE_SIZE` messages); the writer thread
adds each topic's connection (its message definition, :mod:`uncertain_bo.recording.definitions`) when its first
message comes and writes the messages in the order they were queued: an MCAP file keeps that order, which the
replay reads (:mod:`uncertain_bo.recording.bag_reader`). Nothing here raises into the caller once the bag is open:

- a full queue (the disk slower than the messages) drops the message and counts it (``dropped``);
- a write that fails (a full disk, an I/O error, the folder gone) **stops the recording**: one warning with the OS
  error, the reason in :attr:`BagWriter.stopped` (the explorer shows it on ``/diagnostics``), later messages counted
  as dropped, and the bag closed as far as the disk allows. The run's journal, written and fsynced on its own, stays
  the source of truth; a bag cut short keeps the chunks written before (``ros2 bag reindex`` rebuilds its
  ``metadata.yaml``);
- a type without a message definition is not recorded (one warning; counted in ``dropped``).

``custom_data`` of ``metadata.yaml`` (rosbag2's free-form strings) carries what a replay needs to know about the run;
:meth:`BagWriter.close` writes it with the counts of messages written and dropped.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ['BagWriter', 'QUEUE_SIZE', 'CLOSE_TIMEOUT']

log = logging.getLogger(__name__)

#: messages the writer thread may lag behind before new ones are dropped (and counted)
QUEUE_SIZE = 20_000
#: s :meth:`BagWriter.close` waits for the writer thread to write what is queued and close the bag
CLOSE_TIMEOUT = 5.0

_CLOSE = object()


class BagWriter:
    """A rosbag2 folder with MCAP storage, written on a daemon thread.

    Args:
        path: the bag folder (created; it must not exist: a recording never overwrites one).
        custom_data: ``metadata.yaml``'s ``custom_data`` (string keys and values), completed at :meth:`close`.
        queue_size: messages queued at most.

    Raises:
        OSError, rosbags.rosbag2.WriterError: the folder exists or cannot be created (nothing is started).

    Attributes:
        path: the bag folder.
        written: messages written.
        dropped: messages not recorded (queue full, no message definition, or after the recording stopped).
        stopped: why the recording stopped (a write failed), None while it records.

    Example:
        A rosbag2 folder with one topic and ``custom_data``, written in a temporary folder; ``close`` writes
        ``metadata.yaml`` with the counts:

        >>> import pathlib, tempfile
        >>> from rosbags.typesys import Stores, get_typestore
        >>> from uncertain_bo.recording.bag_reader import open_recording
        >>> store = get_typestore(Stores.LATEST)
        >>> reading = store.serialize_cdr(store.types['std_msgs/msg/Float64'](data=12.5), 'std_msgs/msg/Float64')
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     bag = BagWriter(pathlib.Path(folder, 'run'), custom_data={'site': 'lake'})
        ...     queued = [bag.write('/temperature', 'std_msgs/msg/Float64', reading, log_time=t) for t in (0, 10 ** 9)]
        ...     closed = bag.close()
        ...     custom = open_recording(bag.path).custom_data
        >>> queued, closed, bag.written, bag.dropped, custom
        ([True, True], True, 2, 0, {'site': 'lake', 'uncertain_bo.messages_dropped': '0'})
    """

    def __init__(self, path: str | Path, custom_data: dict[str, str] | None = None, queue_size: int = QUEUE_SIZE):
        from rosbags.rosbag2 import StoragePlugin, Writer

        self.path = Path(path)
        self.custom_data = dict(custom_data or {})
        self.written = self.dropped = 0
        self.stopped: str | None = None
        self._writer = Writer(self.path, version=Writer.VERSION_LATEST, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        self._connections: dict[tuple[str, str], Any] = {}
        self._undefined: set[str] = set()
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name='bag-writer', daemon=True)
        self._thread.start()

    def write(self, topic: str, msgtype: str, data: bytes, log_time: int) -> bool:
        """Queue one serialised message (CDR, as on the wire) of ``msgtype`` (``'pkg/msg/Type'``) on ``topic`` at
        ``log_time`` (integer ns). Never blocks, never raises. Returns False when it is dropped (counted)."""
        if self._closed or self.stopped is not None:
            self.dropped += 1
            return False
        try:
            self._queue.put_nowait((topic, msgtype, bytes(data), int(log_time)))
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def values(self) -> dict[str, Any]:
        """The recording's state for ``/diagnostics``: its folder, messages written and dropped, why it stopped."""
        out: dict[str, Any] = {'recording': str(self.path), 'recording messages': self.written,
                               'recording messages dropped': self.dropped}
        if self.stopped is not None:
            out['recording stopped'] = self.stopped
        return out

    def close(self, timeout: float = CLOSE_TIMEOUT) -> bool:
        """Write what is queued and close the bag (MCAP summary, ``metadata.yaml`` with :attr:`custom_data`), waiting
        at most ``timeout`` s. Returns True when the bag was closed in time (idempotent)."""
        if not self._closed:
            self._closed = True
            deadline = time.monotonic() + timeout
            while True:
                try:
                    self._queue.put(_CLOSE, timeout=max(deadline - time.monotonic(), 0.001))
                    break
                except queue.Full:
                    if time.monotonic() >= deadline:
                        break
            self._thread.join(max(deadline - time.monotonic(), 0.0))
        return not self._thread.is_alive()

    # ------------------------------------------------------------------ the writer thread
    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _CLOSE:
                break
            if self.stopped is not None:
                self.dropped += 1
                continue
            topic, msgtype, data, log_time = item
            connection = self._connection(topic, msgtype)
            if connection is None:
                self.dropped += 1
                continue
            try:
                self._writer.write(connection, log_time, data)
                self.written += 1
            except Exception as exc:  # noqa: BLE001 - a full disk, an I/O error: the recording stops, the run goes on
                self._stop(exc)
        self._finish()

    def _connection(self, topic: str, msgtype: str):
        key = (topic, msgtype)
        if key not in self._connections:
            from .definitions import definition
            try:
                msgdef, rihs01 = definition(msgtype)
            except LookupError as exc:
                if msgtype not in self._undefined:
                    self._undefined.add(msgtype)
                    log.warning('recording: %s is not recorded: %s', topic, exc)
                return None
            try:
                self._connections[key] = self._writer.add_connection(topic, msgtype, msgdef=msgdef, rihs01=rihs01)
            except Exception as exc:  # noqa: BLE001 - as a failed write
                self._stop(exc)
                return None
        return self._connections[key]

    def _stop(self, exc: BaseException) -> None:
        self.stopped = f'{type(exc).__name__}: {exc}' if not isinstance(exc, OSError) else str(exc)
        self.dropped += 1
        log.warning('recording stopped: %s; the bag %s keeps what was written before (the journal is complete)',
                    self.stopped, self.path)

    def _finish(self) -> None:
        """Close the bag (in the writer thread, after the last message); a failure is logged, not raised."""
        try:
            self.custom_data['uncertain_bo.messages_dropped'] = str(self.dropped)
            for key, value in self.custom_data.items():
                self._writer.set_custom_data(key, value)
            self._writer.close()
        except Exception as exc:  # noqa: BLE001 - a disk that failed while writing fails here too
            if self.stopped is None:
                self._stop(exc)
            log.warning('recording: could not close %s (%s): `ros2 bag reindex %s` rebuilds its metadata.yaml',
                        self.path, exc, self.path)

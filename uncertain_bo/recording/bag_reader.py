"""A rosbag2 recording opened for replay: a rosbag2 folder (``metadata.yaml`` with MCAP or sqlite3 storage, as ``ros2
bag record`` writes it) or one ``.mcap`` / ``.db3`` file of one.

``rosbags`` reads the folder's metadata and the topics; the messages come in the order the recording holds them:

- **MCAP** is read in file order (``mcap``'s reader, ``log_time_order=False``): the order the recorder wrote them,
  which for the explorer's own recording (:mod:`uncertain_bo.ros.recording`) is the order the explorer handled its
  inputs and cycles, even where arrival times on a wall clock are not monotonic;
- **sqlite3** has no file order: by log time (``rosbags``), ties in the order the database returns them.

Every way a path can fail to be a readable recording is a :class:`~uncertain_bo.user_errors.UsageError` with one line
that says what it is and what to give instead (:func:`open_recording`); a file damaged past its index (a cut or
corrupted chunk) is found by :meth:`Recording.check`, which reads every message once before anything is written.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from ..user_errors import UsageError
from .contents import described

__all__ = ['Recording', 'open_recording', 'RecordingError', 'is_recording']

_SUFFIXES = ('.mcap', '.db3')
#: what a damaged recording's error line advises
_DAMAGED = ('a damaged or truncated recording: `mcap recover` (the mcap CLI) rewrites what is readable of an MCAP '
            'file, `ros2 bag reindex` rebuilds a damaged metadata.yaml')


class RecordingError(UsageError):
    """The path is not a readable rosbag2 recording (one line, exit status 2).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     open_recording(folder)
        Traceback (most recent call last):
        ...
        uncertain_bo.recording.bag_reader.RecordingError: ... is a folder without metadata.yaml: not a rosbag2 ...
    """


@dataclass
class Recording:
    """An opened recording.

    Attributes:
        path: what the user gave.
        storage: ``'mcap'`` or ``'sqlite3'``.
        files: its storage files, in order.
        topics: topic -> message type (``'pkg/msg/Type'``).
        counts: topic -> message count.
        custom_data: ``metadata.yaml``'s ``custom_data`` (empty for a bare file).
        description: the explorer's own description of the run (:func:`~uncertain_bo.recording.contents.described`),
            None for a recording of another recorder.

    Example:
        Three depth readings written to a bag in a temporary folder
        (:class:`~uncertain_bo.recording.bag_writer.BagWriter`) and read back in the recorded order:

        >>> import pathlib, tempfile
        >>> from rosbags.typesys import Stores, get_typestore
        >>> from uncertain_bo.recording.bag_writer import BagWriter
        >>> store = get_typestore(Stores.LATEST)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     bag = BagWriter(pathlib.Path(folder, 'run'))
        ...     for i, depth in enumerate([9.5, 9.8, 10.1]):
        ...         _ = bag.write('/depth', 'std_msgs/msg/Float64', store.serialize_cdr(
        ...             store.types['std_msgs/msg/Float64'](data=depth), 'std_msgs/msg/Float64'), log_time=i * 10 ** 9)
        ...     _ = bag.close()
        ...     recording = open_recording(pathlib.Path(folder, 'run'))
        ...     depths = [(ns, store.deserialize_cdr(raw, 'std_msgs/msg/Float64').data)
        ...               for _, ns, raw in recording.messages(['/depth'])]
        >>> recording.storage, recording.listing(), recording.counts
        ('mcap', '/depth (std_msgs/msg/Float64)', {'/depth': 3})
        >>> depths                                               # (log time ns, metres)
        [(0, 9.5), (1000000000, 9.8), (2000000000, 10.1)]
    """

    path: Path
    storage: str
    files: list[Path]
    topics: dict[str, str]
    counts: dict[str, int]
    custom_data: dict[str, str] = field(default_factory=dict)
    description: dict | None = None

    def listing(self) -> str:
        """The topics and types for a message: ``'/odom (nav_msgs/msg/Odometry), /fix (...)'``."""
        return ', '.join(f'{t} ({m})' for t, m in sorted(self.topics.items())) or 'no topics'

    def messages(self, topics: Iterable[str]) -> Iterator[tuple[str, int, bytes]]:
        """``(topic, log time in ns, serialised message)`` of ``topics``, in the recording's order (module docstring).

        Raises:
            RecordingError: a damaged file.
        """
        wanted = set(topics)
        try:
            if self.storage == 'mcap':
                yield from self._mcap_messages(wanted)
            else:
                yield from self._rosbags_messages(wanted)
        except RecordingError:
            raise
        except Exception as exc:  # noqa: BLE001 - any reader's error on damaged bytes is the same user problem
            raise RecordingError(f'cannot read the recording {self.path}: {_reason(exc)} ({_DAMAGED})') from None

    def check(self, topics: Iterable[str]) -> dict[str, int]:
        """Read every message of ``topics`` once (nothing decoded): the messages per topic.

        Raises:
            RecordingError: a damaged file.
        """
        counts: dict[str, int] = {}
        for topic, _, _ in self.messages(topics):
            counts[topic] = counts.get(topic, 0) + 1
        return counts

    def journal_records(self) -> list[dict] | None:
        """The journal the explorer mirrored into its own recording (``~/journal``: its header first, then every record
        written while it recorded), decoded without ROS; None for a recording without one (``ros2 bag record``).

        Raises:
            RecordingError: a damaged file.
        """
        import json

        from rosbags.typesys import Stores, get_typestore

        topic = ((self.description or {}).get('topics') or {}).get('journal')
        if topic not in self.topics:
            return None
        store = get_typestore(Stores.LATEST)
        return [json.loads(store.deserialize_cdr(raw, self.topics[topic]).data) for _, _, raw in self.messages([topic])]

    def _mcap_messages(self, wanted: set[str]) -> Iterator[tuple[str, int, bytes]]:
        from mcap.reader import make_reader

        for path in self.files:
            with open(path, 'rb') as f:
                for _, channel, message in make_reader(f).iter_messages(topics=list(wanted), log_time_order=False):
                    yield channel.topic, message.log_time, message.data

    def _rosbags_messages(self, wanted: set[str]) -> Iterator[tuple[str, int, bytes]]:
        from rosbags.rosbag2 import Reader

        with Reader(self.path) as reader:
            connections = [c for c in reader.connections if c.topic in wanted]
            for connection, log_time, data in reader.messages(connections=connections):
                yield connection.topic, log_time, bytes(data)


def open_recording(path: str | Path) -> Recording:
    """Open ``path`` (a rosbag2 folder, or a ``.mcap`` / ``.db3`` file) for replay.

    Raises:
        RecordingError: it does not exist, is an empty file, a folder that is not a rosbag2 recording, a file of
            another kind, or a recording whose metadata or index cannot be read (damaged, truncated).
    """
    from rosbags.rosbag2 import Reader

    path = Path(path)
    _check_kind(path)
    try:
        with Reader(path) as reader:
            topics = {c.topic: c.msgtype for c in reader.connections}
            counts: dict[str, int] = {}
            for c in reader.connections:
                counts[c.topic] = counts.get(c.topic, 0) + c.msgcount
            storage = reader.storage
            if path.is_dir():
                files = [Path(s.path) for s in storage.storages]
                kind = 'mcap' if all(f.suffix == '.mcap' for f in files) else 'sqlite3'
            else:
                files, kind = [path], 'mcap' if path.suffix == '.mcap' else 'sqlite3'
            custom = dict(storage.metadata.custom or {})
    except RecordingError:
        raise
    except Exception as exc:  # noqa: BLE001 - rosbags' ReaderError, a YAML or I/O error: the same user problem
        raise RecordingError(f'cannot read the recording {path}: {_reason(exc)} ({_DAMAGED})') from None
    return Recording(path, kind, files, topics, counts, custom, described(custom))


def is_recording(path: str | Path) -> bool:
    """Whether ``path`` looks like a rosbag2 recording: a folder with ``metadata.yaml``, or a ``.mcap`` / ``.db3``
    file (nothing is read)."""
    path = Path(path)
    return (path / 'metadata.yaml').is_file() if path.is_dir() else path.suffix in _SUFFIXES


def _check_kind(path: Path) -> None:
    """Refuse what is no recording before any reader sees it (one line each)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise RecordingError(f'recording {path}: no such file or folder') from None
    except OSError as exc:
        raise RecordingError(f'recording {path}: {exc.strerror}') from None
    if stat.S_ISDIR(mode):
        if (path / 'metadata.yaml').is_file():
            return
        inside = sorted(p.name for p in path.iterdir() if p.suffix in _SUFFIXES) if os.access(path, os.R_OK) else []
        hint = (f"; it holds {', '.join(inside)}: give that file, or rebuild the metadata with `ros2 bag reindex "
                f"{path}`" if inside else '')
        raise RecordingError(f'{path} is a folder without metadata.yaml: not a rosbag2 recording (give the folder '
                             f'`ros2 bag record` or `uncertain-bo demo --record` wrote, or its .mcap / .db3 file)'
                             + hint)
    if not stat.S_ISREG(mode):
        raise RecordingError(f'{path} is not a regular file or folder: give a rosbag2 folder or its .mcap / .db3 file')
    if path.stat().st_size == 0:
        raise RecordingError(f'{path} is an empty file, not a recording')
    if path.suffix not in _SUFFIXES:
        raise RecordingError(f'{path} is not a recording: give a rosbag2 folder (with metadata.yaml) or its .mcap / '
                             '.db3 file')


def _reason(exc: BaseException) -> str:
    text = ' '.join(str(exc).split()) or type(exc).__name__
    return text[:300]

"""Message definitions for a recording: rosbag2's concatenated ``ros2msg`` text of a type and its RIHS01 type hash,
as ``ros2 bag record`` stores them with each topic (MCAP schemas, ``metadata.yaml``), so that readers that never saw
the types (``ros2 bag info``, Foxglove, ``rosbags``, ``mcap``) decode the messages.

The text comes from the ``.msg`` (else ``.idl``) files installed with the message packages the nodes serialise with
(``share/<pkg>/msg/<Type>.msg`` under ``AMENT_PREFIX_PATH`` and under this Python's prefix, where the PyPI ROS wheels
put them): the definition always describes the bytes written. A type installed without either falls back to
``rosbags``' own store of the latest ROS 2 release. ``rosbags`` parses the files and writes the concatenation.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

__all__ = ['definition', 'msg_file']

_lock = threading.Lock()
_store = None
_latest = None


def msg_file(msgtype: str) -> Path | None:
    """The installed ``.msg`` file of ``msgtype`` (``'nav_msgs/msg/Odometry'``), else its ``.idl`` file (a package
    generated from IDL alone), None when there is neither."""
    pkg, _, name = msgtype.split('/')
    prefixes = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p] + [sys.prefix]
    for suffix in ('.msg', '.idl'):
        for prefix in prefixes:
            path = Path(prefix, 'share', pkg, 'msg', name + suffix)
            if path.is_file():
                return path
    return None


def definition(msgtype: str) -> tuple[str, str]:
    """``(definition, rihs01)`` of ``msgtype`` (``'pkg/msg/Type'``): rosbag2's ``ros2msg`` text (the type's own fields,
    then each type it uses after a line of ``=``) and the ``RIHS01_...`` type hash. Thread-safe.

    Raises:
        LookupError: the type (or one it uses) is neither installed with its ``.msg`` file nor known to ``rosbags``.
    """
    global _store
    from rosbags.typesys import Stores, get_typestore
    with _lock:
        if _store is None:
            _store = get_typestore(Stores.EMPTY)
        _register(_store, msgtype)
        return _store.generate_msgdef(msgtype, ros_version=2)[0], _store.hash_rihs01(msgtype)


def _register(store, msgtype: str) -> None:
    """Add ``msgtype`` and every type its fields name to ``store`` (installed ``.msg`` first, then rosbags' store)."""
    global _latest
    from rosbags.typesys import Stores, get_typestore, get_types_from_idl, get_types_from_msg
    from rosbags.typesys.base import Nodetype

    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in store.fielddefs:
            continue
        path = msg_file(name)
        if path is not None:
            text = path.read_text(encoding='utf-8')
            types = get_types_from_msg(text, name) if path.suffix == '.msg' else get_types_from_idl(text)
        else:
            if _latest is None:
                _latest = get_typestore(Stores.LATEST)
            if name not in _latest.fielddefs:
                raise LookupError(f'no message definition of {name}: neither share/{name.split("/")[0]}/msg/'
                                  f'{name.split("/")[-1]}.msg is installed nor does rosbags know it')
            types = {name: _latest.fielddefs[name]}
        store.register(types)
        for _, (kind, detail) in types[name][1]:
            while kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
                kind, detail = detail[0]
            if kind == Nodetype.NAME:
                todo.append(detail)

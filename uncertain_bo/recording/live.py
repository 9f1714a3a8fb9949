"""The live view without ROS tooling: the recorded topics served to Foxglove over its WebSocket protocol by
``foxglove-sdk``'s server (on a ROS machine ``foxglove_bridge`` does the same for every topic of the graph).

Each topic becomes a channel the first time a message is written to it: the message's ROS type as the schema name,
its ``ros2msg`` definition (:mod:`uncertain_bo.recording.definitions`) as the schema, ``cdr`` as the encoding, so
Foxglove decodes and draws the same bytes a bag holds. ``config/foxglove_layout.json`` shows them. The server runs
on threads of the SDK (Rust); :meth:`LiveView.write` hands a message over and returns: a client that cannot keep up
loses old messages, never the explorer's time. The SDK has no latching: a client that connects later sees each topic
from its next message on (the maps after the next measurement).
"""
from __future__ import annotations

import logging
from typing import Any

__all__ = ['LiveView', 'LOCALHOST']

log = logging.getLogger(__name__)

#: where the server listens: this machine only (a robot's own operator view runs foxglove_bridge)
LOCALHOST = '127.0.0.1'


class LiveView:
    """A Foxglove WebSocket server (``ws://host:port``) for the messages written to it.

    Args:
        port: TCP port (0: any free one; :attr:`port` says which).
        host: address to listen on.
        name: the server's name, shown by Foxglove.

    Raises:
        ImportError: ``foxglove-sdk`` is not installed.
        RuntimeError: the server cannot start (the port is in use).

    Example:
        A server on a free port of this machine; a message of a type without a definition is not shown:

        >>> from rosbags.typesys import Stores, get_typestore
        >>> store = get_typestore(Stores.LATEST)
        >>> view = LiveView(port=0)
        >>> view.url.startswith('ws://127.0.0.1:')
        True
        >>> reading = store.serialize_cdr(store.types['std_msgs/msg/Float64'](data=12.5), 'std_msgs/msg/Float64')
        >>> view.write('/temperature', 'std_msgs/msg/Float64', reading, log_time=0)
        True
        >>> view.write('/x', 'my_msgs/msg/X', b'', log_time=0)
        False
        >>> view.dropped, view.close()
        (1, True)
    """

    def __init__(self, port: int, host: str = LOCALHOST, name: str = 'uncertain_bo'):
        import foxglove

        self._foxglove = foxglove
        self._context = foxglove.Context()      # its own channels: nothing else in the process reaches its clients
        self.server = foxglove.start_server(name=name, host=host, port=port, context=self._context)
        self.host, self.port = host, self.server.port
        self._channels: dict[str, Any] = {}
        self.dropped = 0

    @property
    def url(self) -> str:
        return f'ws://{self.host}:{self.port}'

    def write(self, topic: str, msgtype: str, data: bytes, log_time: int) -> bool:
        """Send one serialised message (CDR) of ``msgtype`` on ``topic`` at ``log_time`` (ns) to the clients that
        subscribe it. Never raises; False when it could not be sent (no definition of its type)."""
        channel = self._channels.get(topic)
        if channel is None:
            from .definitions import definition
            try:
                msgdef, _ = definition(msgtype)
                schema = self._foxglove.Schema(name=msgtype, encoding='ros2msg', data=msgdef.encode('utf-8'))
                channel = self._foxglove.Channel(topic, schema=schema, message_encoding='cdr', context=self._context)
            except Exception as exc:  # noqa: BLE001 - a type without a definition is not shown, nothing more
                self.dropped += 1
                log.debug('live view: %s not shown: %s', topic, exc)
                return False
            self._channels[topic] = channel
        try:
            channel.log(bytes(data), log_time=int(log_time))
        except Exception:  # noqa: BLE001 - the server's problem, never the explorer's
            self.dropped += 1
            return False
        return True

    def values(self) -> dict[str, Any]:
        return {'live view': f'{self.url} (Foxglove: open connection, Foxglove WebSocket)'}

    def close(self, timeout: float = 0.0) -> bool:
        try:
            self.server.stop()
        except Exception:  # noqa: BLE001
            pass
        return True

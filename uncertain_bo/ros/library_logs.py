"""The library's Python log records (explorer, planner, journal) forwarded to a node's ROS logger, so that
``ros2 launch`` shows them with the node's name: :func:`forward_library_logs` and :func:`stop_forwarding`."""
from __future__ import annotations

import logging

__all__ = ['RosLogHandler', 'forward_library_logs', 'stop_forwarding']

_LIBRARY = 'uncertain_bo'


class RosLogHandler(logging.Handler):
    """Forwards Python log records of INFO and above to an rclpy logger (error, warning or info).

    Example:
        >>> import logging
        >>> from uncertain_bo.ros.library_logs import RosLogHandler
        >>> class Logger:                                  # the rclpy logger's three levels
        ...     def error(self, m): print('[ERROR]', m)
        ...     def warning(self, m): print('[WARN]', m)
        ...     def info(self, m): print('[INFO]', m)
        >>> handler = RosLogHandler(Logger())
        >>> handler.emit(logging.makeLogRecord({'levelno': logging.WARNING, 'msg': 'pose rejected: stale stamp'}))
        [WARN] pose rejected: stale stamp
    """

    def __init__(self, logger):
        super().__init__(logging.INFO)
        self.ros_logger = logger
        self.previous_level = logging.NOTSET   # the library logger's own level before forwarding began

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = self.format(record)
            if record.levelno >= logging.ERROR:
                self.ros_logger.error(msg)
            elif record.levelno >= logging.WARNING:
                self.ros_logger.warning(msg)
            else:
                self.ros_logger.info(msg)
        except Exception:  # noqa: BLE001 - logging must never break the node
            self.handleError(record)


def forward_library_logs(node) -> RosLogHandler:
    """Attach a :class:`RosLogHandler` for ``node``'s logger to the library's root logger (raised to INFO if it
    was quieter) and return it, for :func:`stop_forwarding`."""
    handler = RosLogHandler(node.get_logger())
    lib = logging.getLogger(_LIBRARY)
    lib.addHandler(handler)
    handler.previous_level = lib.level     # restored by stop_forwarding: the process's logging is left as found
    if lib.getEffectiveLevel() > logging.INFO:
        lib.setLevel(logging.INFO)
    return handler


def stop_forwarding(handler: RosLogHandler | None) -> None:
    """Detach ``handler`` (None: nothing to do)."""
    if handler is not None:
        lib = logging.getLogger(_LIBRARY)
        lib.removeHandler(handler)
        if not any(isinstance(h, RosLogHandler) for h in lib.handlers):
            lib.setLevel(handler.previous_level)

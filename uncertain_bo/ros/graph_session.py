"""How the in-process demo graphs (``uncertain-bo demo``: :mod:`.graph`, and with ``--rovers``: :mod:`.team_graph`)
meet the world outside their process: DDS discovery, and Ctrl-C.

**Private DDS by default.** The demo publishes ``/clock`` and ``goal_pose``, the topic Nav2's ``bt_navigator`` and
RViz's "2D Goal Pose" use: on ROS 2's defaults (domain 0, discovery over the whole subnet) a laptop running it beside
a robot on the same network could send that robot simulated goals, and another graph's clock and poses would reach
the demo (clock jumps, foreign poses). So the demo's rclpy context starts with automatic discovery **off**
(``ROS_AUTOMATIC_DISCOVERY_RANGE=OFF``, no static peers, for its own context only): its nodes, in one process, still
talk to each other, and nothing outside the process sees them or reaches them. ``--discovery localhost`` lets the
ROS 2 processes of this machine see the graph (``ros2 topic echo``, RViz), ``--discovery subnet`` the whole network
(ROS 2's default); ``--domain-id`` picks the ROS domain (default: ``ROS_DOMAIN_ID``, else 0). The start-up line says
which (:func:`dds_line`).

**Ctrl-C writes the report.** While a graph runs, SIGINT and SIGTERM only ask it to stop (:class:`StopRequest`): the
graph stops in order, the summary is written and printed with ``interrupted`` set, and the command exits 130.
rclpy's own signal handlers are not installed: they shut the context down under the spinning thread, which raced
the report (the summary was written after one Ctrl-C and not after another, exit status 1 or 130).
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ['DISCOVERY', 'StopRequest', 'add_arguments', 'bounded_integer', 'dds_line', 'graph_session',
           'resolve_domain_id', 'stop_on_signals']

log = logging.getLogger(__name__)

#: ``--discovery`` -> ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (rcl's names)
DISCOVERY = {'off': 'OFF', 'localhost': 'LOCALHOST', 'subnet': 'SUBNET'}
#: the largest ROS domain id rcl accepts
MAX_DOMAIN_ID = 232


def bounded_integer(low: int, high: int, what: str):
    """An argparse type: an integer from ``low`` to ``high``; anything else raises ``ArgumentTypeError`` naming
    ``what`` (``'x' is not a ROS domain id from 0 to 232``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f'{text!r} is not {what} from {low} to {high}')
        return value
    return parse


#: argparse type of ``--domain-id``
_domain_id = bounded_integer(0, MAX_DOMAIN_ID, 'a ROS domain id')


def resolve_domain_id(domain_id: int | None) -> int:
    """``domain_id``, or when None ``ROS_DOMAIN_ID`` (else 0).

    Raises:
        UsageError: ``ROS_DOMAIN_ID`` is set to something that is no domain id (before anything starts).
    """
    if domain_id is not None:
        return int(domain_id)
    text = os.environ.get('ROS_DOMAIN_ID') or '0'
    try:
        return _domain_id(text)
    except argparse.ArgumentTypeError as exc:
        from ..user_errors import UsageError
        raise UsageError(f'ROS_DOMAIN_ID: {exc} (fix it, unset it or give --domain-id)') from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--discovery`` and ``--domain-id`` of the demo."""
    parser.add_argument('--discovery', choices=tuple(DISCOVERY), default='off',
                        help="who sees the demo's DDS traffic (/clock, goal_pose, ...): 'off' (default) nothing "
                             "outside this process; 'localhost' the ROS 2 processes of this machine (ros2 topic, "
                             "RViz); 'subnet' the whole network, ROS 2's default: a robot on the same network and "
                             'domain would take its goals')
    parser.add_argument('--domain-id', type=_domain_id, default=None,
                        help=f'ROS domain id, 0-{MAX_DOMAIN_ID} (default: ROS_DOMAIN_ID, else 0); matters with '
                             '--discovery localhost or subnet')


def dds_line(discovery: str, domain_id: int) -> str:
    """The start-up line that says who sees the graph's DDS traffic."""
    if discovery == 'off':
        return ('DDS: discovery off, the graph is private to this process (--discovery localhost to watch it with '
                'ros2 or RViz on this machine)')
    if discovery == 'localhost':
        return f'DDS: domain {domain_id}, discovery localhost: ROS 2 processes of this machine see the graph'
    return (f'DDS: domain {domain_id}, discovery subnet: the whole network sees the graph; a robot on domain '
            f'{domain_id} would take its goal_pose')


class StopRequest:
    """Set by SIGINT or SIGTERM while a graph runs (:func:`graph_session`).

    Attributes:
        signal: the name of the signal that asked to stop (``'SIGINT'``), None while none did.

    Example:
        >>> import signal
        >>> from uncertain_bo.ros.graph_session import StopRequest
        >>> stop = StopRequest()
        >>> bool(stop)
        False
        >>> stop.handle(signal.SIGTERM); bool(stop), stop.signal
        (True, 'SIGTERM')
    """

    def __init__(self) -> None:
        self.signal: str | None = None

    def __bool__(self) -> bool:
        return self.signal is not None

    def handle(self, signum: int, frame=None) -> None:
        """The signal handler: note the request (a second one changes nothing: the report is being written)."""
        if self.signal is None:
            self.signal = signal.Signals(signum).name
            log.warning('%s: stopping the graph and writing the report', self.signal)


@contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    """``os.environ`` with ``values`` set (None: unset) inside the block, as it was after it."""
    def apply(settings: dict[str, str | None]) -> None:
        for k, v in settings.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    saved = {k: os.environ.get(k) for k in values}
    try:
        apply(values)
        yield
    finally:
        apply(saved)


@contextmanager
def stop_on_signals(stop: StopRequest | None = None) -> Iterator[StopRequest]:
    """Inside the block SIGINT and SIGTERM set ``stop`` (a new :class:`StopRequest` when None) instead of raising;
    the previous handlers are back after it. Outside the main thread (where Python takes no handlers) nothing is
    installed."""
    stop = StopRequest() if stop is None else stop
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {s: signal.signal(s, stop.handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)


@contextmanager
def graph_session(discovery: str = 'off', domain_id: int | None = None,
                  stop: StopRequest | None = None) -> Iterator[StopRequest]:
    """rclpy initialised for an in-process graph, and the stop request that SIGINT and SIGTERM set (module
    docstring; :func:`stop_on_signals`). The caller shuts rclpy down (:func:`~uncertain_bo.ros.graph.stop_graph`).

    Args:
        discovery: a key of :data:`DISCOVERY`.
        domain_id: the ROS domain id (None: ``ROS_DOMAIN_ID``, else 0).
        stop: a request already taking the signals (the command's, set before the graph started), or None.

    Raises:
        ValueError: an unknown ``discovery``.
        UsageError: ``ROS_DOMAIN_ID`` is no domain id.
    """
    import rclpy
    from rclpy.signals import SignalHandlerOptions

    if discovery not in DISCOVERY:
        raise ValueError(f'discovery must be one of {", ".join(DISCOVERY)}, got {discovery!r}')
    domain_id = resolve_domain_id(domain_id)
    private = discovery != 'subnet'
    with stop_on_signals(stop) as stop:
        # rcl reads the discovery settings from the environment when the context starts: set them for that moment
        with _environment({'ROS_AUTOMATIC_DISCOVERY_RANGE': DISCOVERY[discovery],
                           'ROS_STATIC_PEERS': '' if private else os.environ.get('ROS_STATIC_PEERS'),
                           'ROS_LOCALHOST_ONLY': None}):
            rclpy.init(domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
        log.info(dds_line(discovery, domain_id))
        yield stop

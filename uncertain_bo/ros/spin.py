"""One entry-point body for every node: help, init, construct, spin, shut down quietly."""
from __future__ import annotations

import difflib
import math
import os
import re
import signal
import sys
import tempfile
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from ..parameters.specs import Param, ParameterError
from ..parameters.files import section_applies
from ..parameters.rcl_yaml import parameter_rule_value, read_param_file
from ..user_errors import EXIT_USAGE, report, user_error_types
from .nodes import ending_hooks, exit_at_once
from .params import parameter_rules_in, params_files_in, set_command_line

__all__ = ['run_node', 'user_arguments', 'node_help', 'request_exit', 'STOP_TIMEOUT']

#: wall seconds a node has after SIGINT / SIGTERM to deliver its last messages (``stop_safely``: a Nav2 goal
#: cancelled, a stop goal acknowledged) before it is destroyed
STOP_TIMEOUT = 1.0
#: longest wait of the spin loop for work, s: how late a signal can be noticed while the node is idle
_SPIN_PERIOD = 0.1


def user_arguments(args: Sequence[str]) -> list[str]:
    """The arguments of a node's command line (program name excluded) outside its ``--ros-args`` parts."""
    out, in_ros = [], False
    for a in list(args)[1:]:
        if a == '--ros-args':
            in_ros = True
        elif a == '--' and in_ros:
            in_ros = False
        elif not in_ros:
            out.append(a)
    return out


def node_help(prog: str, doc: str | None, specs: Sequence[Param]) -> str:
    """``--help`` text of a node: what it does (its module docstring's first paragraph), how to start it, and
    every parameter with its default, range and description (the same specs the node declares)."""
    width = 100
    summary = (doc or '').strip().split('\n\n')[0].replace('\n', ' ')
    out = [f'usage: {prog} [-h] [--ros-args [--params-file FILE] [-p NAME:=VALUE] [-r FROM:=TO] ...]', '',
           *textwrap.wrap(summary, width), '',
           f'  ros2 run uncertain_bo {prog} --ros-args --params-file my_robot.yaml -p NAME:=VALUE',
           '  uncertain-bo check my_robot.yaml        (validate a parameter file without starting anything)', '',
           'parameters (name = default; read-only ones cannot change while the node runs):']
    for p in specs:
        default = p.default if not isinstance(p.default, str) else repr(p.default)
        head = f'  {p.name} = {default}' + ('  [read-only]' if p.read_only else '')
        out.append(head)
        text = f'{p.description}. Allowed: {p.allowed()}.'
        out += textwrap.wrap(text, width, initial_indent=' ' * 6, subsequent_indent=' ' * 6)
    return '\n'.join(out)


def request_exit(node: Node, code: int = 0) -> None:
    """Ask :func:`run_node` to end the node with exit status ``code`` once the current callback returns
    (instead of raising ``SystemExit`` inside a callback, which rclpy's executor would report)."""
    node.exit_code = int(code)


def run_node(factory: Callable[[], Node], args=None, *, doc: str | None = None,
             specs: Sequence[Param] = ()) -> None:
    """``--help``, ``rclpy.init``, build the node, spin until Ctrl-C / SIGTERM / :func:`request_exit`.

    - ``-h`` / ``--help`` prints :func:`node_help` (from ``doc`` and ``specs``) and exits 0 without starting
      anything; any other argument outside ``--ros-args`` is a mistake (one line, exit 2).
    - Parameter files are judged by rcl alone (what the node will really get): a file rcl refuses ends the
      node with one line ``error: ...`` naming the file and line (explained by
      :func:`uncertain_bo.parameters.rcl_yaml.read_param_file`), exit status 2; rcl's own log line about it is held
      back so that the error stays one line. Command-line arguments rcl refuses, an invalid parameter, a damaged
      journal or a field file that cannot be used end the same way
      (:func:`uncertain_bo.user_errors.user_error_types`).
    - A parameter the node does not declare, set in a parameter-file section that names the node or by ``-p``
      (a misspelling, ``max_measurement: 8``, which rclpy would ignore), ends it the same way before anything is
      written: one line naming each such name, where it was given (file and line) and the closest declared name
      (:func:`uncertain_bo.ros.params.undeclared_overrides`; this function records the command line for it). A
      ``-p`` rule rcl cannot parse (``-p search_bounds:=[0, 60.0]``) is explained the same way.
    - A parameter-file section meant for this node that does not reach it (``explorerr:``, or a bare
      ``explorer:`` when the node runs in a namespace) is warned about: its values are not applied.
    - Ctrl-C at any moment ends the node quietly with status 0: while it is being built (Python's own
      KeyboardInterrupt: no wait for start-up to finish) and while it spins. While it spins, SIGINT and SIGTERM
      are only noted (:class:`_StopRequest`): the callback running then ends normally (nothing is cut off half
      way, e.g. a journal record), the spin loop ends within ``_SPIN_PERIOD``, and the node has its last word
      before anything is shut down: its ``stop_safely()``, where it has one, sends what must reach the robot (the
      explorer cancels its Nav2 goal or publishes a stop) and returns a predicate that is true once that was
      delivered; the node is spun until then, at most :data:`STOP_TIMEOUT`. (rclpy's own handler would shut the
      context down inside the signal handler, after which nothing can be sent.) Further SIGINTs are ignored from
      then on: Ctrl-C under ``ros2 launch`` reaches a node twice (from the terminal's process group and forwarded
      by launch); a SIGTERM then (launch's escalation) ends the process at once. A ``RuntimeError`` raised while
      the context is already shutting down counts as a clean exit.
    """
    argv = list(sys.argv if args is None else args)
    prog = Path(argv[0]).name if argv else 'node'
    extra = user_arguments(argv)
    if '-h' in extra or '--help' in extra:
        try:
            print(node_help(prog, doc, specs), flush=True)
        except BrokenPipeError:   # `explorer --help | head`: the reader left, nothing is wrong
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if extra:
        sys.exit(report(f'{prog}: unexpected argument {extra[0]!r}: node options go after --ros-args '
                        f'(e.g. {prog} --ros-args --params-file FILE); see {prog} --help'))
    files = params_files_in(argv)
    for f in files:   # rcl's message for these is a bare "Couldn't parse params file"
        if not os.path.isfile(f) or not os.access(f, os.R_OK):
            sys.exit(report(f'cannot read parameter file {f}: ' + ('no such file' if not os.path.exists(f) else
                                                                   'not a readable file')))
    set_command_line(argv)   # which overrides came from a file's own section, a wildcard or -p (ros/params.py)
    code = 0
    node = None
    initialised = interrupted = False
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    stop = _StopRequest()
    try:
        try:
            signal.signal(signal.SIGINT, exit_at_once)   # nothing is started or written yet
            with _held_stderr() as held:
                rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
            signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C interrupts the node's start-up
            held.release()
            initialised = True
        except Exception as exc:  # noqa: BLE001 - rcl's RCLError (bad --ros-args or params file) has no public type
            sys.exit(report(_init_problem(exc, files, argv)))
        node = factory()
        _warn_unknown_sections(node, files)
        stop.install()
        _spin(node, lambda: stop.signum is not None or getattr(node, 'exit_code', None) is not None, _SPIN_PERIOD)
        _ending()
        if stop.signum is not None:
            interrupted = True
            _quiet_signals()
            _last_word(node, stop.signum)
        code = int(getattr(node, 'exit_code', 0) or 0)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        interrupted = True
    except ExternalShutdownException:
        interrupted = True
    except user_error_types() as exc:
        code = report(exc, EXIT_USAGE)
    except RuntimeError:
        if rclpy.ok():
            raise
    finally:
        _ending()
        _quiet_signals()   # the clean-up below is not to be interrupted by a Ctrl-C (a SIGTERM ends it)
        if node is not None:
            node.destroy_node()
        if initialised and rclpy.ok():
            rclpy.shutdown()
        # once interrupted, a further Ctrl-C (launch forwards the terminal's) must not turn the quiet end into a
        # KeyboardInterrupt; else the caller's handlers are back
        signal.signal(signal.SIGINT, signal.SIG_IGN if interrupted or previous[0] is None else previous[0])
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous[1] is None else previous[1])
    if code:
        sys.exit(code)


class _StopRequest:
    """The SIGINT / SIGTERM handler while a node spins: notes the first signal (``signum``) and nothing else, so
    that the callback it lands in finishes and the spin loop ends after it."""

    def __init__(self):
        self.signum: int | None = None

    def install(self) -> None:
        signal.signal(signal.SIGINT, self)
        signal.signal(signal.SIGTERM, self)

    def __call__(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum


def _ending() -> None:
    """Call the :data:`ending_hooks` (once per process)."""
    while ending_hooks:
        ending_hooks.pop(0)()


def _quiet_signals() -> None:
    """From the first signal on: a further Ctrl-C is ignored, a SIGTERM (launch's escalation) ends the process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _spin(node: Node, done: Callable[[], bool], period: float, deadline: float = math.inf) -> bool:
    """Spin ``node`` (waiting at most ``period`` s for work) until ``done()``: True; False when its context shut
    down or ``time.monotonic()`` passed ``deadline`` first."""
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while not done():
            if not rclpy.ok(context=node.context) or time.monotonic() >= deadline:
                return False
            executor.spin_once(timeout_sec=period)
        return True
    finally:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=0.0)


def _last_word(node: Node, signum: int) -> None:
    """After SIGINT / SIGTERM: the node's ``stop_safely()`` (where it has one) sends what must reach the robot
    before the node goes and returns a predicate, true once it is delivered; the node is spun until then, at most
    :data:`STOP_TIMEOUT` s."""
    node.get_logger().info(f'{signal.Signals(signum).name}: shutting down')
    stop_safely = getattr(node, 'stop_safely', None)
    if stop_safely is not None and not _spin(node, stop_safely(), 0.02, time.monotonic() + STOP_TIMEOUT):
        node.get_logger().warning(f'not confirmed within {STOP_TIMEOUT:g} s: the last messages to the robot may '
                                  'not have arrived')


class _Held:
    def __init__(self):
        self.text = ''

    def release(self) -> None:
        if self.text:
            sys.stderr.write(self.text)
            sys.stderr.flush()


@contextmanager
def _held_stderr() -> Iterator[_Held]:
    """Hold back what C code writes on file descriptor 2 inside the block (rcl logs "Failed to parse global
    arguments" there before rclpy raises); ``release()`` writes it out when it is not about an error we
    report ourselves."""
    held = _Held()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode='w+b') as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            held.text = tmp.read().decode(errors='replace')


def _init_problem(exc: BaseException, files: Sequence[str], argv: Sequence[str] = ()) -> str:
    """One line for rcl's refusal to start: the parameter file and line it could not parse (explained by our
    reader, which follows rcl's rules) or the ``-p`` rule it could not parse (explained the same way), else rcl's
    message without its source locations."""
    message = re.sub(r', at \S+:\d+', '', str(exc)).replace('failed to initialize rcl: ', '')
    if 'parse parameter override rule' in message:   # rcl: "... Sequence should be of same type ..."
        for rule in parameter_rules_in(argv).values():
            try:
                parameter_rule_value(rule)
            except ParameterError as perr:
                return str(perr)
    if "parse params file" in message:
        for f in files:
            try:
                read_param_file(f)
            except ParameterError as perr:
                return str(perr)
        return f'rcl cannot parse a parameter file: {message}'
    return f'cannot start: {message}'


def _warn_unknown_sections(node: Node, files: list[str]) -> None:
    """Warn about parameter-file sections meant for ``node`` that do not reach it: a bare ``explorer:``
    while the node runs in a namespace, or a misspelt name (``explorerr:``). Sections of other nodes in a
    shared file (the launch files pass config/sim.yaml to every node) are not mentioned."""
    fqn = node.get_fully_qualified_name()
    name = node.get_name()
    for f in files:
        try:
            sections = read_param_file(f)
        except ParameterError:   # rcl read it (the node started): nothing to add
            continue
        for s in sections:
            if section_applies(s.key, fqn):
                continue
            last = s.key.rstrip('/').split('/')[-1]
            if last == name or difflib.SequenceMatcher(None, last, name).ratio() >= 0.8:
                node.get_logger().warning(
                    f"parameter file {f}: section {s.key!r} does not apply to this node ({fqn}), so its values "
                    f"are not applied; key it {fqn!r} or '/**/{name}' (a bare name only matches a node "
                    'outside any namespace)')

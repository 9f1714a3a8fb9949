"""One entry-point body for every node: init, construct, spin, shut down quietly."""
from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Callable, Sequence

import rclpy
import yaml
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from ..parameters import ParameterError, load_param_file, section_applies
from ..user_errors import EXIT_USAGE, report, user_error_types

__all__ = ['run_node', 'params_files_in']

log = logging.getLogger(__name__)


def params_files_in(args: Sequence[str]) -> list[str]:
    """The ``--params-file FILE`` arguments inside the ``--ros-args`` parts of a command line."""
    files, in_ros = [], False
    it = iter(args)
    for a in it:
        if a == '--ros-args':
            in_ros = True
        elif a == '--':
            in_ros = False
        elif in_ros and a == '--params-file':
            f = next(it, None)
            if f is not None:
                files.append(f)
    return files


def run_node(factory: Callable[[], Node], args=None) -> None:
    """``rclpy.init``, build the node, spin until Ctrl-C / SIGTERM / the node asks to exit.

    A ``RuntimeError`` raised while the context is already shutting down (rclpy can fail inside
    ``take_message`` after SIGINT) counts as a clean exit. User mistakes end with one line ``error: ...``
    and exit status 2, never a traceback: a parameter file that cannot be read or is not valid YAML
    (checked before rcl parses it), command-line arguments rcl refuses, an invalid parameter, a damaged
    journal, a field file that cannot be used (:func:`uncertain_bo.user_errors.user_error_types`). A
    parameter file section meant for this node that does not reach it (``explorerr:``, or a bare
    ``explorer:`` when the node runs in a namespace) is warned about: its values are not applied. After a
    first SIGINT, further ones are ignored while the node is destroyed: Ctrl-C under ``ros2 launch``
    reaches a node twice (from the terminal's process group and forwarded by launch), and the second used
    to interrupt ``destroy_node`` with a traceback.
    """
    argv = list(sys.argv if args is None else args)
    files = params_files_in(argv)
    for f in files:   # unreadable or not YAML: say so in one line (rcl's own error is a traceback)
        problem = _yaml_problem(f)
        if problem:
            sys.exit(report(problem))
    try:
        rclpy.init(args=args)
    except Exception as exc:  # noqa: BLE001 - rcl's RCLError (bad --ros-args) has no public type
        sys.exit(report(f'cannot start: {exc}'))
    node = None
    code = 0
    try:
        node = factory()
        _warn_unknown_sections(node, files)
        rclpy.spin(node)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ExternalShutdownException:
        pass
    except SystemExit as exc:
        code = int(exc.code or 0)
    except user_error_types() as exc:
        code = report(exc, EXIT_USAGE)
    except RuntimeError:
        if rclpy.ok():
            raise
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    if code:
        sys.exit(code)


def _yaml_problem(path: str) -> str | None:
    """Why the parameter file ``path`` cannot be read as YAML, or None (its layout is rcl's to judge: rcl
    also accepts nested namespace keys)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        return f'cannot read parameter file {path}: {exc.strerror}'
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return f'parameter file {path} is not valid YAML: {exc}'
    return None


def _warn_unknown_sections(node: Node, files: list[str]) -> None:
    """Warn about parameter-file sections meant for ``node`` that do not reach it: a bare ``explorer:``
    while the node runs in a namespace, or a misspelt name (``explorerr:``). Sections of other nodes in a
    shared file (the launch files pass config/sim.yaml to every node) are not mentioned."""
    import difflib

    fqn = node.get_fully_qualified_name()
    name = node.get_name()
    for f in files:
        try:
            keys = list(load_param_file(f))
        except ParameterError:   # a layout we do not read (nested namespaces): rcl applied it
            continue
        for key in keys:
            if section_applies(key, fqn):
                continue
            last = key.rstrip('/').split('/')[-1]
            if last == name or difflib.SequenceMatcher(None, last, name).ratio() >= 0.8:
                node.get_logger().warning(
                    f"parameter file {f}: section {key!r} does not apply to this node ({fqn}), so its values "
                    f"are not applied; key it {fqn!r} or '/**/{name}' (a bare name only matches a node "
                    'outside any namespace)')

"""One entry-point body for every node: init, construct, spin, shut down quietly."""
from __future__ import annotations

import signal
import sys
from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from ..parameters import ParameterError

__all__ = ['run_node']


def run_node(factory: Callable[[], Node], args=None) -> None:
    """``rclpy.init``, build the node, spin until Ctrl-C / SIGTERM / the node asks to exit.

    A ``RuntimeError`` raised while the context is already shutting down (rclpy can fail inside
    ``take_message`` after SIGINT) counts as a clean exit; an invalid parameter prints its message and
    exits with status 2 instead of a traceback. After a first SIGINT, further ones are ignored while the
    node is destroyed: Ctrl-C under ``ros2 launch`` reaches a node twice (from the terminal's process
    group and forwarded by launch), and the second used to interrupt ``destroy_node`` with a traceback.
    """
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = factory()
        rclpy.spin(node)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ExternalShutdownException:
        pass
    except SystemExit as exc:
        code = int(exc.code or 0)
    except ParameterError as exc:
        print(f'error: {exc}', file=sys.stderr)
        code = 2
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

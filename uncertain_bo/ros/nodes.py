"""The package's nodes: a registry (module, class, parameter specs) and their console-script entry points.

Nothing here imports rclpy, torch or a node module at import time. The console scripts (``explorer``,
``team_explorer``, ``pure_pursuit``, ``sim_rover``, ``ekf``, ``particle_filter``, ``field_sensor``,
``sensor_covariance``;
setup.py) point here, so that
Ctrl-C arriving while the node's heavy modules are still being imported (several seconds on a small
computer) ends the process quietly instead of with a ``KeyboardInterrupt`` traceback; the node's own
``main`` (:func:`uncertain_bo.ros.spin.run_node`) handles everything after that.

Once ``main`` has ended (the node destroyed, rclpy shut down, every file written and the journal fsynced) the
process ends at once (:func:`exit_now`), without the interpreter's finalisation: tearing down torch, NumPy and the
DDS libraries module by module took 1.3-2.5 s on an idle 2-core machine and over 5 s under load (the nodes were
found garbage-collecting there when ``ros2 launch`` escalated to SIGTERM), and it would wait for a decision still
running on the explorer's worker thread. Should the node's own clean-up hang in the middleware (seen once in 102
node exits under ``ros2 launch``: ``rcl_node_fini`` blocked in Fast DDS for over 5 s), the process is ended
:data:`TEARDOWN_LIMIT` s after the node's run ended, with status 1 and every thread's stack on stderr
(:func:`arm_hard_exit`).
"""
from __future__ import annotations

import faulthandler
import importlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ['NodeEntry', 'NODES', 'node_specs', 'exit_at_once', 'exit_now', 'arm_hard_exit', 'ending_hooks',
           'TEARDOWN_LIMIT',
           'explorer', 'team_explorer', 'pure_pursuit', 'sim_rover', 'ekf', 'particle_filter', 'field_sensor',
           'sensor_covariance']


#: s after a node's run ended (its spin loop) by which a console script's process is gone even when its last word
#: (at most 1 s, :data:`uncertain_bo.ros.spin.STOP_TIMEOUT`) and its clean-up have not finished
TEARDOWN_LIMIT = 2.0


@dataclass(frozen=True)
class NodeEntry:
    """A node of the package.

    Attributes:
        name: default node name (and console script).
        module: module with the node class, its parameter specs and ``main``.
        cls: the node class.
        specs: attribute of ``module`` holding every parameter spec the node declares.

    Example:
        >>> from uncertain_bo.ros.nodes import NODES
        >>> entry = NODES['pure_pursuit']
        >>> entry.module, entry.cls, 'lookahead_dist' in [p.name for p in entry.parameter_specs()]
        ('uncertain_bo.ros.pure_pursuit', 'PurePursuitNode', True)
    """

    name: str
    module: str
    cls: str
    specs: str

    def load(self) -> Any:
        return importlib.import_module(self.module)

    def parameter_specs(self) -> list:
        return list(getattr(self.load(), self.specs))


#: node name -> entry, in the order a user meets them
NODES = {e.name: e for e in (
    NodeEntry('explorer', 'uncertain_bo.ros.explorer', 'ExplorerNode', 'EXPLORER_NODE_PARAMS'),
    NodeEntry('team_explorer', 'uncertain_bo.ros.team_explorer', 'TeamExplorerNode', 'TEAM_EXPLORER_PARAMS'),
    NodeEntry('pure_pursuit', 'uncertain_bo.ros.pure_pursuit', 'PurePursuitNode', 'PURE_PURSUIT_ALL_PARAMS'),
    NodeEntry('sim_rover', 'uncertain_bo.ros.sim_rover', 'SimRoverNode', 'SIM_ROVER_PARAMS'),
    NodeEntry('ekf', 'uncertain_bo.ros.ekf', 'EkfNode', 'EKF_ALL_PARAMS'),
    NodeEntry('particle_filter', 'uncertain_bo.ros.particle_filter', 'ParticleFilterNode', 'PF_ALL_PARAMS'),
    NodeEntry('field_sensor', 'uncertain_bo.ros.field_sensor', 'FieldSensorNode', 'FIELD_SENSOR_PARAMS'),
    NodeEntry('sensor_covariance', 'uncertain_bo.ros.sensor_covariance', 'SensorCovarianceNode',
              'SENSOR_COVARIANCE_PARAMS'),
)}


def node_specs(name: str) -> list:
    """Every parameter spec the node ``name`` declares (imports its module)."""
    return NODES[name].parameter_specs()


#: called once when a node's run ends (:func:`~uncertain_bo.ros.spin.run_node`: a signal,
#: :func:`~uncertain_bo.ros.spin.request_exit`, an error), before its last word and its clean-up: the console
#: scripts arm a hard exit here (:func:`arm_hard_exit`)
ending_hooks: list[Callable[[], None]] = []


def exit_at_once(signum=None, frame=None) -> None:
    """SIGINT handler for the moments when nothing is started or written yet (imports, ``rclpy.init``): end
    the process at once, status 0. A ``KeyboardInterrupt`` raised there can cross C++ extension code
    (pybind11), which then aborts the process ("terminate called after throwing ... KeyboardInterrupt")."""
    exit_now(0)


def exit_now(code: int | str | None) -> None:
    """End the process with ``code`` (``sys.exit``'s: None is 0, a string is printed and gives 1) once Python's
    log handlers and standard streams are flushed, without the interpreter's finalisation (module docstring)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(int(code or 0))


def arm_hard_exit() -> None:
    """End the process :data:`TEARDOWN_LIMIT` s from now, with status 1 after writing every thread's stack on stderr,
    unless it has ended by then (faulthandler's watchdog: a thread of its own that needs no GIL, so a clean-up
    blocked in C code holding it is ended too)."""
    faulthandler.dump_traceback_later(TEARDOWN_LIMIT, exit=True)


def _main(name: str) -> None:
    """Run node ``name``'s ``main``; Ctrl-C at any moment (also while importing) exits quietly with status 0,
    as it does once the node spins; the process ends as soon as ``main`` has (:func:`exit_now`)."""
    code: int | str | None = 0
    try:
        signal.signal(signal.SIGINT, exit_at_once)
        module = NODES[name].load()
        ending_hooks.append(arm_hard_exit)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        module.main()
    except KeyboardInterrupt:
        code = 0
    except SystemExit as exc:
        code = exc.code
    except ImportError as exc:     # rclpy or a message package not installed: one line, not a traceback
        from ..extras import missing_dependency
        from ..user_errors import report
        message = missing_dependency(exc)
        if message is None:
            raise
        code = report(f'{name}: {message}')
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # a second Ctrl-C must not interrupt the exit
    exit_now(code)


def explorer() -> None:
    _main('explorer')


def team_explorer() -> None:
    _main('team_explorer')


def pure_pursuit() -> None:
    _main('pure_pursuit')


def sim_rover() -> None:
    _main('sim_rover')


def ekf() -> None:
    _main('ekf')


def particle_filter() -> None:
    _main('particle_filter')


def field_sensor() -> None:
    _main('field_sensor')


def sensor_covariance() -> None:
    _main('sensor_covariance')

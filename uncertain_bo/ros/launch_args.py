"""What the launch files share: their declared arguments and the refusal of any other (:func:`declare_arguments`),
checked launch-argument values, the check of every node's parameters before any node starts
(:func:`check_nodes`), the simulation launch files' common arguments (:func:`simulation_overrides`, for
``sim.launch.py`` and ``team.launch.py``), their optional rviz2 (:func:`rviz_actions`) and the package's share
directory.

Plain Python (``launch`` is imported only inside the functions that build launch actions), so
``launch/*.launch.py`` and their tests use the same code. Errors are ``RuntimeError`` with the argument's name and
what it must be: ``ros2 launch`` prints them (one line: ``[ERROR] [launch]: Caught exception in launch ...: <the
error>``), starts nothing and exits 1.
"""
from __future__ import annotations

import os
from typing import Any, Collection

from ..parameters.run_area import bounds_outside

__all__ = ['PACKAGE', 'LOCALISERS', 'NodeFailed', 'bounds_outside', 'check_nodes', 'choice', 'declare_arguments',
           'exit_handler', 'flag', 'integer', 'launched_directly', 'params_file', 'rover_exit_handler', 'rviz_actions',
           'share_directory', 'simulation_overrides', 'unknown_arguments']

PACKAGE = 'uncertain_bo'

#: sim_rover's localiser -> the localiser node (executable and name) the simulation launch files start
LOCALISERS = {'ekf': 'ekf', 'pf': 'particle_filter'}


#: launch configurations ``ros2 launch`` itself adds (its ``--launch-prefix`` and ``--launch-prefix-filter`` options)
ROS2_LAUNCH_CONFIGURATIONS = ('launch-prefix', 'launch-prefix-filter')


def declare_arguments(arguments, launch_file: str) -> list:
    """The launch actions that declare ``arguments`` (``(name, default, description)`` each) and then refuse any
    other argument: ``ros2 launch`` hands every ``NAME:=VALUE`` to the launch file whether it declares it or not,
    so a misspelt ``measurment:=5`` would be ignored. Put them first in the launch description: the refusal comes
    before any node (or rviz2) starts.

    The refusal applies when ``launch_file`` (the calling file's ``__file__``) is the one ``ros2 launch`` was given
    (:func:`launched_directly`); included from another launch file, it sees that file's launch configurations too,
    which are not mistakes.
    """
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    names = [name for name, _, _ in arguments]

    def refuse_unknown(context):
        if launched_directly(launch_file):
            problems = unknown_arguments(context.launch_configurations, names, os.path.basename(launch_file))
            if problems:
                raise RuntimeError('; '.join(problems))
        return []

    return [*[DeclareLaunchArgument(name, default_value=default, description=description)
              for name, default, description in arguments],
            OpaqueFunction(function=refuse_unknown)]


def unknown_arguments(given, declared, launch_file: str) -> list[str]:
    """One line for each of the launch arguments ``given`` (names, or a name -> value mapping) that the launch file
    does not declare (nor ``ros2 launch`` itself adds, :data:`ROS2_LAUNCH_CONFIGURATIONS`), with the closest declared
    name."""
    from ..parameters.files import closest_name
    values = given if hasattr(given, 'items') else dict.fromkeys(given)
    out = []
    for name, value in values.items():
        if name in declared or name in ROS2_LAUNCH_CONFIGURATIONS:
            continue
        close = closest_name(name, declared)
        shown = name if value is None else f'{name}:={value}'
        out.append(f'launch argument {shown} is not an argument of {launch_file}'
                   + (f' (did you mean {close}?)' if close else '') + f'; see `ros2 launch {PACKAGE} {launch_file} '
                   '--show-args`')
    return out


def launched_directly(launch_file: str, argv=None) -> bool:
    """Whether ``launch_file`` is the file this ``ros2 launch`` process was given (``ros2 launch uncertain_bo
    FILE`` or ``ros2 launch PATH``), rather than a file that includes it. ``argv``: the process's command line
    (default ``sys.argv``)."""
    import sys
    words = [a for a in (sys.argv if argv is None else argv)[1:] if ':=' not in a]
    base, real = os.path.basename(launch_file), os.path.realpath(launch_file)
    return any((w == base and i > 0 and words[i - 1] == PACKAGE) or os.path.realpath(w) == real
               for i, w in enumerate(words))


def check_nodes(nodes, user_files=()) -> None:
    """Check what a launch file hands each node it starts, before any starts, as ``uncertain-bo check`` and the node
    itself would (:func:`uncertain_bo.ros.check.check_node_parameters`): names the node does not declare (with
    the file, line and closest name), invalid values, and the node's start-up checks (a field file that loads, a
    ``run_dir`` that can be written, nav2_msgs for ``goal_interface: nav2_action``, ...).

    Args:
        nodes: ``(node, fully qualified name, parameters)`` for each node: the package's node
            (:data:`uncertain_bo.ros.nodes.NODES` key) and the list given to ``launch_ros.actions.Node(parameters=)``
            (files, or :class:`~uncertain_bo.parameters.files.ParamFile`, and dicts).
        user_files: the user's ``params_file`` (its values count as set; messages name it).

    Raises:
        RuntimeError: every problem, in one line.
    """
    from .check import check_node_parameters
    problems = []
    for node, fqn, parameters in nodes:
        problems += check_node_parameters(node, fqn, parameters, given_files=list(user_files)).problems
    if problems:
        raise RuntimeError('; '.join(dict.fromkeys(problems)))


def simulation_overrides(args) -> tuple[dict[str, dict[str, Any]], bool]:
    """The parameter overrides of the launch arguments ``sim.launch.py`` and ``team.launch.py`` share, from their
    values ``args`` (name -> string; a missing or empty one leaves the parameter files' value).

    ``field`` (sim_rover), ``seed`` (sim_rover, particle_filter, explorer; integer >= 0), ``localiser`` (sim_rover;
    a key of :data:`LOCALISERS`), ``measurements`` (the explorer's ``max_measurements``; integer >= 1), ``run_dir``
    (the explorer's, made absolute, ``~`` expanded) and ``exit_when_done`` (explorer; boolean, default true).

    Returns:
        ``(overrides, use_sim_time)``: overrides by parameter-file section (``'sim_rover'``, ``'ekf'``,
        ``'particle_filter'``, ``'pure_pursuit'``, ``'explorer'``, every one present) and the ``use_sim_time``
        argument (boolean, default true) for every node but sim_rover, which owns /clock.

    Raises:
        RuntimeError: an argument is not what it must be (one line naming it).
    """
    sim_time = flag(args.get('use_sim_time', 'true'), 'use_sim_time')
    over: dict[str, dict[str, Any]] = {
        'sim_rover': {}, 'ekf': {}, 'particle_filter': {}, 'pure_pursuit': {},
        'explorer': {'exit_when_done': flag(args.get('exit_when_done', 'true'), 'exit_when_done')}}
    if str(args.get('field', '')).strip():
        over['sim_rover']['field'] = args['field'].strip()
    if str(args.get('seed', '')).strip():
        over['sim_rover']['seed'] = over['explorer']['seed'] = integer(args['seed'], 'seed', 0)
        over['particle_filter']['seed'] = over['sim_rover']['seed']
    if str(args.get('localiser', '')).strip():
        over['sim_rover']['localiser'] = choice(args['localiser'], 'localiser', LOCALISERS)
    if str(args.get('measurements', '')).strip():
        over['explorer']['max_measurements'] = integer(args['measurements'], 'measurements', 1)
    if str(args.get('run_dir', '')).strip():
        over['explorer']['run_dir'] = os.path.abspath(os.path.expanduser(args['run_dir'].strip()))
    return over, sim_time


def rviz_actions(launch_file: str, config: str) -> list:
    """The optional rviz2 of a simulation launch file (its ``rviz`` argument): rviz2 in the root namespace on the
    ``use_sim_time`` argument's clock with ``config/<config>`` when installed (else its default configuration),
    and a log line saying which. ``launch_file``: the calling file's ``__file__`` (:func:`share_directory`)."""
    from launch.actions import LogInfo
    from launch.conditions import IfCondition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    rviz_config = os.path.join(share_directory(launch_file, 'sim.yaml'), 'config', config)
    installed = os.path.isfile(rviz_config)
    return [
        LogInfo(msg=f'rviz2 configuration: {rviz_config}' if installed else
                f'{rviz_config} is not installed: rviz2 starts with its default configuration',
                condition=IfCondition(LaunchConfiguration('rviz'))),
        Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
             arguments=['-d', rviz_config] if installed else [],
             parameters=[{'use_sim_time': LaunchConfiguration('use_sim_time')}],
             condition=IfCondition(LaunchConfiguration('rviz'))),
    ]


def share_directory(launch_file: str, marker: str) -> str:
    """Installed share directory of the package, else the source tree ``launch_file`` lies in.

    Args:
        launch_file: path of the calling launch file (its ``__file__``).
        marker: a config file (e.g. ``'sim.yaml'``) whose presence in ``<source>/config`` identifies the
            source tree.

    Raises:
        PackageNotFoundError (or the ament lookup's error): neither is found.
    """
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        return get_package_share_directory(PACKAGE)
    except (PackageNotFoundError, LookupError, ValueError, OSError):  # OSError: no AMENT_PREFIX_PATH
        source = os.path.dirname(os.path.dirname(os.path.abspath(launch_file)))
        if os.path.isfile(os.path.join(source, 'config', marker)):
            return source
        raise


def params_file(args) -> str | None:
    """The ``params_file`` launch argument as an absolute path (``~`` expanded), or None when empty.

    Raises:
        RuntimeError: the file does not exist or is not a regular file (a device, a folder).
    """
    path = str(args.get('params_file', '') or '').strip()
    if not path:
        return None
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(path):
        raise RuntimeError(f'launch argument params_file:={path!r}: no such file')
    if not os.path.isfile(path):
        raise RuntimeError(f'launch argument params_file:={path!r} is not a regular file: name a YAML file')
    return path


def flag(value, name: str) -> bool:
    """A launch-argument boolean ('true'/'false'/'1'/'0'/'yes'/'no'/'on'/'off', any case)."""
    v = str(value).strip().lower()
    if v in ('true', '1', 'yes', 'on'):
        return True
    if v in ('false', '0', 'no', 'off'):
        return False
    raise RuntimeError(f"launch argument {name}:={value!r} is not a boolean (true or false)")


def integer(value, name: str, low: int) -> int:
    """A launch-argument integer ``>= low``."""
    try:
        n = int(str(value).strip())
    except ValueError:
        n = None
    if n is None or n < low:
        raise RuntimeError(f'launch argument {name}:={value!r} must be an integer >= {low}')
    return n


def choice(value, name: str, allowed: Collection[str]) -> str:
    """A launch argument that must be one of ``allowed``."""
    v = str(value).strip()
    if v not in allowed:
        raise RuntimeError(f"launch argument {name}:={value!r} must be one of {', '.join(allowed)}")
    return v


class NodeFailed(RuntimeError):
    """A launched node exited with a non-zero status while the launch was running (not shutting down).

    Example:
        What the launch's exit handler raises for a node that died (``ros2 launch`` then exits with status 1):

        >>> from uncertain_bo.ros.launch_args import NodeFailed, exit_handler
        >>> from types import SimpleNamespace
        >>> on_exit = exit_handler('explorer', shutdown_on_success=True)
        >>> context = SimpleNamespace(is_shutdown=False)
        >>> on_exit(SimpleNamespace(returncode=2), context)
        Traceback (most recent call last):
            ...
        uncertain_bo.ros.launch_args.NodeFailed: explorer exited with status 2 (its error is above): stopping the launch
    """


def exit_handler(name: str, *, shutdown_on_success: bool):
    """``on_exit`` callback of an ``OnProcessExit`` handler for the node ``name``.

    - The launch is already shutting down (Ctrl-C, another node finished): nothing is logged or done, so
      Ctrl-C never reports "explorer exited (done)".
    - Exit status 0: with ``shutdown_on_success`` (the explorer after its last measurement) the launch is
      shut down with that reason; otherwise nothing.
    - Any other status (a node that died at start-up on a bad parameter or field): raises
      :class:`NodeFailed`; ``ros2 launch`` logs it, shuts everything down and exits with status 1 (an
      exception in an event handler is launch's only way to a non-zero exit status).
    """
    def on_exit(event, context):
        if getattr(context, 'is_shutdown', False):
            return None
        code = event.returncode
        if code == 0:
            if not shutdown_on_success:
                return None
            from launch.actions import EmitEvent, LogInfo
            from launch.events import Shutdown
            return [LogInfo(msg=f'{name} finished: shutting the launch down'),
                    EmitEvent(event=Shutdown(reason=f'{name} finished'))]
        raise NodeFailed(f'{name} exited with status {code} (its error is above): stopping the launch')
    return on_exit


def rover_exit_handler(name: str, rover: str):
    """``on_exit`` callback for node ``name`` of one rover of a team (its localiser or controller): its end does
    not end the launch (the team explorer drops the rover after ``silence_timeout`` and the others go on); a
    non-zero status is logged as a warning. Nothing is logged while the launch shuts down."""
    def on_exit(event, context):
        if getattr(context, 'is_shutdown', False) or event.returncode == 0:
            return None
        from launch.actions import LogInfo
        return [LogInfo(msg=f'WARNING: {name} exited with status {event.returncode}: the team explorer drops '
                            f'{rover} after silence_timeout; the other rovers go on')]
    return on_exit

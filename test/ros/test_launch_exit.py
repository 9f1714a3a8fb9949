"""How launches end: a failing node makes ``ros2 launch`` exit non-zero, Ctrl-C reports nothing as "done",
and namespaced launches leave no parameter files behind.

The exit handler is plain Python (tested everywhere); the launch-description parts need ROS 2 ``launch`` and
``launch_ros`` (not on PyPI) and skip with a reason where they are absent.
"""
import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from uncertain_bo.ros.launch_args import NodeFailed, exit_handler, rover_exit_handler

ROOT = Path(__file__).resolve().parents[2]


def event(code):
    return SimpleNamespace(returncode=code)


def context(shutting_down):
    return SimpleNamespace(is_shutdown=shutting_down)


@pytest.mark.parametrize('name', ['explorer', 'sim_rover'])
def test_a_node_failing_while_running_raises_so_launch_exits_nonzero(name):
    with pytest.raises(NodeFailed, match=f'{name} exited with status 2'):
        exit_handler(name, shutdown_on_success=name == 'explorer')(event(2), context(False))


@pytest.mark.parametrize('code', [0, -2, 1, 130])
def test_nothing_is_reported_once_the_launch_is_shutting_down(code):
    """After Ctrl-C (or another node's end) no "explorer exited (done)" and no error."""
    assert exit_handler('explorer', shutdown_on_success=True)(event(code), context(True)) is None


def test_a_helper_node_ending_cleanly_does_not_end_the_launch():
    assert exit_handler('pure_pursuit', shutdown_on_success=False)(event(0), context(False)) is None


@pytest.mark.parametrize('code', [0, 1, -9])
def test_a_team_rovers_node_ending_does_not_end_the_launch(code):
    """A rover's localiser or controller dying (team.launch.py): no NodeFailed; the team explorer drops the rover."""
    result = rover_exit_handler('rover1/ekf', 'rover1')(event(code), context(True))
    assert result is None
    if code == 0:
        assert rover_exit_handler('rover1/ekf', 'rover1')(event(code), context(False)) is None


def _launch():
    pytest.importorskip('launch_ros', reason='ROS 2 `launch_ros` is not importable (not on PyPI; comes with a '
                        'colcon/apt ROS 2 install)')


def test_the_explorer_finishing_shuts_the_launch_down():
    _launch()
    from launch.actions import EmitEvent, LogInfo
    actions = exit_handler('explorer', shutdown_on_success=True)(event(0), context(False))
    assert isinstance(actions[0], LogInfo) and isinstance(actions[1], EmitEvent)
    assert actions[1].event.reason == 'explorer finished'


def _load(name):
    spec = importlib.util.spec_from_file_location(name.replace('.', '_'), ROOT / 'launch' / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _actions(module, overrides):
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    ctx = LaunchContext()
    ctx.launch_configurations.update(overrides)
    ld = module.generate_launch_description()
    for e in ld.entities:
        if isinstance(e, DeclareLaunchArgument):
            e.execute(ctx)
    return [a for e in ld.entities if isinstance(e, OpaqueFunction) for a in e.execute(ctx)]


@pytest.mark.parametrize('name, overrides', [('sim.launch.py', {}), ('explore.launch.py', {}),
                                             ('explore.launch.py', {'namespace': 'rover1'}),
                                             ('team.launch.py', {'rovers': '3'})])
def test_every_node_has_an_exit_handler(name, overrides):
    _launch()
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch_ros.actions import Node
    actions = _actions(_load(name), overrides)
    nodes = [a for a in actions if isinstance(a, Node)]
    handlers = [a.event_handler for a in actions if isinstance(a, RegisterEventHandler)
                and isinstance(a.event_handler, OnProcessExit)]
    assert nodes and len(handlers) == len(nodes)


def test_namespaced_launch_removes_its_parameter_files_at_shutdown():
    _launch()
    from launch.actions import RegisterEventHandler
    from launch.event_handlers import OnShutdown
    actions = _actions(_load('explore.launch.py'), {'namespace': 'rover1'})
    cleanup = [a.event_handler for a in actions if isinstance(a, RegisterEventHandler)
               and isinstance(a.event_handler, OnShutdown)]
    assert len(cleanup) == 1
    tmp = [d for d in Path(os.environ.get('TMPDIR', '/tmp')).glob('uncertain_bo_launch_*') if d.is_dir()]
    assert tmp, 'the re-keyed parameter files are written in a launch-owned folder'
    newest = max(tmp, key=lambda d: d.stat().st_mtime)
    from launch import LaunchContext
    from launch.events import Shutdown
    cleanup[0].handle(Shutdown(reason='test'), LaunchContext())   # as launch calls it (a real context)
    assert not newest.exists()

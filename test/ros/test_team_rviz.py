"""config/team.rviz against the team graph that launch/team.launch.py starts for rovers:=3: every topic it displays
is published by one of the graph's nodes (with the ekf, or with localiser:=pf), with the message type the display
reads and a QoS the display can receive; its marker namespaces are those the team explorer publishes.

The published topics come from the nodes themselves (built from the launch file's own parameter values), not
from a list. Own rclpy context on ROS domain 216 (this worktree's range 215-229).
"""
import ast
import importlib
from pathlib import Path

import pytest
import yaml

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rclpy.qos import DurabilityPolicy, ReliabilityPolicy  # noqa: E402

from .test_launch_files import _pure_functions  # noqa: E402

DOMAIN_ID = 216
ROOT = Path(__file__).resolve().parents[2]
RVIZ = ROOT / 'config' / 'team.rviz'
#: RViz2 display class -> the message type it subscribes (rviz_default_plugins)
READS = {'rviz_default_plugins/Map': 'nav_msgs/msg/OccupancyGrid',
         'rviz_default_plugins/MarkerArray': 'visualization_msgs/msg/MarkerArray',
         'rviz_default_plugins/Odometry': 'nav_msgs/msg/Odometry',
         'rviz_default_plugins/Pose': 'geometry_msgs/msg/PoseStamped',
         'rviz_default_plugins/PoseWithCovariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
         'rviz_default_plugins/Path': 'nav_msgs/msg/Path'}


def displays(items):
    """Every display, groups (rviz_common/Group) opened."""
    for d in items:
        if d['Class'] == 'rviz_common/Group':
            yield from displays(d['Displays'])
        else:
            yield d


def type_name(cls):
    module = cls.__module__.split('.')
    return f'{module[0]}/{module[1]}/{cls.__name__}'


def published(context, run_dir, localiser):
    """{fully qualified topic: (message type, QoS)} of the nodes team.launch.py starts for rovers:=3."""
    from uncertain_bo.ros.graph import NODES
    from uncertain_bo.ros.params import parameter_overrides
    from uncertain_bo.ros.team_explorer import TEAM_EXPLORER_PARAMS, TeamExplorerNode

    ns = _pure_functions('team.launch.py', {'LOCALISERS', 'team_parameters'})
    rovers, _, values = ns['team_parameters']({'rovers': '3', 'localiser': localiser, 'run_dir': str(run_dir)},
                                              str(ROOT))
    assert rovers == 3
    nodes, out = [], {}
    try:
        for key, v in values.items():
            namespace, _, name = key.rpartition('/')
            if name == 'team_explorer':
                nodes.append(TeamExplorerNode(context=context,
                                              parameter_overrides=parameter_overrides(v, TEAM_EXPLORER_PARAMS)))
                continue
            module, cls_name, spec_attr, _ = NODES[name]
            mod = importlib.import_module(module)
            nodes.append(getattr(mod, cls_name)(namespace=namespace or None, context=context,
                                                parameter_overrides=parameter_overrides(v, getattr(mod, spec_attr))))
        for node in nodes:
            for pub in node.publishers:
                out[pub.topic_name] = (type_name(pub.msg_type), pub.qos_profile)
    finally:
        for node in nodes:
            node.destroy_node()
    return out


def test_team_rviz_displays_what_the_team_graph_publishes(context, tmp_path):
    cfg = yaml.safe_load(RVIZ.read_text())
    vm = cfg['Visualization Manager']
    assert vm['Global Options']['Fixed Frame'] == 'map'
    shown = list(displays(vm['Displays']))
    graphs = {loc: published(context, tmp_path / loc, loc) for loc in ('ekf', 'pf')}
    for d in shown:
        topic = d['Topic']['Value']
        assert not topic.startswith('/'), f'{d["Name"]}: relative topics only'
        where = [loc for loc, pubs in graphs.items() if '/' + topic in pubs]
        assert where, f'{d["Name"]}: nobody publishes /{topic}'
        msg_type, qos = graphs[where[0]]['/' + topic]
        assert READS[d['Class']] == msg_type, f'{d["Name"]}: {d["Class"]} cannot read {msg_type}'
        if d['Topic']['Reliability Policy'] == 'Reliable':           # else RViz receives nothing (QoS mismatch)
            assert qos.reliability == ReliabilityPolicy.RELIABLE, d['Name']
        if d['Topic']['Durability Policy'] == 'Transient Local':
            assert qos.durability == DurabilityPolicy.TRANSIENT_LOCAL, d['Name']
    topics = {d['Topic']['Value'] for d in shown}
    # the shared map and markers; every rover's estimate and goal (the pf's estimate too)
    assert {'team_explorer/gp_mean', 'team_explorer/markers'} <= topics
    for i in range(3):
        assert {f'rover{i}/goal_pose', f'rover{i}/odometry/filtered', f'rover{i}/pose'} <= topics


def test_team_rviz_lists_the_marker_namespaces_of_a_team_of_three():
    from marker_scene import full_marker_scene
    from uncertain_bo.ros.operator_view import make_markers, rover_markers
    scene = full_marker_scene()
    ns = {m.ns for m in make_markers(scene, 'map', 1.0).markers}
    for i in range(3):
        ns |= {m.ns for m in rover_markers(f'rover{i}', i, scene.bounds, [[1.2, 1.0]], [2.0, 2.0], [5.0, 5.0], 'map',
                                           1.0).markers}
    shown = yaml.safe_load(RVIZ.read_text())['Visualization Manager']['Displays']
    markers = next(d for d in shown if d['Class'] == 'rviz_default_plugins/MarkerArray')
    assert markers['Topic']['Value'] == 'team_explorer/markers'
    assert set(markers['Namespaces']) == ns


def test_team_launch_starts_rviz_with_team_rviz_and_setup_installs_it():
    from .test_launch_files import _tree
    constants = {n.value for n in ast.walk(_tree('team.launch.py')) if isinstance(n, ast.Constant)}
    assert 'team.rviz' in constants and 'explorer.rviz' not in constants
    assert "glob('config/*.rviz')" in (ROOT / 'setup.py').read_text()

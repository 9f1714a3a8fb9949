"""config/explorer.rviz: valid YAML for RViz2, Fixed Frame map, and every explorer topic shown (relative
names, so that rviz2 started in a namespace shows that namespace's explorer)."""
from pathlib import Path

import yaml

RVIZ = Path(__file__).resolve().parents[2] / 'config' / 'explorer.rviz'


def test_rviz_config_shows_the_operator_view():
    cfg = yaml.safe_load(RVIZ.read_text())
    vm = cfg['Visualization Manager']
    assert vm['Global Options']['Fixed Frame'] == 'map'
    displays = {d['Topic']['Value']: d for d in vm['Displays']}
    assert {'explorer/markers', 'explorer/gp_mean', 'explorer/gp_std', 'odometry/filtered', 'goal_pose',
            'plan'} <= set(displays)
    assert not any(t.startswith('/') for t in displays), 'absolute topics ignore the namespace'
    for topic in ('explorer/gp_mean', 'explorer/gp_std'):
        d = displays[topic]
        assert d['Class'] == 'rviz_default_plugins/Map'
        assert d['Topic']['Durability Policy'] == 'Transient Local'   # maps are latched
    markers = displays['explorer/markers']
    assert markers['Class'] == 'rviz_default_plugins/MarkerArray'
    assert set(markers['Namespaces']) == {'execution', 'goal', 'measurements', 'recommendation',
                                          'search_bounds', 'status', 'targets'}
    assert all(d['Class'].startswith('rviz_default_plugins/') for d in vm['Displays'])


def test_marker_namespaces_match_the_node():
    import pytest
    pytest.importorskip('rclpy')
    from marker_scene import full_marker_scene
    from uncertain_bo.ros.operator_view import make_markers
    scene = full_marker_scene()
    ns = {m.ns for m in make_markers(scene, 'map', 1.0).markers}
    shown = yaml.safe_load(RVIZ.read_text())['Visualization Manager']['Displays']
    listed = next(d for d in shown if d['Class'] == 'rviz_default_plugins/MarkerArray')['Namespaces']
    assert ns == set(listed)

"""The shipped config/explorer.yaml: every parameter present, valid and equal to its spec default."""
from uncertain_bo.explorer import EXPLORER_PARAMS
from uncertain_bo.parameters import config_path, node_parameters, validate


def test_explorer_yaml_matches_specs():
    values = node_parameters([config_path('explorer.yaml')], 'explorer')
    node_only = {'pose_source', 'reading_type', 'tick_rate', 'exit_when_done', 'diagnostics_period',
                 'gp_map_cells', 'decide_in_background', 'cloud_receive_limit', 'goal_interface', 'nav2_action_name',
                 'nav2_behavior_tree'}
    core = {k: v for k, v in values.items() if k not in node_only}
    checked = validate(EXPLORER_PARAMS, core)
    for p in EXPLORER_PARAMS:
        assert p.name in values, f'{p.name} missing from explorer.yaml'
        assert checked[p.name] == p.check(p.default), f'explorer.{p.name}: yaml differs from the spec default'


def test_explorer_node_parameters_valid():
    import pytest
    pytest.importorskip('rclpy')
    from uncertain_bo.ros.explorer import EXPLORER_NODE_PARAMS
    values = node_parameters([config_path('explorer.yaml')], 'explorer')
    checked = validate(EXPLORER_NODE_PARAMS, values)
    assert set(checked) >= {p.name for p in EXPLORER_NODE_PARAMS}
    for p in EXPLORER_NODE_PARAMS:
        assert checked[p.name] == p.check(p.default), f'explorer.{p.name}: yaml differs from the spec default'

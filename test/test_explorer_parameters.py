"""The shipped config/explorer.yaml: every parameter present, valid and equal to its spec default; run_folder."""
import errno
import pathlib

import pytest

from uncertain_bo.explorer import EXPLORER_PARAMS
from uncertain_bo.explorer.parameters import run_folder
from uncertain_bo.parameters import ParameterError, config_path, node_parameters, validate


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


def test_a_run_dir_that_cannot_be_created_is_a_parameter_error(tmp_path, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, 'No space left on device', str(self))
    monkeypatch.setattr(pathlib.Path, 'mkdir', full)
    params = validate(EXPLORER_PARAMS, {'run_dir': str(tmp_path / 'run')})
    with pytest.raises(ParameterError, match="parameter 'run_dir': cannot create .*No space left on device"):
        run_folder(params)

"""The shipped config/explorer.yaml: every parameter present, valid and equal to its spec default; run_folder."""
import errno
import pathlib

import pytest

from uncertain_bo.explorer import EXPLORER_PARAMS
from uncertain_bo.explorer.parameters import run_folder
from uncertain_bo.parameters.specs import ParameterError, config_path, validate
from uncertain_bo.parameters.files import node_parameters


def test_explorer_yaml_matches_specs():
    values = node_parameters([config_path('explorer.yaml')], 'explorer')
    node_only = {'pose_source', 'reading_type', 'reading_unit', 'tick_rate', 'exit_when_done', 'diagnostics_period',
                 'gp_map_cells', 'decide_in_background', 'cloud_receive_limit', 'goal_interface', 'nav2_action_name',
                 'nav2_behavior_tree', 'particle_cloud_type', 'revised_path_topic', 'revised_path_std',
                 'record', 'record_path', 'foxglove_port'}
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


def test_run_time_execution_noise_std_is_the_learned_models_new_prior():
    """With learn_execution_noise on, an operator's execution_noise_std change used to be overwritten by the old
    prior at the next reached goal. Oracle: the shrinkage estimate (nu0 Sigma0 + sum(e e^T + Sigma^L)) / (nu0 + n)
    computed by hand with the NEW prior, over the goals reached before and after the change."""
    import numpy as np
    import torch
    from uncertain_bo.distributions import Gaussian
    from uncertain_bo.explorer.parameters import planner_from_parameters, update_planner
    from uncertain_bo.parameters.specs import defaults
    params = {**defaults(EXPLORER_PARAMS), 'search_bounds': [0.0, 20.0, 0.0, 20.0], 'learn_execution_noise': True,
              'execution_noise_prior_weight': 4.0, 'execution_noise_std': [0.75, 0.75]}
    planner = planner_from_parameters(params)
    cov_l = np.diag([0.04, 0.09])
    errors = [np.array([0.5, -0.3]), np.array([-0.2, 0.8]), np.array([0.1, 0.1])]

    def reach(i, e):
        target = np.array([5.0 + 3 * i, 6.0])
        planner.observe(torch.tensor(target), Gaussian(torch.tensor((target + e)[None]), torch.tensor(cov_l)), 1.0 + i)
    reach(0, errors[0])
    changed = {'execution_noise_std': [2.0, 1.0]}
    params.update(changed)
    update_planner(planner, params, changed)
    for i, e in enumerate(errors[1:], start=1):
        reach(i, e)
    evidence = sum(np.outer(e, e) + cov_l for e in errors)   # closed loop: + Sigma^L
    expected = (4.0 * np.diag([4.0, 1.0]) + evidence) / (4.0 + len(errors))
    assert np.allclose(planner.execution_noise.covariance.numpy(), expected, atol=1e-12)


def test_a_run_dir_that_cannot_be_created_is_a_parameter_error(tmp_path, monkeypatch):
    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, 'No space left on device', str(self))
    monkeypatch.setattr(pathlib.Path, 'mkdir', full)
    params = validate(EXPLORER_PARAMS, {'run_dir': str(tmp_path / 'run')})
    with pytest.raises(ParameterError, match="parameter 'run_dir': cannot create .*No space left on device"):
        run_folder(params)


def test_the_route_horizon_reaches_the_planner():
    from uncertain_bo.explorer.parameters import planner_from_parameters
    defaults = {p.name: p.check(p.default) for p in EXPLORER_PARAMS}
    assert planner_from_parameters(defaults).route_horizon == defaults['route_horizon'] == 3
    assert planner_from_parameters({**defaults, 'route_horizon': 1}).route_horizon == 1
    with pytest.raises(ParameterError, match='route_horizon'):
        validate(EXPLORER_PARAMS, {'route_horizon': 0})


def test_the_initial_design_is_at_most_as_large_as_its_tour_is_cheap_to_compute():
    """n_initial is at most 1000: the tour is computed when the first pose arrives (its cost grows with the square;
    10000 kept a node's loop busy for minutes). check and the node validate with the same spec."""
    assert validate(EXPLORER_PARAMS, {'n_initial': 1000})['n_initial'] == 1000
    with pytest.raises(ParameterError, match=r"n_initial.*1000"):
        validate(EXPLORER_PARAMS, {'n_initial': 10000})

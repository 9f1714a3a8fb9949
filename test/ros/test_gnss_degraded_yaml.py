"""The shipped heteroscedastic scenario config/gnss_degraded.yaml: loads, is commented, and does what it says."""
import re
from pathlib import Path

import numpy as np
import pytest

from uncertain_bo.parameters.rcl_yaml import load_param_file
from uncertain_bo.sim.mission import mission_parameters
from uncertain_bo.sim.world import SimWorld

YAML = Path(__file__).resolve().parents[2] / 'config' / 'gnss_degraded.yaml'


def test_loads_on_top_of_the_shipped_files():
    params = mission_parameters(files=[str(YAML)])
    sim = params['sim_rover']
    assert sim['field'] == 'jacksboro-rough' and sim['fix_std'] == 0.3
    assert sim['degraded_fix_std'] >= 3.0 and 0.0 < sim['degraded_fix_dropout'] < 1.0
    xmin, xmax, ymin, ymax = sim['degraded_zone']
    fx0, fx1, fy0, fy1 = sim['field_extent']
    # the stated rule: the east half, x = centre line the only zone edge inside the field
    assert xmin == 0.5 * (fx0 + fx1) and xmax > fx1 and ymin < fy0 and ymax > fy1
    assert params['explorer']['search_bounds'] == sim['field_extent']


def test_every_parameter_has_a_comment():
    lines = YAML.read_text().splitlines()
    assert set(load_param_file(YAML)) == {'sim_rover'}
    for i, line in enumerate(lines):
        m = re.match(r'^ {4}([a-z_][a-z0-9_]*):', line)
        if m:
            assert lines[i - 1].strip().startswith('#'), f'gnss_degraded.yaml:{i + 1}: {m.group(1)} has no comment'


def test_fixes_are_precise_outside_and_poor_and_intermittent_inside():
    sim = mission_parameters(files=[str(YAML)])['sim_rover']
    for x, std, lost in [(50.0, 0.3, 0.0), (150.0, 3.0, 0.5)]:
        w = SimWorld(None, {**sim, 'initial_x': x, 'fix_rate': 10.0})
        steps = [w.step(0.0, 0.0) for _ in range(2000)]
        fixes = [s.fix for s in steps if s.fix is not None]
        assert all(np.allclose(f.cov, std ** 2 * np.eye(2)) for f in fixes)
        assert 1 - len(fixes) / len(steps) == pytest.approx(lost, abs=4 * np.sqrt(0.25 / 2000))


def test_rclpy_reads_the_file():
    rclpy_parameter = pytest.importorskip('rclpy.parameter')
    got = rclpy_parameter.parameter_dict_from_yaml_file(str(YAML), target_nodes=['sim_rover'])
    assert list(got['degraded_zone'].value.double_array_value) == [100.0, 300.0, -100.0, 300.0]
    assert got['field'].value.string_value == 'jacksboro-rough'


def test_sim_rover_node_publishes_the_degraded_covariance():
    # the ROS node wraps the same SimWorld: inside the zone its position_fix messages carry 3 m std, and some
    # due fixes are never published (no DDS traffic needed: the publisher is observed directly)
    rclpy = pytest.importorskip('rclpy')
    import os

    from uncertain_bo.parameters.files import node_parameters
    from uncertain_bo.ros.params import parameter_overrides
    from uncertain_bo.ros.sim_rover import SIM_ROVER_PARAMS, SimRoverNode

    values = node_parameters([str(YAML.parent / 'sim.yaml'), str(YAML)], 'sim_rover')
    values.update(initial_x=150.0, fix_rate=10.0, use_sim_time=False)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=90 + os.getpid() % 10)
    try:
        node = SimRoverNode(context=ctx, parameter_overrides=parameter_overrides(values, SIM_ROVER_PARAMS))
        try:
            sent = []
            node._pub_fix.publish = sent.append
            for _ in range(400):
                node._step()
            assert 100 < len(sent) < 300                       # about half of the 400 due fixes are lost
            for msg in sent:
                cov = np.array(msg.pose.covariance).reshape(6, 6)
                assert np.allclose(cov[:2, :2], 9.0 * np.eye(2))
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)

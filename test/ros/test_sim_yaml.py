"""The shipped config/sim.yaml: complete, commented, valid against the node parameter specs.

ROS domain (node construction only, nothing is exchanged): 90 + (pid % 10).
"""
import os
import re
from pathlib import Path

import pytest

from uncertain_bo.parameters.specs import validate
from uncertain_bo.parameters.rcl_yaml import load_param_file

rclpy = pytest.importorskip('rclpy')

from uncertain_bo.ros.ekf import EKF_ALL_PARAMS, EkfNode  # noqa: E402
from uncertain_bo.ros.particle_filter import PF_ALL_PARAMS, ParticleFilterNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.pure_pursuit import PURE_PURSUIT_ALL_PARAMS, PurePursuitNode  # noqa: E402
from uncertain_bo.ros.sim_rover import SIM_ROVER_PARAMS, SimRoverNode  # noqa: E402

YAML = Path(__file__).resolve().parents[2] / 'config' / 'sim.yaml'
NODES = {'sim_rover': (SIM_ROVER_PARAMS, SimRoverNode), 'ekf': (EKF_ALL_PARAMS, EkfNode),
         'particle_filter': (PF_ALL_PARAMS, ParticleFilterNode),
         'pure_pursuit': (PURE_PURSUIT_ALL_PARAMS, PurePursuitNode)}


def test_every_parameter_present_and_valid():
    data = load_param_file(YAML)
    assert set(data) == set(NODES)
    for node, (specs, _) in NODES.items():
        values = data[node]
        missing = [s.name for s in specs if s.name not in values]
        assert not missing, f'{node}: parameters missing from sim.yaml: {missing}'
        checked = validate(specs, values)                  # raises on unknown names and bad values
        for s in specs:   # the shipped file documents the defaults
            assert checked[s.name] == s.check(s.default), \
                f'{node}.{s.name}: sim.yaml differs from the spec default; update one of them'
    assert data['ekf']['use_sim_time'] is True and data['pure_pursuit']['use_sim_time'] is True
    assert data['sim_rover']['use_sim_time'] is False
    # the estimate starts where the rover is
    for k in ('initial_x', 'initial_y', 'initial_yaw'):
        assert data['ekf'][k] == data['particle_filter'][k] == data['sim_rover'][k]
    assert data['particle_filter']['use_sim_time'] is True
    # parameters the two localisers share are shipped with the same values
    for k in set(data['ekf']) & set(data['particle_filter']):
        assert data['ekf'][k] == data['particle_filter'][k], k


def test_every_parameter_has_a_comment():
    lines = YAML.read_text().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^ {4}([a-z_][a-z0-9_]*):', line)
        if not m:
            continue
        # a parameter line is preceded by a comment, possibly shared with the lines of its group
        j = i - 1
        while j >= 0 and re.match(r'^ {4}[a-z_][a-z0-9_]*:', lines[j]):
            j -= 1
        assert j >= 0 and lines[j].strip().startswith('#'), f'sim.yaml:{i + 1}: {m.group(1)} has no comment'


def test_rclpy_reads_the_file_and_the_nodes_accept_it():
    from rclpy.parameter import parameter_dict_from_yaml_file
    for node in NODES:
        params = parameter_dict_from_yaml_file(str(YAML), target_nodes=[node])
        assert set(params) >= {s.name for s in NODES[node][0]}
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=90 + os.getpid() % 10)
    try:
        data = load_param_file(YAML)
        for name, (specs, cls) in NODES.items():
            node = cls(context=ctx, parameter_overrides=parameter_overrides(data[name], specs))
            try:
                assert node.p == validate(specs, {k: v for k, v in data[name].items() if k != 'use_sim_time'})
                assert node.get_parameter('use_sim_time').value == data[name]['use_sim_time']
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)

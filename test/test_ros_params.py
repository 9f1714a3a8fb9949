"""Tests for uncertain_bo.ros.params: descriptors, start-up validation, run-time validation.

ROS domain: this module uses its own rclpy context on domain 1 + (pid % 39) (1..38), apart from the session
domain of conftest.py (100..199) and test_sim_nodes.py (40..89), so concurrent test runs on one machine
and the modules of one run do not see each other's nodes. Domain ids must stay below 233.
"""
import os

import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rcl_interfaces.msg import ParameterType  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from uncertain_bo.parameters import Param, ParameterError  # noqa: E402
from uncertain_bo.ros.params import declare_parameters, make_descriptor, parameter_overrides  # noqa: E402

DOMAIN_ID = 1 + os.getpid() % 39

SPECS = [
    Param('rate', 2.0, 'how often (Hz)', range=(0.0, 10.0)),
    Param('count', 3, 'how many (integer)', range=(1, 5)),
    Param('mode', 'fast', 'mode', choices=('fast', 'slow')),
    Param('frame', 'map', 'frame id', read_only=True),
    Param('flag', False, 'a switch'),
    Param('extent', [0.0, 1.0, 0.0, 1.0], 'rectangle (m)', range=(-10.0, 10.0), length=4),
]


def make_node(context, overrides=(), name='p'):
    return rclpy.create_node(name, context=context, parameter_overrides=list(overrides))


def test_descriptors_carry_description_range_choices_read_only():
    d = make_descriptor(SPECS[0])
    assert d.description == 'how often (Hz)' and d.dynamic_typing
    assert (d.floating_point_range[0].from_value, d.floating_point_range[0].to_value) == (0.0, 10.0)
    d = make_descriptor(SPECS[1])
    assert d.type == ParameterType.PARAMETER_INTEGER
    assert (d.integer_range[0].from_value, d.integer_range[0].to_value) == (1, 5)
    assert "'fast', 'slow'" in make_descriptor(SPECS[2]).additional_constraints
    assert make_descriptor(SPECS[3]).read_only


def test_defaults_and_overrides(context):
    node = make_node(context, [Parameter('rate', value=3), Parameter('mode', value='slow'),
                               Parameter('extent', value=[0, 2, 0, 3])])
    try:
        values = declare_parameters(node, SPECS)
        assert values['rate'] == 3.0 and isinstance(values['rate'], float)   # YAML `3` accepted
        assert values['mode'] == 'slow' and values['count'] == 3 and values['flag'] is False
        assert values['extent'] == [0.0, 2.0, 0.0, 3.0]
        assert node.describe_parameter('count').description == 'how many (integer)'
    finally:
        node.destroy_node()


@pytest.mark.parametrize('name, value, pattern', [
    ('rate', 11.0, r"'rate' = 11.0 is invalid: out of range; allowed: a float in \[0, 10\]"),
    ('rate', 'high', r"'rate' = 'high' is invalid: expected a number"),
    ('count', 9, r"'count' = 9 is invalid: out of range; allowed: a int in \[1, 5\]"),
    ('mode', 'medium',
     r"'mode' = 'medium' is invalid: not an allowed choice; allowed: one of 'fast', 'slow'"),
    ('extent', [0.0, 1.0, 0.0], r"'extent' .* expected 4 elements"),
    ('extent', [0.0, 1.0, 0.0, 99.0], r"'extent' .* out of range"),
])
def test_invalid_startup_values_fail_clearly(context, name, value, pattern):
    node = make_node(context, [Parameter(name, value=value)], name='bad')
    try:
        with pytest.raises(ParameterError, match=r"node 'bad': parameter " + pattern):
            declare_parameters(node, SPECS)
    finally:
        node.destroy_node()


def test_runtime_changes_validated_and_applied(context):
    node = make_node(context)
    changes = []
    try:
        values = declare_parameters(node, SPECS, on_change=changes.append)
        res = node.set_parameters([Parameter('rate', value=20.0)])[0]
        assert not res.successful and 'out of range' in res.reason
        res = node.set_parameters([Parameter('rate', value=7)])[0]          # int accepted for a float
        assert res.successful and values['rate'] == 7.0 and changes == [{'rate': 7.0}]
        res = node.set_parameters([Parameter('mode', value='warp')])[0]
        assert not res.successful and "allowed: one of 'fast', 'slow'" in res.reason
        assert values['mode'] == 'fast'
        res = node.set_parameters([Parameter('frame', value='odom')])[0]
        assert not res.successful and 'read-only' in res.reason
        assert values['frame'] == 'map'
        res = node.set_parameters([Parameter('extent', value=[1.0, 2.0, 3.0, 4.0])])[0]
        assert res.successful and values['extent'] == [1.0, 2.0, 3.0, 4.0]
    finally:
        node.destroy_node()


def test_parameter_overrides_helper(context):
    ps = parameter_overrides({'rate': 4, 'extent': (0, 1.5, 0, 2), 'use_sim_time': True}, specs=SPECS)
    by = {p.name: p.value for p in ps}
    assert by == {'rate': 4.0, 'extent': [0.0, 1.5, 0.0, 2.0], 'use_sim_time': True}
    node = make_node(context, ps, name='helper')
    try:
        values = declare_parameters(node, SPECS)
        assert values['extent'] == [0.0, 1.5, 0.0, 2.0]
        assert node.get_parameter('use_sim_time').value is True
    finally:
        node.destroy_node()
    with pytest.raises(ParameterError, match="'count'"):
        parameter_overrides({'count': 0}, specs=SPECS)


def test_node_with_invalid_parameter_fails_with_parameter_error(context):
    from uncertain_bo.ros.ekf import EkfNode
    with pytest.raises(ParameterError, match=r"node 'ekf': parameter 'fix_gate_mahalanobis' = -1.0"):
        EkfNode(context=context, parameter_overrides=[Parameter('fix_gate_mahalanobis', value=-1.0)])


def test_integers_for_float_parameters_stay_doubles(context):
    """`ros2 param set /explorer beta 2` and `rate: 3` in YAML: the parameter stays a double."""
    node = make_node(context, [Parameter('rate', value=3), Parameter('extent', value=[0, 2, 0, 3])], name='dbl')
    try:
        values = declare_parameters(node, SPECS)
        assert node.get_parameter('rate').type_ == Parameter.Type.DOUBLE and values['rate'] == 3.0
        assert node.get_parameter('extent').type_ == Parameter.Type.DOUBLE_ARRAY
        result = node.set_parameters([Parameter('rate', value=2)])[0]
        assert result.successful
        p = node.get_parameter('rate')
        assert p.type_ == Parameter.Type.DOUBLE and p.value == 2.0 and isinstance(values['rate'], float)
        assert node.set_parameters([Parameter('extent', value=[0, 5, 0, 5])])[0].successful
        assert node.get_parameter('extent').type_ == Parameter.Type.DOUBLE_ARRAY
        assert not node.set_parameters([Parameter('rate', value=20)])[0].successful   # still range-checked
        assert node.get_parameter('rate').value == 2.0
        assert node.set_parameters([Parameter('count', value=4)])[0].successful        # ints stay ints
        assert node.get_parameter('count').type_ == Parameter.Type.INTEGER
    finally:
        node.destroy_node()

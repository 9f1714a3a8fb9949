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

from uncertain_bo.parameters.specs import Param, ParameterError  # noqa: E402
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
    """What is allowed is the descriptor's text (``ros2 param describe``: Constraints); the spec judges values, so
    rclpy's own type and range checks (which run first, with messages naming neither value nor parameter) are off."""
    d = make_descriptor(SPECS[0])
    assert d.description == 'how often (Hz)' and d.dynamic_typing
    assert d.additional_constraints == 'allowed: a float in [0, 10]' and not d.floating_point_range
    d = make_descriptor(SPECS[1])
    assert d.dynamic_typing and d.type == ParameterType.PARAMETER_NOT_SET and not d.integer_range
    assert d.additional_constraints == 'allowed: a int in [1, 5]'
    assert "'fast', 'slow'" in make_descriptor(SPECS[2]).additional_constraints
    assert make_descriptor(SPECS[3]).read_only
    allowed = make_descriptor(SPECS[5]).additional_constraints
    assert allowed == 'allowed: a list of 4 numbers each in [-10, 10]; length 4'


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


@pytest.mark.parametrize('name, value, reason', [
    # rclpy's own reasons were "Wrong parameter type, expected 'Type.INTEGER' got 'Type.STRING'" and
    # "Parameter count out of range. Min: 1, Max: 5, value: 9" (descriptor checks, applied before any callback)
    ('count', 'many', "parameter 'count' = 'many' is invalid: expected a number; allowed: a int in [1, 5]"),
    ('count', 9, "parameter 'count' = 9 is invalid: out of range; allowed: a int in [1, 5]"),
    ('count', 2.5, "parameter 'count' = 2.5 is invalid: expected an integer; allowed: a int in [1, 5]"),
    ('rate', 20.0, "parameter 'rate' = 20.0 is invalid: out of range; allowed: a float in [0, 10]"),
    ('rate', 'fast', "parameter 'rate' = 'fast' is invalid: expected a number; allowed: a float in [0, 10]"),
    ('flag', 1, "parameter 'flag' = 1 is invalid: expected true or false; allowed: a bool"),
    ('mode', 3, "parameter 'mode' = 3 is invalid: expected a string; allowed: one of 'fast', 'slow'"),
    ('extent', [0.0, 1.0], "parameter 'extent' = [0.0, 1.0] is invalid: expected 4 elements, got 2; allowed: a "
                           'list of 4 numbers each in [-10, 10]'),
])
def test_rejected_runtime_changes_say_parameter_value_and_what_is_allowed(context, name, value, reason):
    """``ros2 param set`` prints the result's reason: it names the parameter, the value and what is allowed."""
    node = make_node(context, name='why')
    try:
        values = declare_parameters(node, SPECS)
        before = node.get_parameter(name).value
        res = node.set_parameters([Parameter(name, value=value)])[0]
        assert not res.successful and res.reason == reason
        assert _plain(node.get_parameter(name).value) == _plain(before) and _plain(values[name]) == _plain(before)
    finally:
        node.destroy_node()


def test_whole_doubles_for_integer_parameters_stay_integers(context):
    """Integer parameters are dynamically typed now; a whole double (``ros2 param set /n count 4.0``, ``count:
    4.0`` in a file) is stored as the integer it means, so the parameter's type never changes."""
    node = make_node(context, [Parameter('count', value=2.0)], name='whole')
    try:
        values = declare_parameters(node, SPECS)
        assert node.get_parameter('count').type_ == Parameter.Type.INTEGER and values['count'] == 2
        assert node.set_parameters([Parameter('count', value=4.0)])[0].successful
        p = node.get_parameter('count')
        assert p.type_ == Parameter.Type.INTEGER and p.value == 4 and values['count'] == 4
    finally:
        node.destroy_node()


def _plain(v):
    return list(v) if hasattr(v, '__len__') and not isinstance(v, str) else v


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


def test_an_undeclared_override_is_refused_with_the_closest_name(context):
    """rclpy keeps an override the node never declares and says nothing: ``parameter_overrides`` with a
    misspelling started the node with the default. rclpy's own parameters pass."""
    node = make_node(context, [Parameter('rat', value=3.0), Parameter('use_sim_time', value=False),
                               Parameter('qos_overrides./x.publisher.depth', value=5)], name='typo')
    try:
        with pytest.raises(ParameterError) as e:
            declare_parameters(node, SPECS)
        assert str(e.value) == ("parameter_overrides: 'rat' is not a parameter of node /typo (did you mean "
                                "'rate'?)")
    finally:
        node.destroy_node()


def test_undeclared_names_are_told_apart_by_where_they_were_given(tmp_path):
    """Through rcl: a node's own section (``p:``, ``/**/p:``) and ``-p`` are judged, each named with its file and
    line or its rule; a wildcard section's names (``/**:``) may be other nodes' and pass."""
    from uncertain_bo.ros.params import set_command_line
    f = tmp_path / 'p.yaml'
    f.write_text('/**:\n  ros__parameters:\n    frequency: 30.0\n    rate: 2.0\n'
                 'p:\n  ros__parameters:\n    rate: 3.0\n    cuont: 2\n'
                 '/**/p:\n  ros__parameters:\n    zzz: true\n')
    args = ['p', '--ros-args', '--params-file', str(f), '-p', 'mode:=slow', '-p', 'flg:=true']
    ctx = rclpy.Context()
    rclpy.init(args=args, context=ctx, domain_id=DOMAIN_ID)
    set_command_line(args, context=ctx)
    node = rclpy.create_node('p', context=ctx)
    try:
        with pytest.raises(ParameterError) as e:
            declare_parameters(node, SPECS)
        assert str(e.value).split('; ') == [
            f"{f} line 8: 'cuont' is not a parameter of node /p (did you mean 'count'?)",
            f"{f} line 11: 'zzz' is not a parameter of node /p",
            "the command line (-p flg:=true): 'flg' is not a parameter of node /p (did you mean 'flag'?)"]
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    g = tmp_path / 'q.yaml'   # the same wildcard alone: the node starts, the wildcard's own value applied
    g.write_text('/**:\n  ros__parameters:\n    frequency: 30.0\n    rate: 2.5\n')
    args = ['p', '--ros-args', '--params-file', str(g)]
    ctx = rclpy.Context()
    rclpy.init(args=args, context=ctx, domain_id=DOMAIN_ID)
    set_command_line(args, context=ctx)
    node = rclpy.create_node('p', context=ctx)
    try:
        assert declare_parameters(node, SPECS)['rate'] == 2.5
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_a_command_line_is_forgotten_when_its_context_shuts_down(tmp_path, context):
    """run_node records its command line for the undeclared-parameter check; it outlived run_node, so a later node
    of the process (test_spin.py's run, then this file's nodes) was judged by a parameter file deleted since
    (``cannot read parameter file ...``). The command line is its context's, until that context shuts down."""
    from uncertain_bo.ros.params import set_command_line
    gone = tmp_path / 'gone.yaml'
    gone.write_text('p:\n  ros__parameters:\n    rate: 2.0\n')
    args = ['p', '--ros-args', '--params-file', str(gone)]
    ctx = rclpy.Context()
    rclpy.init(args=args, context=ctx, domain_id=DOMAIN_ID)
    set_command_line(args, context=ctx)
    rclpy.shutdown(context=ctx)
    gone.unlink()
    node = make_node(context, [Parameter('rat', value=3.0)], name='again')
    try:
        with pytest.raises(ParameterError) as e:
            declare_parameters(node, SPECS)
        assert str(e.value) == "parameter_overrides: 'rat' is not a parameter of node /again (did you mean 'rate'?)"
    finally:
        node.destroy_node()

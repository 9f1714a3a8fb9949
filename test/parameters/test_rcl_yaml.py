"""ROS 2 parameter files read as rcl reads them (uncertain_bo.parameters.rcl_yaml), with rcl itself as the oracle.

Every case is a file; rcl (through rclpy: ``rclpy.init(args=[..., '--params-file', f])`` and the overrides a
node gets) decides whether the file is accepted and what each parameter's value is, and our reader must agree.
The cases cover what broke a real ``ros2 launch``: launch_ros's ``!!python/tuple`` list overrides, ``/**``
wildcards, namespaced and nested section keys, and rcl's scalar typing.
"""
import math
import os
import re

import pytest
import yaml

from uncertain_bo.parameters.files import node_parameters
from uncertain_bo.parameters.rcl_yaml import (MAX_FILE_BYTES, format_param_file, load_param_file, parameter_rule_value,
                                              rcl_scalar, read_param_file)
from uncertain_bo.parameters.specs import ParameterError

DOMAIN_ID = 60 + os.getpid() % 20

#: name -> file text (every case is checked against rcl for the nodes of FQNS)
CASES = {
    'launch_ros tuple override': yaml.dump({'/explorer': {'ros__parameters': {
        'search_bounds': (0.0, 60.0, 0.0, 40.0), 'use_sim_time': True, 'max_measurements': 3,
        'run_dir': '/tmp/r1', 'method': 'ugp_ucb', 'beta': 2}}}, default_flow_style=False),
    'wildcard': '/**:\n  ros__parameters:\n    search_bounds: [0.0, 60.0, 0.0, 40.0]\n    use_sim_time: true\n',
    'namespaced absolute': '/rover1/explorer:\n  ros__parameters:\n    beta: 2.0\n',
    'namespaced relative': 'rover1/explorer:\n  ros__parameters:\n    beta: 2.5\n',
    'nested namespace keys': 'rover1:\n  explorer:\n    ros__parameters:\n      beta: 1.5\n      grp:\n        a: 1\n',
    'wildcard patterns': ('/explorer:\n  ros__parameters:\n    a: 1\n    b: 1\n/**:\n  ros__parameters:\n'
                          '    a: 2\n    c: 2\n/**/explorer:\n  ros__parameters:\n    c: 3\n    d: 3\n'
                          '/*:\n  ros__parameters:\n    d: 4\n    e: 4\n'),
    'rcl scalar typing': ('explorer:\n  ros__parameters:\n    a: ~\n    b: null\n    c: y\n    d: 0x10\n'
                          '    e: 010\n    f: 1_000\n    g: 1e400\n    h: .5\n    i: "1"\n    j: !!str 2\n'
                          '    k: 1e3\n    l: inf\n    m: -.inf\n    n: 0x1p3\n    o: \'  3\'\n    q: +5\n'
                          '    r: 2019-01-01\n    s: 1e-400\n    t: 4.9e-324\n    u: 5e\n    v: Infinity\n'
                          '    w: 1.\n    x: -0x10\n    y2: 9223372036854775808\n    z: 08\n    aa: "yes"\n'
                          '    ab: !!bool "true"\n    ac: !foo 3\n    ad: |\n      12\n    ae: NO\n    af: -0.0\n'),
    'tagged arrays': ('explorer:\n  ros__parameters:\n    a: !!python/tuple [1.0, 2.0]\n    b: !!python/tuple\n'
                      '    - p\n    - q\n    c: !!float 3\n'),
    'string and bool arrays': 'explorer:\n  ros__parameters:\n    a: [x, "1", \'true\']\n    b: [true, off, Y]\n',
    'keys after the parameters': ('explorer:\n  ros__parameters:\n    a: 1\n  other:\n    ros__parameters:\n'
                                  '      b: 1\n'),
    'two documents': 'explorer:\n  ros__parameters:\n    a: 1\n---\nexplorer:\n  ros__parameters:\n    b: 2\n',
    'empty file': '',
    'comments only': '# nothing here\n',
    'bare scalar': 'beta\n',
    'empty parameters': 'explorer:\n  ros__parameters: {}\n',
    # refused by rcl
    'mixed array': 'explorer:\n  ros__parameters:\n    search_bounds: [0, 60, 0, 40.0]\n',
    'nested array': 'explorer:\n  ros__parameters:\n    a: [[1, 2], [3]]\n',
    'no value': 'explorer:\n  ros__parameters:\n    a:\n',
    'value outside the parameters': 'explorer:\n  ros__parameters:\n    a: 1\n  other: 2\n',
    'flat layout': 'explorer:\n  beta: 2.0\n',
    'top-level value': 'beta: 2.0\n',
    'empty ros__parameters': 'explorer:\n  ros__parameters:\n',
    'alias': 'explorer:\n  ros__parameters:\n    a: &x 1\n    b: *x\n',
    'node name with a digit': '1explorer:\n  ros__parameters:\n    a: 1\n',
    'list at top level': '- a\n',
    'broken YAML': 'explorer:\n  ros__parameters:\n    beta: [1,\n',
}

FQNS = ['/explorer', '/rover1/explorer', '/ns2/pure_pursuit']


def _plain(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return [v.item() if hasattr(v, 'item') else v for v in value]


def rcl_reads(path):
    """What rcl makes of ``path``: ``('error', message)`` or ``('ok', {fqn: overrides})``."""
    rclpy = pytest.importorskip('rclpy')
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    ctx = rclpy.Context()
    try:
        rclpy.init(context=ctx, args=['x', '--ros-args', '--params-file', str(path)], domain_id=DOMAIN_ID,
                   signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # noqa: BLE001 - rclpy's RCLError
        return 'error', str(exc)
    try:
        out = {}
        for fqn in FQNS:
            ns, name = fqn.rsplit('/', 1)
            node = Node(name, namespace=ns or '/', context=ctx)
            out[fqn] = {k: _plain(v.value) for k, v in node._parameter_overrides.items()}
            node.destroy_node()
        return 'ok', out
    finally:
        rclpy.shutdown(context=ctx)


def ours(path):
    try:
        return 'ok', {fqn: node_parameters([path], fqn) for fqn in FQNS}
    except ParameterError as exc:
        return 'error', str(exc)


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@pytest.mark.ros
@pytest.mark.parametrize('name', sorted(CASES))
def test_reads_every_file_as_rcl_does(name, tmp_path):
    f = tmp_path / 'params.yaml'
    f.write_text(CASES[name])
    want, got = rcl_reads(f), ours(f)
    assert want[0] == got[0], f'rcl: {want}\nours: {got}'
    if want[0] == 'ok':
        for fqn in FQNS:
            assert set(want[1][fqn]) == set(got[1][fqn]), fqn
            for k, v in want[1][fqn].items():
                assert same(v, got[1][fqn][k]), (fqn, k, v, got[1][fqn][k])
    else:
        assert f'parameter file {f}' in got[1] and ('line' in got[1] or 'not valid YAML' in got[1])


def test_launch_ros_tuple_file_is_read_without_the_python_tag(tmp_path):
    """The file launch_ros writes for ``Node(parameters=[{'search_bounds': [...]}])``: yaml.dump of a tuple."""
    f = tmp_path / 'launch_params_x'
    f.write_text(CASES['launch_ros tuple override'])
    assert '!!python/tuple' in f.read_text()
    with pytest.raises(yaml.YAMLError):      # what the start-up check used to do
        yaml.safe_load(f.read_text())
    assert node_parameters([f], 'explorer')['search_bounds'] == [0.0, 60.0, 0.0, 40.0]


@pytest.mark.parametrize('text, value', [('true', True), ('on', True), ('n', False), ('0x10', 16), ('010', 8),
                                         ('08', 8.0), ('1_000', '1_000'), ('1e400', '1e400'), ('.nan', math.nan),
                                         ('-.inf', -math.inf), ('0x1p3', 8.0), ('~', '~'), ('2.5', 2.5)])
def test_scalars_are_typed_by_rcl_rules(text, value):
    assert same(rcl_scalar(text), value)
    assert rcl_scalar(text, "'") == text


def test_written_files_read_back_to_the_same_values(tmp_path):
    """Strings that rcl would type (``y``, ``1``, ``0x10``) stay strings; floats stay floats."""
    values = {'s': ['y', '1', '0x10', 'on', '', 'a "quoted" \\ one', 'é'], 'f': [1.0, 2e20, math.inf, -0.0],
              'i': 7, 'b': False, 'x': 'n', 'nan': math.nan, 'e': 1e-300}
    f = tmp_path / 'out.yaml'
    f.write_text(format_param_file([('/rover1/explorer', values), ('/**', {})]))
    back = load_param_file(f)
    assert set(back) == {'rover1/explorer', '/**'}
    for k, v in values.items():
        assert same(back['rover1/explorer'][k], v), k
    if rcl_reads(f)[0] != 'error':
        got = rcl_reads(f)[1]['/rover1/explorer']
        for k, v in values.items():
            assert same(got[k], v), k


def test_errors_name_the_file_and_line(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text('explorer:\n  ros__parameters:\n    search_bounds: [0, 60, 0, 40.0]\n')
    with pytest.raises(ParameterError, match=r"p.yaml line 3: parameter 'search_bounds': an array holds values of "
                                             r"one type, but '40.0' is a double among integers \(write every number "
                                             r'with a decimal point'):
        read_param_file(f)
    with pytest.raises(ParameterError, match='cannot read parameter file'):
        read_param_file(tmp_path / 'missing.yaml')


@pytest.mark.ros
@pytest.mark.parametrize('rule', ['search_bounds:=[0, 60.0, 0, 40.0]', 'a:=[1, 2]', 'a:=0x10', 'a:=yes', 'a:=1e3',
                                  'a:={b: 1}', 'a:=[true, 1]', 'explorer:a:=2.5', "a:='5'"])
def test_parameter_rules_are_read_as_rcl_reads_them(rule):
    """``-p NAME:=VALUE`` as rcl reads it (rcl is the oracle): the same value, or a refusal that says why (rcl's
    own: "Couldn't parse parameter override rule ... Sequence should be of same type")."""
    rclpy = pytest.importorskip('rclpy')
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions
    ctx = rclpy.Context()
    try:
        rclpy.init(context=ctx, args=['x', '--ros-args', '-p', rule], domain_id=DOMAIN_ID,
                   signal_handler_options=SignalHandlerOptions.NO)
    except Exception:  # noqa: BLE001 - rclpy's RCLError
        with pytest.raises(ParameterError, match=rf'^-p {re.escape(rule)}: '):
            parameter_rule_value(rule)
        return
    try:
        name = rule.split(':=')[0].rsplit(':', 1)[-1]
        node = Node('explorer', context=ctx)
        want = _plain(node._parameter_overrides[name].value)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    assert same(parameter_rule_value(rule), want)


@pytest.mark.parametrize('kind', ['device', 'folder', 'fifo', 'oversized'])
def test_special_and_oversized_files_are_refused_before_they_are_read(kind, tmp_path):
    """``check /dev/zero`` read the device until MemoryError; a named pipe would block for ever."""
    f = {'device': lambda: '/dev/zero', 'folder': lambda: str(tmp_path)}.get(kind, lambda: None)()
    if kind == 'fifo':
        f = str(tmp_path / 'pipe')
        os.mkfifo(f)
    elif kind == 'oversized':
        f = str(tmp_path / 'big.yaml')
        with open(f, 'w') as h:
            h.write('#' * (MAX_FILE_BYTES + 1))
    what = {'device': 'a character device', 'folder': 'a folder', 'fifo': 'a named pipe'}
    match = (rf'parameter file {re.escape(f)} is not a regular file \({what[kind]}\)' if kind in what else
             r'is 1\.0 MiB: a parameter file holds at most 1 MiB')
    with pytest.raises(ParameterError, match=match):
        read_param_file(f)

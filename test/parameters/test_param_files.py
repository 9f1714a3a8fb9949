"""What each node gets from ROS 2 parameter files (uncertain_bo.parameters.files): several files merged by section
key and sections matched to nodes as rcl does (rcl itself the oracle), undeclared names found in the node's own
sections."""
import os

import pytest

from uncertain_bo.parameters.files import (UnknownParameter, merged_sections, namespaced_sections, node_parameters,
                                           unknown_parameters)

DOMAIN_ID = 60 + os.getpid() % 20


def test_several_files_merge_by_section_key_like_rcl(tmp_path):
    """A later file's ``/**`` does not override an earlier file's ``explorer:`` (rcl keeps one entry per key,
    at its first place)."""
    a, b, c = tmp_path / 'a.yaml', tmp_path / 'b.yaml', tmp_path / 'c.yaml'
    a.write_text('/**:\n  ros__parameters:\n    x: 1\nexplorer:\n  ros__parameters:\n    x: 2\n')
    b.write_text('/**:\n  ros__parameters:\n    x: 3\n    y: 3\n')
    c.write_text('/explorer:\n  ros__parameters:\n    y: 9\n')
    assert [s.key for s in merged_sections([a, b, c])] == ['/**', 'explorer', '/explorer']
    assert node_parameters([a, b], 'explorer') == {'x': 2, 'y': 3}
    assert node_parameters([a, b, c], 'explorer') == {'x': 2, 'y': 9}
    rclpy = pytest.importorskip('rclpy')  # noqa: F841 - the oracle
    for files in ([a, b], [a, b, c]):
        args = [x for f in files for x in ('--params-file', str(f))]
        ctx = __import__('rclpy').Context()
        from rclpy.node import Node
        from rclpy.signals import SignalHandlerOptions
        __import__('rclpy').init(context=ctx, args=['x', '--ros-args', *args], domain_id=DOMAIN_ID,
                                 signal_handler_options=SignalHandlerOptions.NO)
        try:
            node = Node('explorer', context=ctx)
            assert {k: v.value for k, v in node._parameter_overrides.items()} == node_parameters(files, 'explorer')
            node.destroy_node()
        finally:
            __import__('rclpy').shutdown(context=ctx)


@pytest.mark.parametrize('module', ['uncertain_bo.parameters.files', 'uncertain_bo.parameters.rcl_yaml',
                                    'uncertain_bo.parameters.specs', 'uncertain_bo.ros.check'])
def test_each_module_imports_first(module):
    """explore.launch.py imports param_files before anything else: a circular import broke the real launch."""
    import subprocess
    import sys
    code = (f'import {module}\nfrom uncertain_bo.parameters.specs import validate\n'
            'from uncertain_bo.parameters.files import node_parameters\n'
            'from uncertain_bo.parameters.rcl_yaml import load_param_file, read_param_file\n')
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_declared_parameters_drop_what_wildcards_set_for_other_nodes(tmp_path):
    """A ``/**`` file may hold every node's parameters (rclpy ignores what a node does not declare); a name
    set in the node's own section stays, so that validation reports the misspelling."""
    from uncertain_bo.parameters.files import declared_parameters
    f = tmp_path / 'p.yaml'
    f.write_text('/**:\n  ros__parameters:\n    search_bounds: [0.0, 1.0, 0.0, 1.0]\n    seed: 3\n'
                 'sim_rover:\n  ros__parameters:\n    fix_ratee: 2.0\n')
    assert declared_parameters([f], 'sim_rover', ['seed', 'fix_rate']) == {'seed': 3, 'fix_ratee': 2.0}
    assert declared_parameters([f], 'explorer', ['seed', 'search_bounds']) == {
        'seed': 3, 'search_bounds': [0.0, 1.0, 0.0, 1.0]}


def test_unknown_parameters_are_those_of_the_node_s_own_sections(tmp_path):
    """The mechanism behind every refusal of a misspelt name (nodes, launch files, check, demo): a section that
    names the node (``explorer``, ``/**/explorer``) is judged, with the key's own line and the closest declared
    name; a wildcard's names (``/**``, ``/*``) may be any node's and are not; nor are rclpy's own parameters."""
    f = tmp_path / 'p.yaml'
    f.write_text('/**:\n  ros__parameters:\n    frequency: 30.0\n'
                 'explorer:\n  ros__parameters:\n    beta: 2.0\n    use_sim_time: true\n\n    max_measurement: 8\n'
                 '    qos_overrides:\n      /plan:\n        publisher:\n          depth: 5\n'
                 '/**/explorer:\n  ros__parameters:\n    zzz: 1\n'
                 '/*:\n  ros__parameters:\n    other_nodes_parameter: 1\n'
                 'pure_pursuit:\n  ros__parameters:\n    lookahead: 1.0\n')
    known = ['beta', 'max_measurements', 'search_bounds']
    assert unknown_parameters([f], 'explorer', known) == [
        UnknownParameter('max_measurement', '/explorer', str(f), 'max_measurements', 9),
        UnknownParameter('zzz', '/explorer', str(f), None, 16)]
    assert str(unknown_parameters([f], 'explorer', known)[0]) == (
        f"{f} line 9: 'max_measurement' is not a parameter of node /explorer (did you mean 'max_measurements'?)")
    # in a namespace the bare section does not reach the node (rcl), the /**/ one does
    assert [u.name for u in unknown_parameters([f], '/rover1/explorer', known)] == ['zzz']
    # re-keyed into the namespace (explore.launch.py's namespace:=), it does, with its own file and line
    rekeyed = namespaced_sections(f, 'rover1', ['explorer', 'pure_pursuit'])
    assert [(u.name, u.source, u.line) for u in unknown_parameters([rekeyed], '/rover1/explorer', known)] == [
        ('max_measurement', str(f), 9), ('zzz', str(f), 16)]
    assert [s.key for s in rekeyed.sections] == ['/**', '/rover1/explorer', '/**/explorer', '/*',
                                                 '/rover1/pure_pursuit']

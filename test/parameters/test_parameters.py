import pytest

from uncertain_bo.parameters.specs import Param, ParameterError, validate
from uncertain_bo.parameters.files import node_parameters
from uncertain_bo.parameters.rcl_yaml import load_param_file

SPECS = [
    Param('rate', 1.0, 'a rate, Hz', range=(0.1, 10.0)),
    Param('count', 3, 'a count', range=(1, 100)),
    Param('mode', 'a', 'a mode', choices=('a', 'b')),
    Param('std', [1.0, 1.0], 'per-axis std, m', range=(0.0, 50.0), length=2),
    Param('flag', False, 'a flag'),
]


def test_defaults_and_coercion():
    v = validate(SPECS, {'rate': 2, 'std': [0, 3]})
    assert v == {'rate': 2.0, 'count': 3, 'mode': 'a', 'std': [0.0, 3.0], 'flag': False}


@pytest.mark.parametrize('values, needle', [
    ({'rate': 20.0}, "'rate' = 20.0 is invalid: out of range; allowed: a float in [0.1, 10]"),
    ({'count': 2.5}, 'expected an integer'),
    ({'mode': 'c'}, "one of 'a', 'b'"),
    ({'std': [1.0]}, 'expected 2 elements'),
    ({'std': [1.0, -1.0]}, 'each in [0, 50]'),
    ({'flag': 'yes'}, 'expected true or false'),
    ({'rate': float('nan')}, 'not a finite number'),
    ({'rat': 1.0}, "unknown parameter 'rat'"),
])
def test_errors_name_parameter_and_range(values, needle):
    with pytest.raises(ParameterError) as e:
        validate(SPECS, values)
    assert needle in str(e.value)


def test_param_file_layout_and_errors(tmp_path):
    good = tmp_path / 'p.yaml'
    good.write_text('/**:\n  ros__parameters:\n    rate: 2.0\nnode:\n  ros__parameters:\n    count: 5\n'
                    '    nested:\n      a: 1\n')
    assert node_parameters([good], 'node') == {'rate': 2.0, 'count': 5, 'nested.a': 1}
    bad = tmp_path / 'bad.yaml'
    bad.write_text('node: [unclosed\n')
    with pytest.raises(ParameterError, match='not valid YAML'):
        load_param_file(bad)
    flat = tmp_path / 'flat.yaml'
    flat.write_text('node:\n  rate: 2.0\n')
    with pytest.raises(ParameterError, match="no 'ros__parameters'"):
        load_param_file(flat)
    with pytest.raises(ParameterError, match='cannot read'):
        load_param_file(tmp_path / 'missing.yaml')


@pytest.mark.parametrize('key, fqn, applies', [
    ('/**', '/rover1/explorer', True),
    ('explorer', '/explorer', True),
    ('explorer', '/rover1/explorer', False),          # a bare name does not reach into a namespace
    ('**/explorer', '/rover1/explorer', True),
    ('**/explorer', '/explorer', True),
    ('rover1/explorer', '/rover1/explorer', True),
    ('rover1/*', '/rover1/explorer', True),
    ('rover2/explorer', '/rover1/explorer', False),
    ('explorerr', '/explorer', False),
])
def test_section_applies_like_rcl(key, fqn, applies):
    from uncertain_bo.parameters.files import section_applies
    assert section_applies(key, fqn) is applies


def test_unknown_sections_names_misspelt_nodes(tmp_path):
    from uncertain_bo.parameters.files import unknown_sections
    f = tmp_path / 'p.yaml'
    f.write_text('explorerr:\n  ros__parameters: {beta: 2.0}\n/**:\n  ros__parameters: {use_sim_time: true}\n'
                 'ekf:\n  ros__parameters: {}\n')
    assert unknown_sections([f], ['/explorer', '/ekf']) == [(str(f), 'explorerr')]


def test_validate_refuses_a_renamed_parameter_with_its_new_name():
    """In-process parameters (the library, the simulated mission) refuse an old name as the files and nodes do."""
    from uncertain_bo.explorer import EXPLORER_PARAMS
    with pytest.raises(ParameterError, match=r"^parameter 'arrival_tolerance' was renamed to 'xy_goal_tolerance': "
                                             r"use the new name$"):
        validate(EXPLORER_PARAMS, {'arrival_tolerance': 0.5})
    assert validate(EXPLORER_PARAMS, {'xy_goal_tolerance': 0.5})['xy_goal_tolerance'] == 0.5
    with pytest.raises(ParameterError, match=r"unknown parameter 'frame_id'"):   # a node without global_frame
        validate([p for p in EXPLORER_PARAMS if p.name != 'global_frame'], {'frame_id': 'map'})

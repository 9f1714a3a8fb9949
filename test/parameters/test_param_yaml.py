"""config/explorer.yaml is what the explorer's parameter specs generate (uncertain_bo.parameters.yaml_source), and it
reads back, as rcl reads it, to exactly the spec defaults; the value formatting round-trips through rcl's and PyYAML's
rules."""
import math
from pathlib import Path

import pytest
import yaml

from uncertain_bo.cli import main
from uncertain_bo.parameters.files import node_parameters
from uncertain_bo.parameters.yaml_source import (LAYOUTS, REGENERATE, YamlLayout, comment_text, render_param_yaml,
                                                 yaml_value)
from uncertain_bo.parameters.specs import Param

pytest.importorskip('rclpy')   # the explorer's node-only specs live in a ROS module

ROOT = Path(__file__).resolve().parents[2]


def _specs(node):
    from uncertain_bo.ros.nodes import node_specs
    return node_specs(node)


@pytest.mark.parametrize('node', sorted(LAYOUTS))
def test_committed_file_is_what_the_specs_generate(node):
    layout = LAYOUTS[node]
    committed = (ROOT / 'config' / layout.file).read_text(encoding='utf-8')
    generated = render_param_yaml(layout, _specs(node))
    command = REGENERATE.format(node=node, file=layout.file)
    assert committed == generated, (
        f'config/{layout.file} differs from the parameter specs of {node}: edit the spec (its description is the '
        f'comment, its default the value), then regenerate the file with `{command}`')


@pytest.mark.parametrize('node', sorted(LAYOUTS))
def test_generated_file_reads_back_to_exactly_the_defaults(node, tmp_path):
    specs = _specs(node)
    path = tmp_path / 'generated.yaml'
    path.write_text(render_param_yaml(LAYOUTS[node], specs), encoding='utf-8')
    values = node_parameters([path], node)
    assert list(values) == [n for _, names in LAYOUTS[node].sections for n in names]
    for p in specs:
        got, want = values[p.name], p.default
        assert got == want and type(got) is type(want), f'{p.name}: read back {got!r}, spec default {want!r}'
        if isinstance(want, list):
            assert [type(v) for v in got] == [type(v) for v in want], p.name


@pytest.mark.parametrize('node', sorted(LAYOUTS))
def test_every_spec_is_documented_in_the_file(node):
    """Each parameter's comment is its spec's description (the one text `ros2 param describe` shows too), with
    Read-only. exactly for the read-only ones."""
    text = render_param_yaml(LAYOUTS[node], _specs(node))
    flat = ' '.join(line.strip().lstrip('#').strip() for line in text.splitlines())
    for p in _specs(node):
        assert comment_text(p) in flat, p.name
        assert comment_text(p).endswith('Read-only.') == p.read_only, p.name
        assert 'Read-only' not in p.description, f'{p.name}: the read-only note comes from read_only'
        assert not p.description.endswith('.'), f'{p.name}: --help and the file add the full stop'


@pytest.mark.parametrize('value, text', [
    (0.0, '0.0'), (1.0, '1.0'), (-2.5, '-2.5'), (0.785, '0.785'), (1e6, '1.0e+6'), (-1e6, '-1.0e+6'),
    (1e12, '1.0e+12'), (1e-6, '1.0e-6'), (2.5e-7, '2.5e-7'), (123456.0, '1.23456e+5'), (99999.0, '99999.0'),
    (1e-4, '0.0001'), (5, '5'), (-3, '-3'), (True, 'true'), (False, 'false'), ('map', "'map'"), ('', "''"),
    ("it's", "'it''s'"), ('1.0', "'1.0'"), ('true', "'true'"), ([0.0, 1e6], '[0.0, 1.0e+6]'),
    (['a', 'b'], "['a', 'b']"),
])
def test_values_read_back_by_rcl_and_pyyaml(value, text, tmp_path):
    """Oracle: rcl's reading (uncertain_bo.parameters.files) and PyYAML's YAML 1.1 reading of the text."""
    assert yaml_value(value) == text
    path = tmp_path / 'p.yaml'
    path.write_text(f'n:\n  ros__parameters:\n    v: {text}\n', encoding='utf-8')
    got = node_parameters([path], 'n')['v']
    assert got == value and type(got) is type(value)
    assert yaml.safe_load(text) == value and type(yaml.safe_load(text)) is type(value)


def test_non_finite_and_other_types_are_refused():
    for bad in (math.inf, math.nan):
        with pytest.raises(ValueError):
            yaml_value(bad)
    with pytest.raises(TypeError):
        yaml_value({'a': 1})


def test_a_layout_that_misses_or_invents_a_parameter_is_refused():
    specs = [Param('a', 1.0, 'first, m'), Param('b', 'x', 'second', read_only=True)]
    layout = YamlLayout(node='n', file='n.yaml', header=('header',), sections=(('one', ('a', 'c', 'c')),))
    with pytest.raises(ValueError, match=r"not placed in a section: b; not parameters of n: c, c; placed twice: c"):
        render_param_yaml(layout, specs)
    ok = YamlLayout(node='n', file='n.yaml', header=('header',), sections=(('one', ('b', 'a')),))
    assert render_param_yaml(ok, specs) == (
        '# header\n\nn:\n  ros__parameters:\n    # ' + '-' * 60 + ' one\n'
        "    # Second. Read-only.\n    b: 'x'\n    # First, m.\n    a: 1.0\n")


def test_params_command_prints_writes_and_checks(tmp_path, capsys):
    expected = (ROOT / 'config' / 'explorer.yaml').read_text(encoding='utf-8')
    assert main(['params', 'explorer']) == 0
    assert capsys.readouterr().out == expected
    out = tmp_path / 'explorer.yaml'
    assert main(['params', 'explorer', '--out', str(out)]) == 0
    assert out.read_text(encoding='utf-8') == expected
    assert main(['params', 'explorer', '--check', str(out)]) == 0
    out.write_text(expected.replace('beta: 3.0', 'beta: 2.0'), encoding='utf-8')
    capsys.readouterr()
    assert main(['params', 'explorer', '--check', str(out)]) == 1
    assert 'uncertain-bo params explorer --out config/explorer.yaml' in capsys.readouterr().err

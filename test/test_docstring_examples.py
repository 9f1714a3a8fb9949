"""Every public class of the package shows its use in an ``Example:`` section, and every example runs as written.

The examples are doctests: ``doctest`` runs each module's docstrings, so an example that no longer matches the code
fails here. Modules of the ROS layer skip (with the reason) where rclpy or the message packages are not installed.
"""
import ast
import doctest
import importlib
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / 'uncertain_bo'


def _module_names():
    for path in sorted(PACKAGE.rglob('*.py')):
        parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        yield '.'.join(parts), path


MODULES = list(_module_names())


def _public_classes(path):
    tree = ast.parse(path.read_text())
    return [node for node in tree.body if isinstance(node, ast.ClassDef) and not node.name.startswith('_')]


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as error:   # the ROS layer without rclpy, the extras without their libraries
        pytest.skip(f'{name} needs {error.name}, not installed here')


@pytest.mark.parametrize('name', [name for name, path in MODULES if '>>>' in path.read_text()])
def test_the_examples_run_as_written(name):
    result = doctest.testmod(_import(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f'{result.failed} of {result.attempted} example lines of {name} failed (see above)'


@pytest.mark.parametrize('name,path', [(name, path) for name, path in MODULES if _public_classes(path)],
                         ids=[name for name, path in MODULES if _public_classes(path)])
def test_every_public_class_has_an_example(name, path):
    missing = [cls.name for cls in _public_classes(path)
               if 'Example' not in (ast.get_docstring(cls) or '') or '>>>' not in (ast.get_docstring(cls) or '')]
    assert not missing, f'{name}: public classes without an Example: section with doctest lines: {missing}'

"""Every public class of the package shows its use in an ``Example:`` section, and every example runs as written.

The examples are doctests: ``doctest`` runs each module's docstrings, so an example that no longer matches the code
fails here. Modules of the ROS layer skip (with the reason) where rclpy or the message packages are not installed, and
so do a module's examples where one needs an optional dependency that is not installed (the recording extra's rosbags,
the geo extra's pyproj: the library imports without them, their examples cannot run).
"""
import ast
import doctest
import importlib
import pathlib
import sys

import pytest

from uncertain_bo.extras import extra_for, install_hint

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


class _Runner(doctest.DocTestRunner):
    """doctest's runner, noting the first optional dependency (:func:`uncertain_bo.extras.extra_for`) an example
    found missing."""

    missing = None

    def report_unexpected_exception(self, out, test, example, exc_info):
        error = exc_info[1]
        if self.missing is None and isinstance(error, ModuleNotFoundError) and extra_for(error.name):
            self.missing = error.name
        super().report_unexpected_exception(out, test, example, exc_info)


def _run_examples(module):
    """``(failed, attempted)`` example lines of ``module``, as ``doctest.testmod`` counts them; a skip where one
    needs an optional dependency that is not installed."""
    runner = _Runner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(module):
        runner.run(test)
    if runner.missing is not None:
        pytest.skip(f'an example of {module.__name__} needs {runner.missing}, not installed here '
                    f'({install_hint(runner.missing)})')
    return runner.failures, runner.tries


@pytest.fixture
def registries_as_found():
    """An example may register a method or a problem, as a user would (``register_problem``); the process's
    registries are put back as they were, so that later tests see only the package's own."""
    import uncertain_bo.acquisition  # noqa: F401  (every own method registered before the copy)
    from uncertain_bo.acquisition.method import METHODS
    from uncertain_bo.benchmarks.problem_registry import PROBLEMS, load_own_problems
    load_own_problems()
    saved = [(registry, dict(registry)) for registry in (METHODS, PROBLEMS)]
    yield
    for registry, entries in saved:
        registry.clear()
        registry.update(entries)


@pytest.mark.usefixtures('registries_as_found')
@pytest.mark.parametrize('name', [name for name, path in MODULES if '>>>' in path.read_text()])
def test_the_examples_run_as_written(name):
    failed, attempted = _run_examples(_import(name))
    assert failed == 0, f'{failed} of {attempted} example lines of {name} failed (see above)'


def test_examples_that_need_an_extra_not_installed_skip(monkeypatch):
    """Without the recording extra (rosbags blocked, as in a ``pip install .`` without it) the examples of the bag
    writer skip and say which extra they need, instead of failing."""
    for module in [m for m in sys.modules if m.split('.')[0] == 'rosbags'] + ['rosbags']:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(pytest.skip.Exception, match=r'needs rosbags.*recording extra'):
        test_the_examples_run_as_written('uncertain_bo.recording.bag_writer')


@pytest.mark.parametrize('name,path', [(name, path) for name, path in MODULES if _public_classes(path)],
                         ids=[name for name, path in MODULES if _public_classes(path)])
def test_every_public_class_has_an_example(name, path):
    missing = [cls.name for cls in _public_classes(path)
               if 'Example' not in (ast.get_docstring(cls) or '') or '>>>' not in (ast.get_docstring(cls) or '')]
    assert not missing, f'{name}: public classes without an Example: section with doctest lines: {missing}'

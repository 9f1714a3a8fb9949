"""What ``pip install .`` brings and what the library needs (pyproject.toml, requirements.txt, setup.py).

- every requirement of pyproject.toml (dependencies and extras) is pinned in requirements.txt, at a version that
  satisfies it: the environment ``make`` builds and the suite runs in is one ``pip install '.[...]'`` accepts;
- every third-party module the package imports comes from a declared dependency or extra (ROS 2 packages that only
  an apt / colcon ROS install provides aside);
- the library outside ``uncertain_bo.ros`` imports with no optional package (rclpy, the message packages,
  recordings, Dask, GDAL): what a ``pip install .`` without extras gets.
"""
import ast
import re
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from uncertain_bo.extras import EXTRAS, extra_for

requirements = pytest.importorskip('packaging.requirements', reason='the packaging library is not installed')
tomllib = pytest.importorskip('tomllib', reason='tomllib comes with Python 3.11+')

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / 'uncertain_bo'
#: modules that come with a ROS 2 install (apt or colcon), not from PyPI: rosdep installs them from package.xml
ROS_ONLY = {'launch', 'launch_ros', 'ament_index_python', 'builtin_interfaces', 'rcl_interfaces', 'tf2_msgs',
            'nav2_msgs', 'composition_interfaces'}
#: every optional module (and every ``*_msgs`` package), blocked below: the library must import without them
OPTIONAL = tuple(EXTRAS) + tuple(ROS_ONLY)


def _project() -> dict:
    return tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']


def _declared() -> dict[str, list]:
    """``{'': core requirements, extra: its requirements}``, self-references (``uncertain_bo[recording]``) left out."""
    project = _project()
    groups = {'': project['dependencies'], **project['optional-dependencies']}
    return {name: [r for r in map(requirements.Requirement, reqs) if _norm(r.name) != 'uncertain-bo']
            for name, reqs in groups.items()}


def _norm(name: str) -> str:
    return re.sub(r'[-_.]+', '-', name).lower()


def _pins() -> dict[str, requirements.Requirement]:
    pins = {}
    for line in (ROOT / 'requirements.txt').read_text().splitlines():
        line = line.split('#')[0].strip()
        if line:
            r = requirements.Requirement(line)
            pins[_norm(r.name)] = r
    return pins


def test_every_declared_requirement_is_pinned_in_requirements_txt_at_a_version_that_satisfies_it():
    pins = _pins()
    for extra, reqs in _declared().items():
        for req in reqs:
            pin = pins.get(_norm(req.name))
            assert pin is not None, f'{req} ({extra or "core"}) is not in requirements.txt'
            versions = [s.version for s in pin.specifier if s.operator == '==']
            if req.specifier:
                assert versions, f'requirements.txt does not pin {pin.name}'
                assert req.specifier.contains(versions[0], prereleases=True), \
                    f'requirements.txt pins {pin}, which pyproject.toml ({extra or "core"}) refuses: {req}'


def test_declared_extras_are_the_documented_ones():
    assert set(_project()['optional-dependencies']) == {'recording', 'ros', 'bench', 'dask', 'geo', 'test'}
    assert 'uncertain_bo[recording]' in _project()['optional-dependencies']['ros']


def _imported_modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split('.')[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split('.')[0])
    return found - set(sys.stdlib_module_names) - {'uncertain_bo', '__future__'}


def test_every_third_party_import_of_the_package_is_a_declared_dependency():
    declared = {_norm(r.name) for reqs in _declared().values() for r in reqs}
    # the ROS wheels' import names (ros-rclpy -> rclpy, ros-std-msgs -> std_msgs)
    declared |= {n[len('ros-'):] for n in declared if n.startswith('ros-')}
    provided = packages_distributions()
    missing = []
    for module in sorted(_imported_modules() - ROS_ONLY):
        if module not in provided and extra_for(module) in _declared():
            continue        # an optional package not installed here (a venv without extras): its extra says it
        dists = {_norm(d) for d in provided.get(module, [])} | {_norm(module)}
        if not dists & declared:
            missing.append(f'{module} (from {", ".join(sorted(provided.get(module, ["?"])))})')
    assert not missing, f'imported by uncertain_bo but declared nowhere in pyproject.toml: {missing}'


BLOCKED_IMPORTS = '''
import importlib, pkgutil, sys
OPTIONAL = {optional!r}
class Block:
    def find_spec(self, name, path=None, target=None):
        top = name.split('.')[0]
        if top in OPTIONAL or top.endswith('_msgs'):
            raise ModuleNotFoundError(f'No module named {{name!r}} (blocked)', name=name)
sys.meta_path.insert(0, Block())
import uncertain_bo
failed = []
for m in pkgutil.walk_packages(uncertain_bo.__path__, 'uncertain_bo.'):
    if not m.name.startswith('uncertain_bo.ros'):
        try:
            importlib.import_module(m.name)
        except ImportError as exc:
            failed.append(f'{{m.name}}: {{exc}}')
print('\\n'.join(failed))
'''


def test_the_library_outside_ros_imports_without_any_optional_package():
    out = subprocess.run([sys.executable, '-c', BLOCKED_IMPORTS.format(optional=OPTIONAL)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == '', f'modules that need an optional package at import:\n{out.stdout}'


#: how colcon (colcon-python-setup-py's get_setup_information) reads setup.py's configuration: run_setup up to
#: 'config', the distribution's attributes written with repr() and read back with ast.literal_eval
COLCON_READBACK = '''
import sys
from distutils.core import run_setup
dist = run_setup('setup.py', script_args=('--dry-run',), stop_after='config')
skip = ('cmdclass', 'distclass', 'ext_modules', 'metadata')
data = {k: v for k, v in dist.__dict__.items()
        if not k.startswith('_') and not callable(v) and k not in skip and k not in dist.display_option_names}
data['metadata'] = {k: v for k, v in dist.metadata.__dict__.items() if k not in ('license_files', 'provides_extras')}
sys.stdout.write(repr(data))
'''


def test_colcon_reads_the_ament_python_configuration_back():
    # a `requires-python` in pyproject.toml once made it a SpecifierSet, which literal_eval refuses: colcon build
    # then failed before building anything
    out = subprocess.run([sys.executable, '-c', COLCON_READBACK], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    data = ast.literal_eval(out.stdout)
    assert data['metadata']['name'] == 'uncertain_bo'
    assert 'uncertain_bo.benchmarks' in data['packages'] and not any(p.startswith('test') for p in data['packages'])
    installed = {dest: files for dest, files in data['data_files']}
    assert installed['share/ament_index/resource_index/packages'] == ['resource/uncertain_bo']
    assert installed['share/uncertain_bo'] == ['package.xml']
    assert 'launch/sim.launch.py' in installed['share/uncertain_bo/launch']

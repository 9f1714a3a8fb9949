"""What to install for a missing optional package: the skip reasons of the tests that need one
(conftest.install_hint) and the one line a command or node prints instead of an import traceback
(uncertain_bo.extras)."""
import subprocess
import sys
from pathlib import Path

from conftest import install_hint

from uncertain_bo.extras import extra_for, missing_dependency


def test_a_missing_optional_package_names_its_extra():
    reason = "could not import 'rclpy': No module named 'rclpy'"
    assert install_hint(reason) == reason + (" (the ros extra: pip install '.[ros]' from the source tree, or a "
                                             'sourced ROS 2 installation)')
    assert install_hint("Skipped: could not import 'rasterio.crs': No module named 'rasterio'").endswith(
        "pip install '.[geo]' from the source tree)")


def test_other_reasons_are_unchanged():
    for reason in ("could not import 'numpy': No module named 'numpy'", 'needs CUDA', ''):
        assert install_hint(reason) == reason


def test_every_optional_module_belongs_to_an_extra_of_pyproject():
    import tomllib
    extras = tomllib.loads((Path(__file__).resolve().parent.parent / 'pyproject.toml').read_text())
    declared = set(extras['project']['optional-dependencies'])
    for module in ('rclpy', 'geometry_msgs.msg', 'rosbags.rosbag2', 'mcap', 'foxglove', 'distributed', 'rasterio',
                   'pyproj', 'sklearn.datasets'):
        assert extra_for(module) in declared, module
    assert extra_for('numpy') is None and extra_for(None) is None


BLOCKED = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('rclpy', 'geometry_msgs'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)
sys.meta_path.insert(0, Block())
from uncertain_bo.cli import main
sys.exit(main(['params', 'explorer']))
"""


def test_a_command_without_rclpy_says_what_to_install_in_one_line():
    """In a venv without the ROS wheels, `uncertain-bo params NODE` (and demo, replay; `check` once did too, it now
    needs no ROS: test_registries.py) ended in an import traceback (ModuleNotFoundError: No module named
    'geometry_msgs')."""
    out = subprocess.run([sys.executable, '-c', BLOCKED], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 2 and 'Traceback' not in out.stderr, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1].startswith('error: ')
    assert ("is not installed; this needs the ros extra: pip install '.[ros]' from the source tree, or a sourced "
            'ROS 2 installation') in out.stderr


def test_other_import_errors_are_not_hidden():
    assert missing_dependency(ModuleNotFoundError("No module named 'numpy'", name='numpy')) is None
    assert missing_dependency(ImportError('cannot import name x', name='rclpy')) is None   # a broken install

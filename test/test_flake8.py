"""Code style: pyflakes + pycodestyle at 120 columns, exactly the checks selected in setup.cfg.

On a ROS machine (``colcon test``) the check runs through ``ament_flake8`` with ``--config setup.cfg``:
ament's own configuration would add the checks of every flake8 plugin it brings (docstrings, import order,
quotes, ...), which this project does not follow. Elsewhere flake8's API runs with the same file.
"""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / 'setup.cfg'
PATHS = [str(ROOT / p) for p in ('uncertain_bo', 'test', 'bench', 'launch', 'setup.py')]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    try:
        from ament_flake8.main import main_with_errors
    except ImportError:
        legacy = pytest.importorskip('flake8.api.legacy', reason='neither ament_flake8 nor flake8 installed')
        report = legacy.get_style_guide(config=str(CONFIG)).check_files(PATHS)
        assert report.total_errors == 0, 'flake8 found problems (run: .venv/bin/flake8)'
        return
    rc, errors = main_with_errors(argv=['--config', str(CONFIG), *PATHS])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)

"""Code style: pyflakes (unused imports, undefined names) + pycodestyle, configured in setup.cfg."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_flake8_clean():
    legacy = pytest.importorskip('flake8.api.legacy', reason='flake8 not installed')
    style = legacy.get_style_guide(config=str(ROOT / 'setup.cfg'))
    paths = [str(ROOT / p) for p in ('uncertain_bo', 'test', 'bench', 'launch', 'setup.py')]
    report = style.check_files(paths)
    assert report.total_errors == 0, 'flake8 found problems (run: .venv/bin/flake8)'

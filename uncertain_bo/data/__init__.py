"""Data shipped inside the package: real field data (``fields/``), benchmark suites (``suites/``) and excerpts of real
surveys (``surveys/``, the test data of ``uncertain-bo map``).

Every field file's source and licence is stated in the suite file that uses it (``suites/<name>.yaml``) and in
``docs/field_suite.md``; every survey's in ``surveys/README.md``.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ['DATA_DIR', 'data_path', 'suite_names']

#: folder of this package's data files
DATA_DIR = Path(__file__).resolve().parent


def data_path(*parts: str) -> Path:
    """Path of a shipped data file, e.g. ``data_path('fields', 'coal_ash.csv')``.

    Raises:
        FileNotFoundError: no such file (the message names the path).
    """
    path = DATA_DIR.joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f'shipped data file {path} is missing; reinstall uncertain_bo')
    return path


def suite_names() -> tuple[str, ...]:
    """Names of the shipped suites (``suites/<name>.yaml``)."""
    return tuple(sorted(p.stem for p in (DATA_DIR / 'suites').glob('*.yaml')))

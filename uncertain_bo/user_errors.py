"""User mistakes: which errors they raise, and how every entry point reports them.

A user mistake (a bad parameter or parameter file, a field file that cannot be used, a damaged journal, a
path that is a file where a folder is needed) ends every command and node the same way: one line
``error: ...`` on stderr and a non-zero exit status, never a Python traceback. Nothing is written before
the mistake is found.
"""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = ['UsageError', 'user_error_types', 'one_line', 'report', 'check_run_dir', 'EXIT_USAGE']

#: exit status of a user mistake (argparse's, and the nodes' for an invalid parameter)
EXIT_USAGE = 2


class UsageError(ValueError):
    """A command-line mistake that is not a parameter value (e.g. ``--out`` names an existing file)."""


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the user's input is wrong" (reported in one line, not a traceback):
    :class:`~uncertain_bo.parameters.ParameterError`, :class:`~uncertain_bo.journal.JournalError`,
    :class:`~uncertain_bo.sim.field.FieldError` and :class:`UsageError`."""
    from .journal import JournalError
    from .parameters import ParameterError
    from .sim.field import FieldError
    return (ParameterError, JournalError, FieldError, UsageError)


def one_line(exc: BaseException | str) -> str:
    """The message of ``exc`` on one line (YAML and file errors span several)."""
    return ' '.join(str(exc).split())


def report(exc: BaseException | str, code: int = EXIT_USAGE) -> int:
    """Print ``error: <message>`` (one line) on stderr; returns ``code`` (the exit status to use)."""
    print(f'error: {one_line(exc)}', file=sys.stderr, flush=True)
    return code


def check_run_dir(path: str | Path, what: str) -> Path:
    """``path`` as a run folder: it may exist (as a folder) or not yet.

    Args:
        path: the folder.
        what: how the user named it, for the message (``'--out'``, ``"parameter 'run_dir'"``).

    Raises:
        UsageError: ``path`` exists and is not a folder (or a parent of it is a file).
    """
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            raise UsageError(f'{what} = {str(path)!r}: {q} is a file, not a folder')
        if q.exists():
            break
    return p

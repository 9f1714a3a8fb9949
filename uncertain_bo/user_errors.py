"""User mistakes: which errors they raise, and how every entry point reports them.

A user mistake (a bad parameter or parameter file, a field file that cannot be used, a damaged journal, a
path that is a file where a folder is needed) ends every command and node the same way: one line
``error: ...`` on stderr and a non-zero exit status, never a Python traceback. Nothing is written before
the mistake is found.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

__all__ = ['UsageError', 'user_error', 'user_error_types', 'one_line', 'report', 'check_run_dir', 'file_system_type',
           'EXIT_USAGE']

#: exit status of a user mistake (argparse's, and the nodes' for an invalid parameter)
EXIT_USAGE = 2


class UsageError(ValueError):
    """A command-line mistake that is not a parameter value (e.g. ``--out`` names an existing file).

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from uncertain_bo.user_errors import UsageError, check_run_dir
        >>> with tempfile.NamedTemporaryFile() as f:
        ...     try:
        ...         check_run_dir(Path(f.name) / 'run', '--out')
        ...     except UsageError as exc:
        ...         print(str(exc).split(': ', 1)[1].replace(f.name, 'FILE'))
        FILE is a file, not a folder
    """


#: the exception types of user mistakes, filled by :func:`user_error` where each is defined (so this module imports
#: none of them: they sit above it)
_USER_ERROR_TYPES: list[type[BaseException]] = [UsageError]


def user_error(cls: type[BaseException]) -> type[BaseException]:
    """Class decorator: mark ``cls`` as a user mistake (reported in one line by :func:`report`'s callers; added to
    :func:`user_error_types`). Returns ``cls``."""
    if cls not in _USER_ERROR_TYPES:
        _USER_ERROR_TYPES.append(cls)
    return cls


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the user's input is wrong" (reported in one line, not a traceback):
    :class:`UsageError` and every type marked with :func:`user_error` whose module is imported (a type whose module
    is not imported cannot have been raised) -- :class:`~uncertain_bo.parameters.specs.ParameterError`,
    :class:`~uncertain_bo.journal.journal.JournalError` and :class:`~uncertain_bo.sim.field_spec.FieldError`."""
    return tuple(_USER_ERROR_TYPES)


def one_line(exc: BaseException | str) -> str:
    """The message of ``exc`` on one line (YAML and file errors span several)."""
    return ' '.join(str(exc).split())


def report(exc: BaseException | str, code: int = EXIT_USAGE) -> int:
    """Print ``error: <message>`` (one line) on stderr; returns ``code`` (the exit status to use)."""
    print(f'error: {one_line(exc)}', file=sys.stderr, flush=True)
    return code


def check_run_dir(path: str | Path, what: str) -> Path:
    """``path`` as a run folder: it may exist (as a folder) or not yet, and files can be written there (checked
    without writing anything: the nearest existing folder of ``path`` is writable by this user, on a file system
    mounted read-write that holds files, not a kernel one such as ``/proc`` or ``/sys``).

    Args:
        path: the folder.
        what: how the user named it, for the message (``'--out'``, ``"parameter 'run_dir'"``).

    Raises:
        UsageError: ``path`` exists and is not a folder (or a parent of it is a file), or it cannot be written.
    """
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            raise UsageError(f'{what} = {str(path)!r}: {q} is a file, not a folder')
        if q.exists():
            reason = _not_writable(q)
            if reason:
                raise UsageError(f'{what} = {str(path)!r}: {reason}')
            break
    return p


#: kernel file systems that hold no user files (a folder cannot be created there)
PSEUDO_FILE_SYSTEMS = frozenset({'proc', 'sysfs', 'cgroup', 'cgroup2', 'debugfs', 'tracefs', 'securityfs', 'pstore',
                                 'bpf', 'configfs', 'efivarfs', 'binfmt_misc', 'devpts', 'fusectl', 'mqueue'})


def _not_writable(folder: Path) -> str | None:
    """Why no file can be written in the existing ``folder``, or None."""
    fs = file_system_type(folder)
    if fs in PSEUDO_FILE_SYSTEMS:
        return f'{folder} is on the kernel file system {fs!r}, where no run files can be written'
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return f'{folder} is on a read-only file system'
    if not os.access(folder, os.W_OK | os.X_OK):
        return f'{folder} is not writable by this user'
    return None


def file_system_type(path: str | Path) -> str | None:
    """The type of the file system ``path`` lies on (``'ext4'``, ``'proc'``, ...) from ``/proc/self/mountinfo``,
    or None where that cannot be read (not Linux)."""
    try:
        lines = Path('/proc/self/mountinfo').read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, fs = -1, None
    for line in lines:
        fields, _, rest = line.partition(' - ')
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        mount = re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), parts[4])   # \040 is a space
        inside = target == mount or target.startswith(mount.rstrip('/') + '/')
        if inside and len(mount) >= best:   # the last of equally long mount points is the one in effect
            best, fs = len(mount), rest.split()[0]
    return fs

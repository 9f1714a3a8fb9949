"""A command's output files: never written onto the command's own inputs, and each written whole or not at all.

Every command that writes files (``uncertain-bo export``, ``report``, ``demo``, ``bench``) names its outputs and its
inputs (the journal, a parameter file, a field file, ...) to :func:`check_outputs` before it writes anything. An
output that *is* an input (the same path, a path that resolves to it through ``..`` or symbolic links, or another
hard link to the same file) is a user mistake: ``uncertain-bo export RUN --csv RUN/journal.jsonl`` used to replace
the journal with CSV. :func:`check_outputs` raises :class:`~uncertain_bo.user_errors.UsageError` (one line, exit
status 2) and nothing is written.

Each output is then written to a temporary file beside it and moved over the old one with :func:`os.replace`
(:func:`replacing`, :func:`write_text`, :func:`save_figure`): a failure part-way (a full disk, an exception while
drawing) leaves the old file, or none, never half of one; the temporary file is removed. Replacing a path also
replaces a symbolic link there rather than writing through it. A folder that is missing, not a folder, or not
writable is named in one line (:func:`check_writable`) instead of a traceback.
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Iterable, Iterator

from ..user_errors import UsageError, check_run_dir

__all__ = ['same_file', 'check_outputs', 'check_writable', 'replacing', 'write_text', 'save_figure']


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name the same file: the same inode (a hard link, or a symbolic link to it), or, where
    one does not exist, the same absolute path once ``..`` and symbolic links are resolved."""
    try:
        return os.path.samefile(a, b)
    except OSError:   # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def check_outputs(outputs: Iterable[tuple[str | Path, str]], inputs: Iterable[tuple[str | Path, str]]) -> None:
    """Refuse to write onto an input: each output must not be any input (:func:`same_file`).

    Args:
        outputs: ``(path, how the user names it)`` of every file the command will write, e.g.
            ``(csv_path, '--csv')``.
        inputs: ``(path, what it is)`` of every file the command reads, e.g. ``(journal, 'the journal')``.

    Raises:
        UsageError: an output is an input (the message names both and says what to do).
    """
    inputs = [(Path(p), what) for p, what in inputs if p is not None]
    for out, out_what in outputs:
        for inp, in_what in inputs:
            if same_file(out, inp):
                linked = os.path.islink(out) or Path(out).resolve() != inp.resolve()
                link = ' (a link to it)' if linked else ''
                raise UsageError(f'{out_what} {out} is {in_what} {inp}{link}: this command reads it and would write '
                                 'over it; give another output path')


def check_writable(path: str | Path, what: str) -> Path:
    """``path`` as an output file the command can create or replace.

    Raises:
        UsageError: ``path`` is a folder, or its folder does not exist, is not a folder, or is not writable.
    """
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise UsageError(f'{what} {path} is a folder: give a file name')
    if not folder.exists():
        raise UsageError(f'{what} {path}: the folder {folder} does not exist (create it first)')
    if not folder.is_dir():
        raise UsageError(f'{what} {path}: {folder} is not a folder')
    check_run_dir(folder, what)   # writable by this user, on a file system that holds files (not /proc, read-only)
    return path


def _temporary(path: Path) -> Path:
    # beside the output (same file system: os.replace is atomic), hidden, and with the output's suffix (matplotlib
    # picks the image format from it)
    return path.with_name(f'.{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}')


@contextlib.contextmanager
def replacing(*paths: str | Path) -> Iterator[list[Path]]:
    """Write ``paths`` whole or not at all: yields one temporary path per output (beside it, same suffix); when the
    block ends without an exception each is moved over its output (:func:`os.replace`), else all are removed.

    Raises:
        UsageError: a temporary file cannot be written or moved into place (the OS error, naming the output).
    """
    outs = [Path(p) for p in paths]
    tmps = [_temporary(p) for p in outs]
    done = False
    try:
        try:
            yield tmps
            for tmp, out in zip(tmps, outs):
                os.replace(tmp, out)
            done = True
        except OSError as exc:
            which = next((o for t, o in zip(tmps, outs) if exc.filename in (str(t), str(o))), outs[0])
            raise UsageError(f'cannot write {which}: {exc.strerror or exc}') from None
    finally:
        if not done:
            for tmp in tmps:
                with contextlib.suppress(OSError):
                    tmp.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`replacing`); returns ``path``."""
    with replacing(path) as (tmp,):
        tmp.write_text(text, encoding='utf-8')
    return Path(path)


def save_figure(fig, path: str | Path, **kwargs) -> Path:
    """``fig.savefig(path, **kwargs)`` atomically (:func:`replacing`); returns ``path``."""
    with replacing(path) as (tmp,):
        fig.savefig(tmp, **kwargs)
    return Path(path)

"""Warnings that a library call emits as routine (an optimiser stopping at its iteration cap, a Cholesky that
needed jitter), caught and logged instead of printed; every other warning passes through unchanged.

::

    with logged_warnings(log, OptimizationWarning, NumericalWarning):
        fit_gpytorch_mll(mll)

Thread-safe, unlike ``warnings.catch_warnings`` (which swaps process-wide state on entry and puts back what it saw
on exit, so two threads' blocks undo each other and let warnings escape): a block catches the warnings raised in
its own thread only. While any block is open, ``warnings.showwarning`` is a dispatcher that hands a warning to the
innermost open block of the raising thread whose categories match, and every other warning to the function it
replaced, at once; and an ``always`` filter for each caught category (refcounted over the open blocks) lets every
occurrence through to be counted. Other categories keep the filters they had.
"""
from __future__ import annotations

import logging
import sys
import threading
import warnings
from collections import Counter
from contextlib import contextmanager
from typing import Iterator

__all__ = ['logged_warnings', 'caught_counts']

_lock = threading.Lock()
_local = threading.local()          # .blocks: this thread's open blocks, innermost last
_open = 0                           # open blocks, all threads
_filters: dict = {}                 # category -> [the 'always' filter entry we inserted, open blocks catching it]
_replaced = None                    # the showwarning the dispatcher forwards to
_counts: Counter = Counter()        # caught warnings by category name, all threads, since the process started


class _NeverRaised(Warning):
    """A category nothing raises: its filter, added and removed at once, makes ``warnings`` drop its caches."""


def _filters_changed() -> None:
    """Tell ``warnings`` that its filter list changed (it caches decisions per filter-list version), through public
    API only: ``filterwarnings`` bumps the version; the dummy filter it adds is removed again."""
    warnings.filterwarnings('ignore', category=_NeverRaised)
    warnings.filters[:] = [f for f in warnings.filters if f[2] is not _NeverRaised]


class _Block:
    __slots__ = ('categories', 'records')

    def __init__(self, categories: tuple):
        self.categories, self.records = categories, []


def _dispatch(message, category, filename, lineno, file=None, line=None):
    for block in reversed(getattr(_local, 'blocks', ())):
        if issubclass(category, block.categories):
            block.records.append(warnings.WarningMessage(message, category, filename, lineno, file, line))
            return
    if _replaced is None or _replaced is _dispatch:   # no block ever installed the dispatcher: print as Python does
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
    else:
        _replaced(message, category, filename, lineno, file, line)


def _open_block(block: _Block) -> None:
    global _open, _replaced
    with _lock:
        if _open == 0 and warnings.showwarning is not _dispatch:
            _replaced, warnings.showwarning = warnings.showwarning, _dispatch
        _open += 1
        for category in block.categories:
            entry = _filters.setdefault(category, [('always', None, category, None, 0), 0])
            entry[1] += 1
            if entry[1] == 1 or not any(f is entry[0] for f in warnings.filters):
                warnings.filters.insert(0, entry[0])
        _filters_changed()
    if not hasattr(_local, 'blocks'):
        _local.blocks = []
    _local.blocks.append(block)


def _close_block(block: _Block) -> None:
    global _open
    _local.blocks.remove(block)
    with _lock:
        for category in block.categories:
            entry = _filters[category]
            entry[1] -= 1
            if entry[1] == 0:
                warnings.filters[:] = [f for f in warnings.filters if f is not entry[0]]
                del _filters[category]
        _open -= 1
        if _open == 0 and warnings.showwarning is _dispatch:
            warnings.showwarning = _replaced
        _filters_changed()
        for w in block.records:
            _counts[w.category.__name__] += 1


@contextmanager
def logged_warnings(logger: logging.Logger, *categories: type[Warning], level: int = logging.DEBUG) -> Iterator[list]:
    """Catch warnings of ``categories`` (and their subclasses) raised in this thread inside the block, count them
    (:func:`caught_counts`) and log each distinct (category, message) once per block at ``level`` on ``logger``;
    every other warning is shown as it would be without the block. Nested blocks: a warning goes to the innermost
    block that catches its category.

    Yields:
        The list of caught warnings of ``categories`` (``warnings.WarningMessage``), filled when the block ends.
    """
    caught: list = []
    block = _Block(tuple(categories))
    _open_block(block)
    try:
        yield caught
    finally:
        _close_block(block)
        seen = set()
        for w in block.records:
            caught.append(w)
            key = (w.category, str(w.message))
            if key not in seen:
                seen.add(key)
                logger.log(level, '%s: %s', w.category.__name__, w.message)


def caught_counts() -> dict[str, int]:
    """Warnings caught by :func:`logged_warnings` blocks so far in this process (all threads), by category name."""
    with _lock:
        return dict(_counts)

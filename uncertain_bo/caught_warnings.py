"""Warnings that a library call emits as routine (an optimiser stopping at its iteration cap, a Cholesky that
needed jitter), caught and logged instead of printed; every other warning passes through unchanged.

::

    with logged_warnings(log, OptimizationWarning, NumericalWarning):
        fit_gpytorch_mll(mll)
"""
from __future__ import annotations

import logging
import warnings
from contextlib import contextmanager
from typing import Iterator

__all__ = ['logged_warnings']


@contextmanager
def logged_warnings(logger: logging.Logger, *categories: type[Warning], level: int = logging.DEBUG) -> Iterator[list]:
    """Catch warnings of ``categories`` (and their subclasses) raised inside the block and log each once per block
    at ``level`` on ``logger``; re-emit every other warning as it was raised.

    Yields:
        The list of caught warnings of ``categories`` (``warnings.WarningMessage``), filled when the block ends.
    """
    caught: list = []
    with warnings.catch_warnings(record=True) as recorded:
        warnings.simplefilter('always')
        yield caught
    seen = set()
    for w in recorded:
        if issubclass(w.category, categories):
            caught.append(w)
            key = (w.category, str(w.message))
            if key not in seen:
                seen.add(key)
                logger.log(level, '%s: %s', w.category.__name__, w.message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)

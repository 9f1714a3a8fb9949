"""BoTorch's L-BFGS-B calls with threadpoolctl's cached controller.

BoTorch limits the BLAS thread pools to one thread around each L-BFGS-B run, both in the hyperparameter fit
(``botorch.optim.utils.timeout.minimize_with_timeout``) and in the acquisition maximisation
(``botorch.generation.gen.gen_candidates_scipy``), with ``threadpool_limits(limits=1, user_api="blas")``. That builds
a new ``ThreadpoolController`` at every call: it reads ``/proc/self/maps`` and inspects every loaded library, about
2-3 ms each, a sixth of a planner decision at 30 readings. :func:`cached_threadpool_limits` routes those calls to
threadpoolctl's ``get_cached_controller()`` (rebuilt by threadpoolctl when the set of imported modules changes),
which sets the same limits on the same libraries.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import threadpoolctl
from botorch.generation import gen as _gen
from botorch.optim.utils import timeout as _timeout

__all__ = ['cached_threadpool_limits']

_MODULES = (_gen, _timeout)     # BoTorch's modules that call threadpool_limits
_lock = threading.Lock()
_active = 0
_original: list = []


def _limits(limits=None, user_api=None):
    """``threadpool_limits(limits, user_api)`` through threadpoolctl's cached controller."""
    return threadpoolctl.get_cached_controller().limit(limits=limits, user_api=user_api)


@contextmanager
def cached_threadpool_limits() -> Iterator[None]:
    """While the block runs, BoTorch's fit and maximiser set their BLAS thread limits through threadpoolctl's
    cached controller instead of a new one per call. Nested and concurrent blocks are counted: the first to enter
    installs it, the last to leave restores BoTorch's ``threadpool_limits``.

    Example:
        >>> from botorch.generation import gen
        >>> with cached_threadpool_limits():
        ...     gen.threadpool_limits is _limits
        True
        >>> gen.threadpool_limits is _limits
        False
    """
    global _active
    with _lock:
        if _active == 0:
            _original[:] = [module.threadpool_limits for module in _MODULES]
            for module in _MODULES:
                module.threadpool_limits = _limits
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for module, original in zip(_MODULES, _original):
                    module.threadpool_limits = original

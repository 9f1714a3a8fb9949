"""The registry of benchmark problems: the names ``uncertain-bo bench --problem`` takes and the factories behind them.

Three sources, one table (:data:`PROBLEMS`): the package's own problems (its modules register themselves when the
first look-up imports them, :func:`load_own_problems`), a script's or notebook's :func:`register_problem`, and the
entry points of group :data:`ENTRY_POINT_GROUP` of installed packages (:func:`load_entry_points`). A problem that a
worker process may lack travels with each run (:func:`external_factory`). The problem protocol itself (what a
factory returns) is :mod:`uncertain_bo.benchmarks.base`.
"""
from __future__ import annotations

import importlib
import re
from typing import Callable

from .base import Problem

__all__ = ['PROBLEMS', 'ENTRY_POINT_GROUP', 'OWN_PROBLEM_MODULES', 'register_problem', 'get_problem', 'problem_names',
           'load_own_problems', 'load_entry_points', 'external_factory']

PROBLEMS: dict[str, Callable[[], Problem]] = {}
"""name -> factory of every registered problem (the package's own, :func:`register_problem`'s, and the entry
points'; :func:`problem_names` loads those first)"""

ENTRY_POINT_GROUP = 'uncertain_bo.problems'
"""Entry-point group through which an installed package adds problems to ``uncertain-bo bench``:
``[project.entry-points."uncertain_bo.problems"]`` ``my-problem = "my_package.problems:MyProblem"`` in its
pyproject.toml (the value: a :class:`Problem` factory, as for :func:`register_problem`)."""

_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')

OWN_PROBLEM_MODULES = ('cv', 'functions_airbo', 'michalewicz', 'quadrature', 'rkhs2d', 'rover', 'rover_team',
                       'nes_problems')
"""the package's modules (of :mod:`uncertain_bo.benchmarks`) that register its own problems when imported; the first
look-up imports them (:func:`load_own_problems`), as it loads the entry points"""
#: the problems the package itself registers (every process that imports it has them; set by
#: :func:`load_own_problems`, None before); the others travel with each run to the worker that runs it
#: (:func:`external_factory`)
_OWN: frozenset[str] | None = None
_entry_points_loaded = False


def register_problem(name: str, factory: Callable[[], Problem], *, replace: bool = False) -> None:
    """Register a benchmark problem under ``name``: ``uncertain-bo bench --problem NAME``,
    :func:`~uncertain_bo.benchmarks.runner.expand` / :func:`~uncertain_bo.benchmarks.runner.run_many` (seeds,
    parallel runs on joblib or Dask, records, resumable run files, summaries, plots and paired tables) then run
    it like the package's own problems. A problem registered in a script or notebook travels with each run to the
    worker process that runs it (pickled; cloudpickle's by-value copy for one defined in ``__main__``); for the
    command line, declare it as an entry point of group :data:`ENTRY_POINT_GROUP` in the package that defines it.

    Args:
        name: the problem's name (letters, digits, ``.``, ``_``, ``-``; it becomes part of file names).
        factory: a callable without arguments returning the :class:`Problem` (usually its class).
        replace: allow replacing a problem already registered under ``name`` by another factory (e.g. when a
            notebook cell that defines a problem runs again).

    Raises:
        ValueError: ``name`` is not a valid name, or already belongs to another factory and ``replace`` is False.

    Example:
        >>> from uncertain_bo.benchmarks import get_problem, register_problem
        >>> from uncertain_bo.benchmarks.sampled import RobustProblem, SampledNoiseProblem
        >>> bowl = RobustProblem('doc-bowl', lambda x: -(x[..., 0] - 0.3) ** 2, ((0.0,), (1.0,)),
        ...                      {'kind': 'gaussian', 'std': 0.05, 'dim': 1})
        >>> register_problem('doc-bowl', lambda: SampledNoiseProblem(bowl, default_methods='ugp_ucb,gp_ucb'))
        >>> get_problem('doc-bowl').default_methods
        'ugp_ucb,gp_ucb'
        >>> round(get_problem('doc-bowl').instance(seed=0).optimum[1], 4)   # g* = max E f(x + N(0, 0.05^2))
        -0.0025
    """
    load_own_problems()    # the package's own names first: a later registration under one of them is refused
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f'problem name {name!r}: use letters, digits, ".", "_" and "-" (it becomes part of file '
                         'names), starting with a letter or digit')
    if not callable(factory):
        raise ValueError(f'problem {name!r}: the factory must be callable (a Problem class or a function '
                         f'returning one), got {type(factory).__name__}')
    old = PROBLEMS.get(name)
    if old is not None and old is not factory and not replace:
        raise ValueError(f'problem {name!r} is already registered ({_qualname(old)}); pick another name, or '
                         'pass replace=True to replace it')
    PROBLEMS[name] = factory


def _qualname(factory: Callable) -> str:
    return f'{getattr(factory, "__module__", "?")}.{getattr(factory, "__qualname__", type(factory).__name__)}'


def load_own_problems() -> None:
    """Register the package's own problems (import :data:`OWN_PROBLEM_MODULES`; once per process, on the first
    look-up or registration)."""
    global _OWN
    if _OWN is not None:
        return
    _OWN = frozenset()     # while they register themselves (register_problem calls this)
    before = set(PROBLEMS)
    try:
        for module in OWN_PROBLEM_MODULES:
            importlib.import_module(f'{__package__}.{module}')
    except BaseException:
        _OWN = None
        raise
    _OWN = frozenset(set(PROBLEMS) - before)


def load_entry_points() -> None:
    """Register the problems installed packages declare under :data:`ENTRY_POINT_GROUP` (once per process). One
    that cannot be loaded, or whose name is taken, is left out with a logged warning: a broken plugin does not
    stop the other problems."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    import logging
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            register_problem(ep.name, ep.load())
        except Exception as exc:   # a third-party module: whatever it raises, the others still load
            logging.getLogger(__name__).warning('benchmark problem %r (entry point %s) left out: %s: %s', ep.name,
                                                ep.value, type(exc).__name__, exc)


def problem_names() -> list[str]:
    """Every registered problem's name, sorted (the entry points' included)."""
    load_own_problems()
    load_entry_points()
    return sorted(PROBLEMS)


def get_problem(name: str) -> Problem:
    """Instantiate a registered problem.

    Raises:
        KeyError: unknown name (the message lists the known problems).
    """
    load_own_problems()
    if name not in PROBLEMS:
        load_entry_points()
    try:
        factory = PROBLEMS[name]
    except KeyError:
        raise KeyError(f'unknown problem {name!r}; known: {", ".join(sorted(PROBLEMS))}') from None
    return factory()


def external_factory(name: str) -> Callable[[], Problem] | None:
    """The factory of ``name`` when a worker process may lack it (registered by a script, a notebook or an entry
    point), None for the package's own problems, which every process has."""
    load_own_problems()
    return None if name in _OWN else PROBLEMS.get(name)

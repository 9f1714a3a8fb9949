"""Benchmarks with exact robust-objective oracles, a parallel runner, metrics and plots
(``uncertain-bo bench`` / ``uncertain-bo plot``).

Problems (see :data:`PROBLEMS`): ``rkhs2d`` (paper §6.1) and ``michalewicz4d`` (paper §6.2). A problem
supplies its own :class:`World` (how a target becomes an executed position, a location distribution and a
reading), so a simulated rover mission plugs in as one more problem.
"""
from .base import (PROBLEMS, BenchSettings, GaussianInputWorld, Instance, Measurement, Problem, World,
                   get_problem, register_problem)
from . import michalewicz, rkhs2d  # noqa: F401  (register the problems)
from .runner import RunSpec, expand, load_runs, run, run_many

__all__ = ['PROBLEMS', 'BenchSettings', 'GaussianInputWorld', 'Instance', 'Measurement', 'Problem', 'World',
           'get_problem', 'register_problem', 'RunSpec', 'expand', 'load_runs', 'run', 'run_many']

"""Benchmarks with exact robust-objective oracles, a parallel runner, metrics and plots
(``uncertain-bo bench`` / ``uncertain-bo plot``).

Problems (see :data:`PROBLEMS`): ``rkhs2d`` (paper §6.1), ``michalewicz4d`` (paper §6.2), ``rover`` (§6.3
analogue: the simulated rover mission of the demo, in-process), ``rover-team`` (N rovers, one shared planner or N
independent ones: :mod:`.rover_team`), and AIRBO's sampled-noise problems
``rkhs1d-gauss``, ``double-peak-beta``, ``bumped-bowl-10d`` (:mod:`.functions_airbo` on the generic
:class:`~uncertain_bo.benchmarks.sampled.SampledNoiseProblem`), and NES's benchmarks ``nes-*``
(:mod:`.nes_problems`). A problem
supplies its own :class:`World` (how a target becomes an executed position, a location distribution and a
reading), so a simulated rover mission plugs in as one more problem. Your own problem: :func:`register_problem`
(a script or notebook) or an entry point of group :data:`ENTRY_POINT_GROUP` (an installed package); docs/research.md.
"""
from .base import (ENTRY_POINT_GROUP, PROBLEMS, BenchSettings, GaussianInputWorld, Instance, Measurement, Problem,
                   World, get_problem, problem_names, register_problem)
from . import cv, functions_airbo, michalewicz, quadrature, rkhs2d, rover, rover_team  # noqa: F401  (register them)
from . import nes_problems  # noqa: F401  (registers NES's problems)
from .base import _mark_own_problems
from .runner import RunSpec, expand, load_runs, run, run_many

_mark_own_problems()

__all__ = ['PROBLEMS', 'ENTRY_POINT_GROUP', 'BenchSettings', 'GaussianInputWorld', 'Instance', 'Measurement', 'Problem',
           'World', 'get_problem', 'problem_names', 'register_problem', 'RunSpec', 'expand', 'load_runs', 'run',
           'run_many']

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
import importlib

#: the package's public names -> the module that defines them, imported on first use (PEP 562): importing the
#: package (``uncertain-bo bench --help`` imports :mod:`.cli`) imports neither torch nor a problem; the first use of
#: a name also registers the package's own problems (:func:`~.problem_registry.load_own_problems`)
_EXPORTS = {**dict.fromkeys(('BenchSettings', 'GaussianInputWorld', 'Instance', 'Measurement', 'Problem', 'World'),
                            'base'),
            **dict.fromkeys(('PROBLEMS', 'ENTRY_POINT_GROUP', 'get_problem', 'problem_names', 'register_problem'),
                            'problem_registry'),
            **dict.fromkeys(('RunSpec', 'expand', 'load_runs', 'run', 'run_many'), 'runner')}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    importlib.import_module('.problem_registry', __name__).load_own_problems()
    value = getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
    globals()[name] = value
    return value

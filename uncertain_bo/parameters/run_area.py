"""The run's area and execution noise: the two explorer parameters a journal reader checks too.

:data:`SEARCH_BOUNDS` and :data:`EXECUTION_NOISE_STD` are entries of the explorer's
:data:`~uncertain_bo.explorer.parameters.EXPLORER_PARAMS`; :mod:`uncertain_bo.journal.schema` checks a journal's
recorded run parameters with the same specs and :func:`search_bounds_problem`. They live here, below both, so that
the journal does not import the explorer (which imports the planner, which imports the journal).
"""
from __future__ import annotations

from typing import Sequence

from .specs import Param

__all__ = ['SEARCH_BOUNDS', 'EXECUTION_NOISE_STD', 'RUN_AREA_PARAMS', 'search_bounds_problem']

SEARCH_BOUNDS = Param(
    'search_bounds', [0.0, 200.0, 0.0, 200.0],
    'search area [xmin, xmax, ymin, ymax] in global_frame, m. Targets never leave it (a change at run time '
    'applies from the next decision)', range=(-1e7, 1e7), length=4)

EXECUTION_NOISE_STD = Param(
    'execution_noise_std', [0.75, 0.75],
    'execution-noise model P̂_x = N(x, diag(std²)): where the rover really measures when sent to x '
    '(path-following tolerance + localisation error), std along x and y, m. Used for the candidates of the '
    'acquisition and for the recommendation (with learn_execution_noise: the learned model\'s prior). Match '
    'it to your rover: summary.json of a simulated run reports the measured scatter '
    '(`measured_execution_std`); the simulated rover of config/sim.yaml scatters about 0.7 m per axis (2 m '
    'GNSS-like fixes at 1 Hz, 5 % wheel slip, 0.25 m goal tolerance)', range=(0.0, 1000.0), length=2)

#: the specs above, for a reader of a run's recorded parameters
RUN_AREA_PARAMS = (SEARCH_BOUNDS, EXECUTION_NOISE_STD)


def search_bounds_problem(bounds: Sequence[float]) -> str | None:
    """Why ``bounds`` ``[xmin, xmax, ymin, ymax]`` (m, each already valid for :data:`SEARCH_BOUNDS`) is not a
    search area (names the parameter), or None if it is one."""
    xmin, xmax, ymin, ymax = bounds
    if not (xmax > xmin and ymax > ymin):
        return (f"parameter 'search_bounds' = {list(bounds)} is invalid: need xmax > xmin and ymax > ymin "
                '(order [xmin, xmax, ymin, ymax])')
    return None

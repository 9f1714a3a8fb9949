"""The run's area and execution noise: the two explorer parameters a journal reader checks too.

:data:`SEARCH_BOUNDS` and :data:`EXECUTION_NOISE_STD` are entries of the explorer's
:data:`~uncertain_bo.explorer.parameters.EXPLORER_PARAMS`; :mod:`uncertain_bo.journal.schema` checks a journal's
recorded run parameters with the same specs and :func:`search_bounds_problem`. They live here, below both, so that
the journal does not import the explorer (which imports the planner, which imports the journal).
"""
from __future__ import annotations

from typing import Sequence

from .specs import Param

__all__ = ['SEARCH_BOUNDS', 'EXECUTION_NOISE_STD', 'RUN_AREA_PARAMS', 'search_bounds_problem', 'bounds_outside']

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


def bounds_outside(search_bounds, extent, what: str = 'the field') -> str | None:
    """Why ``search_bounds`` ``[xmin, xmax, ymin, ymax]`` (m) do not lie inside ``extent`` (same layout,
    e.g. a simulated field's), or None when they do."""
    xmin, xmax, ymin, ymax = (float(v) for v in search_bounds)
    fx0, fx1, fy0, fy1 = (float(v) for v in extent)
    tol = 1e-9 * max(1.0, abs(fx0), abs(fx1), abs(fy0), abs(fy1))
    if xmin < fx0 - tol or xmax > fx1 + tol or ymin < fy0 - tol or ymax > fy1 + tol:
        return (f"parameter 'search_bounds' = {[xmin, xmax, ymin, ymax]} m is not inside {what} "
                f'{[fx0, fx1, fy0, fy1]} m: the rover would be sent where there is nothing to measure')
    return None

"""Cross-checks of the explorer's parameter values: what no single spec can say (``search_bounds``' order,
``reading_range``'s, ``fix_sources``' quadruples).

The explorer node, the team explorer, the in-process mission and ``uncertain-bo check`` run the same checks; they
live here, below the explorer (which imports the planner and torch), so that ``check`` runs them without importing
torch.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .run_area import search_bounds_problem

__all__ = ['check_explorer_parameters', 'fix_sources_problem']


def fix_sources_problem(values: Any) -> str | None:
    """Why ``fix_sources`` (a flat list ``x, y, radius, cost, ...``) is not well formed, or None."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size % 4:
        return (f"parameter 'fix_sources' = {list(values)!r} is invalid: expected x, y, radius, cost for each fix "
                f'source (a multiple of 4 numbers, metres; cost: metres of detour), got {v.size}')
    if np.any(v.reshape(-1, 4)[:, 2:] < 0):
        return f"parameter 'fix_sources' = {list(values)!r} is invalid: each source needs a radius >= 0 and a cost >= 0"
    return None


def check_explorer_parameters(values: Mapping[str, Any]) -> str | None:
    """Cross-field checks of explorer parameters (each value is already valid on its own).

    Returns:
        None if consistent, else the reason (names the parameter).
    """
    b = values.get('search_bounds')
    if b is not None and search_bounds_problem(b):
        return search_bounds_problem(b)
    r = values.get('reading_range')
    if r is not None and not r[1] > r[0]:
        return f"parameter 'reading_range' = {list(r)} is invalid: need [low, high] with high > low"
    if 'fix_sources' in values:
        return fix_sources_problem(values['fix_sources'])
    return None

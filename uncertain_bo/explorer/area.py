"""The area the explorer works in: ``search_bounds``, widened by ``area_margin`` for where the rover may be.

Goals lie inside ``search_bounds`` (:data:`GOAL_TOLERANCE` for round-off); pose estimates, and so every stored
reading, the odometer and a "hold here" stop, within ``search_bounds`` widened by ``area_margin`` on every side
(:meth:`~uncertain_bo.explorer.inputs.InputStreams.pose_problem` rejects the others;
:mod:`~uncertain_bo.explorer.commands` checks every command against both).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

__all__ = ['GOAL_TOLERANCE', 'distance_outside', 'area_text']

#: how far outside ``search_bounds`` a goal may lie (round-off of a target moved onto the edge), m
GOAL_TOLERANCE = 1e-6


def distance_outside(xy: Sequence[float], params: Mapping[str, Any], margin: float = 0.0) -> float:
    """How far ``xy`` ``(2,)`` m lies outside ``search_bounds`` widened by ``margin`` m on every side, m (0 inside;
    inf for a non-finite ``xy``)."""
    xmin, xmax, ymin, ymax = params['search_bounds']
    x, y = float(xy[0]), float(xy[1])
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.inf
    dx = max(xmin - margin - x, 0.0, x - xmax - margin)
    dy = max(ymin - margin - y, 0.0, y - ymax - margin)
    return math.hypot(dx, dy)


def area_text(params: Mapping[str, Any], margin: float = 0.0) -> str:
    """``search_bounds = [...]`` (+ ``area_margin = ... m``) for messages."""
    bounds = f"search_bounds = {[float(b) for b in params['search_bounds']]}"
    return f'{bounds} + area_margin = {margin:g} m' if margin else bounds

"""The space-filling initial design: scrambled Sobol targets in the search box, visited as a short tour.

The first ``n_initial`` targets of every method that starts from a design (:class:`~uncertain_bo.planner.Planner`);
ordered as a greedy nearest-neighbour tour from the rover's start so that it does not zig-zag across the area
(:func:`initial_design_tour`; a rover of a team tours what the others have not taken from where it is).
"""
from __future__ import annotations

import threading

import torch
from torch import Tensor

__all__ = ['initial_design', 'initial_design_tour']

# torch.quasirandom.SobolEngine computes its first point in the global default dtype at construction: the design
# sets it for that moment, and the lock keeps two threads (e.g. a background decider) from interleaving the change
_DEFAULT_DTYPE_LOCK = threading.Lock()


def initial_design(bounds: Tensor, n: int, seed: int, start: Tensor | None = None) -> Tensor:
    """``n`` scrambled Sobol points in ``bounds`` (``(2, d)``; dtype and device of the result), in visiting order.

    Args:
        bounds: ``(2, d)`` search box (lower, upper).
        n: number of points (>= 1).
        seed: the Sobol scrambling seed (equal seeds give equal designs).
        start: optional ``(d,)`` start position: the points are ordered as a greedy nearest-neighbour tour from it.

    Returns:
        ``(n, d)`` targets.
    """
    dim = bounds.shape[1]
    with _DEFAULT_DTYPE_LOCK:
        default = torch.get_default_dtype()
        torch.set_default_dtype(bounds.dtype)
        try:
            engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
        finally:
            torch.set_default_dtype(default)
    unit = engine.draw(n, dtype=bounds.dtype).to(bounds.device)
    pts = bounds[0] + unit * (bounds[1] - bounds[0])
    if start is None:
        return pts
    return initial_design_tour(pts, start)


def initial_design_tour(points: Tensor, start: Tensor) -> Tensor:
    """``points`` ``(n, d)`` in the order of a greedy nearest-neighbour tour from ``start`` ``(d,)`` (the first is the
    nearest to ``start``, each next the nearest to the one before); ``(n, d)``."""
    pos = torch.as_tensor(start).to(points).reshape(-1)
    order, left = [], list(range(len(points)))
    while left:
        j = min(left, key=lambda k: float((points[k] - pos).norm()))
        order.append(j)
        left.remove(j)
        pos = points[j]
    return points[order]

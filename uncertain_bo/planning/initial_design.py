"""The space-filling initial design: scrambled Sobol targets in the search box, visited as a short tour.

The first ``n_initial`` targets of every method that starts from a design
(:class:`~uncertain_bo.planning.planner.Planner`); ordered as a greedy nearest-neighbour tour from the rover's start so
that it does not zig-zag across the area (:func:`initial_design_tour`; a rover of a team tours what the others have not
taken from where it is). A team with more rovers than ``n_initial`` decides more targets before the first measurement
than the design holds: the design then grows by the next points of the same Sobol sequence (:func:`extend_design`), one
design target per rover. Not the shortest open tour (:func:`~uncertain_bo.planning.route.shortest_open_tour`): on the
field suite's tuning set it shortened the design's legs by 5 % but not the missions (docs/field_suite.md, "Less
driving")."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .route import nearest_neighbour_tour

if TYPE_CHECKING:
    from .keep_out import KeepOut

__all__ = ['sobol_points', 'initial_design', 'initial_design_tour', 'extend_design', 'rover_design']

# torch.quasirandom.SobolEngine computes its first point in the global default dtype at construction: the design
# sets it for that moment, and the lock keeps two threads (e.g. a background decider) from interleaving the change
_DEFAULT_DTYPE_LOCK = threading.Lock()


def sobol_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    """``(n, d)`` scrambled Sobol points in ``bounds`` ``(2, d)`` (seeded; dtype and device of ``bounds``): the one
    Sobol-in-a-box of the package (designs, recommendation grids, max-value and Lipschitz points)."""
    with _DEFAULT_DTYPE_LOCK:
        default = torch.get_default_dtype()
        torch.set_default_dtype(bounds.dtype)
        try:
            engine = torch.quasirandom.SobolEngine(bounds.shape[1], scramble=True, seed=seed)
        finally:
            torch.set_default_dtype(default)
    unit = engine.draw(n, dtype=bounds.dtype).to(bounds.device)
    return bounds[0] + unit * (bounds[1] - bounds[0])


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
    pts = sobol_points(n, bounds, seed)
    if start is None:
        return pts
    return initial_design_tour(pts, start)


def extend_design(design: Tensor, bounds: Tensor, n: int, seed: int) -> Tensor:
    """``design`` ``(k, d)`` (:func:`initial_design` of ``bounds`` and ``seed``) grown to ``n`` targets ``(n, d)``: the
    next ``n - k`` points of the same scrambled Sobol sequence, after it and toured on from its last target, so the
    grown design is, as a set, the ``n``-point design of that seed (as space-filling); ``design`` itself when
    ``n <= k``."""
    if n <= len(design):
        return design
    more = initial_design(bounds, n, seed)[len(design):].to(design)
    return torch.cat([design, initial_design_tour(more, design[-1])])


def initial_design_tour(points: Tensor, start: Tensor) -> Tensor:
    """``points`` ``(n, d)`` in the order of a greedy nearest-neighbour tour from ``start`` ``(d,)`` (the first is the
    nearest to ``start``, each next the nearest to the one before;
    :func:`~uncertain_bo.planning.route.nearest_neighbour_tour`); ``(n, d)``."""
    return points[nearest_neighbour_tour(points, start)]


def rover_design(design: Tensor, index: int, position: Tensor, measured: Tensor | None, pending: Tensor | None,
                 bounds: Tensor, keep_out: 'KeepOut | None' = None) -> Tensor:
    """``(n, d)`` the initial ``design`` as one rover of a team sees it at decision ``index``: from slot ``index``
    on, the design targets not taken, as a nearest-neighbour tour from ``position`` ``(d,)``; the slots before it
    (already handed out) as designed (:meth:`~uncertain_bo.planning.planner.Planner.suggest` with ``position``).

    A design target is taken when a ``measured`` or ``pending`` target ``(k, d)`` lies within 1e-9 of the diagonal
    of ``bounds`` ``(2, d)`` of it or, when it lies in a zone of ``keep_out``, of the nearest admissible point it is
    moved to (:meth:`~uncertain_bo.planning.keep_out.KeepOut.admissible`: where it was, or will be, measured
    instead)."""
    if index >= len(design):
        return design
    taken = [t.reshape(-1, design.shape[-1]) for t in (measured, pending) if t is not None and len(t)]
    left = design
    if taken:
        taken_at = torch.cat(taken).to(design)
        tol = 1e-9 * float((bounds[1] - bounds[0]).norm())
        near = torch.cdist(design, taken_at).min(-1).values <= tol
        moved = _moved(design, bounds, keep_out)
        if moved is not None:
            near |= torch.cdist(moved, taken_at).min(-1).values <= tol
        left = design[~near]
    tour = initial_design_tour(left, position) if len(left) else left
    # padded with the design itself when every target is taken (measured, or pending with another rover): the
    # keep-out rule still applies to every pick
    return torch.cat([design[:index], tour, design])[:len(design)]


def _moved(design: Tensor, bounds: Tensor, keep_out: 'KeepOut | None') -> Tensor | None:
    """``(n, d)`` the design with each target inside a keep-out zone replaced by its nearest admissible point (None
    when no target is inside one, or there are no zones)."""
    if keep_out is None or not len(keep_out):
        return None
    inside = keep_out.inside(design)
    if not bool(inside.any()):
        return None
    moved = design.clone()
    for i in torch.nonzero(inside).flatten().tolist():
        point = keep_out.admissible(design[i], bounds)
        if point is not None:
            moved[i] = point
    return moved

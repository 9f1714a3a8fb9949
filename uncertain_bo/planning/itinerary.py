"""A lone rover's itinerary: the targets decided but not handed out yet, in visiting order.

A lone rover's :meth:`~uncertain_bo.planning.planner.Planner.suggest` gets one target per call. Past the initial
design a batch method (:attr:`~uncertain_bo.acquisition.Method.batch_size` > 1) decides a whole batch at once, and
with a route horizon ``h > 1`` any other method but a survey decides ``h`` targets of which only the first stop is
kept (:func:`lone_batch`); the batch is driven along the shortest open tour from where the rover is
(:func:`visiting_order`, :mod:`uncertain_bo.planning.route`) and handed out one target per call from the
:class:`Itinerary`. A run resumed from its journal starts with the journal's pending target and the rest of its batch
(:func:`~uncertain_bo.planning.journal_writer.pending_after_resume`). A keep-out zone drops the targets inside it; a
change of bounds or start drops the rest of the batch (the next call decides anew).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .route import shortest_open_tour

if TYPE_CHECKING:
    from ..acquisition import Method
    from .keep_out import KeepOut

__all__ = ['Itinerary', 'lone_batch', 'visiting_order']


def lone_batch(method: 'Method', index: int, n_design: int, confirming: bool, route_horizon: int) -> tuple[int, int]:
    """``(batch, horizon)`` for a lone rover's call deciding measurement ``index``: how many targets to decide and the
    route horizon (> 1: only the first stop of their route is kept).

    The initial design (``n_design`` targets) is a tour of its own: while it lasts, and in the confirmation phase
    (``confirming``), one target per call, so no design target is sent twice or left out (its targets are chosen by
    index, :meth:`~uncertain_bo.acquisition.Method.decide_one`, which a reordering route would no longer match). After
    it, a batch method's or an own-route method's batch (:attr:`~uncertain_bo.acquisition.Method.batch_size`), or
    ``route_horizon`` targets of which the route's first stop is kept."""
    if index < n_design or confirming:
        return 1, 1
    if method.batch_size > 1 or method.plans_route:
        return method.batch_size, 1
    return route_horizon, route_horizon


def visiting_order(targets: Tensor, position: Tensor, horizon: int) -> list[int]:
    """The order a lone rover drives the batch ``targets`` ``(k, d)`` in from ``position`` ``(d,)``: the shortest open
    tour (:func:`~uncertain_bo.planning.route.shortest_open_tour`), or with a route ``horizon`` > 1 only its first
    stop (the rest is decided again at the next call)."""
    order = shortest_open_tour(targets, position).tolist()
    return order[:1] if horizon > 1 else order


class Itinerary:
    """The targets a lone rover has been given but not yet sent to: the journal's pending target of a resumed run
    (:attr:`resumed`, taken once) and the rest of the current batch (:attr:`queue`), in visiting order.

    Example:
        >>> import torch
        >>> from uncertain_bo.planning.itinerary import Itinerary
        >>> itinerary = Itinerary()
        >>> itinerary.queue = [torch.tensor([1.0, 2.0]), torch.tensor([4.0, 2.0])]
        >>> itinerary.pop()
        tensor([1., 2.])
        >>> itinerary.queued(torch.tensor([[0.0, 0.0], [10.0, 10.0]])).shape
        torch.Size([1, 2])
    """

    def __init__(self) -> None:
        #: ``(d,)`` the target of a resumed journal's pending decision, None when there is none (or it was taken)
        self.resumed: Tensor | None = None
        #: ``(d,)`` targets of the current batch not handed out yet, in visiting order
        self.queue: list[Tensor] = []

    def __len__(self) -> int:
        return len(self.queue)

    def pop(self) -> Tensor:
        """The next target of the batch ``(d,)``, removed from it.

        Raises:
            IndexError: the batch is handed out.
        """
        return self.queue.pop(0)

    def take_resumed(self) -> Tensor | None:
        """The resumed pending target ``(d,)``, once (None otherwise)."""
        target, self.resumed = self.resumed, None
        return target

    def clear(self) -> int:
        """Drop the rest of the batch (the next call decides anew); returns how many targets were dropped."""
        dropped, self.queue = len(self.queue), []
        return dropped

    def drop_inside(self, keep_out: 'KeepOut') -> None:
        """Drop the resumed target and the queued targets that lie inside a keep-out zone."""
        if self.resumed is not None and bool(keep_out.inside(self.resumed.reshape(1, -1))[0]):
            self.resumed = None
        self.queue = [t for t in self.queue if not bool(keep_out.inside(t.reshape(1, -1))[0])]

    def pending(self, others: Tensor | None) -> Tensor | None:
        """``(p, D)`` the queued targets followed by ``others`` (targets pending elsewhere), None when both are empty:
        what a new decision must not duplicate."""
        rows = [t.reshape(1, -1) for t in self.queue] + ([] if others is None else [others])
        return torch.cat(rows) if rows else None

    def queued(self, bounds: Tensor) -> Tensor:
        """``(k, D)`` the queued targets, in order (``(0, d)`` on the dtype and device of ``bounds`` when none)."""
        return torch.stack(self.queue) if self.queue else bounds.new_zeros(0, bounds.shape[-1])

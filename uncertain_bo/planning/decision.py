"""A decision: what one rover of a team asks for (:func:`team_request`: the targets pending elsewhere and where
it is), how the planner chose a target (:class:`Decision`, kept in
:attr:`~uncertain_bo.planning.planner.Planner.decisions`; a batch's, each with its share of the wall time:
:func:`batch_decisions`) and its journal record (:func:`decision_record`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import torch
from torch import Tensor

from ..distributions import DTYPE

if TYPE_CHECKING:
    from ..acquisition import Proposal

__all__ = ['Decision', 'batch_decisions', 'decision_record', 'team_request']


@dataclass(frozen=True)
class Decision:
    """How a target was chosen.

    Attributes:
        index: index ``t`` (0-based) of the measurement this target is for.
        target: ``(d,)`` target.
        phase: ``'initial'`` (space-filling design), ``'acquisition'``, or a strategy's own label
            (``'survey'``).
        seconds: wall time of the decision (GP update + acquisition maximisation), s; includes a
            hyperparameter fit that :meth:`Planner.recommend` made for it since the last decision.
        acquisition_value: acquisition at the target (NaN in the initial phase).
        beta: :math:`\\beta_t` used (NaN in the initial phase).
        fit_seconds: wall time of the hyperparameter fit inside ``seconds`` (0 if none).
        rover: which rover of a team the target is for (``suggest(rover=...)``), None for a lone rover.

    Example:
        >>> import torch
        >>> decision = Decision(4, torch.tensor([1.0, 2.0]), 'acquisition', seconds=0.31, acquisition_value=0.7,
        ...                     beta=9.0)
        >>> record = decision_record(decision, decision.target, batch=1, position=0)
        >>> record['type'], record['index'], record['target'], record['beta']
        ('decision', 4, [1.0, 2.0], 9.0)
    """

    index: int
    target: Tensor
    phase: str
    seconds: float
    acquisition_value: float = math.nan
    beta: float = math.nan
    fit_seconds: float = 0.0
    rover: str | None = None


def team_request(pending: Tensor | None, position: Tensor | None, bounds: Tensor
                 ) -> tuple[Tensor | None, Tensor | None]:
    """``suggest(pending=, position=)``'s arguments checked and on the dtype and device of ``bounds`` ``(2, d)``:
    ``pending`` as ``(p, d)`` (one target may come as ``(d,)``), ``position`` as ``(d,)``; None stays None.

    Raises:
        ValueError: ``pending`` not ``(p, d)`` finite targets, or ``position`` not ``(d,)`` finite.
    """
    if pending is not None:
        pending = torch.as_tensor(pending, dtype=DTYPE).to(bounds)
        if pending.ndim == 1:
            pending = pending.reshape(1, -1)
        if pending.ndim != 2 or pending.shape[-1] != bounds.shape[-1] or not torch.isfinite(pending).all():
            raise ValueError(f'pending must be (p, {bounds.shape[-1]}) finite targets, '
                             f'got shape {tuple(pending.shape)}')
    if position is not None:
        position = torch.as_tensor(position, dtype=DTYPE).to(bounds).reshape(-1)
        if position.numel() != bounds.shape[1] or not torch.isfinite(position).all():
            raise ValueError(f'position must be ({bounds.shape[1]},) finite coordinates, got {position.tolist()}')
    return pending, position


def batch_decisions(picks: Sequence['Proposal'], targets: Sequence[Tensor], order: Sequence[int],
                    indices: Sequence[int], seconds: float, fit_seconds: float, billed: float, horizon: int = 1,
                    rover: str | None = None) -> list[Decision]:
    """The decisions of a batch in visiting ``order`` (positions into ``picks`` and ``targets``).

    Args:
        picks: the method's single-target proposals (:meth:`~uncertain_bo.acquisition.Proposal.split`).
        targets: ``(d,)`` each pick's admissible target (:class:`~uncertain_bo.planning.keep_out.KeepOut`).
        order: which picks are decided, in visiting order (a route horizon keeps only the first stop).
        indices: each decision's journal index, in visiting order.
        seconds: the batch's wall time (s): a pick's own when the method timed it (:attr:`~uncertain_bo.acquisition.
            Proposal.seconds`), else, and for a route horizon's stop (decided from the whole look-ahead), all of it.
        fit_seconds: the hyperparameter fit inside ``seconds`` (s), billed to the first decision.
        billed: fits made since the last decision (:meth:`~uncertain_bo.planning.planner.Planner.recommend`,
            ``predict``; s), added to the first decision's ``seconds`` and ``fit_seconds``.
        horizon: the route horizon the batch was decided with.
        rover: the team rover it is for (None: a lone rover).
    """
    out = []
    for j, k in enumerate(order):
        pick = picks[k]
        own = seconds if pick.seconds is None or horizon > 1 else pick.seconds[0]
        extra = billed if j == 0 else 0.0
        out.append(Decision(indices[j], targets[k], pick.phase, own + extra, pick.acquisition_value, pick.beta,
                            (fit_seconds if j == 0 else 0.0) + extra, None if rover is None else str(rover)))
    return out


def decision_record(decision: Decision, proposed: Tensor, batch: int, position: int) -> dict[str, Any]:
    """The journal's ``decision`` record of ``decision`` (:mod:`uncertain_bo.journal.schema`).

    Args:
        decision: the decision; its target is the admissible one (:class:`~uncertain_bo.planning.keep_out.KeepOut`).
        proposed: ``(d,)`` the method's own target; when the keep-out rule moved it (another object than
            ``decision.target``) it is recorded as ``kept_out_from``.
        batch: the size of the batch the decision belongs to (recorded when above one).
        position: the decision's place in its batch (0-based).
    """
    target = decision.target
    record = {'type': 'decision', 'index': decision.index, 'target': target.tolist(),
              'phase': decision.phase, 'seconds': decision.seconds, 'fit_seconds': decision.fit_seconds,
              'acquisition_value': _finite_or_none(decision.acquisition_value),
              'beta': _finite_or_none(decision.beta), 'wall_time': time.time()}
    if target is not proposed:
        record['kept_out_from'] = proposed.tolist()
    if batch > 1:
        record['batch'] = {'size': batch, 'position': position}
    if decision.rover is not None:
        record['rover'] = decision.rover
    return record


def _finite_or_none(v: float) -> float | None:
    return v if math.isfinite(v) else None

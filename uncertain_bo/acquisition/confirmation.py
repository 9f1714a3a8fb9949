r"""The confirmation phase: the last readings of a measurement budget spent on the recommendation itself.

With a noisy sensor (10–20 % of a field's range) the explorer finds the peak's neighbourhood, but its readings cannot
tell the visited places apart (docs/field_suite.md, the noisy-sensor round): the gap between the recommendation and
the best visited position is information, not the rule. With ``confirmation_readings = k``
(:class:`~uncertain_bo.planning.planner.Planner`, the explorer's parameter of the same name) the last ``k`` decisions of
the measurement budget re-measure places already measured instead of exploring.

Each confirmation decision ranks every measured place :math:`\mathbf x_i`
(:attr:`~uncertain_bo.planning.planner.Planner.measured_places`) by the posterior of the robust objective of its
candidate distribution on the shared model, with every reading so far (the earlier confirmations included): mean
:math:`\mu_i` and standard deviation
:math:`\sigma_i`. Of the **leader** :math:`\ell = \operatorname{argmax}_i \mu_i` and the **challenger**
:math:`c = \operatorname{argmax}_{i:\,\|\mathbf x_i - \mathbf x_\ell\| > r} \mu_i + 2\sigma_i` (the best upper bound
among the places that are not the leader's own: :math:`r` twice the execution noise's largest standard deviation at
the leader, :func:`~uncertain_bo.planning.keep_out.noise_radius`), it re-measures the one whose value is the more
uncertain (the larger :math:`\sigma`): the best-arm identification rule of UGapE (Gabillon, Ghavamzadeh & Lazaric 2012,
Fig. 2), which the LUCB family shares (Kalyanakrishnan et al. 2012). A reading at the leader confirms or
demotes it; a reading at the challenger settles whether it is better. With one place only (or none far enough from
the leader), the leader. A batch of ``q`` (one rover of a team asking for several) continues with the remaining
places by the upper bound.

The recommendation that goes with it is a posterior-mean rule (``'past_mean'``, ``'top_mean'``: the repeated readings
at a place pool in its posterior mean); the planner's ``recommendation`` says which. The phase never starts before
the initial design is done, and only a measurement budget (``budget``, the explorer's ``max_measurements``) starts it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..planning.keep_out import noise_radius
from .method import Proposal

if TYPE_CHECKING:
    from .method import DecisionContext

__all__ = ['confirming', 'confirmation_proposal', 'CONFIRMATION_BETA']

#: weight of :math:`\sigma` in the challenger's upper bound :math:`\mu + 2\sigma` (as ``'past_lcb'``'s lower bound)
CONFIRMATION_BETA = 2.0


def confirming(index: int, budget: int | None, readings: int, design: int) -> bool:
    """Whether measurement ``index`` (0-based) is one of the last ``readings`` of ``budget`` (None: no budget, never)
    and past the ``design`` targets of the initial design."""
    return readings > 0 and budget is not None and index >= max(int(budget) - int(readings), int(design))


def confirmation_proposal(ctx: 'DecisionContext') -> Proposal | None:
    """The ``ctx.q`` places to re-measure (module docstring): the more uncertain of the leader and the challenger
    first, then the other, then the remaining measured places by :math:`\\mu + 2\\sigma`; a batch larger than the
    places measured repeats them in that order. Phase ``'confirmation'``, acquisition value the place's
    :math:`\\sigma` (field units). None before the first measurement (nothing to confirm).

    Args:
        ctx: the decision's context; its ``places`` ``(n, D)`` and model (fitted as the planner's schedule says).
    """
    places = ctx.places
    if len(places) == 0:
        return None
    model = ctx.model                    # brought up to date (and fitted when due) outside no_grad
    with torch.no_grad():
        mean, var = model.marginals(ctx.candidates(places))
    std = var.clamp_min(0).sqrt()
    upper = mean + CONFIRMATION_BETA * std
    leader = int(torch.argmax(mean))
    radius = noise_radius(ctx.execution_noise, places[leader:leader + 1].to(ctx.target_bounds))[0].to(places)
    far = (places - places[leader]).norm(dim=-1) > radius
    order = [leader]
    if bool(far.any()):
        challenger = int(torch.argmax(torch.where(far, upper, torch.full_like(upper, -torch.inf))))
        order = [challenger, leader] if float(std[challenger]) > float(std[leader]) else [leader, challenger]
    rest = [int(i) for i in torch.argsort(upper, descending=True) if int(i) not in order]
    order = (order + rest) * (ctx.q // len(places) + 1)
    picks = order[:ctx.q]
    return Proposal.stack([Proposal(places[i].clone(), 'confirmation', float(std[i])) for i in picks]) \
        if ctx.q > 1 else Proposal(places[picks[0]].clone(), 'confirmation', float(std[picks[0]]))

r"""The recommendation "the best posterior mean anywhere in the box", shared by the planner's ``'area_mean'`` rule and
the methods that recommend that way (NES, BO-UU, standard EI): :math:`\operatorname{argmax}_{\mathbf x}
\hat\mu(P_{\mathbf x})` over the search box, the mean of the robust objective :math:`g` for robust candidates
(Fröhlich et al. 2020 §2) and of :math:`f` for points, maximised by the planner's maximiser on BoTorch's
``PosteriorMean`` of the model seen over targets.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from botorch.acquisition.analytic import PosteriorMean
from torch import Tensor

from ..models import TargetModel
from ..optim import maximize

if TYPE_CHECKING:
    from .method import DecisionContext, Recommendation

__all__ = ['area_mean_recommendation', 'sobol_points', 'AREA_MEAN_SEED_OFFSET']

#: the maximiser's seed is the decision's seed plus this offset, so the recommendation's raw samples differ from the
#: decision's (which uses the decision's seed itself) while staying reproducible
AREA_MEAN_SEED_OFFSET = 50_000


def area_mean_recommendation(ctx: 'DecisionContext') -> 'Recommendation':
    """The target in ``ctx.target_bounds`` with the largest posterior mean of its candidate distribution, with the
    mean and standard deviation there (index -1: not a past target)."""
    from .method import Recommendation

    model = ctx.model
    target, _ = maximize(PosteriorMean(TargetModel(model, ctx.candidates)), ctx.target_bounds, ctx.optimizer,
                         seed=ctx.seed + AREA_MEAN_SEED_OFFSET)
    with torch.no_grad():
        mean, var = model.marginals(ctx.candidates(target.reshape(1, -1)))
    return Recommendation(target, float(mean[0]), float(var[0].sqrt()), -1)


def sobol_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    """``(n, d)`` scrambled Sobol points in ``bounds`` ``(2, d)`` (seeded; dtype and device of ``bounds``)."""
    engine = torch.quasirandom.SobolEngine(bounds.shape[1], scramble=True, seed=seed)
    u = engine.draw(n, dtype=bounds.dtype).to(bounds.device)
    return bounds[0] + u * (bounds[1] - bounds[0])

r"""The planner's recommendation rules (:data:`RECOMMENDATION_RULES`, :func:`rule_recommendation`: where the
robust peak is believed to be), and the recommendation "the best posterior mean anywhere in the box", shared by the
``'area_mean'`` rule and the methods that recommend that way (NES, BO-UU, standard EI): :math:`\operatorname{argmax}
_{\mathbf x} \hat\mu(P_{\mathbf x})` over the search box, the mean of the robust objective :math:`g` for robust
candidates (Fröhlich et al. 2020 §2) and of :math:`f` for points, maximised by the planner's maximiser on BoTorch's
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
    from ..planner import Planner
    from .method import DecisionContext, Recommendation

__all__ = ['area_mean_recommendation', 'rule_recommendation', 'sobol_points', 'AREA_MEAN_SEED_OFFSET',
           'RECOMMENDATION_RULES']

#: recommendation rules (:meth:`~uncertain_bo.planner.Planner.recommend`): what each returns
RECOMMENDATION_RULES = {
    'past_mean': 'past target with the best posterior mean of its candidate distribution (paper Alg. 1)',
    'past_lcb': 'past target with the best lower confidence bound mu - 2 sigma of its candidate distribution',
    'area_mean': 'target anywhere in the bounds maximising the posterior mean of its candidate distribution',
    'highest_reading': 'past target whose reading was highest (what a survey reports)',
    'top_mean': 'among past targets whose reading is not significantly below the highest (within 1.96 sqrt(2) '
                'sensor noise stds of it), the one with the best posterior mean of its candidate distribution',
    'sensor_mean': "past target with the best posterior mean of its candidate distribution when each reading's noise "
                   "is its sensor's alone (the reported variance), not the learned extra noise",
}

#: two-sided 95 % band of the difference of two readings of equal true value, in sensor noise stds: 1.96 sqrt(2)
TIE_BAND = 1.96 * 2 ** 0.5

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


def sensor_noise_model(model):
    r"""A copy of ``model`` (a fitted :class:`~uncertain_bo.models.DistributionGP`, unchanged) whose readings'
    noise is their sensor's alone: each reading with a reported variance :math:`\sigma^2_{\epsilon,i} > 0` keeps
    only it, the learned extra noise :math:`\lambda` is dropped, and a reading without a reported variance is
    given :math:`\lambda` instead (its sensor's noise is unknown). Same kernel, lengthscales, signal variance and
    mean.

    Why: :math:`\lambda` is fitted by marginal likelihood and absorbs whatever the kernel cannot follow (a peak
    narrower than the lengthscale, a step) as well as the sensor's noise; the posterior mean under it smooths a
    real narrow peak away. Under the sensor's noise alone the mean at a reading shrinks towards its neighbours
    only as far as the sensor's noise explains (the winner's curse of the highest reading), which a reading far
    above its neighbours on a quiet sensor does not.
    """
    return model.with_reading_noise(_sensor_variances(model.reading_noise, model))


def _sensor_variances(reported: Tensor, model) -> Tensor:
    """``reported`` reading variances ``(k,)`` (output units²), the learned noise :math:`\\lambda` where one is 0
    (not reported)."""
    learned = float(model.hyperparameters()['noise'])
    return torch.where(reported > 0, reported, torch.full_like(reported, learned))


def _top_mean(planner: 'Planner', mean: Tensor) -> int:
    r"""Index of the ``'top_mean'`` past target: of the targets whose reading :math:`y_i` is within
    :data:`TIE_BAND` :math:`\cdot\sqrt{(\sigma^2_{\epsilon,i} + \sigma^2_{\epsilon,*})/2}` of the highest
    :math:`y_*` (indistinguishable from it at 95 % under the sensor's noise: the reported variances, the learned
    noise :math:`\lambda` for a reading without one), the one with the best posterior mean ``mean`` ``(n,)``. A
    reading clearly above every other is kept as the highest-reading rule keeps it; among readings that differ by
    no more than the sensor's noise the posterior mean, which pools the neighbours, decides (the winner's curse of
    the highest of n noisy readings is about :math:`\sigma_\epsilon\sqrt{2\ln n}`)."""
    y = planner.y.to(mean)
    var = _sensor_variances(planner.observations.reading_variances.to(mean), planner.model)
    top = int(torch.argmax(y))
    tied = y >= y[top] - TIE_BAND * ((var + var[top]) / 2).sqrt()
    return int(torch.argmax(torch.where(tied, mean, torch.full_like(mean, -torch.inf))))


def rule_recommendation(planner: 'Planner', ctx: 'DecisionContext', rule: str) -> 'Recommendation':
    """The recommendation of ``rule`` (a key of :data:`RECOMMENDATION_RULES`) on ``planner``'s model, which is up
    to date: the target, the posterior mean and standard deviation of its candidate distribution, and the index of
    the past target (-1 for one that is not: ``'area_mean'``, or ``'highest_reading'`` won by an en-route reading,
    reported at that reading's location mean clamped into the bounds)."""
    from .method import Recommendation

    if rule == 'area_mean':
        return area_mean_recommendation(ctx)
    model, targets, bounds = planner.model, planner.targets, planner.bounds
    with torch.no_grad():
        mean, var = model.marginals(planner.candidates(targets))
    if rule == 'highest_reading':
        y = planner.y
        i = int(torch.argmax(y))
        en_route_y = planner.en_route_y
        if en_route_y.numel() and float(en_route_y.max()) > float(y[i]):
            j = int(torch.argmax(en_route_y))
            where = planner.observations.en_route[j][0].mean[0].to(bounds)
            where = torch.minimum(torch.maximum(where, bounds[0]), bounds[1])
            with torch.no_grad():
                m, v = model.marginals(planner.candidates(where.reshape(1, -1)))
            return Recommendation(where, float(m[0]), float(v[0].sqrt()), -1)
    elif rule == 'top_mean':
        i = _top_mean(planner, mean)
    elif rule == 'sensor_mean':
        with torch.no_grad():
            mean, var = sensor_noise_model(model).marginals(planner.candidates(targets))
        i = int(torch.argmax(mean))
    elif rule == 'past_lcb':
        i = int(torch.argmax(mean - 2.0 * var.clamp_min(0).sqrt()))
    else:
        i = int(torch.argmax(mean))
    return Recommendation(targets[i].clone(), float(mean[i]), float(var[i].sqrt()), i)

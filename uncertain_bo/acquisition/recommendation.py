r"""The planner's recommendation rules (:data:`RECOMMENDATION_RULES`, :func:`rule_recommendation`: where the
robust peak is believed to be), and the recommendation "the best posterior mean anywhere in the box", shared by the
``'area_mean'`` rule and the methods that recommend that way (NES, BO-UU, standard EI): :math:`\operatorname{argmax}
_{\mathbf x} \hat\mu(P_{\mathbf x})` over the search box, the mean of the robust objective :math:`g` for robust
candidates (Fröhlich et al. 2020 §2) and of :math:`f` for points, maximised by the planner's maximiser on BoTorch's
``PosteriorMean`` of the model seen over targets.

**Every rule over past measurements names a place that was measured** (:attr:`~uncertain_bo.planning.planner.Planner.
measured_places`), with the location distribution of the reading taken there (:class:`~uncertain_bo.acquisition.
Recommendation`). A measurement's place is

- its commanded target :math:`\mathbf x_t` when the rover reached it: the reading was taken there, up to the execution
  noise, and the robust objective :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]` is defined over
  such commands (the candidate distribution :math:`\hat P_{\mathbf x}` models where a rover sent to
  :math:`\mathbf x` measures), so the rules that rank it (``'past_mean'``, ``'past_lcb'``, ``'top_mean'``,
  ``'sensor_mean'``) rank commands, as uGP-UCB's :math:`\operatorname{argmax}_t \hat\mu(\hat P_{\mathbf x_t})`
  (Oliveira et al. 2019, Alg. 1);
- where its reading was taken, the mean of its location distribution :math:`P^L_t` (clamped into the search bounds),
  when the rover did not reach the target (``observe(..., goal_timed_out=True)``: a goal that timed out, a stop on the
  way by a budget): that target was never measured, and its candidate distribution knows nothing of the reading that
  was meant for it;
- for an en-route reading (no target at all; only ``'highest_reading'`` ranks them), where it was taken.

Why not always the location mean: where targets are reached, ranking the location means instead of the targets adds
the execution and localisation scatter to the recommendation and follows each reading's noise more closely. On the
paper-style world of ``test/planning/test_planner.py`` (execution noise 0.08, localisation noise 0.04, 25 measurements,
16 seeds, paired) ``'past_mean'`` over the location means had a median normalised regret of 0.0244 against 0.0159 over
the targets (better on 5 of 16, Wilcoxon p = 0.23), and the highest reading at its location mean 0.0616 against
0.0239 at its target (better on 6 of 16, p = 0.051). Where the target was not reached, only the place where the
reading was taken was measured.

``'area_mean'`` (and the methods with it as their own rule: NES, BO-UU, EI) searches the whole box: its place is
predicted, not measured (index -1, no location distribution). The benchmarks score every recommendation where it says
(:mod:`uncertain_bo.benchmarks.runner`: the regret at the recommended place).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from botorch.acquisition.analytic import PosteriorMean
from torch import Tensor

from ..models import TargetModel
from .optimize import maximize

if TYPE_CHECKING:
    from ..planning.observation_log import ObservedData
    from .method import DecisionContext, Recommendation

__all__ = ['area_mean_recommendation', 'rule_recommendation', 'AREA_MEAN_SEED_OFFSET',
           'RECOMMENDATION_RULES']

#: recommendation rules (:meth:`~uncertain_bo.planning.planner.Planner.recommend`): what each returns
RECOMMENDATION_RULES = {
    'past_mean': 'measured place (a past target the rover reached, else where its reading was taken) with the best '
                 'posterior mean of its candidate distribution (paper Alg. 1)',
    'past_lcb': 'measured place with the best lower confidence bound mu - 2 sigma of its candidate distribution',
    'area_mean': 'place anywhere in the bounds maximising the posterior mean of its candidate distribution (predicted, '
                 'not measured)',
    'highest_reading': 'measured place of the highest reading (what a survey reports; an en-route reading where it '
                       'was taken)',
    'top_mean': 'among the measured places whose reading is not significantly below the highest (within 1.96 sqrt(2) '
                'sensor noise stds of it), the one with the best posterior mean of its candidate distribution',
    'sensor_mean': "measured place with the best posterior mean of its candidate distribution when each reading's "
                   "noise is its sensor's alone (the reported variance), not the learned extra noise",
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


def _top_mean(observations: 'ObservedData', model, mean: Tensor) -> int:
    r"""Index of the ``'top_mean'`` past target: of the targets whose reading :math:`y_i` is within
    :data:`TIE_BAND` :math:`\cdot\sqrt{(\sigma^2_{\epsilon,i} + \sigma^2_{\epsilon,*})/2}` of the highest
    :math:`y_*` (indistinguishable from it at 95 % under the sensor's noise: the reported variances, the learned
    noise :math:`\lambda` of ``model`` for a reading without one), the one with the best posterior mean ``mean``
    ``(n,)``. A reading clearly above every other is kept as the highest-reading rule keeps it; among readings that
    differ by no more than the sensor's noise the posterior mean, which pools the neighbours, decides (the winner's
    curse of the highest of n noisy readings is about :math:`\sigma_\epsilon\sqrt{2\ln n}`)."""
    y = observations.y.to(mean)
    var = _sensor_variances(observations.reading_variances.to(mean), model)
    top = int(torch.argmax(y))
    tied = y >= y[top] - TIE_BAND * ((var + var[top]) / 2).sqrt()
    return int(torch.argmax(torch.where(tied, mean, torch.full_like(mean, -torch.inf))))


def rule_recommendation(ctx: 'DecisionContext', rule: str) -> 'Recommendation':
    """The recommendation of ``rule`` (a key of :data:`RECOMMENDATION_RULES`) from the decision snapshot ``ctx``
    (its model, brought up to date on first read, its read-only observations and candidate distributions; module
    docstring: every rule but ``'area_mean'`` names a place that was measured).

    Returns:
        The place (``target``: a measurement's :attr:`~uncertain_bo.planning.planner.Planner.measured_places` row), the
        posterior mean and standard deviation of its candidate distribution, the measurement's index and the location
        distribution of its reading; index -1 for ``'highest_reading'`` won by an en-route reading (the place and
        location distribution are that reading's) and for ``'area_mean'`` (a place anywhere in the bounds, no
        location distribution).
    """
    if rule == 'area_mean':
        return area_mean_recommendation(ctx)
    if rule == 'highest_reading':
        return _highest_reading(ctx)
    model = sensor_noise_model(ctx.model) if rule == 'sensor_mean' else ctx.model
    with torch.no_grad():
        mean, var = model.marginals(ctx.candidates(ctx.places))
    if rule == 'top_mean':
        i = _top_mean(ctx.observations, ctx.model, mean)
    elif rule == 'past_lcb':
        i = int(torch.argmax(mean - 2.0 * var.clamp_min(0).sqrt()))
    else:
        i = int(torch.argmax(mean))
    return ctx.measured_recommendation(i, float(mean[i]), float(var[i].clamp_min(0).sqrt()))


def _highest_reading(ctx: 'DecisionContext') -> 'Recommendation':
    """The measured place of the highest reading (a measurement's, or where an en-route reading was taken when one is
    higher), with the posterior mean and standard deviation of the candidate distribution there."""
    from .method import Recommendation

    observed, bounds = ctx.observations, ctx.target_bounds
    i = int(torch.argmax(observed.y))
    en_route_y = observed.en_route_y
    if en_route_y.numel() and float(en_route_y.max()) > float(observed.y[i]):
        location = observed.en_route[int(torch.argmax(en_route_y))][0]
        where = location.mean[0].to(bounds).clamp(bounds[0], bounds[1])
        index = -1
    else:
        where, location, index = ctx.places[i], ctx.locations[i], i
    with torch.no_grad():
        m, v = ctx.model.marginals(ctx.candidates(where.reshape(1, -1)))
    return Recommendation(where.clone(), float(m[0]), float(v[0].clamp_min(0).sqrt()), index, location)

r"""NES's baselines (Fröhlich et al. 2020, §4): BO-UU (Beland & Nair 2017) — standard acquisitions applied to
the GP of the robust objective :math:`g` as if :math:`g` were observed — and standard BO (EI on the GP of
:math:`f`, which finds the non-robust optimum). Unscented BO is :mod:`~uncertain_bo.acquisition.uei`.

On the shared model the GP of :math:`g` is the posterior at the candidates :math:`\hat P_{\mathbf x}`
(:math:`m_g, v_g`, Fröhlich et al. 2020, Eq. 3), which :class:`~uncertain_bo.models.TargetModel` presents to
BoTorch as a model over targets; so BO-UU is BoTorch's acquisitions on that view:

- ``bo_uu_ei``: BoTorch's ``LogExpectedImprovement`` (log of :math:`\sigma_g[z\Phi(z) + \varphi(z)]`,
  :math:`z = (m_g - \tau)/\sigma_g`), incumbent :math:`\tau = \max_{\mathbf x} m_g` over the search box (the
  reference code's);
- ``bo_uu_ucb``: BoTorch's ``UpperConfidenceBound`` with ``beta`` :math:`= 2^2`, i.e. :math:`m_g + 2\sqrt{v_g}`
  (BoTorch weights :math:`\sigma` by :math:`\sqrt\beta`);
- ``bo_uu_mes``: BoTorch's ``qMaxValueEntropy`` (Wang & Jegelka 2017, Eq. 6) with Gumbel-sampled max-values over
  quasi-random points of the box;
- ``ei``: ``LogExpectedImprovement`` on :math:`f` (Dirac candidates, GP on the commanded targets), incumbent
  :math:`\max_{\mathbf x} m_f`.

All recommend :math:`\operatorname{argmax}_{\mathbf x}` of their posterior mean over the search box
(:func:`~uncertain_bo.acquisition.recommendation.area_mean_recommendation`).
"""
from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.acquisition.analytic import LogExpectedImprovement, UpperConfidenceBound
from botorch.acquisition.max_value_entropy_search import qMaxValueEntropy
from torch import Tensor

from ..planning.initial_design import sobol_points
from ..models import TargetModel
from .base import incumbent
from .method import DecisionContext, Method, Recommendation, register
from .recommendation import area_mean_recommendation

__all__ = ['BOUUEI', 'BOUUUCB', 'BOUUMES', 'StandardEI']


def _incumbent(ctx: DecisionContext) -> Tensor:
    """:math:`\\max_{\\mathbf x}` of the posterior mean over the search box (the reference code's incumbent), in the
    model's dtype."""
    return incumbent(area_mean_recommendation(ctx).mean, ctx.bounds)


class _AreaRecommending(Method):
    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        return None if rule is not None else area_mean_recommendation(ctx)


@register
class BOUUEI(_AreaRecommending):
    """BO-UU with EI on the GP of :math:`g` (Beland & Nair 2017; Fröhlich et al. 2020, §4).

    Example:
        BOUUEI's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('bo_uu_ei', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'bo_uu_ei'
    description = 'BO-UU EI: expected improvement on the GP of the robust objective (Beland & Nair 2017)'

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return LogExpectedImprovement(TargetModel(ctx.model, ctx.candidates), best_f=_incumbent(ctx))


@register
class BOUUUCB(_AreaRecommending):
    """BO-UU with UCB :math:`m_g + \\beta\\sqrt{v_g}` on the GP of :math:`g` (the reference code: β = 2), BoTorch's
    ``UpperConfidenceBound`` with its ``beta`` = β².

    Args:
        beta: the factor on the standard deviation (default 2).

    Example:
        BOUUUCB's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('bo_uu_ucb', measurements=4,
        ...                                          settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'bo_uu_ucb'
    description = ('BO-UU UCB: m_g + beta sqrt(v_g) on the GP of the robust objective (Beland & Nair 2017); '
                   'setting beta (2)')

    def __init__(self, beta: float = 2.0):
        self.beta = float(beta)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return UpperConfidenceBound(TargetModel(ctx.model, ctx.candidates), beta=self.beta ** 2)


@register
class BOUUMES(_AreaRecommending):
    """BO-UU with max-value entropy search on the GP of :math:`g`: BoTorch's ``qMaxValueEntropy`` (Wang & Jegelka
    2017; Gumbel max-values fitted on the candidate set, which BoTorch extends by the past targets).

    Args:
        n_samples: max-value samples K (default 10). n_points: quasi-random points of the candidate set
            (default 100, the reference code's).

    Example:
        BOUUMES's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('bo_uu_mes', measurements=4,
        ...                                          settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'bo_uu_mes'
    description = ('BO-UU MES: max-value entropy search on the GP of the robust objective; settings n_samples (10), '
                   'n_points (100)')

    def __init__(self, n_samples: int = 10, n_points: int = 100):
        self.n_samples, self.n_points = int(n_samples), int(n_points)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = TargetModel(ctx.model, ctx.candidates)
        pts = sobol_points(self.n_points, ctx.target_bounds, ctx.seed)
        with torch.random.fork_rng(devices=[pts.device] if pts.is_cuda else []):
            torch.manual_seed(ctx.seed)      # the Gumbel draws come from the global stream
            return qMaxValueEntropy(model, candidate_set=pts, num_mv_samples=self.n_samples,
                                    train_inputs=ctx.targets.to(pts))


@register
class StandardEI(_AreaRecommending):
    """Standard BO: EI on the GP of :math:`f` at the commanded targets, ignoring input noise (finds the
    non-robust optimum; Fröhlich et al. 2020's "standard BO").

    Example:
        StandardEI's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('ei', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'ei'
    description = 'standard BO: expected improvement on the GP of f at the targets, ignoring input noise'
    inputs = 'target'
    robust_candidates = False

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return LogExpectedImprovement(TargetModel(ctx.model, ctx.candidates), best_f=_incumbent(ctx))

r"""NES's baselines (Fröhlich et al. 2020, §4): BO-UU (Beland & Nair 2017) — standard acquisitions applied to
the GP of the robust objective :math:`g` as if :math:`g` were observed — and standard BO (EI on the GP of
:math:`f`, which finds the non-robust optimum). Unscented BO is :mod:`~uncertain_bo.acquisition.uei`.

On the shared model the GP of :math:`g` is the posterior at the candidates :math:`\hat P_{\mathbf x}`
(:math:`m_g, v_g`, Fröhlich et al. 2020, Eq. 3), so BO-UU is an ordinary acquisition over robust candidates:

- ``bo_uu_ei``: EI :math:`\sigma_g[z\Phi(z) + \varphi(z)]`, :math:`z = (m_g - \tau)/\sigma_g`, incumbent
  :math:`\tau = \max_{\mathbf x} m_g` over the search box (the reference code's), maximised in log form;
- ``bo_uu_ucb``: :math:`m_g + 2\sqrt{v_g}`;
- ``bo_uu_mes``: max-value entropy search (Wang & Jegelka 2017, Eq. 6) on :math:`(m_g, v_g)` with Gumbel-sampled
  max-values fitted to :math:`\Pr(g^* < z) \approx \prod_i \Phi((z - m_i)/s_i)` over quasi-random points;
- ``ei``: EI on :math:`f` (Dirac candidates, GP on the commanded targets), incumbent :math:`\max_{\mathbf x} m_f`.

All recommend :math:`\operatorname{argmax}_{\mathbf x}` of their posterior mean over the search box.
"""
from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from ..models import DistributionGP
from .base import TargetAcquisition
from .method import DecisionContext, Method, Recommendation, register
from .nes import _unit_points, area_mean_recommendation
from .uei import log_expected_improvement
from .ugp_ucb import UpperConfidenceBound

__all__ = ['ExpectedImprovement', 'MaxValueEntropy', 'gumbel_max_values', 'BOUUEI', 'BOUUUCB', 'BOUUMES',
           'StandardEI']


class ExpectedImprovement(TargetAcquisition):
    """:math:`\\log\\mathrm{EI}` of the candidates' posterior over the incumbent ``best`` (model output units)."""

    def __init__(self, model: DistributionGP, candidates, best: float):
        super().__init__(model, candidates)
        self.best = float(best)

    def score(self, targets: Tensor) -> Tensor:
        mean, var = self.model.posterior(self.candidates(targets))
        return log_expected_improvement(mean, var.sqrt(), self.best)


def gumbel_max_values(mean: Tensor, std: Tensor, n: int, generator: torch.Generator, floor: float) -> Tensor:
    r"""``n`` max-value samples from the Gumbel fit of :math:`\Pr(g^* < z) \approx \prod_i\Phi((z - m_i)/s_i)`
    (Wang & Jegelka 2017, §3.1): quartiles :math:`y_1, y_2` of that CDF by bisection, :math:`b = (y_1 - y_2)/
    (\log(-\log 0.75) - \log(-\log 0.25))`, :math:`a = y_1 + b\log(-\log 0.25)`, samples :math:`a - b\log(-\log U)`
    floored at ``floor`` (e.g. the best observation)."""
    def log_cdf(z: float) -> float:
        return float(torch.special.log_ndtr((z - mean) / std).sum())

    def quantile(p: float) -> float:
        lo, hi = float((mean - 5 * std).max()), float((mean + 5 * std).max())
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if log_cdf(mid) < math.log(p) else (lo, mid)
        return 0.5 * (lo + hi)

    y1, y2 = quantile(0.25), quantile(0.75)
    b = (y1 - y2) / (math.log(-math.log(0.75)) - math.log(-math.log(0.25)))
    a = y1 + b * math.log(-math.log(0.25))
    u = torch.rand(n, generator=generator, dtype=mean.dtype, device=mean.device).clamp(1e-12, 1 - 1e-12)
    return (a - b * torch.log(-torch.log(u))).clamp_min(floor)


class MaxValueEntropy(TargetAcquisition):
    r"""MES (Wang & Jegelka 2017, Eq. 6): :math:`\frac1K\sum_k[\gamma_k\varphi(\gamma_k)/(2\Phi(\gamma_k)) -
    \log\Phi(\gamma_k)]`, :math:`\gamma_k = (y^*_k - \mu)/\sigma`."""

    def __init__(self, model: DistributionGP, candidates, max_values: Tensor):
        super().__init__(model, candidates)
        self.max_values = max_values

    def score(self, targets: Tensor) -> Tensor:
        mean, var = self.model.posterior(self.candidates(targets))
        gamma = (self.max_values[None] - mean[:, None]) / var.sqrt()[:, None]
        log_cdf = torch.special.log_ndtr(gamma)
        ratio = torch.exp(-0.5 * gamma ** 2 - 0.5 * math.log(2 * math.pi) - log_cdf)
        return (0.5 * gamma * ratio - log_cdf).mean(-1)


def _incumbent(ctx: DecisionContext) -> float:
    """:math:`\\max_{\\mathbf x}` of the posterior mean over the search box (the reference code's incumbent)."""
    return area_mean_recommendation(ctx).mean


class _AreaRecommending(Method):
    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        return None if rule is not None else area_mean_recommendation(ctx)


@register
class BOUUEI(_AreaRecommending):
    """BO-UU with EI on the GP of :math:`g` (Beland & Nair 2017; Fröhlich et al. 2020, §4)."""

    name = 'bo_uu_ei'
    description = 'BO-UU EI: expected improvement on the GP of the robust objective (Beland & Nair 2017)'

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return ExpectedImprovement(ctx.model, ctx.candidates, _incumbent(ctx))


@register
class BOUUUCB(_AreaRecommending):
    """BO-UU with UCB :math:`m_g + \\beta\\sqrt{v_g}` on the GP of :math:`g` (the reference code: β = 2).

    Args:
        beta: the factor on the standard deviation (default 2).
    """

    name = 'bo_uu_ucb'
    description = ('BO-UU UCB: m_g + beta sqrt(v_g) on the GP of the robust objective (Beland & Nair 2017); '
                   'setting beta (2)')

    def __init__(self, beta: float = 2.0):
        self.beta = float(beta)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return UpperConfidenceBound(ctx.model, ctx.candidates, self.beta)


@register
class BOUUMES(_AreaRecommending):
    """BO-UU with max-value entropy search on the GP of :math:`g` (Wang & Jegelka 2017, Gumbel max-values).

    Args:
        n_samples: Gumbel max-value samples K (default 10). n_points: quasi-random points of the Gumbel fit
            (default 100, the reference code's).
    """

    name = 'bo_uu_mes'
    description = ('BO-UU MES: max-value entropy search on the GP of the robust objective; settings n_samples (10), '
                   'n_points (100)')

    def __init__(self, n_samples: int = 10, n_points: int = 100):
        self.n_samples, self.n_points = int(n_samples), int(n_points)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        pts = _unit_points(self.n_points, ctx.target_bounds, ctx.seed)
        with torch.no_grad():
            mean, var = model.posterior(ctx.candidates(pts))
            best = float(model.posterior(ctx.candidates(ctx.targets))[0].max())
        gen = torch.Generator(device=pts.device).manual_seed(ctx.seed)
        return MaxValueEntropy(model, ctx.candidates, gumbel_max_values(mean, var.sqrt(), self.n_samples, gen, best))


@register
class StandardEI(_AreaRecommending):
    """Standard BO: EI on the GP of :math:`f` at the commanded targets, ignoring input noise (finds the
    non-robust optimum; Fröhlich et al. 2020's "standard BO")."""

    name = 'ei'
    description = 'standard BO: expected improvement on the GP of f at the targets, ignoring input noise'
    inputs = 'target'
    robust_candidates = False

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        return ExpectedImprovement(ctx.model, ctx.candidates, _incumbent(ctx))

r"""NES-RS (Fröhlich et al. 2020, §3.2.1, Algorithm 1): noisy-input entropy search by rejection sampling, on the
shared model (NES-EP and the robust max-values: :mod:`~uncertain_bo.acquisition.nes`).

Function samples of :math:`(f, g)` are posterior sample paths of the model
(:class:`~uncertain_bo.models.sample_paths.PosteriorSamplePaths`: :math:`f` at the query distribution, :math:`g` at
:math:`\hat P_{\mathbf x}`, one path each), accepted when the sample's robust maximum is at most :math:`g^*_k` until
``L`` are accepted; the entropy of :math:`y = \tilde f(\mathbf x) + \epsilon` is the resubstitution estimator of a
Gaussian KDE (Ahmad & Lin 1976), binned on a grid (Silverman 1982) so each candidate costs :math:`O(L + B^2)` instead
of :math:`O(L^2)`.
"""
from __future__ import annotations

import math

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from ..models import DistributionGP
from ..models.sample_paths import PosteriorSamplePaths
from .method import DecisionContext, register
from .nes import CandidateFn, NESBase, max_points, query_for

__all__ = ['kde_entropy', 'rs_entropy_reduction', 'RSAcquisition', 'NESRS']


def kde_entropy(samples: Tensor, bins: int = 128) -> Tensor:
    r"""Resubstitution entropy estimate :math:`-\tfrac1L\sum_i\log\hat p(y_i)` of a Gaussian KDE with Scott's
    bandwidth :math:`h = \hat\sigma L^{-1/5}` (Ahmad & Lin 1976; Fröhlich et al. 2020, §3.2.1), the KDE binned on
    ``bins`` grid cells (linear binning, Silverman 1982) and interpolated back; ``samples (q, L)`` -> ``(q,)``."""
    q, n = samples.shape
    std = samples.std(-1, keepdim=True).clamp_min(1e-12)
    h = std * n ** (-0.2)
    lo = samples.min(-1, keepdim=True).values - 3 * h
    hi = samples.max(-1, keepdim=True).values + 3 * h
    delta = (hi - lo) / (bins - 1)
    pos = (samples - lo) / delta
    i0 = pos.floor().clamp(0, bins - 2).long()
    frac = pos - i0
    counts = samples.new_zeros(q, bins)
    counts.scatter_add_(1, i0, 1 - frac)
    counts.scatter_add_(1, i0 + 1, frac)
    grid = torch.arange(bins, dtype=samples.dtype, device=samples.device)
    lag = (grid[:, None] - grid[None, :])                                 # (B, B) in cells
    z = lag[None] * (delta / h)[..., None]                                # (q, B, B)
    dens = (torch.exp(-0.5 * z ** 2) @ counts[..., None])[..., 0] / (n * h * math.sqrt(2 * math.pi))
    dens_at = dens.gather(1, i0) * (1 - frac) + dens.gather(1, i0 + 1) * frac
    return -dens_at.clamp_min(1e-300).log().mean(-1)


def rs_entropy_reduction(model: DistributionGP, candidates: CandidateFn, query: CandidateFn, targets: Tensor,
                         bounds: Tensor, g_stars: Tensor, n_accept: int = 1000, n_features: int = 500, seed: int = 0,
                         raw_points: int | None = None, max_draws: int = 20, chunk: int = 16) -> Tensor:
    r"""NES-RS acquisition (Fröhlich et al. 2020, Algorithm 1 and §3.2.1) at ``targets (q, d)``:
    :math:`\hat H_0 - \tfrac1K\sum_k\hat H_k`, with :math:`\hat H_k` the KDE entropy of ``n_accept`` accepted
    samples :math:`\tilde f(\mathbf x) + \epsilon` whose robust maximum over ``raw_points`` points (default: a
    grid of 512 in 1-D, Sobol points above) is at most :math:`g^*_k`, and :math:`\hat H_0` the same estimator on
    ``n_accept`` unconditioned samples (the paper uses the closed form
    :math:`\tfrac12\log 2\pi e(v_f + \sigma_\epsilon^2)`; estimating both terms from the same samples cancels the
    KDE's bias, which otherwise dominates where :math:`v_f` is small). Samples are drawn in batches of ``n_accept``
    sample paths up to ``max_draws`` batches (if fewer are accepted, the accepted ones are used). Returns ``(q,)``
    nats."""
    gen = torch.Generator(device=bounds.device).manual_seed(int(seed) + 7919)
    d = bounds.shape[1]
    pts = max_points(raw_points or (512 if d == 1 else max(512, min(256 * d * d, 4096))), bounds, seed)
    noise_std = math.sqrt(float(model.hyperparameters()['noise']))
    with torch.no_grad():
        at_pts, at_query = candidates(pts), query(targets)
        ys, maxima = [], []
        for _ in range(max_draws):
            paths = PosteriorSamplePaths(model, n_accept, n_features, gen)
            ys.append(paths(at_query))                                  # (q, L)
            maxima.append(paths(at_pts).max(0).values)                  # (L,)
            if min(int((torch.cat(maxima) <= g).sum()) for g in g_stars) >= n_accept:
                break
        fs = torch.cat(ys, 1)
        maxima = torch.cat(maxima)

        def entropy(cols: Tensor) -> Tensor:
            """KDE entropy of y = f̃(x) + ε over the draws ``cols``, in chunks of candidates (the binned KDE holds
            (chunk, B, B))."""
            y = fs[:, cols]
            y = y + noise_std * torch.randn(y.shape, generator=gen, dtype=y.dtype, device=y.device)
            return torch.cat([kde_entropy(c) for c in y.split(chunk)])

        h0 = entropy(torch.arange(min(n_accept, fs.shape[1]), device=fs.device))   # unconditioned, same estimator
        out = torch.zeros_like(h0)
        for g_star in g_stars:
            ok = (maxima <= g_star).nonzero().reshape(-1)[:n_accept]
            if ok.numel() < 10:                                 # g* below (nearly) every sample: no estimate
                continue
            out = out + (h0 - entropy(ok))
        return out / len(g_stars)


class RSAcquisition(AcquisitionFunction):
    """NES-RS scores (:func:`rs_entropy_reduction`) of ``X (b, 1, d)`` -> ``(b,)``, with common random numbers:
    equal calls give equal scores. Not differentiable (a rejection sampler): maximise over a candidate set.

    Example:
        The acquisition ``nes_rs`` maximises at its first decision (after three measurements, the method examples'
        set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('nes_rs', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq(torch.rand(5, 1, 1, dtype=torch.float64)).shape
        ('RSAcquisition', torch.Size([5]))
    """

    def __init__(self, model: DistributionGP, candidates: CandidateFn, query: CandidateFn, bounds: Tensor,
                 g_stars: Tensor, n_accept: int, n_features: int, seed: int, chunk: int = 16):
        super().__init__(model=model)
        self.candidates, self.query, self.bounds, self.g_stars = candidates, query, bounds, g_stars
        self.n_accept, self.n_features, self.seed, self.chunk = n_accept, n_features, seed, chunk

    @t_batch_mode_transform(expected_q=1)
    def forward(self, X: Tensor) -> Tensor:
        flat = X.reshape(-1, X.shape[-1])
        return rs_entropy_reduction(self.model, self.candidates, self.query, flat, self.bounds, self.g_stars,
                                    self.n_accept, self.n_features, self.seed, chunk=self.chunk).reshape(X.shape[:-2])


@register
class NESRS(NESBase):
    """NES-RS (Fröhlich et al. 2020, §3.2.1, Algorithm 1): rejection-sampled conditional predictive and KDE
    entropies, scored on ``n_candidates`` quasi-random targets (the reference code scores a grid of spacing
    0.005); recommends the argmax of the posterior mean of :math:`g` over the search box.

    Args:
        n_features, k, n_max_samples: see :class:`~uncertain_bo.acquisition.nes.NESBase`.
        n_accept: L, accepted samples per max-value (paper: 1000).
        n_candidates: targets scored per decision (default ``min(200 d, 1000)``).

    Example:
        NES-RS's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('nes_rs', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'nes_rs'
    description = ('NES-RS: noisy-input entropy search by rejection sampling (Froehlich et al. 2020); settings '
                   'n_features (500), k (1), n_max_samples (100), n_accept (1000), n_candidates')

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100, n_accept: int = 1000,
                 n_candidates: int | None = None):
        super().__init__(n_features, k, n_max_samples)
        self.n_accept, self.n_candidates = int(n_accept), n_candidates

    def acquisition(self, ctx: DecisionContext) -> RSAcquisition:
        model, g_stars = self._prepare(ctx)
        return RSAcquisition(model, ctx.candidates, query_for(model), ctx.target_bounds, g_stars, self.n_accept,
                             self.n_features, ctx.seed)

    def maximize(self, acq, ctx: DecisionContext) -> tuple[Tensor, float]:
        """The best of ``n_candidates`` quasi-random targets (seeded with the decision's seed)."""
        d = ctx.bounds.shape[1]
        cands = max_points(self.n_candidates or min(200 * d, 1000), ctx.bounds, ctx.seed)
        with torch.no_grad():
            scores = acq(cands[:, None, :])
        i = int(torch.argmax(scores))
        return cands[i].clone(), float(scores[i])

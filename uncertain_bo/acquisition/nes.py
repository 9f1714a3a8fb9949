r"""Noisy-input entropy search (NES; Fröhlich et al. 2020, "Noisy-Input Entropy Search for Efficient Robust
Bayesian Optimization", AISTATS), on the shared :class:`~uncertain_bo.models.DistributionGP`: NES-EP here, NES-RS in
:mod:`~uncertain_bo.acquisition.nes_rs`.

NES picks the query whose observation of :math:`f` tells most about the **robust max-value**
:math:`g^* = \max_{\mathbf x} g(\mathbf x)`, :math:`g(\mathbf x) = \mathbb E_{\boldsymbol\xi}[f(\mathbf x +
\boldsymbol\xi)]` (Eq. 1), :math:`\boldsymbol\xi \sim \mathcal N(0, \Sigma_x)`:

.. math::
    \alpha_{NES}(\mathbf x) = H[p(y(\mathbf x) | \mathcal D_n)]
    - \tfrac1K \textstyle\sum_k H[p(y(\mathbf x) | \mathcal D_n, g^*_k)]   \qquad \text{(Eqs. 4-5)}.

**One posterior for f, g and their cross-covariance.** :math:`g` is a GP jointly with :math:`f` (Eq. 3). With the
library's closed-form expected SE kernel between Gaussians
(:class:`~uncertain_bo.kernels.ExpectedRBFKernel`, Oliveira et al. 2019 Eq. 80),
:math:`k_f = k(\delta_{\mathbf x}, \delta_{\mathbf x'})`, :math:`k_{gf} = k(\mathcal N(\mathbf x, \Sigma_x),
\delta_{\mathbf x'})` and :math:`k_g = k(\mathcal N(\mathbf x, \Sigma_x), \mathcal N(\mathbf x', \Sigma_x))`: the
candidates :math:`\hat P_{\mathbf x}` of the execution-noise model are exactly NES's :math:`g`, and the GP's training
inputs may be Gaussians with covariances of their own (a rover's localisation :math:`P^L_t`), in which case the
"observation of f" at a training point is the observation of :math:`\mathbb E_{P^L_t}[f]` the model already assumes.
Every moment below is the model's own posterior (:meth:`~uncertain_bo.models.DistributionGP.posterior` jointly over
:math:`(g(\mathbf x), f(\mathbf x))`, :meth:`~uncertain_bo.models.DistributionGP.posterior_covariance` between
:math:`g` at the query and at the constraint points), in output units.

**Robust max-value samples** (§3.1, Eq. 6, App. A): :math:`g^*_s = \max_{\mathbf x}\tilde g_s(\mathbf x)` for
posterior sample paths :math:`\tilde g_s` of the model at :math:`\hat P_{\mathbf x}`
(:class:`~uncertain_bo.models.sample_paths.PosteriorSamplePaths`: the paper's random features filtered by
:math:`\exp(-\tfrac12\mathbf w^\top\Sigma\mathbf w)`, Eq. 6, for the prior; the data term by pathwise conditioning on
the model's posterior, Wilson et al. 2020, where the paper's sparse-spectrum GP draws its weights from the
feature-space posterior; the pathwise update keeps the exact posterior mean and covariance instead of the
features' approximation of them), maximised over quasi-random points polished with L-BFGS-B; K percentile levels
of the samples (App. C.3; K = 1: the median).

**NES-EP** (§3.2.2, App. B): EP for :math:`\mathbf g \le g^*` at the constraint points (Herbrich 2005, one-sided
box), the Gaussian step of Eq. 13 (the posterior of :math:`g(\mathbf x)` given :math:`\mathbf g` at the constraint
points, whose EP approximation replaces :math:`\mathbf g`), univariate moment matching at the query with
:math:`\hat m = m_0 - \sqrt{v_0}\,r` (Eq. 14 as in the main text, not the appendix's :math:`\sqrt{v_0 r}`), the map
back to :math:`f` (Eqs. 15-23) and the acquisition (Eq. 10).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from scipy.optimize import minimize
from torch import Tensor

from ..distributions import Dirac, Gaussian, LocationDistributions
from ..planning.initial_design import sobol_points
from ..kernels import ExpectedRBFKernel
from ..models import DistributionGP
from ..models.sample_paths import PosteriorSamplePaths
from .method import DecisionContext, Method, Recommendation, register
from .recommendation import area_mean_recommendation

__all__ = ['sample_robust_max_values', 'max_value_levels', 'truncated_gaussian_ep', 'upper_truncated_moments',
           'NESEntropyReduction', 'NESEP', 'query_for', 'dirac_query', 'gaussian_query', 'max_points', 'NESBase']

CandidateFn = Callable[[Tensor], LocationDistributions]


def upper_truncated_moments(mean: Tensor, var: Tensor, upper: Tensor | float) -> tuple[Tensor, Tensor]:
    r"""Mean and variance of :math:`\mathcal N(m, v)` truncated to :math:`(-\infty, u]` (Fröhlich et al. 2020,
    Eq. 14; Jawitz 2004): :math:`\beta = (u - m)/\sqrt v`, :math:`r = \varphi(\beta)/\Phi(\beta)`,
    :math:`\hat m = m - \sqrt v\, r`, :math:`\hat v = v\,(1 - r(r + \beta))`. Broadcasts; stable in the far tail
    (:math:`r` from log-densities)."""
    std = var.clamp_min(1e-300).sqrt()
    beta = (upper - mean) / std
    log_phi = -0.5 * beta ** 2 - 0.5 * math.log(2 * math.pi)
    r = torch.exp(log_phi - torch.special.log_ndtr(beta))
    shrink = (1.0 - r * (r + beta)).clamp(1e-12, 1.0)
    return mean - std * r, var * shrink


def truncated_gaussian_ep(mu0: Tensor, sigma0: Tensor, upper: float | Tensor, max_sweeps: int = 50,
                          tol: float = 1e-6) -> tuple[Tensor, Tensor]:
    r"""EP approximation :math:`\mathcal N(\boldsymbol\mu_1, \Sigma_1)` of :math:`\mathcal N(\boldsymbol\mu_0,
    \Sigma_0)` restricted to :math:`\{g_i \le u\ \forall i\}` (Fröhlich et al. 2020, Eq. 8; the sequential
    rank-one EP of Herbrich 2005, "On Gaussian Expectation Propagation", Alg. 3, one-sided box).

    Args:
        mu0: ``(n,)`` prior mean. sigma0: ``(n, n)`` prior covariance (PSD). upper: the bound :math:`u`.
        max_sweeps: sweeps over the ``n`` factors. tol: stop when site parameters change less than this.

    Returns:
        ``(mu1 (n,), sigma1 (n, n))``. For ``n = 1`` these are the exact truncated moments.
    """
    from scipy.special import log_ndtr
    n = mu0.shape[0]
    mu, sig = mu0.detach().cpu().numpy().astype(float), sigma0.detach().cpu().numpy().astype(float)
    site_pi, site_mu = np.zeros(n), np.zeros(n)
    upper = float(upper)
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    for _ in range(max_sweeps):     # scalar loop over small n: NumPy (a decision's EP costs milliseconds)
        delta = 0.0
        for j in range(n):
            t = sig[:, j].copy()
            d = site_pi[j] * sig[j, j]
            e = 1.0 / (1.0 - d)
            phi = mu[j] + d * e * (mu[j] - site_mu[j])            # cavity mean
            psi = max(sig[j, j] * e, 1e-300)                      # cavity variance
            sq = math.sqrt(psi)
            b = (upper - phi) / sq
            r = math.exp(-0.5 * b * b - half_log_2pi - float(log_ndtr(b)))
            alpha = -r / sq
            w = min(max(r * (r + b), 1e-14), 1.0 - 1e-10)
            beta = w / psi
            mu += e * (site_pi[j] * (mu[j] - site_mu[j]) + alpha) * t
            sig += (site_pi[j] * e - e * e * beta) * np.outer(t, t)
            new_pi = beta / (1.0 - beta * psi)
            new_mu = alpha / beta + phi
            delta = max(delta, abs(new_pi - site_pi[j]), abs(new_mu - site_mu[j]))
            site_pi[j], site_mu[j] = new_pi, new_mu
        if delta <= tol:
            break
    return mu0.new_tensor(mu), mu0.new_tensor(0.5 * (sig + sig.T))


def max_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    """Points at which sampled functions are maximised: a regular grid with both ends in 1-D (maxima often lie on
    the boundary), scrambled Sobol points above."""
    if bounds.shape[1] == 1:
        return torch.linspace(0, 1, n, dtype=bounds.dtype, device=bounds.device)[:, None] * (bounds[1] - bounds[0]) \
            + bounds[0]
    return sobol_points(n, bounds, seed)


def sample_robust_max_values(model: DistributionGP, candidates: CandidateFn, bounds: Tensor, num: int = 100,
                             n_features: int = 500, seed: int = 0, raw_points: int | None = None,
                             polish: bool | None = None) -> tuple[Tensor, Tensor, PosteriorSamplePaths]:
    r"""Robust max-value samples :math:`g^*_s = \max_{\mathbf x}\tilde g_s(\mathbf x)` (Fröhlich et al. 2020,
    §3.1, Eq. 6) from posterior sample paths :math:`\tilde g_s` at the candidates :math:`\hat P_{\mathbf x}`.

    Args:
        model: the GP (expected SE kernel). candidates: targets ``(q, d)`` -> :math:`\hat P_{\mathbf x}` (Gaussian).
        bounds: ``(2, d)`` domain (physical units). num: samples. n_features: M.
        seed: seeds the paths and the quasi-random points. raw_points: points scored per sample
            (default a grid of 1024 in 1-D, else ``min(256 d², 4096)``, at least 512). polish: refine each
            sample's best point with L-BFGS-B (one scipy call for all samples; the objective is separable);
            default: above 1-D (in 1-D the 1024 points leave a relative error of about 1e-5 for lengthscales
            >= 0.05 of the box).

    Returns:
        ``(max_values (num,), argmax (num, d), paths)`` in output units; ``paths(candidates(x))`` evaluates the
        sampled robust functions, ``(q, num)``.
    """
    gen = torch.Generator(device=bounds.device).manual_seed(int(seed))
    paths = PosteriorSamplePaths(model, num, n_features, gen)
    d = bounds.shape[1]
    n_raw = raw_points or (1024 if d == 1 else max(512, min(256 * d * d, 4096)))
    pts = max_points(n_raw, bounds, seed)
    with torch.no_grad():
        vals = paths(candidates(pts))                 # (n_raw, num)
    best, idx = vals.max(0)
    x0 = pts[idx]                                     # (num, d)
    if not (d > 1 if polish is None else polish):
        return best, x0, paths
    lo, hi = bounds[0].cpu().numpy(), bounds[1].cpu().numpy()
    cols = torch.arange(num, device=bounds.device)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = torch.as_tensor(z, dtype=bounds.dtype, device=bounds.device).reshape(num, d).requires_grad_(True)
        with torch.enable_grad():                     # whatever the caller's grad mode (a decision under no_grad)
            val = paths(candidates(x))[cols, cols].sum()  # Σ_s g̃_s(x_s): separable
            (grad,) = torch.autograd.grad(-val, x)
        return -float(val.detach()), grad.reshape(-1).cpu().numpy().astype(float)

    res = minimize(fun, x0.reshape(-1).cpu().numpy(), jac=True, method='L-BFGS-B',
                   bounds=list(zip(np.tile(lo, num), np.tile(hi, num))), options={'maxiter': 100})
    x1 = torch.as_tensor(res.x, dtype=bounds.dtype, device=bounds.device).reshape(num, d)
    with torch.no_grad():
        v1 = paths(candidates(x1))[cols, cols]
    better = v1 > best
    return torch.where(better, v1, best), torch.where(better[:, None], x1, x0), paths


def max_value_levels(samples: Tensor, k: int = 1) -> Tensor:
    """``k`` robust max-values from samples (Fröhlich et al. 2020, App. C.3: percentiles on a regular grid from
    the 25th to the 75th; ``k = 1``: the median)."""
    q = torch.tensor([0.5], dtype=samples.dtype, device=samples.device) if k == 1 else \
        torch.linspace(0.25, 0.75, k, dtype=samples.dtype, device=samples.device)
    return torch.quantile(samples, q)


def interleave(a: LocationDistributions, b: LocationDistributions) -> LocationDistributions:
    """``[a_0, b_0, a_1, b_1, ...]``: two batches of ``q`` as ``q`` groups of two (batch-major, for a joint
    posterior with ``batch_shape = (q,)``)."""
    from ..distributions import cat
    q = len(a)
    order = torch.stack([torch.arange(q), torch.arange(q) + q], 1).reshape(-1)
    return cat([a, b])[order]


class NESEntropyReduction(AcquisitionFunction):
    r"""NES-EP acquisition (Fröhlich et al. 2020, Eq. 10):
    :math:`\tfrac12[\log(v_f(\mathbf x) + \sigma_\epsilon^2) - \tfrac1K\sum_k\log(\tilde v_k(\mathbf x) +
    \sigma_\epsilon^2)]`, nats; scores ``X (b, 1, d)`` -> ``(b,)``, differentiable.

    Args:
        model: the GP. candidates: targets -> :math:`\hat P_{\mathbf x}`. query: targets -> the distribution of the
            next training input (Dirac in the paper's setting, where :math:`f` is observed at the commanded point).
        g_stars: ``(K,)`` robust max-values (output units).
        constraint_targets: ``(c, d)`` targets at which EP imposes :math:`g \le g^*_k` (the paper: the data).
        ep_sweeps: EP sweeps.

    Example:
        The entropy reduction ``nes_ep`` maximises at its first decision (nats) (after three measurements, the
        method examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('nes_ep', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, bool((acq(torch.rand(5, 1, 1, dtype=torch.float64)) >= -1e-9).all())
        ('NESEntropyReduction', True)
    """

    def __init__(self, model: DistributionGP, candidates: CandidateFn, query: CandidateFn, g_stars: Tensor,
                 constraint_targets: Tensor, ep_sweeps: int = 50):
        super().__init__(model=model)
        self.candidates, self.query, self.g_stars = candidates, query, g_stars
        self.noise = float(model.hyperparameters()['noise'])      # σ_ε² = λ: the noise of a new reading
        with torch.no_grad():
            self.constraints = candidates(constraint_targets)
            post = model.posterior(self.constraints)
            mu0 = post.mean.reshape(-1)
            sigma0 = post.distribution.covariance_matrix
            c = sigma0.shape[0]
            jitter = 1e-8 * float(model.hyperparameters()['outputscale'])
            self.chol_c = torch.linalg.cholesky(sigma0 + jitter * torch.eye(c, dtype=sigma0.dtype,
                                                                            device=sigma0.device))
            self.mu0 = mu0
            self.ep = [truncated_gaussian_ep(mu0, sigma0, float(g), max_sweeps=ep_sweeps) for g in g_stars]

    def moments(self, targets: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        r"""``(m_f, v_f, m̃ (q, K), ṽ (q, K))``: the predictive of :math:`f` at the query before and after
        conditioning on :math:`g \le g^*_k` (Eqs. 12-23), output units, without observation noise."""
        model = self.model
        cand, query = self.candidates(targets), self.query(targets)
        joint = model.posterior(interleave(cand, query), batch_shape=(targets.shape[0],))
        mean, cov = joint.mean.squeeze(-1), joint.distribution.covariance_matrix     # (q, 2), (q, 2, 2)
        m_g, m_f = mean[:, 0], mean[:, 1]
        s_g, v_f, cov_fg = cov[:, 0, 0].clamp_min(1e-12), cov[:, 1, 1].clamp_min(1e-12), cov[:, 0, 1]
        # Eq. 13: g(x) | y, g(C) with the posterior given y: B = C_xC C_CC^{-1}
        c_xc = model.posterior_covariance(cand, self.constraints)                   # (q, c)
        bmat = torch.cholesky_solve(c_xc.T, self.chol_c).T
        sig_g = (s_g - (bmat * c_xc).sum(-1)).clamp_min(1e-12)
        a2 = cov_fg / s_g                                   # Eqs. 15-23 via the Schur complement
        sig4 = (v_f - cov_fg * a2).clamp_min(1e-12)
        m_out, v_out = [], []
        for g_star, (mu1, sigma1) in zip(self.g_stars, self.ep):
            m0 = m_g + bmat @ (mu1 - self.mu0)
            v0 = sig_g + ((bmat @ sigma1) * bmat).sum(-1)
            m_hat, v_hat = upper_truncated_moments(m0, v0, g_star)   # Eq. 14
            m_out.append(m_f + a2 * (m_hat - m_g))
            v_out.append(sig4 + a2 ** 2 * v_hat)
        return m_f, v_f, torch.stack(m_out, -1), torch.stack(v_out, -1)

    def score(self, targets: Tensor) -> Tensor:
        _, v_f, _, v_k = self.moments(targets)
        return 0.5 * (torch.log(v_f + self.noise) - torch.log(v_k + self.noise).mean(-1))

    @t_batch_mode_transform(expected_q=1)       # one target at a time: a batch is decided greedily with pending ones
    def forward(self, X: Tensor) -> Tensor:
        return self.score(X.reshape(-1, X.shape[-1])).reshape(X.shape[:-2])


def dirac_query(targets: Tensor) -> LocationDistributions:
    """The paper's query: :math:`f` observed at the commanded target."""
    return Dirac(targets)


def gaussian_query(cov: Tensor) -> CandidateFn:
    """Query distributions :math:`\\mathcal N(\\mathbf x, \\Sigma_L)` with one covariance ``(d, d)``."""
    def query(targets: Tensor) -> LocationDistributions:
        return Gaussian(targets, cov.to(targets).expand(targets.shape[0], *cov.shape), validate=False)
    return query


# ---------------------------------------------------------------------------------------------- the methods
def query_for(model: DistributionGP) -> CandidateFn:
    """What the next training input will be for a commanded target: Dirac when every training input so far is
    a point (the paper's setting: :math:`f` observed at the query), else a Gaussian with the training inputs'
    average covariance (a rover's localisation :math:`P^L_t`, not known before it drives there)."""
    cov = model.train_locations.covariance
    if not bool((cov != 0).any()):
        return dirac_query
    return gaussian_query(cov.mean(0).detach())


class NESBase(Method):
    """Shared settings and max-value sampling of NES-EP and NES-RS.

    Args:
        n_features: M, random features of the sample paths' prior term (paper: 500).
        k: K robust max-values (percentile levels of the samples; paper: 1).
        n_max_samples: robust max-value samples the K levels are taken from (paper App. C.3: 100).

    Example:
        >>> NESEP(n_features=200, k=2).k
        2
        >>> NESEP(k=0)
        Traceback (most recent call last):
        ...
        ValueError: n_features, k and n_max_samples must be >= 1, got 500, 0, 100
    """

    inputs = 'gaussian'
    robust_candidates = True

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100):
        if min(n_features, k, n_max_samples) < 1:
            raise ValueError(f'n_features, k and n_max_samples must be >= 1, got {n_features}, {k}, {n_max_samples}')
        self.n_features, self.k, self.n_max_samples = int(n_features), int(k), int(n_max_samples)

    def kernel(self, dim: int) -> None:
        return None     # the expected SE kernel: k_f, k_gf and k_g in closed form

    def _prepare(self, ctx: DecisionContext) -> tuple[DistributionGP, Tensor]:
        """The model (checked: NES needs the expected SE kernel) and the K robust max-values."""
        model = ctx.model
        if not isinstance(model.kernel, ExpectedRBFKernel):
            raise TypeError(f'NES needs the expected SE kernel, the model has {type(model.kernel).__name__}')
        samples, _, _ = sample_robust_max_values(model, ctx.candidates, ctx.target_bounds, self.n_max_samples,
                                                 self.n_features, seed=ctx.seed)
        return model, max_value_levels(samples, self.k)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        return None if rule is not None else area_mean_recommendation(ctx)


@register
class NESEP(NESBase):
    """NES-EP (Fröhlich et al. 2020, §3.2.2): the entropy reduction of Eq. 10 with EP for the max-value
    constraint, maximised by the planner's multi-start L-BFGS-B; recommends the argmax of the posterior mean of
    :math:`g` over the search box.

    Args:
        n_features, k, n_max_samples: see :class:`NESBase` (defaults M = 500, K = 1, 100 samples).
        ep_sweeps: maximum EP sweeps (tolerance 1e-6).

    Example:
        NES-EP's first decision on NES's 1-D sine problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('nes-sin').planner('nes_ep', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()                         # a place predicted over the whole domain
        >>> planner.decisions[-1].phase, planner.targets[-1].shape, rec.measured
        ('acquisition', torch.Size([1]), False)
    """

    name = 'nes_ep'
    description = ('NES-EP: noisy-input entropy search with EP (Froehlich et al. 2020); settings n_features '
                   '(500), k (1), n_max_samples (100), ep_sweeps (50)')

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100, ep_sweeps: int = 50):
        super().__init__(n_features, k, n_max_samples)
        self.ep_sweeps = int(ep_sweeps)

    def acquisition(self, ctx: DecisionContext) -> NESEntropyReduction:
        model, g_stars = self._prepare(ctx)
        return NESEntropyReduction(model, ctx.candidates, query_for(model), g_stars, ctx.targets,
                                   ep_sweeps=self.ep_sweeps)

r"""Noisy-input entropy search (NES; Fröhlich et al. 2020, "Noisy-Input Entropy Search for Efficient Robust
Bayesian Optimization", AISTATS), on the shared :class:`~uncertain_bo.models.DistributionGP`.

NES picks the query whose observation of :math:`f` tells most about the **robust max-value**
:math:`g^* = \max_{\mathbf x} g(\mathbf x)`, :math:`g(\mathbf x) = \mathbb E_{\boldsymbol\xi}[f(\mathbf x +
\boldsymbol\xi)]` (Eq. 1), :math:`\boldsymbol\xi \sim \mathcal N(0, \Sigma_x)`:

.. math::
    \alpha_{NES}(\mathbf x) = H[p(y(\mathbf x) | \mathcal D_n)]
    - \tfrac1K \textstyle\sum_k H[p(y(\mathbf x) | \mathcal D_n, g^*_k)]   \qquad \text{(Eqs. 4-5)}.

**One kernel for f, g and their cross-covariance.** :math:`g` is a GP jointly with :math:`f` (Eq. 3). With the
library's closed-form expected SE kernel between Gaussians
(:class:`~uncertain_bo.kernels.ExpectedRBFKernel`, Oliveira et al. 2019 Eq. 80),
:math:`k_f = k(\delta_{\mathbf x}, \delta_{\mathbf x'})`, :math:`k_{gf} = k(\mathcal N(\mathbf x, \Sigma_x),
\delta_{\mathbf x'})` and :math:`k_g = k(\mathcal N(\mathbf x, \Sigma_x), \mathcal N(\mathbf x', \Sigma_x))`: the
candidates :math:`\hat P_{\mathbf x}` of the execution-noise model are exactly NES's :math:`g`, and the GP's training
inputs may be Gaussians with covariances of their own (a rover's localisation :math:`P^L_t`), in which case the
"observation of f" at a training point is the observation of :math:`\mathbb E_{P^L_t}[f]` the model already assumes.
Everything here works in the model's own units (unit-cube inputs, standardised outputs, its constant mean removed).

**Robust max-value samples** (§3.1, Eq. 6, App. A). Sparse-spectrum GP samples (Lázaro-Gredilla et al. 2010):
features :math:`\phi_i(P) = \sqrt{2\sigma_f^2/M}\cos(\mathbf w_i^\top\boldsymbol\mu_P + b_i)
\exp(-\tfrac12\mathbf w_i^\top\Sigma_P\mathbf w_i)`, :math:`\mathbf w_i \sim \mathcal N(0, \Lambda^{-1})`,
:math:`b_i \sim U(0, 2\pi)`; the filter :math:`\exp(-\tfrac12\mathbf w^\top\Sigma\mathbf w)` is Eq. 6 for the
candidates and the same identity (:math:`\mathbb E\cos(\theta + \mathbf w^\top\boldsymbol\xi) = \cos\theta\,
e^{-\frac12\mathbf w^\top\Sigma\mathbf w}`) for each training point's own :math:`\Sigma_i`. Weights from the
SSGP posterior :math:`\mathbf a \sim \mathcal N(A^{-1}\Phi^\top\mathbf y, \sigma_\epsilon^2A^{-1})` (drawn by
Matheron's rule in the :math:`n \times n` dual form); :math:`g^*_k = \max_{\mathbf x}\tilde g_k(\mathbf x)` by
quasi-random points polished with L-BFGS-B; K percentile levels of the samples (App. C.3; K = 1: the median).

**NES-EP** (§3.2.2, App. B): EP for :math:`\mathbf g \le g^*` at the constraint points (Herbrich 2005, one-sided
box), the joint Gaussian step (Eq. 13), univariate moment matching at the query with
:math:`\hat m = m_0 - \sqrt{v_0}\,r` (Eq. 14 as in the main text, not the appendix's :math:`\sqrt{v_0 r}`), the map
back to :math:`f` (Eqs. 15-23) and the acquisition (Eq. 10).

**NES-RS** (§3.2.1, Algorithm 1): function samples of :math:`(f, g)` from the SSGP posterior (shared weights),
accepted when the sample's robust maximum is at most :math:`g^*_k` until ``L`` are accepted, entropy of
:math:`y = \tilde f(\mathbf x) + \epsilon` by the resubstitution estimator of a Gaussian KDE (Ahmad & Lin 1976),
binned on a grid (Silverman 1982) so each candidate costs :math:`O(L + B^2)` instead of :math:`O(L^2)`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction
from scipy.optimize import minimize
from torch import Tensor

from ..distributions import Dirac, Gaussian, LocationDistributions
from ..kernels import ExpectedRBFKernel
from ..models import DistributionGP
from ..optim import maximize
from .method import DecisionContext, Method, Proposal, Recommendation, register

__all__ = ['RandomFeatures', 'RobustGPView', 'sample_robust_max_values', 'max_value_levels',
           'truncated_gaussian_ep', 'upper_truncated_moments', 'NESEntropyReduction', 'rs_entropy_reduction',
           'kde_entropy', 'NESEP', 'NESRS', 'RSAcquisition', 'area_mean_recommendation', 'query_for']

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


@dataclass
class RandomFeatures:
    r"""Sparse-spectrum (random Fourier) features of the SE kernel :math:`\sigma_f^2\exp(-\tfrac12
    \|(\mathbf x - \mathbf x')/\boldsymbol\ell\|^2)`, expected under Gaussian inputs (Fröhlich et al. 2020, Eq. 6):
    :math:`\phi_i(\mathcal N(\boldsymbol\mu, \Sigma)) = \sqrt{2\sigma_f^2/M}\cos(\mathbf w_i^\top\boldsymbol\mu
    + b_i)\,e^{-\frac12\mathbf w_i^\top\Sigma\mathbf w_i}`, so :math:`\mathbb E_{\mathbf w, b}[\phi(P)^\top\phi(Q)]`
    is the expected SE kernel between ``P`` and ``Q`` (each with its own covariance).

    Attributes:
        w: ``(M, d)`` frequencies, :math:`\mathcal N(0, \mathrm{diag}(\boldsymbol\ell)^{-2})`.
        b: ``(M,)`` phases, :math:`U(0, 2\pi)`.
        amplitude: :math:`\sqrt{2\sigma_f^2/M}`.
    """

    w: Tensor
    b: Tensor
    amplitude: float

    @classmethod
    def draw(cls, lengthscale: Tensor, outputscale: float, m: int, generator: torch.Generator) -> 'RandomFeatures':
        """``m`` features for lengthscales ``(d,)`` (dtype/device of ``lengthscale``)."""
        d = lengthscale.numel()
        z = torch.randn(m, d, generator=generator, dtype=lengthscale.dtype, device=lengthscale.device)
        b = 2 * math.pi * torch.rand(m, generator=generator, dtype=lengthscale.dtype, device=lengthscale.device)
        return cls(z / lengthscale.reshape(1, d), b, math.sqrt(2.0 * outputscale / m))

    def __call__(self, mean: Tensor, cov: Tensor | None = None) -> Tensor:
        """Features ``(n, M)`` of Gaussians ``mean (n, d)``, ``cov (n, d, d)`` (None: Dirac points)."""
        phase = mean @ self.w.T + self.b
        feats = self.amplitude * torch.cos(phase)
        if cov is not None:
            quad = torch.einsum('md,nde,me->nm', self.w, cov, self.w)
            feats = feats * torch.exp(-0.5 * quad)
        return feats


class RobustGPView:
    r"""The shared GP seen as NES's joint GP of :math:`f` (at the training inputs and queries) and :math:`g` (at
    candidates), in the model's units; precomputes :math:`K^{-1}` once per decision.

    Args:
        model: a fitted :class:`~uncertain_bo.models.DistributionGP` with the expected SE kernel.
        candidates: targets ``(q, d)`` (physical units) -> :math:`\hat P_{\mathbf x}` (Gaussian).
        query: targets -> the distribution of the *next training input* when ``x`` is commanded (Dirac for the
            paper's setting, where :math:`f` is observed at the commanded point).

    Raises:
        TypeError: the model's kernel is not the expected SE kernel.
    """

    def __init__(self, model: DistributionGP, candidates: CandidateFn, query: CandidateFn):
        if not isinstance(model.kernel, ExpectedRBFKernel):
            raise TypeError(f'NES needs the expected SE kernel, the model has {type(model.kernel).__name__}')
        self.model, self.candidates, self.query = model, candidates, query
        with torch.no_grad():
            self.x_enc = model.encode(model.train_locations).detach()
            self.noise = float(model.likelihood.noise)     # λ: the noise of a new reading
            self.noise_diag = model.noise_diagonal().detach().to(self.x_enc)   # λ + each reading's own variance
            self.mean_const = float(model.mean_module.constant)
            self.y = (model.train_targets - self.mean_const).detach()  # standardised, centred
            k = self.k(self.x_enc, self.x_enc) + torch.diag(self.noise_diag)
            self.chol = torch.linalg.cholesky(k)
            self.alpha = torch.cholesky_solve(self.y[:, None], self.chol)[:, 0]

    @property
    def n(self) -> int:
        return self.x_enc.shape[0]

    def k(self, a: Tensor, b: Tensor, diag: bool = False) -> Tensor:
        """Kernel (with signal variance) between encoded distributions."""
        return self.model.covar_module.forward(a, b, diag=diag)

    def enc(self, dists: LocationDistributions) -> Tensor:
        return self.model.encode(dists)

    def solve(self, rhs: Tensor) -> Tensor:
        """:math:`K^{-1}` ``rhs`` for ``rhs (n, m)``."""
        return torch.cholesky_solve(rhs, self.chol)

    def robust_posterior(self, targets: Tensor) -> tuple[Tensor, Tensor]:
        """``(m_g, v_g)`` at ``targets (q, d)`` (Eq. 3), model units, differentiable."""
        c = self.enc(self.candidates(targets))
        kgx = self.k(c, self.x_enc)
        mean = kgx @ self.alpha
        v = torch.linalg.solve_triangular(self.chol, kgx.T, upper=False)
        var = self.k(c, c, diag=True) - v.pow(2).sum(0)
        return mean, var.clamp_min(1e-12)

    def normalised(self, dists: LocationDistributions) -> tuple[Tensor, Tensor]:
        """Unit-cube mean ``(n, d)`` and covariance ``(n, d, d)``."""
        nd = self.model.normalize(dists)
        return nd.mean, nd.covariance

    def features(self, m: int, generator: torch.Generator) -> RandomFeatures:
        ell = self.model.kernel.lengthscale.detach().reshape(-1)
        return RandomFeatures.draw(ell, float(self.model.covar_module.outputscale.detach()), m, generator)

    def weight_samples(self, feats: RandomFeatures, num: int, generator: torch.Generator) -> Tensor:
        r"""``(M, num)`` draws of the SSGP weight posterior :math:`\mathcal N(A^{-1}\Phi^\top\mathbf y,
        \sigma_\epsilon^2 A^{-1})`, :math:`A = \Phi^\top\Phi + \sigma_\epsilon^2 I` (Fröhlich et al. 2020, §3.1),
        by Matheron's rule: :math:`\mathbf a = \mathbf a_0 + \Phi^\top(\Phi\Phi^\top + \sigma_\epsilon^2 I)^{-1}
        (\mathbf y - \Phi\mathbf a_0 - \boldsymbol\epsilon)`, :math:`\mathbf a_0 \sim \mathcal N(0, I)`,
        :math:`\boldsymbol\epsilon \sim \mathcal N(0, \sigma_\epsilon^2 I)`."""
        mean, cov = self.normalised(self.model.train_locations)
        phi = feats(mean, cov)  # (n, M): each training input filtered by its own covariance
        y = self.y
        a0 = torch.randn(phi.shape[1], num, generator=generator, dtype=y.dtype, device=y.device)
        eps = self.noise_diag.sqrt()[:, None] * torch.randn(self.n, num, generator=generator, dtype=y.dtype,
                                                            device=y.device)
        gram = phi @ phi.T + torch.diag(self.noise_diag)
        chol = torch.linalg.cholesky(gram)
        return a0 + phi.T @ torch.cholesky_solve(y[:, None] - phi @ a0 - eps, chol)


def _unit_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    engine = torch.quasirandom.SobolEngine(bounds.shape[1], scramble=True, seed=seed)
    u = engine.draw(n, dtype=bounds.dtype).to(bounds.device)
    return bounds[0] + u * (bounds[1] - bounds[0])


def _max_points(n: int, bounds: Tensor, seed: int) -> Tensor:
    """Points at which sampled functions are maximised: a regular grid with both ends in 1-D (maxima often lie on
    the boundary), scrambled Sobol points above."""
    if bounds.shape[1] == 1:
        return torch.linspace(0, 1, n, dtype=bounds.dtype, device=bounds.device)[:, None] * (bounds[1] - bounds[0]) \
            + bounds[0]
    return _unit_points(n, bounds, seed)


def sample_robust_max_values(view: RobustGPView, bounds: Tensor, num: int = 100, n_features: int = 500,
                             seed: int = 0, raw_points: int | None = None,
                             polish: bool | None = None) -> tuple[Tensor, Tensor, Callable[[Tensor], Tensor]]:
    r"""Robust max-value samples :math:`g^*_s = \max_{\mathbf x}\tilde g_s(\mathbf x)` (Fröhlich et al. 2020,
    §3.1, Eq. 6) from SSGP posterior samples :math:`\tilde g_s = \mathbf a_s^\top\boldsymbol\phi_g`.

    Args:
        view: the GP. bounds: ``(2, d)`` domain (physical units). num: samples. n_features: M.
        seed: seeds features, weights and the quasi-random points. raw_points: points scored per sample
            (default a grid of 1024 in 1-D, else ``min(256 d², 4096)``, at least 512). polish: refine each
            sample's best point with L-BFGS-B (one scipy call for all samples; the objective is separable);
            default: above 1-D (in 1-D the 1024 points leave a relative error of about 1e-5 for lengthscales
            >= 0.05 of the box).

    Returns:
        ``(max_values (num,), argmax (num, d), g_tilde)`` in model units; ``g_tilde(targets (q, d)) -> (q, num)``
        evaluates the sampled robust functions.
    """
    gen = torch.Generator(device=bounds.device).manual_seed(int(seed))
    feats = view.features(n_features, gen)
    a = view.weight_samples(feats, num, gen)

    def g_tilde(x: Tensor) -> Tensor:
        mean, cov = view.normalised(view.candidates(x))
        return feats(mean, cov) @ a

    d = bounds.shape[1]
    n_raw = raw_points or (1024 if d == 1 else max(512, min(256 * d * d, 4096)))
    pts = _max_points(n_raw, bounds, seed)
    with torch.no_grad():
        vals = g_tilde(pts)                           # (n_raw, num)
    best, idx = vals.max(0)
    x0 = pts[idx]                                     # (num, d)
    if not (d > 1 if polish is None else polish):
        return best, x0, g_tilde
    lo, hi = bounds[0].cpu().numpy(), bounds[1].cpu().numpy()
    cols = torch.arange(num, device=bounds.device)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        x = torch.as_tensor(z, dtype=bounds.dtype, device=bounds.device).reshape(num, d).requires_grad_(True)
        mean, cov = view.normalised(view.candidates(x))
        phi = feats(mean, cov)                        # (num, M)
        val = (phi * a.T).sum()                       # Σ_s g̃_s(x_s): separable
        (grad,) = torch.autograd.grad(-val, x)
        return -float(val.detach()), grad.reshape(-1).cpu().numpy().astype(float)

    res = minimize(fun, x0.reshape(-1).cpu().numpy(), jac=True, method='L-BFGS-B',
                   bounds=list(zip(np.tile(lo, num), np.tile(hi, num))), options={'maxiter': 100})
    x1 = torch.as_tensor(res.x, dtype=bounds.dtype, device=bounds.device).reshape(num, d)
    with torch.no_grad():
        v1 = g_tilde(x1)[cols, cols]
    better = v1 > best
    return torch.where(better, v1, best), torch.where(better[:, None], x1, x0), g_tilde


def max_value_levels(samples: Tensor, k: int = 1) -> Tensor:
    """``k`` robust max-values from samples (Fröhlich et al. 2020, App. C.3: percentiles on a regular grid from
    the 25th to the 75th; ``k = 1``: the median)."""
    q = torch.tensor([0.5], dtype=samples.dtype, device=samples.device) if k == 1 else \
        torch.linspace(0.25, 0.75, k, dtype=samples.dtype, device=samples.device)
    return torch.quantile(samples, q)


class NESEntropyReduction(AcquisitionFunction):
    r"""NES-EP acquisition (Fröhlich et al. 2020, Eq. 10):
    :math:`\tfrac12[\log(v_f(\mathbf x) + \sigma_\epsilon^2) - \tfrac1K\sum_k\log(\tilde v_k(\mathbf x) +
    \sigma_\epsilon^2)]`, nats; scores ``X (b, 1, d)`` -> ``(b,)``, differentiable.

    Args:
        view: the GP. g_stars: ``(K,)`` robust max-values (model units).
        constraint_targets: ``(c, d)`` targets at which EP imposes :math:`g \le g^*_k` (the paper: the data).
        ep_sweeps: EP sweeps.
    """

    def __init__(self, view: RobustGPView, g_stars: Tensor, constraint_targets: Tensor, ep_sweeps: int = 50):
        super().__init__(model=view.model)  # type: ignore[arg-type]
        self.view, self.g_stars = view, g_stars
        with torch.no_grad():
            c_enc = view.enc(view.candidates(constraint_targets))
            kgc = view.k(c_enc, view.x_enc)                 # (c, n) k_gf(C, X)
            kcc = view.k(c_enc, c_enc)                      # (c, c) k_g(C, C)
            mu0 = kgc @ view.alpha
            sigma0 = kcc - kgc @ view.solve(kgc.T)
            # joint matrix of (g(C), y): [[k_g(C,C), k_gf(C,X)], [k_fg(X,C), K]] (Eq. 13)
            nc = c_enc.shape[0]
            eye = torch.eye(nc + view.n, dtype=kcc.dtype, device=kcc.device)
            kxx = view.k(view.x_enc, view.x_enc) + torch.diag(view.noise_diag)
            joint = torch.cat([torch.cat([kcc, kgc], 1), torch.cat([kgc.T, kxx], 1)], 0)
            joint = joint + 1e-8 * kcc.diagonal().mean() * eye
            self.joint_chol = torch.linalg.cholesky(joint)
            self.c_enc, self.nc = c_enc, nc
            self.xc_enc = torch.cat([view.x_enc, c_enc])
            self.ep = [truncated_gaussian_ep(mu0, sigma0, float(g), max_sweeps=ep_sweeps) for g in g_stars]

    def moments(self, targets: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        r"""``(m_f, v_f, m̃ (q, K), ṽ (q, K))``: the predictive of :math:`f` at the query before and after
        conditioning on :math:`g \le g^*_k` (Eqs. 12-23), model units, without observation noise."""
        v = self.view
        x_enc = v.x_enc
        c = v.enc(v.candidates(targets))                    # P̂_x
        qd = v.enc(v.query(targets))                        # next training input
        q, n = c.shape[0], v.n
        k_c = v.k(c, self.xc_enc)                           # (q, n + c): [k_gf(x, X), k_g(x, C)]
        kgx, kgc = k_c[:, :n], k_c[:, n:]
        kfx = v.k(qd, x_enc)                                # (q, n) k_f(Q, X)
        diag = v.k(torch.cat([c, c, qd]), torch.cat([c, qd, qd]), diag=True)
        kgg, kgf, kff = diag[:q], diag[q:2 * q], diag[2 * q:]   # k_g(x, x), cov(g(x), f(Q)), k_f(Q, Q)
        # f(Q) | y and g(x) | y
        u_f, u_g = v.solve(torch.cat([kfx, kgx]).T).T.split(q)   # K⁻¹k_f(X, Q), K⁻¹k_fg(X, x): (q, n) each
        m_f = kfx @ v.alpha
        v_f = (kff - (kfx * u_f).sum(-1)).clamp_min(1e-12)
        m_g = kgx @ v.alpha
        s_g = (kgg - (kgx * u_g).sum(-1)).clamp_min(1e-12)
        cov_fg = kgf - (kgx * u_f).sum(-1)
        # Eq. 13: g(x) | y, g(C) -> B = [k_g(x,C), k_gf(x,X)] J^{-1}
        kvec = torch.cat([kgc, kgx], 1)                     # (q, c + n)
        bmat = torch.cholesky_solve(kvec.T, self.joint_chol).T
        sig_g = (kgg - (bmat * kvec).sum(-1)).clamp_min(1e-12)
        b1, b2 = bmat[:, :self.nc], bmat[:, self.nc:]
        a2 = cov_fg / s_g                                   # Eqs. 15-23 via the Schur complement
        sig4 = (v_f - cov_fg * a2).clamp_min(1e-12)
        m_out, v_out = [], []
        for g_star, (mu1, sigma1) in zip(self.g_stars, self.ep):
            m0 = b1 @ mu1 + b2 @ v.y
            v0 = sig_g + ((b1 @ sigma1) * b1).sum(-1)
            m_hat, v_hat = upper_truncated_moments(m0, v0, g_star)   # Eq. 14
            m_out.append(m_f + a2 * (m_hat - m_g))
            v_out.append(sig4 + a2 ** 2 * v_hat)
        return m_f, v_f, torch.stack(m_out, -1), torch.stack(v_out, -1)

    def score(self, targets: Tensor) -> Tensor:
        _, v_f, _, v_k = self.moments(targets)
        noise = self.view.noise
        return 0.5 * (torch.log(v_f + noise) - torch.log(v_k + noise).mean(-1))

    def forward(self, X: Tensor) -> Tensor:
        if X.shape[-2] != 1:
            raise ValueError(f'only q = 1 candidates are supported, got q = {X.shape[-2]}')
        return self.score(X.reshape(-1, X.shape[-1])).reshape(X.shape[:-2])


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


def rs_entropy_reduction(view: RobustGPView, targets: Tensor, bounds: Tensor, g_stars: Tensor,
                         n_accept: int = 1000, n_features: int = 500, seed: int = 0, raw_points: int | None = None,
                         max_draws: int = 20, chunk: int = 16) -> Tensor:
    r"""NES-RS acquisition (Fröhlich et al. 2020, Algorithm 1 and §3.2.1) at ``targets (q, d)``:
    :math:`\hat H_0 - \tfrac1K\sum_k\hat H_k`, with :math:`\hat H_k` the KDE entropy of ``n_accept`` accepted
    samples :math:`\tilde f(\mathbf x) + \epsilon` whose robust maximum over ``raw_points`` points (default: a
    grid of 512 in 1-D, Sobol points above) is at most :math:`g^*_k`, and :math:`\hat H_0` the same estimator on
    ``n_accept`` unconditioned samples (the paper uses the closed form
    :math:`\tfrac12\log 2\pi e(v_f + \sigma_\epsilon^2)`; estimating both terms from the same SSGP samples
    cancels the SSGP's and the KDE's biases, which otherwise dominate where
    :math:`v_f` is small). Function samples are SSGP posterior samples of :math:`f` and :math:`g` with shared
    weights, drawn in batches of ``n_accept`` up to ``max_draws`` batches (if fewer are accepted, the accepted
    ones are used). Returns ``(q,)`` nats."""
    gen = torch.Generator(device=bounds.device).manual_seed(int(seed) + 7919)
    feats = view.features(n_features, gen)
    d = bounds.shape[1]
    pts = _max_points(raw_points or (512 if d == 1 else max(512, min(256 * d * d, 4096))), bounds, seed)
    with torch.no_grad():
        pm, pc = view.normalised(view.candidates(pts))
        phi_g = feats(pm, pc)                                   # (P, M)
        qm, qc = view.normalised(view.query(targets))
        phi_f = feats(qm, qc)                                   # (q, M)
        draws, maxima = [], []
        for _ in range(max_draws):
            a = view.weight_samples(feats, n_accept, gen)
            draws.append(a)
            maxima.append((phi_g @ a).max(0).values)
            if min(int((torch.cat(maxima) <= g).sum()) for g in g_stars) >= n_accept:
                break
        a = torch.cat(draws, 1)
        maxima = torch.cat(maxima)

        def entropy(cols: Tensor) -> Tensor:
            """KDE entropy of y = f̃(x) + ε over the draws ``cols``, in chunks of candidates (the binned KDE holds
            (chunk, B, B))."""
            ys = phi_f @ a[:, cols]
            ys = ys + math.sqrt(view.noise) * torch.randn(ys.shape, generator=gen, dtype=ys.dtype, device=ys.device)
            return torch.cat([kde_entropy(c) for c in ys.split(chunk)])

        h0 = entropy(torch.arange(min(n_accept, a.shape[1]), device=a.device))   # unconditioned, same estimator
        out = torch.zeros_like(h0)
        for g_star in g_stars:
            ok = (maxima <= g_star).nonzero().reshape(-1)[:n_accept]
            if ok.numel() < 10:                                 # g* below (nearly) every sample: no estimate
                continue
            out = out + (h0 - entropy(ok))
        return out / len(g_stars)


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


def area_mean_recommendation(ctx: DecisionContext) -> Recommendation:
    r""":math:`\operatorname{argmax}_{\mathbf x}\hat\mu(P_{\mathbf x})` over the whole search box (NES and BO-UU:
    the posterior mean of :math:`g`, Fröhlich et al. 2020 §2; standard BO: of :math:`f`), by the planner's
    maximiser."""
    from .ugp_ucb import UpperConfidenceBound
    model = ctx.model
    target, _ = maximize(UpperConfidenceBound(model, ctx.candidates, 0.0), ctx.target_bounds, ctx.optimizer,
                         seed=ctx.seed + 50_000)
    with torch.no_grad():
        mean, var = model.posterior(ctx.candidates(target.reshape(1, -1)))
    return Recommendation(target, float(mean[0]), float(var[0].sqrt()), -1)


class _NESBase(Method):
    """Shared settings and max-value sampling of NES-EP and NES-RS.

    Args:
        n_features: M, SSGP features for the max-value samples (paper: 500).
        k: K robust max-values (percentile levels of the samples; paper: 1).
        n_max_samples: robust max-value samples the K levels are taken from (paper App. C.3: 100).
    """

    inputs = 'gaussian'
    robust_candidates = True

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100):
        if min(n_features, k, n_max_samples) < 1:
            raise ValueError(f'n_features, k and n_max_samples must be >= 1, got {n_features}, {k}, {n_max_samples}')
        self.n_features, self.k, self.n_max_samples = int(n_features), int(k), int(n_max_samples)

    def kernel(self, dim: int) -> None:
        return None     # the expected SE kernel: k_f, k_gf and k_g in closed form

    def _prepare(self, ctx: DecisionContext) -> tuple[RobustGPView, Tensor]:
        model = ctx.model
        view = RobustGPView(model, ctx.candidates, query_for(model))
        samples, _, _ = sample_robust_max_values(view, ctx.target_bounds, self.n_max_samples, self.n_features,
                                                 seed=ctx.seed)
        return view, max_value_levels(samples, self.k)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        return None if rule is not None else area_mean_recommendation(ctx)


@register
class NESEP(_NESBase):
    """NES-EP (Fröhlich et al. 2020, §3.2.2): the entropy reduction of Eq. 10 with EP for the max-value
    constraint, maximised by the planner's multi-start L-BFGS-B; recommends the argmax of the posterior mean of
    :math:`g` over the search box.

    Args:
        n_features, k, n_max_samples: see :class:`_NESBase` (defaults M = 500, K = 1, 100 samples).
        ep_sweeps: maximum EP sweeps (tolerance 1e-6).
    """

    name = 'nes_ep'
    description = ('NES-EP: noisy-input entropy search with EP (Froehlich et al. 2020); settings n_features '
                   '(500), k (1), n_max_samples (100), ep_sweeps (50)')

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100, ep_sweeps: int = 50):
        super().__init__(n_features, k, n_max_samples)
        self.ep_sweeps = int(ep_sweeps)

    def acquisition(self, ctx: DecisionContext) -> NESEntropyReduction:
        view, g_stars = self._prepare(ctx)
        return NESEntropyReduction(view, g_stars, ctx.targets, ep_sweeps=self.ep_sweeps)


class RSAcquisition(AcquisitionFunction):
    """NES-RS scores (:func:`rs_entropy_reduction`) of ``X (b, 1, d)`` -> ``(b,)``, with common random numbers:
    equal calls give equal scores. Not differentiable (a rejection sampler): maximise over a candidate set."""

    def __init__(self, view: RobustGPView, bounds: Tensor, g_stars: Tensor, n_accept: int, n_features: int,
                 seed: int, chunk: int = 16):
        super().__init__(model=view.model)  # type: ignore[arg-type]
        self.view, self.bounds, self.g_stars = view, bounds, g_stars
        self.n_accept, self.n_features, self.seed, self.chunk = n_accept, n_features, seed, chunk

    def forward(self, X: Tensor) -> Tensor:
        flat = X.reshape(-1, X.shape[-1])
        return rs_entropy_reduction(self.view, flat, self.bounds, self.g_stars, self.n_accept, self.n_features,
                                    self.seed, chunk=self.chunk).reshape(X.shape[:-2])


@register
class NESRS(_NESBase):
    """NES-RS (Fröhlich et al. 2020, §3.2.1, Algorithm 1): rejection-sampled conditional predictive and KDE
    entropies, scored on ``n_candidates`` quasi-random targets (the reference code scores a grid of spacing
    0.005); recommends the argmax of the posterior mean of :math:`g` over the search box.

    Args:
        n_features, k, n_max_samples: see :class:`_NESBase`.
        n_accept: L, accepted samples per max-value (paper: 1000).
        n_candidates: targets scored per decision (default ``min(200 d, 1000)``).
    """

    name = 'nes_rs'
    description = ('NES-RS: noisy-input entropy search by rejection sampling (Froehlich et al. 2020); settings '
                   'n_features (500), k (1), n_max_samples (100), n_accept (1000), n_candidates')

    def __init__(self, n_features: int = 500, k: int = 1, n_max_samples: int = 100, n_accept: int = 1000,
                 n_candidates: int | None = None):
        super().__init__(n_features, k, n_max_samples)
        self.n_accept, self.n_candidates = int(n_accept), n_candidates

    def acquisition(self, ctx: DecisionContext) -> RSAcquisition:
        view, g_stars = self._prepare(ctx)
        return RSAcquisition(view, ctx.target_bounds, g_stars, self.n_accept, self.n_features, ctx.seed)

    def decide(self, ctx: DecisionContext) -> Proposal:
        if ctx.index < ctx.n_initial:
            return Proposal(ctx.initial_design[ctx.index].clone(), 'initial')
        acq = self.acquisition(ctx)
        if ctx.travel_weight > 0:
            from .travel import TravelPenalty
            acq = TravelPenalty(acq, ctx.position, ctx.bounds, ctx.travel_weight,
                                ctx.model.hyperparameters()['outputscale'] ** 0.5)
        d = ctx.bounds.shape[1]
        cands = _max_points(self.n_candidates or min(200 * d, 1000), ctx.bounds, ctx.seed)
        with torch.no_grad():
            scores = acq(cands[:, None, :])
        i = int(torch.argmax(scores))
        return Proposal(cands[i].clone(), 'acquisition', float(scores[i]))

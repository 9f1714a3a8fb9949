r"""The χ² ambiguity set around an empirical distribution, and its worst-case expectation.

Distributionally robust Bayesian quadrature optimisation (DRBQO; Nguyen, Gupta, Ha, Rana & Venkatesh, AISTATS
2020) replaces the empirical mean :math:`\mathbb E_{\hat P_n}[f(\mathbf x, w)]` over ``n`` fixed samples
:math:`S_n = \{w_1, \dots, w_n\}` by its worst case over the **χ² ball** (the paper's Eq. 7)

.. math::
    \mathcal P_{n,\rho} = \{p \in \Delta_n : D(p, \hat P_n) \le \rho\}, \qquad
    D(p, \hat P_n) = \frac{1}{2n} \sum_{i=1}^n (n p_i - 1)^2
    \iff n \|p\|_2^2 \le 2\rho + 1 ,

.. math::
    V_\rho(\mathbf l) = \min_{p \in \mathcal P_{n,\rho}} p^\top \mathbf l .

ρ = 0 is the singleton :math:`\{\hat P_n\}` (the empirical mean); ρ ≥ (n − 1)/2 is the whole simplex (the
minimum over the samples).

**Solver.** The paper solves the KKT system (its Eqs. 13–20, Proposition 1) by bisection on the multiplier λ
of the ball constraint (its Algorithm 2). The same KKT conditions give the minimiser in closed form once the
support is known: with the values sorted ascending, :math:`l_{(1)} \le \dots \le l_{(n)}`, the minimiser puts
mass on the ``k`` smallest,

.. math::
    p_{(i)} = \Big(\frac1k + \frac{m_k - l_{(i)}}{n\lambda}\Big)_+ , \qquad
    (n\lambda)^2 = \frac{n V_k}{2\rho + 1 - n/k}, \qquad
    m_k = \frac1k \sum_{j \le k} l_{(j)}, \ V_k = \sum_{j \le k} (l_{(j)} - m_k)^2 ,

for the one ``k`` whose threshold :math:`c_k = m_k + n\lambda/k` satisfies
:math:`l_{(k)} \le c_k \le l_{(k+1)}` (the support is exactly the values below the threshold). When the
uniform weights on the minimisers already satisfy the ball constraint, λ = 0 and the worst case is the
minimum (ties share the mass). All ``k`` are evaluated at once, so the solve is a sort and a few ``(…, n, n)``
reductions, vectorised over any leading batch shape (candidates, posterior samples) with no iterations.
With k = n and nothing clipped this is the paper's Theorem 1 equality
:math:`V_\rho = \bar l - \sqrt{2\rho}\, s_n`.

**Gradients.** For λ > 0 the minimiser is unique, so by Danskin's theorem
:math:`\nabla V_\rho = \sum_i p_i^* \nabla l_i`: :func:`worst_case_mean` returns :math:`p^{*\top}\mathbf l` with
:math:`p^*` detached, which autograd differentiates correctly (the paper's App. B.1 differentiates the KKT
system instead; the result is the same).
"""
from __future__ import annotations

import torch
from torch import Tensor

__all__ = ['chi2_divergence', 'worst_case_weights', 'worst_case_mean', 'full_simplex_radius']


def full_simplex_radius(n: int) -> float:
    """The radius :math:`(n - 1)/2` from which the χ² ball around :math:`\\hat P_n` is the whole simplex."""
    return (n - 1) / 2


def chi2_divergence(p: Tensor) -> Tensor:
    """:math:`D(p, \\hat P_n) = \\frac{1}{2n} \\sum_i (n p_i - 1)^2` of weights ``p`` ``(..., n)`` -> ``(...)``
    (the paper's χ² divergence to the uniform empirical distribution)."""
    n = p.shape[-1]
    return ((n * p - 1) ** 2).sum(-1) / (2 * n)


def worst_case_weights(values: Tensor, rho: float) -> Tensor:
    """Weights of the χ² ball :math:`\\mathcal P_{n,\\rho}` that minimise :math:`p^\\top` ``values``.

    Args:
        values: ``(..., n)`` values :math:`l_i = f(\\mathbf x, w_i)` on the ``n`` samples (any batch shape).
        rho: ball radius ρ ≥ 0 (paper Eq. 7).

    Returns:
        ``(..., n)`` weights :math:`p^*` (non-negative, summing to one, :math:`n\\|p^*\\|^2 \\le 2\\rho + 1`),
        same dtype and device as ``values``; computed without autograd.

    Raises:
        ValueError: ``rho`` is negative or not finite, ``values`` has no sample dimension or is not finite.
    """
    rho = float(rho)
    if not rho >= 0 or rho == float('inf'):
        raise ValueError(f'the chi-square radius rho must be a finite number >= 0, got {rho}')
    if values.dim() == 0 or values.shape[-1] == 0:
        raise ValueError('values must have a trailing sample dimension n >= 1')
    with torch.no_grad():
        l = values.detach()
        if not torch.isfinite(l).all():
            raise ValueError('values must be finite')
        n = l.shape[-1]
        uniform = torch.full_like(l, 1.0 / n)
        if rho == 0.0 or n == 1:
            return uniform
        sorted_l, order = l.sort(dim=-1)
        scale = (sorted_l[..., -1:] - sorted_l[..., :1]).clamp_min(torch.finfo(l.dtype).tiny)
        z = (sorted_l - sorted_l[..., :1]) / scale           # in [0, 1]: the solution is invariant to the affine map
        k = torch.arange(1, n + 1, dtype=l.dtype, device=l.device)
        mask = (torch.arange(n, device=l.device)[None, :] < torch.arange(1, n + 1, device=l.device)[:, None])
        mask = mask.to(l.dtype)                              # (k, i): i among the k smallest
        zk = z.unsqueeze(-2)                                 # (..., 1, n)
        m = (mask * zk).sum(-1) / k                          # (..., k) support means
        v = (mask * (zk - m.unsqueeze(-1)) ** 2).sum(-1)     # (..., k) support sums of squares
        den = 2 * rho + 1 - n / k                            # (k,)
        ok_den = den > 0
        n_lam = torch.sqrt(n * v / torch.where(ok_den, den, torch.ones_like(den)))
        c = m + n_lam / k                                    # thresholds
        tol = 1e-12
        nxt = torch.cat([z[..., 1:], torch.full_like(z[..., :1], float('inf'))], -1)
        valid = ok_den & (v > tol) & (c >= z - tol) & (c <= nxt + tol)
        # λ = 0: the uniform weights on the minimisers are inside the ball
        ties = (z <= tol).to(l.dtype).sum(-1)                # number of minimisers
        at_min = n / ties <= 2 * rho + 1 + 1e-12
        kk = torch.where(valid, k, torch.zeros_like(k)).argmax(-1, keepdim=True)   # the largest valid k
        has = valid.any(-1)
        n_lam_k = n_lam.gather(-1, kk)
        c_k = c.gather(-1, kk)
        p_sorted = ((c_k - z) / n_lam_k.clamp_min(tol)).clamp_min(0)
        p_sorted = p_sorted / p_sorted.sum(-1, keepdim=True)
        p_min = (z <= tol).to(l.dtype) / ties.unsqueeze(-1)
        use_min = at_min | ~has
        p_sorted = torch.where(use_min.unsqueeze(-1), p_min, p_sorted)
        p = torch.empty_like(p_sorted).scatter_(-1, order, p_sorted)
        return p


def worst_case_mean(values: Tensor, rho: float) -> Tensor:
    """The distributionally robust expectation :math:`V_\\rho = \\min_{p \\in \\mathcal P_{n,\\rho}} p^\\top`
    ``values`` (paper Eq. 7's inner problem).

    Args:
        values: ``(..., n)`` values on the ``n`` samples.
        rho: ball radius ρ ≥ 0.

    Returns:
        ``(...)``: :math:`p^{*\\top}` ``values``, differentiable w.r.t. ``values`` (Danskin: gradient
        :math:`p^*`).

    Raises:
        ValueError: as :func:`worst_case_weights`.
    """
    return (worst_case_weights(values, rho) * values).sum(-1)

"""Worst-case weights on the χ² ball (uncertain_bo.acquisition.ambiguity) against scipy's SLSQP and the limits of the
distributionally robust objective (Nguyen et al. 2020, Eq. 7; Theorem 1)."""
import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from uncertain_bo.acquisition.ambiguity import chi2_divergence, full_simplex_radius, worst_case_mean, worst_case_weights


def slsqp_worst_case(l: np.ndarray, rho: float) -> float:
    """min p·l over the simplex with n‖p‖² ≤ 2ρ + 1, by a generic convex solver (values standardised)."""
    n = l.size
    s = max(np.ptp(l), 1e-12)
    ls = (l - l.mean()) / s
    res = minimize(lambda q: q @ ls, np.ones(n) / n, jac=lambda q: ls, method='SLSQP', bounds=[(0, 1)] * n,
                   constraints=[{'type': 'eq', 'fun': lambda q: q.sum() - 1, 'jac': lambda q: np.ones((1, n))},
                                {'type': 'ineq', 'fun': lambda q: (2 * rho + 1) / n - q @ q,
                                 'jac': lambda q: -2 * q[None]}],
                   options={'ftol': 1e-14, 'maxiter': 1000})
    return float(res.fun * s + l.mean())


def test_matches_convex_solver_on_random_cases():
    rng = np.random.default_rng(0)
    for trial in range(120):
        n = int(rng.integers(2, 15))
        rho = float(rng.choice([0.01, 0.1, 0.3, 0.5, 1.0, 3.0, 5.0, 10.0]))
        l = rng.standard_normal(n) * rng.uniform(0.1, 10)
        if trial % 5 == 0:
            l[:2] = l.min()  # tied minimisers
        p = worst_case_weights(torch.tensor(l), rho).numpy()
        assert p.min() >= 0 and p.sum() == pytest.approx(1, abs=1e-12)
        assert chi2_divergence(torch.tensor(p)) <= rho + 1e-9
        assert p @ l == pytest.approx(slsqp_worst_case(l, rho), abs=1e-7 * max(np.ptp(l), 1))


def test_batched_equals_one_at_a_time():
    torch.manual_seed(0)
    values = torch.randn(4, 5, 10, dtype=torch.float64)
    p = worst_case_weights(values, 0.4)
    for i in range(4):
        for j in range(5):
            torch.testing.assert_close(p[i, j], worst_case_weights(values[i, j], 0.4))


def test_rho_zero_is_the_empirical_mean_and_small_rho_tends_to_it():
    values = torch.randn(7, 10, dtype=torch.float64)
    torch.testing.assert_close(worst_case_mean(values, 0.0), values.mean(-1))
    assert (worst_case_mean(values, 1e-10) - values.mean(-1)).abs().max() < 1e-4


def test_large_rho_is_the_minimum_over_samples():
    values = torch.randn(7, 10, dtype=torch.float64)
    for rho in (full_simplex_radius(10), 50.0):
        torch.testing.assert_close(worst_case_mean(values, rho), values.min(-1).values)


def test_variance_regularised_form_when_nothing_is_clipped():
    # Theorem 1: V = mean - sqrt(2 rho s_n^2) when the closed-form weights stay non-negative
    values = torch.linspace(0, 1, 10, dtype=torch.float64)
    rho = 0.05
    s = values.std(unbiased=False)
    torch.testing.assert_close(worst_case_mean(values, rho), values.mean() - (2 * rho) ** 0.5 * s)


def test_gradient_is_the_worst_case_weights():
    values = torch.randn(10, dtype=torch.float64, requires_grad=True)
    worst_case_mean(values, 0.7).backward()
    p = worst_case_weights(values.detach(), 0.7)
    torch.testing.assert_close(values.grad, p)
    eps = 1e-6
    for i in range(3):
        e = torch.zeros(10, dtype=torch.float64)
        e[i] = eps
        fd = (worst_case_mean(values.detach() + e, 0.7) - worst_case_mean(values.detach() - e, 0.7)) / (2 * eps)
        assert float(fd) == pytest.approx(float(p[i]), abs=1e-6)


def test_user_mistakes():
    with pytest.raises(ValueError, match='rho'):
        worst_case_weights(torch.zeros(3), -1.0)
    with pytest.raises(ValueError, match='finite'):
        worst_case_weights(torch.tensor([0.0, float('nan')]), 1.0)

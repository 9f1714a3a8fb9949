"""NES's benchmarks (exact / filtered robust objectives against Monte Carlo and quadrature, optima against the
reference configuration) and the NES methods and baselines on the planner."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition import get_method
from uncertain_bo.benchmarks import get_problem
from uncertain_bo.benchmarks.base import BenchSettings
from uncertain_bo.benchmarks.nes_problems import (NES_FUNCTIONS, _poly_smoothed_spline, bertsimas_poly, gmm2d,
                                                  gp_prior_draw, hartmann, rkhs_negated)
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner


def _mc_smooth(fn, x, sigma, n=100_000, seed=0):
    """E[f(x + ξ)]: a 4001-point trapezoid rule over ±8 σ in 1-D, Monte Carlo above."""
    if x.shape[1] == 1:
        t = np.linspace(-8, 8, 4001)
        w = np.exp(-t ** 2 / 2)
        w /= w.sum()
        return np.array([fn(x0[None] + sigma * t[:, None], np.zeros(1)) @ w for x0 in x])
    rng = np.random.default_rng(seed)
    xi = rng.standard_normal((n, x.shape[1])) * sigma
    return np.array([np.mean([fn(x0[None] + c, np.zeros(x.shape[1])).mean() for c in np.array_split(xi, 20)])
                     for x0 in x])


@pytest.mark.parametrize('fn,dim,sigma', [(hartmann(3), 3, 0.1), (hartmann(6), 6, 0.1), (gmm2d, 2, 0.1),
                                          (rkhs_negated, 1, 0.03),
                                          (gp_prior_draw(np.random.default_rng(0), features=1000), 1, 0.05)])
def test_exact_robust_objectives_against_monte_carlo(fn, dim, sigma):
    x = np.random.default_rng(1).uniform(0, 1, (3, dim))
    exact = fn(x, np.full(dim, sigma ** 2))
    mc = _mc_smooth(fn, x, sigma)
    assert np.allclose(exact, mc, atol=0.01 * max(1.0, np.abs(mc).max()))


def test_clipped_polynomial_filter_against_dense_quadrature():
    """The Gaussian filter of the clipped polynomial (here on a 0.01 grid; the benchmark uses 0.005) against a
    601 x 601 trapezoid rule over ±6 σ."""
    spline = _poly_smoothed_spline(0.6, 0.6, 0.01)
    t = np.linspace(-6, 6, 601)
    w = np.exp(-t ** 2 / 2)
    w /= w.sum()
    t1, t2 = np.meshgrid(t, t, indexing='ij')
    for x in ([0.27, 0.67], [-0.9, 4.3], [3.0, 0.0]):
        pts = np.stack([x[0] + 0.6 * t1.ravel(), x[1] + 0.6 * t2.ravel()], -1)
        dense = (bertsimas_poly(pts, np.zeros(2)) * np.outer(w, w).ravel()).sum()
        assert float(spline(x[0], x[1], grid=False)) == pytest.approx(dense, abs=3e-4)


@pytest.mark.parametrize('key,x_ref,g_ref', [('sin', [0.31112], 1.04210), ('rkhs', [0.31571], 0.87138),
                                             ('gmm', [0.20030, 0.20022], 0.40012),
                                             ('hartmann3', [0.11728, 0.56941, 0.83030], 2.97107)])
def test_robust_optima_match_the_reference_configuration(key, x_ref, g_ref):
    """x*, g* of the NES reference configuration (checked there by quadrature)."""
    x, g = NES_FUNCTIONS[key][0]().robust_optimum()
    assert g == pytest.approx(g_ref, abs=2e-4)
    assert np.allclose(x, x_ref, atol=2e-3)


@pytest.mark.parametrize('method', ['nes_ep', 'nes_rs', 'bo_uu_ei', 'bo_uu_ucb', 'bo_uu_mes', 'ei'])
def test_methods_run_on_the_planner(method):
    inst = get_problem('nes-sin').instance(0)
    cfg = inst.planner_config(get_method(method), BenchSettings())
    settings = {'n_max_samples': 30, 'n_accept': 300} if method == 'nes_rs' else None
    planner = Planner(inst.bounds, method=method, seed=0, method_settings=settings, **{**cfg, 'n_initial': 3})
    world = inst.world(0)
    for _ in range(5):
        target = planner.suggest()
        assert ((target >= 0) & (target <= 1)).all()
        m = world.measure(target)
        planner.observe(target, m.location, m.y)
    assert planner.decisions[-1].phase == 'acquisition' and math.isfinite(planner.decisions[-1].acquisition_value)
    rec = planner.recommend()
    assert rec.index == -1 and 0 <= float(rec.target[0]) <= 1   # argmax of the posterior mean over the box
    assert planner.recommend('past_mean').index >= 0             # an explicit rule is the planner's


def test_nes_ep_on_gaussian_location_distributions():
    """Training inputs with their own covariances (a rover's localisation): NES-EP decides from them."""
    bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)
    planner = Planner(bounds, GaussianExecutionNoise.isotropic(0.5, 2), method='nes_ep', n_initial=4, seed=1)
    rng = np.random.default_rng(2)
    for _ in range(6):
        target = planner.suggest()
        mean = target + torch.as_tensor(rng.normal(0, 0.3, 2))
        y = math.sin(float(mean[0]) / 2) + math.cos(float(mean[1]) / 3)
        planner.observe(target, Gaussian(mean[None], 0.09 * torch.eye(2, dtype=DTYPE)[None]), y)
    assert planner.decisions[-1].phase == 'acquisition' and math.isfinite(planner.decisions[-1].acquisition_value)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match='n_features'):
        Planner(torch.tensor([[0.0], [1.0]], dtype=DTYPE), GaussianExecutionNoise.isotropic(0.1, 1), method='nes_ep',
                method_settings={'n_features': 0})
    with pytest.raises(ValueError, match='nes_ep'):
        Planner(torch.tensor([[0.0], [1.0]], dtype=DTYPE), GaussianExecutionNoise.isotropic(0.1, 1), method='nes_ep',
                method_settings={'features': 10})


def _solve_ivp_closest_approach(alpha, v0):
    """The gravity-assist trajectory by scipy's DOP853 at rtol = atol = 1e-11: the closest approach to D
    (dense-output samples every 1e-4, polished by a bounded scalar minimisation)."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import minimize_scalar

    from uncertain_bo.benchmarks.gravity_assist import MASSES, PLANETS, START, TARGET

    def rhs(t, y):
        d = PLANETS - y[:2]
        r = np.linalg.norm(d, axis=1)
        return np.concatenate([y[2:], (MASSES / r ** 3) @ d])

    y0 = np.concatenate([START, v0 * np.array([np.cos(alpha), np.sin(alpha)])])
    sol = solve_ivp(rhs, (0.0, 4.0), y0, method='DOP853', rtol=1e-11, atol=1e-11, dense_output=True)
    t = np.linspace(0.0, 4.0, 40001)
    path = sol.sol(t)[:2].T
    dist = np.linalg.norm(path - PLANETS[TARGET], axis=1)
    k = int(np.argmin(dist))
    res = minimize_scalar(lambda s: np.linalg.norm(sol.sol(s)[:2] - PLANETS[TARGET]),
                          bounds=(t[max(k - 1, 0)], t[min(k + 1, len(t) - 1)]), method='bounded',
                          options={'xatol': 1e-10})
    return min(dist[k], res.fun)


def test_gravity_assist_simulator_against_solve_ivp():
    """The batched RK4 simulator (all launches at once) against scipy's adaptive DOP853 on launches across the
    domain, and its cost J = log10(d + 2 v0)."""
    from uncertain_bo.benchmarks.gravity_assist import closest_approach, gravity_assist_cost

    alpha = np.radians([-8.0, 5.0, 30.0, 40.0])      # 5°: a pass 0.003 from a planet; 30°: 0.08 from D
    v0 = np.array([4.2, 4.9, 4.8, 4.15])
    d = closest_approach(alpha, v0)
    for a, v, di in zip(alpha, v0, d):
        assert di == pytest.approx(_solve_ivp_closest_approach(a, v), abs=2e-6)
    assert np.allclose(gravity_assist_cost(alpha, v0), np.log10(d + 2 * v0))


def test_gravity_assist_filter_and_spline_against_closed_form():
    """The oracle's machinery (Gaussian filter of a grid reaching 5 σ beyond the domain, bicubic spline over the
    domain) on f = exp(-(a - a0)^2/(2 s^2)) + v, whose smoothing is closed form."""
    from uncertain_bo.benchmarks.gravity_assist import GRAVITY_BOUNDS, GRAVITY_SIGMA, _EXTEND, _smoothed

    step = (math.radians(0.5), 0.01)
    axes = [np.arange(GRAVITY_BOUNDS[0, j] - _EXTEND * GRAVITY_SIGMA[j],
                      GRAVITY_BOUNDS[1, j] + _EXTEND * GRAVITY_SIGMA[j] + step[j] / 2, step[j]) for j in range(2)]
    a0, s = 0.3, 0.08
    f = np.exp(-(axes[0][:, None] - a0) ** 2 / (2 * s ** 2)) + axes[1][None, :]
    spline = _smoothed(axes, f, 1)
    rng = np.random.default_rng(0)
    x = GRAVITY_BOUNDS[0] + rng.uniform(0, 1, (20, 2)) * (GRAVITY_BOUNDS[1] - GRAVITY_BOUNDS[0])
    s2 = s ** 2 + GRAVITY_SIGMA[0] ** 2
    exact = s / math.sqrt(s2) * np.exp(-(x[:, 0] - a0) ** 2 / (2 * s2)) + x[:, 1]
    assert np.allclose(spline(x[:, 0], x[:, 1], grid=False), exact, atol=1e-5)


def test_gravity_assist_problem_and_refusals():
    from uncertain_bo.benchmarks.gravity_assist import GRAVITY_SIGMA, gravity_assist

    problem = get_problem('nes-gravity-assist')
    assert (problem.n_initial, problem.default_iterations) == (5, 45)
    assert get_problem('nes-gravity-assist-ml').name == 'nes-gravity-assist-ml'
    with pytest.raises(ValueError, match='cached for sigma'):
        gravity_assist(np.array([[0.3, 4.5]]), 2 * GRAVITY_SIGMA ** 2)


def test_gravity_assist_oracle_against_quadrature_of_the_simulator():
    """The cached robust objective against 20 x 20 Gauss-Hermite quadrature of simulations where f is smooth over
    the noise's reach (runs only where the grid is already cached: building it takes minutes)."""
    from uncertain_bo.benchmarks import gravity_assist as ga

    if not any(ga._cache_dir().glob('f-grid-*.npz')):
        pytest.skip('gravity-assist grid not cached (built by the first nes-gravity-assist benchmark run)')
    t, w = np.polynomial.hermite_e.hermegauss(20)
    w = w / w.sum()
    t1, t2 = np.meshgrid(t, t, indexing='ij')
    for x in ([math.radians(35.0), 4.6], [math.radians(20.0), 4.9]):
        pts = np.stack([x[0] + ga.GRAVITY_SIGMA[0] * t1.ravel(), x[1] + ga.GRAVITY_SIGMA[1] * t2.ravel()], -1)
        quad = ga.gravity_assist(pts, np.zeros(2)) @ np.outer(w, w).ravel()
        assert float(ga.gravity_assist(np.array([x]), ga.GRAVITY_SIGMA ** 2)[0]) == pytest.approx(quad, abs=1e-4)


@pytest.mark.parametrize('method', ['airbo', 'skl'])
def test_a_single_lengthscale_kernel_takes_the_geometric_mean_of_the_regimes_lengthscales(method):
    """AIRBO's MMD and SKL kernels have one lengthscale for every axis; the NES regimes give sigma_x per axis in
    unit-cube units (gravity assist: 0.0545 and 0.0556): their geometric mean (it raised "shape '[1, 1]' is invalid
    for input of size 2"). uGP-UCB's kernel keeps one per axis."""
    problem = get_problem('nes-gravity-assist')
    inst = problem.instance(0)
    unit = inst.fn.sigma_x / (inst.bounds[1] - inst.bounds[0]).numpy()
    settings = BenchSettings(n_initial=2, refit_every=0)
    lengthscale = problem.planner(method, measurements=2, settings=settings).model.kernel.lengthscale
    assert lengthscale.reshape(-1).tolist() == pytest.approx([math.sqrt(unit[0] * unit[1])])
    ard = problem.planner('ugp_ucb', measurements=2, settings=settings).model.kernel.lengthscale
    assert ard.reshape(-1).tolist() == pytest.approx(unit.tolist())

"""AIRBO's problems in the benchmark runner: oracles against independent quadrature, the world, smoke runs.

Independent oracles (no Monte Carlo, no code of ``uncertain_bo``):
- rkhs1d-gauss: a Gaussian bump convolved with Gaussian noise is a Gaussian bump (closed form);
- double-peak-beta: ``scipy.integrate.quad`` with the algebraic weight ``d^(a-1) (s-d)^(b-1)``, i.e. the beta
  density's singular factors integrated exactly;
- bumped-bowl-10d: trapezoidal rule over the circle's angle (spectrally accurate for a periodic integrand)
  times the closed-form Gaussian mean of the bowl factor.
"""
import csv
import json
import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize, special

from uncertain_bo.acquisition import get_method
from uncertain_bo.benchmarks import PROBLEMS, BenchSettings, get_problem, run
from uncertain_bo.benchmarks.cli import main as bench_cli
from uncertain_bo.benchmarks.functions_airbo import (BUMPED_BOWL_10D, DOUBLE_PEAK_BETA, RKHS1D_GAUSS,
                                                     get_airbo_problem)
from uncertain_bo.benchmarks.sampled import SampledNoiseProblem
from uncertain_bo.acquisition.optimize import OptimizerSettings

RKHS_NARROW = ((0.8, 0.85, 0.9, 0.95, 0.92, 0.74, 0.91, 0.89, 0.79, 0.88, 0.86, 0.96, 0.99, 0.82),
               (3, 4, 2, 1, -1, 2, 2, 3, 3, 2, -1, -2, 4, -3), 0.01)
RKHS_WIDE = ((0.1, 0.15, 0.08, 0.3, 0.4), (4, -1, 2, -2, 1), 0.1)


def rkhs_gauss_exact(x, sigma=0.01):
    """E f(x + e), e ~ N(0, sigma²): each bump w exp(-(x-s)²/2l²) becomes w l/v^½ exp(-(x-s)²/2v), v = l² + sigma²."""
    x = np.asarray(x, float)[..., None]
    out = 0.0
    for centres, weights, ell in (RKHS_NARROW, RKHS_WIDE):
        v = ell ** 2 + sigma ** 2
        out = out + (np.array(weights) * ell / math.sqrt(v) * np.exp(-(x - np.array(centres)) ** 2 / (2 * v))).sum(-1)
    return out


def double_peak_np(x):
    return (np.sinc(2 * math.pi * x) + 7.2 * np.exp(-(37 * (x - 0.25)) ** 2)
            + 8.9 * np.exp(-(39 * (x - 0.35)) ** 2))


def double_peak_beta_exact(x, a=0.4, b=0.2, scale=0.1):
    """E f(x + d), d ~ scale * Beta(a, b), by quad with the weight d^(a-1) (scale - d)^(b-1)."""
    norm = special.beta(a, b) * scale ** (a + b - 1)
    val = integrate.quad(lambda d: double_peak_np(x + d), 0.0, scale, weight='alg', wvar=(a - 1, b - 1),
                         epsabs=1e-12, limit=200)[0]
    return val / norm


def maximise_1d(fun, lo=0.0, hi=1.0, n=2001):
    grid = np.linspace(lo, hi, n)
    vals = np.array([fun(x) for x in grid])
    i = int(np.argmax(vals))
    step = grid[1] - grid[0]
    res = optimize.minimize_scalar(lambda z: -fun(z), bounds=(max(lo, grid[i] - step), min(hi, grid[i] + step)),
                                   method='bounded', options={'xatol': 1e-8})
    return float(res.x), float(-res.fun)


def bumped_bowl_exact(x, radius=0.5, std=0.1, n_angles=4000):
    """E f(x + delta) for the circle x N(0, std² I_8) noise: E g(z + r u(theta)) * (1 + 5 sum(w_i² + std²))."""
    x = np.asarray(x, float)
    theta = np.linspace(0, 2 * math.pi, n_angles, endpoint=False)
    z = x[:2] + radius * np.stack([np.cos(theta), np.sin(theta)], -1)
    r2 = (z ** 2).sum(-1)
    g = (2 * np.log(0.8 * r2 + np.exp(-10 * r2)) + 2.54).mean()
    return g * (1 + 5 * ((x[2:] ** 2).sum() + std ** 2 * (x.size - 2)))


# ------------------------------------------------------------------ published optima and our oracles
def test_independent_oracles_reproduce_the_published_robust_optima():
    x, g = maximise_1d(rkhs_gauss_exact)
    assert x == pytest.approx(RKHS1D_GAUSS.robust_argmax[0], abs=0.002)
    assert g == pytest.approx(RKHS1D_GAUSS.robust_optimum, abs=0.002)
    x, g = maximise_1d(double_peak_beta_exact, 0.2, 0.3, 201)
    assert x == pytest.approx(DOUBLE_PEAK_BETA.robust_argmax[0], abs=0.002)
    assert g == pytest.approx(DOUBLE_PEAK_BETA.robust_optimum, rel=0.01)   # published value is a 500-draw MC
    f0 = bumped_bowl_exact(np.zeros(10))
    assert f0 == pytest.approx(BUMPED_BOWL_10D.robust_optimum, abs=2e-4)
    res = optimize.minimize(bumped_bowl_exact, np.full(10, 0.05), method='Nelder-Mead',
                            options={'xatol': 1e-6, 'fatol': 1e-10, 'maxiter': 4000})
    assert res.fun >= f0 - 1e-7 and np.linalg.norm(res.x) < 0.01      # x = 0 is the robust minimiser


@pytest.mark.parametrize('spec, exact, n_mc', [
    (RKHS1D_GAUSS, rkhs_gauss_exact, 2000), (DOUBLE_PEAK_BETA, double_peak_beta_exact, None)], ids=['rkhs', 'beta'])
def test_runner_oracle_matches_the_exact_robust_optimum_1d(spec, exact, n_mc):
    """The runner's cached Monte Carlo oracle against the exact robust objective: the benchmark's own setting
    (10 000 common draws) for the double peak; 2000 draws for the RKHS function (its 19 bumps make the
    benchmark's grid cost ~10 s on the loaded 2-core machine)."""
    problem = get_problem(spec.name) if n_mc is None else SampledNoiseProblem(spec, n_mc=n_mc, argmax_tolerance=0.02)
    inst = problem.instance(0)
    x_star, g_star = inst.optimum
    x_exact, g_exact = maximise_1d(exact, 0.0, 1.0, 1001)
    assert float(x_star) == pytest.approx(x_exact, abs=0.003)
    assert g_star == pytest.approx(g_exact, rel=0.01)
    assert exact(float(x_star)) > g_exact - 0.01          # the oracle's point is truly near-optimal
    grid = torch.linspace(0, 1, 333, dtype=torch.float64).unsqueeze(-1)
    assert float(inst.robust_value(grid).max()) <= g_star + 1e-9   # it maximises the estimate the regret uses
    assert inst.info()['argmax_tolerance'] == 0.02


def test_runner_oracle_bumped_bowl():
    """The 10-D oracle (L-BFGS-B on the common-random-number estimate), 2000 draws to keep the test short."""
    inst = SampledNoiseProblem(BUMPED_BOWL_10D, n_mc=2000).instance(0)
    x_star, g_star = inst.optimum
    assert float(x_star.norm()) < 0.05
    assert -g_star == pytest.approx(bumped_bowl_exact(np.zeros(10)), rel=0.02)     # maximiser's sense: -E f
    assert bumped_bowl_exact(x_star.numpy()) < bumped_bowl_exact(np.zeros(10)) + 1e-4
    pts = 0.1 * torch.randn(64, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert float(inst.robust_value(pts).max()) <= g_star + 1e-9
    assert 'argmax_tolerance' not in inst.info()


def test_one_registry():
    for spec in (RKHS1D_GAUSS, DOUBLE_PEAK_BETA, BUMPED_BOWL_10D):
        assert isinstance(get_problem(spec.name), SampledNoiseProblem)
        assert get_airbo_problem(spec.name) is spec
    with pytest.raises(KeyError, match='known: rkhs1d-gauss'):
        get_airbo_problem('rkhs2d')                        # registered, but not a sampled-noise problem
    p = get_problem('double-peak-beta')
    assert (p.default_seeds, p.default_iterations, p.default_beta) == (12, 60, 2.0)
    assert p.instance(0).n_initial == 10 and p.instance(0).n_mc >= 500


# ------------------------------------------------------------------ world and planner configuration
def test_world_executes_with_the_true_noise_and_reports_p_x():
    inst = get_problem('double-peak-beta').instance(3)
    world = inst.world(3)
    target = torch.tensor([0.4], dtype=torch.float64)
    ms = [world.measure(target) for _ in range(2000)]
    shift = torch.stack([m.executed for m in ms]).reshape(-1) - 0.4
    assert float(shift.min()) >= 0 and float(shift.max()) <= 0.1            # one-sided, within the scale
    assert float(shift.mean()) == pytest.approx(0.1 * 0.4 / 0.6, abs=0.003)  # beta mean a / (a + b)
    assert [m.y for m in ms[:50]] == pytest.approx([float(double_peak_np(float(m.executed))) for m in ms[:50]])
    loc = ms[0].location
    assert loc.samples.shape == (1, 160, 1)
    torch.testing.assert_close(loc.samples, ms[1].location.samples)          # P_x: fixed base samples
    cfg = inst.planner_config(get_method('airbo'), BenchSettings(beta=2.0))
    torch.testing.assert_close(cfg['execution_noise'](target.reshape(1, 1)).samples, loc.samples)
    assert cfg['n_initial'] == 10 and cfg['refit_every'] == 1 and cfg['beta'] == 2.0
    # same seed: same stream; another seed: another one
    assert inst.world(3).measure(target).y == ms[0].y
    assert inst.world(4).measure(target).y != ms[0].y


def test_unsupported_settings_say_what_to_do():
    inst = get_problem('rkhs1d-gauss').instance(0)
    with pytest.raises(ValueError, match='mismatch.*use 1'):
        inst.planner_config(get_method('airbo'), BenchSettings(beta=2.0, mismatch=2.0))
    with pytest.raises(ValueError, match='no theory beta'):
        inst.planner_config(get_method('airbo'), BenchSettings(beta='theory'))
    with pytest.raises(ValueError, match='n_mc must be >= 500'):
        SampledNoiseProblem(RKHS1D_GAUSS, n_mc=100).instance(0)


# ------------------------------------------------------------------ smoke runs (small sizes)
SMALL = dict(n_initial=3, n_model_samples=24, n_mc=500, default_iterations=5, default_seeds=2)
FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=20)


@pytest.fixture
def small_problems(monkeypatch):
    """Small copies of the three problems under test names (in-process: the CLI runs with --n-jobs 1)."""
    names = {}
    for spec, tol in ((RKHS1D_GAUSS, 0.02), (DOUBLE_PEAK_BETA, 0.02), (BUMPED_BOWL_10D, None)):
        name = f'small-{spec.name}'
        kw = dict(SMALL, argmax_tolerance=tol) if tol else dict(SMALL)
        monkeypatch.setitem(PROBLEMS, name, lambda spec=spec, kw=kw, name=name: _renamed(spec, name, kw))
        names[spec.name] = name
    return names


def _renamed(spec, name, kw):
    p = SampledNoiseProblem(spec, **kw)
    p.name = name
    return p


@pytest.mark.parametrize('spec', [RKHS1D_GAUSS, DOUBLE_PEAK_BETA, BUMPED_BOWL_10D], ids=lambda s: s.name)
def test_bench_and_plot_commands(spec, small_problems, tmp_path, capsys):
    name = small_problems[spec.name]
    out = tmp_path / spec.name
    iterations = 5 if spec.dim == 1 else 4
    code = bench_cli(['bench', '--problem', name, '--method', 'airbo,gp_ucb', '--seeds', '2', '--n-jobs', '1',
                      '--iterations', str(iterations), '--restarts', '2', '--raw-samples', '32', '--out', str(out)])
    assert code == 0
    err = capsys.readouterr().err
    assert err.count('] small-') == 4                                   # one progress line per run
    runs = [json.loads(p.read_text()) for p in sorted((out / 'runs').glob('*.json'))]
    assert len(runs) == 4
    inst = get_problem(name).instance(0)
    x_star, g_star = inst.optimum
    for r in runs:
        recs = r['records']
        assert [x['phase'] for x in recs] == ['initial'] * 3 + ['acquisition'] * (iterations - 3)
        assert r['instance']['optimum_value'] == pytest.approx(g_star)
        for rec in recs:
            assert math.isfinite(rec['rec_regret']) and rec['rec_regret'] >= -1e-9
            assert math.isfinite(rec['regret']) and rec['regret'] >= -1e-9
            dist = float((torch.tensor(rec['rec_target']) - x_star).norm())
            assert rec['rec_distance'] == pytest.approx(dist)
        # the robust regret is the oracle's: recompute the final recommendation's value independently
        rec_t = torch.tensor([recs[-1]['rec_target']], dtype=torch.float64)
        assert recs[-1]['rec_regret'] == pytest.approx(g_star - float(inst.robust_value(rec_t)[0]))
    # common random numbers across methods: same seed -> same initial targets and same readings there
    by = {(r['spec']['method'], r['spec']['seed']): r['records'] for r in runs}
    for seed in (0, 1):
        a, b = by[('airbo', seed)][:3], by[('gp_ucb', seed)][:3]
        assert [x['target'] for x in a] == [x['target'] for x in b] and [x['y'] for x in a] == [x['y'] for x in b]
    with open(out / 'summary.csv') as fh:
        rows = list(csv.DictReader(fh))
    assert {r['method'] for r in rows} == {'airbo', 'gp_ucb'}
    for row in rows:
        finals = [r['final']['rec_regret'] for r in runs if r['spec']['method'] == row['method']]
        assert float(row['rec_regret_mean']) == pytest.approx(np.mean(finals))
        assert float(row['rec_regret_std']) == pytest.approx(np.std(finals, ddof=1))
        if spec.dim == 1:
            dists = [r['final']['rec_distance'] for r in runs if r['spec']['method'] == row['method']]
            assert int(row['n_within_tolerance']) == sum(d <= 0.02 for d in dists)
        else:
            assert row['n_within_tolerance'] == ''
    assert 'rec_distance' in (out / 'records.csv').read_text().splitlines()[0]
    assert bench_cli(['plot', str(out)]) == 0
    pngs = {p.name for p in out.glob('*.png')}
    assert f'{name}_recommendation_regret.png' in pngs
    assert (f'{name}_recommendation_distance.png' in pngs) == (spec.dim == 1)


def test_run_with_problem_defaults_uses_the_airbo_protocol(small_problems):
    """A direct run (no CLI) picks beta = 2 and the problem's initial design size."""
    result = run(small_problems['double-peak-beta'], 'skl', seed=0, iterations=4,
                 settings=BenchSettings(optimizer=FAST))
    assert result['spec']['settings']['beta'] == 2.0
    assert [r['phase'] for r in result['records']] == ['initial'] * 3 + ['acquisition']
    assert result['records'][-1]['beta_t'] == 2.0


def test_airbo_runs_on_rkhs2d_with_the_true_isotropic_lengthscale():
    """rkhs2d's model factory sets the true lengthscale (0.1 on both axes) on the GP; AIRBO's MMD kernel has one
    lengthscale for every axis, which takes it (it raised "shape '[1, 1]' is invalid for input of size 2")."""
    result = run('rkhs2d', 'airbo', seed=0, iterations=2, settings=BenchSettings(n_initial=2))
    assert result['planner']['hyperparameters']['lengthscale'] == pytest.approx([0.1, 0.1])


def test_a_single_lengthscale_kernel_refuses_lengthscales_that_differ_between_axes():
    from uncertain_bo.models import DistributionGP
    bounds = torch.tensor([[0.0, 0.0], [1.0, 2.0]], dtype=torch.float64)
    gp = DistributionGP(bounds, get_method('airbo')().kernel(2))
    gp.set_hyperparameters(lengthscale=[0.1, 0.2])           # the same in unit-cube units: 0.1 of each side
    assert gp.hyperparameters()['lengthscale'] == pytest.approx([0.1, 0.2])   # in input units
    with pytest.raises(ValueError, match='one lengthscale for every axis'):
        gp.set_hyperparameters(lengthscale=0.1)              # 0.1 and 0.05 of the sides

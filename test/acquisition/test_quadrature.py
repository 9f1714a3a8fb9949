"""DRBQO and the Bayesian-quadrature baselines (``acquisition/quadrature.py``; Nguyen et al. 2020) against the GP
posterior written out in NumPy (``oracle.py``), and the quadrature benchmark problems they run on."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.quadrature import QuadratureMean, joint_points, path_on_contexts
from uncertain_bo.kernels import se_kernel
from uncertain_bo.acquisition.ambiguity import worst_case_mean
from uncertain_bo.models.sample_paths import PosteriorSamplePaths
from uncertain_bo.benchmarks import BenchSettings, get_problem, run
from uncertain_bo.distributions import DTYPE, Dirac, Gaussian
from uncertain_bo.models import DistributionGP
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

from . import oracle

FAST = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=50)


def fitted_gp(n=15, seed=0, gaussian=False):
    g = torch.Generator().manual_seed(seed)
    bounds = torch.tensor([[0.0, 0.0, -1.0], [1.0, 2.0, 1.0]], dtype=DTYPE)
    x = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(n, 3, generator=g, dtype=DTYPE)
    y = torch.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.05 * torch.randn(n, generator=g, dtype=DTYPE)
    gp = DistributionGP(bounds)
    if gaussian:   # location distributions of different widths (the rover's EKF poses)
        cov = torch.diag_embed(0.01 + 0.05 * torch.rand(n, 3, generator=g, dtype=DTYPE))
        gp.set_data(Gaussian(x, cov), y)
    else:
        gp.set_data(Dirac(x), y)
    gp.fit()
    return gp, bounds


def oracle_posterior(model, points):
    """NumPy joint posterior at ``points`` ``(b, n, D)`` (Dirac) from the model's data and hyperparameters, the noise
    of each reading its λ + reported variance (+ input-induced variance, by the closed form, with
    ``input_induced_noise``)."""
    hp = model.hyperparameters()
    locs = model.train_locations
    covs = locs.covariance.numpy()
    noise = hp['noise'] + model.reading_noise.numpy()
    if model.input_induced_noise:
        w_inv = np.diag(1.0 / np.asarray(hp['lengthscale']) ** 2)
        noise = noise + np.array([hp['outputscale'] * (1 - np.linalg.det(np.eye(len(w_inv)) + 2 * w_inv @ c) ** -0.5)
                                  for c in covs])
    out = [oracle.joint_posterior(locs.mean.numpy(), covs, model.train_y.numpy(), pts,
                                  np.zeros((len(pts), pts.shape[1], pts.shape[1])), hp['lengthscale'],
                                  hp['outputscale'], noise, hp['mean']) for pts in np.asarray(points)]
    return np.stack([m for m, _ in out]), np.stack([c for _, c in out])


@pytest.mark.parametrize('gaussian', [False, True])
def test_posterior_paths_have_the_posterior_moments(gaussian):
    # Monte Carlo over paths: mean and covariance at a few points against the NumPy joint posterior
    gp, bounds = fitted_gp(gaussian=gaussian)
    u = torch.rand(1, 4, 3, dtype=DTYPE, generator=torch.Generator().manual_seed(1))
    pts = bounds[0] + (bounds[1] - bounds[0]) * u
    mean, cov = oracle_posterior(gp, pts)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        draws = torch.stack([PosteriorSamplePaths(gp, 1, 1000, gen).at_points(pts[0])[:, 0] for _ in range(800)])
    paths = PosteriorSamplePaths(gp, 1, 50, gen)
    torch.testing.assert_close(path_on_contexts(paths, pts[0, :, :2], pts[0, :2, 2:]),
                               paths.at_points(joint_points(pts[0, :, :2], pts[0, :2, 2:]))[..., 0])
    sd = torch.as_tensor(np.sqrt(cov[0].diagonal()))
    assert ((draws.mean(0) - torch.as_tensor(mean[0])).abs() < 4 * sd / math.sqrt(800) + 1e-3).all()
    emp = torch.cov(draws.T)
    assert ((emp - torch.as_tensor(cov[0])).abs() < 0.25 * sd[:, None] * sd[None, :] + 1e-4).all()


def test_se_kernel_is_the_squared_exponential_of_the_distances():
    # against the definition in NumPy, pair by pair: exp(-|x - x'|^2 / 2), its diagonal, a batch, and the gradient
    # of the lengthscale division it is called with (d/dl exp(-(a/l)^2 / 2) = exp(..) a^2 / l^3)
    gen = torch.Generator().manual_seed(3)
    x1, x2 = torch.randn(2, 5, 3, dtype=DTYPE, generator=gen), torch.randn(2, 4, 3, dtype=DTYPE, generator=gen)
    a, b = x1.numpy(), x2.numpy()
    want = np.exp(-0.5 * np.array([[[((a[k, i] - b[k, j]) ** 2).sum() for j in range(4)] for i in range(5)]
                                   for k in range(2)]))
    np.testing.assert_allclose(se_kernel(x1, x2).numpy(), want, rtol=1e-14, atol=0)
    np.testing.assert_allclose(se_kernel(x1[:, :4], x2, diag=True).numpy(), want[:, range(4), range(4)], rtol=1e-14)
    ell = torch.tensor(0.7, dtype=DTYPE, requires_grad=True)
    x, y = torch.tensor([[0.3]], dtype=DTYPE), torch.tensor([[-0.2]], dtype=DTYPE)
    se_kernel(x / ell, y / ell).sum().backward()
    assert ell.grad.item() == pytest.approx(math.exp(-0.5 * (0.5 / 0.7) ** 2) * 0.25 / 0.7 ** 3, rel=1e-12)


def test_quadrature_mean_transform_averages_each_group():
    """``QuadratureMean`` of a joint posterior over q groups of n points: the group means and (1/n²) Σ_ij of each block,
    against explicit averaging matrices."""
    from botorch.posteriors import GPyTorchPosterior
    from gpytorch.distributions import MultivariateNormal
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 6, 6, generator=g, dtype=DTYPE)
    cov, mean = a @ a.transpose(-1, -2) + 0.1 * torch.eye(6, dtype=DTYPE), torch.randn(2, 6, generator=g, dtype=DTYPE)
    out = QuadratureMean(3)(GPyTorchPosterior(MultivariateNormal(mean, cov)))
    avg = torch.kron(torch.eye(2, dtype=DTYPE), torch.full((1, 3), 1 / 3, dtype=DTYPE))      # (2, 6)
    torch.testing.assert_close(out.mean.squeeze(-1), mean @ avg.T)
    torch.testing.assert_close(out.distribution.covariance_matrix, avg @ cov @ avg.T)


def quadrature_planner(method, contexts, seed=0, **settings):
    bounds = torch.tensor([[-2.0, -2.0, -3.0, -3.0], [2.0, 2.0, 3.0, 3.0]], dtype=DTYPE)
    from uncertain_bo.distributions import GaussianExecutionNoise
    return Planner(bounds, GaussianExecutionNoise.isotropic(1e-9, 4), method=method, n_initial=6, seed=seed,
                   optimizer=FAST, method_settings={'contexts': contexts, 'rho': 1.0, **settings})


def logistic(z):
    return -math.log1p(math.exp(float(z[:2] @ z[2:])))


@pytest.mark.parametrize('method', ['drbqo', 'bqo_ei', 'mtbo', 'drbqo_randw'])
def test_methods_query_the_sample_set_and_recommend_a_past_point(method):
    contexts = torch.randn(5, 2, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    if method == 'mtbo':
        contexts = torch.eye(2, dtype=DTYPE)
    p = quadrature_planner(method, contexts)
    for _ in range(9):
        t = p.suggest()
        assert any(torch.equal(t[2:], c) for c in contexts), t
        p.observe(t, Dirac(t.reshape(1, -1)), logistic(t))
    rec = p.recommend()
    assert 0 <= rec.index < p.n and torch.equal(rec.target, p.targets[rec.index])


def test_shared_initial_design_and_max_variance_context():
    contexts = torch.randn(5, 2, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    a, b = quadrature_planner('drbqo', contexts), quadrature_planner('bqo_ei', contexts)
    for _ in range(6):
        ta, tb = a.suggest(), b.suggest()
        torch.testing.assert_close(ta, tb)
        a.observe(ta, Dirac(ta.reshape(1, -1)), logistic(ta))
        b.observe(tb, Dirac(tb.reshape(1, -1)), logistic(tb))
    t = a.suggest()
    _, cov = oracle_posterior(a.model, joint_points(t[:2].reshape(1, -1), contexts))
    assert torch.equal(t[2:], contexts[int(np.argmax(cov[0].diagonal()))])


def test_recommendation_is_the_max_min_of_the_posterior_mean():
    contexts = torch.randn(5, 2, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    p = quadrature_planner('drbqo', contexts)
    for _ in range(7):
        t = p.suggest()
        p.observe(t, Dirac(t.reshape(1, -1)), logistic(t))
    rec = p.recommend()
    mean, _ = oracle_posterior(p.model, joint_points(p.targets[:, :2], contexts))
    scores = chi2_worst_case(mean, 1.0)
    assert rec.index == int(np.argmax(scores)) and rec.mean == pytest.approx(float(scores.max()), abs=1e-7)


def chi2_worst_case(values, rho):
    """min_p pᵀl over the χ² ball n‖p‖² ≤ 2ρ + 1 of the simplex, by SLSQP (independent of ambiguity.py's solver)."""
    from scipy.optimize import minimize
    out = []
    for v in np.atleast_2d(values):
        n = len(v)
        res = minimize(lambda p: p @ v, np.full(n, 1 / n), jac=lambda p: v, method='SLSQP', bounds=[(0, 1)] * n,
                       constraints=[{'type': 'eq', 'fun': lambda p: p.sum() - 1},
                                    {'type': 'ineq', 'fun': lambda p: 2 * rho + 1 - n * p @ p}],
                       options={'ftol': 1e-14, 'maxiter': 500})
        out.append(res.fun)
    return np.array(out)


def test_missing_sample_set_is_a_one_line_error():
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
    from uncertain_bo.distributions import GaussianExecutionNoise
    with pytest.raises(ValueError, match='contexts'):
        Planner(bounds, GaussianExecutionNoise.isotropic(0.1, 2), method='bqo_ei')


def test_logistic_problem_rho_regret_and_empirical_value():
    prob = get_problem('drbqo-logistic')
    inst = prob.instance_for(0, BenchSettings(problem=(('rho', 1.0),)))
    x_star, v_star = inst.optimum
    assert v_star == pytest.approx(-math.log(2), abs=1e-6)   # x = 0 is robust for any rho > 0 here
    zero = torch.zeros(1, 4, dtype=DTYPE)
    assert float(inst.extra_values(zero)['empirical_value'][0]) == pytest.approx(-math.log(2))
    with pytest.raises(ValueError, match='no parameter'):
        prob.instance_for(0, BenchSettings(problem=(('radius', 1.0),)))


def test_runner_records_rho_regret_and_extras():
    r = run('drbqo-logistic', 'bqo_ts', 0, 13, BenchSettings(problem=(('rho', 0.5),), optimizer=FAST))
    assert r['spec']['variant'].endswith('rho=0.5')
    last = r['records'][-1]
    assert 'rec_empirical_value' in last and r['final']['extra_empirical_value'] == last['rec_empirical_value']
    # the paper's whole radius grid (Fig. 3 and Table 1's rho = 5), whatever rho the run itself uses
    assert {f'rec_rho_regret_{rho:g}' for rho in (0.1, 0.3, 0.5, 1, 3, 5)} <= set(last)
    assert last['rec_regret'] >= -1e-9


def test_app_c_functions_shift_the_input():
    from uncertain_bo.benchmarks.quadrature import shifted_test_function
    f, box = shifted_test_function('Beale')
    u = np.array([[0.5, 0.5]])
    w = np.zeros((1, 3, 2))
    assert np.allclose(f(u, w), 0 * f(u, w) + f(u, w)[0, 0])   # w = 0: f(x, 0) = -h(x)
    from botorch.test_functions import Beale
    assert f(u, w)[0, 0] == pytest.approx(-float(Beale().evaluate_true(torch.tensor([[0.0, 0.0]]))))


def test_drbqo_on_the_rover_uses_the_observed_offsets():
    # no sample set: the samples are the offsets between location estimates and targets; the configured
    # execution-noise model (here absurdly wide) is never read
    from uncertain_bo.distributions import GaussianExecutionNoise
    bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)
    p = Planner(bounds, GaussianExecutionNoise.isotropic(50.0, 2), method='drbqo', n_initial=5, optimizer=FAST,
                method_settings={'rho': 0.5})
    g = torch.Generator().manual_seed(0)
    for _ in range(8):
        t = p.suggest()
        assert ((t >= bounds[0]) & (t <= bounds[1])).all()
        executed = t + 0.5 * torch.randn(2, generator=g, dtype=DTYPE)
        y = float(torch.exp(-((executed - 6.0) ** 2).sum() / 8))
        p.observe(t, Gaussian(executed.reshape(1, 2), 0.04 * torch.eye(2, dtype=DTYPE).unsqueeze(0)), y)
    rec = p.recommend()
    offsets = p.locations.mean - p.targets
    mean, _ = oracle_posterior(p.model, p.targets.unsqueeze(1) + offsets.unsqueeze(0))
    scores = chi2_worst_case(mean, 0.5)
    assert rec.index == int(np.argmax(scores)) and rec.mean == pytest.approx(float(scores.max()), abs=1e-7)


def test_drbqo_with_input_noise_decides_on_the_models_posterior():
    """DRBQO on the rover with ``gp_input_noise`` (15 Gaussian locations in 2-D): its recommendation is the worst case
    of the model's posterior, whose noise includes each reading's input-induced variance, to 1e-8 (a private posterior
    from the reading noise alone had other means: the drift of issue 22); and its sample paths have that posterior's
    mean."""
    from uncertain_bo.distributions import GaussianExecutionNoise
    bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)
    p = Planner(bounds, GaussianExecutionNoise.isotropic(0.5, 2), method='drbqo', n_initial=15, optimizer=FAST,
                method_settings={'rho': 0.5}, input_noise=True, seed=3)
    g = torch.Generator().manual_seed(4)
    for _ in range(15):
        t = p.suggest()
        a = 0.5 * torch.randn(2, 2, generator=g, dtype=DTYPE)
        cov = a @ a.T + 0.05 * torch.eye(2, dtype=DTYPE)
        executed = t + 0.5 * torch.randn(2, generator=g, dtype=DTYPE)
        p.observe(t, Gaussian(executed.reshape(1, 2), cov.unsqueeze(0)), float(torch.sin(executed).sum()))
    rec = p.recommend()
    points = p.targets.unsqueeze(1) + (p.locations.mean - p.targets).unsqueeze(0)
    mean, _ = oracle_posterior(p.model, points)
    scores = worst_case_mean(torch.as_tensor(mean), 0.5)
    assert rec.index == int(scores.argmax()) and rec.mean == pytest.approx(float(scores.max()), abs=1e-8)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        draws = PosteriorSamplePaths(p.model, 2000, 2000, gen).at_points(points[0])       # (n, 2000)
    sd = np.sqrt(oracle_posterior(p.model, points[:1])[1][0].diagonal())
    assert (np.abs(draws.mean(-1).numpy() - mean[0]) < 5 * sd / math.sqrt(2000) + 0.02 * sd).all()


def test_problem_param_sweep_and_unknown_name():
    from uncertain_bo.benchmarks.cli import _problem_grid
    assert _problem_grid(['rho=[0.1,3]']) == [(('rho', 0.1),), (('rho', 3),)]
    assert _problem_grid([]) == [()]
    from uncertain_bo.benchmarks.cli import main
    assert main(['bench', '--problem', 'drbqo-logistic', '--problem-param', 'radius=1', '--out', '/tmp/x']) == 2


def test_drbqo_tables_pair_drbqo_with_each_method_over_shared_seeds():
    import importlib.util
    from pathlib import Path

    from scipy.stats import wilcoxon
    spec = importlib.util.spec_from_file_location('drbqo_tables',
                                                  Path(__file__).parents[2] / 'bench' / 'drbqo_tables.py')
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    g = np.random.default_rng(1)
    a, b = g.uniform(0, 1, 8), g.uniform(0, 1, 8)

    def fake(method, seed, rho, final):
        return {'spec': {'problem': 'p', 'method': method, 'seed': seed, 'iterations': 5}, 'instance': {'rho': rho},
                'final': final}
    runs = ([fake('drbqo', s, 1.0, {'rec_regret': a[s]}) for s in range(8)]
            + [fake('drbqo', s, 3.0, {'rec_regret': 9.0}) for s in range(8)]         # another rho: not paired at 1
            + [fake('bqo_ts', s, 1.0, {'rec_regret': 5.0, 'extra_rho_regret_1': b[s], 'extra_rho_regret_3': 0.0})
               for s in range(1, 8)])                                                 # seed 0 unpaired
    rows = [r for r in tables.paired(runs, [1.0]) if 'bqo_ts' in r]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip('|').split('|')]
    assert cells[3] == '7' and cells[5] == f'{int((a[1:] < b[1:]).sum())} / {int((a[1:] > b[1:]).sum())}'
    assert float(cells[6]) == pytest.approx(wilcoxon(a[1:] - b[1:]).pvalue, rel=1e-2)

"""DRBQO and the Bayesian-quadrature baselines (uncertain_bo.acquisition.quadrature, quadrature_gp) and the
quadrature benchmark problems (Nguyen et al. 2020)."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.quadrature import ICMKernel, joint_points
from uncertain_bo.acquisition.quadrature_gp import JointPosterior, PosteriorPath
from uncertain_bo.ambiguity import worst_case_mean
from uncertain_bo.benchmarks import BenchSettings, get_problem, run
from uncertain_bo.distributions import DTYPE, Dirac, Gaussian
from uncertain_bo.models import DistributionGP
from uncertain_bo.optim import OptimizerSettings
from uncertain_bo.planner import Planner


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


def test_joint_posterior_matches_the_models_posterior():
    gp, bounds = fitted_gp()
    pts = bounds[0] + (bounds[1] - bounds[0]) * torch.rand(4, 5, 3, dtype=DTYPE)
    mean, cov = JointPosterior(gp).mean_covariance(pts)
    with torch.no_grad():
        m_ref, v_ref = gp.posterior(Dirac(pts.reshape(-1, 3)))
    torch.testing.assert_close(mean.reshape(-1), m_ref, rtol=1e-6, atol=1e-8)
    torch.testing.assert_close(cov.diagonal(dim1=-2, dim2=-1).reshape(-1), v_ref, rtol=1e-5, atol=1e-8)
    assert torch.linalg.eigvalsh(cov).min() > -1e-8   # a covariance per group


@pytest.mark.parametrize('gaussian', [False, True])
def test_posterior_paths_have_the_posterior_moments(gaussian):
    # Monte Carlo over paths: mean and covariance at a few points against the exact joint posterior
    gp, bounds = fitted_gp(gaussian=gaussian)
    post = JointPosterior(gp)
    u = torch.rand(1, 4, 3, dtype=DTYPE, generator=torch.Generator().manual_seed(1))
    pts = bounds[0] + (bounds[1] - bounds[0]) * u
    mean, cov = post.mean_covariance(pts)
    gen = torch.Generator().manual_seed(2)
    with torch.no_grad():
        draws = torch.stack([PosteriorPath(post, 1000, gen)(pts[0]) for _ in range(800)])
    path = PosteriorPath(post, 50, gen)
    torch.testing.assert_close(path.on_contexts(pts[0, :, :2], pts[0, :2, 2:]),
                               path(joint_points(pts[0, :, :2], pts[0, :2, 2:])))
    sd = cov[0].diagonal().sqrt()
    assert ((draws.mean(0) - mean[0]).abs() < 4 * sd / math.sqrt(800) + 1e-3).all()
    emp = torch.cov(draws.T)
    assert ((emp - cov[0]).abs() < 0.25 * sd[:, None] * sd[None, :] + 1e-4).all()


def test_icm_kernel_is_se_times_task_correlation():
    k = ICMKernel(4, 2)
    x = torch.tensor([[0.1, 0.2, 1.0, 0.0], [0.3, 0.1, 0.0, 1.0], [0.5, 0.5, 1.0, 0.0]], dtype=DTYPE)
    k = k.to(DTYPE)
    with torch.no_grad():   # an arbitrary task covariance: the kernel uses its correlation matrix
        k.task.covar_factor = torch.tensor([[2.0], [0.3]], dtype=DTYPE)
        k.task.var = torch.tensor([0.2, 3.0], dtype=DTYPE)
    K = k.forward(x, x)
    cov = k.task.covar_matrix.to_dense()
    B = cov / torch.outer(cov.diagonal().sqrt(), cov.diagonal().sqrt())
    ell = k.lengthscale[0, :2]
    se = torch.exp(-0.5 * (((x[:, None, :2] - x[None, :, :2]) / ell) ** 2).sum(-1))
    t = x[:, 2:].argmax(-1)
    torch.testing.assert_close(K, se * B[t][:, t])
    torch.testing.assert_close(k.forward(x, x, diag=True), K.diagonal())


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
    var = JointPosterior(a.model).variance(joint_points(t[:2].reshape(1, -1), contexts)[0])
    assert torch.equal(t[2:], contexts[int(var.argmax())])


def test_recommendation_is_the_max_min_of_the_posterior_mean():
    contexts = torch.randn(5, 2, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    p = quadrature_planner('drbqo', contexts)
    for _ in range(7):
        t = p.suggest()
        p.observe(t, Dirac(t.reshape(1, -1)), logistic(t))
    rec = p.recommend()
    mean, _ = JointPosterior(p.model).mean_covariance(joint_points(p.targets[:, :2], contexts))
    scores = worst_case_mean(mean.detach(), 1.0)
    assert rec.index == int(scores.argmax()) and rec.mean == pytest.approx(float(scores.max()))


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
    mean, _ = JointPosterior(p.model).mean_covariance(p.targets.unsqueeze(1) + offsets.unsqueeze(0))
    assert rec.index == int(worst_case_mean(mean.detach(), 0.5).argmax())


def test_problem_param_sweep_and_unknown_name():
    from uncertain_bo.benchmarks.cli import _problem_grid
    assert _problem_grid(['rho=[0.1,3]']) == [(('rho', 0.1),), (('rho', 3),)]
    assert _problem_grid([]) == [()]
    from uncertain_bo.benchmarks.cli import main
    assert main(['bench', '--problem', 'drbqo-logistic', '--problem-param', 'radius=1', '--out', '/tmp/x']) == 2


def multitask_data(n_tasks=10, seed=0):
    """Tasks sharing one function up to small offsets, observed unevenly (as folds in a BO run): most readings
    on task 0, one on each other task."""
    g = np.random.default_rng(seed)
    counts = [12] + [1] * (n_tasks - 1)
    x = np.concatenate([g.uniform(0, 1, (c, 2)) for c in counts])
    t = np.repeat(np.arange(n_tasks), counts)

    def f(x, t):
        return np.sin(6 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * t

    u = g.uniform(0, 1, (200, 2))
    tu = np.arange(200) % n_tasks
    joint = lambda x, t: torch.as_tensor(np.concatenate([x, np.eye(n_tasks)[t]], 1), dtype=DTYPE)  # noqa: E731
    return joint(x, t), torch.as_tensor(f(x, t), dtype=DTYPE), joint(u, tu), torch.as_tensor(f(u, tu), dtype=DTYPE)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_icm_fit_on_a_multitask_problem_predicts_every_task(seed):
    # regression: with a free per-task variance (plain IndexKernel) the fit sent some task variances to ~0 and
    # others to ~100x, and predictions on the sparsely observed tasks fell outside the data's range (MTBO then
    # recommended the worst grid point of the CV problem); oracle: the constant predictor
    X, y, Xt, yt = multitask_data(seed=seed)
    n_tasks = X.shape[1] - 2
    bounds = torch.tensor([[0.0] * X.shape[1], [1.0] * X.shape[1]], dtype=DTYPE)
    gp = DistributionGP(bounds, ICMKernel(X.shape[1], n_tasks))
    gp.set_data(Dirac(X), y)
    assert gp.fit()
    ell = torch.tensor(gp.hyperparameters()['lengthscale'][:2])
    assert ((ell > 0.05) & (ell < 5)).all(), ell
    mean, _ = gp.posterior(Dirac(Xt))
    rmse = float((mean - yt).pow(2).mean().sqrt())
    assert rmse < 0.5 * float((y.mean() - yt).pow(2).mean().sqrt())
    lo, hi = float(y.min()), float(y.max())
    assert lo - 0.5 * (hi - lo) < float(mean.min()) and float(mean.max()) < hi + 0.5 * (hi - lo)


def test_drbqo_tables_pair_drbqo_with_each_method_over_shared_seeds():
    import importlib.util
    from pathlib import Path

    from scipy.stats import wilcoxon
    spec = importlib.util.spec_from_file_location('drbqo_tables',
                                                  Path(__file__).parents[1] / 'bench' / 'drbqo_tables.py')
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

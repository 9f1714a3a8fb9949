"""AIRBO and its baselines as registry methods driving the shared Planner with sample-based noise models."""
import pytest
import torch

from uncertain_bo.acquisition import TargetUpperConfidenceBound, get_method
from uncertain_bo.acquisition.airbo import AIRBO_BETA
from uncertain_bo.benchmarks.functions_airbo import get_airbo_problem
from uncertain_bo.distributions import Dirac, Empirical
from uncertain_bo.kernels import ExpectedRBFKernel, KernelMeanEmbeddingKernel, MMDKernel, SymmetrizedKLKernel
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

FAST = OptimizerSettings(num_restarts=4, raw_samples=64, maxiter=50)


@pytest.fixture
def one_thread():
    """On the shared 2-core machine, two OpenMP threads under load were ~7x slower than one for this loop."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def run(problem, method, seed, n_initial, n_total, n_samples=160):
    """AIRBO's setting: the executed input is never observed; the GP gets P_x of the commanded target."""
    noise = problem.make_noise(n_samples=n_samples)
    world = torch.Generator().manual_seed(1000 + seed)
    planner = Planner(problem.bounds_tensor, noise, method=method, beta=AIRBO_BETA, n_initial=n_initial,
                      seed=seed, optimizer=FAST)
    for _ in range(n_total):
        x = planner.suggest()
        executed = noise.sample_executed(x.reshape(1, -1), world)
        planner.observe(x, noise(x.reshape(1, -1)), float(problem.objective(executed)))
    return planner


@pytest.mark.parametrize('seed', [0, 1])
def test_airbo_finds_rkhs_robust_optimum(seed, one_thread):
    """rkhs1d-gauss: robust argmax 0.078 (the nominal maximum 0.892 sits among narrow bumps the N(0, 0.01²)
    input noise washes out). 6 initial + 14 UCB steps; measured recommendations for seeds 0-2: 0.073, 0.083,
    0.088 (the 12-seed benchmark belongs to the runner)."""
    problem = get_airbo_problem('rkhs1d-gauss')
    planner = run(problem, 'airbo', seed, 6, 20)
    rec = planner.recommend()
    assert abs(float(rec.target) - 0.078) < 0.02, rec
    assert float(problem.robust_regret(rec.target.reshape(1, 1))) < 0.1
    assert isinstance(planner.model.kernel, MMDKernel) and planner.model.kernel.estimator == 'nystrom'
    assert isinstance(planner.model.train_locations, Empirical)
    assert planner.model.train_locations.samples.shape == (20, 160, 1)


@pytest.mark.parametrize('name, kernel_type, train_type', [
    ('airbo', MMDKernel, Empirical), ('airbo_empirical', MMDKernel, Empirical),
    ('ugp_kme', KernelMeanEmbeddingKernel, Empirical), ('skl', SymmetrizedKLKernel, Empirical),
    ('erbf', ExpectedRBFKernel, Empirical), ('gp_ucb', ExpectedRBFKernel, Dirac)])
def test_every_method_runs_with_sampled_noise(name, kernel_type, train_type, one_thread):
    problem = get_airbo_problem('double-peak-beta')
    planner = run(problem, name, 0, 4, 6, n_samples=40)
    assert isinstance(planner.model.kernel, kernel_type)
    assert isinstance(planner.model.train_locations, train_type)
    method = get_method(name)
    cands = planner.candidates(torch.tensor([[0.3]]))
    assert isinstance(cands, Empirical if method.robust_candidates else Dirac)
    mean, std = planner.predict(torch.tensor([[0.25], [0.6]]))
    assert torch.isfinite(mean).all() and (std > 0).all()
    rec = planner.recommend()
    assert 0.0 <= float(rec.target) <= 1.0


def test_airbo_decisions_are_reproducible(one_thread):
    """Fixed base samples and landmarks: the same seed gives the same targets (no stochastic acquisition)."""
    problem = get_airbo_problem('double-peak-beta')
    a = run(problem, 'airbo', 3, 4, 7, n_samples=60)
    b = run(problem, 'airbo', 3, 4, 7, n_samples=60)
    # equal up to floating-point summation order (vectorised reductions differ by ~1e-10 between runs)
    assert torch.allclose(a.targets, b.targets, atol=1e-7, rtol=0)


def test_acquisition_is_smooth_in_the_target(one_thread):
    """With common random numbers the UCB is a smooth function of x: finite differences match autograd."""
    problem = get_airbo_problem('double-peak-beta')
    planner = run(problem, 'airbo', 2, 8, 8, n_samples=100)
    planner.suggest()  # fits the model
    acq = TargetUpperConfidenceBound(planner.model, planner.candidates, AIRBO_BETA ** 2)
    x = torch.tensor([[[0.31]]], requires_grad=True)
    acq(x).sum().backward()
    eps = 1e-5
    with torch.no_grad():
        fd = (acq(x.detach() + eps) - acq(x.detach() - eps)) / (2 * eps)
        again = acq(x.detach())
        assert torch.equal(again, acq(x.detach()))
    assert float(x.grad) == pytest.approx(float(fd), rel=1e-4, abs=1e-6)

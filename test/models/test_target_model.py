"""Stock BoTorch acquisitions on the planner's model (``models/target_model.py``): after observations with per-point
Gaussian location covariances, the view's joint posterior against the NumPy posterior (``acquisition/oracle.py``),
``qLogNoisyExpectedImprovement`` and ``qUpperConfidenceBound`` with ``X_pending`` (the latter against its formula on
the NumPy posterior with BoTorch's own base samples), a CVaR objective over an ``InputPerturbation`` of the execution
noise, and the perturbation set's moments."""
import math

import numpy as np
import pytest
import torch
from botorch.acquisition import qLogExpectedImprovement, qLogNoisyExpectedImprovement, qUpperConfidenceBound
from botorch.acquisition.risk_measures import CVaR
from botorch.models.transforms.input import InputPerturbation
from botorch.optim import optimize_acqf

from acquisition import oracle
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import TargetModel
from uncertain_bo.models.target_model import perturbation_set
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [20.0, 10.0]], dtype=DTYPE)
EXEC = np.diag([0.6, 0.3]) ** 2


@pytest.fixture(scope='module')
def planner():
    """12 measurements, each with its own (EKF-like) location covariance; hyperparameters fitted."""
    g = torch.Generator().manual_seed(5)
    p = Planner(BOX, GaussianExecutionNoise(torch.as_tensor(EXEC)), n_initial=12, seed=2)
    for _ in range(12):
        x = p.suggest()
        a = 0.3 * torch.randn(2, 2, generator=g, dtype=DTYPE)
        cov = a @ a.T + 0.01 * torch.eye(2, dtype=DTYPE)
        ex = x + torch.linalg.cholesky(cov) @ torch.randn(2, generator=g, dtype=DTYPE)
        p.observe(x, Gaussian(ex[None], cov[None]), float(torch.sin(ex[0] / 3) + torch.cos(ex[1] / 2)))
    p.recommend()           # brings the model up to date and fits it
    return p


def oracle_joint(p, points, covs):
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    return oracle.joint_posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), points, covs,
                                  hp['lengthscale'], hp['outputscale'], hp['noise'], hp['mean'])


def test_view_over_targets_is_the_posterior_of_the_robust_objective(planner):
    assert (planner.model.train_locations.covariance != planner.model.train_locations.covariance[:1]).any()
    x = torch.tensor([[[3.0, 4.0], [3.5, 4.2], [15.0, 1.0]]], dtype=DTYPE)
    post = TargetModel(planner.model, planner.candidates).posterior(x)
    mu, cov = oracle_joint(planner, x[0].numpy(), [EXEC] * 3)
    np.testing.assert_allclose(post.mean.reshape(-1).detach().numpy(), mu, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(post.distribution.covariance_matrix[0].detach().numpy(), cov, rtol=1e-6, atol=1e-9)
    points = TargetModel(planner.model).posterior(x)          # no execution-noise model: f at points
    mu, _ = oracle_joint(planner, x[0].numpy(), [np.zeros((2, 2))] * 3)
    np.testing.assert_allclose(points.mean.reshape(-1).detach().numpy(), mu, rtol=1e-8, atol=1e-9)


def test_stock_qlognei_evaluates_and_is_maximised_on_the_planners_model(planner):
    for model in (planner.model, TargetModel(planner.model, planner.candidates)):
        acq = qLogNoisyExpectedImprovement(model, X_baseline=planner.targets, cache_root=False)
        x = torch.tensor([[[3.0, 4.0]], [[15.0, 1.0]]], dtype=DTYPE, requires_grad=True)
        value = acq(x)
        assert value.shape == (2,) and torch.isfinite(value).all()
        value.sum().backward()
        assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
        cand, _ = optimize_acqf(acq, BOX, q=2, num_restarts=2, raw_samples=32, options={'maxiter': 20})
        assert cand.shape == (2, 2) and ((cand >= BOX[0]) & (cand <= BOX[1])).all()


def test_stock_qucb_with_pending_targets_is_its_formula_on_the_joint_posterior(planner):
    """qUCB = mean over samples of max_j m_j + √(βπ/2) |Y_j - m_j| (m: the samples' mean, as BoTorch 0.18 computes it)
    over the joint posterior of X and the pending targets (BoTorch appends them), with Y from BoTorch's base samples
    and the NumPy joint posterior's Cholesky factor."""
    view = TargetModel(planner.model, planner.candidates)
    pending = torch.tensor([[10.0, 5.0], [4.0, 4.0]], dtype=DTYPE)
    acq = qUpperConfidenceBound(view, beta=4.0, X_pending=pending)
    x = torch.tensor([[[3.0, 4.0], [12.0, 6.0]]], dtype=DTYPE)
    got = float(acq(x))
    z = acq.sampler.base_samples.reshape(acq.sampler.base_samples.shape[0], -1).numpy()     # (s, q + p)
    pts = torch.cat([x[0], pending]).numpy()
    mu, cov = oracle_joint(planner, pts, [EXEC] * 4)
    samples = mu + z @ np.linalg.cholesky(cov).T
    m = samples.mean(0)
    expected = (m + math.sqrt(4.0 * math.pi / 2) * np.abs(samples - m)).max(-1).mean()
    assert got == pytest.approx(expected, rel=1e-6)
    assert got != pytest.approx(float(qUpperConfidenceBound(view, beta=4.0)(x)), rel=1e-3)   # the pending count


def test_cvar_over_the_execution_noise_runs_on_the_shared_model(planner):
    """An ``InputPerturbation`` of n_w execution-noise draws: the view's posterior at each target is f's at the
    perturbed points (NumPy posterior of points), and qLogEI of CVaR_0.8 over them evaluates."""
    xi = perturbation_set(planner.execution_noise, 8, seed=3)
    view = TargetModel(planner.model, perturbation=InputPerturbation(xi))
    x = torch.tensor([[[3.0, 4.0]], [[15.0, 1.0]]], dtype=DTYPE)
    post = view.posterior(x)
    assert post.mean.shape == (2, 8, 1)
    mu, _ = oracle_joint(planner, (x[1, 0] + xi).numpy(), [np.zeros((2, 2))] * 8)
    np.testing.assert_allclose(post.mean[1, :, 0].detach().numpy(), mu, rtol=1e-8, atol=1e-9)
    cvar = CVaR(alpha=0.8, n_w=8)
    acq = qLogExpectedImprovement(view, best_f=float(planner.y.mean()), objective=cvar)
    value = acq(x)
    assert value.shape == (2,) and torch.isfinite(value).all()
    # CVaR_0.8 of the posterior mean: the mean of its lowest ceil(0.2 * 8) + ... values, as BoTorch defines it
    lowest = np.sort(mu)[:8 - math.ceil(8 * 0.8) + 1]
    assert float(cvar(post.mean[1:].unsqueeze(0))) == pytest.approx(lowest.mean(), rel=1e-9)
    with pytest.raises(ValueError, match='not both'):
        TargetModel(planner.model, planner.candidates, InputPerturbation(xi))


def test_perturbation_set_moments_match_the_execution_noise():
    cov = torch.tensor([[0.5, 0.2], [0.2, 0.3]], dtype=DTYPE)
    xi = perturbation_set(GaussianExecutionNoise(cov), 4096, seed=0)
    torch.testing.assert_close(xi.mean(0), torch.zeros(2, dtype=DTYPE), atol=2e-3, rtol=0)
    torch.testing.assert_close(torch.cov(xi.T), cov, atol=2e-2, rtol=0)

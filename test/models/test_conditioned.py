"""DistributionGP as a complete BoTorch model: fantasies (``fantasize``, batched ``condition_on_observations``),
``qKnowledgeGradient`` and ``qNegIntegratedPosteriorVariance`` on it, and ``model(X)`` against ``posterior(X)``.

The oracle is the NumPy posterior of the data plus the fantasised readings with the same hyperparameters
(:mod:`acquisition.oracle`): what refitting on the appended data with fixed hyperparameters gives."""
import numpy as np
import pytest
import torch
from botorch.acquisition import qKnowledgeGradient, qNegIntegratedPosteriorVariance
from botorch.sampling import SobolQMCNormalSampler
from gpytorch.models import ExactGP

from acquisition import oracle
from models.test_distribution_gp import BOUNDS, data, input_variance_numpy
from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import ConditionedGP, DistributionGP

F64 = torch.float64


def refit_posterior(setup, new_means, new_covs, y_new, test_means, test_covs):
    """The NumPy joint posterior on the data plus readings ``y_new`` at Gaussians ``new_means``/``new_covs`` (noise
    λ + v of each), same hyperparameters."""
    M, S, Y, ell, sf2, noise, m = setup
    lam = 0.02
    noise2 = np.concatenate([noise, lam + input_variance_numpy(new_covs, ell, sf2)])
    return oracle.joint_posterior(np.concatenate([M, new_means]), np.concatenate([S, new_covs]),
                                  np.concatenate([Y, y_new]), test_means, test_covs, ell, sf2, noise2, m)


def test_fantasize_is_the_posterior_refitted_on_the_fantasies(noisy_inputs_gp):
    """``fantasize`` at ``3 x 2`` points with 4 fantasies: a model of batch shape ``4 x 3`` whose posterior at each
    ``(s, b)`` is the NumPy posterior of the data plus that fantasy's two readings."""
    gp, setup = noisy_inputs_gp
    gen = torch.Generator().manual_seed(3)
    X = BOUNDS[0] + torch.rand(3, 2, 2, generator=gen, dtype=F64) * (BOUNDS[1] - BOUNDS[0])
    fantasy = gp.fantasize(X, SobolQMCNormalSampler(torch.Size([4]), seed=0))
    assert isinstance(fantasy, ConditionedGP) and fantasy.batch_shape == (4, 3)
    test = BOUNDS[0] + torch.rand(5, 2, generator=gen, dtype=F64) * (BOUNDS[1] - BOUNDS[0])
    post = fantasy.posterior(test.expand(1, 1, 5, 2))       # broadcasts over the fantasies' batch
    assert post.mean.shape == (4, 3, 5, 1)
    zeros2, zeros5 = np.zeros((2, 2, 2)), np.zeros((5, 2, 2))
    for s, b in [(0, 0), (1, 2), (3, 1)]:
        mu, c = refit_posterior(setup, X[b].numpy(), zeros2, fantasy.Y[s, b].detach().numpy(), test.numpy(), zeros5)
        np.testing.assert_allclose(post.mean[s, b, :, 0].detach().numpy(), mu, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(post.distribution.covariance_matrix[s, b].detach().numpy(), c, rtol=1e-7,
                                   atol=1e-9)
    # the fantasised readings are draws of new readings: their spread is the posterior's plus λ
    assert fantasy.Y.shape == (4, 3, 2) and not torch.equal(fantasy.Y[0], fantasy.Y[1])


def test_batched_conditioning_on_distributions_adds_their_input_induced_noise(noisy_inputs_gp):
    """Readings at Gaussians (a distribution batch, ``batch_shape=(2,)``): each reading's noise is λ + v_i, as in the
    NumPy posterior refitted with them."""
    gp, setup = noisy_inputs_gp
    means = torch.tensor([[2.0, 2.0], [8.0, -1.0], [5.0, 3.0], [1.0, -4.0]], dtype=F64)
    covs = torch.stack([torch.eye(2, dtype=F64) * s for s in (0.2, 0.5, 0.1, 0.3)])
    Y = torch.tensor([[[[0.7], [-0.3]], [[0.1], [1.2]]]], dtype=F64)          # 1 x 2 x 2 x 1
    cond = gp.condition_on_observations(Gaussian(means, covs), Y, batch_shape=(2,))
    test = Gaussian(torch.tensor([[2.5, 2.0], [5.0, 0.0], [6.0, -2.0]], dtype=F64), torch.eye(2, dtype=F64) * 0.25)
    post = cond.posterior(test, batch_shape=(1, 1))
    for b in range(2):
        rows = slice(2 * b, 2 * b + 2)
        mu, c = refit_posterior(setup, means[rows].numpy(), covs[rows].numpy(), Y[0, b, :, 0].numpy(),
                                test.mean.numpy(), test.covariance.numpy())
        np.testing.assert_allclose(post.mean[0, b, :, 0].detach().numpy(), mu, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(post.distribution.covariance_matrix[0, b].detach().numpy(), c, rtol=1e-7,
                                   atol=1e-9)


def test_qnipv_is_the_average_posterior_variance_after_the_readings(noisy_inputs_gp):
    """qNIPV of ``q = 2`` points is minus the mean, over the integration points, of the posterior variance with two
    more readings there (which does not depend on their values): by the NumPy posterior."""
    gp, setup = noisy_inputs_gp
    gen = torch.Generator().manual_seed(5)
    mc = BOUNDS[0] + torch.rand(30, 2, generator=gen, dtype=F64) * (BOUNDS[1] - BOUNDS[0])
    X = BOUNDS[0] + torch.rand(3, 2, 2, generator=gen, dtype=F64) * (BOUNDS[1] - BOUNDS[0])
    value = qNegIntegratedPosteriorVariance(gp, mc_points=mc)(X)
    assert value.shape == (3,)
    for b in range(3):
        _, c = refit_posterior(setup, X[b].numpy(), np.zeros((2, 2, 2)), np.zeros(2), mc.numpy(),
                               np.zeros((30, 2, 2)))
        assert float(value[b]) == pytest.approx(-np.diag(c).mean(), rel=1e-8)


def test_knowledge_gradient_is_non_negative_and_runs_through_optimize_acqf(noisy_inputs_gp):
    """One-shot qKG (BoTorch's ``optimize_acqf``) on the model and on its target view: the optimised value, the expected
    gain of the best posterior mean over the current best, is >= 0 and finite; at fantasy points all equal to the
    current maximiser it is the fantasies' average change there, which is ~0 (the tower property)."""
    from botorch.acquisition import PosteriorMean
    from botorch.optim import optimize_acqf

    from uncertain_bo.distributions import GaussianExecutionNoise
    from uncertain_bo.models import TargetModel
    gp, _ = noisy_inputs_gp
    bounds = BOUNDS.to(F64)
    torch.manual_seed(0)        # optimize_acqf's raw samples
    best_x, best = optimize_acqf(PosteriorMean(gp), bounds, q=1, num_restarts=2, raw_samples=64)
    kg = qKnowledgeGradient(gp, num_fantasies=64, current_value=best)
    at_best = kg(torch.cat([torch.tensor([[[5.0, 0.0]]], dtype=F64), best_x.expand(1, 64, 2)], -2))
    assert abs(float(at_best)) < 0.05 * float(gp.posterior(best_x).variance.sqrt())
    x, value = optimize_acqf(qKnowledgeGradient(gp, num_fantasies=8, current_value=best), bounds, q=1,
                             num_restarts=2, raw_samples=16, options={'maxiter': 20})
    assert x.shape == (1, 2) and 0.0 <= float(value) < 10.0
    robust = TargetModel(gp, GaussianExecutionNoise(torch.eye(2, dtype=F64) * 0.3))
    x, value = optimize_acqf(qKnowledgeGradient(robust, num_fantasies=8), bounds, q=1, num_restarts=2,
                             raw_samples=16, options={'maxiter': 20})
    assert torch.isfinite(value) and (x >= bounds[0]).all() and (x <= bounds[1]).all()


@pytest.mark.parametrize('sparse', [False, True])
@pytest.mark.parametrize('input_induced_noise', [False, True])
def test_call_is_the_posterior_in_every_mode(gen, sparse, input_induced_noise):
    """``model(X)`` (GPyTorch's call) and ``model.posterior(X)`` agree to 1e-10 for points and distributions, exact or
    sparse, with or without input-induced noise; and GPyTorch's own prediction strategy (``ExactGP.__call__`` on the
    encoded inputs, independent of the model's cache) gives the exact posterior with the input-induced variances
    (before: its mean was off, as ``forward`` added them in training mode only)."""
    locs, y = data(20, gen)
    gp = DistributionGP(BOUNDS, input_induced_noise=input_induced_noise)
    gp.set_data(locs, y)
    gp.set_hyperparameters(lengthscale=[0.8, 0.6], outputscale=1.5, noise=0.01)
    if sparse:
        gp.inducing = torch.arange(0, 20, 2)
    X = BOUNDS[0] + torch.rand(4, 3, 2, generator=gen, dtype=F64) * (BOUNDS[1] - BOUNDS[0])
    dists = Gaussian(X.reshape(-1, 2), torch.eye(2, dtype=F64).expand(12, 2, 2) * 0.3)
    for inputs, kw in ((X, {}), (dists, {'batch_shape': (4,)})):
        post = gp.posterior(inputs, **kw)
        called = gp(inputs, **kw)
        torch.testing.assert_close(called.mean, post.mean[..., 0], rtol=0, atol=1e-10)
        torch.testing.assert_close(called.covariance_matrix, post.distribution.covariance_matrix, rtol=0, atol=1e-10)
    if not sparse:
        enc = gp.encode(Gaussian.from_dirac(Dirac(X.reshape(-1, 2))))
        own = ExactGP.__call__(gp.eval(), enc)
        mean, var = gp.marginals(X.reshape(-1, 2))
        torch.testing.assert_close(own.mean * gp._y_scale + gp._y_shift, mean, rtol=0, atol=1e-10)
        torch.testing.assert_close(own.variance * gp._y_scale ** 2, var, rtol=0, atol=1e-10)


def test_hallucinated_readings_keep_the_mean_and_give_the_refitted_variance(noisy_inputs_gp):
    """``hallucinate`` (GP-BUCB's kriging believer): readings at the posterior mean leave the mean where it was, and the
    covariance is the NumPy posterior's with those readings (noise λ + v_i)."""
    gp, setup = noisy_inputs_gp
    new = Gaussian(torch.tensor([[2.0, 2.0], [8.0, -1.0]], dtype=F64), torch.eye(2, dtype=F64).expand(2, 2, 2) * 0.2)
    test = torch.tensor([[2.5, 2.0], [5.0, 0.0], [8.0, -1.5]], dtype=F64)
    believer = gp.hallucinate(new)
    before, after = gp.posterior(test), believer.posterior(test)
    torch.testing.assert_close(after.mean, before.mean, rtol=0, atol=1e-9)
    _, c = refit_posterior(setup, new.mean.numpy(), new.covariance.numpy(), np.zeros(2), test.numpy(),
                           np.zeros((3, 2, 2)))
    np.testing.assert_allclose(after.distribution.covariance_matrix.detach().numpy(), c, rtol=1e-7, atol=1e-9)

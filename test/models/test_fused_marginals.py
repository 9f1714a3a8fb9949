"""The fused marginals (uGP-UCB's hot path) give the generic path's values and gradients to the bit in 2-D, its
gradients are those of finite differences, and every case it does not cover falls back to the generic path."""
import pytest
import torch

from uncertain_bo.distributions import DTYPE, Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.models.fused_marginals import fused_marginals

BOUNDS2 = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)


def gp_on(n, d=2, seed=0, shared_training_cov=False, bounds=None):
    g = torch.Generator().manual_seed(seed)
    bounds = BOUNDS2 if bounds is None else bounds
    lo, hi = bounds
    mean = lo + torch.rand(n, d, generator=g, dtype=DTYPE) * (hi - lo)
    if shared_training_cov:
        cov = 0.05 * torch.eye(d, dtype=DTYPE).expand(n, d, d)
    else:
        a = torch.randn(n, d, d, generator=g, dtype=DTYPE) * 0.3
        cov = a @ a.transpose(-1, -2) + 0.01 * torch.eye(d, dtype=DTYPE)
    y = torch.sin(mean).sum(-1) + 0.1 * torch.randn(n, generator=g, dtype=DTYPE)
    gp = DistributionGP(bounds, standardize=True, priors=False)
    gp.set_data(Gaussian(mean, cov), y)
    gp.set_hyperparameters(lengthscale=[2.0] * d, outputscale=1.3, noise=0.02, mean=0.1)
    return gp


def generic(gp, dists):
    """The generic path: encode, then the strategy's marginals (what ``DistributionGP.marginals`` did before)."""
    cache = gp._posterior_cache()
    mean, var = cache.marginals(gp, gp.encode(dists))
    return mean, var


def ucb_and_grad(fn, targets):
    x = targets.clone().requires_grad_(True)
    mean, var = fn(x)
    value = mean + 3.0 * var.clamp_min(1e-12).sqrt()
    return value.detach(), torch.autograd.grad(value.sum(), x)[0]


@pytest.mark.parametrize('n_cand', [1, 10, 64])
def test_values_and_gradients_equal_the_generic_path_to_the_bit(n_cand):
    gp = gp_on(200)
    noise = GaussianExecutionNoise.isotropic(0.4, 2)
    cache = gp._posterior_cache()
    targets = torch.rand(n_cand, 2, generator=torch.Generator().manual_seed(1), dtype=DTYPE) * 10
    v_fused, g_fused = ucb_and_grad(lambda x: fused_marginals(gp, cache, noise(x)), targets)
    v_gen, g_gen = ucb_and_grad(lambda x: generic(gp, noise(x)), targets)
    assert torch.equal(v_fused, v_gen)
    assert torch.equal(g_fused, g_gen)
    # the public path takes the fused one
    mean, var = gp.marginals(noise(targets))
    m_gen, v_gen_raw = generic(gp, noise(targets))
    assert torch.equal(mean, m_gen * gp._y_scale + gp._y_shift)


def test_gradient_matches_finite_differences():
    gp = gp_on(25)
    noise = GaussianExecutionNoise(torch.tensor([[0.3, 0.1], [0.1, 0.2]], dtype=DTYPE))
    cache = gp._posterior_cache()
    targets = torch.rand(4, 2, generator=torch.Generator().manual_seed(2), dtype=DTYPE) * 10

    def f(x):
        mean, var = fused_marginals(gp, cache, noise(x))
        return mean, var

    assert torch.autograd.gradcheck(f, (targets.clone().requires_grad_(True),), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize('d', [1, 3, 4, 5, 6])
def test_every_unrolled_dimension_to_the_bit(d):
    """The backward sums the Cholesky rows' terms in autograd's order, so the gradients agree to the bit up to
    ``UNROLL_MAX_DIM`` (= 6); summed in another order they differ in the last bits from d = 2 on."""
    bounds = torch.stack([torch.zeros(d, dtype=DTYPE), torch.full((d,), 5.0, dtype=DTYPE)])
    gp = gp_on(150, d=d, bounds=bounds)
    noise = GaussianExecutionNoise.isotropic(0.3, d)
    cache = gp._posterior_cache()
    targets = torch.rand(64, d, generator=torch.Generator().manual_seed(3), dtype=DTYPE) * 5
    v_fused, g_fused = ucb_and_grad(lambda x: fused_marginals(gp, cache, noise(x)), targets)
    v_gen, g_gen = ucb_and_grad(lambda x: generic(gp, noise(x)), targets)
    assert torch.equal(v_fused, v_gen)
    assert torch.equal(g_fused, g_gen)


def test_training_side_follows_new_readings_and_hyperparameters():
    gp = gp_on(30)
    noise = GaussianExecutionNoise.isotropic(0.4, 2)
    targets = torch.tensor([[2.0, 3.0], [7.0, 8.5]], dtype=DTYPE)
    gp.marginals(noise(targets))                                   # builds the training side for n = 30
    gp.append(Gaussian(torch.tensor([[2.1, 3.1]], dtype=DTYPE), 0.01 * torch.eye(2, dtype=DTYPE).reshape(1, 2, 2)),
              torch.tensor([0.5], dtype=DTYPE))
    cache = gp._posterior_cache()
    assert cache.enc.shape[0] == 31
    fused = fused_marginals(gp, cache, noise(targets))
    assert cache._training_side[0][0] == 31
    for a, b in zip(fused, generic(gp, noise(targets))):
        assert torch.equal(a, b)
    gp.kernel.lengthscale = torch.tensor([[0.3, 0.5]], dtype=DTYPE)   # the strategy kept: the side is rebuilt
    fused = fused_marginals(gp, cache, noise(targets))
    for a, b in zip(fused, generic(gp, noise(targets))):
        assert torch.equal(a, b)
    gp.covar_module.outputscale = torch.tensor(0.4, dtype=DTYPE)       # and for the signal variance
    fused = fused_marginals(gp, cache, noise(targets))
    for a, b in zip(fused, generic(gp, noise(targets))):
        assert torch.equal(a, b)
    # a fantasy grows its own copy of the strategy
    fantasy = gp.condition_on_observations(noise(targets[:1]), gp.marginals(noise(targets[:1]))[0])
    fcache = fantasy._posterior_cache()
    for a, b in zip(fused_marginals(fantasy, fcache, noise(targets)), generic(fantasy, noise(targets))):
        assert torch.equal(a, b)


def points_gp(n=40, seed=4):
    """A GP on point readings (Dirac training inputs), as BoTorch's SingleTaskGP sees them."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=DTYPE) * 10
    gp = DistributionGP(BOUNDS2, standardize=True, priors=False)
    gp.set_data(Dirac(x), torch.sin(x).sum(-1))
    gp.set_hyperparameters(lengthscale=[1.5, 2.5], outputscale=1.3, noise=0.02, mean=0.1)
    return gp


@pytest.mark.parametrize('make_gp', [points_gp, lambda: gp_on(60, shared_training_cov=True)],
                         ids=['points', 'shared-gaussian'])
def test_training_inputs_sharing_one_covariance_take_the_fused_path(make_gp):
    """Point readings (and Gaussians that share one covariance): the fused path applies and agrees with the generic
    path's other algorithm (both sides whitened by one Cholesky factor of A, ``_whitened_se``) to rounding, and its
    gradient with finite differences."""
    gp = make_gp()
    cache = gp._posterior_cache()
    noise = GaussianExecutionNoise(torch.tensor([[0.3, 0.1], [0.1, 0.2]], dtype=DTYPE))
    targets = torch.rand(32, 2, generator=torch.Generator().manual_seed(5), dtype=DTYPE) * 10
    assert fused_marginals(gp, cache, noise(targets)) is not None
    v_fused, g_fused = ucb_and_grad(lambda x: fused_marginals(gp, cache, noise(x)), targets)
    v_gen, g_gen = ucb_and_grad(lambda x: generic(gp, noise(x)), targets)
    torch.testing.assert_close(v_fused, v_gen, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_fused, g_gen, rtol=1e-10, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: fused_marginals(gp, cache, noise(x)),
                                    (targets[:3].clone().requires_grad_(True),), eps=1e-6, atol=1e-6)


def test_cases_it_does_not_cover_fall_back():
    gp = gp_on(20)
    cache = gp._posterior_cache()
    x = torch.tensor([[2.0, 3.0], [7.0, 8.5]], dtype=DTYPE)
    own_covs = torch.stack([0.1 * torch.eye(2, dtype=DTYPE), 0.2 * torch.eye(2, dtype=DTYPE)])
    assert fused_marginals(gp, cache, Gaussian(x, own_covs)) is None        # candidates' covariances differ
    assert fused_marginals(gp, cache, Dirac(x)) is None                     # not Gaussians
    learnable = (0.1 * torch.eye(2, dtype=DTYPE)).requires_grad_(True)
    assert fused_marginals(gp, cache, Gaussian(x, learnable, validate=False)) is None
    # and the public path still answers there, with the generic values
    for dists in (Gaussian(x, own_covs), Dirac(x)):
        mean, _ = gp.marginals(dists)
        assert torch.equal(mean, generic(gp, dists)[0] * gp._y_scale + gp._y_shift)

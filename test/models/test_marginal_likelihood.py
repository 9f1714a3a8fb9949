"""The closed-form marginal likelihood the hyperparameter fit evaluates (uncertain_bo/models/marginal_likelihood.py):
against finite differences, a NumPy kernel, and GPyTorch's ExactMarginalLogLikelihood through its own graph."""
import numpy as np
import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from models.test_distribution_gp import BOUNDS, data, expected_se_numpy
from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.kernels import KernelMeanEmbeddingKernel
from uncertain_bo.models import DistributionGP
from uncertain_bo.models.marginal_likelihood import (ExactMarginalLogLikelihoodFunction, PairwiseInputs, log_density,
                                                     expected_se_kernel_and_lengthscale_derivative,
                                                     negative_marginal_log_likelihood)

D = torch.float64


def covariances(kind, n, d, gen):
    """Zero (Dirac), one shared, or one per input (EKF-like)."""
    if kind == 'dirac':
        return torch.zeros(n, d, d, dtype=D)
    if kind == 'shared':
        return (0.02 * torch.eye(d, dtype=D)).expand(n, d, d).clone()
    a = 0.2 * torch.randn(n, d, d, generator=gen, dtype=D)
    return a @ a.transpose(-1, -2) + 0.01 * torch.eye(d, dtype=D)


KINDS = ['dirac', 'shared', 'heteroscedastic']


@pytest.mark.parametrize('d', [1, 2, 3, 7])    # 7: beyond the unrolled Cholesky
@pytest.mark.parametrize('kind', KINDS)
def test_kernel_against_numpy_and_its_lengthscale_derivative_against_finite_differences(kind, d, gen):
    n = 6
    means = torch.rand(n, d, generator=gen, dtype=D)
    covs = covariances(kind, n, d, gen)
    pairs = PairwiseInputs.of(means, covs)
    ell = 0.3 + torch.rand(d, generator=gen, dtype=D)
    k, dlogk = expected_se_kernel_and_lengthscale_derivative(pairs, ell)
    oracle = expected_se_numpy(means.numpy(), covs.numpy(), means.numpy(), covs.numpy(), ell.numpy(), 1.0)
    np.testing.assert_allclose(pairs.matrix(k, n).numpy(), oracle, rtol=1e-12, atol=1e-14)
    for m in range(d):      # central differences of log k in ℓ_m, on the NumPy kernel
        h = 1e-6 * float(ell[m])
        up, down = ell.clone(), ell.clone()
        up[m] += h
        down[m] -= h
        fd = (np.log(expected_se_numpy(means.numpy(), covs.numpy(), means.numpy(), covs.numpy(), up.numpy(), 1.0))
              - np.log(expected_se_numpy(means.numpy(), covs.numpy(), means.numpy(), covs.numpy(), down.numpy(),
                                         1.0))) / (2 * h)
        np.testing.assert_allclose(pairs.matrix(dlogk[:, m], n).numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize('kind', KINDS)
def test_gradient_passes_gradcheck(kind, gen):
    """torch.autograd.gradcheck: the closed-form backward against finite differences of the forward, float64."""
    n, d = 7, 2
    pairs = PairwiseInputs.of(torch.rand(n, d, generator=gen, dtype=D), covariances(kind, n, d, gen))
    y = torch.randn(n, generator=gen, dtype=D)
    args = (torch.tensor([0.3, 0.6], dtype=D, requires_grad=True), torch.tensor(1.4, dtype=D, requires_grad=True),
            (0.05 + 0.1 * torch.rand(n, generator=gen, dtype=D)).requires_grad_(),
            torch.tensor(0.2, dtype=D, requires_grad=True))
    assert torch.autograd.gradcheck(lambda *a: ExactMarginalLogLikelihoodFunction.apply(*a, pairs, y), args)


def gpytorch_loss(gp):
    """GPyTorch's ExactMarginalLogLikelihood through its own graph (BoTorch's default closure), negated."""
    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    return -mll(gp(*gp.train_inputs), gp.train_targets), mll


@pytest.mark.parametrize('input_induced_noise', [False, True])
@pytest.mark.parametrize('kind', KINDS)
def test_loss_and_gradients_are_gpytorchs(kind, input_induced_noise, gen):
    """Value and gradient in every raw hyperparameter equal GPyTorch's to 1e-10, with priors, reported reading
    variances, the input-induced variance and a fit subset."""
    locs, y = data(20, gen)
    locs = Gaussian(locs.mean.to(D), covariances(kind, 20, 2, gen)) if kind != 'dirac' else Dirac(locs.mean.to(D))
    gp = DistributionGP(BOUNDS, input_induced_noise=input_induced_noise, noise_prior='lognormal')
    gp.set_data(locs, y.to(D), 0.01 * torch.rand(20, generator=gen, dtype=D))
    gp.set_hyperparameters(lengthscale=[1.7, 2.5], outputscale=1.3, noise=0.05, mean=0.1)
    for subset in (None, torch.arange(3, 17)):
        gp.train()
        gp._sync_train_data(subset)
        reference, mll = gpytorch_loss(gp)
        ours = negative_marginal_log_likelihood(gp, mll)
        params = [p for p in gp.parameters() if p.requires_grad]
        assert len(params) == 4
        for a, b in zip(torch.autograd.grad(reference, params), torch.autograd.grad(ours, params)):
            torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(ours, reference, rtol=1e-10, atol=1e-12)


def test_the_fit_evaluates_it_and_lands_where_gpytorchs_graph_does(gen, monkeypatch):
    """BoTorch's fit_gpytorch_mll takes the model's compute_custom_loss; the fitted hyperparameters agree with a fit
    through GPyTorch's graph (L-BFGS-B on values equal to rounding)."""
    locs, y = data(25, gen)
    fits = []
    for closed_form in (True, False):
        gp = DistributionGP(BOUNDS)
        gp.set_data(locs, y)
        if not closed_form:
            monkeypatch.setattr(DistributionGP, 'compute_custom_loss',
                                lambda self, mll, **kw: gpytorch_loss(self)[0])
        calls = []
        original = ExactMarginalLogLikelihoodFunction.apply
        monkeypatch.setattr(ExactMarginalLogLikelihoodFunction, 'apply',
                            lambda *a: calls.append(1) or original(*a))
        assert gp.fit()
        assert bool(calls) == closed_form
        fits.append(gp.hyperparameters())
    for key in ('outputscale', 'noise', 'mean'):
        assert fits[0][key] == pytest.approx(fits[1][key], rel=1e-5)
    assert fits[0]['lengthscale'] == pytest.approx(fits[1]['lengthscale'], rel=1e-5)


def test_other_kernels_keep_gpytorchs_computation(gen):
    locs, y = data(10, gen)
    gp = DistributionGP(BOUNDS, KernelMeanEmbeddingKernel(2, n_samples=8))
    gp.set_data(locs, y)
    gp.train()
    gp._sync_train_data()
    reference, mll = gpytorch_loss(gp)
    assert float(negative_marginal_log_likelihood(gp, mll)) == float(reference)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_gamma_prior_log_density_is_torchs_to_the_bit_and_scipys(dtype):
    """The fit's Gamma log density with its constant terms computed once: torch's value and gradient to the bit (so
    decisions are unchanged), and scipy's log pdf (an independent oracle)."""
    from gpytorch.priors import GammaPrior, LogNormalPrior
    from scipy.stats import gamma
    prior = GammaPrior(3.0, 6.0).to(dtype)
    x = torch.tensor([[0.05, 0.3, 1.7]], dtype=dtype, requires_grad=True)
    ours, theirs = log_density(prior)(x), prior.log_prob(x)
    assert torch.equal(ours, theirs)
    assert torch.equal(torch.autograd.grad(ours.sum(), x)[0], torch.autograd.grad(theirs.sum(), x)[0])
    np.testing.assert_allclose(ours.detach().numpy(), gamma.logpdf(x.detach().numpy(), 3.0, scale=1 / 6.0),
                               rtol=1e-5 if dtype == torch.float32 else 1e-12)
    other = LogNormalPrior(-4.0, 1.0)
    assert log_density(other) == other.log_prob                    # other priors: their own log_prob

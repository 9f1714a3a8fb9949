"""Many readings: the hyperparameter fit on a subset keeps every reading in the posterior, and the sparse (SGPR)
posterior agrees with the exact one (all inputs inducing) and with GPyTorch's own SGPR (InducingPointKernel)."""
import gpytorch
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import DTYPE, Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.planning.planner import Planner

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)


def data(n, seed=0, dirac=False):
    g = torch.Generator().manual_seed(seed)
    mean = torch.rand(n, 2, generator=g, dtype=DTYPE) * 10
    a = torch.randn(n, 2, 2, generator=g, dtype=DTYPE) * 0.3
    cov = a @ a.transpose(-1, -2) + 0.01 * torch.eye(2, dtype=DTYPE)
    y = torch.sin(mean[:, 0]) + torch.cos(0.7 * mean[:, 1]) + 0.1 * torch.randn(n, generator=g, dtype=DTYPE)
    noise = torch.rand(n, generator=g, dtype=DTYPE) * 0.05
    return (Dirac(mean) if dirac else Gaussian(mean, cov)), y, noise


def test_fit_on_a_subset_keeps_every_reading_in_the_posterior():
    locs, y, noise = data(80)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs, y, noise)
    subset = torch.arange(0, 80, 4)
    assert gp.fit(subset=subset)
    assert gp.n == 80 and gp.train_inputs[0].shape[0] == 80 and gp.likelihood.known_noise.numel() == 80
    # oracle: the GP posterior mean (Rasmussen & Williams 2006, Eq. 2.25) with the fitted hyperparameters on ALL
    # the data, by a dense solve
    test = Gaussian(torch.tensor([[2.0, 3.0], [7.5, 1.0]], dtype=DTYPE),
                    0.1 * torch.eye(2, dtype=DTYPE).expand(2, 2, 2))
    with torch.no_grad():
        enc, enc_t = gp.encode(locs), gp.encode(test)
        k = gp.covar_module(enc, enc).to_dense() + torch.diag(gp.noise_diagonal())
        ks = gp.covar_module(enc_t, enc).to_dense()
        m0 = float(gp.mean_module.constant)
        ystd = (y - gp._y_shift) / gp._y_scale
        expected = (m0 + ks @ torch.linalg.solve(k, ystd - m0)) * gp._y_scale + gp._y_shift
        mean, _ = gp.marginals(test)
    assert torch.allclose(mean, expected, atol=1e-8)
    with pytest.raises(ValueError):
        gp.fit(subset=torch.tensor([80]))


def test_input_induced_noise_follows_the_fit_subset():
    """The marginal likelihood of a fit on a subset sees the subset's prior: off the diagonal the expected SE kernel
    between the subset's Gaussians (NumPy, Eq. 80), on it the point variance σ_f² (k̂(P_i, P_i) plus the
    input-induced v_i: a reading at an uncertain place scatters as f at a point does)."""
    from acquisition import oracle
    locs, y, noise = data(30)
    gp = DistributionGP(BOUNDS, input_induced_noise=True, standardize=False, priors=False)
    gp.set_data(locs, y, noise)
    ell, sf2 = [1.3, 2.1], 0.7
    gp.set_hyperparameters(lengthscale=ell, outputscale=sf2, noise=0.01, mean=0.0)
    subset = torch.tensor([1, 4, 9, 20])
    gp._sync_train_data(subset)                  # what the fit's marginal likelihood sees
    gp.train()
    with torch.no_grad():
        prior = gp(gp.train_inputs[0]).covariance_matrix.numpy()
    gp.eval()
    m, c = locs.mean[subset].numpy(), locs.covariance[subset].numpy()
    k = oracle.gram(m, c, m, c, ell, sf2)
    expected = k - np.diag(np.diag(k)) + sf2 * np.eye(4)
    np.testing.assert_allclose(prior, expected, rtol=1e-10, atol=1e-12)
    assert (np.diag(k) < sf2 - 1e-3).all()        # the input-induced part is not negligible here


@pytest.mark.parametrize('input_induced_noise', [False, True])
def test_sparse_posterior_with_every_input_inducing_is_the_exact_one(input_induced_noise):
    locs, y, noise = data(60)
    gp = DistributionGP(BOUNDS, input_induced_noise=input_induced_noise)
    gp.set_data(locs[:50], y[:50], noise[:50])
    gp.fit()
    gp.append(locs[50:], y[50:], noise[50:])
    test = Gaussian(torch.rand(9, 2, generator=torch.Generator().manual_seed(6), dtype=DTYPE) * 10,
                    0.2 * torch.eye(2, dtype=DTYPE).expand(9, 2, 2))
    with torch.no_grad():
        m_exact, v_exact = gp.marginals(test)
        gain = gp.information_gain()
        gp.inducing = torch.arange(60)
        m_sparse, v_sparse = gp.marginals(test)
    assert torch.allclose(m_sparse, m_exact, atol=1e-8) and torch.allclose(v_sparse, v_exact, atol=1e-8)
    assert gp.information_gain() == pytest.approx(gain, rel=1e-8)


@pytest.mark.parametrize('input_induced_noise', [False, True])
def test_sparse_rank_one_growth_equals_a_rebuild(input_induced_noise):
    locs, y, noise = data(70, seed=1)
    gp = DistributionGP(BOUNDS, input_induced_noise=input_induced_noise)
    gp.set_data(locs[:50], y[:50], noise[:50])
    gp.fit()
    gp.inducing = torch.arange(0, 50, 3)
    test = Gaussian(torch.rand(5, 2, generator=torch.Generator().manual_seed(7), dtype=DTYPE) * 10,
                    0.2 * torch.eye(2, dtype=DTYPE).expand(5, 2, 2))
    with torch.no_grad():
        gp.marginals(test)                                  # builds the sparse cache
        gp.append(locs[50:60], y[50:60], noise[50:60])      # grows it
        gp.append(locs[60:], y[60:], noise[60:])
        m_grown, v_grown = gp.marginals(test)
        gp.clear_posterior()
        m_built, v_built = gp.marginals(test)
    assert torch.allclose(m_grown, m_built, atol=1e-9) and torch.allclose(v_grown, v_built, atol=1e-9)


def test_sparse_posterior_matches_gpytorch_sgpr():
    """Independent oracle: GPyTorch's SGPR (InducingPointKernel around the same SE kernel, Titsias 2009) on point
    inputs, with the same hyperparameters, homoscedastic noise and inducing points."""
    locs, y, _ = data(40, seed=2, dirac=True)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False)
    gp.set_data(locs, y)
    gp.set_hyperparameters(lengthscale=[2.0, 3.0], outputscale=1.3, noise=0.05, mean=0.2)
    inducing = torch.arange(0, 40, 4)
    gp.inducing = inducing
    test = Dirac(torch.rand(6, 2, generator=torch.Generator().manual_seed(5), dtype=DTYPE) * 10)
    with torch.no_grad():
        mean, var = gp.marginals(test)

    x = (locs.mean - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])
    xt = (test.mean - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])

    class SGPR(gpytorch.models.ExactGP):
        def __init__(self, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            base = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=2))
            self.covar_module = gpytorch.kernels.InducingPointKernel(base, x[inducing].clone(), likelihood)

        def forward(self, z):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))

    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(DTYPE)
    ref = SGPR(likelihood).to(DTYPE)
    with torch.no_grad():
        ref.covar_module.base_kernel.base_kernel.lengthscale = gp.kernel.lengthscale.detach().clone()
        ref.covar_module.base_kernel.outputscale = torch.tensor(1.3, dtype=DTYPE)
        likelihood.noise = torch.tensor([0.05], dtype=DTYPE)
        ref.mean_module.constant.fill_(0.2)
    ref.eval()
    likelihood.eval()
    # without GPyTorch's FITC-like diagonal correction of the training covariance: Titsias's SGPR (DTC) predictive
    # mean; GPyTorch's variance is then that of the projected process Q = K_xu K_uu^-1 K_ux, which differs from the
    # SGPR predictive variance by k(x, x) - Q(x, x) (Quiñonero-Candela & Rasmussen 2005, Eq. 21 vs Eq. 17)
    with torch.no_grad(), gpytorch.settings.sgpr_diagonal_correction(False):
        out = ref(xt)
        k_xx = ref.covar_module.base_kernel(xt, diag=True)
        q_xx = ref.covar_module(xt, diag=True)
    assert torch.allclose(mean, out.mean, atol=1e-8)
    assert torch.allclose(var, out.variance + k_xx - q_xx, atol=1e-8)


def test_planner_switches_to_the_sparse_posterior_beyond_sparse_above():
    locs, y, noise = data(60, seed=3)
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.3, 2), n_initial=1, fit_max_points=20,
                      sparse_above=30, inducing_points=25)
    targets = locs.mean
    for i in range(60):
        stop = i % 10 == 0                     # one measurement every 10 readings, the rest en route
        planner.observe(targets[i] if stop else None, locs[i:i + 1], float(y[i]), float(noise[i]))
    assert planner.n == 6 and planner.n_en_route == 54
    subset = planner.fit_subset()
    assert subset.numel() <= 20 and set(range(0, 60, 10)) <= set(subset.tolist())   # every stop in the fit
    planner.predict(targets[:3])
    inducing = planner.model.inducing
    assert inducing is not None and inducing.numel() <= 25 and set(range(0, 60, 10)) <= set(inducing.tolist())
    assert planner.model.n == 60
    with pytest.raises(ValueError, match='sparse_above'):
        Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.3, 2), sparse_above=-1)

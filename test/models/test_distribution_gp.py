"""DistributionGP against a hand-written dense GP solve (numpy) and its own cheap-update path."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import DistributionGP

BOUNDS = torch.tensor([[0.0, -5.0], [10.0, 5.0]])


def data(n, gen):
    x = BOUNDS[0] + torch.rand(n, 2, generator=gen) * (BOUNDS[1] - BOUNDS[0])
    a = torch.randn(n, 2, 2, generator=gen) * 0.4
    locs = Gaussian(x, a @ a.transpose(-1, -2))
    y = torch.sin(x[:, 0]) + 0.3 * x[:, 1] + 0.05 * torch.randn(n, generator=gen)
    return locs, y


def expected_se_numpy(m1, s1, m2, s2, ell, sf2):
    """Eq. 80 in numpy (independent of the torch implementation)."""
    out = np.zeros((len(m1), len(m2)))
    w = np.diag(np.asarray(ell) ** 2)
    for i in range(len(m1)):
        for j in range(len(m2)):
            s = s1[i] + s2[j]
            dlt = m1[i] - m2[j]
            out[i, j] = sf2 * np.exp(-0.5 * dlt @ np.linalg.solve(w + s, dlt)) / np.sqrt(
                np.linalg.det(np.eye(len(ell)) + np.linalg.solve(w, s)))
    return out


def test_posterior_matches_dense_numpy_solve(gen):
    locs, y = data(25, gen)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False)
    gp.set_data(locs, y)
    ell, sf2, lam, m = [1.7, 2.5], 1.3, 0.02, 0.4
    gp.set_hyperparameters(lengthscale=ell, outputscale=sf2, noise=lam, mean=m)
    test = Gaussian(torch.tensor([[3.0, 1.0], [7.0, -2.0], [0.5, 4.0]]), torch.eye(2) * 0.3)
    mean, var = gp.marginals(test)

    M, S, Y = locs.mean.numpy(), locs.covariance.numpy(), y.numpy()
    Mt, St = test.mean.numpy(), test.covariance.numpy()
    K = expected_se_numpy(M, S, M, S, ell, sf2) + lam * np.eye(len(Y))
    Ks = expected_se_numpy(Mt, St, M, S, ell, sf2)
    Kss = np.diag(expected_se_numpy(Mt, St, Mt, St, ell, sf2))
    mu = m + Ks @ np.linalg.solve(K, Y - m)
    v = Kss - np.einsum('ij,ji->i', Ks, np.linalg.solve(K, Ks.T))
    np.testing.assert_allclose(mean.detach().numpy(), mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(var.detach().numpy(), v, rtol=1e-7, atol=1e-9)
    # information gain ½ log|I + K/λ|
    ig = 0.5 * np.linalg.slogdet(np.eye(len(Y)) + (K - lam * np.eye(len(Y))) / lam)[1]
    assert gp.information_gain() == pytest.approx(ig, rel=1e-9)


def test_rank_one_growth_equals_rebuild(gen):
    locs, y = data(40, gen)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs[:30], y[:30])
    gp.fit()
    test = Gaussian(torch.rand(8, 2, generator=gen) * 5, torch.eye(2) * 0.2)
    gp.marginals(test)  # build the cache so that append() grows it
    for i in range(30, 40):
        gp.append(locs[i], y[i:i + 1])
    grown = [t.detach() for t in gp.marginals(test)]
    gp._cache = None  # force a from-scratch factorisation
    rebuilt = [t.detach() for t in gp.marginals(test)]
    assert torch.allclose(grown[0], rebuilt[0], atol=1e-9)
    assert torch.allclose(grown[1], rebuilt[1], atol=1e-9)


def test_fit_improves_marginal_likelihood_and_predicts(gen):
    from gpytorch.mlls import ExactMarginalLogLikelihood
    locs, y = data(40, gen)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs, y)
    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    gp.train()
    before = float(mll(gp(*gp.train_inputs), gp.train_targets))
    assert gp.fit()
    gp.train()
    after = float(mll(gp(*gp.train_inputs), gp.train_targets))
    gp.eval()
    assert after > before
    x = torch.tensor([[2.0, 0.0], [8.0, 3.0]])
    mean, _ = gp.marginals(Dirac(x))
    truth = torch.sin(x[:, 0]) + 0.3 * x[:, 1]
    assert (mean - truth).abs().max() < 0.35


def test_fit_under_no_grad_is_the_fit(gen):
    """A fit asked for inside ``torch.no_grad()`` (a model brought up to date while scoring) takes its own gradients:
    the same hyperparameters as outside (it failed, logged, and kept the old ones)."""
    locs, y = data(20, gen)
    a, b = DistributionGP(BOUNDS), DistributionGP(BOUNDS)
    for gp in (a, b):
        gp.set_data(locs, y)
    with torch.no_grad():
        assert a.fit()
    assert b.fit()
    ha, hb = a.hyperparameters(), b.hyperparameters()
    assert ha['lengthscale'] == pytest.approx(hb['lengthscale'], rel=1e-9)
    scales = ('outputscale', 'noise', 'mean')
    assert [ha[k] for k in scales] == pytest.approx([hb[k] for k in scales], rel=1e-9)


def test_rejects_non_finite_observations():
    gp = DistributionGP(BOUNDS)
    with pytest.raises(ValueError, match='NaN'):
        gp.set_data(Dirac(torch.zeros(2, 2)), torch.tensor([1.0, float('nan')]))


def test_predicted_robust_value_tracks_expectation(gen):
    """With fixed hyperparameters and dense noiseless data, μ̂(N(x, Σ)) ≈ E[f(x̃)], x̃ ~ N(x, Σ)."""
    f = lambda x: torch.sin(x[:, 0]) * torch.cos(0.5 * x[:, 1])  # noqa: E731
    grid = torch.stack(torch.meshgrid(torch.linspace(0, 10, 25), torch.linspace(-5, 5, 25),
                                      indexing='ij'), -1).reshape(-1, 2)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False)
    gp.set_data(Dirac(grid), f(grid))
    gp.set_hyperparameters(lengthscale=[1.0, 1.5], outputscale=1.0, noise=1e-6, mean=0.0)
    target = torch.tensor([[4.0, 1.0], [6.5, -2.0]])
    cov = torch.diag(torch.tensor([0.8, 0.5]) ** 2)
    mean, _ = gp.marginals(Gaussian(target, cov))
    samples = Gaussian(target, cov).sample(200_000, gen)
    mc = torch.stack([f(s).mean() for s in samples])
    assert torch.allclose(mean.detach(), mc, atol=0.01)


# ----------------------------------------------------------------------------- the BoTorch posterior
def input_variance_numpy(covs, ell, sf2):
    """v_i = σ_f² (1 - |I + 2 W⁻¹ Σ_i|^{-1/2}) (Girard 2004 §3.4), the closed form for the expected SE kernel."""
    w_inv = np.diag(1.0 / np.asarray(ell) ** 2)
    return np.array([sf2 * (1 - np.linalg.det(np.eye(len(ell)) + 2 * w_inv @ c) ** -0.5) for c in covs])


def test_posterior_is_a_botorch_posterior_with_the_joint_covariance(noisy_inputs_gp):
    """``posterior`` over ``2 x 3`` Gaussian test distributions: mean ``2 x 3 x 1`` and the joint ``3 x 3`` covariance
    of each batch against the NumPy posterior whose noise diagonal is λ + reported variance + v_i."""
    from botorch.models.model import Model
    from botorch.posteriors import GPyTorchPosterior
    from acquisition import oracle
    gp, (M, S, Y, ell, sf2, noise, m) = noisy_inputs_gp
    assert isinstance(gp, Model) and gp.num_outputs == 1
    means = torch.tensor([[3.0, 1.0], [7.0, -2.0], [0.5, 4.0], [3.1, 1.2], [9.0, 0.0], [5.0, 2.0]],
                         dtype=torch.float64)
    covs = torch.stack([torch.eye(2, dtype=torch.float64) * s for s in (0.3, 0.1, 0.0, 0.5, 0.2, 0.05)])
    post = gp.posterior(Gaussian(means, covs), batch_shape=(2,))
    assert isinstance(post, GPyTorchPosterior) and post.mean.shape == (2, 3, 1)
    cov = post.distribution.covariance_matrix
    for b in range(2):
        rows = slice(3 * b, 3 * b + 3)
        mu, c = oracle.joint_posterior(M, S, Y, means[rows].numpy(), covs[rows].numpy(), ell, sf2, noise, m)
        np.testing.assert_allclose(post.mean[b, :, 0].detach().numpy(), mu, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(cov[b].detach().numpy(), c, rtol=1e-7, atol=1e-9)
    # the marginals are the joint's diagonal; the cross-covariance its off-diagonal block
    mean, var = gp.marginals(Gaussian(means, covs))
    torch.testing.assert_close(mean, post.mean.reshape(-1))
    torch.testing.assert_close(var, torch.cat([cov[0].diagonal(), cov[1].diagonal()]))
    cross = gp.posterior_covariance(Gaussian(means[:3], covs[:3]), Gaussian(means[3:], covs[3:]))
    _, full = oracle.joint_posterior(M, S, Y, means.numpy(), covs.numpy(), ell, sf2, noise, m)
    np.testing.assert_allclose(cross.detach().numpy(), full[:3, 3:], rtol=1e-7, atol=1e-9)


def test_points_are_dirac_inputs_and_observation_noise_is_that_of_a_new_reading(noisy_inputs_gp):
    """A tensor ``b x q x d`` holds points; ``observation_noise=True`` adds λ + v (0 at a point, v of N(x, Σ) for a
    distribution)."""
    gp, (M, S, Y, ell, sf2, noise, m) = noisy_inputs_gp
    x = torch.tensor([[[3.0, 1.0], [6.0, 2.0]]], dtype=torch.float64)
    a, b = gp.posterior(x), gp.posterior(Dirac(x[0]))
    torch.testing.assert_close(a.mean[0], b.mean)
    torch.testing.assert_close(a.distribution.covariance_matrix[0], b.distribution.covariance_matrix)
    noisy = gp.posterior(x, observation_noise=True).distribution.covariance_matrix[0]
    torch.testing.assert_close(noisy - b.distribution.covariance_matrix, 0.02 * torch.eye(2, dtype=torch.float64))
    g = Gaussian(x[0], torch.eye(2, dtype=torch.float64).expand(2, 2, 2) * 0.4)
    extra = gp.posterior(g, observation_noise=True).variance - gp.posterior(g).variance
    expected = 0.02 + input_variance_numpy(np.stack([np.eye(2) * 0.4] * 2), ell, sf2)
    np.testing.assert_allclose(extra.reshape(-1).detach().numpy(), expected, rtol=1e-9)
    with pytest.raises(ValueError, match='output_indices'):
        gp.posterior(x, output_indices=[1])
    with pytest.raises(ValueError, match='dimension 2'):
        gp.posterior(torch.zeros(1, 3, dtype=torch.float64))


def test_conditioning_on_readings_is_the_posterior_with_them(noisy_inputs_gp):
    """``condition_on_observations`` grows a copy of the prediction strategy: the result is the NumPy posterior on the
    data plus the new readings (their noise λ + v), and the original model is unchanged."""
    from acquisition import oracle
    gp, (M, S, Y, ell, sf2, noise, m) = noisy_inputs_gp
    new = Gaussian(torch.tensor([[2.0, 2.0], [8.0, -1.0]], dtype=torch.float64),
                   torch.eye(2, dtype=torch.float64).expand(2, 2, 2) * 0.2)
    y_new = torch.tensor([0.7, -0.3], dtype=torch.float64)
    test = Dirac(torch.tensor([[2.5, 2.0], [5.0, 0.0]], dtype=torch.float64))
    before = gp.posterior(test).distribution.covariance_matrix
    cond = gp.condition_on_observations(new, y_new)
    S2 = np.concatenate([S, new.covariance.numpy()])
    noise2 = np.concatenate([noise, 0.02 + input_variance_numpy(new.covariance.numpy(), ell, sf2)])
    mu, c = oracle.joint_posterior(np.concatenate([M, new.mean.numpy()]), S2, np.concatenate([Y, y_new.numpy()]),
                                   test.mean.numpy(), np.zeros((2, 2, 2)), ell, sf2, noise2, m)
    post = cond.posterior(test)
    np.testing.assert_allclose(post.mean.reshape(-1).detach().numpy(), mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(post.distribution.covariance_matrix.detach().numpy(), c, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(gp.posterior(test).distribution.covariance_matrix, before)
    assert gp.n == 15 and cond.n == 17
    with pytest.raises(RuntimeError, match='conditioned model'):
        cond.fit()


def test_standardize_outcome_transform_gives_single_task_gps_posterior(gen):
    """Oracle: BoTorch's SingleTaskGP with the same SE hyperparameters and Standardize, on the same readings."""
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.input import Normalize
    from botorch.models.transforms.outcome import Standardize
    from gpytorch.kernels import RBFKernel, ScaleKernel
    from gpytorch.likelihoods import GaussianLikelihood

    x = BOUNDS[0] + torch.rand(12, 2, generator=gen, dtype=torch.float64) * (BOUNDS[1] - BOUNDS[0])
    y = 100.0 + 5.0 * torch.sin(x[:, 0]) + x[:, 1]      # far from zero mean and unit variance
    ell_unit, sf2, lam, m = [0.2, 0.3], 1.3, 0.02, 0.4  # standardised units; lengthscales on the unit cube
    gp = DistributionGP(BOUNDS, priors=False, outcome_transform=Standardize(m=1))
    gp.set_data(Dirac(x), y)
    gp.set_hyperparameters(lengthscale=torch.tensor(ell_unit, dtype=torch.float64) * (BOUNDS[1] - BOUNDS[0]),
                           outputscale=sf2, noise=lam, mean=m)
    oracle = SingleTaskGP(x, y.unsqueeze(-1), likelihood=GaussianLikelihood(),
                          covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
                          input_transform=Normalize(2, bounds=BOUNDS.to(torch.float64)),
                          outcome_transform=Standardize(m=1))
    oracle.covar_module.base_kernel.lengthscale = torch.tensor([ell_unit], dtype=torch.float64)
    oracle.covar_module.outputscale = torch.tensor(sf2, dtype=torch.float64)
    oracle.likelihood.noise = torch.tensor([lam], dtype=torch.float64)
    oracle.mean_module.constant.data.fill_(m)
    oracle.eval()
    test = BOUNDS[0] + torch.rand(3, 4, 2, generator=gen, dtype=torch.float64) * (BOUNDS[1] - BOUNDS[0])
    ours, theirs = gp.posterior(test), oracle.posterior(test)
    assert ours.mean.shape == theirs.mean.shape == (3, 4, 1)
    torch.testing.assert_close(ours.mean, theirs.mean, rtol=0, atol=1e-10)
    torch.testing.assert_close(ours.distribution.covariance_matrix, theirs.distribution.covariance_matrix,
                               rtol=0, atol=1e-10)
    ours, theirs = gp.posterior(test, observation_noise=True), oracle.posterior(test, observation_noise=True)
    torch.testing.assert_close(ours.variance, theirs.variance, rtol=0, atol=1e-10)
    assert ours.mean.abs().max() > 50      # untransformed: the readings' units, not standardised ones


def test_outcome_transform_must_be_one_standardize():
    from botorch.models.transforms.outcome import Log, Standardize
    with pytest.raises(ValueError, match='Standardize'):
        DistributionGP(BOUNDS, outcome_transform=Log())
    with pytest.raises(ValueError, match='Standardize'):
        DistributionGP(BOUNDS, outcome_transform=Standardize(m=2))
    with pytest.raises(ValueError, match='standardize=False'):
        DistributionGP(BOUNDS, standardize=False, outcome_transform=Standardize(m=1))


@pytest.mark.parametrize('shape', [(4, 3, 2), (2, 4, 3, 2), (3, 2), (2,)])
def test_posterior_has_the_shapes_botorch_promises(gen, shape):
    """BoTorch's model contract: points ``batch x q x d`` -> mean ``batch x q x 1``, joint covariance ``batch x q x q``
    (``q x d`` -> ``q x 1``; one point ``d`` is ``q = 1``), alike from ``posterior``, ``model(X)``, the targets' view
    and a fantasy model; and an acquisition under BoTorch's ``t_batch_mode_transform`` gives one value per t-batch."""
    from botorch.acquisition import qUpperConfidenceBound
    from botorch.sampling import SobolQMCNormalSampler
    from uncertain_bo.models import TargetModel
    locs, y = data(8, gen)
    gp = DistributionGP(BOUNDS)
    gp.set_data(locs, y)
    X = BOUNDS[0] + torch.rand(*shape, generator=gen, dtype=torch.float64) * (BOUNDS[1] - BOUNDS[0])
    batch, q = (shape[:-2], shape[-2]) if len(shape) > 1 else ((), 1)
    for model in (gp, TargetModel(gp)):
        post = model.posterior(X)
        assert post.mean.shape == (*batch, q, 1) and post.variance.shape == (*batch, q, 1)
        assert post.distribution.covariance_matrix.shape == (*batch, q, q)
    assert gp(X).mean.shape == (*batch, q)
    if len(shape) > 1:        # BoTorch's fantasize and acquisitions need q x d at least
        fantasy = gp.fantasize(X[..., :1, :], SobolQMCNormalSampler(torch.Size([5])))
        assert fantasy.posterior(X).mean.shape == (5, *batch, q, 1)
        value = qUpperConfidenceBound(gp, beta=2.0)(X)      # t_batch_mode_transform: q x d is one t-batch
        assert value.shape == (batch or (1,))

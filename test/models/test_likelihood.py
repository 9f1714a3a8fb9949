"""Reported reading variances: the floor of each reading's noise in the GP, in the posterior and the likelihood."""
import math

import pytest
import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from uncertain_bo.distributions import Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.planning.planner import InvalidObservationError, Planner

BOX = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
ELL, SF2, LAM, MEAN = 2.0, 1.5, 0.05, 0.3


def _gp():
    gp = DistributionGP(BOX, standardize=False, priors=False)
    gp.set_hyperparameters(lengthscale=ELL, outputscale=SF2, noise=LAM, mean=MEAN)
    return gp


def _data(n=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = 10 * torch.rand(n, 2, generator=g, dtype=torch.float64)
    y = torch.sin(x[:, 0]) + 0.1 * x[:, 1]
    var = torch.rand(n, generator=g, dtype=torch.float64) * 0.5
    var[::3] = 0.0  # some readings without a reported variance
    return x, y, var


def _oracle(x, y, var, xs):
    """Closed-form GP posterior with the noise diagonal lambda + var_i (SE kernel on points)."""
    def k(a, b):
        return SF2 * torch.exp(-0.5 * torch.cdist(a, b) ** 2 / ELL ** 2)
    kxx = k(x, x) + torch.diag(LAM + var)
    ks = k(xs, x)
    mean = MEAN + ks @ torch.linalg.solve(kxx, y - MEAN)
    cov = k(xs, xs) - ks @ torch.linalg.solve(kxx, ks.T)
    return mean, torch.diagonal(cov), kxx


def test_posterior_uses_each_readings_variance_as_extra_noise():
    x, y, var = _data()
    xs = torch.tensor([[2.0, 3.0], [7.5, 1.0], [5.0, 5.0]], dtype=torch.float64)
    mean_o, var_o, _ = _oracle(x, y, var, xs)
    gp = _gp()
    gp.set_data(Dirac(x), y, var)
    mean, post_var = gp.marginals(Dirac(xs))
    assert torch.allclose(mean, mean_o, atol=1e-10) and torch.allclose(post_var, var_o, atol=1e-10)
    # the rank-one path (append one at a time) gives the same posterior
    gp2 = _gp()
    gp2.set_data(Dirac(x[:2]), y[:2], var[:2])
    gp2.marginals(Dirac(xs))  # builds the cache, so the appends grow it
    for i in range(2, len(y)):
        gp2.append(Dirac(x[i:i + 1]), y[i:i + 1], var[i:i + 1])
    mean2, var2 = gp2.marginals(Dirac(xs))
    assert torch.allclose(mean2, mean_o, atol=1e-9) and torch.allclose(var2, var_o, atol=1e-9)
    # without reported variances the model is the homoscedastic one
    gp3 = _gp()
    gp3.set_data(Dirac(x), y)
    mean3, _ = gp3.marginals(Dirac(xs))
    assert torch.allclose(mean3, _oracle(x, y, torch.zeros_like(var), xs)[0], atol=1e-10)
    assert not torch.allclose(mean3, mean_o, atol=1e-4)


def test_marginal_likelihood_and_information_gain_use_the_same_diagonal():
    x, y, var = _data(seed=3)
    gp = _gp()
    gp.set_data(Dirac(x), y, var)
    gp.train()
    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    out = gp(*gp.train_inputs)
    value = float(mll(out, gp.train_targets)) * len(y)  # gpytorch divides by n
    _, _, kxx = _oracle(x, y, var, x[:1])
    oracle = float(torch.distributions.MultivariateNormal(torch.full_like(y, MEAN), kxx).log_prob(y))
    assert value == pytest.approx(oracle, rel=1e-9, abs=1e-9)
    gp.eval()
    diag = LAM + var
    kern = kxx - torch.diag(diag)
    gain = 0.5 * float(torch.logdet(torch.eye(len(y), dtype=torch.float64) + kern / diag[:, None]))
    assert gp.information_gain() == pytest.approx(gain, rel=1e-9)


@pytest.mark.parametrize('bad', [-1.0, math.nan, math.inf, True])
def test_bad_reading_variances_are_rejected_and_nothing_is_stored(bad):
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2))
    loc = Gaussian(torch.ones(1, 2, dtype=torch.float64), 0.1 * torch.eye(2, dtype=torch.float64)[None])
    with pytest.raises(InvalidObservationError, match='reading variance'):
        p.observe(torch.ones(2, dtype=torch.float64), loc, 1.0, reading_variance=bad)
    assert p.n == 0


def test_reading_variances_survive_a_resume_from_the_journal(tmp_path):
    x, y, var = _data(n=6, seed=5)
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), journal=tmp_path / 'j.jsonl', seed=2)
    for xi, yi, vi in zip(x, y, var):
        p.observe(xi, Dirac(xi[None]), float(yi), reading_variance=float(vi))
    q = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), journal=tmp_path / 'j.jsonl', seed=2)
    xs = torch.tensor([[4.0, 4.0]], dtype=torch.float64)
    assert torch.equal(p.predict(xs)[0], q.predict(xs)[0])
    q.model                                   # brought up to date when read
    assert torch.equal(q.model.reading_noise, var)


def test_noise_prior_is_a_planner_setting():
    from gpytorch.priors import GammaPrior, LogNormalPrior
    kinds = {}
    for prior in ('gamma', 'lognormal'):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), noise_prior=prior)
        kinds[prior] = type(p.model.likelihood.noise_covar.noise_prior)
    assert kinds == {'gamma': GammaPrior, 'lognormal': LogNormalPrior}
    with pytest.raises(ValueError, match='unknown noise prior'):
        Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), noise_prior='flat')


# ------------------------------------------------------- input-induced noise (DistributionGP input_induced_noise)
def _gaussians(n=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    mean = 10 * torch.rand(n, 2, generator=g, dtype=torch.float64)
    a = torch.randn(n, 2, 2, generator=g, dtype=torch.float64)
    cov = a @ a.transpose(-1, -2) + 0.01 * torch.eye(2, dtype=torch.float64)
    return Gaussian(mean, cov)


def test_input_variance_matches_monte_carlo():
    """v_i = E[k(x, x)] - E[k(x, x')], x, x' ~ P_i independent, against Monte Carlo samples of P_i."""
    gp = DistributionGP(BOX, standardize=False, priors=False, input_induced_noise=True)
    gp.set_hyperparameters(lengthscale=[ELL, 3.0], outputscale=SF2, noise=LAM, mean=MEAN)
    locations = _gaussians()
    v = gp.input_variance(locations).detach()
    g = torch.Generator().manual_seed(7)
    x, xp = locations.sample(40000, generator=g), locations.sample(40000, generator=g)   # (n, m, 2)
    z = (x - xp) / torch.tensor([ELL, 3.0], dtype=torch.float64)
    terms = SF2 * (1 - torch.exp(-0.5 * z.pow(2).sum(-1)))
    mc, se = terms.mean(1), terms.std(1) / math.sqrt(terms.shape[1])
    assert (v > 0.01).all()
    assert torch.all((v - mc).abs() < 4 * se + 1e-6), (v, mc, se)


def test_input_variance_is_zero_for_points_and_when_off():
    on = DistributionGP(BOX, standardize=False, priors=False, input_induced_noise=True)
    assert torch.equal(on.input_variance(Dirac(torch.rand(4, 2, dtype=torch.float64))),
                       torch.zeros(4, dtype=torch.float64))
    off = DistributionGP(BOX, standardize=False, priors=False)
    assert torch.equal(off.input_variance(_gaussians()), torch.zeros(6, dtype=torch.float64))


def test_training_marginal_variance_is_the_point_variance():
    """With input noise, a reading at an uncertain location has prior variance k(x, x) + lambda + its reported
    variance, whatever its location covariance (the exact marginal variance of y_i = f(x_i) + eps_i)."""
    gp = DistributionGP(BOX, standardize=False, priors=False, input_induced_noise=True)
    gp.set_hyperparameters(lengthscale=ELL, outputscale=SF2, noise=LAM, mean=MEAN)
    locations = _gaussians()
    var = torch.linspace(0.0, 0.5, 6, dtype=torch.float64)
    gp.set_data(locations, torch.randn(6, dtype=torch.float64), var)
    gp.train()
    marginal = gp.likelihood(gp(*gp.train_inputs))
    assert torch.allclose(marginal.variance.detach(), SF2 + LAM + var, atol=1e-10)
    mll = ExactMarginalLogLikelihood(gp.likelihood, gp)
    loss = -mll(gp(*gp.train_inputs), gp.train_targets)
    loss.backward()
    assert gp.kernel.raw_lengthscale.grad is not None and torch.isfinite(gp.kernel.raw_lengthscale.grad).all()
    gp.eval()
    assert torch.allclose(gp.noise_diagonal(), LAM + var + gp.input_variance(locations).detach())


def test_input_noise_rank_one_growth_matches_a_fresh_build():
    locations, y = _gaussians(8), torch.randn(8, dtype=torch.float64)
    var = torch.full((8,), 0.1, dtype=torch.float64)
    grown = DistributionGP(BOX, standardize=False, priors=False, input_induced_noise=True)
    fresh = DistributionGP(BOX, standardize=False, priors=False, input_induced_noise=True)
    for gp in (grown, fresh):
        gp.set_hyperparameters(lengthscale=ELL, outputscale=SF2, noise=LAM, mean=MEAN)
    grown.set_data(locations[:3], y[:3], var[:3])
    grown.marginals(locations[:1])      # builds the cache, then grows it
    grown.append(locations[3:], y[3:], var[3:])
    fresh.set_data(locations, y, var)
    test = _gaussians(5, seed=3)
    for a, b in zip(grown.marginals(test), fresh.marginals(test)):
        assert torch.allclose(a, b, atol=1e-9)

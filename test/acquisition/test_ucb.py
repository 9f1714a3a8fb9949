"""UCB (``acquisition/ugp_ucb.py``) against the closed-form :math:`\\mu + \\beta\\sigma`: the posterior of the
expected SE kernel written out in NumPy (``oracle.py``), for Gaussian candidates (uGP-UCB) and point candidates
(IGP-UCB), its gradient against finite differences, and its argument checks."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.ugp_ucb import UpperConfidenceBound
from uncertain_bo.distributions import Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP

from . import oracle

DT = torch.float64
BOX = torch.tensor([[-2.0, 10.0], [6.0, 14.0]], dtype=DT)   # not the unit square: the unit-cube map is tested
ELL, SF2, LAM, MEAN0 = (1.5, 0.8), 2.0, 0.05, 0.3           # physical lengthscales, signal and noise variance
EXEC_COV = np.array([[0.09, 0.02], [0.02, 0.04]])           # execution-noise model Σ̂ (correlated)


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(7)
    x = rng.uniform(BOX[0].numpy(), BOX[1].numpy(), (9, 2))
    a = rng.normal(size=(9, 2, 2)) * 0.2
    covs = a @ a.transpose(0, 2, 1)                      # heteroscedastic location covariances Σ_i
    y = np.sin(x[:, 0]) + 0.5 * np.cos(x[:, 1])
    gp = DistributionGP(BOX, standardize=False, priors=False)
    gp.set_data(Gaussian(torch.as_tensor(x), torch.as_tensor(covs)), torch.as_tensor(y))
    gp.set_hyperparameters(lengthscale=list(ELL), outputscale=SF2, noise=LAM, mean=MEAN0)
    return gp, x, covs, y


TARGETS = np.array([[0.0, 11.0], [3.3, 12.5], [6.0, 14.0], [-2.0, 10.0]])   # corners included


@pytest.mark.parametrize('beta', [0.0, 0.7, 2.5])
def test_ucb_of_gaussian_candidates_is_the_closed_form_mean_plus_beta_std(data, beta):
    gp, x, covs, y = data
    noise = GaussianExecutionNoise(torch.as_tensor(EXEC_COV))
    mu, var = oracle.posterior(x, covs, y, TARGETS, [EXEC_COV] * len(TARGETS), ELL, SF2, LAM, MEAN0)
    got = UpperConfidenceBound(gp, noise, beta).score(torch.as_tensor(TARGETS))
    np.testing.assert_allclose(got.detach().numpy(), mu + beta * np.sqrt(var), rtol=1e-10, atol=1e-12)


def test_ucb_of_point_candidates_is_the_closed_form_of_the_se_kernel(data):
    """Dirac candidates (IGP-UCB's): the expected kernel at Σ = 0 is the plain SE kernel."""
    gp, x, covs, y = data
    mu, var = oracle.posterior(x, covs, y, TARGETS, [np.zeros((2, 2))] * len(TARGETS), ELL, SF2, LAM, MEAN0)
    got = UpperConfidenceBound(gp, Dirac, 3.0).score(torch.as_tensor(TARGETS))
    np.testing.assert_allclose(got.detach().numpy(), mu + 3.0 * np.sqrt(var), rtol=1e-10, atol=1e-12)


def test_ucb_batch_interface_and_gradient(data):
    """BoTorch's ``(b, 1, d) -> (b,)`` call equals the scores; the gradient w.r.t. the targets (what L-BFGS-B
    follows) matches central differences of the closed form."""
    gp, x, covs, y = data
    noise = GaussianExecutionNoise(torch.as_tensor(EXEC_COV))
    ucb = UpperConfidenceBound(gp, noise, 2.0)
    t = torch.as_tensor(TARGETS[:2]).clone().requires_grad_(True)
    torch.testing.assert_close(ucb(t.unsqueeze(-2)), ucb.score(t), rtol=0, atol=0)
    ucb.score(t).sum().backward()

    def closed(z):
        mu, var = oracle.posterior(x, covs, y, z[None], [EXEC_COV], ELL, SF2, LAM, MEAN0)
        return float(mu[0] + 2.0 * np.sqrt(var[0]))

    h = 1e-6
    for i, z in enumerate(TARGETS[:2]):
        fd = [(closed(z + h * e) - closed(z - h * e)) / (2 * h) for e in np.eye(2)]
        np.testing.assert_allclose(t.grad[i].numpy(), fd, rtol=1e-6, atol=1e-8)


def test_ucb_rejects_bad_beta_and_q_above_one(data):
    gp = data[0]
    for beta in (-0.1, float('nan')):
        with pytest.raises(ValueError, match='beta'):
            UpperConfidenceBound(gp, Dirac, beta)
    with pytest.raises(ValueError, match='q = 1'):
        UpperConfidenceBound(gp, Dirac, 1.0)(torch.zeros(3, 2, 2, dtype=DT))

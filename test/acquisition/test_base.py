"""Our acquisitions on a mock model (BoTorch's ``MockModel`` / ``MockPosterior``): the formulas of UCB and UEI alone,
with the posterior fixed by hand, and the base class's batch contract."""
import math

import numpy as np
import pytest
import torch
from botorch.utils.testing import MockModel, MockPosterior
from scipy.stats import norm

from uncertain_bo.acquisition.base import TargetAcquisition
from uncertain_bo.acquisition.uei import UnscentedExpectedImprovement
from uncertain_bo.acquisition.ucb import TargetUpperConfidenceBound
from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.distributions.unscented import sigma_points

MEAN = torch.tensor([0.3, -1.2, 2.0], dtype=DTYPE)
VAR = torch.tensor([0.04, 1.5, 0.2], dtype=DTYPE)


def mock(mean, var):
    return MockModel(MockPosterior(mean=mean.reshape(-1, 1, 1), variance=var.reshape(-1, 1, 1)))


@pytest.mark.parametrize('beta', [0.0, 1.0, 3.0])
def test_ucb_is_the_mean_plus_beta_standard_deviations_of_whatever_posterior_it_gets(beta):
    ucb = TargetUpperConfidenceBound(mock(MEAN, VAR), Dirac, beta ** 2)
    got = ucb(torch.zeros(3, 1, 2, dtype=DTYPE))
    torch.testing.assert_close(got, MEAN + beta * VAR.sqrt())


def test_uei_is_the_sigma_point_weighted_ei_of_whatever_posterior_it_gets():
    """2 targets x 5 sigma points (d = 2, κ = 1): log Σ_i w_i EI(m_i, s_i; τ) with EI in closed form."""
    noise = GaussianExecutionNoise(torch.tensor([[0.02, 0.0], [0.0, 0.01]], dtype=DTYPE))
    g = torch.Generator().manual_seed(0)
    m = torch.randn(10, generator=g, dtype=DTYPE)
    v = 0.1 + torch.rand(10, generator=g, dtype=DTYPE)
    uei = UnscentedExpectedImprovement(mock(m, v), noise, kappa=1.0, best=0.5, clip=False)
    targets = torch.tensor([[0.2, 0.3], [0.7, 0.1]], dtype=DTYPE)
    got = uei(targets.unsqueeze(-2))
    _, w = sigma_points(targets, noise.covariance, 1.0)
    s = v.sqrt().numpy()
    u = (m.numpy() - 0.5) / s
    ei = (s * (u * norm.cdf(u) + norm.pdf(u))).reshape(2, 5)
    np.testing.assert_allclose(got.detach().numpy(), np.log((w.numpy() * ei).sum(-1)), rtol=1e-9)


def test_a_pointwise_acquisition_refuses_a_joint_batch_with_a_pointer_to_the_greedy_batch():
    class Pointwise(TargetAcquisition):
        def score(self, targets):
            return targets.sum(-1)

    acq = Pointwise(mock(MEAN, VAR), Dirac)
    torch.testing.assert_close(acq(torch.ones(4, 1, 2, dtype=DTYPE)), torch.full((4,), 2.0, dtype=DTYPE))
    with pytest.raises(NotImplementedError, match='greedily with pending'):
        acq(torch.ones(4, 2, 2, dtype=DTYPE))
    assert math.isfinite(float(acq(torch.zeros(1, 1, 2, dtype=DTYPE))))

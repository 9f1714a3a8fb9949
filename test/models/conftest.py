"""Fixtures shared by the model tests."""
import pytest
import torch

from models.test_distribution_gp import BOUNDS, data, input_variance_numpy
from uncertain_bo.models import DistributionGP


@pytest.fixture
def noisy_inputs_gp(gen):
    """15 heteroscedastic Gaussian inputs in 2-D, reported reading variances, input-induced noise on."""
    locs, y = data(15, gen)
    reported = 0.01 + 0.02 * torch.rand(15, generator=gen, dtype=torch.float64)
    gp = DistributionGP(BOUNDS, standardize=False, priors=False, input_induced_noise=True)
    gp.set_data(locs, y, reported)
    ell, sf2, lam, m = [1.7, 2.5], 1.3, 0.02, 0.4
    gp.set_hyperparameters(lengthscale=ell, outputscale=sf2, noise=lam, mean=m)
    M, S = locs.mean.numpy(), locs.covariance.numpy()
    noise = lam + reported.numpy() + input_variance_numpy(S, ell, sf2)
    return gp, (M, S, y.numpy(), ell, sf2, noise, m)

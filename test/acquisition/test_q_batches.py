"""Our acquisitions take BoTorch's ``batch x q x d`` inputs through BoTorch's ``t_batch_mode_transform``: the
one-target ones refuse ``q > 1`` with BoTorch's message (NES said so in its own words, the Thompson quadratures
reshaped a batch of two into a wrong result), and a ``q x d`` input is one batch."""
import pytest
import torch

from uncertain_bo.acquisition.nes import NESEntropyReduction, dirac_query
from uncertain_bo.acquisition.quadrature import DistributionallyRobustThompson, OffsetRobustThompson
from uncertain_bo.acquisition.ucb import TargetUpperConfidenceBound
from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.models.sample_paths import PosteriorSamplePaths


def gp(d):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(8, d, generator=g, dtype=DTYPE)
    model = DistributionGP(torch.stack([torch.zeros(d), torch.ones(d)]).to(DTYPE), standardize=False, priors=False)
    model.set_data(Dirac(x), torch.sin(4 * x).sum(-1))
    model.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=1e-3, mean=0.0)
    return model


def one_target_acquisitions():
    g1, g3 = gp(1), gp(3)
    gen = torch.Generator().manual_seed(1)
    noise = GaussianExecutionNoise.isotropic(0.05, 1)
    with torch.no_grad():
        g_star = g1.marginals(noise(g1.train_locations.mean))[0].max().reshape(1) + 0.2
    contexts = torch.rand(4, 2, generator=gen, dtype=DTYPE)
    return [(NESEntropyReduction(g1, noise, dirac_query, g_star, g1.train_locations.mean), 1),
            (DistributionallyRobustThompson(g3, PosteriorSamplePaths(g3, 1, 50, gen), contexts, 0.5), 1),
            (OffsetRobustThompson(g1, PosteriorSamplePaths(g1, 1, 50, gen), torch.zeros(3, 1, dtype=DTYPE), 0.5), 1)]


def test_one_target_acquisitions_refuse_a_batch_and_take_q_by_d():
    for acq, d in one_target_acquisitions():
        X = torch.rand(5, 1, d, dtype=DTYPE)
        with torch.no_grad():
            values = acq(X)
            assert values.shape == (5,)
            torch.testing.assert_close(acq(X[2]), values[2:3])       # a q x d input is one batch
            with pytest.raises(AssertionError, match='q=1'):
                acq(torch.rand(3, 2, d, dtype=DTYPE))


def test_target_acquisitions_take_q_by_d_as_one_batch():
    model = gp(2)
    acq = TargetUpperConfidenceBound(model, GaussianExecutionNoise.isotropic(0.05, 2), beta=4.0)
    X = torch.rand(4, 1, 2, dtype=DTYPE)
    with torch.no_grad():
        torch.testing.assert_close(acq(X[1]), acq(X)[1:2])

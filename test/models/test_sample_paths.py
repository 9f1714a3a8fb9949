"""Posterior sample paths (``models/sample_paths.py``): the random features' inner products against the expected SE
kernel, and the paths' moments at Gaussian location distributions against the model's posterior (Monte Carlo over
paths; heteroscedastic training inputs with input-induced noise)."""
import math

import torch

from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.kernels import ExpectedRBFKernel
from uncertain_bo.models import DistributionGP
from uncertain_bo.models.sample_paths import PosteriorSamplePaths, RandomFeatures


def test_random_features_match_the_expected_kernel():
    """E_w,b[φ(P)ᵀφ(Q)] of the filtered features is the expected SE kernel between Gaussians."""
    g = torch.Generator().manual_seed(3)
    ell = torch.tensor([0.2, 0.3], dtype=DTYPE)
    feats = RandomFeatures.draw(ell, 1.7, 200_000, g)
    mean = torch.tensor([[0.1, 0.2], [0.25, 0.1], [0.3, 0.4]], dtype=DTYPE)
    cov = torch.stack([torch.diag(torch.tensor(v, dtype=DTYPE)) for v in ([0.0, 0.0], [0.01, 0.02], [0.03, 0.005])])
    phi = feats(mean, cov)
    approx = phi @ phi.T
    k = ExpectedRBFKernel(2).to(DTYPE)
    k.lengthscale = ell.reshape(1, 2)
    enc = k.encode(Gaussian(mean, cov))
    with torch.no_grad():
        exact = 1.7 * k(enc, enc).to_dense()
    off = ~torch.eye(3, dtype=torch.bool)   # a Gaussian against itself is two independent copies: diagonal differs
    assert torch.allclose(approx[off], exact[off], atol=0.02)


def test_paths_at_candidate_distributions_have_the_models_posterior_moments():
    """g̃ at N(x, Σ̂) over 4000 paths: mean and covariance against the model's joint posterior there, with 15
    heteroscedastic Gaussian training inputs and ``input_induced_noise`` (each reading's noise includes its
    input-induced variance, in the posterior and in the paths' update alike)."""
    g = torch.Generator().manual_seed(0)
    bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)
    x = torch.rand(15, 2, generator=g, dtype=DTYPE) * 10
    a = 0.6 * torch.randn(15, 2, 2, generator=g, dtype=DTYPE)
    gp = DistributionGP(bounds, input_induced_noise=True)
    gp.set_data(Gaussian(x, a @ a.transpose(-1, -2) + 0.05 * torch.eye(2, dtype=DTYPE)), torch.sin(x).sum(-1))
    gp.set_hyperparameters(lengthscale=[2.0, 3.0], outputscale=1.0, noise=0.01, mean=0.0)
    cand = GaussianExecutionNoise.isotropic(0.5, 2)(torch.tensor([[2.0, 3.0], [2.5, 3.5], [8.0, 1.0]], dtype=DTYPE))
    with torch.no_grad():
        post = gp.posterior(cand)
        draws = PosteriorSamplePaths(gp, 4000, 2000, torch.Generator().manual_seed(1))(cand)     # (3, 4000)
    mean, cov = post.mean.reshape(-1), post.distribution.covariance_matrix
    sd = cov.diagonal().sqrt()
    assert ((draws.mean(-1) - mean).abs() < 4 * sd / math.sqrt(4000) + 0.02 * sd).all()
    emp = torch.cov(draws)
    assert ((emp - cov).abs() < 0.1 * sd[:, None] * sd[None, :]).all()

"""The symmetrised-KL baseline kernel (``kernels/skl.py``) against its formula."""
import math

import pytest
import torch

from uncertain_bo.distributions import Empirical
from uncertain_bo.kernels import SymmetrizedKLKernel
from uncertain_bo.noise import BetaNoise

from .test_mmd import beta_clouds, random_gaussians


def test_skl_adapter_matches_formula(gen):
    d = 2
    p = Empirical(torch.randn(3, 500, d, generator=gen) * torch.tensor([0.1, 0.3]) + torch.rand(3, 1, d, generator=gen))
    q = random_gaussians(2, d, gen)
    k = SymmetrizedKLKernel(d)
    k.lengthscale = 2.0
    got = k.forward(k.encode(p), k.encode(q)).detach()
    # moment-matched diagonal Gaussians formula, k = exp(-SKL / ℓ)
    mp, vp = p.mean, torch.diagonal(p.covariance, dim1=-2, dim2=-1)
    mq, vq = q.mean, torch.diagonal(q.covariance, dim1=-2, dim2=-1)
    ref = torch.empty(3, 2)
    for i in range(3):
        for j in range(2):
            dm2 = (mp[i] - mq[j]) ** 2
            skl = (0.5 * (vp[i] / vq[j] + dm2 / vq[j] - 1 + vq[j] / vp[i] + dm2 / vp[i] - 1)).sum()
            ref[i, j] = math.exp(-float(skl) / 2.0)
    assert torch.allclose(got, ref, rtol=1e-4)  # GPyTorch adds 1e-8 to each variance


def test_skl_median_init_once(gen):
    p = beta_clouds(10, 50, gen)
    k = SymmetrizedKLKernel(1)
    enc = k.encode(p)
    ell = float(k.lengthscale)
    assert ell > 5  # SKL between these inputs is O(100); GPyTorch's default would be 0.69
    k.lengthscale = 3.0
    k.encode(beta_clouds(10, 50, gen))
    assert float(k.lengthscale) == pytest.approx(3.0)
    k.encode(p[:1])  # a single distribution never initialises
    assert SymmetrizedKLKernel(1).lengthscale.item() == pytest.approx(math.log(2))
    assert k(enc).to_dense().shape == (10, 10)


def test_skl_fit_moves_away_from_initial_values(gen):
    """Regression: a median init inside forward made BoTorch's L-BFGS-B stop at its first step."""
    from uncertain_bo.models import DistributionGP
    noise = BetaNoise(0.4, 0.2, 0.1)
    x = torch.rand(15, 1, generator=gen)
    y = torch.sin(6 * x[:, 0]) + 0.05 * torch.randn(15, generator=gen)
    gp = DistributionGP(torch.tensor([[0.0], [1.0]]), SymmetrizedKLKernel(1))
    gp.set_data(noise(x), y)
    before = float(gp.kernel.lengthscale)
    assert gp.fit()
    assert abs(float(gp.kernel.lengthscale) - before) > 1e-3 * before
    assert float(gp.likelihood.noise) < 0.5  # a smooth signal is not explained as noise

"""The unscented transform and the unscented SE kernel (``unscented.py``; Nogueira et al. 2016): moments of the sigma
points against the Gaussian they stand for, the kernel against an explicit NumPy double sum."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import DistributionGP
from uncertain_bo.distributions.unscented import UnscentedRBFKernel, sigma_points, sigma_weights

UNIT = torch.tensor([[0.0, 0.0], [1.0, 1.0]])


def random_spd(d, gen, scale=0.05):
    a = torch.randn(d, d, generator=gen) * scale
    return a @ a.T + 0.1 * scale ** 2 * torch.eye(d)


# ------------------------------------------------------------------ unscented transform
@pytest.mark.parametrize('d', [1, 2, 3, 4])
@pytest.mark.parametrize('kappa', [1.0, 0.5, 2.0])
def test_sigma_points_reproduce_mean_and_covariance(d, kappa, gen):
    mean = torch.randn(3, d, generator=gen)
    cov = torch.stack([random_spd(d, gen) for _ in range(3)])
    pts, w = sigma_points(mean, cov, kappa)
    assert pts.shape == (3, 2 * d + 1, d) and w.shape == (2 * d + 1,)
    assert float(w.sum()) == pytest.approx(1.0, abs=1e-14)
    assert float(w[0]) == pytest.approx(kappa / (d + kappa))
    m = (w[:, None] * pts).sum(-2)
    c = torch.einsum('p,jpa,jpb->jab', w, pts - mean[:, None], pts - mean[:, None])
    torch.testing.assert_close(m, mean, rtol=0, atol=1e-12)
    torch.testing.assert_close(c, cov, rtol=0, atol=1e-12)
    # the unscented transform is exact for quadratics: E[x^T A x] = m^T A m + tr(A Σ)
    a = torch.randn(d, d, generator=gen)
    quad_ut = (w * torch.einsum('jpa,ab,jpb->jp', pts, a, pts)).sum(-1)
    quad_exact = torch.einsum('ja,ab,jb->j', mean, a, mean) + torch.einsum('ab,jba->j', a, cov)
    torch.testing.assert_close(quad_ut, quad_exact, rtol=1e-10, atol=1e-10)


def test_sigma_points_shared_and_singular_covariance(gen):
    mean = torch.randn(4, 2, generator=gen)
    pts, w = sigma_points(mean, torch.diag(torch.tensor([0.04, 0.01])), 1.0)  # diagonal: element-wise sqrt
    torch.testing.assert_close(pts[:, 1] - mean, torch.tensor([math.sqrt(3) * 0.2, 0.0]).expand(4, 2))
    torch.testing.assert_close(pts[:, 4] - mean, torch.tensor([0.0, -math.sqrt(3) * 0.1]).expand(4, 2))
    pts0, _ = sigma_points(mean, torch.zeros(2, 2), 1.0)  # Dirac: every point is the mean
    torch.testing.assert_close(pts0, mean[:, None].expand(4, 5, 2))
    with pytest.raises(ValueError):
        sigma_weights(2, -2.0)


def se_numpy(a, b, ell):
    return np.exp(-0.5 * ((a[:, None] - b[None]) ** 2).sum(-1) / ell ** 2)


def test_unscented_kernel_dirac_is_se_and_gaussian_is_weighted_double_sum(gen):
    ell = 0.3
    k = UnscentedRBFKernel(2, kappa=1.0, clip_to_unit_cube=False)
    k.lengthscale = ell
    x = torch.rand(6, 2, generator=gen)
    kd = k(k.encode(Dirac(x)), k.encode(Dirac(x))).to_dense().detach().numpy()
    np.testing.assert_allclose(kd, se_numpy(x.numpy(), x.numpy(), ell), rtol=1e-12)
    covs = torch.stack([random_spd(2, gen, 0.1) for _ in range(6)])
    g = Gaussian(x, covs)
    kg = k(k.encode(g), k.encode(Dirac(x[:3]))).to_dense().detach().numpy()
    pts, w = sigma_points(x, covs, 1.0)
    pts, w = pts.numpy(), w.numpy()
    expected = np.array([[sum(w[p] * se_numpy(pts[i, p][None], x[j].numpy()[None], ell)[0, 0] for p in range(5))
                          for j in range(3)] for i in range(6)])
    np.testing.assert_allclose(kg, expected, rtol=1e-12)
    kgg = k(k.encode(g), k.encode(g)).to_dense().detach().numpy()
    expected_gg = np.array([[sum(w[p] * w[q] * se_numpy(pts[i, p][None], pts[j, q][None], ell)[0, 0]
                                 for p in range(5) for q in range(5)) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(kgg, expected_gg, rtol=1e-12)
    np.testing.assert_allclose(np.diag(kgg), k(k.encode(g), k.encode(g), diag=True).detach().numpy(), rtol=1e-12)
    assert np.linalg.eigvalsh(kgg).min() > -1e-12  # inner product of embeddings: PSD


def test_unscented_posterior_mean_is_sigma_point_average(gen):
    """UEI recommends by the unscented mean; the planner gets it from the kernel's posterior at N(x, Σ̂)."""
    gp = DistributionGP(UNIT, UnscentedRBFKernel(2), standardize=False, priors=False)
    x = torch.rand(15, 2, generator=gen)
    gp.set_data(Dirac(x), torch.sin(5 * x[:, 0]) + x[:, 1])
    gp.set_hyperparameters(lengthscale=0.2, outputscale=1.0, noise=0.01, mean=0.0)
    targets = torch.tensor([[0.3, 0.6], [0.5, 0.5]])
    cov = torch.eye(2) * 0.05 ** 2
    mean_ut, _ = gp.marginals(Gaussian(targets, cov))
    pts, w = sigma_points(targets, cov, 1.0)
    mean_pts, _ = gp.marginals(Dirac(pts.reshape(-1, 2)))
    torch.testing.assert_close(mean_ut, (mean_pts.reshape(2, 5) * w).sum(-1), rtol=1e-10, atol=1e-12)

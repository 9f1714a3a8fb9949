"""ExpectedRBFKernel's shared-covariance fast paths give the pairwise (general) path's values and gradients
(w.r.t. the means, the lengthscales, and a covariance parameter shared by all rows)."""
import pytest
import torch

import uncertain_bo.kernels as kernels
import uncertain_bo.kernels.expected_rbf as expected_rbf
from uncertain_bo.distributions import Dirac, Gaussian


def rnd_cov(n, d, gen):
    a = 0.1 * torch.randn(n, d, d, generator=gen)
    return a @ a.transpose(-1, -2) + 1e-3 * torch.eye(d)


@pytest.mark.parametrize('d', [1, 2, 3])
@pytest.mark.parametrize('case', ['both', 'left', 'right', 'dirac', 'none'])
def test_fast_path_equals_pairwise_path(case, d, gen, monkeypatch):
    k = kernels.ExpectedRBFKernel(d)
    k.lengthscale = torch.linspace(0.2, 0.4, d).reshape(1, d)
    m1, m2 = torch.rand(7, d, generator=gen), torch.rand(5, d, generator=gen)
    shared = torch.eye(d) * 0.02
    x1, x2 = {
        'both': (Gaussian(m1, shared), Gaussian(m2, 0.5 * shared)),
        'left': (Gaussian(m1, shared), Gaussian(m2, rnd_cov(5, d, gen))),
        'right': (Gaussian(m1, rnd_cov(7, d, gen)), Gaussian(m2, shared)),
        'dirac': (Dirac(m1), Dirac(m2)),
        'none': (Gaussian(m1, rnd_cov(7, d, gen)), Gaussian(m2, rnd_cov(5, d, gen))),
    }[case]
    e1, e2 = k.encode(x1), k.encode(x2)

    def value_and_grads():
        k.zero_grad()
        means = e1[:, :d].clone().requires_grad_(True)
        cov_param = e1[0, d:].clone().requires_grad_(True)  # one covariance parameter ...
        same = bool((e1[:, d:] == e1[:1, d:]).all())
        covs = cov_param.expand(7, d * d) if same else e1[:, d:]  # ... expanded to all rows when shared
        out = k.forward(torch.cat([means, covs], -1), e2)
        (out * torch.linspace(0.5, 1.5, out.numel()).reshape(out.shape)).sum().backward()
        grad_cov = cov_param.grad.clone() if cov_param.grad is not None else torch.zeros(d * d)
        grad_cov = grad_cov.reshape(d, d) + grad_cov.reshape(d, d).T  # along symmetric perturbations only
        return out.detach(), means.grad.clone(), k.raw_lengthscale.grad.clone(), grad_cov

    fast = value_and_grads()
    monkeypatch.setattr(expected_rbf, '_shared_covariance_kernel', lambda *args: None)
    general = value_and_grads()
    for f, g in zip(fast, general):
        torch.testing.assert_close(f, g, rtol=1e-10, atol=1e-13)

"""Expected SE kernel (``kernels/expected_rbf.py``; Oliveira et al. 2019, Eq. 80) against independent oracles, and its
shared-covariance fast paths against the pairwise (general) path: values and gradients (w.r.t. the means, the
lengthscales, and a covariance parameter shared by all rows), for pairs of batches and for batches of groups."""
import math

import pytest
import torch

import uncertain_bo.kernels.expected_rbf as expected_rbf
import uncertain_bo.linalg as linalg
from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.kernels import ExpectedRBFKernel


def random_gaussians(n, d, gen, scale=0.3):
    a = torch.randn(n, d, d, generator=gen) * scale
    return Gaussian(torch.randn(n, d, generator=gen), a @ a.transpose(-1, -2))


def kernel_with(lengthscale):
    k = ExpectedRBFKernel(len(lengthscale))
    k.lengthscale = torch.tensor([lengthscale])
    return k


def eq80_direct(p, q, ell):
    """Eq. 80 written as printed, with explicit determinants and inverses (no Cholesky, no rescaling)."""
    w = torch.diag(torch.tensor(ell) ** 2)
    out = torch.empty(len(p), len(q))
    for i in range(len(p)):
        for j in range(len(q)):
            s = p.covariance[i] + q.covariance[j]
            diff = p.mean[i] - q.mean[j]
            quad = diff @ torch.linalg.inv(w + s) @ diff
            det = torch.linalg.det(torch.eye(len(ell)) + torch.linalg.inv(w) @ s)
            out[i, j] = torch.exp(-0.5 * quad) / torch.sqrt(det)
    return out


def monte_carlo(p, q, ell, m, gen):
    xs, ys = p.sample(m, gen), q.sample(m, gen)
    diff = (xs.unsqueeze(1) - ys.unsqueeze(0)) / torch.tensor(ell)
    return torch.exp(-0.5 * diff.pow(2).sum(-1)).mean(-1)


@pytest.mark.parametrize('ell', [[0.7, 1.3], [0.4, 0.9, 2.0]])
def test_closed_form_matches_monte_carlo(ell, gen):
    d = len(ell)
    p, q = random_gaussians(3, d, gen), random_gaussians(4, d, gen)
    k = kernel_with(ell)
    closed = k.forward(k.encode(p), k.encode(q)).detach()
    mc = monte_carlo(p, q, ell, 100_000, gen)
    # k in [0, 1]: MC standard error <= 0.5/sqrt(m) ~ 0.0016; allow 4 standard errors
    assert torch.allclose(closed, mc, atol=0.0065), (closed - mc).abs().max()


def test_closed_form_matches_eq80_as_printed(gen):
    ell = [0.5, 1.5, 0.8]
    p, q = random_gaussians(5, 3, gen, 0.5), random_gaussians(6, 3, gen, 0.5)
    k = kernel_with(ell)
    assert torch.allclose(k.forward(k.encode(p), k.encode(q)), eq80_direct(p, q, ell), atol=1e-12)


def test_dirac_limit_is_plain_se(gen):
    ell = [0.3, 2.0]
    x1, x2 = torch.randn(4, 2, generator=gen), torch.randn(5, 2, generator=gen)
    k = kernel_with(ell)
    got = k.forward(k.encode(Dirac(x1)), k.encode(Dirac(x2)))
    se = torch.exp(-0.5 * (((x1[:, None] - x2[None]) / torch.tensor(ell)) ** 2).sum(-1))
    assert torch.allclose(got, se, atol=1e-14)


def test_self_similarity_is_double_integral_not_one():
    # k̂(P, P) = |I + 2 W⁻¹ Σ|^{-1/2} (two independent copies), e.g. 1-D: (1 + 2σ²/ℓ²)^{-1/2}
    k = kernel_with([1.0])
    p = Gaussian(torch.zeros(1, 1), torch.tensor([[[0.5]]]))
    assert math.isclose(float(k.forward(k.encode(p), k.encode(p))), 2 ** -0.5, rel_tol=1e-12)


def test_kernel_matrix_psd_and_diag_consistent(gen):
    p = random_gaussians(60, 2, gen)
    k = kernel_with([0.4, 0.6])
    enc = k.encode(p)
    full = k.forward(enc, enc).detach()
    assert torch.linalg.eigvalsh(full).min() > -1e-10
    assert torch.allclose(k.forward(enc, enc, diag=True), torch.diagonal(full), atol=1e-14)


def test_unrolled_cholesky_equals_lapack(gen, monkeypatch):
    p, q = random_gaussians(7, 4, gen), random_gaussians(5, 4, gen)
    k = kernel_with([0.5, 1.0, 1.5, 2.0])
    fast = k.forward(k.encode(p), k.encode(q))
    monkeypatch.setattr(linalg, 'UNROLL_MAX_DIM', 0)
    slow = k.forward(k.encode(p), k.encode(q))
    assert torch.allclose(fast, slow, atol=1e-13)


def test_gradients_wrt_means_and_lengthscale(gen):
    q = random_gaussians(3, 2, gen)
    k = kernel_with([0.8, 1.1])
    x = torch.randn(2, 2, generator=gen, requires_grad=True)

    def f(x):
        return k.forward(k.encode(Gaussian(x, torch.eye(2) * 0.1, validate=False)), k.encode(q))
    assert torch.autograd.gradcheck(f, (x,))


def test_wrong_encoding_width_is_a_clear_error():
    k = ExpectedRBFKernel(2)
    with pytest.raises(ValueError, match='width 6'):
        k.forward(torch.zeros(3, 2), torch.zeros(3, 2))


# --------------------------------------------------------------------------- fast paths
def rnd_cov(n, d, gen):
    a = 0.1 * torch.randn(n, d, d, generator=gen)
    return a @ a.transpose(-1, -2) + 1e-3 * torch.eye(d)


@pytest.mark.parametrize('d', [1, 2, 3])
@pytest.mark.parametrize('case', ['both', 'left', 'right', 'dirac', 'none'])
def test_fast_path_equals_pairwise_path(case, d, gen, monkeypatch):
    k = ExpectedRBFKernel(d)
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


@pytest.mark.parametrize('points', [True, False])
def test_batches_of_groups_with_a_shared_covariance_are_the_pairwise_kernel(points, gen, monkeypatch):
    """``forward`` on ``(B, q, E)`` groups (a joint posterior's prior block) whose covariances are all equal — points,
    or one execution-noise model — is the general path's value per group."""
    k = ExpectedRBFKernel(2)
    k.lengthscale = torch.tensor([[0.2, 0.35]])
    m = torch.rand(4, 3, 2, generator=gen)
    dists = Dirac(m.reshape(-1, 2)) if points else Gaussian(m.reshape(-1, 2), torch.eye(2) * 0.01)
    enc = k.encode(dists).reshape(4, 3, -1)
    batched = k.forward(enc, enc)
    monkeypatch.setattr(expected_rbf, '_common', lambda s: None)      # every shortcut off: the pairwise formula
    general = torch.stack([k.forward(e, e) for e in enc])
    assert batched.shape == (4, 3, 3)
    torch.testing.assert_close(batched, general, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize('d', [1, 2, 4])
def test_se_kernel_is_the_expected_se_kernel_on_dirac_inputs(d, gen):
    """The plain SE function (sample paths, kernel mean embeddings) against ExpectedRBFKernel on Dirac inputs and a
    pairwise NumPy-free oracle; ``diag`` is the paired values."""
    from uncertain_bo.kernels import se_kernel
    ell = torch.linspace(0.3, 1.5, d, dtype=torch.float64)
    x1 = torch.randn(6, d, generator=gen, dtype=torch.float64)
    x2 = torch.randn(5, d, generator=gen, dtype=torch.float64)
    k = ExpectedRBFKernel(d)
    k.lengthscale = ell
    closed = k.forward(k.encode(Dirac(x1)), k.encode(Dirac(x2)))
    oracle = torch.tensor([[math.exp(-0.5 * float((((a - b) / ell) ** 2).sum())) for b in x2] for a in x1],
                          dtype=torch.float64)
    got = se_kernel(x1 / ell, x2 / ell)
    torch.testing.assert_close(got, oracle, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(got, closed.detach(), rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(se_kernel(x1[:5] / ell, x2 / ell, diag=True), oracle[:5].diagonal(),
                               rtol=1e-13, atol=1e-15)

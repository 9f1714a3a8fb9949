"""AIRBO's additive-RQ base kernel (``kernels/additive_rq.py``, Eq. 32) against GPyTorch's RQ kernels, and its fused
(compiled) CPU loops against the eager numbers: the cross term and the
Nyström right-hand side against a literal double sum, and whole MMD kernel matrices (Nyström and empirical)
with ``fused=True`` against ``fused=False`` (the implementation before the fused loops)."""
import pytest
import torch
from gpytorch.kernels import AdditiveKernel, RQKernel

from uncertain_bo.distributions import Empirical
from uncertain_bo.kernels import AdditiveRQKernel, MMDKernel


def fused_or_skip(value):
    if value is None:
        pytest.skip('torch.compile is unavailable on this machine (the kernels fall back to the eager path)')
    return value


def literal_cross(base, u, w, v, z):
    """sum_jk w_pj z_qk k(u_pj, v_qk), one pair at a time with GPyTorch-free eager calls."""
    out = torch.empty(u.shape[0], v.shape[0])
    for p in range(u.shape[0]):
        for q in range(v.shape[0]):
            out[p, q] = w[p] @ base.forward(u[p], v[q]) @ z[q]
    return out


@pytest.mark.parametrize('d', [1, 3])
def test_fused_cross_and_weighted_sums_match_literal_sums(d, gen):
    base = AdditiveRQKernel(alphas=(0.2, 0.5, 1.0, 2.0, 5.0, 3.0))  # 3.0: the general exp-log1p branch
    base.lengthscales = torch.tensor([0.3, 0.5, 0.7, 1.1, 1.3, 0.9])
    u, v = torch.rand(7, 6, d, generator=gen), torch.rand(11, 5, d, generator=gen)  # n2 = 11: padded rows
    w, z = torch.randn(7, 6, generator=gen), torch.randn(11, 5, generator=gen)      # signed weights
    with torch.no_grad():
        fused = fused_or_skip(base.fused_embedding_inner_products(u, w, v, z))
        ref = literal_cross(base, u, w, v, z)
        torch.testing.assert_close(fused, ref, rtol=1e-12, atol=1e-12)
        y = torch.rand(7, 9, d, generator=gen)
        wy = torch.rand(7, 9, generator=gen)
        sums = fused_or_skip(base.fused_weighted_sums(u, y, wy))
        ref = torch.stack([base.forward(u[p], y[p]) @ wy[p] for p in range(7)])
        torch.testing.assert_close(sums, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('estimator', ['nystrom', 'empirical'])
def test_fused_kernel_matrices_equal_eager_ones(estimator, gen):
    train = Empirical(torch.rand(9, 40, 2, generator=gen) * 0.3 + torch.rand(9, 1, 2, generator=gen))
    test = Empirical(torch.rand(13, 40, 2, generator=gen) * 0.3 + torch.rand(13, 1, 2, generator=gen))
    eager = MMDKernel(2, estimator=estimator, n_landmarks=12, fused=False)
    fused = MMDKernel(2, estimator=estimator, n_landmarks=12, fused=True)
    for k in (eager, fused):
        k.lengthscale = 0.7
        k.base_kernel.lengthscales = torch.tensor([0.4, 0.6, 0.8, 1.0, 1.2])
    with torch.no_grad():
        fused_or_skip(fused.base_kernel.fused_embedding_inner_products(
            torch.zeros(1, 1, 2), torch.ones(1, 1), torch.zeros(1, 1, 2), torch.ones(1, 1)))
        for a, b in ((train, train), (test, train)):
            ke = eager.forward(eager.encode(a), eager.encode(b))
            kf = fused.forward(fused.encode(a), fused.encode(b))
            torch.testing.assert_close(kf, ke, rtol=0, atol=1e-10)
            assert not torch.equal(ke, torch.ones_like(ke))  # a non-trivial kernel matrix


def test_fused_is_off_with_autograd_and_below_the_work_threshold(gen):
    k = MMDKernel(1, estimator='nystrom', n_landmarks=5)  # fused='auto'
    p = torch.rand(4, 5, 1, generator=gen)
    c = torch.rand(4, 5, generator=gen)
    with torch.no_grad():
        assert k._fused_cross(p, c, p, c) is None  # 400 sample pairs: eager
    forced = MMDKernel(1, estimator='nystrom', n_landmarks=5, fused=True)
    assert forced._fused_cross(p, c, p, c) is None  # autograd on: eager, differentiable
    with pytest.raises(ValueError, match='fused'):
        MMDKernel(1, fused='sometimes')


def test_additive_rq_matches_gpytorch_rq_sum(gen):
    ells = [0.3, 0.5, 1.0, 2.0, 0.7]
    parts = []
    for a, ell in zip((0.2, 0.5, 1, 2, 5), ells):
        k = RQKernel()
        k.alpha, k.lengthscale = a, ell
        parts.append(k)
    ref = AdditiveKernel(*parts)
    mine = AdditiveRQKernel(lengthscale=torch.tensor(ells))
    x, y = torch.randn(7, 3, generator=gen), torch.randn(5, 3, generator=gen)
    expected = ref(x, y).to_dense().detach()
    assert torch.allclose(mine(x, y).to_dense(), expected, atol=1e-13)
    with torch.no_grad():  # in-place fast path
        assert torch.allclose(mine.forward(x, y), expected, atol=1e-13)
    assert torch.allclose(mine.forward(x, x, diag=True), torch.full((7,), 5.0))
    # alphas are fixed (paper), lengthscales learnable
    assert [n for n, p in mine.named_parameters()] == ['raw_lengthscales']

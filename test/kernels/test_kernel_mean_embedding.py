"""The kernel mean embedding kernel (``kernels/kernel_mean_embedding.py``; uGP's sample-based kernel) against the
closed-form expected SE kernel, weights and points."""
import torch

from uncertain_bo.distributions import Dirac, Empirical
from uncertain_bo.kernels import AdditiveRQKernel, ExpectedRBFKernel, KernelMeanEmbeddingKernel, MMDKernel

from .test_mmd import beta_clouds, random_gaussians


def test_kme_converges_to_expected_rbf_for_gaussians(gen):
    p, q = random_gaussians(3, 2, gen), random_gaussians(4, 2, gen)
    ell = torch.tensor([[0.7, 1.2]])
    kme = KernelMeanEmbeddingKernel(2, n_samples=1000)
    erbf = ExpectedRBFKernel(2)
    kme.lengthscale, erbf.lengthscale = ell, ell
    with torch.no_grad():
        got = kme.forward(kme.encode(p), kme.encode(q))
        ref = erbf.forward(erbf.encode(p), erbf.encode(q))
        got_diag = kme.forward(kme.encode(p), kme.encode(p), diag=True)
        # the same sample set on both sides: V-statistic, includes the i = j terms (bias ~ 1/m)
        ref_diag = erbf.forward(erbf.encode(p), erbf.encode(p), diag=True)
    assert torch.allclose(got, ref, atol=3e-3), (got - ref).abs().max()
    assert torch.allclose(got_diag, ref_diag, atol=3e-3)


def test_kme_respects_weights(gen):
    """Weights 2:1 equal duplicating the first sample."""
    s = torch.rand(3, 2, 1, generator=gen)
    weighted = Empirical(s, torch.tensor([[2.0, 1.0]] * 3))
    duplicated = Empirical(torch.cat([s[:, :1], s], dim=1))
    q = beta_clouds(2, 10, gen)
    for k in (KernelMeanEmbeddingKernel(1), MMDKernel(1, estimator='empirical', unbiased=False),
              MMDKernel(1, estimator='nystrom', n_landmarks=100)):
        a = k.forward(k.encode(weighted), k.encode(q))
        b = k.forward(k.encode(duplicated), k.encode(q))
        assert torch.allclose(a, b, atol=1e-10)


def test_kme_dirac_is_plain_se(gen):
    x, y = torch.rand(3, 2, generator=gen), torch.rand(4, 2, generator=gen)
    k = KernelMeanEmbeddingKernel(2)
    k.lengthscale = torch.tensor([[0.3, 0.5]])
    ref = torch.exp(-0.5 * (((x.unsqueeze(1) - y.unsqueeze(0)) / torch.tensor([0.3, 0.5])) ** 2).sum(-1))
    assert torch.allclose(k.forward(k.encode(Dirac(x)), k.encode(Dirac(y))), ref, atol=1e-14)


def test_max_samples_caps_empirical_inputs(gen):
    p = beta_clouds(2, 100, gen)
    k = KernelMeanEmbeddingKernel(1, max_samples=40)
    assert k.encode(p).shape == (2, 80)
    assert torch.allclose(k.encode(p), KernelMeanEmbeddingKernel(1).encode(Empirical(p.samples[:, :40])))


def test_symmetric_blocks_equal_full_computation(gen):
    from uncertain_bo.kernels import embedding_inner_products
    p = beta_clouds(11, 7, gen, weighted=True)
    base = AdditiveRQKernel(lengthscale=0.3)
    u, w = p.samples, p.weights
    full = embedding_inner_products(u, w, u, w, base.forward, max_block=10 ** 6)
    for mb in (49, 200, 10 ** 6):  # 1x1, 2x2 (ragged) and a single block
        sym = embedding_inner_products(u, w, u, w, base.forward, max_block=mb, symmetric=True)
        assert torch.allclose(sym, full, atol=1e-13)
        if mb == 49:  # 1x1 blocks: every off-diagonal entry is mirrored exactly
            assert torch.equal(sym, sym.T)

"""AIRBO's MMD kernel (``kernels/mmd.py``): the empirical (Eq. 8) and Nyström (Eq. 12) estimators against literal
sums, closed forms and Monte Carlo, and the behaviours every sample-based kernel shares (PSD matrices, determinism,
chunking, batching, gradients through the samples, memoised embeddings)."""
import itertools

import numpy as np
import pytest
import torch
from gpytorch.kernels import RBFKernel

from uncertain_bo.distributions import Dirac, Empirical, Gaussian
from uncertain_bo.kernels import AdditiveRQKernel, ExpectedRBFKernel, KernelMeanEmbeddingKernel, MMDKernel
from uncertain_bo.noise import BetaNoise


def random_gaussians(n, d, gen, scale=0.3):
    a = torch.randn(n, d, d, generator=gen) * scale
    return Gaussian(torch.randn(n, d, generator=gen) * 0.7, a @ a.transpose(-1, -2) + 0.01 * torch.eye(d))


def rbf(ell):
    k = RBFKernel()
    k.lengthscale = ell
    return k


def beta_clouds(n, m, gen, weighted=False):
    x = torch.rand(n, 1, generator=gen)
    s = BetaNoise(0.4, 0.2, 0.1).sample_locations(x, m, gen)
    w = torch.rand(n, m, generator=gen) + 0.1 if weighted else None
    return Empirical(s, w)


# --------------------------------------------------------------------------- empirical estimator (Eq. 8)
def literal_mmd2(u, wu, v, wv, k, unbiased):
    """Eq. 8 written out with Python loops (weighted generalisation), as an oracle for the vectorised code."""
    kuu = k(u, u).to_dense().detach().numpy()
    kvv = k(v, v).to_dense().detach().numpy()
    kuv = k(u, v).to_dense().detach().numpy()
    wu, wv = wu.numpy(), wv.numpy()

    def within(kk, w):
        if not unbiased:
            return sum(w[i] * w[j] * kk[i, j] for i in range(len(w)) for j in range(len(w)))
        num = sum(w[i] * w[j] * kk[i, j] for i in range(len(w)) for j in range(len(w)) if i != j)
        return num / (1 - (w ** 2).sum())

    cross = sum(wu[i] * wv[j] * kuv[i, j] for i in range(len(wu)) for j in range(len(wv)))
    return within(kuu, wu) + within(kvv, wv) - 2 * cross


@pytest.mark.parametrize('unbiased, weighted', [(True, False), (False, False), (True, True)])
def test_empirical_estimator_matches_literal_eq8(unbiased, weighted, gen):
    p = beta_clouds(3, 12, gen, weighted)
    q = beta_clouds(2, 9, gen, weighted)
    k = MMDKernel(1, estimator='empirical', unbiased=unbiased)
    got = k.mmd2(k.encode(p), k.encode(q))
    for i, j in itertools.product(range(3), range(2)):
        ref = literal_mmd2(p.samples[i], p.weights[i], q.samples[j], q.weights[j], k.base_kernel, unbiased)
        assert float(got[i, j]) == pytest.approx(ref, abs=1e-12)
    if unbiased and not weighted:  # uniform weights: the textbook 1/(m(m-1)) Σ_{i≠j} form
        u, v = p.samples[0], q.samples[0]
        kuu, kvv = k.base_kernel(u, u).to_dense(), k.base_kernel(v, v).to_dense()
        textbook = ((kuu.sum() - kuu.diagonal().sum()) / (12 * 11) + (kvv.sum() - kvv.diagonal().sum()) / (9 * 8)
                    - 2 * k.base_kernel(u, v).to_dense().mean())
        assert float(got[0, 0]) == pytest.approx(float(textbook), abs=1e-12)


def closed_form_mmd2(p, q, ell):
    """Population MMD² between Gaussians under an SE base kernel: E k(u,u') + E k(v,v') - 2 E k(u,v), each
    term the expected SE kernel of Eq. 80 (ExpectedRBFKernel treats its two arguments as independent)."""
    e = ExpectedRBFKernel(p.dim)
    e.lengthscale = torch.full((1, p.dim), ell)
    with torch.no_grad():
        kpp = e.forward(e.encode(p), e.encode(p), diag=True)
        kqq = e.forward(e.encode(q), e.encode(q), diag=True)
        kpq = e.forward(e.encode(p), e.encode(q))
    return kpp.unsqueeze(-1) + kqq.unsqueeze(-2) - 2 * kpq


def monte_carlo_mmd2(p, q, ell, m, gen):
    """Independent Monte Carlo oracle: fresh i.i.d. samples, direct averages of the SE kernel."""
    out = torch.empty(len(p), len(q))
    xs, xs2 = p.sample(m, gen), p.sample(m, gen)
    ys, ys2 = q.sample(m, gen), q.sample(m, gen)

    def mean_k(a, b):  # E k over independent pairs (a_i, b_i)
        return torch.exp(-0.5 * ((a - b) / ell).pow(2).sum(-1)).mean(-1)

    for i in range(len(p)):
        for j in range(len(q)):
            out[i, j] = mean_k(xs[i], xs2[i]) + mean_k(ys[j], ys2[j]) - 2 * mean_k(xs[i], ys[j])
    return out


def test_empirical_mmd2_matches_gaussian_closed_form_and_monte_carlo(gen):
    p, q = random_gaussians(3, 2, gen), random_gaussians(2, 2, gen)
    ell = 0.8
    closed = closed_form_mmd2(p, q, ell)
    mc = monte_carlo_mmd2(p, q, ell, 200_000, gen)
    # the two oracles agree with each other (MC error ~ 3/sqrt(m) ≈ 0.007 at most)
    assert torch.allclose(closed, mc, atol=0.01), (closed - mc).abs().max()
    k = MMDKernel(2, estimator='empirical', base_kernel=rbf(ell))
    # i.i.d. samples: unbiased, standard error O(1/sqrt(m)) for P != Q, about 0.01 at m = 2000
    pe = Empirical(p.sample(2000, gen))
    qe = Empirical(q.sample(2000, gen))
    with torch.no_grad():
        got = k.mmd2(k.encode(pe), k.encode(qe))
    assert torch.allclose(got, closed, atol=0.035), (got - closed).abs().max()
    # Gaussian inputs encoded with fixed whitened base normals
    kg = MMDKernel(2, estimator='empirical', base_kernel=rbf(ell), n_samples=2000)
    with torch.no_grad():
        got_g = kg.mmd2(kg.encode(p), kg.encode(q))
    assert torch.allclose(got_g, closed, atol=0.035), (got_g - closed).abs().max()
    assert closed.min() > 0.05  # the comparison is not trivially near zero


def test_unbiased_estimate_can_be_negative_and_diagonal_consistent(gen):
    noise = BetaNoise(0.4, 0.2, 0.1, n_samples=20)
    p = noise(torch.tensor([[0.3], [0.3005], [0.8]]))
    k = MMDKernel(1, estimator='empirical')
    enc = k.encode(p)
    d = k.mmd2(enc, enc)
    assert float(d[0, 1]) < 0  # Eq. 8 can come out negative for near-identical inputs
    full = k(enc).to_dense()
    assert torch.allclose(k(enc, diag=True), full.diagonal())
    assert (full.diagonal() > 1).all()  # k̂_U(P, P) = exp(-2 c_P / (2ℓ²)) > 1
    assert torch.linalg.eigvalsh(full.detach()).min() > -1e-10


# --------------------------------------------------------------------------- Nyström estimator (Eq. 12)
def literal_nystrom(u, v, idx, k):
    """Eq. 12 as implemented by the paper's code (pinv, uniform weights) in numpy: an oracle for ours."""
    kk = lambda a, b: k(torch.as_tensor(a), torch.as_tensor(b)).to_dense().detach().numpy()  # noqa: E731
    ut, vt = u[idx], v[idx]
    ap = np.linalg.pinv(kk(ut, ut)) @ kk(ut, u) @ np.ones(len(u)) / len(u)
    aq = np.linalg.pinv(kk(vt, vt)) @ kk(vt, v) @ np.ones(len(v)) / len(v)
    return ap @ kk(ut, ut) @ ap + aq @ kk(vt, vt) @ aq - 2 * ap @ kk(ut, vt) @ aq


def test_nystrom_matches_literal_eq12(gen):
    # spread-out samples (normal, std 0.3) keep K_h well conditioned, so pinv and the ridge agree
    p = Empirical(torch.randn(2, 60, 1, generator=gen) * 0.3 + torch.tensor([[[0.2]], [[0.6]]]))
    k = MMDKernel(1, estimator='nystrom', n_landmarks=8)
    got = k.mmd2(k.encode(p[0]), k.encode(p[1]))
    idx = k.landmark_indices(60).numpy()
    ref = literal_nystrom(p.samples[0].numpy(), p.samples[1].numpy(), idx, k.base_kernel)
    assert float(got) == pytest.approx(ref, rel=1e-6)


def test_nystrom_tends_to_empirical_as_h_grows(gen):
    p = beta_clouds(6, 200, gen)
    v = MMDKernel(1, estimator='empirical', unbiased=False)
    enc = v.encode(p)
    exact_v = v.mmd2(enc, enc).detach()
    errors = []
    for h in (5, 20, 200):
        k = MMDKernel(1, estimator='nystrom', n_landmarks=h)
        errors.append(float((k.mmd2(enc, enc).detach() - exact_v).abs().max()))
    assert errors[-1] < 1e-8 * float(exact_v.max())  # h = m: the V-statistic up to the ridge
    assert errors[0] > errors[1] > errors[2]
    # U- and V-statistics differ by the per-distribution constants c_P + c_Q
    u = MMDKernel(1, estimator='empirical').mmd2(enc, enc).detach()
    c = (u.diagonal() / 2)
    assert torch.allclose(u - exact_v, c.unsqueeze(-1) + c.unsqueeze(-2), atol=1e-12)


def test_dirac_inputs_give_exact_mmd(gen):
    x = torch.rand(4, 2, generator=gen)
    base = AdditiveRQKernel()
    kxx = base(x, x).to_dense().detach()
    exact = kxx.diagonal().unsqueeze(-1) + kxx.diagonal().unsqueeze(-2) - 2 * kxx
    for est in ('nystrom', 'empirical'):
        k = MMDKernel(2, estimator=est, n_landmarks=10)
        enc = k.encode(Dirac(x))
        assert torch.allclose(k.mmd2(enc, enc).detach(), exact, atol=1e-10)


# --------------------------------------------------------------------------- PSD, determinism, chunking
@pytest.mark.parametrize('make', [
    lambda: MMDKernel(1, estimator='nystrom', n_landmarks=10),
    lambda: MMDKernel(1, estimator='empirical'),
    lambda: MMDKernel(1, estimator='empirical', unbiased=False),
    lambda: KernelMeanEmbeddingKernel(1),
])
def test_kernel_matrices_are_psd(make, gen):
    k = make()
    k.lengthscale = 0.05  # sharp kernel: the hardest case for PSD
    p = beta_clouds(60, 30, gen, weighted=True)
    with torch.no_grad():
        mat = k(k.encode(p)).to_dense()
    assert torch.allclose(mat, mat.T, atol=1e-14)
    assert torch.linalg.eigvalsh(mat).min() > -1e-9 * mat.diagonal().max()


def test_deterministic_across_calls_and_instances(gen):
    noise = BetaNoise(0.4, 0.2, 0.1, n_samples=100)
    x = torch.rand(8, 1, generator=gen)
    p = noise(x)
    k1 = MMDKernel(1, estimator='nystrom', n_landmarks=10)
    k2 = MMDKernel(1, estimator='nystrom', n_landmarks=10)
    with torch.no_grad():
        a = k1(k1.encode(p)).to_dense()
        assert torch.equal(a, k1(k1.encode(noise(x))).to_dense())
        assert torch.equal(a, k2(k2.encode(p)).to_dense())
        k2.resample_landmarks()
        assert not torch.equal(a, k2(k2.encode(p)).to_dense())


def test_chunking_does_not_change_results(gen):
    p, q = beta_clouds(7, 40, gen, weighted=True), beta_clouds(5, 30, gen)
    for make in (lambda b: MMDKernel(1, estimator='nystrom', n_landmarks=12, max_block=b),
                 lambda b: MMDKernel(1, estimator='empirical', max_block=b),
                 lambda b: KernelMeanEmbeddingKernel(1, max_block=b)):
        big, small = make(1 << 20), make(50)
        for diag in (False, True):
            qq = q if not diag else beta_clouds(7, 30, gen)
            a = big.forward(big.encode(p), big.encode(qq), diag=diag)  # forward: widths (m) may differ
            b = small.forward(small.encode(p), small.encode(qq), diag=diag)
            assert torch.allclose(a, b, atol=1e-12)


def test_batched_inputs_match_loop(gen):
    k = MMDKernel(1, estimator='nystrom', n_landmarks=5)
    a = torch.stack([k.encode(beta_clouds(4, 20, gen)) for _ in range(3)])
    b = torch.stack([k.encode(beta_clouds(2, 20, gen)) for _ in range(3)])
    out = k.forward(a, b)
    assert out.shape == (3, 4, 2)
    for i in range(3):
        assert torch.allclose(out[i], k.forward(a[i], b[i]))


def test_gradient_wrt_target_through_samples(gen):
    """d k̂(P_x, Q)/dx by autograd matches central finite differences (the acquisition's gradient path)."""
    noise = BetaNoise(0.4, 0.2, 0.1, n_samples=50)
    q = noise(torch.tensor([[0.35], [0.6]]))
    for k in (MMDKernel(1, estimator='nystrom', n_landmarks=10), MMDKernel(1, estimator='empirical'),
              KernelMeanEmbeddingKernel(1)):
        k.lengthscale = 0.3
        enc_q = k.encode(q)

        def f(x):
            return k.forward(k.encode(noise(x)), enc_q).sum()

        x = torch.tensor([[0.42]], requires_grad=True)
        f(x).backward()
        eps = 1e-6
        fd = (f(x.detach() + eps) - f(x.detach() - eps)) / (2 * eps)
        assert float(x.grad) == pytest.approx(float(fd), rel=1e-5, abs=1e-9)


# --------------------------------------------------------------------------- fast paths of the MMD kernel
@pytest.mark.parametrize('make', [
    lambda: MMDKernel(1, estimator='nystrom', n_landmarks=10),
    lambda: MMDKernel(1, estimator='empirical'),
    lambda: MMDKernel(1, estimator='empirical', unbiased=False),
])
def test_memoised_embeddings_and_diagonal_shortcut_match_direct_computation(make, gen):
    """Without autograd the kernel memoises embeddings and takes the diagonal of a batch against itself
    from the embedding; both must equal the straightforward computation (autograd on: no memo)."""
    from uncertain_bo.kernels import embedding_paired_inner_products
    k = make()
    p, q = beta_clouds(6, 40, gen, weighted=True), beta_clouds(4, 40, gen)
    ep, eq = k.encode(p), k.encode(q)
    direct = k.mmd2(ep, eq).detach()  # autograd on (parameters require grad): recomputed every call
    pts, coefs, selfs = k.embed(*k.decode(ep))
    direct_diag = (2.0 * selfs - 2.0 * embedding_paired_inner_products(pts, coefs, pts, coefs, k._base)).detach()
    if k.estimator == 'nystrom' or not k.unbiased:
        direct_diag = direct_diag.clamp_min(0.0)
    with torch.no_grad():
        first, second = k.mmd2(ep, eq), k.mmd2(ep, eq)
        diag = k.mmd2(ep, ep, diag=True)
        full = k.mmd2(ep, ep)
    assert len(k._memo) == 2
    k._memo = []
    with torch.no_grad():
        fresh = k.mmd2(ep, eq)
    assert torch.equal(first, second) and torch.equal(first, fresh)
    # the autograd path evaluates the base kernel differently (rounding, amplified by the Nyström solve)
    assert torch.allclose(first, direct, rtol=0, atol=1e-9)
    assert torch.allclose(diag, direct_diag, rtol=0, atol=1e-12)
    assert torch.allclose(diag, full.diagonal(), rtol=0, atol=1e-12)
    # new base-kernel hyperparameters: the memo is not used
    k.base_kernel.lengthscales = 0.4
    with torch.no_grad():
        moved = k.mmd2(ep, eq)
    assert torch.allclose(moved, k.mmd2(ep, eq).detach(), rtol=0, atol=1e-9)
    assert not torch.allclose(moved, first, atol=1e-6)
    # an encoded tensor changed in place: the memo is not used
    with torch.no_grad():
        ep[:, 0] += 0.05
        shifted = k.mmd2(ep, eq)
        assert torch.equal(shifted, k.mmd2(ep.clone(), eq))
    assert not torch.allclose(shifted, moved, atol=1e-6)


def test_gp_posterior_with_memoised_embeddings_matches_autograd_path(gen):
    from uncertain_bo.models import DistributionGP
    k = MMDKernel(1, estimator='nystrom', n_landmarks=10)
    gp = DistributionGP(torch.tensor([[0.0], [1.0]]), k)
    train, test = beta_clouds(12, 50, gen), beta_clouds(9, 50, gen)
    gp.set_data(train, torch.sin(6 * train.samples.mean((1, 2))))
    gp.set_hyperparameters(lengthscale=0.05, outputscale=1.3, noise=0.01)
    mean, var = gp.marginals(test)  # autograd on: no memo
    with torch.no_grad():
        gp.set_hyperparameters(lengthscale=0.05)  # drops the posterior cache: rebuilt without autograd
        mean2, var2 = gp.marginals(test)
        mean3, var3 = gp.marginals(test)  # training embedding from the memo
    assert torch.allclose(mean.detach(), mean2, rtol=0, atol=1e-8)
    assert torch.allclose(var.detach(), var2, rtol=0, atol=1e-10)
    assert torch.equal(mean2, mean3) and torch.equal(var2, var3)

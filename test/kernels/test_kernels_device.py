"""Device and dtype behaviour of the kernels, distributions and noise models.

- CUDA smoke test (skips without a GPU): every kernel's matrices, a GP posterior computed from them, the
  DistributionGP posterior, the noise models and the covariance check give the CPU numbers on CUDA tensors.
- CPU: kernels evaluate in the dtype of the encodings they are given (float32 in, float32 out, close to the
  float64 values); distribution batches promote other floating dtypes to float64 (the GP path is float64),
  and keep the device.
"""
import pytest
import torch

from uncertain_bo.distributions.covariance import covariance_problem
from uncertain_bo.distributions import DTYPE, Dirac, Empirical, Gaussian, GaussianExecutionNoise, check_covariance
from uncertain_bo.kernels import (AdditiveRQKernel, ExpectedRBFKernel, KernelMeanEmbeddingKernel, MMDKernel,
                                  SymmetrizedKLKernel)
from uncertain_bo.models import DistributionGP
from uncertain_bo.noise import DEFAULT_N_SAMPLES, BetaNoise, GaussianMixtureNoise, circular_gaussian
from uncertain_bo.distributions.unscented import UnscentedRBFKernel

KERNELS = {
    'expected_rbf': lambda: ExpectedRBFKernel(2),
    'unscented_rbf': lambda: UnscentedRBFKernel(2),
    'kme': lambda: KernelMeanEmbeddingKernel(2, n_samples=16),
    'mmd_nystrom': lambda: MMDKernel(2, estimator='nystrom', n_landmarks=7, n_samples=16),
    'mmd_empirical': lambda: MMDKernel(2, estimator='empirical', n_samples=16),
    'skl': lambda: SymmetrizedKLKernel(2),
}


def gaussians(n, gen):
    a = 0.05 * torch.randn(n, 2, 2, generator=gen)
    return Gaussian(torch.rand(n, 2, generator=gen), a @ a.transpose(-1, -2) + 1e-4 * torch.eye(2))


def empirical(n, gen):
    return Empirical(torch.rand(n, 1, 2, generator=gen) + 0.05 * torch.randn(n, 20, 2, generator=gen),
                     torch.rand(n, 20, generator=gen) + 0.1)


def inputs(name, gen):
    """Training and test batches a kernel accepts (empirical ones for the sample-based kernels)."""
    make = empirical if name in ('kme', 'mmd_nystrom', 'mmd_empirical') else gaussians
    return make(6, gen), make(4, gen)


def to(dist, device):
    if isinstance(dist, Gaussian):
        return Gaussian(dist.mean.to(device), dist.covariance.to(device))
    return Empirical(dist.samples.to(device), dist.weights.to(device))


def manual_posterior(kernel, train, y, test, noise=1e-2):
    """GP posterior mean and variance from the kernel matrices (torch.linalg only)."""
    xt, xs = kernel.encode(train), kernel.encode(test)
    k = kernel.forward(xt, xt)
    k = k + noise * torch.eye(k.shape[0], dtype=k.dtype, device=k.device)
    chol = torch.linalg.cholesky(k)
    ks = kernel.forward(xs, xt)
    v = torch.linalg.solve_triangular(chol, ks.T, upper=False)
    mean = ks @ torch.cholesky_solve(y.unsqueeze(-1), chol).squeeze(-1)
    var = kernel.forward(xs, xs, diag=True) - v.pow(2).sum(0)
    return mean, var


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')


@cuda
@pytest.mark.parametrize('name', sorted(KERNELS))
def test_cuda_kernels_and_posterior_equal_cpu(name, gen):
    train, test = inputs(name, gen)
    y = torch.randn(len(train), generator=gen)
    k_cpu, k_gpu = KERNELS[name](), KERNELS[name]().cuda()
    with torch.no_grad():
        ref = [k_cpu.forward(k_cpu.encode(a), k_cpu.encode(b)) for a, b in ((train, train), (test, train))]
        got = [k_gpu.forward(k_gpu.encode(to(a, 'cuda')), k_gpu.encode(to(b, 'cuda')))
               for a, b in ((train, train), (test, train))]
        for r, g in zip(ref, got):
            assert g.device.type == 'cuda'
            torch.testing.assert_close(g.cpu(), r, rtol=0, atol=1e-8)
        m_ref, v_ref = manual_posterior(k_cpu, train, y, test)
        m_gpu, v_gpu = manual_posterior(k_gpu, to(train, 'cuda'), y.cuda(), to(test, 'cuda'))
    torch.testing.assert_close(m_gpu.cpu(), m_ref, rtol=0, atol=1e-8)
    torch.testing.assert_close(v_gpu.cpu(), v_ref, rtol=0, atol=1e-8)


@cuda
@pytest.mark.parametrize('name', ['expected_rbf', 'mmd_nystrom'])
def test_cuda_distribution_gp_posterior_equals_cpu(name, gen):
    train, test = inputs(name, gen)
    y = torch.randn(len(train), generator=gen)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
    cpu = DistributionGP(bounds, KERNELS[name]())
    gpu = DistributionGP(bounds.cuda(), KERNELS[name]()).cuda()
    with torch.no_grad():
        cpu.set_data(train, y)
        gpu.set_data(to(train, 'cuda'), y.cuda())
        ref, got = cpu.marginals(test), gpu.marginals(to(test, 'cuda'))
    for r, g in zip(ref, got):
        torch.testing.assert_close(g.cpu(), r, rtol=0, atol=1e-8)


@cuda
def test_cuda_noise_models_and_covariance_check(gen):
    x = torch.rand(5, 2, generator=gen, dtype=DTYPE)
    for noise in (GaussianExecutionNoise.isotropic(0.1, 2),
                  GaussianExecutionNoise.isotropic(0.1, 2, n_samples=DEFAULT_N_SAMPLES),
                  GaussianMixtureNoise.from_stds([0.5, 0.5], [[0.0, 0.0], [0.1, 0.0]], [0.01, 0.02]),
                  BetaNoise(0.4, 0.2, 0.1, dim=2)):
        ref, got = noise(x), noise(x.cuda())
        field = 'covariance' if isinstance(ref, Gaussian) else 'samples'
        torch.testing.assert_close(getattr(got, field).cpu(), getattr(ref, field), rtol=0, atol=1e-12)
        cuda_gen = torch.Generator(device='cuda').manual_seed(0)
        assert noise.sample_locations(x.cuda(), 3, cuda_gen).device.type == 'cuda'
    assert Gaussian(x.cuda(), torch.eye(2) * 0.01).sample(4, torch.Generator(device='cuda')).device.type == 'cuda'
    bad = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=DTYPE)
    assert check_covariance(bad.cuda()) == check_covariance(bad)
    assert check_covariance(torch.eye(2, device='cuda')) is None


@pytest.mark.parametrize('name', sorted(KERNELS))
def test_kernels_evaluate_in_the_inputs_dtype(name, gen):
    train, test = inputs(name, gen)
    k = KERNELS[name]()
    with torch.no_grad():
        e_train, e_test = k.encode(train), k.encode(test)
        ref = k.forward(e_test, e_train)
        if name == 'mmd_nystrom':  # its 1e-10 ridge is below float32 precision: a clear error instead
            with pytest.raises(TypeError, match='needs float64'):
                k.forward(e_test.float(), e_train.float())
            return
        got = k.forward(e_test.float(), e_train.float())
    assert ref.dtype == torch.float64 and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), ref, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(ref, torch.zeros_like(ref))


def test_distributions_promote_to_float64_and_keep_the_device(gen):
    m = torch.rand(3, 2, generator=gen).float()
    for dist in (Dirac(m), Gaussian(m, torch.eye(2).float() * 0.1), Empirical(m.unsqueeze(1).expand(3, 4, 2))):
        assert dist.mean.dtype == torch.float64 and dist.mean.device == m.device
        assert dist.covariance.dtype == torch.float64
    noise = GaussianExecutionNoise.isotropic(0.1, 2)
    assert noise(m).mean.dtype == torch.float64
    assert noise.sample_locations(m, 5, gen).dtype == torch.float64


@pytest.mark.parametrize('matrix', [
    [[1.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.5], [0.4, 1.0]],
    [[-1.0, 0.0], [0.0, 1.0]], [[float('nan'), 0.0], [0.0, 1.0]], [[1e300, 0.0], [0.0, 1e300]],
    [[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1e-12]], [[4.0, 2.0, 0.0], [2.0, 1.0 - 1e-3, 0.0], [0, 0, 1]],
])
def test_tensor_covariance_check_agrees_with_the_numpy_one(matrix):
    c = torch.tensor(matrix, dtype=DTYPE)
    assert check_covariance(c) == covariance_problem(c.numpy())
    assert check_covariance(c.float()) == covariance_problem(c.float().numpy())


def test_batched_covariance_check_names_the_first_invalid_point():
    covs = torch.eye(2, dtype=DTYPE).repeat(5, 1, 1)
    covs[3] = torch.tensor([[1.0, 2.0], [2.0, 1.0]])
    assert 'not positive semi-definite' in check_covariance(covs)
    with pytest.raises(ValueError, match='covariance of point 3 is invalid: not positive semi-definite'):
        Gaussian(torch.zeros(5, 2), covs)
    big = torch.eye(2, dtype=DTYPE).repeat(100, 1, 1)
    big[70, 0, 0] = -1.0
    with pytest.raises(ValueError, match='a covariance in the batch is invalid: negative variance'):
        Gaussian(torch.zeros(100, 2), big)


def test_circular_gaussian_is_unchanged_by_the_device_helpers(gen):
    # the fixed base samples are the seeded CPU draws, on any call
    noise = circular_gaussian(4)
    a, b = noise(torch.zeros(1, 4)).samples, noise(torch.zeros(1, 4)).samples
    assert torch.equal(a, b)
    radii = a[0, :, :2].norm(dim=-1)
    torch.testing.assert_close(radii, torch.full_like(radii, 0.5))


def test_additive_rq_block_matches_literal_formula(gen):
    base = AdditiveRQKernel()
    x, y = torch.rand(5, 3, generator=gen), torch.rand(4, 3, generator=gen)
    r2 = torch.cdist(x, y).pow(2)
    ref = sum((1 + r2 / (2 * a)).pow(-a) for a in (0.2, 0.5, 1.0, 2.0, 5.0))
    torch.testing.assert_close(base.forward(x, y), ref, rtol=1e-12, atol=1e-12)

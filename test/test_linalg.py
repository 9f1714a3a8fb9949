"""uncertain_bo.linalg: square roots reproduce their covariances (also singular ones), the unrolled Cholesky
solve equals LAPACK's."""
import pytest
import torch

from uncertain_bo import linalg


def spd(n, d, gen, eps=1e-3):
    a = torch.randn(n, d, d, generator=gen)
    return a @ a.transpose(-1, -2) + eps * torch.eye(d)


@pytest.mark.parametrize('method', ['eigh', 'cholesky', 'jittered_cholesky'])
def test_psd_sqrt_reproduces_the_covariance(method, gen):
    c = spd(5, 3, gen)
    root = linalg.psd_sqrt(c, method=method)
    torch.testing.assert_close(root @ root.transpose(-1, -2), c, rtol=1e-9, atol=1e-9)
    if method != 'eigh':
        assert torch.equal(root, root.tril())  # a Cholesky factor


def test_psd_sqrt_of_singular_matrices(gen):
    v = torch.randn(4, 3, 1, generator=gen)
    rank_one = v @ v.transpose(-1, -2)
    for method in ('eigh', 'cholesky'):  # 'cholesky' falls back to eigh for singular matrices
        root = linalg.psd_sqrt(rank_one, method=method)
        torch.testing.assert_close(root @ root.transpose(-1, -2), rank_one, rtol=1e-9, atol=1e-9)
    assert torch.equal(linalg.psd_sqrt(torch.zeros(2, 2)), torch.zeros(2, 2))
    with pytest.raises(ValueError, match='method'):
        linalg.psd_sqrt(rank_one, method='svd')


@pytest.mark.parametrize('d', [1, 2, 4, 6])
def test_unrolled_quadratic_and_logdet_equal_lapack(d, gen, monkeypatch):
    a, delta = spd(20, d, gen), torch.randn(20, d, generator=gen)
    quad, half_logdet = linalg.quadratic_and_half_logdet(a, delta)
    ref_quad = (delta.unsqueeze(-2) @ torch.linalg.solve(a, delta.unsqueeze(-1))).reshape(-1)
    torch.testing.assert_close(quad, ref_quad, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(half_logdet, 0.5 * torch.linalg.slogdet(a)[1], rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(linalg, 'UNROLL_MAX_DIM', 0)  # the torch.linalg branch
    q2, h2 = linalg.quadratic_and_half_logdet(a, delta)
    torch.testing.assert_close(q2, quad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(h2, half_logdet, rtol=1e-12, atol=1e-12)

"""NumPy closed forms shared by the acquisition tests (independent of the library's kernels and caches).

The expected SE kernel between Gaussians (Oliveira et al. 2019, App. A.8 Eq. 80; Girard 2004, Eq. 3.53) and
the GP posterior (Eqs. 11-13) written out with ``numpy.linalg.solve``.
"""
import numpy as np


def expected_se(m1, s1, m2, s2, ell, sf2):
    """:math:`\\sigma_f^2 |I + W^{-1}(\\Sigma + \\Sigma')|^{-1/2} \\exp(-\\tfrac12 \\Delta^\\top (W + \\Sigma +
    \\Sigma')^{-1} \\Delta)` for means ``(d,)``, covariances ``(d, d)``, lengthscales ``(d,)``."""
    w = np.diag(np.asarray(ell, dtype=float) ** 2)
    c = s1 + s2
    delta = np.asarray(m1, dtype=float) - np.asarray(m2, dtype=float)
    det = np.linalg.det(np.eye(len(delta)) + np.linalg.solve(w, c))
    return sf2 * det ** -0.5 * np.exp(-0.5 * delta @ np.linalg.solve(w + c, delta))


def gram(means_a, covs_a, means_b, covs_b, ell, sf2):
    return np.array([[expected_se(ma, sa, mb, sb, ell, sf2) for mb, sb in zip(means_b, covs_b)]
                     for ma, sa in zip(means_a, covs_a)])


def posterior(train_means, train_covs, y, test_means, test_covs, ell, sf2, lam, mean0):
    """``(mu (q,), var (q,))`` of the latent :math:`\\hat f` at the test Gaussians (paper Eqs. 11-13)."""
    k = gram(train_means, train_covs, train_means, train_covs, ell, sf2) + lam * np.eye(len(y))
    ks = gram(test_means, test_covs, train_means, train_covs, ell, sf2)
    kss = np.array([expected_se(m, s, m, s, ell, sf2) for m, s in zip(test_means, test_covs)])
    mu = mean0 + ks @ np.linalg.solve(k, np.asarray(y, dtype=float) - mean0)
    var = kss - np.einsum('ij,ji->i', ks, np.linalg.solve(k, ks.T))
    return mu, var


def information_gain(train_means, train_covs, ell, sf2, lam):
    """:math:`\\tfrac12 \\log|I + \\lambda^{-1} \\hat K_n|` (paper Eq. 18), nats."""
    k = gram(train_means, train_covs, train_means, train_covs, ell, sf2)
    return 0.5 * np.linalg.slogdet(np.eye(len(k)) + k / lam)[1]


def joint_posterior(train_means, train_covs, y, test_means, test_covs, ell, sf2, lam, mean0):
    """``(mu (q,), cov (q, q))``: the joint posterior of the latent at the test Gaussians (Eqs. 11-13, full
    covariance), by ``numpy.linalg.solve``."""
    k = gram(train_means, train_covs, train_means, train_covs, ell, sf2) + np.diag(np.broadcast_to(lam, len(y)))
    ks = gram(test_means, test_covs, train_means, train_covs, ell, sf2)
    kss = gram(test_means, test_covs, test_means, test_covs, ell, sf2)
    mu = mean0 + ks @ np.linalg.solve(k, np.asarray(y, dtype=float) - mean0)
    return mu, kss - ks @ np.linalg.solve(k, ks.T)

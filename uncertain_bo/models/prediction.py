r"""The prediction strategies of :class:`~uncertain_bo.models.DistributionGP`: the cached exact posterior and the
sparse (SGPR) posterior, each grown by cheap updates as readings arrive.

Both represent the posterior covariance between encoded inputs :math:`x, x'` (the model's standardised units)
in one form,

.. math::
    C(x, x') = k(x, x') - \mathbf a(x)^\top \mathbf a(x') + \mathbf b(x)^\top \mathbf b(x'),

with :math:`\mathbf a(x) = L^{-1} k_{\mathcal X x}`, :math:`\mathbf b = 0` for the exact posterior
(:math:`LL^\top = \hat K + \Lambda`) and :math:`\mathbf a = L_u^{-1} k_{ux}`, :math:`\mathbf b = L_B^{-1} L_u^{-1}
k_{ux}` for the sparse one. :meth:`~ExactPrediction.factors` returns the posterior mean and these factors for a
batch of inputs, from which the model builds marginal variances, joint covariances over ``q`` candidates and
cross-covariances (:meth:`~uncertain_bo.models.DistributionGP.posterior`): one posterior, read three ways.
Hyperparameters are frozen inside a strategy (detached tensors); a fit discards it.
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import torch
from linear_operator.utils.cholesky import psd_safe_cholesky
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from ..caught_warnings import logged_warnings

if TYPE_CHECKING:
    from ..distributions import LocationDistributions
    from .distribution_gp import DistributionGP

__all__ = ['Prediction', 'ExactPrediction', 'SparsePrediction']

log = logging.getLogger(__name__)


def safe_cholesky(a: Tensor) -> Tensor:
    """Lower Cholesky factor of the SPD ``(m, m)`` matrix ``a`` by linear_operator's ``psd_safe_cholesky``, whose
    jitter warnings (routine here: near-duplicate inputs, inducing inputs without noise) are caught, counted and
    logged (:mod:`uncertain_bo.caught_warnings`) on whichever path and thread builds a posterior."""
    with logged_warnings(log, NumericalWarning):
        return psd_safe_cholesky(a)


class Prediction:
    """What both strategies read from their factors (standardised units, encoded inputs).

    Example:
        Both strategies read a posterior the same way; with every reading as inducing input the sparse one is exact:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> from uncertain_bo.models import DistributionGP
        >>> X = torch.tensor([[0.1, 0.2], [0.5, 0.5], [0.9, 0.3]], dtype=torch.float64)
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> gp = DistributionGP(bounds, priors=False, standardize=False)
        >>> gp.set_data(Dirac(X), torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64))
        >>> gp.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=1e-4, mean=0.0)
        >>> from uncertain_bo.models.prediction import ExactPrediction, SparsePrediction
        >>> test = Dirac(torch.tensor([[0.3, 0.3], [0.7, 0.9]], dtype=torch.float64))
        >>> exact = ExactPrediction.build(gp).marginals_of(gp, test)
        >>> sparse = SparsePrediction.build(gp, torch.arange(3)).marginals_of(gp, test)
        >>> all(torch.allclose(a, b) for a, b in zip(exact, sparse))
        True
    """

    def factors(self, gp: 'DistributionGP', enc: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """Posterior mean ``(N,)`` and the factors :math:`\\mathbf a`, :math:`\\mathbf b` (or None) at ``(N, E)``."""
        raise NotImplementedError

    def marginals_of(self, gp: 'DistributionGP', dists: 'LocationDistributions') -> tuple[Tensor, Tensor]:
        """Posterior mean and variance ``(N,)`` of ``N`` (unnormalised) location distributions: :meth:`marginals` of
        their encoding."""
        return self.marginals(gp, gp.encode(dists))

    def marginals(self, gp: 'DistributionGP', enc: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean and variance ``(N,)`` at encoded inputs ``(N, E)``."""
        mean, a, b = self.factors(gp, enc)
        var = gp.covar_module.forward(enc, enc, diag=True) - a.pow(2).sum(-1)
        return mean, var if b is None else var + b.pow(2).sum(-1)

    def joint(self, gp: 'DistributionGP', enc: Tensor) -> tuple[Tensor, Tensor]:
        """Posterior mean ``(B, q)`` and covariance ``(B, q, q)`` within each group of encoded inputs ``(B, q, E)``."""
        nb, q, e = enc.shape
        mean, a, b = self.factors(gp, enc.reshape(nb * q, e))
        a = a.reshape(nb, q, -1)
        cov = prior_block(gp, enc) - a @ a.transpose(-1, -2)
        if b is not None:
            b = b.reshape(nb, q, -1)
            cov = cov + b @ b.transpose(-1, -2)
        return mean.reshape(nb, q), cov

    def cross(self, gp: 'DistributionGP', ea: Tensor, eb: Tensor) -> Tensor:
        """Posterior cross-covariance ``(N_A, N_B)`` between encoded inputs ``(N_A, E)`` and ``(N_B, E)``."""
        _, aa, ba = self.factors(gp, ea)
        _, ab, bb = self.factors(gp, eb)
        cov = gp.covar_module.forward(ea, eb) - aa @ ab.T
        return cov if ba is None else cov + ba @ bb.T


def prior_block(gp: 'DistributionGP', enc: Tensor) -> Tensor:
    """Prior covariance ``(B, q, q)`` within each group of encoded inputs ``(B, q, E)``, never a ``B q x B q`` matrix:
    the expected SE kernel on the batch of groups (a whitened SE kernel when the covariances are shared, e.g. points);
    any other kernel in its diagonal mode on every pair (one call)."""
    from ..kernels import ExpectedRBFKernel
    nb, q, e = enc.shape
    if q == 1:
        return gp.covar_module.forward(enc[:, 0], enc[:, 0], diag=True).reshape(nb, 1, 1)
    if isinstance(gp.kernel, ExpectedRBFKernel):
        return gp.covar_module.forward(enc, enc)
    i, j = torch.triu_indices(q, q, device=enc.device)
    vals = gp.covar_module.forward(enc[:, i].reshape(-1, e), enc[:, j].reshape(-1, e), diag=True).reshape(nb, -1)
    out = vals.new_zeros(nb, q, q)
    out[:, i, j] = vals
    out[:, j, i] = vals
    return out


class ExactPrediction(Prediction):
    """Cached :math:`L^{-1}` with :math:`LL^\\top = \\hat K + \\Lambda`, and :math:`\\alpha = (\\hat K + \\Lambda)^{-1}
    (\\mathbf y - m)`, in standardised units (paper Eqs. 11-13). A reading is added by growing :math:`L^{-1}` by one
    row, :math:`O(n^2)` (:meth:`grow`).

    Example:
        With noise 1e-4 the posterior at the readings is the readings (a 1-D GP, fixed hyperparameters):

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> from uncertain_bo.models import DistributionGP
        >>> gp = DistributionGP(torch.tensor([[0.0], [1.0]], dtype=torch.float64), priors=False, standardize=False)
        >>> gp.set_hyperparameters(lengthscale=0.3, noise=1e-4)
        >>> readings = Dirac(torch.tensor([[0.2], [0.6]], dtype=torch.float64))
        >>> gp.set_data(readings, torch.tensor([1.0, -1.0], dtype=torch.float64))
        >>> mean, var = gp.exact_prediction().marginals_of(gp, readings)      # an ExactPrediction
        >>> [round(v, 3) for v in mean.tolist()], bool((var < 2e-4).all())
        ([1.0, -1.0], True)
    """

    def __init__(self, enc: Tensor, linv: Tensor, mean: float):
        self.mean = mean
        n = linv.shape[0]
        # storage with room to grow (doubling), so a rank-one update writes one row instead of copying n x n
        self._linv = linv.new_zeros(max(n, 16), max(n, 16))
        self._linv[:n, :n] = linv
        self._enc = enc.new_zeros(max(n, 16), enc.shape[1])
        self._enc[:n] = enc
        self._n = n
        self.alpha = enc.new_zeros(n)
        #: how many times the training inputs were revised in place (:meth:`refactor_from`): what is derived from
        #: them and kept elsewhere (the fused marginals' training side) is stale when it changes
        self.revised = 0

    @property
    def linv(self) -> Tensor:
        """``(n, n)`` :math:`L^{-1}` (a view of the storage)."""
        return self._linv[:self._n, :self._n]

    @property
    def enc(self) -> Tensor:
        """``(n, D)`` encoded training inputs (a view of the storage)."""
        return self._enc[:self._n]

    @classmethod
    def build(cls, gp: 'DistributionGP') -> 'ExactPrediction':
        enc = gp.encode(gp.train_locations).detach()
        k = gp.covar_module.forward(enc, enc).detach()
        k = k + torch.diag(gp.noise_diagonal().to(k))
        chol = safe_cholesky(k)
        eye = torch.eye(k.shape[0], dtype=k.dtype, device=k.device)
        linv = torch.linalg.solve_triangular(chol, eye, upper=False)
        cache = cls(enc, linv, float(gp.mean_module.constant))
        cache.set_targets(gp._standardized_y())
        return cache

    def copy(self) -> 'ExactPrediction':
        """An independent copy (a conditioned model grows its own)."""
        out = ExactPrediction.__new__(ExactPrediction)
        out.mean, out._n, out.revised = self.mean, self._n, self.revised
        out._linv, out._enc, out.alpha = self._linv.clone(), self._enc.clone(), self.alpha.clone()
        return out

    def set_targets(self, y_std: Tensor) -> None:
        r = y_std - self.mean
        self.alpha = self.linv.T @ (self.linv @ r)

    def marginals_of(self, gp: 'DistributionGP', dists: 'LocationDistributions') -> tuple[Tensor, Tensor]:
        """As :meth:`Prediction.marginals_of`, by :func:`~uncertain_bo.models.fused_marginals.fused_marginals` where it
        applies (the expected SE kernel, candidates sharing one covariance: uGP-UCB's), with the same values."""
        from .fused_marginals import fused_marginals
        fused = fused_marginals(gp, self, dists)
        return self.marginals(gp, gp.encode(dists)) if fused is None else fused

    def factors(self, gp: 'DistributionGP', enc: Tensor) -> tuple[Tensor, Tensor, None]:
        """Posterior mean ``(N,)`` and the factor :math:`\\mathbf a` ``(N, n)`` at encoded inputs ``(N, D)``."""
        k_star = gp.covar_module.forward(enc, self.enc)     # (N, n)
        return self.mean + k_star @ self.alpha, k_star @ self.linv.T, None

    def solve(self, rhs: Tensor) -> Tensor:
        """:math:`(\\hat K + \\Lambda)^{-1}` ``rhs`` for ``rhs`` ``(n, k)``."""
        return self.linv.T @ (self.linv @ rhs)

    def log_det_ratio(self, gp: 'DistributionGP') -> float:
        r""":math:`\log|\hat K + \Lambda| - \log|\Lambda|` of the cached data."""
        return float(-2.0 * torch.log(torch.diagonal(self.linv)).sum() - torch.log(gp.noise_diagonal()).sum())

    def grow(self, gp: 'DistributionGP', enc_new: Tensor, known_noise: float = 0.0) -> None:
        r"""Append one point: :math:`L_{new}^{-1} = [[L^{-1}, 0], [-l^\top L^{-1}/d, 1/d]]`,
        :math:`l = L^{-1}k`, :math:`d = \sqrt{k_{**} + \lambda - l^\top l}`."""
        k = gp.covar_module.forward(enc_new, self.enc).reshape(-1)
        kss = (float(gp.covar_module.forward(enc_new, enc_new, diag=True)) + float(gp.likelihood.noise)
               + known_noise)
        linv = self.linv
        lvec = linv @ k
        d2 = kss - float(lvec @ lvec)
        d = math.sqrt(max(d2, 1e-10 * max(kss, 1e-12)))
        n = self._n
        if n + 1 > self._linv.shape[0]:
            cap = 2 * self._linv.shape[0]
            grown = self._linv.new_zeros(cap, cap)
            grown[:n, :n] = linv
            self._linv = grown
            enc = self._enc.new_zeros(cap, self._enc.shape[1])
            enc[:n] = self._enc[:n]
            self._enc = enc
        row = -(lvec @ self.linv) / d
        self._linv[n, :n] = row
        self._linv[n, n] = 1.0 / d
        self._enc[n] = enc_new.reshape(-1)
        self._n = n + 1

    def refactor_from(self, gp: 'DistributionGP', start: int) -> None:
        r"""Recompute rows ``start, ..., n - 1`` of :math:`L^{-1}` for the model's current training inputs (the inputs
        of rows ``>= start`` changed: revised locations) and the weights :math:`\alpha`; rows ``< start`` do not
        depend on them and stay. With :math:`L_{11}` the kept block, :math:`L_{21} = K_{21} L_{11}^{-\top}` and
        :math:`L_{22} L_{22}^\top = K_{22} + \Lambda_2 - L_{21} L_{21}^\top`,

        .. math::
            L^{-1} = \begin{bmatrix} L_{11}^{-1} & 0 \\ -L_{22}^{-1} L_{21} L_{11}^{-1} & L_{22}^{-1}
            \end{bmatrix}:

        the factor a fresh :meth:`build` would give, at :math:`O(s^2 k + k^3)` for ``s = start`` and ``k = n - s``."""
        enc = gp.encode(gp.train_locations).detach()
        n = self._n
        self._enc[:n] = enc
        tail, head = enc[start:], enc[:start]
        k22 = gp.covar_module.forward(tail, tail).detach()
        k22 = k22 + torch.diag(gp.noise_diagonal()[start:].to(k22))
        l11inv = self._linv[:start, :start]
        l21 = (gp.covar_module.forward(tail, head).detach() @ l11inv.T if start else   # K_21 L_11^{-T}
               tail.new_zeros(n - start, 0))
        l22 = safe_cholesky(k22 - l21 @ l21.T)
        eye = torch.eye(n - start, dtype=l22.dtype, device=l22.device)
        l22inv = torch.linalg.solve_triangular(l22, eye, upper=False)
        self._linv[start:n, :start] = -l22inv @ (l21 @ l11inv)
        self._linv[start:n, start:n] = l22inv
        self.revised += 1
        self.set_targets(gp._standardized_y())

    def add(self, gp: 'DistributionGP', enc: Tensor, known_noise: Tensor) -> None:
        """Append readings ``(k, D)`` one row at a time; ``known_noise`` ``(k,)`` beyond :math:`\\lambda`."""
        for i in range(enc.shape[0]):
            self.grow(gp, enc[i:i + 1], float(known_noise[i]))


class SparsePrediction(Prediction):
    r"""SGPR posterior (Titsias 2009; predictive = DTC, Quiñonero-Candela & Rasmussen 2005, Eqs. 20-21) with
    inducing inputs :math:`Z` (``m`` of the training inputs), heteroscedastic noise :math:`\Lambda`, in
    standardised units. With :math:`L_u L_u^\top = K_{uu}`, :math:`P = L_u^{-1} K_{uf} \Lambda^{-1/2}`,
    :math:`B = I + P P^\top = L_B L_B^\top`:

    .. math::
        \mu(x) = m + k_{xu} L_u^{-\top} L_B^{-\top} L_B^{-1} P \Lambda^{-1/2} (\mathbf y - m), \qquad
        C(x, x') = k_{xx'} - (L_u^{-1} k_{ux})^\top L_u^{-1} k_{ux'} + (L_B^{-1} L_u^{-1} k_{ux})^\top
        L_B^{-1} L_u^{-1} k_{ux'}.

    A new reading adds a column :math:`p` to :math:`P` (:math:`B \mathrel{+}= p p^\top`, :math:`O(m^2)`) and
    :math:`L_B` is refactored once per batch (:math:`O(m^3)`, :meth:`refresh`); hyperparameters are frozen inside.

    Example:
        Setting a model's ``inducing`` readings makes its posterior this one: with readings 0 and 2 inducing, reading 1
        (0.8 lengthscales from both) keeps part of its prior variance, which the exact posterior would remove:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> from uncertain_bo.models import DistributionGP
        >>> line = torch.tensor([[0.0], [0.25], [0.5]], dtype=torch.float64)
        >>> gp = DistributionGP(torch.tensor([[0.0], [1.0]], dtype=torch.float64), priors=False, standardize=False)
        >>> gp.set_data(Dirac(line), torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
        >>> gp.set_hyperparameters(lengthscale=0.3, noise=1e-4)
        >>> gp.inducing = torch.tensor([0, 2])
        >>> [round(v, 2) for v in gp.marginals(line)[1].tolist()]                # variances
        [0.0, 0.14, 0.0]
    """

    def __init__(self, z_enc: Tensor, lu: Tensor, mean: float):
        self.z_enc, self.mean = z_enc, mean
        m = lu.shape[0]
        eye = torch.eye(m, dtype=lu.dtype, device=lu.device)
        self.lu_inv = torch.linalg.solve_triangular(lu, eye, upper=False)       # L_u^{-1}
        self._p = lu.new_zeros(m, 16)      # columns of P (with room to grow)
        self._scale = lu.new_zeros(16)     # Λ^{-1/2} per reading
        self._n = 0
        self.b = eye.clone()               # B = I + P Pᵀ

    @classmethod
    def build(cls, gp: 'DistributionGP', inducing: Tensor) -> 'SparsePrediction':
        enc = gp.encode(gp.train_locations).detach()
        z = enc[inducing]
        kuu = gp.covar_module.forward(z, z).detach()
        lu = safe_cholesky(kuu)
        cache = cls(z, lu, float(gp.mean_module.constant))
        cache._add(gp, enc, gp.noise_diagonal().to(enc))
        cache.set_targets(gp._standardized_y())
        return cache

    def copy(self) -> 'SparsePrediction':
        """An independent copy (a conditioned model grows its own)."""
        out = SparsePrediction.__new__(SparsePrediction)
        out.z_enc, out.mean, out.lu_inv, out._n = self.z_enc, self.mean, self.lu_inv, self._n
        out._p, out._scale, out.b = self._p.clone(), self._scale.clone(), self.b.clone()
        out._lb, out.lb_lu_inv, out.alpha = self._lb, self.lb_lu_inv, self.alpha
        return out

    @property
    def p(self) -> Tensor:
        return self._p[:, :self._n]

    def add(self, gp: 'DistributionGP', enc: Tensor, known_noise: Tensor) -> None:
        """Add readings with encodings ``(k, D)`` and noise variances :math:`\\lambda` + ``known_noise``
        (``(k,)``, standardised units); one refactorisation for the batch."""
        self._add(gp, enc, float(gp.likelihood.noise) + known_noise)

    def _add(self, gp: 'DistributionGP', enc: Tensor, noise: Tensor) -> None:
        k = enc.shape[0]
        if self._n + k > self._p.shape[1]:
            cap = max(2 * self._p.shape[1], self._n + k)
            grown = self._p.new_zeros(self._p.shape[0], cap)
            grown[:, :self._n] = self.p
            scale = self._scale.new_zeros(cap)
            scale[:self._n] = self._scale[:self._n]
            self._p, self._scale = grown, scale
        s = noise.rsqrt()
        cols = (self.lu_inv @ gp.covar_module.forward(self.z_enc, enc).detach()) * s   # (m, k)
        self._p[:, self._n:self._n + k] = cols
        self._scale[self._n:self._n + k] = s
        self._n += k
        self.b = self.b + cols @ cols.T
        self.refresh()

    def refresh(self) -> None:
        lb = safe_cholesky(self.b)
        self.lb_lu_inv = torch.linalg.solve_triangular(lb, self.lu_inv, upper=False)   # L_B^{-1} L_u^{-1}
        self._lb = lb

    def set_targets(self, y_std: Tensor) -> None:
        r = (y_std - self.mean) * self._scale[:self._n]
        c = torch.linalg.solve_triangular(self._lb, (self.p @ r).unsqueeze(-1), upper=False)   # L_B^{-1} P Λ^{-1/2} r
        self.alpha = (self.lb_lu_inv.T @ c).reshape(-1)          # weights of k_{xu} in the mean

    def factors(self, gp: 'DistributionGP', enc: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Posterior mean ``(N,)`` and the factors :math:`\\mathbf a, \\mathbf b` ``(N, m)`` at encoded inputs
        ``(N, D)``."""
        k_xu = gp.covar_module.forward(enc, self.z_enc)                     # (N, m)
        return self.mean + k_xu @ self.alpha, k_xu @ self.lu_inv.T, k_xu @ self.lb_lu_inv.T

    def log_det_ratio(self, gp: 'DistributionGP') -> float:
        r""":math:`\log|Q_{ff} + \Lambda| - \log|\Lambda| = \log|B|` (Nyström :math:`Q_{ff}`)."""
        return float(2.0 * torch.log(torch.diagonal(self._lb)).sum())

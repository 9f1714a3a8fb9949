r"""AIRBO's MMD kernel over distributions (Yang et al. 2023, Eqs. 8, 9, 12): empirical and Nyström
estimators of the squared maximum mean discrepancy between sample sets.
"""
from __future__ import annotations

import weakref

import torch
from gpytorch.kernels import Kernel
from torch import Tensor

from .additive_rq import AdditiveRQKernel
from .distribution_kernel import SampleDistributionKernel
from .kernel_mean_embedding import (_chunks, embedding_inner_products, embedding_paired_inner_products,
                                    embedding_self_inner_products)

__all__ = ['MMDKernel', 'MMD_MAX_BLOCK', 'FUSED_MIN_WORK']

FUSED_MIN_WORK = 1 << 25
"""With ``fused='auto'``, the smallest cross term (sample pairs ``n1 h1 n2 h2``) computed by the fused CPU
kernel; smaller ones (every BO step of the benchmarks, the tests) stay eager and never pay for compiling."""

MMD_MAX_BLOCK = 1 << 16
"""Default CPU ``max_block`` of :class:`MMDKernel`: with the additive-RQ base kernel (four scratch blocks)
2^16 entries keep the working set in the 2 MiB per-core L2 cache; AIRBO's Table-1 posterior (Nyström
m = 1000, h = 100, one thread, shared 2-core machine) ran about 1.5x faster than with 2^18."""


class MMDKernel(SampleDistributionKernel):
    r"""MMD kernel over distributions, AIRBO's surrogate kernel (Yang et al. 2023, Eqs. 8, 9, 12).

    .. math::
        \hat k(P, Q) = \exp\!\big(-\mathrm{MMD}^2(P, Q) / (2\ell^2)\big)

    (the reference code's form; paper Eq. 9 with :math:`\alpha = 1/(2\ell^2)`; wrap in ``ScaleKernel`` for
    the output scale :math:`s`). :math:`\ell` is a single learnable lengthscale in MMD units. The base
    kernel :math:`k` inside the MMD defaults to :class:`AdditiveRQKernel` (Eq. 32).

    **Estimators** of :math:`\mathrm{MMD}^2` from samples :math:`\{\mathbf u_i\}_{i=1}^{m_1} \sim P` (weights
    :math:`w`) and :math:`\{\mathbf v_j\}_{j=1}^{m_2} \sim Q` (weights :math:`z`):

    - ``'empirical'``: Eq. 8. With ``unbiased=True`` (default) the U-statistic
      :math:`\hat U_P + \hat U_Q - 2\sum_{ij} w_i z_j k(\mathbf u_i, \mathbf v_j)`, with the weighted
      within-sample term :math:`\hat U_P = (\sum_{i \ne j} w_i w_j k(\mathbf u_i, \mathbf u_j)) / (1 -
      \sum_i w_i^2)` (:math:`= \frac{1}{m(m-1)}\sum_{i \ne j}` for uniform weights; a single-sample input,
      e.g. a Dirac, uses its exact value). It can be negative. ``unbiased=False`` is the V-statistic
      (diagonal terms kept), :math:`\|\hat\mu_P - \hat\mu_Q\|^2 \ge 0`.
    - ``'nystrom'``: Eq. 12 in its exact implementable form (Chatalic et al. 2022): ``h =
      n_landmarks`` landmarks :math:`\tilde U` per distribution,
      :math:`a_P = (K(\tilde U, \tilde U) + \lambda I)^{-1} K(\tilde U, U)\,\mathbf w`, and
      :math:`\mathrm{MMD}^2 = a_P^\top K(\tilde U, \tilde U) a_P + a_Q^\top K(\tilde V, \tilde V) a_Q - 2\,
      a_P^\top K(\tilde U, \tilde V) a_Q`. :math:`a_P` costs :math:`O(mh + h^3)` once per distribution,
      each pair :math:`O(h^2)`. The jitter :math:`\lambda` (``jitter`` x mean diagonal) replaces the
      reference code's ``pinv`` (same limit, differentiable and stable for clustered samples). With
      ``h >= m`` it equals the V-statistic up to the jitter.

    **Determinism and PSD.** Landmark indices are drawn once per sample count ``m`` from
    ``landmark_seed`` (the same indices for every distribution, as in the reference code) and kept until
    :meth:`resample_landmarks`; with fixed base samples of the execution-noise model the kernel is a
    deterministic function of the targets. The V-statistic and Nyström estimates are squared RKHS
    distances between (approximate) mean embeddings, so :math:`\hat k` is positive semi-definite; the
    U-statistic differs from the V-statistic by per-distribution constants :math:`c_P + c_Q`, which makes
    :math:`\hat K_U = \mathrm{diag}(f) \hat K_V \mathrm{diag}(f)` (:math:`f_P = e^{-c_P/(2\ell^2)}`), also
    PSD when the diagonal uses the same estimator (it does here; :math:`\hat k_U(P, P) \ge 1`). The
    estimated distance matrix of a set with itself is symmetrised, :math:`D \leftarrow (D + D^\top)/2`.

    Args:
        dim: input dimension ``d``.
        estimator: ``'nystrom'`` or ``'empirical'``.
        n_landmarks: Nyström sub-sample size ``h`` (``min(h, m)`` is used).
        base_kernel: a GPyTorch kernel on points accepting batch dimensions (default
            :class:`AdditiveRQKernel`).
        unbiased: U-statistic (True) or V-statistic for ``'empirical'``.
        landmark_seed: seed of the landmark indices.
        jitter: relative ridge added to :math:`K(\tilde U, \tilde U)` (Nyström).
        fused: compute the cross term :math:`\langle\tilde\mu_P, \tilde\mu_Q\rangle` of large no-autograd CPU
            kernel matrices with the compiled fused loop of
            :meth:`AdditiveRQKernel.fused_embedding_inner_products` (``True``: whenever possible, ``'auto'``:
            from ``FUSED_MIN_WORK`` sample pairs on, ``False``: never). Same values to rounding.
        **kwargs: :class:`SampleDistributionKernel` arguments (``n_samples``, ``seed``, ``max_samples``,
            ``max_block``) and GPyTorch ``Kernel`` arguments (``lengthscale_prior``,
            ``lengthscale_constraint``).

    Raises:
        ValueError: unknown estimator, ``n_landmarks < 1``, ``fused`` not True, False or ``'auto'``.
        TypeError: (on evaluation) the Nyström estimator on samples that are not float64. The empirical
            estimator evaluates in the samples' dtype.

    Example:
        Two Gaussians 0.3 apart are less similar than each is to itself (the U-statistic's diagonal exceeds 1):

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> from uncertain_bo.kernels import MMDKernel
        >>> kernel = MMDKernel(2, estimator='empirical', n_samples=32)
        >>> P = Gaussian(torch.tensor([[0.2, 0.2], [0.5, 0.2]], dtype=torch.float64),
        ...              0.01 * torch.eye(2, dtype=torch.float64).expand(2, 2, 2))
        >>> encoded = kernel.encode(P)
        >>> kernel.forward(encoded, encoded).detach().numpy().round(4)
        array([[1.0064, 0.6714],
                [0.6714, 1.0064]])
    """

    has_lengthscale = True
    _ard_lengthscale = False
    cpu_max_block = MMD_MAX_BLOCK

    def __init__(self, dim: int, estimator: str = 'nystrom', n_landmarks: int = 100,
                 base_kernel: Kernel | None = None, *, unbiased: bool = True, landmark_seed: int = 0,
                 jitter: float = 1e-10, fused: bool | str = 'auto', **kwargs):
        if estimator not in ('nystrom', 'empirical'):
            raise ValueError(f"estimator must be 'nystrom' or 'empirical', got {estimator!r}")
        if int(n_landmarks) < 1:
            raise ValueError(f'n_landmarks must be >= 1, got {n_landmarks}')
        super().__init__(dim, **kwargs)
        self.estimator, self.n_landmarks, self.unbiased = estimator, int(n_landmarks), bool(unbiased)
        self.landmark_seed, self.jitter = int(landmark_seed), float(jitter)
        if fused not in (True, False, 'auto'):
            raise ValueError(f"fused must be True, False or 'auto', got {fused!r}")
        self.fused = fused
        self.base_kernel = base_kernel if base_kernel is not None else AdditiveRQKernel()
        self._landmarks: dict[tuple[int, torch.device], Tensor] = {}
        self._memo: list[tuple[weakref.ref, tuple, tuple[Tensor, ...]]] = []

    # --------------------------------------------------------------- landmarks
    def landmark_indices(self, m: int, device: torch.device | str | None = None) -> Tensor:
        """Indices of the ``min(h, m)`` landmarks among ``m`` samples (fixed until :meth:`resample_landmarks`),
        on ``device`` (default CPU).

        The permutation is drawn once per ``m`` from ``landmark_seed`` with a CPU generator, so every device
        uses the same landmarks (a CUDA posterior equals the CPU one); the index tensor is copied to each
        device once and kept, so indexing the samples happens on their device.
        """
        device = torch.device('cpu') if device is None else torch.device(device)
        key = (m, device)
        if key not in self._landmarks:
            cpu = self._landmarks.get((m, torch.device('cpu')))
            if cpu is None:
                gen = torch.Generator().manual_seed(self.landmark_seed * 1_000_003 + m)
                cpu = torch.randperm(m, generator=gen)[:min(self.n_landmarks, m)].sort().values
                self._landmarks[(m, torch.device('cpu'))] = cpu
            self._landmarks[key] = cpu.to(device)
        return self._landmarks[key]

    def resample_landmarks(self, seed: int | None = None) -> None:
        """Draw new landmark indices (from ``seed``, or ``landmark_seed + 1``)."""
        self.landmark_seed = self.landmark_seed + 1 if seed is None else int(seed)
        self._landmarks = {}

    # --------------------------------------------------------------- estimator pieces
    def _base(self, a: Tensor, b: Tensor) -> Tensor:
        return self.base_kernel.forward(a, b)

    def embed(self, samples: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        r"""Per-distribution embedding used by the estimator.

        Args:
            samples: ``(n, m, d)``; weights: ``(n, m)``.

        Returns:
            ``(points (n, h, d), coefficients (n, h), self_term (n,))`` with the embedding
            :math:`\sum_j c_j \phi(\mathbf p_j)` and the within-distribution term of the estimator
            (:math:`\|\tilde\mu_P\|^2` for Nyström and the V-statistic, :math:`\hat U_P` for the U-statistic).
        """
        return self._embed_full(samples, weights)[:3]

    def _embed_full(self, samples: Tensor, weights: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        r""":meth:`embed` plus :math:`\langle\tilde\mu_P, \tilde\mu_P\rangle` as the cross term computes it
        (the V-statistic for ``'empirical'``, ``self_term`` for Nyström): the diagonal of ``mmd2(x, x)``."""
        n, m, d = samples.shape
        if self.estimator == 'empirical':
            v_self = embedding_self_inner_products(samples, weights, self._base, self.block_size(samples))
            if not self.unbiased:
                return samples, weights, v_self, v_self
            w2 = weights.pow(2)
            s2 = w2.sum(-1)
            k_diag = self.base_kernel.forward(samples, samples, diag=True)  # (n, m)
            u_self = (v_self - (w2 * k_diag).sum(-1)) / (1.0 - s2).clamp_min(1e-300)
            return samples, weights, torch.where(s2 < 1.0 - 1e-12, u_self, v_self), v_self
        if samples.dtype != torch.float64:
            raise TypeError(f'the Nyström estimator needs float64 samples, got {samples.dtype}: its ridge '
                            f'(jitter {self.jitter:g} x the mean diagonal) is below the precision of '
                            f'{samples.dtype}, where the landmark solve loses most digits')
        idx = self.landmark_indices(m, samples.device)
        h = idx.numel()
        marks = samples[:, idx]  # (n, h, d)
        eye = torch.eye(h, dtype=samples.dtype, device=samples.device)
        # K(Ũ, U) w: the O(n h m) part; fused on large no-autograd CPU batches (see _fused_cross)
        kw = self._fused_weighted_sums(marks, samples, weights)  # (n, h) or None
        coefs, selfs = [], []
        for i0, i1 in _chunks(n, self.block_size(samples) // max(1, h * (h + (m if kw is None else 0)))):
            k_hh = self._base(marks[i0:i1], marks[i0:i1])  # (c, h, h)
            if kw is None:
                rhs = self._base(marks[i0:i1], samples[i0:i1]) @ weights[i0:i1].unsqueeze(-1)  # (c, h, 1)
            else:
                rhs = kw[i0:i1].unsqueeze(-1)
            ridge = self.jitter * k_hh.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-300)
            chol, info = torch.linalg.cholesky_ex(k_hh + ridge[:, None, None] * eye)
            if bool((info > 0).any()):  # pragma: no cover - extreme conditioning; ridge x 1e4
                chol = torch.linalg.cholesky(k_hh + 1e4 * ridge[:, None, None] * eye)
            a = torch.cholesky_solve(rhs, chol)  # (c, h, 1)
            coefs.append(a.squeeze(-1))
            selfs.append((a.transpose(-1, -2) @ k_hh @ a).reshape(-1))
        selfs = torch.cat(selfs)
        return marks, torch.cat(coefs), selfs, selfs

    def _memo_key(self, x: Tensor) -> tuple:
        params = tuple(tuple(p.detach().reshape(-1).tolist()) for p in self.base_kernel.parameters())
        return (x._version, tuple(x.shape), x.dtype, x.device, self.estimator, self.unbiased, self.n_landmarks,
                self.landmark_seed, self.jitter, self.max_block, self.fused, id(self.base_kernel), params)

    def _embedding(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """:meth:`_embed_full` of an encoded batch, memoised without autograd.

        Under ``torch.no_grad()`` the embeddings of the last few encoded tensors are kept (keyed by the tensor
        object, its in-place version counter and the base kernel's parameter values, landmarks and
        estimator settings), so a GP posterior embeds its training set once per cache and each test batch
        once for the cross-covariances and the prior variances. With autograd on nothing is kept.
        """
        if torch.is_grad_enabled():
            return self._embed_full(*self.decode(x))
        key = self._memo_key(x)
        self._memo = [e for e in self._memo if e[0]() is not None]
        for ref, k, emb in self._memo:
            if ref() is x and k == key:
                return emb
        emb = self._embed_full(*self.decode(x))
        self._memo = (self._memo + [(weakref.ref(x), key, emb)])[-4:]
        return emb

    def mmd2(self, x1: Tensor, x2: Tensor, diag: bool = False) -> Tensor:
        """Estimated :math:`\\mathrm{MMD}^2` between encoded batches: ``(n1, n2)`` (or ``(n,)`` with ``diag``)."""
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        e1 = self._embedding(x1)
        e2 = e1 if same else self._embedding(x2)
        (p1, c1, s1, v1), (p2, c2, s2, _) = e1, e2
        if diag:
            # a batch against itself: the cross term <mu_P, mu_P> is already known from the embedding
            cross = v1 if same else embedding_paired_inner_products(p1, c1, p2, c2, self._base, self.block_size(p1))
            dist = s1 + s2 - 2.0 * cross
        else:
            cross = self._fused_cross(p1, c1, p2, c2)
            if cross is None:
                cross = embedding_inner_products(p1, c1, p2, c2, self._base, self.block_size(p1),
                                                 symmetric=same)
            dist = s1.unsqueeze(-1) + s2.unsqueeze(-2) - 2.0 * cross
            if same:
                dist = 0.5 * (dist + dist.transpose(-1, -2))
        if self.estimator == 'nystrom' or not self.unbiased:
            dist = dist.clamp_min(0.0)  # squared RKHS distances; negative only by rounding
        return dist

    def _fuse(self, ref: Tensor, work: int) -> bool:
        """Whether to use the fused CPU loops of :class:`AdditiveRQKernel` for ``work`` sample pairs: CPU
        tensors, no autograd, an additive-RQ base kernel, and ``fused`` True (or ``'auto'`` and ``work >=
        FUSED_MIN_WORK``)."""
        if (self.fused is False or torch.is_grad_enabled() or ref.device.type != 'cpu'
                or not isinstance(self.base_kernel, AdditiveRQKernel)):
            return False
        return self.fused is True or work >= FUSED_MIN_WORK

    def _fused_cross(self, p1: Tensor, c1: Tensor, p2: Tensor, c2: Tensor) -> Tensor | None:
        """The cross term by :meth:`AdditiveRQKernel.fused_embedding_inner_products` where :meth:`_fuse`
        allows it, else None."""
        if not self._fuse(p1, p1.shape[0] * p1.shape[1] * p2.shape[0] * p2.shape[1]):
            return None
        return self.base_kernel.fused_embedding_inner_products(p1, c1, p2, c2)

    def _fused_weighted_sums(self, marks: Tensor, samples: Tensor, weights: Tensor) -> Tensor | None:
        """:math:`K(\\tilde U, U)\\,\\mathbf w` per distribution by :meth:`AdditiveRQKernel.fused_weighted_sums`
        where :meth:`_fuse` allows it, else None."""
        if not self._fuse(samples, marks.shape[0] * marks.shape[1] * samples.shape[1]):
            return None
        return self.base_kernel.fused_weighted_sums(marks, samples, weights)

    def _forward_2d(self, x1, x2, diag):
        ell2 = self.lengthscale.reshape(()).to(x1.dtype).pow(2)
        return torch.exp(-self.mmd2(x1, x2, diag) / (2.0 * ell2))

r"""MTBO (Swersky, Snoek & Adams 2013, "Multi-task Bayesian optimization"), the cross-validation baseline of DRBQO
(Nguyen et al. 2020): the quadrature EI of :mod:`~uncertain_bo.acquisition.quadrature` on a multi-task GP whose
kernel is :class:`ICMKernel` (SE over :math:`\mathbf x` times a task correlation matrix over one-hot tasks), the task
of each query chosen by single-task EI.
"""
from __future__ import annotations

import logging
import math
from typing import Any

import torch
from botorch.acquisition.analytic import ExpectedImprovement
from botorch.exceptions.warnings import NumericsWarning
from torch import Tensor

from ..caught_warnings import logged_warnings
from ..distributions import Dirac, Empirical, Gaussian, LocationDistributions
from ..kernels import DistributionKernel, se_kernel
from .base import incumbent
from .method import DecisionContext, register
from .quadrature import EIQuadrature, joint_points

__all__ = ['ICMKernel', 'MTBO']

log = logging.getLogger(__name__)


class ICMKernel(DistributionKernel):
    """Intrinsic coregionalisation kernel :math:`k((\\mathbf x, t), (\\mathbf x', t')) = k_{SE}(\\mathbf x,
    \\mathbf x') C_{tt'}` (Swersky et al. 2013, MTBO) on points whose last ``n_tasks`` coordinates one-hot encode
    the task; the signal variance is the model's (one for every task).

    :math:`C` is a task **correlation** matrix (unit diagonal) with non-negative entries:
    :math:`C = D^{-1/2} B D^{-1/2}`, :math:`D = \\operatorname{diag}(B)`, for BoTorch's
    :class:`~botorch.models.kernels.positive_index.PositiveIndexKernel` :math:`B = LL^\\top +
    \\operatorname{diag}(\\boldsymbol\\kappa)` (rank ``rank``, :math:`L \\ge 0`) with the prior BoTorch's
    ``MultiTaskGP`` puts on the correlations, Beta(2.5, 1.5). The tasks of the cross-validation problems (folds)
    are exchangeable and share one output scale; with a free per-task variance :math:`B_{tt}` (a plain
    ``IndexKernel``) the marginal likelihood cannot tell it from the signal variance, the fit drives some
    :math:`B_{tt}` to 0 and others to ~100 times the rest, and a reading on one task then moves the
    prediction on another by :math:`B_{t't}/B_{tt}`, far beyond the data's range.

    Encoding: the (unit-cube) point; distributions are reduced to their means. Lengthscales: the first
    ``dim - n_tasks`` entries (ARD over :math:`\\mathbf x`); the task part is :math:`C`. The task parameters start
    deterministically at correlation 0.5 between every pair of tasks.

    Args:
        dim: dimension of the joint space.
        n_tasks: number of tasks (one-hot coordinates).
        rank: rank of :math:`L` (default 1: on synthetic multi-task problems with one task observed often and
            the others once or twice, as the folds in a run, it predicted at least as well as full rank).

    Raises:
        ValueError: no task, or no coordinate of :math:`\\mathbf x` left beside the ``n_tasks`` one-hot ones.

    Example:
        Two tasks over a 1-D input (3 joint coordinates: x and the one-hot task); every correlation starts at 0.5:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> kernel = ICMKernel(dim=3, n_tasks=2)
        >>> kernel.correlation()
        tensor([[1.0000, 0.5000],
                [0.5000, 1.0000]], ...)
        >>> points = Dirac(torch.tensor([[0.2, 1.0, 0.0], [0.2, 0.0, 1.0]], dtype=torch.float64))
        >>> kernel(kernel.encode(points)).to_dense()                    # same x, other task: C_12
        tensor([[1.0000, 0.5000],
                [0.5000, 1.0000]], ...)
    """

    has_lengthscale = True

    def __init__(self, dim: int, n_tasks: int, rank: int | None = None, **kwargs):
        from botorch.models.kernels.positive_index import PositiveIndexKernel
        from botorch.models.utils.priors import BetaPrior

        if not 1 <= n_tasks < dim:
            raise ValueError(f'ICMKernel needs 1 <= n_tasks < dim (one-hot tasks after the inputs), got n_tasks = '
                             f'{n_tasks}, dim = {dim}')
        super().__init__(dim, **kwargs)
        self.n_tasks = n_tasks
        rank = 1 if rank is None else rank
        self.task = PositiveIndexKernel(num_tasks=n_tasks, rank=rank, task_prior=BetaPrior(2.5, 1.5),
                                        unit_scale_for_target=False)
        with torch.no_grad():   # B = 0.5 (11ᵀ/r) + 0.5 I: every correlation 0.5
            like = self.task.raw_covar_factor
            self.task.covar_factor = torch.full_like(like, math.sqrt(0.5 / rank))
            self.task.var = torch.full_like(self.task.raw_var, 0.5)

    def correlation(self) -> Tensor:
        """The task correlation matrix :math:`C` ``(n_tasks, n_tasks)``."""
        b = self.task.covar_matrix
        b = b.to_dense() if hasattr(b, 'to_dense') else b
        s = b.diagonal(dim1=-2, dim2=-1).clamp_min(1e-12).rsqrt()
        return b * s.unsqueeze(-1) * s.unsqueeze(-2)

    def encode(self, distributions: LocationDistributions) -> Tensor:
        self.check_dim(distributions)
        if not isinstance(distributions, (Dirac, Gaussian, Empirical)):  # pragma: no cover - future types
            raise TypeError(f'unsupported distribution type {type(distributions).__name__}')
        return distributions.mean

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False, **params) -> Tensor:
        d = self.dim - self.n_tasks
        ell = self.lengthscale.to(x1)[..., :d]
        a, b = x1[..., :d] / ell, x2[..., :d] / ell
        t1, t2 = x1[..., d:].argmax(-1), x2[..., d:].argmax(-1)
        C = self.correlation().to(x1)
        if diag:
            return se_kernel(a, b, diag=True) * C[t1, t2]
        return se_kernel(a, b) * C[t1.unsqueeze(-1), t2.unsqueeze(-2)]


@register
class MTBO(EIQuadrature):
    """MTBO: multi-task GP (ICM kernel: SE over x times a task correlation matrix over one-hot tasks), EI on the mean
    over tasks, task by single-task EI (Swersky et al. 2013; a baseline of Nguyen et al. 2020 for cross-
    validation).

    Example:
        MTBO's first decision on an SVM's 5-fold cross-validation (DRBQO's benchmark), two hyperparameters and a fold
        (the method examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('drbqo-cv-svm-wine').planner('mtbo', measurements=4,
        ...                                                    settings=BenchSettings.quick(beta=2.0))
        >>> target = planner.targets[-1]                      # (x, fold): the fold one-hot
        >>> planner.decisions[-1].phase, target.shape, target[2:].tolist().count(1.0)
        ('acquisition', torch.Size([7]), 1)
        >>> MTBO(contexts=torch.rand(10, 2))
        Traceback (most recent call last):
        ...
        TypeError: method 'mtbo' needs the tasks as one-hot contexts (n, n) ..., got (10, 2) samples that are not
    """

    name = 'mtbo'
    description = ('MTBO: multi-task GP (ICM kernel: SE over x times a task correlation matrix over one-hot tasks), '
                   'EI on the mean over tasks, task by single-task EI (Swersky et al. 2013; a baseline of Nguyen et '
                   'al. 2020 for cross-validation)')
    robust_recommendation = False

    def __init__(self, **settings: Any):
        super().__init__(**settings)
        c = self.contexts
        if not (c.shape[0] == c.shape[1] and bool(((c == 0) | (c == 1)).all())
                and torch.equal(c.sum(0), torch.ones_like(c[0])) and torch.equal(c.sum(1), torch.ones_like(c[0]))):
            raise TypeError(f'method {self.name!r} needs the tasks as one-hot contexts (n, n) (the cross-validation '
                            f'problems\' folds), got {tuple(c.shape)} samples that are not')

    def kernel(self, dim: int) -> DistributionKernel:
        from gpytorch.priors import GammaPrior
        return ICMKernel(dim, self.contexts.shape[0], lengthscale_prior=GammaPrior(3.0, 6.0))

    def choose_context(self, ctx: DecisionContext, x: Tensor) -> int:
        return int(torch.argmax(self.context_scores(ctx, x)))

    def context_scores(self, ctx: DecisionContext, x: Tensor) -> Tensor:
        """``(C,)`` the single-task EI of ``x`` ``(d,)`` joined with each of the ``C`` contexts, over the best reading
        plus :math:`\\xi` (one tenth of the readings' range): the context MTBO queries is the largest."""
        contexts = self._contexts(ctx.bounds)
        y = ctx.y
        xi = 0.1 * (y.max() - y.min()) if y.numel() > 1 else 0.0
        model = ctx.model
        with torch.no_grad():
            points = joint_points(x.reshape(1, -1).to(contexts), contexts)[0]
            with logged_warnings(log, NumericsWarning):
                return ExpectedImprovement(model, best_f=incumbent(y.max() + xi, points))(points.unsqueeze(-2))

"""Base class of our acquisition functions over candidate targets (the methods' own; BoTorch's are used as they are
wherever BoTorch has them).

An acquisition maps candidate **targets** ``x`` to a score; it sees the GP only through the candidates'
location distributions (the execution-noise model :math:`\\hat P_{\\mathbf x}` for robust methods, Dirac
points for standard ones). Subclasses are BoTorch ``AcquisitionFunction`` s over the shared model (a BoTorch
``Model``), so BoTorch's ``optimize_acqf`` (multi-start L-BFGS-B in the bounds) maximises them, jointly over a
batch or one target at a time with pending ones (``set_X_pending``).
"""
from __future__ import annotations

from typing import Callable

import torch
from botorch.acquisition import AcquisitionFunction
from botorch.utils.transforms import t_batch_mode_transform
from torch import Tensor

from ..distributions import DTYPE, LocationDistributions
from ..models import DistributionGP

__all__ = ['TargetAcquisition', 'incumbent']


def incumbent(best: Tensor | float, like: Tensor | None = None) -> Tensor:
    """The incumbent :math:`\\tau` as a 0-dim tensor of ``like``'s dtype and device (default ``best``'s if a tensor,
    else float64 on the CPU), for BoTorch's ``best_f``.

    BoTorch stores ``best_f`` with ``torch.as_tensor``, which makes a Python float a float32 tensor: on a field of
    101 325 Pa varying by ±0.05 the incumbent then moves by up to 4 mPa, and EI by 2.5 % of its maximum.
    """
    if like is None:
        like = best if isinstance(best, Tensor) else torch.zeros((), dtype=DTYPE)
    return torch.as_tensor(best, dtype=like.dtype, device=like.device).detach().reshape(())


class TargetAcquisition(AcquisitionFunction):
    r"""Acquisition over candidate targets, evaluated through their location distributions.

    Pending targets (``X_pending``, BoTorch's convention: other rovers' targets, earlier picks of a batch) enter as
    hallucinated readings at their candidate distributions with the posterior mean as value (the kriging believer;
    GP-BUCB, Desautels et al. 2014): :attr:`scoring_model` is the model conditioned on them, whose mean is the
    model's and whose variance is smaller near them.

    Args:
        model: the fitted :class:`~uncertain_bo.models.DistributionGP`.
        candidates: maps targets ``(q, d)`` to their location distributions (e.g. the execution-noise
            model); must be differentiable w.r.t. the targets.
        X_pending: ``(p, d)`` pending targets, or None.

    Example:
        The robust posterior mean :math:`\hat\mu(\hat P_{\mathbf x})` as an acquisition (a subclass gives
        :meth:`score`), maximised by BoTorch's ``optimize_acqf``:

        >>> import torch
        >>> from botorch.optim import optimize_acqf
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP
        >>> class RobustMean(TargetAcquisition):
        ...     def score(self, targets):
        ...         return self.marginals(self.candidates(targets))[0]
        >>> bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
        >>> gp = DistributionGP(bounds)
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> gp.set_data(Dirac(X), (3 * X).sin().sum(-1))
        >>> acq = RobustMean(gp, GaussianExecutionNoise.isotropic(0.1, 2))
        >>> target, value = optimize_acqf(acq, bounds, q=1, num_restarts=2, raw_samples=16)
        >>> target.shape, bool(torch.allclose(value, acq(target)))
        (torch.Size([1, 2]), True)
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions],
                 X_pending: Tensor | None = None):
        super().__init__(model=model)
        self.candidates = candidates
        self.set_X_pending(X_pending)

    def set_X_pending(self, X_pending: Tensor | None = None) -> None:
        """Set (or clear, with None) the pending targets ``(p, d)``; rebuilds :attr:`scoring_model`."""
        if X_pending is None or len(X_pending) == 0:
            self.X_pending = None
            self.scoring_model = self.model
            return
        self.X_pending = X_pending.detach().reshape(-1, X_pending.shape[-1])
        with torch.no_grad():
            self.scoring_model = self.model.hallucinate(self.candidates(self.X_pending))

    def marginals(self, distributions: LocationDistributions) -> tuple[Tensor, Tensor]:
        """Posterior mean and variance ``(N,)`` at ``N`` distributions on :attr:`scoring_model`: the shared model's
        :meth:`~uncertain_bo.models.DistributionGP.marginals`, or any BoTorch model's posterior (a mock model in the
        unit tests)."""
        model = self.scoring_model
        if isinstance(model, DistributionGP):
            return model.marginals(distributions)
        post = model.posterior(distributions)
        return post.mean.reshape(-1), post.variance.reshape(-1)

    @t_batch_mode_transform()
    def forward(self, X: Tensor) -> Tensor:
        """Scores of ``X`` ``batch x q x d`` (``q x d``: one batch) -> ``batch``: :meth:`score` for ``q = 1``,
        :meth:`joint_score` for a batch."""
        if X.shape[-2] == 1:
            flat = X.reshape(-1, X.shape[-1])
            return self.score(flat).reshape(X.shape[:-2])
        return self.joint_score(X)

    def score(self, targets: Tensor) -> Tensor:
        """Scores of ``targets`` with shape ``(N, d)`` -> ``(N,)`` (one target each)."""
        raise NotImplementedError

    def joint_score(self, X: Tensor) -> Tensor:
        """Value of each batch ``X`` ``batch x q x d`` -> ``batch``.

        Raises:
            NotImplementedError: the acquisition scores one target at a time (a method then decides a batch
                greedily, each pick with the earlier ones pending: :meth:`~uncertain_bo.acquisition.Method.decide`).
        """
        raise NotImplementedError(f'{type(self).__name__} scores one target at a time (q = 1); decide a batch '
                                  f'greedily with pending targets instead, got q = {X.shape[-2]}')

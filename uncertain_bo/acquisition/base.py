"""Base class of acquisition functions over candidate targets.

An acquisition maps candidate **targets** ``x`` to a score; it sees the GP only through the candidates'
location distributions (the execution-noise model :math:`\\hat P_{\\mathbf x}` for robust methods, Dirac
points for standard ones). Subclasses are BoTorch ``AcquisitionFunction`` s, so BoTorch's
``optimize_acqf`` (multi-start L-BFGS-B in the bounds) maximises them.
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Callable


from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP

__all__ = ['TargetAcquisition']


class TargetAcquisition(AcquisitionFunction):
    """Acquisition over candidate targets, evaluated through their location distributions.

    Args:
        model: the fitted :class:`~uncertain_bo.models.DistributionGP`.
        candidates: maps targets ``(q, d)`` to their location distributions (e.g. the execution-noise
            model); must be differentiable w.r.t. the targets.
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions]):
        super().__init__(model=model)  # type: ignore[arg-type]
        self.candidates = candidates

    def forward(self, X: Tensor) -> Tensor:
        """Scores of ``X`` with shape ``(b, 1, d)`` (BoTorch's ``batch x q x d``, q = 1) -> ``(b,)``."""
        if X.shape[-2] != 1:
            raise ValueError(f'only q = 1 candidates are supported, got q = {X.shape[-2]}')
        flat = X.reshape(-1, X.shape[-1])
        return self.score(flat).reshape(X.shape[:-2])

    @abstractmethod
    def score(self, targets: Tensor) -> Tensor:
        """Scores of ``targets`` with shape ``(q, d)`` -> ``(q,)``."""

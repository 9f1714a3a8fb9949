r"""Travel-aware acquisition: any target acquisition minus the cost of driving there.

A rover pays for every metre it drives, so a target far away must promise more than one next door. Following
the distance-penalised UCB of Marchant & Ramos ("Bayesian optimisation for intelligent environmental
monitoring", IROS 2012), the score of a candidate target :math:`\mathbf x` seen from the rover's position
:math:`\mathbf p` is

.. math::
    \alpha_{\text{travel}}(\mathbf x) = \alpha(\mathbf x) - w\, \hat\sigma_f\,
    \frac{\lVert \mathbf x - \mathbf p \rVert}{D},

with :math:`\alpha` the method's acquisition (in output units, e.g. uGP-UCB's
:math:`\hat\mu(\hat P_{\mathbf x}) + \beta\hat\sigma(\hat P_{\mathbf x})`), :math:`\hat\sigma_f` the GP's signal
standard deviation (output units), :math:`D` the diagonal of the search box (m) and :math:`w \ge 0` the
dimensionless ``travel_weight``: crossing the whole box costs :math:`w` prior standard deviations of the field.
:math:`w = 0` is the method itself. For an acquisition in log units (the log-EI ones: ``bo_uu_ei``, ``ei``,
``ugp_risk``, ``botorch_robust``) the cost is subtracted from the log value, so there :math:`w` weighs the travel
against a factor of improvement, not against prior standard deviations. The planner takes :math:`\mathbf p` as the
mean of the latest location distribution (where the rover measured last), or its start before the first
measurement. A batch :math:`\mathbf x_1 .. \mathbf x_q` (visited in order) pays for its whole tour
:math:`\lVert\mathbf x_1 - \mathbf p\rVert + \sum_j \lVert\mathbf x_{j+1} - \mathbf x_j\rVert`.
"""
from __future__ import annotations

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from .base import TargetAcquisition

__all__ = ['TravelPenalty']


class TravelPenalty(TargetAcquisition):
    """``inner`` minus the travel cost from ``position`` (see the module docstring).

    Args:
        inner: the method's acquisition (any BoTorch ``AcquisitionFunction`` over ``(b, 1, d)`` targets).
        position: ``(d,)`` the rover's position :math:`\\mathbf p` (m).
        bounds: ``(2, d)`` search box (m); its diagonal is :math:`D`.
        weight: :math:`w \\ge 0`.
        signal_std: :math:`\\hat\\sigma_f` in output units.
        unit_inputs: ``inner`` takes points of the unit cube of ``bounds`` (BoTorch's normalised inputs): the penalty
            measures the travel to the point of ``bounds`` they stand for.

    Raises:
        ValueError: negative weight or signal std.

    Example:
        With :math:`w = 1` a target across the whole box (from the corner where the rover is) costs one signal std:

        >>> import torch
        >>> from uncertain_bo.acquisition import TargetUpperConfidenceBound
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP
        >>> bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
        >>> gp = DistributionGP(bounds)
        >>> gp.set_data(Dirac(torch.rand(8, 2, dtype=torch.float64) * 10), torch.randn(8, dtype=torch.float64))
        >>> ucb = TargetUpperConfidenceBound(gp, GaussianExecutionNoise.isotropic(0.5, 2), beta=4.0)
        >>> aware = TravelPenalty(ucb, position=bounds[0], bounds=bounds, weight=1.0, signal_std=2.0)
        >>> corner = bounds[1].reshape(1, 1, 2)
        >>> round(float(ucb(corner) - aware(corner)), 6)
        2.0
    """

    def __init__(self, inner: AcquisitionFunction, position: Tensor, bounds: Tensor, weight: float,
                 signal_std: float, unit_inputs: bool = False):
        super().__init__(inner.model, getattr(inner, 'candidates', None))
        if not (weight >= 0 and signal_std >= 0):
            raise ValueError(f'travel weight and signal std must be >= 0, got {weight}, {signal_std}')
        self.inner = inner
        self.position = torch.as_tensor(position).to(bounds).reshape(-1)
        self.per_metre = float(weight) * float(signal_std) / float((bounds[1] - bounds[0]).norm())
        self.lower, self.span = (bounds[0], bounds[1] - bounds[0]) if unit_inputs else (None, None)

    def _metres(self, X: Tensor) -> Tensor:
        return X if self.lower is None else self.lower + X * self.span

    def score(self, targets: Tensor) -> Tensor:
        return self.inner(targets.unsqueeze(-2)) - self.per_metre * (self._metres(targets) - self.position).norm(dim=-1)

    def joint_score(self, X: Tensor) -> Tensor:
        """The inner acquisition's batch value less the cost of the tour from the position through ``X`` in order."""
        legs = torch.cat([self.position.expand(*X.shape[:-2], 1, X.shape[-1]), self._metres(X)], -2).diff(dim=-2)
        return self.inner(X) - self.per_metre * legs.norm(dim=-1).sum(-1)

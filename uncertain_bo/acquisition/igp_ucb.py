r"""IGP-UCB under input noise (Chowdhury & Gopalan 2017; Oliveira et al. 2019, Theorem 2).

Standard GP-UCB that ignores where the measurement really happened: the GP is trained on the commanded
targets (Dirac inputs; the expected SE kernel reduces to the SE kernel) and candidates are scored as points,

.. math:: \mathbf x_t = \operatorname{argmax}_{\mathbf x}\ \mu_{t-1}(\mathbf x) + \beta_t \sigma_{t-1}(\mathbf x).

Theorem 2: because :math:`y_t - \mathbb E[f(\tilde{\mathbf x}_t) | \mathbf x_t]` is
:math:`\sigma_\nu`-sub-Gaussian with :math:`\sigma_\nu = \sqrt{\sigma_E^2 + \sigma_\zeta^2}`, the GP on targets
keeps its regret bound for the robust objective when its noise and :math:`\beta_t` account for the input
noise: use :func:`input_noise_sigma_nu` for :math:`\sigma_\nu` (Prop. 3 gives :math:`\sigma_E`), the noise
variance :math:`\lambda = \sigma_\nu^2` and :class:`~uncertain_bo.acquisition.beta.TheoryBeta` with that
:math:`\sigma_\nu`. With hyperparameters fitted by marginal likelihood the learned noise plays that role.
"""
from __future__ import annotations

from typing import Sequence

from torch import Tensor

from .beta import effective_noise_std, prop3_sigma_f
from .method import UCBMethod, register

__all__ = ['input_noise_sigma_nu', 'IGPUCB']


def input_noise_sigma_nu(norm_bound: float, execution_covariance: Tensor, sigma_zeta: float, *,
                         lengthscale: float | Sequence[float], outputscale: float = 1.0) -> float:
    r""":math:`\sigma_\nu = \sqrt{\sigma_F^2 + \sigma_\zeta^2}` with :math:`\sigma_F` from Prop. 3 for Gaussian
    execution noise of covariance ``execution_covariance`` (Theorem 2's :math:`\sigma_E`)."""
    sigma_f = prop3_sigma_f(norm_bound, execution_covariance, lengthscale=lengthscale, outputscale=outputscale)
    return effective_noise_std(sigma_zeta, sigma_f)


@register
class IGPUCB(UCBMethod):
    """IGP-UCB: GP-UCB on the commanded targets; the planner's β (Thm. 2 + Prop. 3) accounts for input noise.

    Example:
        IGP-UCB's first decision, its GP on the commanded targets (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('igp_ucb', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('target', 'acquisition', torch.Size([2]))
    """

    name = 'igp_ucb'
    description = ('IGP-UCB: standard GP-UCB on the commanded targets, noise accounting for input noise '
                   '(Chowdhury & Gopalan 2017; Oliveira et al. 2019, Thm. 2)')
    inputs = 'target'
    robust_candidates = False

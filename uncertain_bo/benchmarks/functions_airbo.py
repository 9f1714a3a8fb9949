r"""AIRBO's robust-optimisation test functions with robust-optimum oracles (Yang et al., NeurIPS 2023, §5.3).

Three problems (AIRBO §5.3 and App. C). The robust objective is
:math:`g(\mathbf x) = \mathbb E_{\delta \sim P_{\mathbf x}}[f(\mathbf x + \delta)]` (paper Eq. 1), estimated by
Monte Carlo with common random numbers (the same :math:`\delta` draws for every point), and the robust
regret is paper Eq. 17.

=====================  ==========================  ==================================  =======================
name                   :math:`f`                   input noise                         published robust optimum
=====================  ==========================  ==================================  =======================
``rkhs1d-gauss``       1-D RKHS function, max      :math:`\mathcal N(0, 0.01^2)`        :math:`x^* \approx 0.078`,
                                                                                       :math:`g \approx 4.938`
``double-peak-beta``   sinc + two bumps, max       ``beta(0.4, 0.2, scale 0.1)``       :math:`x^* \approx 0.252`,
                                                                                       :math:`g \approx 6.366`
``bumped-bowl-10d``    bumped bowl x bowl, **min**  circle r = 0.5 x                    :math:`\mathbf x^* = 0`,
                                                   :math:`\mathcal N(0, 0.1^2 I_8)`     :math:`g \approx 0.0125`
=====================  ==========================  ==================================  =======================

Every function takes ``(..., d)`` tensors and returns ``(...)``; :attr:`RobustProblem.objective` is the value
a maximiser sees (:math:`-f` for minimisation problems).

The three problems are registered in the runner's registry (``uncertain-bo bench --problem double-peak-beta``)
as :class:`~uncertain_bo.benchmarks.sampled.SampledNoiseProblem` with the protocol :data:`AIRBO_PROTOCOL`.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..acquisition.airbo import AIRBO_BETA
from ..distributions import DTYPE
from .problem_registry import get_problem
from .sampled import RobustProblem, register_robust_problem, robust_argmax_grid, robust_value

__all__ = ['rkhs1d', 'double_peak', 'bumped_bowl', 'bumped_bowl_hd', 'RobustProblem', 'RKHS1D_GAUSS',
           'DOUBLE_PEAK_BETA', 'BUMPED_BOWL_10D', 'AIRBO_BENCHMARKS', 'AIRBO_PROTOCOL', 'get_airbo_problem',
           'robust_value', 'robust_argmax_grid']

# 1-D RKHS function (Assael et al. 2014): two sums of SE bumps.
_RKHS_NARROW_CENTRES = (0.8, 0.85, 0.9, 0.95, 0.92, 0.74, 0.91, 0.89, 0.79, 0.88, 0.86, 0.96, 0.99, 0.82)
_RKHS_NARROW_WEIGHTS = (3, 4, 2, 1, -1, 2, 2, 3, 3, 2, -1, -2, 4, -3)
_RKHS_WIDE_CENTRES = (0.1, 0.15, 0.08, 0.3, 0.4)
_RKHS_WIDE_WEIGHTS = (4, -1, 2, -2, 1)


def rkhs1d(x: Tensor) -> Tensor:
    r"""1-D RKHS function on [0, 1] (to maximise)

    .. math::
        f(x) = \sum_{i=1}^{14} w^{(2)}_i e^{-(x - s^{(2)}_i)^2 / (2 \cdot 0.01^2)}
             + \sum_{j=1}^{5} w^{(1)}_j e^{-(x - s^{(1)}_j)^2 / (2 \cdot 0.1^2)}

    Global maximum :math:`f(0.89235) = 5.73839`. Args: ``x (..., 1)``. Returns ``(...)``.
    """
    x = torch.as_tensor(x, dtype=DTYPE)[..., 0:1]
    s2 = torch.tensor(_RKHS_NARROW_CENTRES, dtype=DTYPE)
    w2 = torch.tensor(_RKHS_NARROW_WEIGHTS, dtype=DTYPE)
    s1 = torch.tensor(_RKHS_WIDE_CENTRES, dtype=DTYPE)
    w1 = torch.tensor(_RKHS_WIDE_WEIGHTS, dtype=DTYPE)
    return ((w2 * torch.exp(-(x - s2) ** 2 / (2 * 0.01 ** 2))).sum(-1)
            + (w1 * torch.exp(-(x - s1) ** 2 / (2 * 0.1 ** 2))).sum(-1))


def double_peak(x: Tensor) -> Tensor:
    r"""AIRBO's 1-D double-peak function on [0, 1] (to maximise; reference code "CustomK")

    .. math::
        f(x) = \mathrm{sinc}(2\pi x) + 7.2\, e^{-(37(x - 0.25))^2} + 8.9\, e^{-(39(x - 0.35))^2},
        \qquad \mathrm{sinc}(t) = \frac{\sin \pi t}{\pi t}.

    Args: ``x (..., 1)``. Returns ``(...)``.
    """
    x = torch.as_tensor(x, dtype=DTYPE)[..., 0]
    return (torch.sinc(2 * math.pi * x) + 7.2 * torch.exp(-(37 * (x - 0.25)) ** 2)
            + 8.9 * torch.exp(-(39 * (x - 0.35)) ** 2))


def bumped_bowl(z: Tensor) -> Tensor:
    r"""Bumped bowl :math:`g(\mathbf z) = 2\log(0.8\|\mathbf z\|^2 + e^{-10\|\mathbf z\|^2}) + 2.54` (minimise).

    Its minimum lies on the ring :math:`\|\mathbf z\| \approx 0.503`, value :math:`\approx 0.0087`
    (Sanders et al. 2021). Args: ``z (..., 2)``. Returns ``(...)``.
    """
    r2 = torch.as_tensor(z, dtype=DTYPE).pow(2).sum(-1)
    return 2.0 * torch.log(0.8 * r2 + torch.exp(-10.0 * r2)) + 2.54


def bumped_bowl_hd(x: Tensor) -> Tensor:
    r"""High-dimensional bumped bowl (AIRBO App. D.3; minimise), domain :math:`[-2, 2]^d`, :math:`d \ge 3`.

    :math:`f(\mathbf x) = g(\mathbf x_{1:2}) \cdot (1 + 5\sum_{i \ge 3} x_i^2)` with :math:`g` =
    :func:`bumped_bowl`. Args: ``x (..., d)``. Returns ``(...)``.

    Raises:
        ValueError: ``d < 3``.
    """
    x = torch.as_tensor(x, dtype=DTYPE)
    if x.shape[-1] < 3:
        raise ValueError(f'bumped_bowl_hd needs d >= 3, got {x.shape[-1]}')
    return bumped_bowl(x[..., :2]) * (1.0 + 5.0 * x[..., 2:].pow(2).sum(-1))


RKHS1D_GAUSS = RobustProblem(
    'rkhs1d-gauss', rkhs1d, ((0.0,), (1.0,)), {'kind': 'gaussian', 'std': 0.01, 'dim': 1},
    minimize=False, robust_argmax=(0.078,), robust_optimum=4.938, source='AIRBO §5.3 Fig. 4a')
DOUBLE_PEAK_BETA = RobustProblem(
    'double-peak-beta', double_peak, ((0.0,), (1.0,)), {'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 0.1},
    minimize=False, robust_argmax=(0.252,), robust_optimum=6.366, source='AIRBO §5.3 Fig. 4c')
BUMPED_BOWL_10D = RobustProblem(
    'bumped-bowl-10d', bumped_bowl_hd, ((-2.0,) * 10, (2.0,) * 10),
    {'kind': 'circular_gaussian', 'dim': 10, 'radius': 0.5, 'std': 0.1},
    minimize=True, robust_argmax=(0.0,) * 10, robust_optimum=0.0125,
    source='AIRBO App. D.3 Fig. 9')
AIRBO_BENCHMARKS = (RKHS1D_GAUSS, DOUBLE_PEAK_BETA, BUMPED_BOWL_10D)
"""The issue-4 benchmark definitions; registered in the runner's
:data:`~uncertain_bo.benchmarks.problem_registry.PROBLEMS` under their names (the one registry: look them up with
:func:`get_airbo_problem` or ``get_problem``)."""

AIRBO_PROTOCOL = {
    'n_initial': 10, 'default_iterations': 60, 'default_seeds': 12, 'default_beta': AIRBO_BETA,
    'default_methods': 'airbo,ugp_kme,skl,erbf,gp_ucb', 'n_model_samples': 160, 'n_mc': 10_000, 'refit_every': 1,
    'sigma_zeta': 0.0}
r"""Benchmark protocol (AIRBO §5.3 and App. C.1, and the reference code's scripts):

- 10 uniform initial points and 50 acquisition steps (``compare_robust_optimization.sh``: ``--n_iter 50``
  after ``--init_samples 10``), i.e. **60 measurements** per run (``--iterations`` counts the initial design);
  the initial design is our planner's scrambled Sobol design (space-filling, seeded, the same for every
  method of a seed) instead of i.i.d. uniform points. The 10-D figure (Fig. 9) runs 100 steps; we
  read the curves at steps 20 and 100;
- **12 seeds** (the paper; the code's default is 10);
- UCB :math:`\mu + 2\sigma` for every method (App. C.1; the released scripts use EI);
- :math:`m = 160` samples per input distribution (Nyström :math:`h = 10`; uGP uses 40 of them);
- hyperparameters refitted at every step (the reference rebuilds the model every iteration);
- noiseless readings :math:`y = f(\tilde{\mathbf x})` (the reference's ``prob.evaluate(add_noise(x))``);
- robust values by Monte Carlo with common random numbers and 10 000 draws (the reference used 500,
  ``--n_evaluations 500``; with 500 the double peak's :math:`g^*` is off by about 0.05, the standard error of
  a U-shaped beta input, against the exact quadrature value 6.414).

The 1-D problems also count runs whose recommendation is within ``argmax_tolerance = 0.02`` of the robust
optimiser (issue 4's target).
"""

register_robust_problem(RKHS1D_GAUSS, **AIRBO_PROTOCOL, argmax_tolerance=0.02)
register_robust_problem(DOUBLE_PEAK_BETA, **AIRBO_PROTOCOL, argmax_tolerance=0.02)
register_robust_problem(BUMPED_BOWL_10D, **AIRBO_PROTOCOL)


def get_airbo_problem(name: str) -> RobustProblem:
    """The definition of a registered sampled-noise benchmark (e.g. ``'double-peak-beta'``).

    Raises:
        KeyError: unknown name, or a registered problem without sampled noise; the message lists the known ones.
    """
    try:
        return get_problem(name).problem  # type: ignore[attr-defined]
    except (KeyError, AttributeError):
        known = ', '.join(b.name for b in AIRBO_BENCHMARKS)
        raise KeyError(f'unknown sampled-noise problem {name!r}; known: {known}') from None

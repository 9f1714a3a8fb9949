r"""AIRBO's robust-optimisation test functions with robust-optimum oracles (Yang et al., NeurIPS 2023, §5.3).

Three problems (digest ``notes/airbo.md`` §3.4-3.6). The robust objective is
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
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import Tensor

from ..distributions import DTYPE
from ..noise import SampledExecutionNoise, noise_from_config

__all__ = ['rkhs1d', 'double_peak', 'bumped_bowl', 'bumped_bowl_hd', 'RobustProblem', 'AIRBO_PROBLEMS',
           'get_airbo_problem', 'robust_value', 'robust_argmax_grid']

# 1-D RKHS function (Assael et al. 2014), digest §3.4: two sums of SE bumps.
_RKHS_NARROW_CENTRES = (0.8, 0.85, 0.9, 0.95, 0.92, 0.74, 0.91, 0.89, 0.79, 0.88, 0.86, 0.96, 0.99, 0.82)
_RKHS_NARROW_WEIGHTS = (3, 4, 2, 1, -1, 2, 2, 3, 3, 2, -1, -2, 4, -3)
_RKHS_WIDE_CENTRES = (0.1, 0.15, 0.08, 0.3, 0.4)
_RKHS_WIDE_WEIGHTS = (4, -1, 2, -2, 1)


def rkhs1d(x: Tensor) -> Tensor:
    r"""1-D RKHS function on [0, 1] (to maximise), digest §3.4.

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
    r"""AIRBO's 1-D double-peak function on [0, 1] (to maximise; reference code "CustomK"), digest §3.5.

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
    (Sanders et al. 2021; digest §3.6). Args: ``z (..., 2)``. Returns ``(...)``.
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


@dataclass(frozen=True)
class RobustProblem:
    """A robust-optimisation benchmark: function, domain, input noise, published robust optimum.

    Attributes:
        name: registry key (``'rkhs1d-gauss'``, ...).
        function: the paper's :math:`f`, ``(..., d) -> (...)``.
        bounds: ``(2, d)`` search box as nested lists.
        noise: execution-noise configuration for :func:`~uncertain_bo.noise.noise_from_config`.
        minimize: the paper minimises :math:`f` (regret and optimum are then in that sense).
        robust_argmax: published robust optimiser (digest §3.4-3.6; "argmin" for minimisation).
        robust_optimum: published robust value :math:`g(\\mathbf x^*)` in the paper's sense.
        source: where the numbers come from.
    """

    name: str
    function: Callable[[Tensor], Tensor]
    bounds: tuple[tuple[float, ...], tuple[float, ...]]
    noise: dict[str, Any]
    minimize: bool
    robust_argmax: tuple[float, ...]
    robust_optimum: float
    source: str

    @property
    def dim(self) -> int:
        return len(self.bounds[0])

    @property
    def bounds_tensor(self) -> Tensor:
        """``(2, d)`` float64 bounds."""
        return torch.tensor(self.bounds, dtype=DTYPE)

    def objective(self, x: Tensor) -> Tensor:
        """Value a maximiser sees: :math:`f` or :math:`-f` for minimisation problems. ``(..., d) -> (...)``."""
        v = self.function(x)
        return -v if self.minimize else v

    def make_noise(self, **overrides: Any) -> SampledExecutionNoise:
        """The execution-noise model (configuration overridden by ``overrides``, e.g. ``n_samples``)."""
        return noise_from_config({**self.noise, **overrides})

    def robust_regret(self, x: Tensor, n_samples: int = 500, seed: int = 0) -> Tensor:
        """Robust regret (paper Eq. 17) of points ``x (q, d)`` against the published optimum, ``(q,)``.

        Uses the published optimiser with the same Monte Carlo draws (common random numbers), so the
        regret of the optimum itself is exactly 0. Positive means worse.
        """
        x = torch.as_tensor(x, dtype=DTYPE).reshape(-1, self.dim)
        pts = torch.cat([torch.tensor([self.robust_argmax], dtype=DTYPE), x])
        g = robust_value(self, pts, n_samples=n_samples, seed=seed)
        return (g[1:] - g[0]) if self.minimize else (g[0] - g[1:])


def robust_value(problem: RobustProblem, x: Tensor, n_samples: int = 500, seed: int = 0,
                 chunk: int = 256) -> Tensor:
    r"""Monte Carlo robust value :math:`\hat g(\mathbf x) = \frac1M \sum_j f(\mathbf x + \delta_j)` (paper Eq. 1).

    Args:
        problem: the benchmark.
        x: ``(q, d)`` points (targets).
        n_samples: :math:`M` (the paper's protocol uses 500).
        seed: seed of the draws; the same :math:`\delta_j` serve every point (target-dependent noise
            models apply them through the target, as :meth:`SampledExecutionNoise.__call__`).
        chunk: points per batch (memory).

    Returns:
        ``(q,)`` estimates of :math:`\mathbb E f(\mathbf x + \delta)` in the paper's sense (not negated).
    """
    noise = problem.make_noise(n_samples=int(n_samples), seed=int(seed))
    x = torch.as_tensor(x, dtype=DTYPE).reshape(-1, problem.dim)
    out = []
    with torch.no_grad():
        for i in range(0, x.shape[0], chunk):
            out.append(problem.function(noise(x[i:i + chunk]).samples).mean(-1))
    return torch.cat(out)


def robust_argmax_grid(problem: RobustProblem, n_grid: int = 1000, n_samples: int = 500,
                       seed: int = 0) -> tuple[float, float]:
    """Robust optimiser of a 1-D problem on a uniform grid (the reference protocol's oracle, digest §3.3).

    Returns:
        ``(x*, g(x*))``: best grid point for the problem's sense and its Monte Carlo robust value.

    Raises:
        ValueError: the problem is not 1-D.
    """
    if problem.dim != 1:
        raise ValueError(f'grid search is for 1-D problems; {problem.name} is {problem.dim}-D')
    lo, hi = problem.bounds[0][0], problem.bounds[1][0]
    grid = torch.linspace(lo, hi, n_grid, dtype=DTYPE).unsqueeze(-1)
    g = robust_value(problem, grid, n_samples=n_samples, seed=seed)
    i = int(torch.argmin(g) if problem.minimize else torch.argmax(g))
    return float(grid[i, 0]), float(g[i])


AIRBO_PROBLEMS: dict[str, RobustProblem] = {p.name: p for p in [
    RobustProblem('rkhs1d-gauss', rkhs1d, ((0.0,), (1.0,)), {'kind': 'gaussian', 'std': 0.01, 'dim': 1},
                  minimize=False, robust_argmax=(0.078,), robust_optimum=4.938,
                  source='AIRBO §5.3 Fig. 4a; digest §3.4 [check]'),
    RobustProblem('double-peak-beta', double_peak, ((0.0,), (1.0,)),
                  {'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 0.1},
                  minimize=False, robust_argmax=(0.252,), robust_optimum=6.366,
                  source='AIRBO §5.3 Fig. 4c; digest §3.5 [check]'),
    RobustProblem('bumped-bowl-10d', bumped_bowl_hd, ((-2.0,) * 10, (2.0,) * 10),
                  {'kind': 'circular_gaussian', 'dim': 10, 'radius': 0.5, 'std': 0.1},
                  minimize=True, robust_argmax=(0.0,) * 10, robust_optimum=0.0125,
                  source='AIRBO App. D.3 Fig. 9; digest §3.6 [check]'),
]}
"""The issue-4 benchmark problems by name (separate from :data:`uncertain_bo.benchmarks.base.PROBLEMS`,
the runner's registry, until the runner wraps them)."""


def get_airbo_problem(name: str) -> RobustProblem:
    """Look a problem up by name.

    Raises:
        KeyError: unknown name; the message lists the known ones.
    """
    try:
        return AIRBO_PROBLEMS[name]
    except KeyError:
        raise KeyError(f'unknown problem {name!r}; known: {", ".join(sorted(AIRBO_PROBLEMS))}') from None

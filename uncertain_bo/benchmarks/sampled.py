r"""Benchmark problems whose execution noise is any distribution we can sample (AIRBO's setting).

A :class:`RobustProblem` describes one: the function :math:`f`, the search box, the execution-noise
configuration (:func:`~uncertain_bo.noise.noise_from_config`: Gaussian, beta, circular x Gaussian, ...) and
the published robust optimum. :class:`SampledNoiseProblem` makes it a runner
:class:`~uncertain_bo.benchmarks.base.Problem` (``uncertain-bo bench --problem NAME``):

- **world** (:class:`SampledNoiseWorld`): the target :math:`\mathbf x_t` is executed at
  :math:`\tilde{\mathbf x}_t \sim P_{\mathbf x_t}` (fresh draw, never observed), the reading is
  :math:`y_t = f(\tilde{\mathbf x}_t) + \zeta_t` (:math:`\sigma_\zeta = 0` by default, as the reference code's
  ``prob.evaluate(add_noise(x))``), and the location handed to the planner is the target's own
  distribution :math:`P_{\mathbf x_t}` as ``m = 160`` samples (AIRBO Algorithm 1, lines 3
  and 6). The planner's execution-noise model is the same sampler (same base samples),
  so candidates and training inputs are comparable.
- **robust value** :math:`g(\mathbf x) = \mathbb E_{\delta \sim P_{\mathbf x}} f(\mathbf x + \delta)` (paper
  Eq. 1) by Monte Carlo with ``n_mc = 500`` draws (the reference protocol's ``--n_evaluations``), with
  **common random numbers**: the same draws :math:`\delta_j` (fixed seed :data:`ORACLE_SEED`, independent of
  every run's streams) score every point of every method, seed and iteration. In the maximiser's sense:
  :math:`-\mathbb E f` for minimisation problems, so the runner's regret :math:`g^* - g(\mathbf x)` is the
  paper's robust regret (Eq. 17) in both cases.
- **oracle** :math:`(\mathbf x^*, g^*)` (:func:`robust_oracle`, computed once per problem and process,
  cached): the maximiser of the same Monte Carlo estimate. For 1-D problems a grid (501 points, step 0.002 on
  [0, 1]; the reference used a 1000-point mesh without refinement) with bounded scalar refinement within one
  step of the 5 best grid maxima; in
  higher dimension L-BFGS-B on the (smooth, common-random-number) estimate from the published
  optimiser, since no grid is possible. Because the oracle maximises the very estimate the regret uses, the
  regret is :math:`\ge 0` up to the refinement tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import numpy as np
import torch
from scipy.optimize import minimize, minimize_scalar
from torch import Tensor

from ..acquisition import Method
from ..distributions import DTYPE
from ..noise import SampledExecutionNoise, noise_from_config
from .base import BenchSettings, Instance, Measurement, Problem, World
from .problem_registry import register_problem

__all__ = ['RobustProblem', 'robust_value', 'robust_argmax_grid', 'robust_oracle', 'SampledNoiseWorld',
           'SampledNoiseInstance', 'SampledNoiseProblem', 'register_robust_problem', 'ORACLE_SEED']

ORACLE_SEED = 20231030
"""Seed of the Monte Carlo draws of the robust-value oracle (distinct from every run's seeds and streams)."""


@dataclass(frozen=True)
class RobustProblem:
    """A robust-optimisation benchmark: function, domain, input noise, published robust optimum.

    Attributes:
        name: registry key (``'rkhs1d-gauss'``, ...).
        function: the paper's :math:`f`, ``(..., d) -> (...)``.
        bounds: ``(2, d)`` search box as nested tuples.
        noise: execution-noise configuration for :func:`~uncertain_bo.noise.noise_from_config`.
        minimize: the paper minimises :math:`f` (regret and optimum are then in that sense).
        robust_argmax: published robust optimiser ("argmin" for minimisation); None where none is published
            (the oracle, :func:`robust_oracle`, finds it either way; in d > 1 this is one of its starts).
        robust_optimum: published robust value :math:`g(\\mathbf x^*)` in the paper's sense, or None.
        source: where the function and the numbers come from.

    Example:
        A bowl :math:`f(x) = -(x - 0.3)^2` under Gaussian execution noise (std 0.05): :math:`g(x) = f(x) - 0.05^2`,
        so :math:`g^* = -0.0025` at 0.3, which the Monte Carlo regret reproduces:

        >>> import torch
        >>> bowl = RobustProblem('bowl', lambda x: -(x[..., 0] - 0.3) ** 2, ((0.0,), (1.0,)),
        ...                      {'kind': 'gaussian', 'std': 0.05, 'dim': 1}, robust_argmax=(0.3,))
        >>> bowl.robust_regret(torch.tensor([[0.3], [0.5]], dtype=torch.float64)).round(decimals=2).tolist()
        [0.0, 0.04]
    """

    name: str
    function: Callable[[Tensor], Tensor]
    bounds: tuple[tuple[float, ...], tuple[float, ...]]
    noise: dict[str, Any]
    minimize: bool = False
    robust_argmax: tuple[float, ...] | None = None
    robust_optimum: float | None = None
    source: str = ''

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

        Raises:
            ValueError: no published optimiser (:attr:`robust_argmax` is None; :func:`robust_oracle` finds one).
        """
        if self.robust_argmax is None:
            raise ValueError(f'{self.name}: no published robust optimiser to measure the regret against; '
                             'robust_oracle(problem) computes one')
        x = torch.as_tensor(x, dtype=DTYPE).reshape(-1, self.dim)
        pts = torch.cat([torch.tensor([self.robust_argmax], dtype=DTYPE), x])
        g = robust_value(self, pts, n_samples=n_samples, seed=seed)
        return (g[1:] - g[0]) if self.minimize else (g[0] - g[1:])


def robust_value(problem: RobustProblem, x: Tensor, n_samples: int = 500, seed: int = 0,
                 chunk: int | None = None) -> Tensor:
    r"""Monte Carlo robust value :math:`\hat g(\mathbf x) = \frac1M \sum_j f(\mathbf x + \delta_j)` (paper Eq. 1).

    Args:
        problem: the benchmark.
        x: ``(q, d)`` points (targets). Differentiable: gradients flow to ``x``.
        n_samples: :math:`M` (the paper's protocol uses 500).
        seed: seed of the draws; the same :math:`\delta_j` serve every point (target-dependent noise
            models apply them through the target, as :meth:`SampledExecutionNoise.__call__`).
        chunk: points per batch (memory; default: about :math:`2^{20}` evaluations of ``f`` per batch).

    Returns:
        ``(q,)`` estimates of :math:`\mathbb E f(\mathbf x + \delta)` in the paper's sense (not negated).
    """
    noise = problem.make_noise(n_samples=int(n_samples), seed=int(seed))
    x = torch.as_tensor(x, dtype=DTYPE).reshape(-1, problem.dim)
    chunk = chunk or max(1, 2 ** 20 // int(n_samples))
    return torch.cat([problem.function(noise(x[i:i + chunk]).samples).mean(-1)
                      for i in range(0, x.shape[0], chunk)])


def robust_argmax_grid(problem: RobustProblem, n_grid: int = 1000, n_samples: int = 500,
                       seed: int = 0) -> tuple[float, float]:
    """Robust optimiser of a 1-D problem on a uniform grid (the reference protocol's oracle).

    Returns:
        ``(x*, g(x*))``: best grid point for the problem's sense and its Monte Carlo robust value.

    Raises:
        ValueError: the problem is not 1-D.
    """
    if problem.dim != 1:
        raise ValueError(f'grid search is for 1-D problems; {problem.name} is {problem.dim}-D')
    lo, hi = problem.bounds[0][0], problem.bounds[1][0]
    grid = torch.linspace(lo, hi, n_grid, dtype=DTYPE).unsqueeze(-1)
    with torch.no_grad():
        g = robust_value(problem, grid, n_samples=n_samples, seed=seed)
    i = int(torch.argmin(g) if problem.minimize else torch.argmax(g))
    return float(grid[i, 0]), float(g[i])


_ORACLES: dict[tuple[str, int, int, int], tuple[tuple[float, ...], float]] = {}


def robust_oracle(problem: RobustProblem, n_samples: int = 500, seed: int = ORACLE_SEED,
                  n_grid: int = 501) -> tuple[Tensor, float]:
    r"""Maximiser of the Monte Carlo robust objective in the maximiser's sense (cached per process).

    :math:`\hat g_s(\mathbf x) = \pm\frac1M\sum_j f(\mathbf x + \delta_j)` (sign :math:`-` for minimisation
    problems) with fixed draws. 1-D: ``n_grid``-point grid, then bounded scalar search within one grid step
    of each of the 5 best grid local maxima. :math:`d > 1`: L-BFGS-B (autograd gradient) from the
    published optimiser and from the best of 1024 scrambled Sobol points.

    Args:
        problem: the benchmark.
        n_samples: Monte Carlo draws :math:`M`.
        seed: seed of the draws (the oracle's common random numbers).
        n_grid: grid size for 1-D problems.

    Returns:
        ``(x* (d,), g*)`` with :math:`g^*` in the maximiser's sense (:math:`-\mathbb E f` when minimising).
    """
    key = (problem.name, int(n_samples), int(seed), int(n_grid))
    if key not in _ORACLES:
        _ORACLES[key] = _solve_oracle(problem, int(n_samples), int(seed), int(n_grid))
    x, g = _ORACLES[key]
    return torch.tensor(x, dtype=DTYPE), g


def _solve_oracle(problem: RobustProblem, n_samples: int, seed: int, n_grid: int):
    sign = -1.0 if problem.minimize else 1.0
    lo, hi = np.asarray(problem.bounds[0], float), np.asarray(problem.bounds[1], float)

    def value(x: np.ndarray) -> float:
        with torch.no_grad():
            pt = torch.as_tensor(x, dtype=DTYPE).reshape(1, -1)
            return sign * float(robust_value(problem, pt, n_samples, seed)[0])

    if problem.dim == 1:
        grid = torch.linspace(lo[0], hi[0], n_grid, dtype=DTYPE).unsqueeze(-1)
        with torch.no_grad():
            g = sign * robust_value(problem, grid, n_samples, seed).numpy()
        step = float(grid[1, 0] - grid[0, 0])
        peaks = [j for j in range(n_grid) if (j == 0 or g[j] >= g[j - 1]) and (j == n_grid - 1 or g[j] >= g[j + 1])]
        best_x, best_g = float(grid[int(np.argmax(g)), 0]), float(g.max())
        for j in sorted(peaks, key=lambda j: -g[j])[:5]:
            a, b = max(lo[0], float(grid[j, 0]) - step), min(hi[0], float(grid[j, 0]) + step)
            res = minimize_scalar(lambda z: -value(np.array([z])), bounds=(a, b), method='bounded',
                                  options={'xatol': 1e-9})
            if -res.fun > best_g:
                best_x, best_g = float(res.x), float(-res.fun)
        return (best_x,), best_g

    def neg_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        pt = torch.tensor(x, dtype=DTYPE).reshape(1, -1).requires_grad_(True)
        v = -sign * robust_value(problem, pt, n_samples, seed)[0]
        v.backward()
        return float(v.detach()), pt.grad.reshape(-1).numpy().copy()

    sobol = torch.quasirandom.SobolEngine(problem.dim, scramble=True, seed=seed).draw(1024, dtype=DTYPE)
    pts = torch.as_tensor(lo) + sobol * torch.as_tensor(hi - lo)
    with torch.no_grad():
        g = sign * robust_value(problem, pts, n_samples, seed)
    starts = [pts[int(torch.argmax(g))].numpy()]
    if problem.robust_argmax is not None:
        starts.insert(0, np.clip(np.asarray(problem.robust_argmax, float), lo, hi))
    best_x, best_g = starts[0], value(starts[0])
    for x0 in starts:
        res = minimize(neg_and_grad, x0, jac=True, method='L-BFGS-B', bounds=list(zip(lo, hi)),
                       options={'ftol': 1e-15, 'gtol': 1e-10, 'maxiter': 500})
        if -res.fun > best_g:
            best_x, best_g = res.x, float(-res.fun)
    return tuple(float(v) for v in best_x), best_g


def _stream_seed(*keys: int) -> int:
    """A 63-bit seed for a torch generator from integer keys (independent streams per key tuple)."""
    return int(np.random.SeedSequence([int(k) for k in keys]).generate_state(2, np.uint64)[0] >> np.uint64(1))


class SampledNoiseWorld(World):
    r"""AIRBO's measurement: execute at :math:`\tilde{\mathbf x} \sim P_{\mathbf x}`, report :math:`P_{\mathbf x}`.

    Args:
        problem: the benchmark (its :meth:`RobustProblem.objective` is the reading, maximiser's sense).
        location_model: sampler whose ``location_model(target)`` is the location distribution handed to the
            planner (the planner's own execution-noise model).
        generator: torch generator of the executed positions and output noise (one stream per run).
        sigma_zeta: output-noise standard deviation :math:`\sigma_\zeta` (function units).

    Example:
        ``rkhs1d-gauss``: the target is executed at a fresh draw of :math:`P_{\mathbf x}`; the planner gets
        :math:`P_{\mathbf x}` as 160 samples:

        >>> import torch
        >>> from uncertain_bo.benchmarks import get_problem
        >>> world = get_problem('rkhs1d-gauss').instance(seed=0).world(seed=0)
        >>> m = world.measure(torch.tensor([0.4], dtype=torch.float64))
        >>> m.location.samples.shape, abs(m.executed - 0.4).item() < 0.2     # (batch, m, d)
        (torch.Size([1, 160, 1]), True)
    """

    def __init__(self, problem: RobustProblem, location_model: SampledExecutionNoise, generator: torch.Generator,
                 sigma_zeta: float = 0.0):
        self.problem, self.location_model, self.generator = problem, location_model, generator
        self.true_noise = problem.make_noise(n_samples=1)
        self.sigma_zeta = float(sigma_zeta)

    def measure(self, target: Tensor) -> Measurement:
        x = torch.as_tensor(target, dtype=DTYPE).reshape(1, -1)
        with torch.no_grad():
            executed = self.true_noise.sample_executed(x, self.generator)
            y = float(self.problem.objective(executed)[0])
            location = self.location_model(x)
        if self.sigma_zeta > 0:
            y += self.sigma_zeta * float(torch.randn((), dtype=DTYPE, generator=self.generator))
        return Measurement(executed.reshape(-1), location, y)


class SampledNoiseInstance(Instance):
    """One run's view of a :class:`RobustProblem` (the objective is the same for every seed; the seed sets
    the planner's base samples of :math:`P_{\\mathbf x}` and the world's stream).

    Args:
        problem: the benchmark.
        seed: the run's seed.
        n_initial: initial design size (default for :class:`BenchSettings` ``n_initial=None``).
        refit_every: GP refit schedule default (1: every step, as the reference rebuilds its model).
        n_model_samples: samples ``m`` per location distribution for the planner (AIRBO: 160).
        n_mc: Monte Carlo draws of the robust-value oracle (>= 500, the paper's protocol).
        sigma_zeta: output-noise standard deviation.
        argmax_tolerance: distance to the robust optimiser counted as "found" (1-D problems; None = none).

    Raises:
        ValueError: ``n_mc < 500`` or ``n_model_samples < 1``.

    Example:
        The Monte Carlo robust value (common random numbers) of the bowl :math:`-(x - 0.3)^2` under Gaussian noise
        of std 0.05, against :math:`g(x) = f(x) - 0.05^2`:

        >>> import torch
        >>> bowl = RobustProblem('bowl', lambda x: -(x[..., 0] - 0.3) ** 2, ((0.0,), (1.0,)),
        ...                      {'kind': 'gaussian', 'std': 0.05, 'dim': 1})
        >>> instance = SampledNoiseInstance(bowl, seed=0)
        >>> instance.robust_value(torch.tensor([[0.3], [0.5]], dtype=torch.float64)).round(decimals=3).tolist()
        [-0.002, -0.042]
        >>> SampledNoiseInstance(bowl, seed=0, n_mc=100)
        Traceback (most recent call last):
        ...
        ValueError: n_mc must be >= 500 Monte Carlo draws (the paper's protocol), got 100
    """

    def __init__(self, problem: RobustProblem, seed: int, *, n_initial: int = 10, refit_every: int = 1,
                 n_model_samples: int = 160, n_mc: int = 500, sigma_zeta: float = 0.0,
                 argmax_tolerance: float | None = None):
        if int(n_mc) < 500:
            raise ValueError(f'n_mc must be >= 500 Monte Carlo draws (the paper\'s protocol), got {n_mc}')
        if int(n_model_samples) < 1:
            raise ValueError(f'n_model_samples must be >= 1, got {n_model_samples}')
        self.problem, self.seed = problem, int(seed)
        self.bounds = problem.bounds_tensor
        self.n_initial, self.refit_every = int(n_initial), int(refit_every)
        self.n_model_samples, self.n_mc, self.sigma_zeta = int(n_model_samples), int(n_mc), float(sigma_zeta)
        self.argmax_tolerance = argmax_tolerance

    def robust_value(self, targets: Tensor) -> Tensor:
        """Monte Carlo :math:`g` (maximiser's sense, common random numbers) at ``targets (q, d)`` -> ``(q,)``."""
        sign = -1.0 if self.problem.minimize else 1.0
        with torch.no_grad():
            return sign * robust_value(self.problem, targets, self.n_mc, ORACLE_SEED)

    @property
    def optimum(self) -> tuple[Tensor, float]:
        return robust_oracle(self.problem, self.n_mc, ORACLE_SEED)

    def location_model(self) -> SampledExecutionNoise:
        """The planner's :math:`P_{\\mathbf x}` sampler for this seed (``n_model_samples`` fixed base samples)."""
        return self.problem.make_noise(n_samples=self.n_model_samples, seed=_stream_seed(self.seed, 2))

    def world(self, seed: int) -> SampledNoiseWorld:
        gen = torch.Generator().manual_seed(_stream_seed(seed, 1))
        return SampledNoiseWorld(self.problem, self.location_model(), gen, self.sigma_zeta)

    def planner_config(self, method: Method, settings: BenchSettings) -> dict[str, Any]:
        if settings.mismatch != 1.0:
            raise ValueError(f'{self.problem.name}: --mismatch applies to Gaussian execution noise only; '
                             f'the sampled noise {self.problem.noise["kind"]!r} has no scale to mismatch: use 1')
        if settings.beta == 'theory':
            raise ValueError(f'{self.problem.name}: f is not in a known RKHS ball, so there is no theory beta; '
                             'give a number (AIRBO uses 2)')
        return {
            'execution_noise': self.location_model(),
            'beta': float(settings.beta),
            'n_initial': settings.n_initial or self.n_initial,
            'refit_every': self.refit_every if settings.refit_every is None else settings.refit_every,
            'optimizer': settings.optimizer,
        }

    def info(self) -> dict[str, Any]:
        p = self.problem
        published = None if p.robust_argmax is None else list(p.robust_argmax)
        out = {**super().info(), 'dim': p.dim, 'noise': dict(p.noise), 'minimize': p.minimize,
               'published_argmax': published, 'published_optimum': p.robust_optimum,
               'n_mc': self.n_mc, 'mc_seed': ORACLE_SEED, 'n_model_samples': self.n_model_samples,
               'sigma_zeta': self.sigma_zeta, 'source': p.source}
        if self.argmax_tolerance is not None:
            out['argmax_tolerance'] = self.argmax_tolerance
        return out


class SampledNoiseProblem(Problem):
    """A :class:`RobustProblem` as a runner problem (one objective for all seeds).

    Args:
        problem: the benchmark definition.
        default_iterations: measurements per run, initial design included.
        default_seeds: seeds per method.
        default_beta: :math:`\\beta` of the UCB (``mu + beta sigma``).
        default_methods: comma-separated methods for ``uncertain-bo bench`` without ``--method``.
        **instance_kwargs: :class:`SampledNoiseInstance` keyword arguments.

    Example:
        AIRBO's problems are registered this way (:func:`register_robust_problem`):

        >>> from uncertain_bo.benchmarks import get_problem
        >>> problem = get_problem('double-peak-beta')
        >>> isinstance(problem, SampledNoiseProblem), problem.default_methods, problem.problem.noise['kind']
        (True, 'airbo,ugp_kme,skl,erbf,gp_ucb', 'beta')
    """

    def __init__(self, problem: RobustProblem, *, default_iterations: int = 60, default_seeds: int = 12,
                 default_beta: float = 2.0, default_methods: str = 'airbo,ugp_kme,skl,erbf,gp_ucb',
                 **instance_kwargs: Any):
        self.problem = problem
        self.name = problem.name
        self.description = f'{problem.name}: {problem.source or "a registered RobustProblem"}'
        self.default_iterations, self.default_seeds = int(default_iterations), int(default_seeds)
        self.default_beta, self.default_methods = default_beta, default_methods
        self.instance_kwargs = instance_kwargs

    def instance(self, seed: int) -> SampledNoiseInstance:
        return SampledNoiseInstance(self.problem, seed, **self.instance_kwargs)


def register_robust_problem(problem: RobustProblem, *, replace: bool = False, **kwargs: Any) -> None:
    """Register ``problem`` under its name (:func:`~uncertain_bo.benchmarks.problem_registry.register_problem`).

    Args:
        problem: the benchmark definition.
        replace: replace a problem already registered under that name.
        **kwargs: :class:`SampledNoiseProblem` keyword arguments (defaults, instance settings).

    Raises:
        ValueError: as :func:`~uncertain_bo.benchmarks.problem_registry.register_problem`.
    """
    register_problem(problem.name, partial(SampledNoiseProblem, problem, **kwargs), replace=replace)

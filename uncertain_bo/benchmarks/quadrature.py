r"""Bayesian quadrature optimisation problems: :math:`\max_{\mathbf x} \mathbb E_{P_0(w)}[f(\mathbf x, w)]` where
:math:`P_0` is known only through ``n`` fixed samples :math:`S_n = \{w_1, \dots, w_n\}` and :math:`f` may be
evaluated only on :math:`\mathcal X \times S_n` (Nguyen, Gupta, Ha, Rana & Venkatesh, "Distributionally robust
Bayesian quadrature optimization", AISTATS 2020, §2).

**Decision space.** A query is a pair :math:`(\mathbf x, w)`: the planner's bounds are the joint box
:math:`\mathcal X \times \operatorname{box}(S_n)` (``d`` decision coordinates first, then the ``m`` context
coordinates). The world evaluates :math:`f(\mathbf x, w_i)` at the sample :math:`w_i` nearest to the commanded
context and reports the location :math:`\delta_{(\mathbf x, w_i)}` (a Dirac), so any method runs on these
problems; the quadrature methods (:mod:`uncertain_bo.acquisition.quadrature`) choose among the samples
themselves and get :math:`S_n` and ρ as method settings from :meth:`QuadratureInstance.planner_config`.

**Metrics.** The robust value the runner scores is the distributionally robust objective of the paper's Eq. 7
with the true :math:`f` on the empirical ball,

.. math::
    V_\rho(\mathbf x) = \min_{p \in \mathcal P_{n,\rho}} \sum_i p_i f(\mathbf x, w_i),

so the runner's recommendation regret is the paper's **ρ-regret** (Eq. 9), :math:`V_\rho(\mathbf x^*_\rho) -
V_\rho(\hat{\mathbf x}_t)`, with :math:`\mathbf x^*_\rho` by dense search. ρ is the problem parameter ``rho``
(``--problem-param rho=0.5``; a list sweeps it). :meth:`QuadratureInstance.extra_values` adds the empirical
mean :math:`\mathbb E_{\hat P_n}[f(\hat{\mathbf x}_t, w)]` (the paper's Fig. 4 metric) and, for the
cross-validation problems, the test error of the model tuned at :math:`\hat{\mathbf x}_t` (Table 1).

Problems (``uncertain-bo bench --problem NAME``):

- ``drbqo-logistic``: §6.1, :math:`f(\mathbf x, w) = -\log(1 + e^{\mathbf x^\top w})`, :math:`\mathbf x \in
  [-2, 2]^2` (the authors' code), :math:`w \sim \mathcal N(0, I_2)`, ``n`` = 10 samples drawn once (the same for
  every seed), 12 initial points, T = 100, noiseless;
- ``drbqo-beale``, ``drbqo-eggholder``, ``drbqo-hartmann3``, ``drbqo-hartmann6``, ``drbqo-levy4``: App. C,
  :math:`f(\mathbf x, w) = -h(\mathbf x + w)` for BoTorch's test function :math:`h` (minimised there), with
  :math:`\mathbf x` in the unit cube mapped to :math:`h`'s domain and :math:`w \sim \mathcal N(0, 0.1^2 I)` in
  unit-cube units (the paper leaves the scale of ``w``, T and the initial design open: ours are 0.1, T = 60,
  10 initial points), ``n`` = 10, ρ = 1;
- ``drbqo-cv-*``: cross-validation tuning (:mod:`.cv`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ..acquisition import Method
from ..acquisition.ambiguity import worst_case_mean
from ..distributions import DTYPE, Dirac, GaussianExecutionNoise
from .base import BenchSettings, Instance, Measurement, Problem, World, seeded_rng
from .problem_registry import register_problem

__all__ = ['QuadratureObjective', 'QuadratureWorld', 'QuadratureInstance', 'QuadratureProblem',
           'FunctionObjective', 'logistic', 'shifted_test_function']


class QuadratureObjective(ABC):
    """:math:`f(\\mathbf x, w_i)` on a fixed sample set.

    Attributes:
        x_bounds: ``(2, d)`` decision box.
        contexts: ``(n, m)`` the samples :math:`S_n` (their coordinates are the decision space's context part).

    Example:
        :math:`f(\\mathbf x, w_i) = -(x - w_i)^2` on three samples :math:`S_3 = \\{-0.5, 0, 0.5\\}`:

        >>> import numpy as np
        >>> class Bowl(QuadratureObjective):
        ...     x_bounds, contexts = np.array([[-1.0], [1.0]]), np.array([[-0.5], [0.0], [0.5]])
        ...     def values(self, x):
        ...         return -(x - self.contexts.T) ** 2
        >>> Bowl().values(np.array([[0.25]])).tolist(), Bowl().value([0.25], index=0)     # f(x, w_i) for each i
        ([[-0.5625, -0.0625, -0.0625]], -0.5625)
    """

    x_bounds: np.ndarray
    contexts: np.ndarray

    @abstractmethod
    def values(self, x: np.ndarray) -> np.ndarray:
        """:math:`f(\\mathbf x_j, w_i)` for ``x`` ``(q, d)`` -> ``(q, n)``."""

    def value(self, x: np.ndarray, index: int) -> float:
        """One evaluation :math:`f(\\mathbf x, w_{index})` (default: a column of :meth:`values`)."""
        return float(self.values(np.asarray(x, dtype=float).reshape(1, -1))[0, index])

    def extra_values(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Problem-specific true values of ``x`` ``(q, d)`` (e.g. a test error); ``{name: (q,)}``."""
        return {}

    def search_points(self) -> np.ndarray:
        """Points at which the ρ-robust optimum is searched (before polishing): a grid for ``d`` ≤ 2, Sobol
        points otherwise."""
        lo, hi = self.x_bounds
        d = lo.size
        if d <= 2:
            axes = [np.linspace(a, b, 101) for a, b in zip(lo, hi)]
            u = np.stack(np.meshgrid(*axes, indexing='ij'), -1).reshape(-1, d)
            return u
        from scipy.stats import qmc
        return qmc.scale(qmc.Sobol(d, seed=0).random(8192), lo, hi)

    polish: bool = True
    """polish the best search points by L-BFGS-B (smooth objectives)"""


class FunctionObjective(QuadratureObjective):
    """A vectorised ``f(x (q, d), w (q, n, m)) -> (q, n)`` on a sample set.

    Example:
        The paper's §6.1 logistic objective on two samples; at :math:`\\mathbf x = 0` every sample gives
        :math:`-\\log 2`:

        >>> import numpy as np
        >>> f = FunctionObjective(logistic, [[-2.0, -2.0], [2.0, 2.0]], contexts=[[1.0, 0.0], [0.0, -1.0]])
        >>> f.values(np.array([[0.0, 0.0], [1.0, 1.0]])).round(4).tolist()
        [[-0.6931, -0.6931], [-1.3133, -0.3133]]
    """

    def __init__(self, f: Callable[[np.ndarray, np.ndarray], np.ndarray], x_bounds: np.ndarray,
                 contexts: np.ndarray):
        self.f = f
        self.x_bounds = np.asarray(x_bounds, dtype=float)
        self.contexts = np.asarray(contexts, dtype=float)

    def values(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float).reshape(-1, self.x_bounds.shape[1])
        w = np.broadcast_to(self.contexts, (x.shape[0],) + self.contexts.shape)
        return self.f(x, w)


def logistic(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:math:`f(\\mathbf x, w) = -\\log(1 + e^{\\mathbf x^\\top w})` (paper §6.1) for ``x`` ``(q, d)``, ``w``
    ``(q, n, d)`` -> ``(q, n)``."""
    return -np.logaddexp(0.0, np.einsum('qd,qnd->qn', x, w))


def shifted_test_function(name: str, dim: int | None = None) -> tuple[Callable, np.ndarray]:
    """App. C: ``(f, unit box)`` with :math:`f(\\mathbf u, w) = -h(\\text{lo} + (\\text{hi} - \\text{lo})
    \\operatorname{clip}_{[0, 1]}(\\mathbf u + w))` for BoTorch's test function ``name`` (``Beale``, ``EggHolder``,
    ``Hartmann``, ``Levy``; the shifted point is clipped to the function's domain)."""
    from botorch import test_functions as tf

    h = getattr(tf, name)(dim=dim) if dim is not None else getattr(tf, name)()
    lo, hi = (np.asarray(b, dtype=float) for b in np.asarray(h.bounds))
    d = lo.size

    def f(u: np.ndarray, w: np.ndarray) -> np.ndarray:
        z = lo + (hi - lo) * np.clip(u[:, None, :] + w, 0.0, 1.0)
        with torch.no_grad():
            return -h.evaluate_true(torch.as_tensor(z, dtype=DTYPE)).numpy()

    return f, np.stack([np.zeros(d), np.ones(d)])


class QuadratureWorld(World):
    """Evaluates :math:`f(\\mathbf x, w_i)` at the sample nearest to the commanded context (module docstring).

    Args:
        objective: the quadrature objective.
        noise_std: output noise standard deviation.
        rng: the run's random stream.

    Example:
        A query's context snaps to the nearest sample :math:`w_i`; the location is a Dirac at :math:`(\\mathbf x, w_i)`:

        >>> import numpy as np, torch
        >>> f = FunctionObjective(logistic, [[-2.0, -2.0], [2.0, 2.0]], contexts=[[1.0, 0.0], [0.0, -1.0]])
        >>> world = QuadratureWorld(f, noise_std=0.0, rng=np.random.default_rng(0))
        >>> m = world.measure(torch.tensor([1.0, 1.0, 0.2, -0.7], dtype=torch.float64))
        >>> m.executed.tolist(), round(m.y, 4), m.extra
        ([1.0, 1.0, 0.0, -1.0], -0.3133, {'context_index': 1})
    """

    def __init__(self, objective: QuadratureObjective, noise_std: float, rng: np.random.Generator):
        self.objective, self.noise_std, self.rng = objective, noise_std, rng

    def measure(self, target: Tensor) -> Measurement:
        z = np.asarray(torch.as_tensor(target, dtype=DTYPE).reshape(-1))
        d = self.objective.x_bounds.shape[1]
        x, w = z[:d], z[d:]
        i = int(np.argmin(((self.objective.contexts - w) ** 2).sum(-1)))
        y = self.objective.value(x, i) + self.noise_std * float(self.rng.standard_normal())
        executed = torch.as_tensor(np.concatenate([x, self.objective.contexts[i]]), dtype=DTYPE)
        return Measurement(executed, Dirac(executed.reshape(1, -1)), y, {'context_index': i})


def context_bounds(contexts: np.ndarray) -> np.ndarray:
    """``(2, m)`` box of the samples (widened where all samples share a coordinate)."""
    lo, hi = contexts.min(0), contexts.max(0)
    pad = np.where(hi - lo > 0, 0.0, 0.5)
    return np.stack([lo - pad, hi + pad])


class QuadratureInstance(Instance):
    """One quadrature objective with the ρ-robust oracle (module docstring).

    Args:
        objective: :math:`f` on :math:`\\mathcal X \\times S_n`.
        rho: radius of the χ² ball the ρ-regret is measured with.
        noise_std: output noise of the world.
        n_initial: initial design size.

    Example:
        The ρ-robust value :math:`V_\\rho` of the registered ``drbqo-logistic`` (decision ``x`` first, then the
        context part): at :math:`\\mathbf x = 0` every sample gives :math:`-\\log 2`, whatever the radius:

        >>> import torch
        >>> from uncertain_bo.benchmarks import get_problem
        >>> logistic = get_problem('drbqo-logistic').instance(seed=0)
        >>> logistic.rho, logistic.bounds.shape
        (1.0, torch.Size([2, 4]))
        >>> logistic.robust_value(torch.zeros(1, 4, dtype=torch.float64)).tolist()
        [-0.6931...]
    """

    def __init__(self, objective: QuadratureObjective, rho: float, *, noise_std: float = 0.0, n_initial: int = 12,
                 refit_every: int = 1):
        self.objective, self.rho, self.noise_std = objective, float(rho), noise_std
        self.n_initial, self.refit_every = n_initial, refit_every
        self.d = objective.x_bounds.shape[1]
        cb = context_bounds(objective.contexts)
        self.bounds = torch.as_tensor(np.concatenate([objective.x_bounds, cb], 1), dtype=DTYPE)

    def _x(self, targets: Tensor) -> np.ndarray:
        return np.asarray(torch.as_tensor(targets, dtype=DTYPE).reshape(-1, self.dim)[:, :self.d])

    def robust_value(self, targets: Tensor) -> Tensor:
        """:math:`V_\\rho(\\mathbf x)` of the decision part of ``targets`` ``(q, d + m)`` -> ``(q,)``."""
        vals = torch.as_tensor(self.objective.values(self._x(targets)), dtype=DTYPE)
        return worst_case_mean(vals, self.rho)

    #: radii at which the ρ-regret of every recommendation is also recorded (``rho_regret_<ρ>``), so a method whose
    #: decisions do not depend on ρ (BQO-EI, BQO-TS, MTBO) needs one run for the whole ρ grid of the paper's Fig. 3
    #: and Table 1 (ρ = 5 is Table 1's largest radius)
    RHO_GRID = (0.1, 0.3, 0.5, 1.0, 3.0, 5.0)

    @cached_property
    def _optima(self) -> dict[float, float]:
        return {r: (self.optimum[1] if r == self.rho else QuadratureInstance(
            self.objective, r, noise_std=self.noise_std, n_initial=self.n_initial).optimum[1]) for r in self.RHO_GRID}

    def extra_values(self, targets: Tensor) -> dict[str, Tensor]:
        """The empirical mean :math:`\\mathbb E_{\\hat P_n}[f(\\mathbf x, w)]`, the ρ-regret at each radius of
        :attr:`RHO_GRID` and the objective's own extras (e.g. ``test_error``)."""
        x = self._x(targets)
        vals = torch.as_tensor(self.objective.values(x), dtype=DTYPE)
        out = {'empirical_value': vals.mean(-1)}
        for r, v_star in self._optima.items():
            out[f'rho_regret_{r:g}'] = v_star - worst_case_mean(vals, r)
        out.update({k: torch.as_tensor(v, dtype=DTYPE) for k, v in self.objective.extra_values(x).items()})
        return out

    def _v(self, x: np.ndarray) -> np.ndarray:
        return worst_case_mean(torch.as_tensor(self.objective.values(x), dtype=DTYPE), self.rho).numpy()

    @cached_property
    def optimum(self) -> tuple[Tensor, float]:
        """``(x*, V*)``: the ρ-robust optimiser (joint-space point with the first sample's context) and value."""
        from scipy.optimize import minimize

        pts = self.objective.search_points()
        vals = np.concatenate([self._v(pts[i:i + 4096]) for i in range(0, len(pts), 4096)])
        best_x, best_v = pts[np.argmax(vals)], float(vals.max())
        if self.objective.polish:
            lo, hi = self.objective.x_bounds
            for i in np.argsort(-vals)[:3]:
                res = minimize(lambda z: -float(self._v(z[None])[0]), pts[i], method='L-BFGS-B',
                               bounds=list(zip(lo, hi)))
                if -res.fun > best_v:
                    best_x, best_v = res.x, float(-res.fun)
        joint = np.concatenate([best_x, self.objective.contexts[0]])
        return torch.as_tensor(joint, dtype=DTYPE), best_v

    def world(self, seed: int) -> QuadratureWorld:
        return QuadratureWorld(self.objective, self.noise_std, seeded_rng(seed, 1))

    def planner_config(self, method: Method, settings: BenchSettings) -> dict[str, Any]:
        """Dirac execution noise (the decision is exact), the problem's initial design and refit schedule,
        and, for the quadrature methods, the sample set and ρ as method settings."""
        from ..acquisition.quadrature import QuadratureMethod

        cfg: dict[str, Any] = {
            'execution_noise': GaussianExecutionNoise.isotropic(1e-9, self.dim),
            'n_initial': settings.n_initial or self.n_initial,
            'refit_every': self.refit_every if settings.refit_every is None else settings.refit_every,
            'optimizer': settings.optimizer,
        }
        if isinstance(method, type) and issubclass(method, QuadratureMethod):
            cfg['method_settings'] = {'contexts': torch.as_tensor(self.objective.contexts, dtype=DTYPE),
                                      'rho': self.rho}
        return cfg

    def info(self) -> dict[str, Any]:
        return {**super().info(), 'rho': self.rho, 'contexts': self.objective.contexts.tolist(),
                'decision_dims': self.d}


class QuadratureProblem(Problem):
    """A quadrature problem: a fixed objective family and the radius ``rho`` (problem parameter).

    Example:
        ``--problem-param rho=0.5`` and a radius that cannot be:

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> logistic = get_problem('drbqo-logistic')
        >>> logistic.instance_for(0, BenchSettings(problem=(('rho', 0.5),))).rho
        0.5
        >>> logistic.instance_for(0, BenchSettings(problem=(('rho', -1),)))
        Traceback (most recent call last):
        ...
        ValueError: rho must be a number >= 0, got -1
    """

    default_methods = 'drbqo,emp_drbqo,bqo_ei,bqo_ts,maximin_bqo_ei,maximin_bqo_ts'
    default_beta = 3.0
    default_seeds = 30
    params = {'rho': 1.0}
    n_initial = 12
    noise_std = 0.0

    @abstractmethod
    def objective(self, seed: int) -> QuadratureObjective:
        """The objective for ``seed``."""

    def instance(self, seed: int) -> QuadratureInstance:
        return self.instance_for(seed, BenchSettings())

    def instance_for(self, seed: int, settings: BenchSettings) -> QuadratureInstance:
        if settings.field is not None or settings.explorer:
            raise ValueError(f'problem {self.name!r} has no field or explorer to configure')
        rho = self.param_values(settings)['rho']
        if not isinstance(rho, (int, float)) or not rho >= 0:
            raise ValueError(f'rho must be a number >= 0, got {rho!r}')
        return QuadratureInstance(self.objective(seed), float(rho), noise_std=self.noise_std,
                                  n_initial=self.n_initial)

    def uses_beta(self, method) -> bool:
        return False


class Logistic(QuadratureProblem):
    """Paper §6.1 (module docstring).

    Example:
        >>> from uncertain_bo.benchmarks import get_problem
        >>> f = get_problem('drbqo-logistic').objective(seed=0)
        >>> f.x_bounds.tolist(), f.contexts.shape        # the same 10 samples w ~ N(0, I) for every seed
        ([[-2.0, -2.0], [2.0, 2.0]], (10, 2))
    """

    name = 'drbqo-logistic'
    description = ('DRBQO synthetic logistic: f(x, w) = -log(1 + exp(x.w)), x in [-2, 2]^2, 10 fixed samples '
                   'w ~ N(0, I) (Nguyen et al. 2020, §6.1); problem parameter rho')
    default_iterations = 100

    def objective(self, seed: int) -> FunctionObjective:
        contexts = seeded_rng(20200, 0).standard_normal((10, 2))  # drawn once, the same for every seed
        return FunctionObjective(logistic, np.array([[-2.0, -2.0], [2.0, 2.0]]), contexts)


class ShiftedFunction(QuadratureProblem):
    """App. C: :math:`f(\\mathbf x, w) = -h(\\mathbf x + w)` (module docstring).

    Example:
        ``drbqo-hartmann3``: :math:`-\\text{Hartmann3}(\\mathbf x + w)` on the unit cube, 10 shifts
        :math:`w \\sim \\mathcal N(0, 0.1^2 I)`:

        >>> from uncertain_bo.benchmarks import get_problem
        >>> f = get_problem('drbqo-hartmann3').objective(seed=0)
        >>> f.contexts.shape, f.values([[0.1, 0.55, 0.85]]).shape   # f(x, w_i) for each sample
        ((10, 3), (1, 10))
    """

    function: str = ''
    dim: int | None = None
    default_iterations = 60
    n_initial = 10
    w_std = 0.1

    def objective(self, seed: int) -> FunctionObjective:
        f, box = shifted_test_function(self.function, self.dim)
        contexts = self.w_std * seeded_rng(20201, 0).standard_normal((10, box.shape[1]))
        return FunctionObjective(f, box, contexts)


def _shifted(name: str, function: str, dim: int | None) -> type[ShiftedFunction]:
    d = dim or 2
    cls = type(f'Shifted{function}{d}', (ShiftedFunction,), {
        'name': name, 'function': function, 'dim': dim,
        'description': f'DRBQO App. C: -{function}{"" if dim is None else dim}(x + w), x in the unit cube, '
                       f'10 fixed w ~ N(0, 0.1^2 I) (Nguyen et al. 2020); problem parameter rho (default 1)'})
    return cls


register_problem('drbqo-logistic', Logistic)
for _name, _fn, _dim in (('drbqo-beale', 'Beale', None), ('drbqo-eggholder', 'EggHolder', None),
                         ('drbqo-hartmann3', 'Hartmann', 3), ('drbqo-hartmann6', 'Hartmann', 6),
                         ('drbqo-levy4', 'Levy', 4)):
    register_problem(_name, _shifted(_name, _fn, _dim))

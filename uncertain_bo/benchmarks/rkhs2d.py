r"""``rkhs2d``: random functions in the SE kernel's RKHS on the unit square (paper §6.1).

Per seed, :math:`f = \sum_{i=1}^{30} \alpha_i k(\cdot, \mathbf x_i)` with :math:`\alpha_i \sim U[-1, 1]`,
:math:`\mathbf x_i \sim U([0, 1]^2)` and :math:`k` the SE kernel (lengthscale 0.1, :math:`\sigma_f^2 = 1`, App. A.8),
so :math:`\|f\|_k^2 = \boldsymbol\alpha^\top K \boldsymbol\alpha` exactly. Execution noise
:math:`\mathcal N(0, 0.1^2 I)`, localisation at half that standard deviation, output noise
:math:`\sigma_\zeta = 0.1`, :math:`\delta = 0.4`.

**Exact robust objective.** A Gaussian bump convolved with a Gaussian is a Gaussian bump:

.. math::
    g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\epsilon)] = \sum_i \alpha_i \sigma_f^2
    |I + \Sigma/\ell^2|^{-1/2} \exp\!\big(-\tfrac12 (\mathbf x - \mathbf x_i)^\top (\ell^2 I + \Sigma)^{-1}
    (\mathbf x - \mathbf x_i)\big), \qquad \boldsymbol\epsilon \sim \mathcal N(0, \Sigma).

:math:`g^*` is found by a 201 x 201 grid over the square and L-BFGS-B polishing of the 20 best grid points.

**Planner (theory settings, paper §6.1).** Hyperparameters fixed at the true ones (lengthscale 0.1,
:math:`\sigma_f^2 = 1`, zero mean), no refits (rank-one updates). Each method's noise variance is
:math:`\lambda = \sigma_\nu^2` with :math:`\sigma_\nu` from Prop. 3 on its execution-noise model
:math:`\hat\sigma_x^2 I` (the paper's setting for every method, uGP-UCB included; ``ugp_noise`` of
:class:`~uncertain_bo.benchmarks.base.BenchSettings` gives uGP-UCB other choices), and :math:`\beta_t` from Eq. 20 with
:math:`b = \|f\|_k`, :math:`\delta = 0.4`.

**Learned execution noise** (problem parameter ``learn_execution_noise=true``; the paper's future work, §7): the
configured :math:`\hat\sigma_x = \text{mismatch} \cdot \sigma_x` is only the prior :math:`\Sigma_0` of the
planner's online estimate (:meth:`~uncertain_bo.planning.planner.Planner.learned_execution_covariance`), worth
``execution_noise_prior_weight`` pseudo-observations (default 5, the explorer's). This world is open loop (the
target is executed blind and localised afterwards), so the planner learns with ``execution_feedback='open_loop'``.
The candidates :math:`\hat P_{\mathbf x}` (and so the acquisition and the recommendation) follow the estimate;
:math:`\lambda = \sigma_\nu^2` and :math:`\beta_t` stay those of the prior :math:`\hat\sigma_x` (computed
once, as the GP's hyperparameters are fixed and updated rank-one): with ``ugp_noise='output'`` uGP-UCB's do not
depend on :math:`\hat\sigma_x` at all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from ..acquisition import Method, TheoryBeta
from ..acquisition.beta import effective_noise_std, prop3_sigma_f
from ..distributions import DTYPE, GaussianExecutionNoise
from ..models import DistributionGP
from .base import BenchSettings, GaussianInputWorld, Instance, Problem, seeded_rng, theory_noise_source
from .problem_registry import register_problem

__all__ = ['RKHSFunction', 'RKHS2D', 'RKHSInstance']


@dataclass(frozen=True)
class RKHSFunction:
    r""":math:`f(\mathbf x) = \sum_i \alpha_i \sigma_f^2 \exp(-\|\mathbf x - \mathbf c_i\|^2 / (2\ell^2))` (numpy).

    Attributes:
        centres: ``(m, d)`` support points.
        alpha: ``(m,)`` coefficients.
        lengthscale: SE lengthscale :math:`\ell`.
        outputscale: :math:`\sigma_f^2`.

    Example:
        One bump of height 1 (:math:`\ell = 0.1`); smoothing it with :math:`\mathcal N(0, \ell^2 I)` in 2-D halves
        its peak, :math:`(\ell^2 / (\ell^2 + \sigma^2))^{d/2} = 1/2`:

        >>> import numpy as np
        >>> bump = RKHSFunction(centres=np.array([[0.5, 0.5]]), alpha=np.array([1.0]))
        >>> bump(np.array([[0.5, 0.5]])).tolist(), bump.smoothed(np.array([[0.5, 0.5]]), variance=0.01).tolist()
        ([1.0], [0.5])
        >>> bump.norm                                     # RKHS norm
        1.0
    """

    centres: np.ndarray
    alpha: np.ndarray
    lengthscale: float = 0.1
    outputscale: float = 1.0

    def gram(self) -> np.ndarray:
        diff = self.centres[:, None, :] - self.centres[None, :, :]
        return self.outputscale * np.exp(-0.5 * (diff ** 2).sum(-1) / self.lengthscale ** 2)

    @property
    def norm(self) -> float:
        """RKHS norm :math:`\\|f\\|_k = \\sqrt{\\boldsymbol\\alpha^\\top K \\boldsymbol\\alpha}`."""
        return float(math.sqrt(self.alpha @ self.gram() @ self.alpha))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.smoothed(x, 0.0)

    def smoothed(self, x: np.ndarray, variance: float) -> np.ndarray:
        """:math:`\\mathbb E[f(\\mathbf x + \\boldsymbol\\epsilon)]`, :math:`\\boldsymbol\\epsilon \\sim \\mathcal N(0,
        \\text{variance}\\, I)`, for ``x`` ``(n, d)`` -> ``(n,)`` (closed form)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        d = x.shape[1]
        s2 = self.lengthscale ** 2 + variance
        scale = self.outputscale * (self.lengthscale ** 2 / s2) ** (d / 2)
        sq = ((x[:, None, :] - self.centres[None]) ** 2).sum(-1)
        return scale * np.exp(-0.5 * sq / s2) @ self.alpha

    def smoothed_grad(self, x: np.ndarray, variance: float) -> np.ndarray:
        """Gradient of :meth:`smoothed` w.r.t. ``x`` ``(n, d)`` -> ``(n, d)``."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        d = x.shape[1]
        s2 = self.lengthscale ** 2 + variance
        scale = self.outputscale * (self.lengthscale ** 2 / s2) ** (d / 2)
        diff = x[:, None, :] - self.centres[None]
        w = scale * np.exp(-0.5 * (diff ** 2).sum(-1) / s2) * self.alpha  # (n, m)
        return -(w[..., None] * diff).sum(1) / s2

    @classmethod
    def random(cls, rng: np.random.Generator, m: int = 30, dim: int = 2, lengthscale: float = 0.1,
               outputscale: float = 1.0) -> 'RKHSFunction':
        """Paper §6.1 draw: :math:`\\alpha_i \\sim U[-1, 1]`, :math:`\\mathbf c_i \\sim U([0, 1]^d)`."""
        return cls(rng.uniform(0.0, 1.0, (m, dim)), rng.uniform(-1.0, 1.0, m), lengthscale, outputscale)


def maximize_box(fun, grad, lower: np.ndarray, upper: np.ndarray, grid: int = 201,
                 polish: int = 20) -> tuple[np.ndarray, float]:
    """Maximise a smooth 2-D/low-D function on a box: dense grid, then L-BFGS-B from the best grid points."""
    axes = [np.linspace(lo, hi, grid) for lo, hi in zip(lower, upper)]
    pts = np.stack(np.meshgrid(*axes, indexing='ij'), -1).reshape(-1, len(lower))
    vals = fun(pts)
    best_x, best_v = pts[np.argmax(vals)], float(vals.max())
    for i in np.argsort(-vals)[:polish]:
        res = minimize(lambda z: -float(fun(z[None])[0]), pts[i], jac=lambda z: -grad(z[None])[0],
                       method='L-BFGS-B', bounds=list(zip(lower, upper)))
        if -res.fun > best_v:
            best_x, best_v = res.x, float(-res.fun)
    return best_x, best_v


class RKHSInstance(Instance):
    """One random RKHS function with its exact robust-objective oracle (see module docstring).

    Example:
        The robust objective is the closed-form smoothing of the function under :math:`\\sigma_x = 0.1`:

        >>> import torch
        >>> from uncertain_bo.benchmarks import get_problem
        >>> instance = get_problem('rkhs2d').instance(seed=0)
        >>> x = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
        >>> instance.robust_value(x).tolist() == instance.f.smoothed(x.numpy(), 0.1 ** 2).tolist()
        True
    """

    def __init__(self, f: RKHSFunction, *, sigma_x: float = 0.1, sigma_zeta: float = 0.1,
                 localisation_ratio: float = 0.5, delta: float = 0.4, n_initial: int = 5):
        self.f = f
        self.bounds = torch.tensor([[0.0] * f.centres.shape[1], [1.0] * f.centres.shape[1]], dtype=DTYPE)
        self.sigma_x, self.sigma_zeta, self.delta = sigma_x, sigma_zeta, delta
        self.sigma_l = localisation_ratio * sigma_x
        self.n_initial = n_initial
        self.execution_noise_prior_weight: float | None = None  # learned execution noise: the prior's weight

    def robust_value(self, targets: Tensor) -> Tensor:
        x = np.asarray(torch.as_tensor(targets, dtype=DTYPE).reshape(-1, self.dim))
        return torch.as_tensor(self.f.smoothed(x, self.sigma_x ** 2), dtype=DTYPE)

    @cached_property
    def optimum(self) -> tuple[Tensor, float]:
        v = self.sigma_x ** 2
        x, g = maximize_box(lambda z: self.f.smoothed(z, v), lambda z: self.f.smoothed_grad(z, v),
                            np.zeros(self.dim), np.ones(self.dim))
        return torch.as_tensor(x, dtype=DTYPE), g

    def world(self, seed: int) -> GaussianInputWorld:
        return GaussianInputWorld(self.f, self.sigma_x, self.sigma_l, self.sigma_zeta, seeded_rng(seed, 1))

    def sigma_nu(self, source: str, model_sigma_x: float) -> float:
        """:math:`\\sigma_\\nu` for a noise source (Prop. 3 with :math:`b = \\|f\\|_k`)."""
        if source == 'output':
            return self.sigma_zeta
        std = {'location': self.sigma_l, 'execution': model_sigma_x}[source]
        cov = torch.eye(self.dim, dtype=DTYPE) * std ** 2
        sigma_f = prop3_sigma_f(self.f.norm, cov, lengthscale=self.f.lengthscale, outputscale=self.f.outputscale)
        return effective_noise_std(self.sigma_zeta, sigma_f)

    def planner_config(self, method: Method, settings: BenchSettings) -> dict[str, Any]:
        model_sigma_x = settings.mismatch * self.sigma_x
        sigma_nu = self.sigma_nu(theory_noise_source(method, settings), model_sigma_x)
        lam = sigma_nu ** 2
        ell, sf2 = self.f.lengthscale, self.f.outputscale

        def factory(bounds, kernel):
            gp = DistributionGP(bounds, kernel, standardize=False, priors=False, noise_lower_bound=1e-8)
            gp.set_hyperparameters(lengthscale=ell, outputscale=sf2, noise=lam, mean=0.0)
            return gp

        beta = settings.beta
        if beta == 'theory':
            beta = TheoryBeta(b=self.f.norm, delta=self.delta, sigma_nu=sigma_nu)
        return {
            'execution_noise': GaussianExecutionNoise.isotropic(model_sigma_x, self.dim),
            'beta': beta,
            'n_initial': settings.n_initial or self.n_initial,
            'refit_every': 0 if settings.refit_every is None else settings.refit_every,
            'optimizer': settings.optimizer,
            'model_factory': factory,
            **({'execution_noise_prior_weight': self.execution_noise_prior_weight, 'execution_feedback': 'open_loop'}
               if self.execution_noise_prior_weight is not None else {}),
        }

    def info(self) -> dict[str, Any]:
        return {**super().info(), 'rkhs_norm': self.f.norm, 'sigma_x': self.sigma_x, 'sigma_l': self.sigma_l,
                'sigma_zeta': self.sigma_zeta, 'delta': self.delta,
                'centres': self.f.centres.tolist(), 'alpha': self.f.alpha.tolist()}


class RKHS2D(Problem):
    """Paper §6.1: 2-D RKHS functions, 400 iterations, 10 seeds, :math:`\\beta_t` from theory.

    Example:
        ``--problem-param learn_execution_noise=true``: the configured :math:`\\hat\\sigma_x` becomes the prior of
        an online estimate with the default weight:

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> learn = BenchSettings(problem=(('learn_execution_noise', True),))
        >>> get_problem('rkhs2d').instance_for(0, learn).execution_noise_prior_weight
        5.0
    """

    name = 'rkhs2d'
    description = ('random SE-RKHS functions on [0,1]^2, sigma_x = 0.1 (Oliveira et al. 2019, §6.1); problem '
                   'parameters learn_execution_noise (the configured sigma_hat_x becomes the prior of an online '
                   'estimate) and execution_noise_prior_weight')
    default_iterations = 400
    default_seeds = 10
    default_beta = 'theory'
    params = {'learn_execution_noise': False, 'execution_noise_prior_weight': 5.0}

    def instance(self, seed: int) -> RKHSInstance:
        return RKHSInstance(RKHSFunction.random(seeded_rng(seed, 0)))

    def instance_for(self, seed: int, settings: BenchSettings) -> RKHSInstance:
        """As :meth:`Problem.instance_for`, checking the problem parameters.

        Raises:
            ValueError: a field or explorer setting, an unknown parameter, ``learn_execution_noise`` not a
                boolean or ``execution_noise_prior_weight`` not a number >= 0.
        """
        inst = super().instance_for(seed, settings)
        values = self.param_values(settings)
        if not isinstance(values['learn_execution_noise'], bool):
            raise ValueError(f'learn_execution_noise must be true or false, got {values["learn_execution_noise"]!r}')
        weight = values['execution_noise_prior_weight']
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
            raise ValueError(f'execution_noise_prior_weight must be a number >= 0, got {weight!r}')
        if values['learn_execution_noise']:
            inst.execution_noise_prior_weight = float(weight)
        return inst


register_problem('rkhs2d', RKHS2D)

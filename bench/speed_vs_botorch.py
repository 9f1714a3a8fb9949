"""One uGP-UCB iteration against one BoTorch SingleTaskGP + UCB + optimize_acqf iteration, side by side.

Issue 3 targets (this machine, 2 cores): our median <= 1.5 x BoTorch's median, and <= 0.15 s absolute.

Both iterations are measured at the same size (n observations, d = 2), with fixed hyperparameters, the same
lengthscale / signal variance / noise, the same number of L-BFGS-B restarts, raw samples and iteration cap:

- **ours**: ``Planner.observe`` (one new (location distribution, reading) pair) + ``Planner.suggest``: the GP
  absorbs the new point by growing its inverse Cholesky factor by one row (``refit_every=0``), then
  uGP-UCB over the execution-noise model N(x, Σ̂) is maximised. Training inputs are EKF-like Gaussians
  with their own covariance each (``--homoscedastic`` gives them all the same covariance);
- **BoTorch**: a ``SingleTaskGP`` on the n + 1 points (point inputs) with the same hyperparameters (no
  fit), BoTorch's ``UpperConfidenceBound`` and ``optimize_acqf`` with its default options.

Repeats alternate between the two so that load from other processes hits both alike. torch runs with one
thread (as in the benchmark workers).

    .venv/bin/python bench/speed_vs_botorch.py [--n 400] [--repeats 15]
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import time

import torch
from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning

from uncertain_bo.caught_warnings import logged_warnings
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

LENGTHSCALE, OUTPUTSCALE, NOISE, BETA = 0.1, 1.0, 0.01, 3.0
SIGMA_X = 0.1
RATIO_TARGET, ABSOLUTE_TARGET = 1.5, 0.15

log = logging.getLogger(__name__)


def field(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(6 * x[..., 0]) * torch.cos(5 * x[..., 1]) + 0.5 * x[..., 0]


class Ours:
    def __init__(self, n: int, settings: OptimizerSettings, homoscedastic: bool, gen: torch.Generator):
        def factory(bounds, kernel):
            gp = DistributionGP(bounds, kernel, standardize=False, priors=False)
            gp.set_hyperparameters(lengthscale=LENGTHSCALE, outputscale=OUTPUTSCALE, noise=NOISE, mean=0.0)
            return gp

        self.gen, self.homoscedastic = gen, homoscedastic
        self.planner = Planner(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE),
                               GaussianExecutionNoise.isotropic(SIGMA_X, 2), beta=BETA, n_initial=1,
                               refit_every=0, optimizer=settings, model_factory=factory)
        for _ in range(n):
            self._observe(torch.rand(2, generator=gen, dtype=DTYPE))
        self.planner.suggest()  # builds the posterior cache once (as after the first decision of a run)
        self._pending_target = None

    def _observe(self, target: torch.Tensor) -> None:
        where = target + SIGMA_X * torch.randn(2, generator=self.gen, dtype=DTYPE)
        if self.homoscedastic:
            cov = torch.eye(2, dtype=DTYPE) * (SIGMA_X / 2) ** 2
        else:  # EKF-like: every estimate has its own covariance
            a = 0.04 * torch.randn(2, 2, generator=self.gen, dtype=DTYPE)
            cov = a @ a.T + 1e-4 * torch.eye(2, dtype=DTYPE)
        est = where + torch.linalg.cholesky(cov) @ torch.randn(2, generator=self.gen, dtype=DTYPE)
        y = float(field(where)) + 0.1 * float(torch.randn(1, generator=self.gen, dtype=DTYPE))
        self.planner.observe(target, Gaussian(est.reshape(1, 2), cov.reshape(1, 2, 2)), y)

    def iteration(self) -> float:
        t0 = time.perf_counter()
        self._observe(torch.rand(2, generator=self.gen, dtype=DTYPE))  # update ...
        self.planner.suggest()                                          # ... + acquisition maximisation
        return time.perf_counter() - t0

    @property
    def n(self) -> int:
        return self.planner.n


class BoTorchLoop:
    def __init__(self, n: int, settings: OptimizerSettings, gen: torch.Generator):
        self.gen, self.settings = gen, settings
        self.x = torch.rand(n, 2, generator=gen, dtype=DTYPE)
        self.y = self._read(self.x)

    def _read(self, x: torch.Tensor) -> torch.Tensor:
        where = x + SIGMA_X * torch.randn(x.shape, generator=self.gen, dtype=DTYPE)
        return (field(where) + 0.1 * torch.randn(x.shape[0], generator=self.gen, dtype=DTYPE)).unsqueeze(-1)

    def iteration(self) -> float:
        from botorch.acquisition import UpperConfidenceBound
        from botorch.models import SingleTaskGP
        from botorch.optim import optimize_acqf
        from gpytorch.kernels import RBFKernel, ScaleKernel

        t0 = time.perf_counter()
        x_new = torch.rand(1, 2, generator=self.gen, dtype=DTYPE)
        self.x = torch.cat([self.x, x_new])
        self.y = torch.cat([self.y, self._read(x_new)])
        model = SingleTaskGP(self.x, self.y, train_Yvar=None, covar_module=ScaleKernel(RBFKernel(ard_num_dims=2)),
                             outcome_transform=None)
        with torch.no_grad():
            model.covar_module.base_kernel.lengthscale = LENGTHSCALE
            model.covar_module.outputscale = OUTPUTSCALE
            model.likelihood.noise = NOISE
            model.mean_module.constant.fill_(0.0)
        model.eval()
        acq = UpperConfidenceBound(model, beta=BETA ** 2)  # BoTorch's beta multiplies the variance
        with logged_warnings(log, OptimizationWarning, BadInitialCandidatesWarning):   # as optim.maximize does
            optimize_acqf(acq, bounds=torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE), q=1,
                          num_restarts=self.settings.num_restarts, raw_samples=self.settings.raw_samples,
                          options={'maxiter': self.settings.maxiter})
        return time.perf_counter() - t0

    @property
    def n(self) -> int:
        return self.x.shape[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--n', type=int, default=400, help='observations before each timed iteration')
    parser.add_argument('--repeats', type=int, default=15, help='timed iterations per contender')
    parser.add_argument('--warmup', type=int, default=2, help='untimed iterations per contender')
    parser.add_argument('--homoscedastic', action='store_true', help='all training inputs share one covariance')
    parser.add_argument('--json', help='also write the numbers to this file')
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    settings = OptimizerSettings()  # 10 restarts, 512 raw samples, 200 L-BFGS-B iterations
    gen = torch.Generator().manual_seed(0)
    ours = Ours(args.n, settings, args.homoscedastic, gen)
    theirs = BoTorchLoop(args.n, settings, gen)
    for _ in range(args.warmup):
        ours.iteration()
        theirs.iteration()
    t_ours, t_theirs = [], []
    for _ in range(args.repeats):  # alternate, so background load hits both alike
        t_ours.append(ours.iteration())
        t_theirs.append(theirs.iteration())
    m_ours, m_theirs = statistics.median(t_ours), statistics.median(t_theirs)
    ratio = m_ours / m_theirs
    print(f'n = {args.n} -> {ours.n}, d = 2, {settings.num_restarts} restarts, {settings.raw_samples} raw samples, '
          f'maxiter {settings.maxiter}, {args.repeats} alternating repeats, torch threads 1, '
          f'{"homoscedastic" if args.homoscedastic else "heteroscedastic (EKF-like)"} training inputs')
    print(f'uGP-UCB (uncertain_bo) iteration: median {m_ours:.4f} s  (min {min(t_ours):.4f}, max {max(t_ours):.4f})')
    print(f'BoTorch SingleTaskGP+UCB iteration: median {m_theirs:.4f} s  (min {min(t_theirs):.4f}, '
          f'max {max(t_theirs):.4f})')
    verdict = 'PASS' if ratio <= RATIO_TARGET and m_ours <= ABSOLUTE_TARGET else 'MISS'
    print(f'ratio ours / BoTorch: {ratio:.2f}  (target <= {RATIO_TARGET}); absolute median {m_ours:.3f} s '
          f'(target <= {ABSOLUTE_TARGET} s): {verdict}')
    if args.json:
        with open(args.json, 'w') as fh:
            json.dump({'n': args.n, 'ours_s': t_ours, 'botorch_s': t_theirs, 'median_ours_s': m_ours,
                       'median_botorch_s': m_theirs, 'ratio': ratio}, fh, indent=1)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())

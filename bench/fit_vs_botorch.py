"""A decision of the planner (hyperparameter fit + acquisition maximisation) against BoTorch's, side by side in one
process; and the hyperparameter fit alone.

**Decision** (default): one decision of the shipped method ``ugp_ucb`` (``Planner.observe`` of a new reading, then
``Planner.suggest``: a type-II ML refit of the GP by BoTorch's ``fit_gpytorch_mll``, starting from the last decision's
hyperparameters as the planner does, then uGP-UCB over the execution-noise model N(x, 0.05² I) maximised by
``optimize_acqf``, 10 restarts from 512 raw samples) against BoTorch's loop on the same readings: a new
``SingleTaskGP`` (its defaults, ``Standardize``), ``fit_gpytorch_mll`` from its defaults,
``UpperConfidenceBound(beta=β_t²)`` (BoTorch's β weights the variance; β_t is the planner's of that decision) and
``optimize_acqf`` with the same restarts, raw samples and iteration cap. The planner's defaults otherwise (Gamma(3, 6)
lengthscales, Gamma(2, 0.15) signal variance, its noise prior, refit at every decision). ``n`` readings in ``d = 2``
(sin(6x)cos(5y) + x/2 plus noise of standard deviation 0.05); ``--inputs points`` gives the planner the same point
readings as BoTorch (Dirac location distributions), ``--inputs ekf`` Gaussian location estimates with their own
covariance each (EKF-like, as a rover's). Each repeat adds one reading to both, so n grows by one per repeat.

**Fit** (``--fit``): the hyperparameter fit alone, both from their default initial values, with the time per
marginal-likelihood evaluation beside the time per fit (the two take different numbers of evaluations).

Repeats alternate between the two so that load from other processes hits both alike; torch runs with one thread
(as in the benchmark workers): the ratio is what counts on a loaded machine.

    OMP_NUM_THREADS=1 .venv/bin/python bench/fit_vs_botorch.py [--n 30 300] [--repeats 7] [--inputs points|ekf]
    OMP_NUM_THREADS=1 .venv/bin/python bench/fit_vs_botorch.py --fit [--n 30 300] [--repeats 5]
    OMP_NUM_THREADS=1 .venv/bin/python bench/fit_vs_botorch.py --profile ours --n 300   # cProfile of our decisions
"""
from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import statistics
import time

import torch
from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning
from botorch.optim.closures.core import ForwardBackwardClosure
from gpytorch.mlls import ExactMarginalLogLikelihood

from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.caught_warnings import logged_warnings
from uncertain_bo.distributions import DTYPE, Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.planning.planner import Planner

BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
SIGMA_X = 0.05
log = logging.getLogger(__name__)


def field(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(6 * x[..., 0]) * torch.cos(5 * x[..., 1]) + 0.5 * x[..., 0]


def data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=DTYPE)
    noise = 0.05 * torch.randn(n, generator=g, dtype=DTYPE)
    return x, field(x) + noise


class Counted:
    """Counts the marginal-likelihood evaluations of a fit: the calls of BoTorch's loss closure (forward and backward),
    whichever loss it evaluates (GPyTorch's ``ExactMarginalLogLikelihood`` or a model's ``compute_custom_loss``)."""

    def __init__(self):
        self.calls = 0
        self._call = ForwardBackwardClosure.__call__

    def __enter__(self):
        counter = self

        def call(closure, *args, **kwargs):
            counter.calls += 1
            return counter._call(closure, *args, **kwargs)
        ForwardBackwardClosure.__call__ = call
        return self

    def __exit__(self, *exc):
        ForwardBackwardClosure.__call__ = self._call


def fit_ours(x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    gp = DistributionGP(BOUNDS, noise_prior='lognormal')
    gp.set_data(Dirac(x), y)
    with Counted() as c:
        t0 = time.perf_counter()
        gp.fit()
        return time.perf_counter() - t0, c.calls


def fit_botorch(x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    model = SingleTaskGP(x, y.reshape(-1, 1), outcome_transform=Standardize(m=1))
    with Counted() as c:
        t0 = time.perf_counter()
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        return time.perf_counter() - t0, c.calls


class OurDecisions:
    """The planner with ``n`` readings, fitted; :meth:`decision` adds one reading and times the next decision."""

    def __init__(self, n: int, inputs: str, gen: torch.Generator):
        self.gen, self.inputs = gen, inputs
        self.planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA_X, 2), method='ugp_ucb', seed=0)
        for _ in range(n):
            self.observe()
        self.planner.suggest()          # the fit the previous decision made (a warm start for the next)

    def observe(self) -> torch.Tensor:
        target = torch.rand(2, generator=self.gen, dtype=DTYPE)
        if self.inputs == 'points':
            location = Dirac(target.reshape(1, 2))
        else:   # EKF-like: every estimate has its own covariance
            a = 0.02 * torch.randn(2, 2, generator=self.gen, dtype=DTYPE)
            cov = a @ a.T + 1e-4 * torch.eye(2, dtype=DTYPE)
            location = Gaussian(target.reshape(1, 2), cov.reshape(1, 2, 2))
        y = float(field(target)) + 0.05 * float(torch.randn(1, generator=self.gen, dtype=DTYPE))
        self.planner.observe(target, location, y)
        return target

    def decision(self) -> tuple[float, float, float]:
        """``(seconds, fit seconds, β_t)`` of one decision after one new reading."""
        self.observe()
        t0 = time.perf_counter()
        self.planner.suggest()
        seconds = time.perf_counter() - t0
        record = self.planner.decisions[-1]
        return seconds, record.fit_seconds, record.beta


class BoTorchDecisions:
    """BoTorch's loop on the same readings: refit a new SingleTaskGP, maximise UCB."""

    def __init__(self, ours: OurDecisions):
        observations = ours.planner.observations
        self.x = observations.targets.to(DTYPE).clone()
        self.y = torch.as_tensor(observations.y, dtype=DTYPE).reshape(-1, 1)

    def add(self, target: torch.Tensor, y: float) -> None:
        self.x = torch.cat([self.x, target.reshape(1, 2)])
        self.y = torch.cat([self.y, torch.tensor([[y]], dtype=DTYPE)])

    def decision(self, beta: float, settings: OptimizerSettings) -> tuple[float, float]:
        """``(seconds, fit seconds)`` of one decision on the current readings."""
        from botorch.acquisition import UpperConfidenceBound
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms.outcome import Standardize
        from botorch.optim import optimize_acqf
        t0 = time.perf_counter()
        model = SingleTaskGP(self.x, self.y, outcome_transform=Standardize(m=1))
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        fitted = time.perf_counter()
        acq = UpperConfidenceBound(model, beta=beta ** 2)   # BoTorch's beta multiplies the variance
        with logged_warnings(log, OptimizationWarning, BadInitialCandidatesWarning):   # as ours does
            optimize_acqf(acq, bounds=BOUNDS, q=1, num_restarts=settings.num_restarts,
                          raw_samples=settings.raw_samples, options={'maxiter': settings.maxiter})
        return time.perf_counter() - t0, fitted - t0


def run_decisions(n: int, repeats: int, inputs: str, profile: str | None) -> str:
    gen = torch.Generator().manual_seed(n)
    ours = OurDecisions(n, inputs, gen)
    theirs = BoTorchDecisions(ours)
    settings = OptimizerSettings()
    profiler = cProfile.Profile() if profile else None
    o, b = [], []
    for i in range(repeats + 1):        # the first pair is a warm-up
        if profiler and profile == 'ours':
            profiler.enable()
        seconds, fit_s, beta = ours.decision()
        if profiler:
            profiler.disable()
        observations = ours.planner.observations
        theirs.add(observations.targets[-1], float(observations.y[-1]))
        if profiler and profile == 'botorch':
            profiler.enable()
        t_b = theirs.decision(beta, settings)
        if profiler:
            profiler.disable()
        if i:
            o.append((seconds, fit_s))
            b.append(t_b)
    if profiler:
        pstats.Stats(profiler).sort_stats('cumulative').print_stats(40)
    med = [statistics.median(v) for v in ([t for t, _ in o], [f for _, f in o], [t for t, _ in b], [f for _, f in b])]
    return (f'| {n} -> {n + repeats} | {inputs} | {med[0]:.3f} ({med[1]:.3f} + {med[0] - med[1]:.3f}) | '
            f'{med[2]:.3f} ({med[3]:.3f} + {med[2] - med[3]:.3f}) | **{med[0] / med[2]:.2f}** | '
            f'{med[1] / med[3]:.2f} | '
            f'{(med[0] - med[1]) / (med[2] - med[3]):.2f} |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--n', type=int, nargs='+', default=[30, 300], help='readings before the first decision')
    parser.add_argument('--repeats', type=int, default=7, help='timed decisions (fits) per contender and size')
    parser.add_argument('--inputs', choices=('points', 'ekf'), default='points',
                        help="the planner's location distributions: points (BoTorch's readings) or EKF-like Gaussians")
    parser.add_argument('--fit', action='store_true', help='time the hyperparameter fit alone')
    parser.add_argument('--profile', choices=('ours', 'botorch'), help='cProfile one side of the timed decisions')
    args = parser.parse_args()
    torch.set_num_threads(1)
    if not args.fit:
        print('| n | our inputs | ours: s per decision (fit + optimise) | BoTorch: s per decision (fit + optimise) | '
              'ratio per decision | ratio of fits | ratio of optimisations |')
        print('|---|---|---|---|---|---|---|')
        for n in args.n:
            print(run_decisions(n, args.repeats, args.inputs, args.profile), flush=True)
        return
    print('| n | ours: s per fit (evaluations) | BoTorch: s per fit (evaluations) | ratio per fit | '
          'ratio per evaluation |')
    print('|---|---|---|---|---|')
    for n in args.n:
        x, y = data(n)
        fit_ours(x, y), fit_botorch(x, y)          # warm-up
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(fit_ours(x, y))
            theirs.append(fit_botorch(x, y))
        t_o, t_b = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in theirs)
        e_o, e_b = ours[0][1], theirs[0][1]
        print(f'| {n} | {t_o:.3f} ({e_o}) | {t_b:.3f} ({e_b}) | {t_o / t_b:.2f} | {(t_o / e_o) / (t_b / e_b):.2f} |')


if __name__ == '__main__':
    main()

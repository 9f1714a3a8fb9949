"""The hyperparameter fit of ``DistributionGP`` against BoTorch's ``SingleTaskGP``, side by side in one process.

Both fit type-II maximum likelihood by BoTorch's ``fit_gpytorch_mll`` (L-BFGS-B) on the same ``n`` point readings in
``d = 2`` (sin(6x)cos(5y) + x/2 plus noise of standard deviation 0.05), from their default initial values, with their
default priors (ours: the explorer's LogNormal noise prior, Gamma(3, 6) lengthscales and Gamma(2, 0.15) signal
variance; BoTorch's: its ``SingleTaskGP`` defaults) and outputs standardised. The two take different numbers of
marginal-likelihood evaluations, so the table gives the time per evaluation beside the time per fit. Repeats
alternate between the two so that load from other processes hits both alike; torch runs with one thread (as in the
benchmark workers).

    .venv/bin/python bench/fit_vs_botorch.py [--n 30 300] [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from gpytorch.mlls import ExactMarginalLogLikelihood

from uncertain_bo.distributions import DTYPE, Dirac
from uncertain_bo.models import DistributionGP


def data(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=DTYPE)
    noise = 0.05 * torch.randn(n, generator=g, dtype=DTYPE)
    return x, torch.sin(6 * x[:, 0]) * torch.cos(5 * x[:, 1]) + 0.5 * x[:, 0] + noise


class Counted:
    """Counts the marginal-likelihood evaluations of a fit (every closure call evaluates it once)."""

    def __init__(self):
        self.calls = 0
        self._forward = ExactMarginalLogLikelihood.forward

    def __enter__(self):
        counter = self

        def forward(mll, *args, **kwargs):
            counter.calls += 1
            return counter._forward(mll, *args, **kwargs)
        ExactMarginalLogLikelihood.forward = forward
        return self

    def __exit__(self, *exc):
        ExactMarginalLogLikelihood.forward = self._forward


def fit_ours(x: torch.Tensor, y: torch.Tensor) -> tuple[float, int]:
    gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE), noise_prior='lognormal')
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--n', type=int, nargs='+', default=[30, 300], help='readings per fit')
    parser.add_argument('--repeats', type=int, default=5, help='fits per contender and size')
    args = parser.parse_args()
    torch.set_num_threads(1)
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

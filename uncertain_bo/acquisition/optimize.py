"""Acquisition maximisation: multi-start L-BFGS-B inside the search bounds (BoTorch ``optimize_acqf``)."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning
from botorch.optim import optimize_acqf
from linear_operator.utils.warnings import NumericalWarning
from torch import Tensor

from ..caught_warnings import logged_warnings
from ..distributions import DTYPE
from ..threadpools import cached_threadpool_limits

log = logging.getLogger(__name__)

__all__ = ['OptimizerSettings', 'maximize']


@dataclass(frozen=True)
class OptimizerSettings:
    """Settings of the multi-start maximiser.

    Attributes:
        num_restarts: L-BFGS-B starts, chosen among the best raw samples (BoTorch's initial heuristic).
        raw_samples: quasi-random points scored to pick the starts.
        maxiter: L-BFGS-B iterations per start.

    Example:
        Fewer starts and raw samples for a quick decision (the planner's ``optimizer``; :func:`maximize`):

        >>> import torch
        >>> quick = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=50)
        >>> bowl = lambda X: -((X - 0.3) ** 2).sum(-1).squeeze(-1)      # any (b, 1, d) -> (b,) callable
        >>> target, value = maximize(bowl, torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64), quick, seed=0)
        >>> [round(v, 3) for v in target.tolist()], abs(value) < 1e-9
        ([0.3, 0.3], True)
    """

    num_restarts: int = 10
    raw_samples: int = 512
    maxiter: int = 200


def maximize(acquisition, bounds: Tensor, settings: OptimizerSettings = OptimizerSettings(),
             seed: int | None = None, q: int = 1) -> tuple[Tensor, float]:
    """Maximise an acquisition over the box ``bounds``.

    Args:
        acquisition: a BoTorch ``AcquisitionFunction`` taking ``(b, q, d)`` targets.
        bounds: ``(2, d)`` lower/upper bounds; the result never leaves them.
        settings: restarts, raw samples, iterations.
        seed: seed for the raw quasi-random samples and the choice of restarts (reproducible decisions);
            the global torch stream is left as it was.
        q: targets maximised jointly (a batch: the acquisition's value of the whole batch, over ``q x d``).

    Returns:
        ``(target (d,), acquisition value)``; for ``q > 1``, ``(targets (q, d), value of the batch)``.
    """
    bounds = torch.as_tensor(bounds, dtype=DTYPE)
    # BoTorch picks the restarts among the raw samples with torch.multinomial on the global stream: with a
    # seed, draw them from a stream of their own so equal calls give equal results whatever ran before
    fork = torch.random.fork_rng(devices=[bounds.device] if bounds.is_cuda else [], enabled=seed is not None)
    # routine: L-BFGS-B stopping at maxiter (the result is still valid), flat raw samples, jitter in a Cholesky;
    # BoTorch's RuntimeWarning when a start ends abnormally and it retries from new starts: worth an info line
    with fork, cached_threadpool_limits(), logged_warnings(log, RuntimeWarning, level=logging.INFO), \
            logged_warnings(log, OptimizationWarning, BadInitialCandidatesWarning, NumericalWarning):
        if seed is not None:   # the forked streams only: torch.manual_seed would also seed (and queue) CUDA's
            (torch.manual_seed if bounds.is_cuda else torch.random.default_generator.manual_seed)(seed)
        x, value = optimize_acqf(
            acquisition, bounds=bounds, q=q, num_restarts=settings.num_restarts,
            raw_samples=settings.raw_samples, options={'maxiter': settings.maxiter, 'seed': seed,
                                                       'batch_limit': settings.num_restarts,
                                                       'init_batch_limit': settings.raw_samples})
    x = x.detach().reshape(q, -1)
    x = torch.minimum(torch.maximum(x, bounds[0]), bounds[1])
    return (x[0] if q == 1 else x), float(value)

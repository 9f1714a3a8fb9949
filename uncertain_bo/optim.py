"""Acquisition maximisation: multi-start L-BFGS-B inside the search bounds (BoTorch ``optimize_acqf``)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from botorch.optim import optimize_acqf
from torch import Tensor

from .distributions import DTYPE

__all__ = ['OptimizerSettings', 'maximize']


@dataclass(frozen=True)
class OptimizerSettings:
    """Settings of the multi-start maximiser.

    Attributes:
        num_restarts: L-BFGS-B starts, chosen among the best raw samples (BoTorch's initial heuristic).
        raw_samples: quasi-random points scored to pick the starts.
        maxiter: L-BFGS-B iterations per start.
    """

    num_restarts: int = 10
    raw_samples: int = 512
    maxiter: int = 200


def maximize(acquisition, bounds: Tensor, settings: OptimizerSettings = OptimizerSettings(),
             seed: int | None = None) -> tuple[Tensor, float]:
    """Maximise an acquisition over the box ``bounds``.

    Args:
        acquisition: a BoTorch ``AcquisitionFunction`` taking ``(b, 1, d)`` targets.
        bounds: ``(2, d)`` lower/upper bounds; the result never leaves them.
        settings: restarts, raw samples, iterations.
        seed: seed for the raw quasi-random samples and the choice of restarts (reproducible decisions);
            the global torch stream is left as it was.

    Returns:
        ``(target (d,), acquisition value)``.
    """
    bounds = torch.as_tensor(bounds, dtype=DTYPE)
    # BoTorch picks the restarts among the raw samples with torch.multinomial on the global stream: with a
    # seed, draw them from a stream of their own so equal calls give equal results whatever ran before
    fork = torch.random.fork_rng(devices=[bounds.device] if bounds.is_cuda else [], enabled=seed is not None)
    with fork, warnings.catch_warnings():
        if seed is not None:
            torch.manual_seed(seed)
        warnings.simplefilter('ignore')  # BoTorch's OptimizationWarning on maxiter: result still valid
        x, value = optimize_acqf(
            acquisition, bounds=bounds, q=1, num_restarts=settings.num_restarts,
            raw_samples=settings.raw_samples, options={'maxiter': settings.maxiter, 'seed': seed,
                                                       'batch_limit': settings.num_restarts,
                                                       'init_batch_limit': settings.raw_samples})
    x = x.detach().reshape(-1)
    x = torch.minimum(torch.maximum(x, bounds[0]), bounds[1])
    return x, float(value)

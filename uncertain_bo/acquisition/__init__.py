"""Acquisition functions and the registry of methods.

A **method** is a kernel choice plus an acquisition (docs/architecture.md, "one GP, many kernels"): which kernel the
shared :class:`~uncertain_bo.models.DistributionGP` uses, whether it trains on the location estimates
:math:`P^L_t` or on the commanded targets, whether candidates are scored through the execution-noise
model :math:`\\hat P_{\\mathbf x}` or as points, and which acquisition scores them. The
:class:`~uncertain_bo.planner.Planner` and the benchmark runner look methods up by name in
:data:`METHODS`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Protocol

from torch import Tensor

from ..distributions import LocationDistributions
from ..kernels import DistributionKernel
from ..models import DistributionGP
from .base import TargetAcquisition
from .beta import FixedBeta, TheoryBeta, make_beta
from .ugp_ucb import UpperConfidenceBound

if TYPE_CHECKING:
    from ..planner import Planner, Recommendation

__all__ = ['Method', 'METHODS', 'register', 'get_method', 'TargetAcquisition', 'UpperConfidenceBound',
           'FixedBeta', 'TheoryBeta', 'make_beta', 'Strategy', 'StrategyDecision']

CandidateFn = Callable[[Tensor], LocationDistributions]


@dataclass(frozen=True)
class StrategyDecision:
    """A target chosen by a method's own decision rule.

    Attributes:
        target: ``(d,)`` target in the planner's bounds.
        phase: label recorded with the decision (``'survey'``, ``'initial'``, ``'acquisition'``).
        acquisition_value: the rule's score of the target (NaN if it has none).
    """

    target: Tensor
    phase: str
    acquisition_value: float = float('nan')


class Strategy(Protocol):
    """A method's own decision and recommendation rules, replacing the planner's (initial design +
    acquisition maximisation; best posterior mean over past targets).

    One strategy object lives with one :class:`~uncertain_bo.planner.Planner` (it may keep state, e.g. a
    survey's planned targets; everything it keeps must follow from the planner's bounds, budget, seed and
    start so a resumed run decides the same).
    """

    def decide(self, planner: 'Planner', index: int) -> StrategyDecision | None:
        """Target for measurement ``index`` (0-based), or None for the planner's own rule."""

    def recommend(self, planner: 'Planner') -> 'Recommendation | None':
        """Recommendation from the planner's observations, or None for the planner's own rule."""


@dataclass(frozen=True)
class Method:
    """How a method uses the shared GP.

    Attributes:
        name: registry key (``'ugp_ucb'``, ...).
        description: one line for ``--help`` and reports.
        train_on: ``'location'`` (GP inputs are the location distributions :math:`P^L_t`) or ``'target'``
            (Dirac inputs at the commanded targets, i.e. standard BO that ignores input noise).
        robust_candidates: score candidates and recommend through :math:`\\hat P_{\\mathbf x}` (True)
            or as Dirac points (False).
        make_acquisition: ``(model, candidates, beta_t) -> TargetAcquisition``.
        make_kernel: ``dim -> DistributionKernel`` or None for the model's default (expected SE).
        make_strategy: ``() -> Strategy`` for methods with decision rules of their own (survey baselines,
            BoTorch's robust loop), None for "maximise ``make_acquisition`` after the initial design".
        uses_beta: whether the decision uses :math:`\\beta_t` (β sweeps collapse for methods without).
        baseline: a strategy a field engineer would use instead of the explorer (benchmarks compare every
            method against every baseline).
    """

    name: str
    description: str
    train_on: Literal['location', 'target']
    robust_candidates: bool
    make_acquisition: Callable[[DistributionGP, CandidateFn, float], TargetAcquisition] | None
    make_kernel: Callable[[int], DistributionKernel] | None = None
    make_strategy: 'Callable[[], Strategy] | None' = None
    uses_beta: bool = True
    baseline: bool = False


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method to :data:`METHODS` (name must be new)."""
    if method.name in METHODS:
        raise ValueError(f'method {method.name!r} is already registered')
    METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    """Look a method up by name.

    Raises:
        KeyError: unknown name; the message lists the known methods.
    """
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f'unknown method {name!r}; known: {", ".join(sorted(METHODS))}') from None


register(Method(
    name='ugp_ucb',
    description='uGP-UCB: GP over location distributions, UCB over the execution-noise model '
                '(Oliveira et al. 2019)',
    train_on='location', robust_candidates=True,
    make_acquisition=lambda model, candidates, beta: UpperConfidenceBound(model, candidates, beta)))

from . import igp_ucb  # noqa: E402,F401  (registers 'igp_ucb')
from . import uei  # noqa: E402,F401  (registers 'uei')
from . import airbo  # noqa: E402,F401  (registers 'airbo', 'airbo_empirical', 'ugp_kme', 'skl', 'erbf', 'gp_ucb')
from . import survey  # noqa: E402,F401  (registers the baselines 'lawnmower', 'lawnmower_fixed', 'random')
from . import botorch_robust  # noqa: E402,F401  (registers the baseline 'botorch_robust')

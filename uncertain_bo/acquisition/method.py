r"""The method protocol: one object per :class:`~uncertain_bo.planner.Planner` for every method.

A **method** declares

- what the shared GP trains on (:attr:`Method.inputs`: the commanded targets, Gaussian location
  distributions, or sample sets such as particle clouds) and with which kernel (:meth:`Method.kernel`);
- the space it decides in (:meth:`Method.decision_bounds`: the target box by default; a joint (x, w) box for
  quadrature methods);
- how it scores a batch of candidates given a :class:`DecisionContext` (:meth:`Method.acquisition`: a BoTorch
  ``AcquisitionFunction``) and how it decides (:meth:`Method.decide`: by default the planner's space-filling
  initial design, then the maximiser of its acquisition);
- how it recommends (:meth:`Method.recommend`: by default the planner's rules over past targets; NES
  recommends over the whole domain, BoTorch's robust loop by its risk measure).

The planner calls these hooks and nothing else: it knows no UCB, no :math:`\beta`, no "best past target" of
its own. A method registers with the :func:`register` class decorator in its own module; adding one touches
that module and the import list of :mod:`uncertain_bo.acquisition`, nothing else.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from torch import Tensor

from ..optim import maximize

if TYPE_CHECKING:
    from botorch.acquisition import AcquisitionFunction

    from ..distributions import ExecutionNoise, LocationDistributions
    from ..kernels import DistributionKernel
    from ..models import DistributionGP
    from ..planner import Planner

__all__ = ['Method', 'UCBMethod', 'DecisionContext', 'Proposal', 'Recommendation', 'METHODS', 'register',
           'get_method', 'INPUT_KINDS']

#: what a method's GP trains on: Dirac inputs at the commanded targets, Gaussian location distributions
#: (a pose with covariance; particle clouds are moment-matched), or sample sets (particle clouds as they are)
INPUT_KINDS = ('target', 'gaussian', 'samples')


@dataclass(frozen=True)
class Proposal:
    """A method's choice for the next measurement.

    Attributes:
        target: ``(D,)`` point of the decision space (the target box unless the method says otherwise).
        phase: label recorded with the decision (``'initial'``, ``'acquisition'``, ``'survey'``, ...).
        acquisition_value: the method's score of the target (NaN if it has none).
        beta: :math:`\\beta_t` used (NaN for methods without).
    """

    target: Tensor
    phase: str
    acquisition_value: float = math.nan
    beta: float = math.nan


@dataclass(frozen=True)
class Recommendation:
    """Where the method believes the robust peak is.

    Attributes:
        target: ``(D,)`` recommended target, e.g. :math:`\\mathbf x^*_n = \\operatorname{argmax}_{\\mathbf x_t}
            \\hat\\mu_n(\\hat P_{\\mathbf x_t})` (uGP-UCB, Oliveira et al. 2019, Alg. 1).
        mean: predicted robust value there (field units).
        std: posterior standard deviation there (NaN if the method has none).
        index: which past measurement's target it is (-1 for a target that is none of them).
    """

    target: Tensor
    mean: float
    std: float
    index: int


class DecisionContext:
    """Everything a method may look at when deciding measurement ``index`` or recommending after it.

    Built by the planner for each call; the GP is brought up to date (and its hyperparameters fitted when the
    schedule says so) only when :attr:`model` is first read, so methods that do not use it (a survey) pay
    nothing. The fit's wall time is billed to the decision.

    Attributes:
        index: :math:`t`, 0-based index of the measurement being decided (= observations so far).
        run_seed: the planner's seed.
        seed: the decision's seed ``run_seed * 100_003 + index``: seed every random draw from it.
        bounds: ``(2, D)`` decision space (dtype and device to follow).
        target_bounds: ``(2, d)`` the planner's search box.
        candidates: ``targets (q, d) -> LocationDistributions``: :math:`\\hat P_{\\mathbf x}` for robust methods,
            Dirac points otherwise.
        execution_noise: the planner's (possibly learned) execution-noise model.
        targets: ``(n, D)`` past targets; ``y``: ``(n,)`` past readings; ``locations``: past location
            distributions as one batch (None before the first observation).
        beta: the :math:`\\beta_t` schedule, ``beta(t, model) -> float``.
        optimizer: acquisition maximiser settings.
        position: ``(d,)`` where the rover believes it is.
        start: ``(d,)`` start position or None; ``budget``: measurement budget or None.
        n_initial: size of the initial design; ``initial_design``: its ``(n_initial, D)`` targets.
        in_box_exploration, travel_weight: the planner's options (see :class:`~uncertain_bo.planner.Planner`).
    """

    def __init__(self, planner: 'Planner', index: int):
        self._planner = planner
        self.fit_seconds = 0.0
        self.index = index
        self.run_seed = planner.seed
        self.seed = planner.seed * 100_003 + index
        self.target_bounds = planner.bounds
        self.bounds = planner.method_object.decision_bounds(planner.bounds)
        self.candidates: Callable[[Tensor], 'LocationDistributions'] = planner.candidates
        self.execution_noise: 'ExecutionNoise' = planner.execution_noise
        self.beta = planner.beta_schedule
        self.optimizer = planner.optimizer
        self.position = planner.position
        self.start = planner.start
        self.budget = planner.budget
        self.n_initial = planner.n_initial
        self.initial_design = planner.initial_design
        self.in_box_exploration = planner.in_box_exploration
        self.travel_weight = planner.travel_weight

    @property
    def targets(self) -> Tensor:
        """``(n, D)`` past targets."""
        return self._planner.targets

    @property
    def y(self) -> Tensor:
        """``(n,)`` past readings (field units)."""
        return self._planner.y

    @property
    def locations(self) -> 'LocationDistributions | None':
        """Past location distributions as one batch (built on first use; None before any observation)."""
        if not hasattr(self, '_locations'):
            self._locations = self._planner.locations
        return self._locations

    @property
    def model(self) -> 'DistributionGP':
        """The shared GP with every observation, hyperparameters fitted per the planner's schedule."""
        self.fit_seconds += self._planner._update_model()
        return self._planner.model


class Method:
    """Base class of every method (see the module docstring). One instance per planner; it may keep state
    (a survey's planned tour, a fitted BoTorch model) as long as that state follows from the context, so a run
    resumed from its journal decides the same.

    Args:
        **settings: the method's own settings (``Planner(method_settings=...)``); the base class takes none.

    Raises:
        TypeError: unknown settings.
    """

    name: ClassVar[str] = ''
    description: ClassVar[str] = ''
    inputs: ClassVar[str] = 'gaussian'
    robust_candidates: ClassVar[bool] = True
    uses_beta: ClassVar[bool] = False
    baseline: ClassVar[bool] = False

    def __init__(self, **settings: Any):
        if settings:
            raise TypeError(f'method {self.name!r} takes no settings, got {", ".join(sorted(settings))}')

    def kernel(self, dim: int) -> 'DistributionKernel | None':
        """The GP's kernel over ``dim``-dimensional inputs; None for the default (closed-form expected SE)."""
        return None

    def decision_bounds(self, bounds: 'Tensor') -> 'Tensor':
        """``(2, D)`` decision space for the planner's ``(2, d)`` search box (default: the box itself)."""
        return bounds

    def acquisition(self, ctx: DecisionContext) -> 'AcquisitionFunction':
        """Acquisition scoring candidates ``X`` of shape ``(b, 1, D)`` -> ``(b,)`` (maximised by :meth:`decide`).

        Raises:
            NotImplementedError: the method decides by its own rule only.
        """
        raise NotImplementedError(f'method {self.name!r} has no acquisition function')

    def decide(self, ctx: DecisionContext) -> Proposal:
        """The next target: the planner's space-filling initial design for the first ``n_initial`` measurements,
        then the maximiser of :meth:`acquisition` over ``ctx.bounds`` (less a travel cost when
        ``ctx.travel_weight > 0``; :class:`~uncertain_bo.acquisition.travel.TravelPenalty`)."""
        if ctx.index < ctx.n_initial:
            return Proposal(ctx.initial_design[ctx.index].clone(), 'initial')
        acq = self.acquisition(ctx)
        beta = float(getattr(acq, 'beta', math.nan))
        if ctx.travel_weight > 0:
            from .travel import TravelPenalty
            acq = TravelPenalty(acq, ctx.position, ctx.bounds, ctx.travel_weight,
                                ctx.model.hyperparameters()['outputscale'] ** 0.5)
        target, value = maximize(acq, ctx.bounds, ctx.optimizer, seed=ctx.seed)
        return Proposal(target, 'acquisition', value, beta)

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        """The method's own recommendation, or None for the planner's rule ``rule`` (or its default rule when
        ``rule`` is None). ``rule`` is the caller's explicit choice; methods with a rule of their own use it
        only when ``rule`` is None."""
        return None


class UCBMethod(Method):
    r"""Upper confidence bound :math:`\hat\mu(P_{\mathbf x}) + \beta_t \hat\sigma(P_{\mathbf x})` over the
    candidates' location distributions (uGP-UCB: Oliveira et al. 2019, Alg. 1; GP-UCB, IGP-UCB, AIRBO's UCB).
    :math:`\beta_t` comes from the planner's schedule; with ``in_box_exploration`` the exploration term is
    weighted by the kernel footprint's share inside the bounds."""

    uses_beta: ClassVar[bool] = True

    def acquisition(self, ctx: DecisionContext) -> 'AcquisitionFunction':
        from .ugp_ucb import UpperConfidenceBound
        model = ctx.model
        return UpperConfidenceBound(model, ctx.candidates, ctx.beta(ctx.index, model),
                                    in_box=ctx.in_box_exploration)


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a :class:`Method` subclass to :data:`METHODS` under ``cls.name``.

    Raises:
        ValueError: empty or already registered name, or an unknown :attr:`Method.inputs`.
    """
    if not cls.name:
        raise ValueError(f'{cls.__name__} has no name')
    if cls.name in METHODS:
        raise ValueError(f'method {cls.name!r} is already registered')
    if cls.inputs not in INPUT_KINDS:
        raise ValueError(f'{cls.__name__}.inputs must be one of {INPUT_KINDS}, got {cls.inputs!r}')
    METHODS[cls.name] = cls
    return cls


def get_method(name: str) -> type[Method]:
    """Look a method up by name.

    Raises:
        KeyError: unknown name; the message lists the known methods.
    """
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f'unknown method {name!r}; known: {", ".join(sorted(METHODS))}') from None

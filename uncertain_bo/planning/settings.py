"""A planner's settings: one frozen value, checked when it is built (:class:`PlannerSettings`, the GP's own in
:class:`ModelSettings`), replaced as a whole when a run-time change arrives (an operator's parameters, the rover's
first pose: :meth:`PlannerSettings.replace`), so every decision snapshot (:class:`~uncertain_bo.acquisition.
DecisionContext`) holds the settings it was decided with and nothing changes them under it.

:class:`~uncertain_bo.planning.planner.Planner` shows each setting as an attribute (:class:`Setting`); the ones read
afresh at every decision (``refit_every``, ``optimizer``, ``travel_weight``, ...) can be assigned, the others change
through the planner's ``set_*`` methods, which also rebuild what depends on them (the model, the method, the design).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import Tensor

from ..acquisition.recommendation import RECOMMENDATION_RULES
from ..distributions import DTYPE, ExecutionNoise
from .execution_noise_estimator import EXECUTION_FEEDBACK
from ..acquisition.optimize import OptimizerSettings

__all__ = ['PlannerSettings', 'ModelSettings', 'Setting']


@dataclass(frozen=True)
class ModelSettings:
    """The shared GP's settings (see :class:`~uncertain_bo.planning.planner.Planner` for each): its refit period
    ``refit_every``, ``noise_prior``, the capped fit ``fit_max_points``, the sparse posterior ``sparse_above`` /
    ``inducing_points``, ``input_noise`` and a ``model_factory`` replacing the default model.

    Raises:
        ValueError: a negative ``refit_every``; ``fit_max_points``, ``sparse_above`` or ``inducing_points`` not an
            integer >= 0.

    Example:
        >>> ModelSettings(refit_every=5, fit_max_points=200).fit_max_points
        200
        >>> try:
        ...     ModelSettings(sparse_above=-1)
        ... except ValueError as exc:
        ...     print(exc)
        sparse_above must be an integer >= 0, got -1
    """

    refit_every: int = 1
    noise_prior: str = 'gamma'
    fit_max_points: int = 0
    sparse_above: int = 0
    inducing_points: int = 500
    input_noise: bool = False
    model_factory: Callable[..., Any] | None = None

    def __post_init__(self):
        if self.refit_every < 0:
            raise ValueError(f'refit_every must be >= 0, got {self.refit_every}')
        for name in ('fit_max_points', 'sparse_above', 'inducing_points'):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise ValueError(f'{name} must be an integer >= 0, got {value!r}')


@dataclass(frozen=True)
class PlannerSettings:
    """The planner's settings (each documented at :class:`~uncertain_bo.planning.planner.Planner`); ``bounds`` becomes a
    float64 ``(2, d)`` tensor, ``start`` a ``(d,)`` one; ``execution_noise`` is the configured model (the prior of a
    learned one).

    Raises:
        ValueError: see :class:`~uncertain_bo.planning.planner.Planner`.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> noise = GaussianExecutionNoise.isotropic(0.5, 2)
        >>> settings = PlannerSettings.of(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), noise, n_initial=4, refit_every=3)
        >>> settings.n_initial, settings.model.refit_every, settings.replace(travel_weight=0.5).travel_weight
        (4, 3, 0.5)
    """

    bounds: Tensor
    execution_noise: ExecutionNoise
    method: str = 'ugp_ucb'
    method_settings: dict[str, Any] | None = None
    beta: Any = 3.0
    n_initial: int = 5
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    seed: int = 0
    start: Tensor | None = None
    budget: int | None = None
    recommendation: str = 'past_mean'
    confirmation_readings: int = 0
    travel_weight: float = 0.0
    route_horizon: int = 1
    pending_radius: float | None = None
    in_box_exploration: bool = False
    execution_noise_prior_weight: float | None = None
    execution_feedback: str = 'closed_loop'
    model: ModelSettings = field(default_factory=ModelSettings)

    def __post_init__(self):
        bounds = torch.as_tensor(self.bounds, dtype=DTYPE)
        if bounds.ndim != 2 or bounds.shape[0] != 2 or not (bounds[1] > bounds[0]).all():
            raise ValueError(f'bounds must be (2, d) with upper > lower, got {bounds.tolist()}')
        object.__setattr__(self, 'bounds', bounds)
        if self.start is not None:
            object.__setattr__(self, 'start', torch.as_tensor(self.start, dtype=DTYPE).reshape(-1))
        if self.n_initial < 1:
            raise ValueError(f'n_initial must be >= 1, got {self.n_initial}')
        if not self.travel_weight >= 0:
            raise ValueError(f'travel_weight must be >= 0, got {self.travel_weight}')
        if isinstance(self.route_horizon, bool) or not isinstance(self.route_horizon, int) or self.route_horizon < 1:
            raise ValueError(f'route_horizon must be an integer >= 1, got {self.route_horizon!r}')
        if self.pending_radius is not None and not 0.0 <= self.pending_radius < math.inf:
            raise ValueError(f'pending_radius must be None or a finite number >= 0, got {self.pending_radius!r}')
        if self.execution_feedback not in EXECUTION_FEEDBACK:
            raise ValueError(f'execution_feedback must be one of {", ".join(EXECUTION_FEEDBACK)}, '
                             f'got {self.execution_feedback!r}')
        if self.recommendation not in RECOMMENDATION_RULES:
            raise ValueError(f'recommendation must be one of {", ".join(RECOMMENDATION_RULES)}, '
                             f'got {self.recommendation!r}')
        c = self.confirmation_readings
        if not (isinstance(c, int) and not isinstance(c, bool) and c >= 0):
            raise ValueError(f'confirmation_readings must be an integer >= 0, got {c!r}')

    @classmethod
    def of(cls, bounds: Tensor, execution_noise: ExecutionNoise, **options: Any) -> 'PlannerSettings':
        """The settings of ``Planner(bounds, execution_noise, **options)``: the GP's options (the fields of
        :class:`ModelSettings`) go to :attr:`model`.

        Raises:
            TypeError: an unknown option.
        """
        model = {k: options.pop(k) for k in MODEL_OPTIONS if k in options}
        unknown = set(options) - set(PLANNER_OPTIONS)
        if unknown:
            raise TypeError(f'Planner got unexpected keyword argument(s) {", ".join(sorted(unknown))}')
        return cls(bounds, execution_noise, **options, model=ModelSettings(**model))

    def replace(self, **changes: Any) -> 'PlannerSettings':
        """These settings with ``changes`` (a :class:`ModelSettings` field changes :attr:`model`), checked again.

        Raises:
            ValueError: an invalid value (the settings stay as they were).
        """
        model = {k: changes.pop(k) for k in MODEL_OPTIONS if k in changes}
        if model:
            changes['model'] = dataclasses.replace(self.model, **model)
        return dataclasses.replace(self, **changes)

    def get(self, name: str) -> Any:
        """The setting ``name`` (a field of these settings or of :attr:`model`)."""
        return getattr(self.model if name in MODEL_OPTIONS else self, name)


MODEL_OPTIONS = tuple(f.name for f in dataclasses.fields(ModelSettings))
PLANNER_OPTIONS = tuple(f.name for f in dataclasses.fields(PlannerSettings) if f.name != 'model')


class Setting:
    """A planner attribute that shows one of its settings (``planner.refit_every`` is ``planner.settings.model.
    refit_every``). Assigning it replaces the planner's settings from the next decision on (checked; a
    :class:`ValueError` leaves them as they were); a setting that other parts depend on is read-only here
    (``writable=False``) and changes through the planner's ``set_*`` method named in the error.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2))
        >>> planner.refit_every = 5                   # a writable setting: replaces the planner's settings
        >>> planner.settings.model.refit_every
        5
        >>> try:
        ...     planner.bounds = torch.tensor([[0.0, 0.0], [5.0, 5.0]])
        ... except AttributeError as exc:
        ...     print(exc)
        bounds is changed by set_bounds()
    """

    def __init__(self, writable: bool = True, setter: str = ''):
        self.writable, self.setter = writable, setter

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, planner: Any, owner: type | None = None) -> Any:
        if planner is None:
            return self
        return planner.settings.get(self.name)

    def __set__(self, planner: Any, value: Any) -> None:
        if not self.writable:
            raise AttributeError(f'{self.name} is changed by {self.setter or "building a new planner"}')
        planner.settings = planner.settings.replace(**{self.name: value})

r"""What a benchmark problem supplies to the runner.

A :class:`Problem` draws one :class:`Instance` per seed (the objective; common to every method run with
that seed). An instance knows

- its **exact robust objective** :math:`g(\mathbf x) = \mathbb E[f(\tilde{\mathbf x}) | \mathbf x]` under the
  *true* execution noise and its maximum :math:`g^*` (the regret oracle, paper Eq. 4);
- its **world**: how a commanded target turns into an executed position, a location distribution
  :math:`P^L_t` and a reading (:class:`World`). Synthetic problems use :class:`GaussianInputWorld`; a
  simulated rover mission can supply its own world;
- how to configure the shared :class:`~uncertain_bo.planning.planner.Planner` for a method
  (:meth:`Instance.planner_config`): execution-noise model :math:`\hat P_{\mathbf x}`, :math:`\beta_t`,
  GP hyperparameters or their fitting schedule.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal

import numpy as np
import torch
from torch import Tensor

from ..acquisition import Method, get_method
from ..distributions import DTYPE, Gaussian, LocationDistributions
from ..acquisition.optimize import OptimizerSettings
from ..planning.planner import Planner

__all__ = ['BenchSettings', 'Measurement', 'World', 'GaussianInputWorld', 'Instance', 'Problem', 'theory_noise_source',
           'DEFAULT_UGP_NOISE', 'seeded_rng']

NoiseSource = Literal['output', 'location', 'execution']
DEFAULT_UGP_NOISE: NoiseSource = 'execution'
"""The paper's §6.1 setting (Oliveira et al. 2019): every method's GP noise from Proposition 3 on its own
execution-noise model :math:`\\hat\\Sigma = \\hat\\sigma_x^2 I`, uGP-UCB included (Theorem 5's
:math:`\\sigma_\\nu = \\sqrt{\\sigma_E^2 + \\sigma_\\zeta^2}`)."""


@dataclass(frozen=True)
class BenchSettings:
    """Knobs of one benchmark configuration (everything but method and seed).

    Attributes:
        beta: ``'theory'`` (paper Eq. 20 with the current information gain) or a fixed :math:`\\beta_t`;
            None = the problem's default.
        mismatch: ratio :math:`\\hat\\sigma_x / \\sigma_x` of the execution-noise model to the true
            execution noise (paper §6.1 model-mismatch study).
        ugp_noise: which noise :math:`\\sigma_\\nu` the theory assigns to methods trained on location
            distributions (uGP-UCB): ``'execution'`` = Prop. 3 on :math:`\\hat\\Sigma` (default: the paper's
            §6.1 setting, Theorem 5), ``'output'`` = :math:`\\sigma_\\zeta` alone, ``'location'`` = Prop. 3
            on the localisation covariance. Methods trained on targets always use ``'execution'`` (Theorem 2).
        refit_every: GP refit schedule (None = problem default; 0 = fixed hyperparameters).
        n_initial: initial space-filling targets (None = problem default).
        optimizer: acquisition maximiser settings.
        field: for problems on a field (the rover problems): a named field or a ``.npz`` / ``.csv`` path
            (None = the problem's default).
        explorer: for the rover problems: explorer parameters ``((name, value), ...)`` applied over the
            shipped ones (e.g. ``(('travel_weight', 1.0),)``).
        problem: problem parameters ``((name, value), ...)`` for problems that declare them
            (:attr:`Problem.params`, e.g. the radius ``rho`` of the quadrature problems' ambiguity set).
        sim: for the rover problems: simulation parameters ``((name, value), ...)`` applied over the shipped
            ``config/sim.yaml``: ``name`` is a ``sim_rover`` parameter (e.g. ``reading_noise_std``) or
            ``node.name`` for the other simulation nodes (``ekf``, ``particle_filter``, ``pure_pursuit``).
            A suite field (:mod:`~uncertain_bo.benchmarks.suite`) brings its own noise and localisation
            settings; these apply over them.

    Example:
        The radius of the DRBQO problems' ambiguity set as a problem parameter (``--problem-param rho=0.5``), and a
        name the problem does not declare:

        >>> from uncertain_bo.benchmarks import get_problem
        >>> logistic = get_problem('drbqo-logistic')
        >>> logistic.param_values(BenchSettings(problem=(('rho', 0.5),)))
        {'rho': 0.5}
        >>> logistic.param_values(BenchSettings(problem=(('radius', 0.5),)))
        Traceback (most recent call last):
        ...
        ValueError: problem 'drbqo-logistic' has no parameter 'radius' (known: rho)
        >>> BenchSettings(beta=2.0, mismatch=2.0).beta_label(uses_beta=True)   # sigma_hat_x = 2 sigma_x, fixed beta
        '2'
    """

    beta: str | float | None = None
    mismatch: float = 1.0
    ugp_noise: NoiseSource = DEFAULT_UGP_NOISE
    refit_every: int | None = None
    n_initial: int | None = None
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    field: str | None = None
    explorer: tuple[tuple[str, Any], ...] = ()
    problem: tuple[tuple[str, Any], ...] = ()
    sim: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def quick(cls, **changes: Any) -> 'BenchSettings':
        """Settings for a quick look (examples, smoke runs): three space-filling initial measurements, fixed
        hyperparameters (no marginal-likelihood fit) and a small maximiser (2 restarts from 32 raw samples);
        ``changes`` replace any of them or set the others (e.g. ``beta=2.0``).

        Example:
            >>> BenchSettings.quick(beta=2.0).n_initial, BenchSettings.quick(n_initial=5).optimizer.raw_samples
            (3, 32)
        """
        quick = cls(n_initial=3, refit_every=0, optimizer=OptimizerSettings(num_restarts=2, raw_samples=32))
        return replace(quick, **changes)

    def beta_label(self, uses_beta: bool) -> str:
        if not uses_beta:
            return '-'
        return 'theory' if self.beta == 'theory' else ('default' if self.beta is None else f'{float(self.beta):g}')


def theory_noise_source(method: Method, settings: BenchSettings) -> NoiseSource:
    """Source of :math:`\\sigma_\\nu` for ``method``: Theorem 2 (input noise as output noise) for GPs on targets,
    ``settings.ugp_noise`` for GPs on location distributions."""
    return 'execution' if method.inputs == 'target' else settings.ugp_noise


@dataclass(frozen=True)
class Measurement:
    """What one query returns.

    Attributes:
        executed: ``(d,)`` where the query really happened, :math:`\\tilde{\\mathbf x}_t`.
        location: the location distribution :math:`P^L_t` (batch of 1) handed to the planner.
        y: the reading :math:`y_t`.
        extra: JSON-able extras recorded with the iteration.

    Example:
        One query of paper §6.1's synthetic world on ``rkhs2d`` (execution noise :math:`\\sigma_x = 0.1`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import get_problem
        >>> world = get_problem('rkhs2d').instance(seed=0).world(seed=0)
        >>> m = world.measure(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> m.executed.tolist()               # where the query really happened
        [0.510..., 0.401...]
        >>> m.location, round(m.y, 3)          # P^L_t handed to the planner, the reading
        (Gaussian(n=1, d=2), 0.704)
    """

    executed: Tensor
    location: LocationDistributions
    y: float
    extra: dict[str, Any] = field(default_factory=dict)


class World(ABC):
    """Turns commanded targets into measurements (one stochastic stream per run).

    Attributes:
        start: optional ``(d,)`` start position given to the planner (orders the initial design).

    Example:
        A world that measures exactly at the target (no execution or localisation noise):

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> class ExactWorld(World):
        ...     def measure(self, target):
        ...         return Measurement(target, Dirac(target.reshape(1, -1)), float(-(target ** 2).sum()))
        >>> ExactWorld().measure(torch.tensor([0.3, 0.4], dtype=torch.float64)).y
        -0.25
    """

    start: Tensor | None = None

    @abstractmethod
    def measure(self, target: Tensor) -> Measurement:
        """Execute a query at ``target`` ``(d,)``."""

    def close(self) -> None:
        """Release resources (simulators); called once after the run."""


class GaussianInputWorld(World):
    r"""Synthetic world of paper §6.1: Gaussian execution noise, Gaussian localisation, Gaussian output noise.

    .. math::
        \tilde{\mathbf x} = \mathbf x + \boldsymbol\epsilon, \ \boldsymbol\epsilon \sim \mathcal N(0, \sigma_x^2 I);
        \quad \hat{\mathbf x} = \tilde{\mathbf x} + \boldsymbol\eta, \ \boldsymbol\eta \sim \mathcal N(0, \sigma_L^2 I);
        \quad P^L = \mathcal N(\hat{\mathbf x}, \sigma_L^2 I); \quad y = f(\tilde{\mathbf x}) + \zeta,
        \ \zeta \sim \mathcal N(0, \sigma_\zeta^2).

    Args:
        f: objective on ``(n, d)`` numpy arrays -> ``(n,)``.
        sigma_x, sigma_l, sigma_zeta: execution, localisation and output noise standard deviations.
        rng: the run's random stream.

    Example:
        :math:`f(\mathbf x) = -\|\mathbf x\|^2` with :math:`\sigma_x = 0.1`, :math:`\sigma_L = 0.05`,
        noiseless readings:

        >>> import numpy as np, torch
        >>> world = GaussianInputWorld(lambda x: -(x ** 2).sum(-1), sigma_x=0.1, sigma_l=0.05, sigma_zeta=0.0,
        ...                            rng=np.random.default_rng(0))
        >>> m = world.measure(torch.tensor([0.3, 0.4], dtype=torch.float64))
        >>> m.y == -float((m.executed ** 2).sum())       # the reading is f at the executed position
        True
        >>> torch.allclose(m.location.covariance, 0.05 ** 2 * torch.eye(2, dtype=torch.float64))   # sigma_L^2 I
        True
    """

    def __init__(self, f: Callable[[np.ndarray], np.ndarray], sigma_x: float, sigma_l: float,
                 sigma_zeta: float, rng: np.random.Generator):
        self.f, self.sigma_x, self.sigma_l, self.sigma_zeta, self.rng = f, sigma_x, sigma_l, sigma_zeta, rng

    def measure(self, target: Tensor) -> Measurement:
        x = np.asarray(target, dtype=float).reshape(-1)
        d = x.size
        executed = x + self.sigma_x * self.rng.standard_normal(d)
        estimate = executed + self.sigma_l * self.rng.standard_normal(d)
        y = float(self.f(executed[None])[0]) + self.sigma_zeta * float(self.rng.standard_normal())
        cov = torch.eye(d, dtype=DTYPE) * self.sigma_l ** 2
        location = Gaussian(torch.as_tensor(estimate, dtype=DTYPE).reshape(1, d), cov)
        return Measurement(torch.as_tensor(executed, dtype=DTYPE), location, y)


class Instance(ABC):
    """One objective of a problem (drawn for one seed).

    Example:
        The regret oracle of a registered problem: the exact robust objective :math:`g` at a target and the robust
        optimum :math:`g^*`:

        >>> import torch
        >>> from uncertain_bo.benchmarks import get_problem
        >>> rkhs = get_problem('rkhs2d').instance(seed=0)
        >>> rkhs.dim, rkhs.robust_value(torch.tensor([[0.5, 0.5]], dtype=torch.float64)).tolist()
        (2, [0.2614...])
        >>> x_star, g_star = rkhs.optimum
        >>> x_star.tolist(), g_star
        ([0.590..., 0.249...], 0.848...)
    """

    bounds: Tensor

    @property
    def dim(self) -> int:
        return self.bounds.shape[1]

    @abstractmethod
    def robust_value(self, targets: Tensor) -> Tensor:
        """Exact robust objective :math:`g` at ``targets`` ``(q, d)`` -> ``(q,)`` (true execution noise)."""

    @property
    @abstractmethod
    def optimum(self) -> tuple[Tensor, float]:
        """``(x*, g*)``: robust maximiser over the bounds and its value."""

    @abstractmethod
    def world(self, seed: int) -> World:
        """A fresh world (random stream) for one run."""

    @abstractmethod
    def planner_config(self, method: Method, settings: BenchSettings) -> dict[str, Any]:
        """Keyword arguments for :class:`~uncertain_bo.planning.planner.Planner` (everything but bounds, method,
        seed)."""

    def extra_values(self, targets: Tensor) -> dict[str, Tensor]:
        """Further true values of ``targets`` ``(q, d)`` the runner records for each recommendation
        (``rec_<name>`` per iteration, ``extra_<name>`` in the run's finals), e.g. the empirical mean of a
        quadrature problem or a tuned model's test error; ``{name: (q,)}``. None by default."""
        return {}

    #: :math:`g^* - \operatorname{median} g` over the domain, the normaliser of the demo's normalised regret
    #: (None where a problem does not define one)
    regret_scale: float | None = None

    def info(self) -> dict[str, Any]:
        """JSON-able facts about the instance (recorded with each run)."""
        x, g = self.optimum
        return {'optimum': x.tolist(), 'optimum_value': g}

    def planner_settings(self, method: Method, settings: BenchSettings, iterations: int | None) -> dict[str, Any]:
        """:meth:`planner_config` for a run of ``iterations`` measurements, with that measurement ``budget`` (the
        surveys plan their tour from it) where the configuration does not set one (``iterations=None``: a
        mission that gives its planner the budget itself): what every :meth:`drive` hands the planner.

        Raises:
            ValueError: ``settings.beta`` is None (the problem's default, which :meth:`Problem.resolve` fills in).
        """
        if settings.beta is None:
            raise ValueError('settings.beta is None: the problem\'s default beta is filled in by '
                             'Problem.resolve(settings) (Problem.planner and the runner do it)')
        return {**({} if iterations is None else {'budget': iterations}), **self.planner_config(method, settings)}

    def drive(self, method: Method, settings: BenchSettings, seed: int, iterations: int,
              record: Callable[..., None] = lambda *measurement: None) -> Planner:
        """Run the measurement loop and report every stored measurement.

        The default loop is the ask/tell cycle ``suggest -> world.measure -> observe -> recommend`` on a
        :class:`~uncertain_bo.planning.planner.Planner` configured by :meth:`planner_settings`. Instances whose world
        drives the planner itself (a simulated mission with its own measurement cycle) override this.
        :meth:`Problem.planner` is the short way to a planner after a few measurements.

        Args:
            method: the method.
            settings: the run's settings, resolved (:meth:`Problem.resolve`: β filled in).
            seed: the run's seed (planner seed and world stream).
            iterations: number of measurements (the planner's measurement ``budget``).
            record: called after each stored measurement as
                ``record(planner, target, measurement, decision, recommendation)`` (default: nothing).

        Returns:
            The planner after the run.

        Raises:
            ValueError: ``settings.beta`` is None, or settings the instance cannot honour.
        """
        config = self.planner_settings(method, settings, iterations)
        world = self.world(seed)
        planner = Planner(self.bounds, method=method.name, seed=seed, start=world.start, **config)
        try:
            for _ in range(iterations):
                index = planner.n
                target = planner.suggest()     # a batch method hands out its batch one target per call
                decision = [d for d in planner.decisions if d.index == index][-1]
                m = world.measure(target)
                planner.observe(target, m.location, m.y)
                record(planner, target, m, decision, planner.recommend())
        finally:
            world.close()
        return planner


class Problem(ABC):
    """A benchmark problem: a family of instances plus its paper defaults.

    Example:
        A registered problem's paper defaults and which of its methods use :math:`\\beta_t`:

        >>> from uncertain_bo.acquisition import get_method
        >>> from uncertain_bo.benchmarks import get_problem
        >>> rkhs = get_problem('rkhs2d')
        >>> rkhs.default_iterations, rkhs.default_methods, rkhs.default_beta
        (400, 'ugp_ucb,igp_ucb,uei', 'theory')
        >>> rkhs.uses_beta(get_method('ugp_ucb')), rkhs.uses_beta(get_method('uei'))
        (True, False)
    """

    name: str = ''
    description: str = ''
    default_iterations: int = 100
    default_seeds: int = 10
    default_beta: str | float = 3.0
    default_methods: str = 'ugp_ucb,igp_ucb,uei'
    """comma-separated methods ``uncertain-bo bench`` runs without ``--method``"""
    params: dict[str, Any] = {}
    """problem parameters ``--problem-param NAME=VALUE`` may set, with their defaults"""

    def param_values(self, settings: BenchSettings) -> dict[str, Any]:
        """:attr:`params` with ``settings.problem`` applied.

        Raises:
            ValueError: a name the problem does not declare.
        """
        values = dict(self.params)
        for name, value in settings.problem:
            if name not in self.params:
                known = ', '.join(sorted(self.params)) or 'none'
                hint = ('; simulator and explorer parameters go in --sim-param NAME=VALUE / --explorer-param '
                        'NAME=VALUE' if self.name.startswith('rover') else '')
                raise ValueError(f'problem {self.name!r} has no parameter {name!r} (known: {known}){hint}')
            values[name] = value
        return values

    @abstractmethod
    def instance(self, seed: int) -> Instance:
        """The objective for ``seed`` (identical for every method)."""

    def resolve(self, settings: BenchSettings) -> BenchSettings:
        """``settings`` with the problem's defaults filled in (``beta=None``: :attr:`default_beta`): the one place
        the runner, :meth:`planner` and ``uncertain-bo bench`` resolve a run's settings."""
        return settings if settings.beta is not None else replace(settings, beta=self.default_beta)

    def check_method(self, method: str, settings: BenchSettings = BenchSettings()) -> None:
        """Whether ``method`` can run on this problem by design: its constructor takes the method settings the
        problem's planner configuration gives it (e.g. MTBO needs one-hot tasks, the cross-validation problems'
        folds; DRBQO and its baselines a sample set) and it decides in the problem's space
        (:meth:`~uncertain_bo.acquisition.method.Method.check_space`: a lawnmower needs a 2-D area).
        ``uncertain-bo bench`` checks every method before any run.

        Raises:
            KeyError: unknown method.
            ValueError: one line saying why it cannot (or settings the problem cannot honour).

        Example:
            >>> from uncertain_bo.benchmarks import get_problem
            >>> get_problem('rkhs2d').check_method('mtbo')
            Traceback (most recent call last):
            ...
            ValueError: method 'mtbo' does not run on problem 'rkhs2d': method 'mtbo' needs the sample set: ...
        """
        meth = get_method(method)
        settings = self.resolve(settings)
        instance = self.instance_for(0, settings)
        config = instance.planner_config(meth, settings)
        try:
            method_object = meth(**(config.get('method_settings') or {}))
            method_object.check_space(method_object.decision_bounds(instance.bounds))
        except (TypeError, ValueError) as exc:
            raise ValueError(f'method {method!r} does not run on problem {self.name!r}: {exc}') from None

    def planner(self, method: str, measurements: int = 0, *, seed: int = 0,
                settings: BenchSettings = BenchSettings()) -> Planner:
        """The planner of ``method`` after ``measurements`` measurements of this problem's instance ``seed``, as
        ``uncertain-bo bench`` runs them (:meth:`resolve`, :meth:`instance_for`, :meth:`Instance.drive`);
        :meth:`BenchSettings.quick` makes it quick.

        Args:
            method: a registered method's name.
            measurements: measurements taken (the planner's measurement budget); 0 = none yet.
            seed: the instance's and the run's seed.
            settings: the run's settings (``beta=None``: the problem's default).

        Returns:
            The :class:`~uncertain_bo.planning.planner.Planner`; its ``decisions`` hold one entry per measurement.

        Raises:
            KeyError: unknown method.
            ValueError: settings the problem cannot honour.

        Example:
            uGP-UCB's first decision on ``rkhs2d`` after three space-filling measurements:

            >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
            >>> planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=4, settings=BenchSettings.quick())
            >>> [d.phase for d in planner.decisions]
            ['initial', 'initial', 'initial', 'acquisition']
        """
        settings = self.resolve(settings)
        return self.instance_for(seed, settings).drive(get_method(method), settings, seed, measurements)

    def instance_for(self, seed: int, settings: BenchSettings) -> Instance:
        """The objective for ``seed`` under ``settings`` (problems on a field honour ``settings.field``).

        Raises:
            ValueError: ``settings.field`` is given for a problem without a field.
        """
        if settings.field is not None or settings.explorer or settings.sim:
            raise ValueError(f'problem {self.name!r} has no field, explorer or simulator to configure (--field, '
                             '--explorer-param, --sim-param, --params and --suite are for the rover problems)')
        self.param_values(settings)
        return self.instance(seed)

    def uses_beta(self, method: Method) -> bool:
        """Whether ``method``'s acquisition uses :math:`\\beta_t` (all but the EI-type methods and the
        baselines)."""
        return method.uses_beta and not method.name.startswith(BETA_FREE_PREFIXES)


#: method-name prefixes of acquisitions without a :math:`\\beta_t` (β variants of a sweep collapse to one run)
BETA_FREE_PREFIXES = ('uei',)


def seeded_rng(*keys: int) -> np.random.Generator:
    """Independent numpy stream for a tuple of integer keys (e.g. ``(seed, stream_id)``)."""
    return np.random.default_rng(np.random.SeedSequence([int(k) for k in keys]))

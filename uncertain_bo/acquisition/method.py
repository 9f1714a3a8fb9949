r"""The method protocol: one object per :class:`~uncertain_bo.planning.planner.Planner` for every method.

A **method** declares

- what the shared GP trains on (:attr:`Method.inputs`: the commanded targets, Gaussian location
  distributions, or sample sets such as particle clouds) and with which kernel (:meth:`Method.kernel`);
- the space it decides in (:meth:`Method.decision_bounds`: the target box by default; a joint (x, w) box for
  quadrature methods);
- how it scores a batch of candidates given a :class:`DecisionContext` (the immutable snapshot the planner hands it;
  :meth:`Method.acquisition`: a BoTorch ``AcquisitionFunction``) and how it searches (:meth:`Method.maximize`); one
  decision path for every method (:meth:`Method.decide_one`: the planner's space-filling initial design, then the
  maximiser of the acquisition less the travel cost, :meth:`Method.travel_aware`); a survey overrides it to follow
  its tour, a quadrature method to choose its context;
- how it decides a batch of ``q`` targets with pending ones (:meth:`Method.decide`: by default greedily, each pick
  decided by :meth:`Method.decide_one` on the model conditioned on the pending targets and the earlier picks, their
  readings hallucinated at the posterior mean: GP-BUCB's fantasies, Desautels et al. 2014, so a UCB method is
  GP-BUCB and any model-based acquisition is its kriging-believer batch; :attr:`Method.batch_size` is the batch the
  planner decides when the caller does not say);
- how it recommends (:meth:`Method.recommend`: by default the planner's rules over the places measured; NES
  recommends over the whole domain, BoTorch's robust loop by its risk measure over the places measured).

The planner calls these hooks and nothing else: it knows no UCB, no :math:`\beta`, no "best past target" of
its own. A method registers with the :func:`register` class decorator in its own module; adding one touches
that module and the import list of :mod:`uncertain_bo.acquisition`, nothing else.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, ClassVar, ContextManager, Sequence

import torch
from torch import Tensor

from ..distributions import Dirac, Empirical
from .observation_view import ObservationView
from .optimize import maximize
from ..seeds import decision_seed

if TYPE_CHECKING:
    from botorch.acquisition import AcquisitionFunction

    from ..distributions import ExecutionNoise, LocationDistributions
    from ..kernels import DistributionKernel
    from ..models import DistributionGP
    from ..planning.observation_log import ObservedData
    from .optimize import OptimizerSettings
    from ..planning.settings import PlannerSettings

__all__ = ['Method', 'UCBMethod', 'DecisionContext', 'Proposal', 'Recommendation', 'METHODS', 'register',
           'get_method', 'INPUT_KINDS']

#: what a method's GP trains on: Dirac inputs at the commanded targets, Gaussian location distributions
#: (a pose with covariance; particle clouds are moment-matched), or sample sets (particle clouds as they are)
INPUT_KINDS = ('target', 'gaussian', 'samples')


@dataclass(frozen=True)
class Proposal:
    """A method's choice for the next measurement, or for the next ``q`` (a batch).

    Attributes:
        target: ``(D,)`` point of the decision space (the target box unless the method says otherwise), or
            ``(q, D)`` a batch, in the order the rover should visit them.
        phase: label recorded with the decision (``'initial'``, ``'acquisition'``, ``'survey'``, ...); a tuple of
            ``q`` labels for a batch.
        acquisition_value: the method's score of the target (NaN if it has none); a tuple of ``q`` for a batch.
        beta: :math:`\\beta_t` used (NaN for methods without); a tuple of ``q`` for a batch.
        seconds: wall time of each pick of a batch (s), or None (the caller times the decision).

    Example:
        >>> import torch
        >>> batch = Proposal(torch.tensor([[0.1, 0.2], [0.3, 0.4]]), ('acquisition', 'acquisition'), (1.5, 1.2))
        >>> batch.q, [(p.target.tolist(), p.acquisition_value) for p in batch.split()]
        (2, [([0.1..., 0.2...], 1.5), ([0.3..., 0.4...], 1.2)])
    """

    target: Tensor
    phase: str | tuple[str, ...]
    acquisition_value: float | tuple[float, ...] = math.nan
    beta: float | tuple[float, ...] = math.nan
    seconds: tuple[float, ...] | None = None

    @property
    def targets(self) -> Tensor:
        """``(q, D)``: the batch (``q = 1`` for a single target)."""
        return self.target.reshape(-1, self.target.shape[-1])

    @property
    def q(self) -> int:
        return self.targets.shape[0]

    def split(self) -> list['Proposal']:
        """One single-target :class:`Proposal` per target of the batch, in order."""
        if self.target.ndim == 1:
            return [self]

        def pick(v, i):
            return v[i] if isinstance(v, tuple) else v
        return [Proposal(self.target[i], pick(self.phase, i), pick(self.acquisition_value, i), pick(self.beta, i),
                         None if self.seconds is None else (self.seconds[i],)) for i in range(self.q)]

    @classmethod
    def stack(cls, picks: Sequence['Proposal']) -> 'Proposal':
        """A batch from single-target proposals (their ``seconds`` kept per pick)."""
        return cls(torch.stack([p.target.reshape(-1) for p in picks]), tuple(p.phase for p in picks),
                   tuple(float(p.acquisition_value) for p in picks), tuple(float(p.beta) for p in picks),
                   tuple(p.seconds[0] if p.seconds else math.nan for p in picks))


@dataclass(frozen=True)
class Recommendation:
    r"""Where the method believes the robust peak is: a place that was measured (the rules over past measurements:
    the target where the rover reached it, else where the reading was taken;
    :attr:`~uncertain_bo.planning.planner.Planner.measured_places`), or for the rules that search the whole box
    (``'area_mean'``, NES, BO-UU, EI) a place predicted there (:mod:`~uncertain_bo.acquisition.recommendation`).

    Attributes:
        target: ``(D,)`` the recommended place (the target to send the rover to), e.g. :math:`\operatorname{argmax}
            _{\mathbf x_t} \hat\mu_n(\hat P_{\mathbf x_t})` over the places measured (uGP-UCB, Oliveira et al. 2019,
            Alg. 1).
        mean: predicted robust value there (field units).
        std: posterior standard deviation there (NaN if the method has none).
        index: which measurement names the place (an index into the planner's ``targets``, ``y``, ``locations``);
            -1 for an en-route reading or a place that was not measured.
        location: the location distribution of that measurement's (or en-route) reading (one, over
            :math:`\mathbb R^D`), or None for a place that was not measured.

    Example:
        After three measurements of the paper's 2-D RKHS problem (the method examples' set-up of
        :mod:`uncertain_bo.acquisition`), the planner's default rule names one of them:

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> rec = planner.recommend()
        >>> rec.measured, 0 <= rec.index < 3, sorted(rec.record(2))
        (True, True, ['index', 'location_covariance', 'location_mean', 'mean', 'std', 'target', 'type'])
    """

    target: Tensor
    mean: float
    std: float
    index: int
    location: 'LocationDistributions | None' = None

    @property
    def measured(self) -> bool:
        """The recommendation names a place where a reading was taken."""
        return self.location is not None

    def where_measured(self) -> dict[str, Any] | None:
        """Where the reading it names was taken: ``{'mean': (D,), 'covariance': (D, D) or None}`` of its location
        distribution (m, m²; None for an exactly known place), or None for a place that was not measured."""
        if self.location is None:
            return None
        cov = self.location.covariance[0]
        return {'mean': self.location.mean[0].tolist(), 'covariance': cov.tolist() if bool(cov.abs().max() > 0)
                else None}

    def record(self, index: int) -> dict[str, Any]:
        """The journal's ``recommendation`` record after measurement ``index``: the place (``target``), the
        predicted robust value and std, and where the reading it names was taken (``location_mean`` and, unless it
        is exactly known, ``location_covariance``; both absent for a place that was not measured)."""
        rec = {'type': 'recommendation', 'index': int(index), 'target': self.target.tolist(), 'mean': self.mean,
               'std': self.std}
        where = self.where_measured()
        if where is not None:
            rec['location_mean'] = where['mean']
            if where['covariance'] is not None:
                rec['location_covariance'] = where['covariance']
        return rec


@dataclass(frozen=True)
class DecisionContext:
    """What a method may look at when deciding measurement ``index`` (and the ``q - 1`` after it, for a batch) or
    recommending after it: an immutable snapshot the planner builds for each call and hands the method (never the
    planner itself).

    The GP (:attr:`model`) is the planner's, brought up to date with every observation and revision, its
    hyperparameters fitted when the schedule says so (:class:`~uncertain_bo.planning.model_schedule.ModelSchedule`), on
    first read: a method that does not read it (a survey, a pick of the initial design) fits nothing, which also
    keeps every later fit where it was (a fit starts from the previous hyperparameters). With :attr:`pending`
    targets, :attr:`model` is the GP conditioned on readings hallucinated at their candidate distributions (the
    posterior mean there, so the mean is unchanged and the variance shrinks; :meth:`~uncertain_bo.models.
    DistributionGP.condition_on_observations`) unless the method takes them itself (:attr:`Method.fantasize_pending`).

    Attributes:
        index: :math:`t`, 0-based index of the measurement being decided (= observations so far).
        settings: the planner's frozen settings (:class:`~uncertain_bo.planning.settings.PlannerSettings`); shown
            as :attr:`run_seed`, :attr:`target_bounds`, :attr:`optimizer`, :attr:`start`, :attr:`budget`,
            :attr:`in_box_exploration`, :attr:`travel_weight`.
        observations: the observations, read-only (:class:`~uncertain_bo.planning.observation_log.ObservedData`);
            shown as :attr:`targets` ``(n, D)``, :attr:`y` ``(n,)``, :attr:`locations` (one batch, None before the first
            observation) and :attr:`places` ``(n, D)`` (the places they measured: the target where it was reached,
            else the reading's location mean).
        bounds: ``(2, D)`` decision space (dtype and device to follow).
        execution_noise: the planner's (possibly learned) execution-noise model.
        robust_candidates: :meth:`candidates` are :math:`\\hat P_{\\mathbf x}` (True) or Dirac points.
        beta: the :math:`\\beta_t` schedule, ``beta(t, model) -> float``.
        position: ``(d,)`` where the rover believes it is.
        n_initial: size of the initial design (the planner's ``n_initial``, or more when more targets are decided
            before the first measurement: :attr:`~uncertain_bo.planning.planner.Planner.initial_design`);
        initial_design: its ``(n_initial, D)`` targets in visiting order.
        model_source: ``() -> DistributionGP``: the planner's GP brought up to date (read once, by :attr:`model`).
        fantasize_pending: whether :attr:`model` conditions on the :attr:`pending` targets.
        q: the number of targets to decide (1 but for a batch).
        pending: ``(p, D)`` targets decided but not yet measured (other rovers', earlier picks of this batch), or
            None; BoTorch's ``X_pending``.

    Example:
        The snapshot the planner hands the method for its next decision (index 3, after three measurements; the
        method examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> ctx = planner.snapshot()
        >>> ctx.index, ctx.targets.shape, ctx.y.shape, ctx.model.n, ctx.beta(ctx.index, ctx.model)
        (3, torch.Size([3, 2]), torch.Size([3]), 3, 2.0)
    """

    index: int
    settings: 'PlannerSettings'
    observations: 'ObservedData'
    bounds: Tensor
    execution_noise: 'ExecutionNoise'
    robust_candidates: bool
    beta: Callable[[int, 'DistributionGP'], float]
    position: Tensor
    n_initial: int
    initial_design: Tensor
    model_source: Callable[[], 'DistributionGP']
    fantasize_pending: bool = True
    q: int = 1
    pending: Tensor | None = None

    def __post_init__(self):
        object.__setattr__(self, 'q', int(self.q))
        if self.pending is not None and len(self.pending) == 0:
            object.__setattr__(self, 'pending', None)

    @property
    def run_seed(self) -> int:
        """The planner's seed."""
        return self.settings.seed

    @property
    def seed(self) -> int:
        """The decision's seed ``run_seed * 100_003 + index``: seed every random draw from it."""
        return decision_seed(self.settings.seed, self.index)

    @property
    def target_bounds(self) -> Tensor:
        """``(2, d)`` the planner's search box."""
        return self.settings.bounds

    @property
    def optimizer(self) -> 'OptimizerSettings':
        """Acquisition maximiser settings."""
        return self.settings.optimizer

    @property
    def start(self) -> Tensor | None:
        """``(d,)`` start position or None."""
        return self.settings.start

    @property
    def budget(self) -> int | None:
        """The measurement budget or None."""
        return self.settings.budget

    @property
    def in_box_exploration(self) -> bool:
        return self.settings.in_box_exploration

    @property
    def travel_weight(self) -> float:
        return self.settings.travel_weight

    def candidates(self, targets: Tensor) -> 'LocationDistributions':
        """Location distributions the method scores for ``targets`` ``(q, d)``: :math:`\\hat P_{\\mathbf x}` for
        robust methods, Dirac points otherwise."""
        return self.execution_noise(targets) if self.robust_candidates else Dirac(targets)

    # views of the observations (ObservationView: the same attributes as the planner's)
    targets = ObservationView('``(n, D)`` past targets.')
    y = ObservationView('``(n,)`` past readings (field units).')
    locations = ObservationView('Past location distributions as one batch (built on first use; None before any '
                                'observation).')
    places = ObservationView("``(n, D)`` the places the past measurements measured (:attr:`~uncertain_bo.planning."
                             "planner.Planner.measured_places`: the target where the rover reached it, else where the "
                             "reading was taken): what a recommendation of the robust objective over past measurements "
                             "ranks.")

    def measured_recommendation(self, i: int, mean: float, std: float, place: Tensor | None = None) -> Recommendation:
        """The recommendation of measurement ``i``: its place (default ``places[i]``) and the location distribution of
        its reading, with the predicted robust value ``mean`` and its std there (field units)."""
        place = self.places[i] if place is None else place
        return Recommendation(place.clone(), float(mean), float(std), int(i), self.locations[i])

    @cached_property
    def model(self) -> 'DistributionGP':
        """The shared GP with every observation, hyperparameters fitted per the planner's schedule; conditioned on
        the :attr:`pending` targets' hallucinated readings when there are any (unless the method takes them
        itself, :attr:`Method.fantasize_pending`)."""
        model = self.model_source()
        if self.pending is None or not self.fantasize_pending:
            return model
        with torch.no_grad():
            where = self.candidates(self.pending.to(model.bounds))
            stored = self.locations
            if isinstance(stored, Empirical) and not isinstance(where, Empirical):   # particle clouds: alike
                gen = torch.Generator(device=model.bounds.device).manual_seed(int(self.seed))
                where = Empirical(where.sample(stored.samples.shape[-2], gen))
            return model.hallucinate(where)

    def pick(self, j: int, pending: Tensor | None) -> 'DecisionContext':
        """The context of pick ``j`` of a batch: measurement ``index + j`` (its seed and initial-design slot), one
        target, with ``pending`` targets."""
        return dataclasses.replace(self, index=self.index + j, q=1, pending=pending)


class Method:
    """Base class of every method (see the module docstring). One instance per planner; it may keep state
    (a survey's planned tour, a fitted BoTorch model) as long as that state follows from the context, so a run
    resumed from its journal decides the same.

    Args:
        **settings: the method's own settings (``Planner(method_settings=...)``); the base class takes none.

    Raises:
        TypeError: unknown settings.

    Example:
        A method of one's own: the robust posterior mean (pure exploitation), BoTorch's ``PosteriorMean`` on the
        model seen through the execution-noise model; registered, it decides like any other (the method examples'
        set-up of :mod:`uncertain_bo.acquisition`):

        >>> from botorch.acquisition import PosteriorMean
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> from uncertain_bo.models import TargetModel
        >>> @register
        ... class RobustMean(Method):
        ...     name = 'doc_robust_mean'
        ...     def acquisition(self, ctx):
        ...         return PosteriorMean(TargetModel(ctx.model, ctx.execution_noise))
        >>> planner = get_problem('rkhs2d').planner('doc_robust_mean', measurements=4,
        ...                                         settings=BenchSettings.quick(beta=2.0))
        >>> planner.decisions[-1].phase, planner.targets[-1].shape
        ('acquisition', torch.Size([2]))
        >>> del METHODS['doc_robust_mean']
    """

    name: ClassVar[str] = ''
    description: ClassVar[str] = ''
    inputs: ClassVar[str] = 'gaussian'
    robust_candidates: ClassVar[bool] = True
    uses_beta: ClassVar[bool] = False
    baseline: ClassVar[bool] = False
    #: targets decided at once when the caller does not say (``Planner.suggest()``; the rover then visits them in
    #: order): 1 but for batch methods
    batch_size: ClassVar[int] = 1
    #: the method plans its own visiting order (a survey's tour): the planner's route horizon leaves it alone
    plans_route: ClassVar[bool] = False
    #: the registered method this one is another name for (the same model and acquisition), or None
    alias_of: ClassVar[str | None] = None
    #: pending targets enter as hallucinated readings in ``ctx.model`` (True), or the method passes them to its
    #: acquisition itself (False: BoTorch's MC acquisitions take ``X_pending`` jointly)
    fantasize_pending: ClassVar[bool] = True
    #: the acquisition takes points of the unit cube of the decision space (BoTorch's normalised inputs), not the
    #: decision space itself (:meth:`travel_aware` maps them back to measure the travel)
    unit_inputs: ClassVar[bool] = False

    def __init__(self, **settings: Any):
        if settings:
            raise TypeError(f'method {self.name!r} takes no settings, got {", ".join(sorted(settings))}')

    def count_setting(self, name: str, value: Any) -> int:
        """``value`` of the method's setting ``name`` checked as a count (an integer >= 1, not a bool).

        Raises:
            ValueError: it is not (one line naming the method and the setting).
        """
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f'method {self.name!r}: {name} must be an integer >= 1, got {value!r}')
        return value

    def kernel(self, dim: int) -> 'DistributionKernel | None':
        """The GP's kernel over ``dim``-dimensional inputs; None for the default (closed-form expected SE)."""
        return None

    def decision_bounds(self, bounds: 'Tensor') -> 'Tensor':
        """``(2, D)`` decision space for the planner's ``(2, d)`` search box (default: the box itself)."""
        return bounds

    def check_space(self, bounds: 'Tensor') -> None:
        """Whether the method can decide in the ``(2, D)`` decision space ``bounds`` by design (default: any);
        ``uncertain-bo bench`` asks before any run
        (:meth:`~uncertain_bo.benchmarks.base.Problem.check_method`).

        Raises:
            ValueError: one line saying why not (e.g. a boustrophedon survey of a space that is not 2-D).
        """

    def acquisition(self, ctx: DecisionContext) -> 'AcquisitionFunction':
        """Acquisition scoring candidates ``X`` of shape ``(b, 1, D)`` -> ``(b,)`` (maximised by
        :meth:`decide_one`) on ``ctx.model``.

        Raises:
            NotImplementedError: the method decides by its own rule only.
        """
        raise NotImplementedError(f'method {self.name!r} has no acquisition function')

    def decide(self, ctx: DecisionContext) -> Proposal:
        """The next ``ctx.q`` targets: greedily, pick ``j`` by :meth:`decide_one` with the context of measurement
        ``ctx.index + j`` whose pending targets are ``ctx.pending`` and picks ``0 .. j-1`` (GP-BUCB's sequential
        batch, Desautels et al. 2014, Alg. 1, for a UCB method; the model's hallucinated readings are the posterior
        mean). One target (``q = 1``, no pending targets) is :meth:`decide_one` itself."""
        if ctx.q == 1 and ctx.pending is None:
            return self.decide_one(ctx)
        picks: list[Proposal] = []
        chosen: list[Tensor] = [] if ctx.pending is None else [ctx.pending.to(ctx.bounds)]
        for j in range(ctx.q):
            t0 = time.perf_counter()
            p = self.decide_one(ctx.pick(j, torch.cat(chosen) if chosen else None))
            picks.append(Proposal(p.target, p.phase, p.acquisition_value, p.beta, (time.perf_counter() - t0,)))
            chosen.append(p.target.reshape(1, -1).to(ctx.bounds))
        return Proposal.stack(picks)

    def decide_one(self, ctx: DecisionContext) -> Proposal:
        """One target, by the one decision path of every method: the planner's space-filling initial design for the
        first ``n_initial`` measurements, then :meth:`maximize` of :meth:`acquisition` less the travel cost
        (:meth:`travel_aware`), inside :meth:`decision_scope`, on ``ctx.model`` (conditioned on ``ctx.pending``).
        A method changes how it scores (:meth:`acquisition`) or searches (:meth:`maximize`), not this path, so the
        travel penalty and (in the planner) the keep-out zones apply to every method."""
        if ctx.index < ctx.n_initial:
            return Proposal(ctx.initial_design[ctx.index].clone(), 'initial')
        with self.decision_scope(ctx):
            acq = self.acquisition(ctx)
            target, value = self.maximize(self.travel_aware(acq, ctx), ctx)
        return Proposal(target, 'acquisition', value, self.reported_beta(acq))

    def decision_scope(self, ctx: DecisionContext) -> ContextManager:
        """A context the acquisition is built and maximised in (default: none); a method whose acquisition draws
        from the global random stream seeds it here, so both steps see one seeded stream."""
        return contextlib.nullcontext()

    def maximize(self, acq: 'AcquisitionFunction', ctx: DecisionContext) -> tuple[Tensor, float]:
        """``(target (D,), value)``: the maximiser of ``acq`` over ``ctx.bounds`` (the planner's maximiser, seeded with
        ``ctx.seed``). A method that searches otherwise (a candidate set, BoTorch's ``optimize_acqf``) overrides it."""
        return maximize(acq, ctx.bounds, ctx.optimizer, seed=ctx.seed)

    def travel_aware(self, acq: 'AcquisitionFunction', ctx: DecisionContext, dims: int | None = None
                     ) -> 'AcquisitionFunction':
        """``acq`` less the cost of driving from ``ctx.position`` (:class:`~uncertain_bo.acquisition.travel.
        TravelPenalty`, ``w = ctx.travel_weight``; ``acq`` itself when it is 0): the one place the travel penalty is
        applied. ``dims``: the first coordinates of the decision space that are the rover's (a joint (x, w) space);
        :attr:`unit_inputs`: ``acq`` takes points of the unit cube of ``ctx.bounds``."""
        if not ctx.travel_weight > 0:
            return acq
        from .travel import TravelPenalty
        d = ctx.bounds.shape[-1] if dims is None else dims
        return TravelPenalty(acq, ctx.position[:d], ctx.bounds[:, :d], ctx.travel_weight,
                             ctx.model.hyperparameters()['outputscale'] ** 0.5, unit_inputs=self.unit_inputs)

    def reported_beta(self, acq: 'AcquisitionFunction') -> float:
        """:math:`\\beta_t` recorded with a decision, as the weight of :math:`\\sigma` (the paper's convention): the
        square root of the acquisition's ``beta`` (BoTorch's convention, which ours follow), NaN for an acquisition
        without one."""
        return math.sqrt(float(acq.beta)) if hasattr(acq, 'beta') else math.nan

    def recommend(self, ctx: DecisionContext, rule: str | None) -> Recommendation | None:
        """The method's own recommendation, or None for the planner's rule ``rule`` (or its default rule when
        ``rule`` is None). ``rule`` is the caller's explicit choice; methods with a rule of their own use it
        only when ``rule`` is None."""
        return None


class UCBMethod(Method):
    r"""Upper confidence bound :math:`\hat\mu(P_{\mathbf x}) + \beta_t \hat\sigma(P_{\mathbf x})` over the
    candidates' location distributions (uGP-UCB: Oliveira et al. 2019, Alg. 1; GP-UCB, IGP-UCB, AIRBO's UCB).
    :math:`\beta_t` comes from the planner's schedule; with ``in_box_exploration`` the exploration term is
    weighted by the kernel footprint's share inside the bounds.

    Example:
        The planner's :math:`\beta_t = 2` weights :math:`\sigma`; BoTorch's ``beta`` is its square (the method
        examples' set-up of :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = UCBMethod().acquisition(planner.snapshot())
        >>> type(acq).__name__, acq.beta, UCBMethod().reported_beta(acq)
        ('TargetUpperConfidenceBound', 4.0, 2.0)
    """

    uses_beta: ClassVar[bool] = True

    def acquisition(self, ctx: DecisionContext) -> 'AcquisitionFunction':
        from .ucb import TargetUpperConfidenceBound
        model = ctx.model      # the schedule's beta_t weights sigma (the papers'); BoTorch's beta is its square
        return TargetUpperConfidenceBound(model, ctx.candidates, ctx.beta(ctx.index, model) ** 2,
                                          in_box=ctx.in_box_exploration)


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a :class:`Method` subclass to :data:`METHODS` under ``cls.name``.

    Raises:
        ValueError: empty or already registered name, an unknown :attr:`Method.inputs`, a batch size below 1 or an
            alias of a method not registered.
    """
    if not cls.name:
        raise ValueError(f'{cls.__name__} has no name')
    if cls.name in METHODS:
        raise ValueError(f'method {cls.name!r} is already registered')
    if cls.inputs not in INPUT_KINDS:
        raise ValueError(f'{cls.__name__}.inputs must be one of {INPUT_KINDS}, got {cls.inputs!r}')
    if not (isinstance(cls.batch_size, int) and cls.batch_size >= 1):
        raise ValueError(f'{cls.__name__}.batch_size must be an integer >= 1, got {cls.batch_size!r}')
    if cls.alias_of is not None and cls.alias_of not in METHODS:
        raise ValueError(f'{cls.__name__} is an alias of {cls.alias_of!r}, which is not registered')
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

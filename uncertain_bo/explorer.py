"""The measurement cycle of a localisation-aware explorer, without ROS.

The explorer turns a stream of pose estimates (with covariance) and sensor readings into measurements
(location distribution :math:`P^L_t`, reading :math:`y_t`) for a :class:`~uncertain_bo.planner.Planner`
and sends the rover to the planner's targets (docs/architecture.md, measurement cycle)::

    WAITING_FOR_POSE -> DECIDING -> DRIVING -> DWELLING -> MEASURING -> DECIDING ... -> DONE
                                       | goal_timeout: stop and measure where the rover is
                                                                 | reading_timeout: retry, then skip
    any state but DONE -> PAUSED (localisation diverged: stop) -> DRIVING to the same target (recovered)

- A reading is paired with the pose estimate **nearest in time**. While no pose newer than the reading
  has arrived (the localisation output lags the sensor, or has stopped), the reading is held, for at most
  ``reading_timeout``; once newer poses exist the nearest one is final, and if it is more than
  ``max_pose_age`` away the reading is dropped with a warning.
- Poses with NaN/inf, negative variances or non-PSD covariances, in the wrong frame, stamped more than
  ``max_pose_age`` before the host's clock (stale: the localisation lags, or a bag is replayed without
  simulated time) or more than ``future_stamp_tolerance`` after it never reach the buffer. Readings are
  rejected outside ``reading_range``, stamped in the future, or older than ``reading_timeout`` (stamped 0,
  another clock); a future-stamped reading can never hold up the measuring stage, which measures or skips
  the target within ``reading_timeout`` x (``reading_retries`` + 1). A skipped target is reported as
  "sensor silent" only when no reading arrived at all, else with the reasons the readings were refused.
  A pose stamped before the newest buffered pose by more than ``max_pose_age`` (bag loop, simulation
  reset) clears the pose and reading buffers. Each rejection is logged with its reason (floods are
  throttled) and counted by category in :attr:`Explorer.rejected`.
  A zero covariance is valid: an exactly known position (a Dirac location).
- **Localisation divergence:** when the trace of the newest pose's position covariance exceeds
  ``max_covariance_trace`` the explorer stops the rover and pauses (no measurement is taken); it resumes
  towards the same target once the trace is back below ``RESUME_FRACTION`` of the threshold.
- **Restarts:** a planner resumed from a journal whose last decision has no observation yet hands that
  target back (:meth:`~uncertain_bo.planner.Planner.take_resumed_target`); the explorer re-sends it as the
  goal instead of deciding again, so a crash mid-drive costs neither a measurement nor a decision.
- Targets come from the planner, which keeps them in the search bounds. With a ``decider`` executor the
  planner decides on a worker thread while inputs keep arriving (the ROS node's diagnostics keep going).
- **Location distributions follow the kernel.** A pose estimate may carry the localiser's particle cloud
  (:meth:`PoseEstimate.from_particles`, e.g. AMCL's or the simulation's particle filter). When the method's
  GP trains on location distributions through a sample-based kernel
  (:class:`~uncertain_bo.kernels.SampleDistributionKernel`: ``airbo``, ``airbo_empirical``, ``ugp_kme``)
  the measurement is stored as an :class:`~uncertain_bo.distributions.Empirical` location distribution of
  ``max_particles`` particles (systematic resampling of the weighted cloud to uniform weights, in random
  order, so that any prefix is itself a fair subsample); otherwise as the moment-matched
  :class:`~uncertain_bo.distributions.Gaussian`. A run keeps one kind: a resumed journal's kind (and
  particle count) wins over the parameters, and a pose without particles in an empirical run is stored as
  ``max_particles`` deterministic draws of its Gaussian. Particle clouds are validated like covariances
  (finite, in range, weights finite, non-negative with a positive finite sum) and reduced to
  ``max_particles`` on arrival (dropped when not needed), so the pose buffer stays bounded.

The ROS node (:mod:`uncertain_bo.ros.explorer`) and the in-process simulation runner drive the same
class through :meth:`Explorer.on_pose`, :meth:`Explorer.on_reading` and :meth:`Explorer.tick`, and
receive its actions through an :class:`ExplorerOutputs` implementation.
"""
from __future__ import annotations

import enum
import logging
import math
import time
from collections import Counter, deque
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Protocol

import numpy as np
import torch

from .covariance import covariance_problem
from .acquisition import METHODS
from .distributions import (DTYPE, Empirical, Gaussian, GaussianExecutionNoise, InvalidDistributionError,
                            LocationDistributions)
from .optim import OptimizerSettings
from .parameters import Param
from .planner import RECOMMENDATION_RULES, InvalidObservationError, Planner, Recommendation

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'PoseEstimate', 'Reading', 'Measurement',
           'EXPLORER_PARAMS', 'RESUME_FRACTION', 'READING_QUEUE', 'MAX_ABS_COORDINATE', 'MAX_ABS_READING',
           'check_explorer_parameters', 'psd_projection', 'position_trace', 'resample_particles',
           'takes_sample_sets', 'planner_from_parameters']

log = logging.getLogger(__name__)

#: after a divergence pause, resume when the covariance trace is below this fraction of the threshold
RESUME_FRACTION = 0.8
#: poses with a coordinate beyond this (m) are rejected: sentinels/overflow, not a place on Earth's surface
MAX_ABS_COORDINATE = 1e7
#: outermost bound of the ``reading_range`` parameter (keeps the GP's standardisation of the readings from
#: overflowing whatever the configuration)
MAX_ABS_READING = 1e12
#: least wall time between two warnings of the same throttled kind (stamp jumps), s
WARN_PERIOD = 5.0
#: a stale stamp older than the clock by more than this (s) comes from another clock (wall time vs
#: simulated time), not from latency: the log hint says so
STALE_REPLAY_AGE = 3600.0
#: readings queued while measuring (the oldest are dropped beyond this: bounded memory at any rate)
READING_QUEUE = 64

EXPLORER_PARAMS = [
    Param('search_bounds', [0.0, 200.0, 0.0, 200.0],
          'search area [xmin, xmax, ymin, ymax] in the map frame, m; targets never leave it (a change at '
          'run time applies from the next decision)', range=(-1e7, 1e7), length=4),
    Param('frame_id', 'map', 'world-fixed frame of poses and goals (a map-frame estimate with absolute '
          'corrections: an odom-frame covariance grows without bound)', read_only=True),
    Param('method', 'ugp_ucb', 'BO method (registry name); the GP kernel follows the input type: sample-based '
          'kernels (airbo, airbo_empirical, ugp_kme) get empirical location distributions from a particle cloud',
          choices=tuple(sorted(METHODS)), read_only=True),
    Param('execution_noise_std', [0.75, 0.75],
          'std of the execution-noise model P̂_x = N(x, diag(std²)) along x and y, m', range=(0.0, 1000.0),
          length=2),
    Param('beta', 3.0, 'UCB exploration weight β (μ + β σ), dimensionless', range=(0.0, 100.0)),
    Param('recommendation', 'highest_reading', 'where the robust peak is reported: ' + '; '.join(
          f'{k}: {v}' for k, v in RECOMMENDATION_RULES.items()), choices=tuple(RECOMMENDATION_RULES),
          read_only=True),
    Param('travel_weight', 0.0, 'travel-aware acquisition: subtract w x (GP signal std) x (distance to the target '
          '/ diagonal of search_bounds) from the acquisition, i.e. crossing the whole area costs w prior standard '
          'deviations of the field; 0 = off (dimensionless)', range=(0.0, 100.0), read_only=True),
    Param('in_box_exploration', True, "weight UCB's exploration term by the share of the kernel footprint "
          'inside search_bounds (against targets piling up on the edge of the area; UCB methods only)',
          read_only=True),
    Param('learn_execution_noise', False, 'learn the execution-noise covariance online from (target, location '
          'estimate) pairs of reached goals, with execution_noise_std as the prior', read_only=True),
    Param('execution_noise_prior_weight', 5.0, 'weight of execution_noise_std as the prior of the learned '
          'execution noise, in pseudo-measurements', range=(0.0, 1e6), read_only=True),
    Param('n_initial', 5, 'space-filling targets before the acquisition takes over', range=(1, 10000),
          read_only=True),
    Param('max_measurements', 30, 'stop after this many measurements', range=(1, 1000000)),
    Param('refit_every', 1, 'refit GP hyperparameters every N measurements (0 = never)', range=(0, 1000000)),
    Param('num_restarts', 10, 'L-BFGS-B restarts of the acquisition maximiser', range=(1, 1000)),
    Param('raw_samples', 512, 'quasi-random candidates scored to choose the restarts', range=(1, 100000)),
    Param('arrival_tolerance', 1.0, 'distance from the estimated position to the target that counts as '
          'arrived, m', range=(0.01, 1000.0)),
    Param('goal_timeout', 300.0, 'time allowed to reach a target before measuring wherever the rover is, s',
          range=(1.0, 1e6)),
    Param('dwell_time', 2.0, 'wait after arrival before taking the reading (rover settles), s',
          range=(0.0, 3600.0)),
    Param('max_pose_age', 0.5, 'largest |t_reading - t_pose| for pairing a reading with a pose, and largest '
          'age of an arriving pose relative to the node clock (older ones are stale and rejected), s',
          range=(0.001, 60.0)),
    Param('reading_timeout', 10.0, 'wait this long for a reading before retrying, s', range=(0.1, 3600.0)),
    Param('reading_retries', 2, 'retries when no usable reading arrived before skipping the target',
          range=(0, 100)),
    Param('future_stamp_tolerance', 0.5, 'poses and readings stamped further than this ahead of the node '
          'clock are rejected (clock skew between machines, or a broken driver clock), s', range=(0.0, 3600.0)),
    Param('reading_range', [-1e6, 1e6], 'plausible readings [low, high] in the sensor\'s unit; readings '
          'outside are rejected and counted (sentinels such as 1e12, overflowed or unscaled values)',
          range=(-MAX_ABS_READING, MAX_ABS_READING), length=2),
    Param('pose_buffer_size', 500, 'pose estimates kept for pairing (bounds memory at any input rate)',
          range=(10, 1000000)),
    Param('max_particles', 160, 'particles kept per empirical location distribution (particle-cloud poses with '
          'a sample-based kernel): the cloud is resampled to this many equally weighted particles; bounds '
          'memory, journal size and kernel cost', range=(1, 100000), read_only=True),
    Param('max_covariance_trace', 25.0, 'localisation divergence: when the trace of the position covariance '
          f'exceeds this the rover is stopped and the explorer pauses; it resumes below '
          f'{RESUME_FRACTION:g} x this, m²', range=(1e-6, 1e12)),
    Param('seed', 0, 'seed of the initial design and the acquisition maximiser', range=(0, 2 ** 31 - 1),
          read_only=True),
    Param('run_dir', '', 'output folder for the journal (empty: runs/<date-time>); an existing journal '
          'there is resumed', read_only=True),
]


def check_explorer_parameters(values: Mapping[str, Any]) -> str | None:
    """Cross-field checks of explorer parameters (each value is already valid on its own).

    Returns:
        None if consistent, else the reason (names the parameter).
    """
    b = values.get('search_bounds')
    if b is not None:
        xmin, xmax, ymin, ymax = b
        if not (xmax > xmin and ymax > ymin):
            return (f"parameter 'search_bounds' = {list(b)} is invalid: need xmax > xmin and ymax > ymin "
                    '(order [xmin, xmax, ymin, ymax])')
    r = values.get('reading_range')
    if r is not None and not r[1] > r[0]:
        return f"parameter 'reading_range' = {list(r)} is invalid: need [low, high] with high > low"
    return None


def position_trace(cov: np.ndarray) -> float:
    """``var x + var y`` of a (2, 2) covariance, m² (inf rather than a warning when it overflows)."""
    return float(cov[0][0]) + float(cov[1][1])


def psd_projection(cov: np.ndarray) -> np.ndarray:
    """Exactly symmetric, positive semi-definite version of a (2, 2) covariance that passed
    :func:`~uncertain_bo.covariance.covariance_problem` (which tolerates round-off asymmetry and tiny
    negative eigenvalues).

    The off-diagonal becomes the mean of the two, negative variances become 0, and the off-diagonal is
    clipped to ``|xy| <= sqrt(xx) sqrt(yy)`` (a 2x2 matrix is PSD iff its diagonal and determinant are
    non-negative): robust where an eigendecomposition of an ill-conditioned matrix (e.g. variances 0 and
    1e165, off-diagonal 1e-12) is not. Exact zeros stay zero (a Dirac).
    """
    c = np.asarray(cov, dtype=float).reshape(2, 2)
    a, d = max(c[0, 0], 0.0), max(c[1, 1], 0.0)
    s = 0.5 * c[0, 1] + 0.5 * c[1, 0]
    bound = math.sqrt(a) * math.sqrt(d)
    if abs(s) > bound:
        s = math.copysign(bound, s)
    return np.array([[a, s], [s, d]])


class State(enum.Enum):
    WAITING_FOR_POSE = 'waiting for pose'
    DECIDING = 'deciding'
    DRIVING = 'driving'
    DWELLING = 'dwelling'
    MEASURING = 'measuring'
    PAUSED = 'paused'
    DONE = 'done'


@dataclass(frozen=True)
class PoseEstimate:
    """A localisation estimate: stamp (s), frame, position mean ``(2,)`` m, covariance ``(2, 2)`` m², and
    optionally the particle cloud it summarises: ``samples`` ``(m, 2)`` m with ``weights`` ``(m,)`` (None:
    equal weights)."""

    stamp: float
    frame_id: str
    xy: np.ndarray
    cov: np.ndarray
    samples: np.ndarray | None = None
    weights: np.ndarray | None = None

    @classmethod
    def from_particles(cls, stamp: float, frame_id: str, samples, weights=None) -> 'PoseEstimate':
        """Estimate of a particle cloud: the cloud plus its moment-matched mean and (population) covariance.

        Not validated beyond what moment matching needs (the explorer validates on arrival); overflow
        gives non-finite moments, which the explorer rejects.

        Args:
            stamp: time of the cloud, s.
            frame_id: frame of the particles.
            samples: ``(m, 2)`` particle positions, m (``(m, k)`` with ``k > 2``: the first two columns).
            weights: ``(m,)`` non-negative weights with a positive finite sum (normalised here), or None.

        Raises:
            ValueError: an empty cloud, samples not ``(m, >= 2)``, or weights that are not finite,
                non-negative, one per particle with a positive finite sum.
        """
        x = np.asarray(samples, dtype=float)
        if x.ndim != 2 or x.shape[1] < 2:
            raise ValueError(f'particle samples must be (m, 2), got shape {x.shape}')
        x = np.ascontiguousarray(x[:, :2])
        if x.shape[0] == 0:
            raise ValueError('empty particle cloud')
        w = None
        if weights is not None:
            w = np.asarray(weights, dtype=float).reshape(-1)
            problem = _weights_problem(w, x.shape[0])
            if problem:
                raise ValueError(f'particle weights {problem}')
            with np.errstate(over='ignore', invalid='ignore', under='ignore'):
                w = w / w.sum()
        wn = np.full(x.shape[0], 1.0 / x.shape[0]) if w is None else w
        with np.errstate(over='ignore', invalid='ignore', under='ignore'):
            mean = wn @ x
            d = x - mean
            cov = (wn[:, None] * d).T @ d
        return cls(float(stamp), frame_id, mean, cov, x, w)


def _weights_problem(w: np.ndarray, m: int) -> str | None:
    """Why ``w`` are not usable particle weights for ``m`` particles, or None."""
    if w.shape != (m,):
        return f'must be one per particle ({m}), got {w.shape[0] if w.ndim == 1 else w.shape}'
    if not np.all(np.isfinite(w)):
        return 'contain NaN or inf'
    if np.any(w < 0):
        return 'contain negative values'
    with np.errstate(over='ignore'):
        total = w.sum()
    if not 0 < total < np.inf:
        return f'must have a positive finite sum, got {total}'
    return None


def resample_particles(samples: np.ndarray, weights: np.ndarray | None, m: int,
                       rng: np.random.Generator) -> np.ndarray:
    """``m`` equally weighted particles representing a weighted cloud: systematic resampling (one uniform
    offset, ``m`` evenly spaced positions on the cumulative weights; Douc & Cappé 2005), returned in random
    order so that any prefix is itself a fair subsample (sample-based kernels may use only the first few).

    filterpy's ``systematic_resample`` draws as many indices as there are weights, hence ``np.searchsorted``.

    Args:
        samples: ``(N, d)`` particles.
        weights: ``(N,)`` normalised weights, or None for equal weights.
        m: number of particles wanted (>= 1).
        rng: random generator (offset and order).

    Returns:
        ``(m, d)`` particles (copies of input particles).
    """
    x = np.asarray(samples, dtype=float)
    n = x.shape[0]
    if weights is None:
        cum = np.arange(1, n + 1, dtype=float) / n
    else:
        cum = np.cumsum(np.asarray(weights, dtype=float))
        cum /= cum[-1]
    positions = (rng.random() + np.arange(m)) / m
    idx = np.minimum(np.searchsorted(cum, positions, side='right'), n - 1)
    return x[rng.permutation(idx)]


def takes_sample_sets(planner: Planner) -> bool:
    """True when ``planner``'s GP trains on location distributions through a sample-based kernel
    (:class:`~uncertain_bo.kernels.SampleDistributionKernel`), i.e. an empirical location distribution is
    used as such rather than moment-matched."""
    return planner.input_kind == 'samples'


def planner_from_parameters(params: dict, **overrides) -> Planner:
    """The explorer's :class:`~uncertain_bo.planner.Planner` from validated explorer parameters (one place for
    the ROS node and the in-process mission).

    Args:
        params: validated ``EXPLORER_PARAMS`` values (``search_bounds`` in m, ``execution_noise_std`` in m, ...).
        **overrides: Planner arguments that replace the parameters' (``execution_noise``, ``journal``,
            ``metadata``, ``beta``, ...).

    Raises:
        ValueError, KeyError: see :class:`~uncertain_bo.planner.Planner`.
    """
    xmin, xmax, ymin, ymax = params['search_bounds']
    kwargs = dict(execution_noise=GaussianExecutionNoise.isotropic(params['execution_noise_std']),
                  method=params['method'], beta=params['beta'], n_initial=params['n_initial'],
                  refit_every=params['refit_every'], seed=params['seed'], budget=params['max_measurements'],
                  recommendation=params['recommendation'], travel_weight=params['travel_weight'],
                  in_box_exploration=params['in_box_exploration'],
                  execution_noise_prior_weight=(params['execution_noise_prior_weight']
                                                if params['learn_execution_noise'] else None),
                  optimizer=OptimizerSettings(params['num_restarts'], params['raw_samples']))
    kwargs.update(overrides)
    return Planner(torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE), **kwargs)


@dataclass(frozen=True)
class Reading:
    """A sensor reading: stamp (s, None if the message has no header), value, variance (0 = unknown)."""

    stamp: float | None
    value: float
    variance: float = 0.0


@dataclass(frozen=True)
class Measurement:
    """A stored measurement (what went into the planner)."""

    index: int
    target: np.ndarray
    pose: PoseEstimate
    reading: Reading
    timed_out: bool


class ExplorerOutputs(Protocol):
    """What the explorer asks its host (ROS node or in-process runner) to do."""

    def send_goal(self, target: np.ndarray) -> None:
        """Drive to ``target`` ``(2,)`` (map frame, m)."""

    def stop(self, position: np.ndarray) -> None:
        """Cancel the current goal and hold at ``position``."""

    def measured(self, measurement: Measurement, recommendation: Recommendation) -> None:
        """A measurement was stored; ``recommendation`` is the planner's current best target."""

    def finished(self, recommendation: Recommendation) -> None:
        """All measurements done."""


@dataclass
class Explorer:
    """Measurement cycle around a :class:`~uncertain_bo.planner.Planner`.

    Args:
        planner: the planner (its journal, if any, receives every measurement).
        outputs: host callbacks.
        params: validated :data:`EXPLORER_PARAMS` values. The dict is read live: a host that updates it
            (run-time parameter changes) calls :meth:`apply_parameters` for values with derived state.
        decider: where decisions run. None: inside :meth:`tick` (the caller waits for it). An executor
            (e.g. a one-thread ``ThreadPoolExecutor``): ``planner.suggest`` runs there while :meth:`tick`,
            :meth:`on_pose` and :meth:`on_reading` keep working (state stays DECIDING until it is done), so a
            host can keep publishing diagnostics during a long decision. The host owns the executor.

    Attributes:
        state: current stage.
        rejected: rejected inputs by category (``'pose: stale stamp'``, ...); the set of keys is bounded.
        target: current target ``(2,)`` or None.
        goal_reason: why the current goal was sent: ``'new'`` (a fresh decision), ``'resumed'`` (the
            journal's pending decision after a restart) or ``'after pause'``.
        received: counts of ``'poses'`` and ``'readings'`` handed in.
        last_reason: the most recent rejection with its detail (None if none).
        last_decision_wall_time: ``time.time()`` of the last decision (None before the first).
        paused_reason: why the explorer is paused (None unless :attr:`state` is PAUSED).
        goal_timeouts: how many goals timed out (measured where the rover was).
    """

    planner: Planner
    outputs: ExplorerOutputs
    params: dict[str, Any]
    decider: Executor | None = None
    state: State = field(default=State.WAITING_FOR_POSE, init=False)
    rejected: Counter = field(default_factory=Counter, init=False)
    target: np.ndarray | None = field(default=None, init=False)

    def __post_init__(self):
        self._poses: deque[PoseEstimate] = deque(maxlen=int(self.params['pose_buffer_size']))
        self._readings: deque[Reading] = deque(maxlen=READING_QUEUE)
        self._goal_time = self._dwell_end = self._measure_start = 0.0
        self._timed_out = False
        self._retries = 0
        self._last_now: float | None = None
        self._paused_from: State | None = None
        self.last_reason: str | None = None
        self.goal_reason = 'new'
        self.received: Counter = Counter()
        self.last_decision_wall_time: float | None = None
        self.paused_reason: str | None = None
        self.goal_timeouts = 0
        self._warned: dict[str, tuple[float, int]] = {}
        self._window_received = 0     # readings handed in during the current measuring window
        self._window_rejects: Counter = Counter()  # why readings of the current window were not used
        self._decision: Future | None = None
        self._pending_changes: dict[str, Any] = {}
        self._rng = np.random.default_rng(np.random.SeedSequence([int(self.params['seed']), 0x9A27]))
        self._sample_kernel = takes_sample_sets(self.planner)
        self._stored_particles = self._journal_particles()  # None: undecided, 0: Gaussian, m: Empirical
        if self.planner.n >= self.params['max_measurements']:
            self.state = State.DONE

    def _journal_particles(self) -> int | None:
        """Kind of the planner's existing locations: None (none yet), 0 (parametric) or the particle count."""
        if not self.planner.n:
            return None
        try:
            locations = self.planner.locations
        except InvalidDistributionError as exc:  # pragma: no cover - the planner itself refuses mixed kinds
            log.warning('stored locations cannot be combined (%s): storing Gaussian summaries', exc)
            return 0
        if isinstance(locations, Empirical):
            m = int(locations.samples.shape[1])
            if m != self.params['max_particles']:
                log.info('the journal holds empirical locations of %d particles: keeping %d (max_particles = %d '
                         'applies to new runs)', m, m, self.params['max_particles'])
            return m
        if self._sample_kernel:
            log.info('the journal holds Gaussian locations: storing moment-matched Gaussians in this run too')
        return 0

    @property
    def location_particles(self) -> int:
        """Particles per stored empirical location distribution, 0 when the run stores Gaussians (or has not
        decided yet and will not use particles)."""
        m = self._wanted_particles()
        return m or 0

    def _wanted_particles(self) -> int | None:
        """Particles to keep per pose: the run's count, ``max_particles`` while undecided with a sample-based
        kernel, else None (no particles needed)."""
        if self._stored_particles is None:
            return int(self.params['max_particles']) if self._sample_kernel else None
        return self._stored_particles or None

    # ------------------------------------------------------------ inputs
    @property
    def latest_pose(self) -> PoseEstimate | None:
        return self._poses[-1] if self._poses else None

    @property
    def buffered(self) -> tuple[int, int]:
        """``(poses, readings)`` currently buffered (bounded by ``pose_buffer_size`` and
        :data:`READING_QUEUE`)."""
        return len(self._poses), len(self._readings)

    def on_pose(self, pose: PoseEstimate, now: float | None = None) -> bool:
        """Buffer a pose estimate after validation. Returns False (and logs why) if rejected.

        Args:
            pose: the estimate.
            now: the host's clock (same clock as the stamps), s; when given, a pose stamped more than
                ``max_pose_age`` before it is stale and rejected. None skips that check (no valid clock yet).
        """
        self.received['poses'] += 1
        problem = self._pose_problem(pose)
        if problem is not None:
            self._reject('pose', *problem)
            return False
        max_age = self.params['max_pose_age']
        if now is not None:
            problem = self._stamp_problem(pose.stamp, now, max_age)
            if problem is not None:
                self._reject('pose', *problem)
                return False
        if self._poses and pose.stamp < self._poses[-1].stamp - max_age:
            self._throttled_warning('jumped backwards',
                                    'pose stamp jumped backwards by %.3f s (bag replay or simulation reset?): '
                                    'clearing the pose and reading buffers', self._poses[-1].stamp - pose.stamp)
            self.rejected['pose: stamp jumped backwards (buffer reset)'] += 1
            self.last_reason = 'pose stamp jumped backwards: pose and reading buffers reset'
            self._poses.clear()
            self._readings.clear()
        if pose.samples is not None:
            m = self._wanted_particles()
            pose = (replace(pose, samples=None, weights=None) if m is None else
                    replace(pose, samples=resample_particles(pose.samples, pose.weights, m, self._rng), weights=None))
        self._poses.append(pose)
        return True

    def on_reading(self, reading: Reading, now: float | None = None) -> bool:
        """Validate a sensor reading and queue it while measuring (ignored in other stages). Returns False
        (logged and counted in :attr:`rejected`) if rejected.

        Rejected: a non-finite value or one outside the ``reading_range`` parameter, a non-finite stamp, a
        negative or non-finite variance; and, when ``now`` is given, a stamp more than
        ``future_stamp_tolerance`` ahead of it (``'future stamp'``) or older than ``now - reading_timeout``
        (``'stale stamp'``: stamped 0, a driver clock that is not the node's, a bag replayed without
        simulated time). While measuring, readings stamped in the future are rejected whatever ``now``.

        Args:
            reading: the reading (stamp in s on the host's clock, value in the sensor's unit).
            now: the host's clock, s (None: no clock yet; the stamp-age checks are skipped).
        """
        self.received['readings'] += 1
        if self.state is State.MEASURING:
            self._window_received += 1
        lo, hi = self.params['reading_range']
        if not math.isfinite(reading.value):
            self._reject('reading', 'non-finite value', f'value is {reading.value}')
            return False
        if not lo <= reading.value <= hi:
            self._reject('reading', 'value out of range', f'value {reading.value:.6g} is outside reading_range = '
                         f'[{lo:g}, {hi:g}] (a sentinel, overflowed or unscaled value?)')
            return False
        if reading.stamp is not None and not math.isfinite(reading.stamp):
            self._reject('reading', 'non-finite stamp', 'stamp is not finite')
            return False
        if not math.isfinite(reading.variance) or reading.variance < 0:
            self._reject('reading', 'invalid variance', f'variance is {reading.variance}')
            return False
        if now is not None and reading.stamp is not None:
            problem = self._stamp_problem(reading.stamp, now, self.params['reading_timeout'])
            if problem is not None:
                self._reject('reading', *problem)
                return False
        if self.state is State.MEASURING:
            self._readings.append(reading)
        return True

    def _stamp_problem(self, stamp: float, now: float, max_age: float) -> tuple[str, str] | None:
        """``(category, detail)`` when ``stamp`` is too far ahead of ``now`` or more than ``max_age`` behind
        it, else None."""
        lead = stamp - now
        tolerance = self.params['future_stamp_tolerance']
        if lead > tolerance:
            return ('future stamp', f'stamp {stamp:.3f} s is {lead:.3f} s ahead of the clock, more than '
                    f'future_stamp_tolerance = {tolerance:g} s (clock skew between machines, or a driver '
                    'stamping with another clock)')
        age = -lead
        if age > max_age:
            if stamp <= 0.0:
                why = 'stamped 0: the publisher does not fill in its header stamp'
            elif age > STALE_REPLAY_AGE:
                why = ('a clock that is not the node clock: a bag replayed without use_sim_time, or a driver '
                       'stamping with another clock?')
            else:
                why = ('arrived late: the publisher or the network lags, or this node was busy and its '
                       'subscription queue backed up')
            return ('stale stamp',
                    f'stamp {stamp:.3f} s is {age:.3f} s older than the clock (limit {max_age:g} s): {why}')
        return None

    def _throttled_warning(self, kind: str, fmt: str, *args) -> None:
        """Log a warning at most once per :data:`WARN_PERIOD` wall seconds per ``kind`` (with the count of
        the suppressed ones)."""
        wall = time.monotonic()
        last, suppressed = self._warned.get(kind, (-math.inf, 0))
        if wall - last < WARN_PERIOD:
            self._warned[kind] = (last, suppressed + 1)
            return
        if suppressed:
            fmt += f' ({suppressed} more since the last such warning)'
        log.warning(fmt, *args)
        self._warned[kind] = (wall, 0)

    def tick(self, now: float) -> None:
        """Advance the cycle at time ``now`` (s, same clock as the stamps)."""
        if self._last_now is not None and now < self._last_now - self.params['max_pose_age']:
            shift = now - self._last_now
            self._throttled_warning('clock backwards', 'clock jumped backwards by %.3f s (simulation reset?): '
                                    'restarting the current stage timers', -shift)
            self._goal_time += shift
            self._dwell_end += shift
            self._measure_start += shift
        self._last_now = now
        if self.state is State.DONE:
            if self.planner.n < self.params['max_measurements']:  # max_measurements raised at run time
                log.info('max_measurements raised to %d: continuing', self.params['max_measurements'])
                self.state = State.WAITING_FOR_POSE
            else:
                return
        elif self.planner.n >= self.params['max_measurements']:  # lowered at run time
            self._finish(stop=True)
            return
        if self._check_localisation(now):
            return
        if self.state is State.WAITING_FOR_POSE:
            if self._poses:
                if self.planner.start is None and self.planner.n == 0:
                    self.planner.set_start(torch.as_tensor(self._poses[-1].xy, dtype=DTYPE))
                self.state = State.DECIDING
        if self.state is State.DECIDING:
            self._decide(now)
        elif self.state is State.DRIVING:
            self._drive(now)
        elif self.state is State.DWELLING:
            if now >= self._dwell_end:
                self.state = State.MEASURING
                self._measure_start = now
                self._readings.clear()
                self._window_received = 0
                self._window_rejects = Counter()
        elif self.state is State.MEASURING:
            self._measure(now)

    def apply_parameters(self, changed: Mapping[str, Any]) -> None:
        """Make run-time changes of :attr:`params` (already stored there) take effect where they have
        derived state: the planner's β, refit period, optimiser, execution noise and search bounds, and
        the pose buffer size. Everything else is read live. While a decision runs in the background the
        planner's settings are changed once it has finished (before its target is sent)."""
        if self._decision is not None:
            self._pending_changes.update(changed)
            log.info('parameters changed while deciding: %s (applied when the decision ends)',
                     ', '.join(f'{k} = {v}' for k, v in changed.items()))
            return
        p = self.params
        if 'beta' in changed:
            self.planner.set_beta(p['beta'])
        if 'refit_every' in changed:
            self.planner.refit_every = int(p['refit_every'])
        if 'num_restarts' in changed or 'raw_samples' in changed:
            self.planner.optimizer = OptimizerSettings(p['num_restarts'], p['raw_samples'])
        if 'execution_noise_std' in changed:
            self.planner.execution_noise = GaussianExecutionNoise.isotropic(p['execution_noise_std'])
        if 'search_bounds' in changed:
            xmin, xmax, ymin, ymax = p['search_bounds']
            self.planner.set_bounds(torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE))
        if 'pose_buffer_size' in changed:
            self._poses = deque(self._poses, maxlen=int(p['pose_buffer_size']))
        log.info('parameters changed at run time: %s', ', '.join(f'{k} = {v}' for k, v in changed.items()))

    # ------------------------------------------------------------ stages
    def _decide(self, now: float) -> None:
        if self._decision is None:
            resumed = self.planner.take_resumed_target()
            if resumed is not None:
                target, self.goal_reason = resumed.numpy(), 'resumed'
                log.info('resuming the journal\'s pending target %d: (%.2f, %.2f)', self.planner.n + 1, *target)
                self._send(target, now)
                return
            if self.decider is None:
                target = self.planner.suggest().numpy()
                self.goal_reason = 'new'
                self._send(target, now)
                return
            self._decision = self.decider.submit(self.planner.suggest)
            return
        if not self._decision.done():
            return                  # inputs, timers and diagnostics go on meanwhile
        decision, self._decision = self._decision, None
        target = decision.result().numpy()  # an exception in the decision propagates as it would inline
        self.goal_reason = 'new'
        if self._pending_changes:
            changes, self._pending_changes = self._pending_changes, {}
            self.apply_parameters(changes)
        self._send(target, now)

    @property
    def deciding_in_background(self) -> bool:
        """True while a decision runs on :attr:`decider` (the planner must not be changed meanwhile)."""
        return self._decision is not None and not self._decision.done()

    def _send(self, target: np.ndarray, now: float) -> None:
        self.last_decision_wall_time = time.time()
        self.target = target
        self._goal_time = now
        self._timed_out = False
        self._retries = 0
        self.state = State.DRIVING
        self.outputs.send_goal(target)

    def _drive(self, now: float) -> None:
        pose = self.latest_pose
        if pose is not None and np.linalg.norm(pose.xy - self.target) <= self.params['arrival_tolerance']:
            self._start_dwell(now)
        elif now - self._goal_time > self.params['goal_timeout']:
            where = pose.xy if pose is not None else self.target
            log.warning('target (%.2f, %.2f) not reached within goal_timeout = %.0f s: measuring where the '
                        'rover is, (%.2f, %.2f) (still a valid pair: the location distribution says where)',
                        *self.target, self.params['goal_timeout'], *where)
            self.outputs.stop(where)
            self._timed_out = True
            self.goal_timeouts += 1
            self._start_dwell(now)

    def _start_dwell(self, now: float) -> None:
        self.state = State.DWELLING
        self._dwell_end = now + self.params['dwell_time']

    def _measure(self, now: float) -> None:
        max_age = self.params['max_pose_age']
        while self._readings:
            reading = self._readings[0]
            stamp = reading.stamp if reading.stamp is not None else now
            if stamp < self._measure_start:
                self._readings.popleft()  # taken while still moving/settling
                self._window_rejects['stamped before the measurement window'] += 1
                continue
            if stamp - now > self.params['future_stamp_tolerance']:
                # would wait for a pose newer than it for as long as the clock lags the stamp: never pair it
                self._readings.popleft()
                self._reject('reading', *self._stamp_problem(stamp, now, math.inf))
                continue
            newest = self._poses[-1].stamp if self._poses else -math.inf
            if newest < stamp:
                # The localisation output lags the sensor (or has stopped): a closer pose may still come.
                if now - stamp <= self.params['reading_timeout']:
                    return
                self._readings.popleft()
                self._reject('reading', 'no pose estimate newer than the reading',
                             f'no pose estimate newer than the reading arrived within reading_timeout = '
                             f'{self.params["reading_timeout"]} s (pose stream stale or stopped): dropped')
                continue
            pose, gap = self._nearest_pose(stamp)  # final: later poses are further away
            self._readings.popleft()
            if gap > max_age:
                self._reject('reading', 'no pose within max_pose_age',
                             f'no pose within max_pose_age = {max_age} s of its stamp (nearest {gap:.3f} s '
                             'away): dropped')
                continue
            trace = position_trace(pose.cov)
            if trace > self.params['max_covariance_trace']:
                self._reject('reading', 'paired pose over max_covariance_trace',
                             f'its pose has covariance trace {trace:.3g} m² > max_covariance_trace = '
                             f'{self.params["max_covariance_trace"]} m²: dropped')
                continue
            self._store(pose, reading)
            return
        if now - self._measure_start > self.params['reading_timeout']:
            if self._retries < self.params['reading_retries']:
                self._retries += 1
                log.warning('no valid reading within reading_timeout = %.1f s; retry %d/%d',
                            self.params['reading_timeout'], self._retries, self.params['reading_retries'])
                self._measure_start = now
            else:
                where = f'({self.target[0]:.2f}, {self.target[1]:.2f})'
                if self._window_received == 0:
                    self.rejected['measurement: sensor silent, target skipped'] += 1
                    self.last_reason = f'sensor silent at target {where}'
                else:
                    why = ', '.join(f'{n} {c}' for c, n in self._window_rejects.most_common()) or 'none paired'
                    self.rejected['measurement: no usable reading, target skipped'] += 1
                    self.last_reason = (f'no usable reading at target {where}: {self._window_received} readings '
                                        f'arrived but none could be used ({why})')
                log.warning('%s: skipping it after %d retries', self.last_reason, self._retries)
                self.state = State.DECIDING

    def _store(self, pose: PoseEstimate, reading: Reading) -> None:
        meta = {'reading_stamp': reading.stamp, 'pose_stamp': pose.stamp, 'reading_variance': reading.variance,
                'frame_id': pose.frame_id, 'goal_timed_out': self._timed_out}
        try:
            location = self._location(pose)
            meta['location_source'] = ('particle cloud' if pose.samples is not None else 'pose') + (
                f' -> empirical ({location.samples.shape[1]} particles)' if isinstance(location, Empirical)
                else ' -> gaussian')
            index = self.planner.observe(torch.as_tensor(self.target, dtype=DTYPE), location,
                                         float(reading.value), **meta)
        except (InvalidObservationError, InvalidDistributionError) as exc:  # defensive: validated on arrival
            self._reject('measurement', 'invalid observation', str(exc))
            return
        if self._stored_particles is None:
            self._stored_particles = location.samples.shape[1] if isinstance(location, Empirical) else 0
        m = Measurement(index, self.target.copy(), pose, reading, self._timed_out)
        rec = self.planner.recommend()
        self.outputs.measured(m, rec)
        if self.planner.n >= self.params['max_measurements']:
            self.state = State.DONE
            self.outputs.finished(rec)
        else:
            self.state = State.DECIDING

    def _location(self, pose: PoseEstimate) -> LocationDistributions:
        """The location distribution stored for ``pose`` (see the module docstring: the kernel and the run's
        kind decide)."""
        gaussian = Gaussian(torch.as_tensor(pose.xy, dtype=DTYPE).reshape(1, 2),
                            torch.as_tensor(psd_projection(pose.cov), dtype=DTYPE).reshape(1, 2, 2))
        m = self._wanted_particles()
        if m is None or (self._stored_particles is None and pose.samples is None):
            return gaussian
        if pose.samples is not None:
            x = pose.samples
            if len(x) != m or pose.weights is not None:   # (poses are reduced on arrival already)
                x = resample_particles(x, pose.weights, m, self._rng)
            return Empirical(torch.as_tensor(x, dtype=DTYPE).reshape(1, m, 2))
        log.warning('pose without a particle cloud in a run of empirical locations: storing %d draws of its '
                    'Gaussian', m)
        return Empirical(gaussian.sample(m, torch.Generator().manual_seed(int(self._rng.integers(2 ** 62)))))

    def _finish(self, stop: bool) -> None:
        pose = self.latest_pose
        if stop and pose is not None and self.state in (State.DRIVING, State.DWELLING, State.MEASURING):
            self.outputs.stop(pose.xy)
        self.state = State.DONE
        log.info('max_measurements = %d reached', self.params['max_measurements'])
        if self.planner.n:
            self.outputs.finished(self.planner.recommend())

    def _check_localisation(self, now: float) -> bool:
        """Pause when the newest pose's covariance trace is over the threshold; resume when it recovers.
        Returns True while paused."""
        pose = self.latest_pose
        if pose is None:
            return self.state is State.PAUSED
        trace = position_trace(pose.cov)
        limit = self.params['max_covariance_trace']
        if self.state is not State.PAUSED:
            if trace <= limit:
                return False
            self._paused_from = self.state
            self.state = State.PAUSED
            self.paused_reason = (f'localisation diverged: position covariance trace {trace:.3g} m² > '
                                  f'max_covariance_trace = {limit:g} m²')
            log.error('%s: rover stopped, no measurements until it is below %.3g m²', self.paused_reason,
                      RESUME_FRACTION * limit)
            if self._paused_from in (State.DRIVING, State.DWELLING, State.MEASURING):
                self.outputs.stop(pose.xy)
            return True
        if trace > RESUME_FRACTION * limit:
            return True
        log.warning('localisation recovered (covariance trace %.3g m²): resuming', trace)
        self.paused_reason = None
        self._readings.clear()
        if self.target is not None and self._paused_from in (State.DRIVING, State.DWELLING, State.MEASURING):
            self.goal_reason = 'after pause'
            self.state = State.DRIVING
            self._goal_time = now
            self.outputs.send_goal(self.target)
        else:
            self.state = State.WAITING_FOR_POSE
        return False

    # ----------------------------------------------------------- helpers
    def _nearest_pose(self, stamp: float) -> tuple[PoseEstimate | None, float]:
        best, gap = None, math.inf
        for p in reversed(self._poses):
            g = abs(p.stamp - stamp)
            if g < gap:
                best, gap = p, g
            elif p.stamp < stamp:
                break  # stamps are increasing: older poses are further away
        return best, gap

    def _pose_problem(self, pose: PoseEstimate) -> tuple[str, str] | None:
        """``(category, detail)`` of what is wrong with ``pose``, or None."""
        if pose.frame_id != self.params['frame_id']:
            return ('wrong frame_id', f"frame_id {pose.frame_id[:64]!r} is not the configured frame "
                    f"{self.params['frame_id']!r}")
        if not math.isfinite(pose.stamp):
            return 'non-finite stamp', 'stamp is not finite'
        xy = np.asarray(pose.xy, dtype=float)
        if xy.shape != (2,) or not np.all(np.isfinite(xy)):
            return 'non-finite position', f'position {xy.tolist()} is not 2 finite numbers (NaN or inf)'
        if np.any(np.abs(xy) > MAX_ABS_COORDINATE):
            return ('position out of range', f'position {xy.tolist()} m is beyond ±{MAX_ABS_COORDINATE:g} m '
                    '(a sentinel or overflowed value)')
        cov = np.asarray(pose.cov, dtype=float)
        if cov.shape != (2, 2):
            return 'covariance wrong shape', f'expected a (2, 2) position covariance, got shape {cov.shape}'
        reason = covariance_problem(cov)
        if reason:
            return f'covariance {reason.split(" (")[0]}', f'covariance {reason}'
        if pose.samples is not None:
            x = np.asarray(pose.samples, dtype=float)
            if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] != 2:
                return 'particles wrong shape', f'particle samples must be (m >= 1, 2), got shape {x.shape}'
            if not np.all(np.isfinite(x)):
                return 'non-finite particles', 'particle cloud contains NaN or inf positions'
            if np.any(np.abs(x) > MAX_ABS_COORDINATE):
                return ('particles out of range', f'a particle is beyond ±{MAX_ABS_COORDINATE:g} m (a sentinel or '
                        'overflowed value)')
            if pose.weights is not None:
                problem = _weights_problem(np.asarray(pose.weights, dtype=float).reshape(-1), x.shape[0])
                if problem:
                    return 'invalid particle weights', f'particle weights {problem}'
        return None

    def reject(self, what: str, category: str, detail: str) -> None:
        """Count and log a rejected input (hosts use it for messages they could not even parse).

        Args:
            what: ``'pose'``, ``'reading'`` or ``'measurement'``.
            category: short fixed text (the counter key; keep the set of categories bounded).
            detail: the full reason for the log line and :attr:`last_reason`.
        """
        self._reject(what, category, detail)

    def _reject(self, what: str, category: str, detail: str) -> None:
        key = f'{what}: {category}'
        if what == 'reading' and self.state is State.MEASURING:
            self._window_rejects[category] += 1
        self.rejected[key] += 1
        self.last_reason = f'{what} rejected: {detail}'
        n = self.rejected[key]
        if n <= 3 or n % 100 == 0:  # throttle floods of the same problem
            log.warning('%s rejected (%s, %d so far): %s', what, category, n, detail)

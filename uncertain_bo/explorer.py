"""The measurement cycle of a localisation-aware explorer, without ROS.

The explorer turns a stream of pose estimates (with covariance) and sensor readings into measurements
(location distribution :math:`P^L_t`, reading :math:`y_t`) for a :class:`~uncertain_bo.planner.Planner`
and sends the rover to the planner's targets (DESIGN.md, measurement cycle)::

    WAITING_FOR_POSE -> DECIDING -> DRIVING -> DWELLING -> MEASURING -> DECIDING ... -> DONE
                                       | goal_timeout: stop and measure where the rover is
                                                                 | reading_timeout: retry, then skip

- A reading is paired with the pose estimate **nearest in time**. While no pose newer than the reading
  has arrived (the localisation output lags the sensor, or has stopped), the reading is held, for at most
  ``reading_timeout``; once newer poses exist the nearest one is final, and if it is more than
  ``max_pose_age`` away the reading is dropped with a warning.
- Poses with NaN/inf, negative variances or non-PSD covariances, in the wrong frame, or stamped before
  the newest buffered pose by more than ``max_pose_age`` (bag replay, simulation reset: the buffer is
  reset) never reach the buffer; each rejection is logged with its reason and counted.
- Targets come from the planner, which keeps them in the search bounds.

The ROS node (:mod:`uncertain_bo.ros.explorer`) and the in-process simulation runner drive the same
class through :meth:`Explorer.on_pose`, :meth:`Explorer.on_reading` and :meth:`Explorer.tick`, and
receive its actions through an :class:`ExplorerOutputs` implementation.
"""
from __future__ import annotations

import enum
import logging
import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from .distributions import DTYPE, Gaussian, check_covariance
from .parameters import Param
from .planner import InvalidObservationError, Planner, Recommendation

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'PoseEstimate', 'Reading', 'Measurement',
           'EXPLORER_PARAMS']

log = logging.getLogger(__name__)

EXPLORER_PARAMS = [
    Param('search_bounds', [0.0, 200.0, 0.0, 200.0],
          'search area [xmin, xmax, ymin, ymax] in the map frame, m; targets never leave it',
          range=(-1e7, 1e7), length=4),
    Param('frame_id', 'map', 'world-fixed frame of poses and goals (a map-frame estimate with absolute '
          'corrections: an odom-frame covariance grows without bound)', read_only=True),
    Param('method', 'ugp_ucb', 'BO method (registry name)', choices=('ugp_ucb',)),
    Param('execution_noise_std', [0.75, 0.75],
          'std of the execution-noise model P̂_x = N(x, diag(std²)) along x and y, m', range=(0.0, 1000.0),
          length=2),
    Param('beta', 3.0, 'UCB exploration weight β (μ + β σ), dimensionless', range=(0.0, 100.0)),
    Param('n_initial', 5, 'space-filling targets before the acquisition takes over', range=(1, 10000)),
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
    Param('max_pose_age', 0.5, 'largest |t_reading - t_pose| for pairing a reading with a pose, s',
          range=(0.001, 60.0)),
    Param('reading_timeout', 10.0, 'wait this long for a reading before retrying, s', range=(0.1, 3600.0)),
    Param('reading_retries', 2, 'retries when the sensor is silent before skipping the target',
          range=(0, 100)),
    Param('pose_buffer_size', 500, 'pose estimates kept for pairing (bounds memory at any input rate)',
          range=(10, 1000000)),
    Param('seed', 0, 'seed of the initial design and the acquisition maximiser', range=(0, 2 ** 31 - 1)),
    Param('run_dir', '', 'output folder for the journal (empty: runs/<date-time>); an existing journal '
          'there is resumed', read_only=True),
]


class State(enum.Enum):
    WAITING_FOR_POSE = 'waiting for pose'
    DECIDING = 'deciding'
    DRIVING = 'driving'
    DWELLING = 'dwelling'
    MEASURING = 'measuring'
    DONE = 'done'


@dataclass(frozen=True)
class PoseEstimate:
    """A localisation estimate: stamp (s), frame, position mean ``(2,)`` m, covariance ``(2, 2)`` m²."""

    stamp: float
    frame_id: str
    xy: np.ndarray
    cov: np.ndarray


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
        params: validated :data:`EXPLORER_PARAMS` values.
    """

    planner: Planner
    outputs: ExplorerOutputs
    params: dict[str, Any]
    state: State = field(default=State.WAITING_FOR_POSE, init=False)
    rejected: Counter = field(default_factory=Counter, init=False)
    target: np.ndarray | None = field(default=None, init=False)

    def __post_init__(self):
        self._poses: deque[PoseEstimate] = deque(maxlen=int(self.params['pose_buffer_size']))
        self._readings: deque[Reading] = deque(maxlen=64)
        self._goal_time = self._dwell_end = self._measure_start = 0.0
        self._timed_out = False
        self._retries = 0
        self.last_reason: str | None = None
        if self.planner.n >= self.params['max_measurements']:
            self.state = State.DONE

    # ------------------------------------------------------------ inputs
    @property
    def latest_pose(self) -> PoseEstimate | None:
        return self._poses[-1] if self._poses else None

    def on_pose(self, pose: PoseEstimate) -> bool:
        """Buffer a pose estimate after validation. Returns False (and logs why) if rejected."""
        reason = self._pose_problem(pose)
        if reason is not None:
            self._reject('pose', reason)
            return False
        if self._poses and pose.stamp < self._poses[-1].stamp - self.params['max_pose_age']:
            log.warning('pose stamp jumped backwards by %.3f s (bag replay or simulation reset?): '
                        'clearing the pose and reading buffers', self._poses[-1].stamp - pose.stamp)
            self.rejected['pose: stamp jumped backwards (buffer reset)'] += 1
            self._poses.clear()
            self._readings.clear()
        self._poses.append(pose)
        return True

    def on_reading(self, reading: Reading) -> bool:
        """Queue a sensor reading (only used while measuring). Returns False if rejected."""
        if not math.isfinite(reading.value):
            self._reject('reading', f'value is {reading.value}')
            return False
        if reading.stamp is not None and not math.isfinite(reading.stamp):
            self._reject('reading', 'stamp is not finite')
            return False
        if self.state is State.MEASURING:
            self._readings.append(reading)
        return True

    def tick(self, now: float) -> None:
        """Advance the cycle at time ``now`` (s, same clock as the stamps)."""
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
        elif self.state is State.MEASURING:
            self._measure(now)

    # ------------------------------------------------------------ stages
    def _decide(self, now: float) -> None:
        target = self.planner.suggest().numpy()
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
                continue
            newest = self._poses[-1].stamp if self._poses else -math.inf
            if newest < stamp:
                # The localisation output lags the sensor (or has stopped): a closer pose may still come.
                if now - stamp <= self.params['reading_timeout']:
                    return
                self._readings.popleft()
                self._reject('reading', f'no pose estimate newer than the reading arrived within '
                             f'reading_timeout = {self.params["reading_timeout"]} s (pose stream stale or '
                             'stopped): dropped')
                continue
            pose, gap = self._nearest_pose(stamp)  # final: later poses are further away
            self._readings.popleft()
            if gap <= max_age:
                self._store(pose, reading)
                return
            self._reject('reading', f'no pose within max_pose_age = {max_age} s of its stamp (nearest '
                         f'{gap:.3f} s away): dropped')
        if now - self._measure_start > self.params['reading_timeout']:
            if self._retries < self.params['reading_retries']:
                self._retries += 1
                log.warning('no valid reading within reading_timeout = %.1f s; retry %d/%d',
                            self.params['reading_timeout'], self._retries, self.params['reading_retries'])
                self._measure_start = now
            else:
                log.warning('sensor silent at target (%.2f, %.2f): skipping it after %d retries',
                            *self.target, self._retries)
                self.rejected['measurement: sensor silent, target skipped'] += 1
                self.state = State.DECIDING

    def _store(self, pose: PoseEstimate, reading: Reading) -> None:
        location = Gaussian(torch.as_tensor(pose.xy, dtype=DTYPE).reshape(1, 2),
                            torch.as_tensor(pose.cov, dtype=DTYPE).reshape(1, 2, 2), validate=False)
        meta = {'reading_stamp': reading.stamp, 'pose_stamp': pose.stamp, 'reading_variance': reading.variance,
                'frame_id': pose.frame_id, 'goal_timed_out': self._timed_out}
        try:
            index = self.planner.observe(torch.as_tensor(self.target, dtype=DTYPE), location,
                                         float(reading.value), **meta)
        except InvalidObservationError as exc:  # defensive: poses are validated on arrival
            self._reject('measurement', str(exc))
            return
        m = Measurement(index, self.target.copy(), pose, reading, self._timed_out)
        rec = self.planner.recommend()
        self.outputs.measured(m, rec)
        if self.planner.n >= self.params['max_measurements']:
            self.state = State.DONE
            self.outputs.finished(rec)
        else:
            self.state = State.DECIDING

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

    def _pose_problem(self, pose: PoseEstimate) -> str | None:
        if pose.frame_id != self.params['frame_id']:
            return f"frame_id '{pose.frame_id}' is not the configured frame '{self.params['frame_id']}'"
        if not math.isfinite(pose.stamp):
            return 'stamp is not finite'
        if not np.all(np.isfinite(pose.xy)):
            return 'position contains NaN or inf'
        reason = check_covariance(torch.as_tensor(np.asarray(pose.cov), dtype=DTYPE))
        return f'covariance {reason}' if reason else None

    def _reject(self, what: str, reason: str) -> None:
        key = f'{what}: {reason.split(" (")[0]}'
        self.rejected[key] += 1
        self.last_reason = f'{what} rejected: {reason}'
        n = self.rejected[key]
        if n <= 3 or n % 100 == 0:  # throttle floods of the same problem
            log.warning('%s rejected (%d so far): %s', what, n, reason)

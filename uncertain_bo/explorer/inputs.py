"""The explorer's input buffers: pose estimates and readings accepted in order, counted when rejected, and paired
by stamp.

The input types are :mod:`~uncertain_bo.explorer.estimates`'s; the checks of one input on its own (frame, values,
area, covariance, particles, heading, stamps) are :mod:`~uncertain_bo.explorer.input_checks`'s. The rules:

- A reading is paired with the pose estimate **nearest in time**. While no pose newer than the reading
  has arrived (the localisation output lags the sensor, or has stopped), the reading is held, for at most
  ``reading_timeout``; once newer poses exist the nearest one is final, and if it is more than
  ``max_pose_age`` away the reading is dropped with a warning.
- Poses with NaN/inf, negative variances or non-PSD covariances (:func:`~uncertain_bo.distributions.covariance.
  covariance_problem`), in the wrong frame, outside ``search_bounds`` widened by ``area_margin``
  (``'pose: outside the area'``: :mod:`~uncertain_bo.explorer.area`), stamped more than ``max_pose_age`` before the
  host's clock (stale: the localisation lags, or a bag is replayed without simulated time) or more than
  ``future_stamp_tolerance`` after it never reach the buffer. Readings are rejected outside ``reading_range``,
  stamped in the future, or older than ``reading_timeout`` (stamped 0, another clock).
- **Degenerate covariances**: a pose whose position standard deviation is below ``min_position_std`` along some
  direction (an all-zero covariance: the publisher does not fill it in; a singular one) is rejected
  (``'pose: degenerate covariance'``) or, with ``degenerate_pose_covariance: 'floor'``, used with that standard
  deviation raised to ``min_position_std`` (a throttled warning; counted in :attr:`InputStreams.floored`).
- **Stamps going backwards.** A pose stamped before the newest buffered pose by more than ``max_pose_age`` while the
  host's clock also went back as much since that pose arrived (or where the host has no clock) starts a new time
  base (bag loop, simulation reset): the pose and reading buffers are cleared and the gate confirms the place again
  (:meth:`~uncertain_bo.explorer.pose_gate.PoseGate.restart`). Any other pose stamped before the newest one
  (delivered late: a lossy radio link; or stamped by another clock while the node clock goes on) is rejected
  (``'pose: out of order'``; a repeat is harmless): one pose stamped backwards clears nothing. Each rejection is
  logged with its reason (floods are throttled) and counted by category in :attr:`InputStreams.rejected`.
- **Header-less readings** (``std_msgs/Float64``) are stamped **on arrival**, with the host's clock when the
  reading is handed in (the ROS node: its clock when the subscription callback runs), and are then paired like
  any stamped reading. This assumes that the sensor's own latency plus transport and queueing is small against
  the time the rover stands still at a target (``dwell_time`` + the measuring window): while the rover stands
  still a late stamp pairs with a pose of the same place. En route (``en_route_spacing > 0``) a latency ``L``
  places the reading ``L x speed`` further along the path than where it was taken: use a stamped message type
  for en-route readings from a moving rover. A header-less reading handed in before the host has a clock
  (simulated time before the first ``/clock``) cannot be stamped and is rejected (``'no clock to stamp it'``).
- Particle clouds are validated like covariances (finite, in range, weights finite, non-negative with a
  positive finite sum).
- **The heading**, only with a ``sensor_offset`` (a sensor away from ``base_link``:
  :mod:`uncertain_bo.distributions.lever_arm`): a pose without a finite heading, with a yaw covariance that makes
  the (x, y, yaw) covariance invalid, or a cloud without one finite heading per particle is rejected
  (:func:`~uncertain_bo.explorer.input_checks.heading_problem`: ``'pose: no heading'``, ...). Without an offset the
  heading is not looked at (a hand-written publisher's all-zero orientation costs nothing).
- A valid pose that moved further from the accepted estimates (the last one and those up to 16 s before it) than
  the rover can have driven since (``max_speed``), given both covariances, is rejected as a glitch
  (``'pose: implausible jump'``) and reaches nothing: neither the pairing of measurements and en-route readings nor
  the odometer. No pose is accepted before several agree on a place (the start, a new time base; poses held
  meanwhile are not rejections, the ones the next poses contradict are counted as ``'pose: unconfirmed'``). A burst
  of rejections is reported, and a localisation that stays at a new place is accepted there after a couple of
  seconds (re-anchored): :mod:`~uncertain_bo.explorer.pose_gate`. Particle clouds are judged by their mean and
  covariance. :attr:`InputStreams.trusted_pose` is the newest accepted pose within ``max_covariance_trace``
  (where a stop holds the rover).
- A valid reading that arrives before any pose estimate was accepted cannot be located: it is counted as rejected
  (``'reading: before the first pose'``), which the waiting-for-pose status shows with the reason; while pose
  estimates arrive and the gate confirms the first place it is not used either, and not counted (the status says
  how far the confirmation got).

Both buffers are bounded (``pose_buffer_size`` poses, :data:`READING_QUEUE` readings), so memory stays
bounded at any input rate.
"""
from __future__ import annotations

import logging
import math
import time
from collections import Counter, deque
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from .estimates import PoseEstimate, Reading, position_trace, psd_projection
from .input_checks import pose_problem, stamp_problem
from .pose_gate import PoseGate

__all__ = ['InputStreams', 'READING_QUEUE', 'WARN_PERIOD', 'WAIT']

log = logging.getLogger(__name__)

#: least wall time between two warnings of the same throttled kind (stamp jumps), s
WARN_PERIOD = 5.0
#: readings queued while measuring (the oldest are dropped beyond this: bounded memory at any rate)
READING_QUEUE = 64
#: :meth:`InputStreams.pose_at`'s answer while a reading waits for a pose newer than it
WAIT = object()


class InputStreams:
    """Validated, bounded buffers of pose estimates and readings, paired by stamp.

    Args:
        params: the explorer's parameters (read live: ``global_frame``, ``max_pose_age``, ``reading_timeout``,
            ``future_stamp_tolerance``, ``reading_range``, ``max_covariance_trace``, ``max_speed``, ``search_bounds``,
            ``area_margin``, ``degenerate_pose_covariance``, ``min_position_std``, ``pose_buffer_size`` at
            construction and :meth:`resize`).
        collecting: True while readings are wanted (the measuring window); readings handed in otherwise are
            validated and counted, not queued.

    Attributes:
        poses: accepted pose estimates, oldest first (stamps increasing).
        readings: readings queued during the measuring window.
        rejected: rejected inputs by category (``'pose: stale stamp'``, ...); the set of keys is bounded.
        received: counts of ``'poses'`` and ``'readings'`` handed in.
        gate: the pose plausibility gate (:class:`~uncertain_bo.explorer.pose_gate.PoseGate`).
        reanchored: True when the last accepted pose confirmed a new place (the first, or a relocation: not
            distance driven).
        pending_reason: while the gate confirms its first place (or the place after a time-base restart): how far
            it got; None otherwise.
        trusted_pose: the newest accepted pose whose covariance trace is within ``max_covariance_trace`` (kept
            across buffer resets), or None.
        floored: poses whose degenerate covariance was floored (``degenerate_pose_covariance: 'floor'``).
        last_reason: the most recent rejection with its detail (None if none).
        window_received: readings handed in during the current measuring window.
        window_rejects: why readings of the current measuring window were not used, by category.
        latest_reading: the newest valid reading handed in, in any stage (en-route readings use it), or None.
        sources: where the host takes each input from, ``'pose'`` / ``'reading'`` -> e.g.
            ``'/odometry/filtered (nav_msgs/msg/Odometry)'`` (set by the ROS nodes; empty in-process): warnings
            name it (:meth:`named`).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters, PoseEstimate, Reading
        >>> from uncertain_bo.explorer.inputs import InputStreams
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> inputs = InputStreams(params, collecting=lambda: True)
        >>> for t in (1.0, 1.2):
        ...     _ = inputs.add_pose(PoseEstimate(t, 'map', np.array([10.0, 10.0]), 0.1 * np.eye(2)), t, lambda p: p)
        >>> inputs.add_pose(PoseEstimate(1.3, 'odom', np.array([10.0, 10.0]), 0.1 * np.eye(2)), 1.3, lambda p: p)
        False
        >>> dict(inputs.rejected)
        {'pose: wrong frame_id': 1}
        >>> _ = inputs.add_reading(Reading(1.15, 21.3), now=1.3)
        >>> pose, reading = inputs.pair(now=1.3, window_start=1.0)   # the pose nearest in time to the reading
        >>> pose.stamp, reading.value
        (1.2, 21.3)
    """

    def __init__(self, params: dict[str, Any], collecting: Callable[[], bool]):
        self.params = params
        self.collecting = collecting
        self.poses: deque[PoseEstimate] = deque(maxlen=int(params['pose_buffer_size']))
        self.readings: deque[Reading] = deque(maxlen=READING_QUEUE)
        self.rejected: Counter = Counter()
        self.received: Counter = Counter()
        self.last_reason: str | None = None
        self.window_received = 0
        self.window_rejects: Counter = Counter()
        self.latest_reading: Reading | None = None
        self.gate = PoseGate(params)
        self.reanchored = False
        self.pending_reason: str | None = None
        self.trusted_pose: PoseEstimate | None = None
        self.floored = 0
        self._newest_arrival: float | None = None   # the host clock when the newest buffered pose arrived
        self._located = False         # a pose estimate was accepted (readings before it cannot be located)
        self._warned: dict[str, tuple[float, int]] = {}
        self.sources: dict[str, str] = {}

    def named(self, what: str) -> str:
        """``what`` (``'pose'``, ``'reading'``) with the topic and type it comes from, where the host said
        (:attr:`sources`): ``'reading on /probe (std_msgs/msg/Float64)'``."""
        return f'{what} on {self.sources[what]}' if what in self.sources else what

    @property
    def latest_pose(self) -> PoseEstimate | None:
        return self.poses[-1] if self.poses else None

    def resize(self, size: int) -> None:
        """Keep at most ``size`` pose estimates (the newest)."""
        self.poses = deque(self.poses, maxlen=int(size))

    def open_window(self) -> None:
        """Start a measuring window: drop queued readings and reset the window's counters."""
        self.readings.clear()
        self.window_received = 0
        self.window_rejects = Counter()

    # ------------------------------------------------------------ arrival
    def add_pose(self, pose: PoseEstimate, now: float | None,
                 reduce: Callable[[PoseEstimate], PoseEstimate]) -> bool:
        """Buffer a pose estimate after validation and the plausibility gate
        (:mod:`~uncertain_bo.explorer.pose_gate`). Returns False (and logs why, counted in :attr:`rejected`; a pose
        the gate holds while it confirms its first place is not counted) if not accepted; :attr:`reanchored` says
        whether an accepted pose confirmed a new place (not distance driven).

        Args:
            pose: the estimate.
            now: the host's clock (same clock as the stamps), s; when given, a pose stamped more than
                ``max_pose_age`` before it is stale and rejected. None skips that check (no valid clock yet).
            reduce: applied to an accepted pose with a particle cloud before it is buffered (the location
                policy keeps only the particles it needs).
        """
        self.received['poses'] += 1
        problem = self.pose_problem(pose)
        if problem is not None:
            self.reject('pose', *problem)
            return False
        pose = self._degenerate_covariance(pose)
        if pose is None:
            return False
        max_age = self.params['max_pose_age']
        if now is not None:
            problem = self.stamp_problem(pose.stamp, now, max_age)
            if problem is not None:
                self.reject('pose', *problem)
                return False
        if self.poses and pose.stamp < self.poses[-1].stamp:
            if not self._time_base_restarted(pose.stamp, now):   # else the odometer would drive back to it
                self.reject('pose', 'out of order', f'stamp {pose.stamp:.3f} s is before the newest pose '
                            f'({self.poses[-1].stamp:.3f} s): delivered late, or stamped with another clock')
                return False
            self.throttled_warning('jumped backwards',
                                   'pose stamp jumped backwards by %.3f s (bag replay or simulation reset?): '
                                   'clearing the pose and reading buffers; the place is confirmed again',
                                   self.poses[-1].stamp - pose.stamp)
            self.rejected['pose: stamp jumped backwards (buffer reset)'] += 1
            self.last_reason = 'pose stamp jumped backwards: pose and reading buffers reset'
            self.poses.clear()
            self.readings.clear()
            self.gate.restart()
        verdict = self.gate.check(pose.stamp, pose.xy, pose.cov)
        if verdict.discarded:
            self.rejected['pose: unconfirmed'] += verdict.discarded
            self.last_reason = (f'pose rejected: {verdict.discarded} pose estimate(s) disagreed with the ones after '
                                'them while the first place was confirmed')
        if verdict.pending:
            self.pending_reason = verdict.detail
            return False
        if not verdict.accepted:
            self.reject('pose', 'implausible jump', verdict.detail)
            if verdict.burst_started:
                log.warning('%d pose estimates in a row jumped implausibly far from the last accepted one (%s): '
                            'localisation re-initialised (set_pose, initialpose), the rover carried, or max_speed = '
                            '%g m/s below its speed? The new place is accepted once the estimates stay there',
                            self.gate.consecutive, verdict.detail, self.params['max_speed'])
            return False
        self.pending_reason = None
        self.reanchored = verdict.reanchored
        if verdict.reanchored and self._located:
            log.warning('pose gate re-anchored: %s', verdict.detail)
            self.last_reason = f'pose re-anchored: {verdict.detail}'
        elif verdict.reanchored:
            log.info('pose gate: %s', verdict.detail)
        if pose.samples is not None:
            pose = reduce(pose)
        self.poses.append(pose)
        self._newest_arrival = now
        if position_trace(pose.cov) <= self.params['max_covariance_trace']:
            self.trusted_pose = pose
        self._located = True
        return True

    def _time_base_restarted(self, stamp: float, now: float | None) -> bool:
        """A pose stamped before the newest buffered one starts a new time base (a simulation reset, a bag loop)
        when its stamp is more than ``max_pose_age`` before the newest and the host clock, if there is one, jumped
        back as much since that pose arrived; else it is merely out of order (delivered late, or stamped ahead by
        a clock that is not the node's: a lone pose stamped back must not clear the buffers and the gate)."""
        max_age = self.params['max_pose_age']
        if stamp >= self.poses[-1].stamp - max_age:
            return False
        if now is None or self._newest_arrival is None:
            return True
        return now < self._newest_arrival - max_age

    def _degenerate_covariance(self, pose: PoseEstimate) -> PoseEstimate | None:
        """``pose`` itself, or with its covariance floored (``degenerate_pose_covariance: 'floor'``: warned,
        counted in :attr:`floored`), or None when rejected as degenerate (counted): a position standard deviation
        below ``min_position_std`` along some direction."""
        floor = float(self.params['min_position_std']) ** 2
        cov = psd_projection(pose.cov)
        w, q = np.linalg.eigh(cov)
        if w[0] >= floor:
            return pose
        std = math.sqrt(max(float(w[0]), 0.0))
        what = (f'covariance {np.asarray(pose.cov).tolist()} has a position standard deviation of {std:.3g} m along '
                f"({q[0, 0]:.2f}, {q[1, 0]:.2f}), below min_position_std = {self.params['min_position_std']:g} m "
                '(an all-zero or singular covariance: is the localisation filling it in?)')
        if self.params['degenerate_pose_covariance'] != 'floor':
            self.reject('pose', 'degenerate covariance', what + "; degenerate_pose_covariance: 'floor' uses it")
            return None
        self.floored += 1
        if self.floored <= 3 or self.floored % 100 == 0:
            log.warning('pose covariance floored (%d so far): %s; raised to min_position_std', self.floored, what)
        floored = (q * np.maximum(w, floor)) @ q.T
        return replace(pose, cov=0.5 * (floored + floored.T))

    def add_reading(self, reading: Reading, now: float | None) -> bool:
        """Validate a sensor reading and queue it while :attr:`collecting`. Returns False (logged and counted in
        :attr:`rejected`) if rejected.

        A header-less reading (``stamp`` None) is stamped with ``now`` (on arrival; rejected when ``now`` is
        None). Rejected: a non-finite value or one outside the ``reading_range`` parameter, a non-finite stamp, a
        negative or non-finite variance; and, for a stamped reading when ``now`` is given, a stamp more than
        ``future_stamp_tolerance`` ahead of it (``'future stamp'``) or older than ``now - reading_timeout``
        (``'stale stamp'``: stamped 0, a driver clock that is not the node's, a bag replayed without
        simulated time); and a valid reading that arrives before any pose estimate was accepted
        (``'before the first pose'``: it cannot be located). While measuring, readings stamped in the future are
        dropped by :meth:`pair` whatever ``now``.

        Args:
            reading: the reading (stamp in s on the host's clock, value in the sensor's unit).
            now: the host's clock, s (None: no clock yet; the stamp-age checks are skipped).
        """
        self.received['readings'] += 1
        collecting = self.collecting()
        if collecting:
            self.window_received += 1
        lo, hi = self.params['reading_range']
        if not math.isfinite(reading.value):
            self.reject('reading', 'non-finite value', f'value is {reading.value}')
            return False
        if not lo <= reading.value <= hi:
            self.reject('reading', 'value out of range', f'value {reading.value:.6g} is outside reading_range = '
                        f'[{lo:g}, {hi:g}] (a sentinel, overflowed or unscaled value?)')
            return False
        if reading.stamp is not None and not math.isfinite(reading.stamp):
            self.reject('reading', 'non-finite stamp', 'stamp is not finite')
            return False
        if not math.isfinite(reading.variance) or reading.variance < 0:
            self.reject('reading', 'invalid variance', f'variance is {reading.variance}')
            return False
        if reading.stamp is None:
            if now is None:
                self.reject('reading', 'no clock to stamp it', 'a header-less reading arrived before the node '
                            'clock runs (simulated time before the first /clock): it cannot be stamped on arrival')
                return False
            reading = Reading(now, reading.value, reading.variance, stamped_on_arrival=True)
        elif now is not None:
            problem = self.stamp_problem(reading.stamp, now, self.params['reading_timeout'])
            if problem is not None:
                self.reject('reading', *problem)
                return False
        if not self._located and self.pending_reason is not None:
            return False        # poses arrive, the gate confirms the first place: nothing to locate it with yet
        if not self._located:
            self.reject('reading', 'before the first pose', 'a reading arrived before any pose estimate was accepted: '
                        'it cannot be located (is the localisation publishing, in global_frame '
                        f"{self.params['global_frame']!r}?)")
            return False
        if collecting:
            self.readings.append(reading)
        if (self.latest_reading is None or reading.stamp is None or self.latest_reading.stamp is None
                or reading.stamp >= self.latest_reading.stamp):
            self.latest_reading = reading
        return True

    # ------------------------------------------------------------ pairing
    def pair(self, now: float, window_start: float) -> tuple[PoseEstimate, Reading] | None:
        """The first queued reading that pairs with a pose estimate, with that pose; None while waiting.

        Readings stamped before ``window_start`` (taken while moving or settling) or in the future are
        dropped; a reading newer than every pose waits for a newer pose for up to ``reading_timeout``; the
        nearest pose in time is final once a newer one exists, and the pair is refused (counted, logged) when
        that pose is further than ``max_pose_age`` from the reading or its covariance trace exceeds
        ``max_covariance_trace``.

        Args:
            now: the host's clock, s.
            window_start: start of the measuring window, s (same clock).
        """
        while self.readings:
            reading = self.readings[0]
            stamp = reading.stamp if reading.stamp is not None else now
            if stamp < window_start:
                self.readings.popleft()  # taken while still moving/settling
                self.window_rejects['stamped before the measurement window'] += 1
                continue
            pose = self.pose_at(stamp, now, 'reading')
            if pose is WAIT:
                return None
            self.readings.popleft()
            if pose is not None:
                return pose, reading
        return None

    def pose_at(self, stamp: float, now: float, what: str = 'reading') -> 'PoseEstimate | None | object':
        """The pose estimate a reading stamped ``stamp`` pairs with: the buffered pose nearest in time.

        The one pairing rule of measurements (:meth:`pair`) and en-route readings: a reading stamped more than
        ``future_stamp_tolerance`` ahead of ``now`` is refused; while no pose newer than the reading exists,
        :data:`WAIT` is returned for up to ``reading_timeout`` (a closer pose may still come), then the reading is
        refused; the nearest pose is refused when it is further than ``max_pose_age`` from the stamp or its
        covariance trace exceeds ``max_covariance_trace``. A refusal is counted and logged
        (:meth:`reject` with ``what``) and returns None.

        Args:
            stamp: the reading's stamp, s (host clock).
            now: the host's clock, s.
            what: the counter prefix of refusals (``'reading'``, ``'en-route reading'``).

        Returns:
            The pose, :data:`WAIT`, or None (refused).
        """
        max_age = self.params['max_pose_age']
        if stamp - now > self.params['future_stamp_tolerance']:
            # would wait for a pose newer than it for as long as the clock lags the stamp: never pair it
            self.reject(what, *self.stamp_problem(stamp, now, math.inf))
            return None
        newest = self.poses[-1].stamp if self.poses else -math.inf
        if newest < stamp:
            # The localisation output lags the sensor (or has stopped): a closer pose may still come.
            if now - stamp <= self.params['reading_timeout']:
                return WAIT
            self.reject(what, 'no pose estimate newer than the reading',
                        f'no pose estimate newer than the reading arrived within reading_timeout = '
                        f'{self.params["reading_timeout"]} s (pose stream stale or stopped): dropped')
            return None
        pose, gap = self.nearest_pose(stamp)  # final: later poses are further away
        if gap > max_age:
            self.reject(what, 'no pose within max_pose_age',
                        f'no pose within max_pose_age = {max_age} s of its stamp (nearest {gap:.3f} s '
                        'away): dropped')
            return None
        trace = position_trace(pose.cov)
        if trace > self.params['max_covariance_trace']:
            self.reject(what, 'paired pose over max_covariance_trace',
                        f'its pose has covariance trace {trace:.3g} m² > max_covariance_trace = '
                        f'{self.params["max_covariance_trace"]} m²: dropped')
            return None
        return pose

    def nearest_pose(self, stamp: float) -> tuple[PoseEstimate | None, float]:
        """The buffered pose nearest in time to ``stamp`` and its distance in time, s (None, inf if none)."""
        best, gap = None, math.inf
        for p in reversed(self.poses):
            g = abs(p.stamp - stamp)
            if g < gap:
                best, gap = p, g
            elif p.stamp < stamp:
                break  # stamps are increasing: older poses are further away
        return best, gap

    # ------------------------------------------------------------ validation
    def pose_problem(self, pose: PoseEstimate) -> tuple[str, str] | None:
        """``(category, detail)`` of what is wrong with ``pose`` on its own, or None
        (:func:`~uncertain_bo.explorer.input_checks.pose_problem` with these parameters)."""
        return pose_problem(pose, self.params)

    def stamp_problem(self, stamp: float, now: float, max_age: float) -> tuple[str, str] | None:
        """``(category, detail)`` when ``stamp`` is too far ahead of ``now`` or more than ``max_age`` behind it,
        else None (:func:`~uncertain_bo.explorer.input_checks.stamp_problem` with ``future_stamp_tolerance``)."""
        return stamp_problem(stamp, now, max_age, self.params['future_stamp_tolerance'])

    # ------------------------------------------------------------ reporting
    def reject(self, what: str, category: str, detail: str) -> None:
        """Count and log a rejected input.

        Args:
            what: ``'pose'``, ``'reading'`` or ``'measurement'``.
            category: short fixed text (the counter key; keep the set of categories bounded).
            detail: the full reason for the log line and :attr:`last_reason`.
        """
        key = f'{what}: {category}'
        if what == 'reading' and self.collecting():
            self.window_rejects[category] += 1
        self.rejected[key] += 1
        self.last_reason = f'{what} rejected: {detail}'
        n = self.rejected[key]
        if n <= 3 or n % 100 == 0:  # throttle floods of the same problem
            log.warning('%s rejected (%s, %d so far): %s', self.named(what), category, n, detail)

    def throttled_warning(self, kind: str, fmt: str, *args) -> None:
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

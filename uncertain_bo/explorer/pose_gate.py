r"""Pose plausibility: a pose estimate that moved further than the rover can have driven is a glitch.

One wrong estimate (a GNSS glitch, a localiser's sentinel, a frame mix-up) must not teleport the rover: stored
there it would place an en-route reading or a measurement where the rover never was, and add the jump to the
distance driven (a single glitch of 1e6 m ended a mission by ``max_distance``). The gate sits in front of
everything that uses a pose (:meth:`~uncertain_bo.explorer.inputs.InputStreams.add_pose`): a rejected pose
reaches neither the pairing of measurements and en-route readings nor the odometer.

**The test** (a Mahalanobis gate, as robot_localization's ``*_rejection_threshold``, with the motion the rover
can have made taken out). Let an earlier accepted estimate be :math:`(t_0, \mu_0, \Sigma_0)` and the new one
:math:`(t_1, \mu_1, \Sigma_1)` (position mean, m, and covariance, m²); the rover can have moved by any
:math:`m` with :math:`\|m\| \le r = v_{max}\,|t_1 - t_0|` (``max_speed``, m/s). With

.. math::

    S = \Sigma_0 + \Sigma_1 + \sigma_{floor}^2 I, \qquad
    d^2 = \min_{\|m\| \le r} (\mu_1 - \mu_0 - m)^\top S^{-1} (\mu_1 - \mu_0 - m),

the pair fails when :math:`d^2` exceeds :data:`THRESHOLD`. If both estimates are unbiased with errors of
covariance :math:`\Sigma_0`, :math:`\Sigma_1` (independent; for outputs of one filter, which are positively
correlated, :math:`S` is larger than the covariance of their difference, so the test is conservative) and the true
motion :math:`m^*` is within :math:`r`, then :math:`d^2 \le (\delta - m^*)^\top S^{-1} (\delta - m^*) \sim
\chi^2_2`. :math:`\sigma_{floor}` (:data:`FLOOR_STD`) keeps exact estimates from being rejected for rounding and
stamp jitter. The minimum over the disc is the trust-region problem :math:`m = (A + \lambda I)^{-1} A \delta`,
:math:`A = S^{-1}`, with :math:`\lambda \ge 0` such that :math:`\|m\| = r` (``scipy.optimize.brentq`` in the
eigenbasis of :math:`A`); :math:`d^2 = 0` when :math:`\|\delta\| \le r`.

**Windows, not only consecutive poses.** A drift beyond ``max_speed`` that is small from one pose to the next
(0.5 m per pose at 20 Hz: twice 5 m/s, d² ≈ 0.7 per pair) passes a test of consecutive poses. So the new estimate
is tested against the last accepted one *and* against the accepted estimates about :data:`WINDOWS` s (0.25 to 16 s)
before it: a drift at speed :math:`v > v_{max}` fails once :math:`(v - v_{max})\,T > \sqrt{\text{THRESHOLD}\,
(\sigma_0^2 + \sigma_1^2 + \sigma_{floor}^2)}` over a window :math:`T` (per-axis variances :math:`\sigma^2`): with
0.2 m standard deviations, 1.5 x ``max_speed`` (5 m/s) is caught within 0.7 s, 1.1 x within 3.4 s. Each pose is
tested :data:`TESTS` times, each at :math:`\alpha / K` (Bonferroni): :data:`THRESHOLD` is the chi-square(2)
quantile :math:`\chi^2_2(1 - \alpha / K) = 2 \ln(K / \alpha) = 31.8` with :math:`\alpha` =
:data:`FALSE_REJECTION`, so a rover within ``max_speed`` is rejected with probability at most :math:`\alpha =
10^{-6}` per pose.

**Trusted estimates.** Only accepted estimates whose covariance trace is within ``max_covariance_trace`` are kept
as references. A diverged estimate (a huge covariance) passes the test, so that the divergence pause sees it, but
it is never a reference: the pose after it is tested against the last trusted ones, with the time since them (a
glitch right after a diverged estimate used to pass against the diverged one, end the pause and be stored).

**Stamps.** The motion allowance comes from stamps; the new pose's stamp counts at most :data:`MAX_STAMP_GAP` s
from the newest trusted estimate, so a pose stamped far ahead (possible where the host has no clock to check
stamps against) cannot widen the gate to anything; a pose stream silent for longer re-anchors if the rover moved
further than ``max_speed`` x :data:`MAX_STAMP_GAP` meanwhile.

**Confirming a place** (the first pose, a restarted time base, a relocation). The gate believes a place only when
several estimates agree on it, never on one pose:

- **at the start** no pose is accepted until :data:`REANCHOR_POSES` trusted estimates spanning at least
  :data:`REANCHOR_SECONDS` agree with each other (each passes the test against every earlier one of its candidate
  track, kept :data:`HISTORY_SPACING` apart: a drift cannot build a track by agreeing with its neighbours only);
  until then poses are *pending* (not rejections), and a candidate that the poses after it
  contradict is discarded (counted). So a glitch as the very first pose never becomes the mission's start;
- **after the time base restarted** (:meth:`PoseGate.restart`: stamps and the host clock jumped backwards, a
  simulation reset or a bag loop; :class:`~uncertain_bo.explorer.inputs.InputStreams` decides) the gate confirms
  a place again, as at the start: the time since the old references is unknown;
- **a relocation** (the localisation re-initialised with robot_localization's ``set_pose`` or AMCL's
  ``initialpose``, a rover carried to another place, a GNSS fix after a long outage) fails the test, and would lock
  the explorer out for good if every later pose were tested against the old place. So rejected trusted poses are
  followed as candidate tracks (at most :data:`TRACKS`: a stray pose does not break a track); after :data:`BURST`
  rejections in a row the gate reports a burst (a warning naming the likely causes, and a diagnostics counter);
  once a track holds :data:`REANCHOR_POSES` mutually consistent poses spanning at least :data:`REANCHOR_SECONDS`,
  the gate accepts the new place (**re-anchors**). An accepted pose drops the candidate tracks, so glitches
  interleaved with a healthy stream never re-anchor.

A confirmed or re-anchored place is accepted without its jump counting as distance driven (``reanchored``).
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from scipy.optimize import brentq
from scipy.stats import chi2

__all__ = ['PoseGate', 'GateVerdict', 'jump_mahalanobis2', 'FALSE_REJECTION', 'THRESHOLD', 'FLOOR_STD', 'BURST',
           'REANCHOR_POSES', 'REANCHOR_SECONDS', 'WINDOWS', 'TESTS', 'MAX_STAMP_GAP', 'TRACKS']

#: largest probability that the gate rejects a consistent estimate of a rover within ``max_speed`` (per pose, all
#: its tests together)
FALSE_REJECTION = 1e-6
#: besides the last accepted estimate, the new one is tested against the accepted estimates this long before it, s
WINDOWS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: tests per pose: the last accepted estimate and one per window
TESTS = 1 + len(WINDOWS)
#: the d² beyond which a test fails: the chi-square(2) quantile at 1 - FALSE_REJECTION / TESTS (31.8; computed once:
#: scipy's quantile costs tens of microseconds, a pose stream runs at up to hundreds of Hz)
THRESHOLD = float(chi2.isf(FALSE_REJECTION / TESTS, 2))
#: standard deviation added on each axis to the two estimates' covariance, m (exact estimates, stamp jitter)
FLOOR_STD = 0.1
#: least spacing of the trusted estimates kept for the windows, s (about 170 are kept at any pose rate)
HISTORY_SPACING = 0.1
#: rejections in a row that make a burst (reported: localisation re-initialised, or the rover was carried?)
BURST = 3
#: mutually consistent poses after which the gate believes a place (at the start, after a time-base restart, and
#: for a relocation) ...
REANCHOR_POSES = 5
#: ... provided they span at least this long, s (a fused glitch that the filter pulls back within a fix
#: period does not re-anchor; a localisation that stays elsewhere is believed)
REANCHOR_SECONDS = 2.0
#: the largest stamp difference to the newest trusted estimate that counts as time the rover can have driven, s (as
#: long as confirming a place takes: a pose stamped far ahead cannot buy more motion than a relocation would)
MAX_STAMP_GAP = REANCHOR_SECONDS
#: candidate tracks followed at once (a stray pose starts a second one instead of breaking the first)
TRACKS = 2


def jump_mahalanobis2(prev_xy, prev_cov, new_xy, new_cov, reach: float) -> float:
    r"""Squared Mahalanobis distance :math:`d^2` of a position jump beyond the motion the rover can have made
    (the module docstring's equation).

    Args:
        prev_xy, new_xy: ``(2,)`` position means, m.
        prev_cov, new_cov: ``(2, 2)`` position covariances, m² (valid covariances: symmetric, PSD).
        reach: largest distance the rover can have driven between the two, m (``max_speed`` x time).

    Returns:
        :math:`d^2` (dimensionless, >= 0; 0 when the jump is within ``reach``).
    """
    delta = np.asarray(new_xy, dtype=float) - np.asarray(prev_xy, dtype=float)
    if float(np.hypot(*delta)) <= reach:
        return 0.0
    s = np.asarray(prev_cov, dtype=float) + np.asarray(new_cov, dtype=float) + FLOOR_STD ** 2 * np.eye(2)
    s = 0.5 * (s + s.T)
    w, q = np.linalg.eigh(s)               # S = Q diag(w) Q^T; A = S^-1 has eigenvalues a = 1 / w
    a = 1.0 / np.maximum(w, FLOOR_STD ** 2)
    d = q.T @ delta                        # the jump in the eigenbasis
    if reach <= 0.0:
        return float(np.sum(a * d * d))

    a0, a1, d0, d1 = float(a[0]), float(a[1]), float(d[0]), float(d[1])

    def excess(lam: float) -> float:       # |m(lam)| - r, decreasing in lam (plain floats: brentq calls it often)
        return math.hypot(a0 * d0 / (a0 + lam), a1 * d1 / (a1 + lam)) - reach

    hi = max(a0, a1) * math.hypot(d0, d1) / reach    # |m(hi)| <= max(a) |d| / hi = r
    lam = brentq(excess, 0.0, hi) if excess(0.0) > 0.0 else 0.0
    r0, r1 = lam * d0 / (a0 + lam), lam * d1 / (a1 + lam)     # delta - m in the eigenbasis
    return a0 * r0 * r0 + a1 * r1 * r1


@dataclass(frozen=True)
class GateVerdict:
    """What the gate made of a pose.

    Attributes:
        accepted: the pose may be used.
        reanchored: accepted at a newly confirmed place (the first one, after a time-base restart, or a
            relocation): its jump from the last accepted estimate is not distance driven.
        pending: not accepted yet, and not a rejection: the gate is confirming its first place (the start, or
            after a time-base restart).
        burst_started: this rejection made the run of rejections a burst (report it once).
        discarded: candidate poses dropped while confirming a place because the poses after them contradicted
            them (never accepted: count them as rejected).
        detail: the reason (rejected, pending) or what happened (re-anchored), for the log and diagnostics.

    Example:
        >>> from uncertain_bo.explorer.pose_gate import GateVerdict
        >>> verdict = GateVerdict(False, detail='moved 40 m in 1 s')
        >>> verdict.accepted, verdict.pending, verdict.detail
        (False, False, 'moved 40 m in 1 s')
    """

    accepted: bool
    reanchored: bool = False
    pending: bool = False
    burst_started: bool = False
    discarded: int = 0
    detail: str = ''


_ACCEPT = GateVerdict(True)


@dataclass(frozen=True)
class _Estimate:
    stamp: float
    xy: np.ndarray
    cov: np.ndarray


class _Track:
    """Candidate poses that agree with each other: each with every one kept (kept at least HISTORY_SPACING apart,
    the first and the newest always)."""

    def __init__(self, est: _Estimate):
        self.kept = [est]
        self.n = 1

    @property
    def first(self) -> _Estimate:
        return self.kept[0]

    @property
    def last(self) -> _Estimate:
        return self.kept[-1]

    @property
    def span(self) -> float:
        return self.last.stamp - self.first.stamp

    def add(self, est: _Estimate) -> None:
        if len(self.kept) >= 2 and est.stamp - self.kept[-2].stamp < HISTORY_SPACING:
            self.kept[-1] = est
        else:
            self.kept.append(est)
        self.n += 1


class PoseGate:
    """The plausibility gate of pose estimates (see the module docstring).

    Args:
        params: the explorer's parameters, read live: ``max_speed`` (m/s; 0 switches the gate off: every valid
            pose is accepted at once) and ``max_covariance_trace`` (m²: estimates above it are never references;
            absent: every estimate is trusted).

    Attributes:
        consecutive: rejections in a row so far (0 after an accepted pose).
        bursts: bursts reported so far.
        reanchored: places confirmed after the first one (relocations and time-base restarts) so far.
        discarded: candidate poses discarded while confirming a place so far.

    Example:
        With ``max_speed`` = 1 m/s the first place is confirmed by a few agreeing poses; a 40 m jump a second later is
        rejected:

        >>> import numpy as np
        >>> from uncertain_bo.explorer.pose_gate import PoseGate
        >>> gate = PoseGate({'max_speed': 1.0, 'max_covariance_trace': 10.0})
        >>> cov = 0.01 * np.eye(2)
        >>> [gate.check(0.5 * k, np.array([0.5 * k, 0.0]), cov).accepted for k in range(6)][-1]
        True
        >>> verdict = gate.check(3.5, np.array([40.0, 0.0]), cov)
        >>> verdict.accepted, gate.consecutive
        (False, 1)
    """

    def __init__(self, params: Mapping[str, Any]):
        self.params = params
        self.consecutive = 0
        self.bursts = 0
        self.reanchored = 0
        self.discarded = 0
        self._history: deque[_Estimate] = deque()   # trusted accepted estimates, oldest first (HISTORY_SPACING)
        self._tracks: list[_Track] = []             # candidate tracks, longest first
        self._confirmed_once = False

    @property
    def threshold(self) -> float:
        """The :math:`d^2` beyond which a test fails (:data:`THRESHOLD`)."""
        return THRESHOLD

    @property
    def confirming(self) -> bool:
        """True while the gate has no confirmed place (the start, or after a time-base restart)."""
        return not self._history and float(self.params.get('max_speed', 0.0)) > 0.0

    def restart(self) -> None:
        """The time base restarted (stamps and the host clock jumped backwards: a simulation reset, a bag loop):
        forget the references (the time since them is unknown); the next place is confirmed as at the start."""
        self._history.clear()
        self._tracks.clear()
        self.consecutive = 0

    def check(self, stamp: float, xy, cov) -> GateVerdict:
        """Judge a validated pose estimate; an accepted trusted one becomes a reference.

        Args:
            stamp: its stamp, s.
            xy: ``(2,)`` position mean, m (a particle cloud's moment-matched mean).
            cov: ``(2, 2)`` position covariance, m².

        Returns:
            :class:`GateVerdict`.
        """
        new = _Estimate(float(stamp), np.array(xy, dtype=float).reshape(2), np.array(cov, dtype=float).reshape(2, 2))
        trusted = float(new.cov[0, 0]) + float(new.cov[1, 1]) <= self.params.get('max_covariance_trace', math.inf)
        speed = float(self.params.get('max_speed', 0.0))
        if speed <= 0.0:                          # the gate is off
            if trusted:
                self._history = deque([new])
            return _ACCEPT
        if not self._history:
            return self._confirm(new, trusted, speed)
        failed = self._failed_test(new, speed)
        if failed is None:
            self.consecutive = 0
            self._tracks.clear()
            if trusted:
                self._remember(new)
            return _ACCEPT
        self.consecutive += 1
        if trusted:
            track, _ = self._follow(new, speed)      # already counted as rejections: nothing to discard
            if track.n >= REANCHOR_POSES and track.span >= REANCHOR_SECONDS:
                xy0 = self._history[-1].xy
                jump = float(np.hypot(*(new.xy - xy0)))
                self.reanchored += 1
                detail = (f'{track.n} mutually consistent pose estimates over {track.span:.1f} s at '
                          f'({new.xy[0]:.2f}, {new.xy[1]:.2f}), {jump:.1f} m from the last accepted one '
                          f'({xy0[0]:.2f}, {xy0[1]:.2f}): accepting the new place (localisation re-initialised, or '
                          'the rover was moved); the jump is not counted as distance driven')
                self._believe(new)
                return GateVerdict(True, reanchored=True, detail=detail)
        burst = self.consecutive == BURST
        if burst:
            self.bursts += 1
        d2, ref, reach = failed
        jump = float(np.hypot(*(new.xy - ref.xy)))
        dt = abs(new.stamp - ref.stamp)
        detail = (f'position ({new.xy[0]:.6g}, {new.xy[1]:.6g}) is {jump:.3g} m from the accepted estimate '
                  f'({ref.xy[0]:.2f}, {ref.xy[1]:.2f}) {dt:.3g} s earlier; at max_speed = {speed:g} m/s the rover '
                  f'can have moved {reach:.3g} m: d² = {d2:.3g} > {THRESHOLD:.3g} given both covariances '
                  '(a localisation glitch, or a drift faster than the rover?)')
        return GateVerdict(False, burst_started=burst, detail=detail)

    # ------------------------------------------------------------ confirming a place
    def _confirm(self, new: _Estimate, trusted: bool, speed: float) -> GateVerdict:
        """No place is believed yet: a trusted pose joins a candidate track; a track of REANCHOR_POSES over
        REANCHOR_SECONDS is the place. A diverged estimate is accepted (the divergence pause must see it) but
        confirms nothing."""
        if not trusted:
            return _ACCEPT
        track, discarded = self._follow(new, speed)
        confirmed = track.n >= REANCHOR_POSES and track.span >= REANCHOR_SECONDS
        if confirmed:
            discarded += sum(t.n for t in self._tracks if t is not track)   # contradicted by the confirmed place
        self.discarded += discarded
        which = 'the place after the time-base restart' if self._confirmed_once else 'the first place'
        if confirmed:
            self.reanchored += self._confirmed_once
            detail = (f'{track.n} consistent pose estimates over {track.span:.1f} s at ({new.xy[0]:.2f}, '
                      f'{new.xy[1]:.2f}): {which} is confirmed')
            self._believe(new)
            return GateVerdict(True, reanchored=True, discarded=discarded, detail=detail)
        detail = (f'confirming {which}: {track.n} of {REANCHOR_POSES} consistent pose estimates over '
                  f'{track.span:.1f} of {REANCHOR_SECONDS:g} s at ({new.xy[0]:.2f}, {new.xy[1]:.2f})')
        return GateVerdict(False, pending=True, discarded=discarded, detail=detail)

    def _follow(self, new: _Estimate, speed: float) -> tuple[_Track, int]:
        """Extend the first candidate track ``new`` agrees with, else start one (dropping the shortest beyond
        :data:`TRACKS`). Returns the track and how many poses the dropped track held."""
        dropped = 0
        for track in self._tracks:
            gap = new.stamp - track.last.stamp
            t_new = track.last.stamp + min(gap, MAX_STAMP_GAP)
            if gap >= 0.0 and all(self._d2(ref, new, speed, t_new - ref.stamp) <= THRESHOLD
                                  for ref in reversed(track.kept)):
                track.add(new)
                break
        else:
            if len(self._tracks) >= TRACKS:
                dropped = self._tracks.pop().n
            track = _Track(new)
            self._tracks.append(track)
        self._tracks.sort(key=lambda t: -t.n)
        return track, dropped

    def _believe(self, new: _Estimate) -> None:
        self._history = deque([new])
        self._tracks.clear()
        self.consecutive = 0
        self._confirmed_once = True

    # ------------------------------------------------------------ the test over windows
    def _failed_test(self, new: _Estimate, speed: float) -> tuple[float, _Estimate, float] | None:
        """``(d², reference, reach)`` of the first failed test of ``new`` (the last trusted estimate, then the
        windows from the shortest), None when every test passes."""
        history = self._history
        newest = history[-1]
        t_new = newest.stamp + min(max(new.stamp - newest.stamp, -MAX_STAMP_GAP), MAX_STAMP_GAP)
        refs = [newest]
        i = len(history) - 1
        for window in WINDOWS:
            while i >= 0 and history[i].stamp > t_new - window:
                i -= 1
            if i < 0:
                break
            if history[i] is not refs[-1]:
                refs.append(history[i])
        for ref in refs:
            d2 = self._d2(ref, new, speed, abs(t_new - ref.stamp))
            if d2 > THRESHOLD:
                return d2, ref, speed * abs(t_new - ref.stamp)
        return None

    def _remember(self, new: _Estimate) -> None:
        history = self._history
        if len(history) >= 2 and new.stamp - history[-2].stamp < HISTORY_SPACING:
            history[-1] = new
        else:
            history.append(new)
        while len(history) >= 2 and history[1].stamp <= new.stamp - WINDOWS[-1]:
            history.popleft()

    @staticmethod
    def _d2(ref: _Estimate, new: _Estimate, speed: float, dt: float) -> float:
        """The test's d² of ``new`` against ``ref``, ``dt`` s (the capped stamp difference) after it."""
        reach = speed * dt
        return jump_mahalanobis2(ref.xy, ref.cov, new.xy, new.cov, reach if math.isfinite(reach) else math.inf)

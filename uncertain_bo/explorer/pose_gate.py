r"""Pose plausibility: a pose estimate that jumps further than the rover can have driven is a glitch.

One wrong estimate (a GNSS glitch, a localiser's sentinel, a frame mix-up) must not teleport the rover: stored
there it would place an en-route reading or a measurement where the rover never was, and add the jump to the
distance driven (a single glitch of 1e6 m ended a mission by ``max_distance``). The gate sits in front of
everything that uses a pose (:meth:`~uncertain_bo.explorer.inputs.InputStreams.add_pose`): a rejected pose
reaches neither the pairing of measurements and en-route readings nor the odometer.

**The test** (a Mahalanobis gate, as robot_localization's ``*_rejection_threshold``, with the motion the rover
can have made taken out). Let the last accepted estimate be :math:`(t_0, \mu_0, \Sigma_0)` and the new one
:math:`(t_1, \mu_1, \Sigma_1)` (position mean, m, and covariance, m²); the rover can have moved by any
:math:`m` with :math:`\|m\| \le r = v_{max}\,|t_1 - t_0|` (``max_speed``, m/s). With

.. math::

    S = \Sigma_0 + \Sigma_1 + \sigma_{floor}^2 I, \qquad
    d^2 = \min_{\|m\| \le r} (\mu_1 - \mu_0 - m)^\top S^{-1} (\mu_1 - \mu_0 - m),

the pose is rejected when :math:`d^2 > \chi^2_2(1 - \alpha)` (``scipy.stats.chi2.isf(α, 2)``, α =
:data:`FALSE_REJECTION`). If both estimates are unbiased with errors of covariance :math:`\Sigma_0`, :math:`\Sigma_1`
(independent; for successive outputs of one filter, which are positively correlated, :math:`S` is larger than
the covariance of their difference, so the test is conservative) and the true motion :math:`m^*` is within
:math:`r`, then :math:`d^2 \le (\delta - m^*)^\top S^{-1} (\delta - m^*) \sim \chi^2_2`: a rover within
``max_speed`` is rejected with probability at most α. :math:`\sigma_{floor}` (:data:`FLOOR_STD`) keeps exact
(Dirac, zero-covariance) estimates from being rejected for rounding and stamp jitter. The minimum over the
disc is the trust-region problem :math:`m = (A + \lambda I)^{-1} A \delta`, :math:`A = S^{-1}`, with
:math:`\lambda \ge 0` such that :math:`\|m\| = r` (found by ``scipy.optimize.brentq`` in the eigenbasis of
:math:`A`); :math:`d^2 = 0` when :math:`\|\delta\| \le r`.

A diverged estimate (huge :math:`\Sigma_1`) passes: it is the divergence pause's business
(``max_covariance_trace``), not a jump.

**Bursts and re-anchoring.** A real relocation (the localisation re-initialised with robot_localization's
``set_pose`` or AMCL's ``initialpose``, a rover carried to another place, a GNSS fix after a long outage) also
fails the test, and would lock the explorer out for good if every later pose were tested against the old
place. So the rejected poses are followed as a candidate track: each rejected pose that passes the same test
against the previous rejected one extends it, any other starts it anew. After :data:`BURST` rejections in a
row the gate reports a burst (a warning naming the likely causes, and a diagnostics counter); once the track
holds :data:`REANCHOR_POSES` mutually consistent poses spanning at least :data:`REANCHOR_SECONDS`, the gate
accepts the new place (**re-anchors**): the pose is accepted, the jump is not counted as distance driven, and
the re-anchoring is logged and counted. A one-off glitch never re-anchors; a localisation that is consistently
somewhere else is believed after a couple of seconds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from scipy.optimize import brentq
from scipy.stats import chi2

__all__ = ['PoseGate', 'GateVerdict', 'jump_mahalanobis2', 'FALSE_REJECTION', 'THRESHOLD', 'FLOOR_STD', 'BURST',
           'REANCHOR_POSES', 'REANCHOR_SECONDS']

#: largest probability that the gate rejects a consistent estimate of a rover within ``max_speed``
#: (the threshold is the chi-square(2) quantile: d² > 27.6, i.e. 5.3 standard deviations along a line)
FALSE_REJECTION = 1e-6
#: the d² beyond which a pose is rejected: the chi-square(2) quantile at 1 - FALSE_REJECTION (computed once:
#: scipy's quantile costs tens of microseconds, a pose stream runs at up to hundreds of Hz)
THRESHOLD = float(chi2.isf(FALSE_REJECTION, 2))
#: standard deviation added on each axis to the two estimates' covariance, m (exact estimates, stamp jitter)
FLOOR_STD = 0.1
#: rejections in a row that make a burst (reported: localisation re-initialised, or the rover was carried?)
BURST = 3
#: mutually consistent rejected poses in a row after which the gate accepts the new place ...
REANCHOR_POSES = 5
#: ... provided they span at least this long, s (a fused glitch that the filter pulls back within a fix
#: period does not re-anchor; a localisation that stays elsewhere is believed)
REANCHOR_SECONDS = 2.0


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
        reanchored: accepted as a new place after a burst (its jump is not distance driven).
        burst_started: this rejection made the run of rejections a burst (report it once).
        detail: the reason (rejected) or what happened (re-anchored), for the log and diagnostics; '' else.
    """

    accepted: bool
    reanchored: bool = False
    burst_started: bool = False
    detail: str = ''


_ACCEPT = GateVerdict(True)


class PoseGate:
    """The plausibility gate of pose estimates (see the module docstring).

    Args:
        params: the explorer's parameters, read live: ``max_speed`` (m/s; 0 switches the gate off).

    Attributes:
        anchor: ``(stamp, xy, cov)`` of the last accepted estimate (None before the first).
        consecutive: rejections in a row so far (0 after an accepted pose).
        bursts: bursts reported so far.
        reanchored: re-anchorings so far.
    """

    def __init__(self, params: Mapping[str, Any]):
        self.params = params
        self.anchor: tuple[float, np.ndarray, np.ndarray] | None = None
        self.consecutive = 0
        self.bursts = 0
        self.reanchored = 0
        self._track: tuple[float, np.ndarray, np.ndarray] | None = None   # the newest rejected pose
        self._track_len = 0
        self._track_since = 0.0

    @property
    def threshold(self) -> float:
        """The :math:`d^2` beyond which a pose is rejected (:data:`THRESHOLD`)."""
        return THRESHOLD

    def reset(self) -> None:
        """Forget the anchor (the pose buffers were reset: a bag loop or simulation reset); the next pose is
        accepted as it is."""
        self.anchor = None
        self._drop_track()

    def check(self, stamp: float, xy, cov) -> GateVerdict:
        """Judge a validated pose estimate and, when it is accepted, make it the anchor.

        Args:
            stamp: its stamp, s.
            xy: ``(2,)`` position mean, m (a particle cloud's moment-matched mean).
            cov: ``(2, 2)`` position covariance, m².

        Returns:
            :class:`GateVerdict`.
        """
        new = (float(stamp), np.array(xy, dtype=float).reshape(2), np.array(cov, dtype=float).reshape(2, 2))
        speed = float(self.params.get('max_speed', 0.0))
        if self.anchor is None or speed <= 0.0:
            return self._accept(new)
        d2 = self._d2(self.anchor, new, speed)
        if d2 <= self.threshold:
            return self._accept(new)
        self.consecutive += 1
        if self._track is not None and self._d2(self._track, new, speed) <= self.threshold:
            self._track_len += 1
        else:
            self._track_len, self._track_since = 1, new[0]
        self._track = new
        t0, xy0, _ = self.anchor
        jump = float(np.hypot(*(new[1] - xy0)))
        dt = abs(new[0] - t0)
        if self._track_len >= REANCHOR_POSES and new[0] - self._track_since >= REANCHOR_SECONDS:
            span = new[0] - self._track_since
            self.reanchored += 1
            detail = (f'{self._track_len} consecutive consistent pose estimates over {span:.1f} s at '
                      f'({new[1][0]:.2f}, {new[1][1]:.2f}), {jump:.1f} m from the last accepted one '
                      f'({xy0[0]:.2f}, {xy0[1]:.2f}): accepting the new place (localisation re-initialised, or the '
                      'rover was moved); the jump is not counted as distance driven')
            self._accept(new)
            return GateVerdict(True, reanchored=True, detail=detail)
        burst = self.consecutive == BURST
        if burst:
            self.bursts += 1
        detail = (f'position ({new[1][0]:.6g}, {new[1][1]:.6g}) is {jump:.3g} m from the last accepted estimate '
                  f'({xy0[0]:.2f}, {xy0[1]:.2f}) {dt:.3g} s earlier; at max_speed = {speed:g} m/s the rover can '
                  f'have moved {speed * dt:.3g} m: d² = {d2:.3g} > {self.threshold:.3g} given both covariances '
                  '(a localisation glitch?)')
        return GateVerdict(False, burst_started=burst, detail=detail)

    def _accept(self, new) -> GateVerdict:
        self.anchor = new
        self.consecutive = 0
        self._drop_track()
        return _ACCEPT

    def _drop_track(self) -> None:
        self._track, self._track_len, self._track_since = None, 0, 0.0

    @staticmethod
    def _d2(prev, new, speed: float) -> float:
        reach = speed * abs(new[0] - prev[0])
        return jump_mahalanobis2(prev[1], prev[2], new[1], new[2], reach if math.isfinite(reach) else math.inf)

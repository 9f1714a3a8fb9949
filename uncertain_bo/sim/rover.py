"""Planar differential-drive rover with wheel slip, its wheel odometry and an absolute position fix.

The three pieces are the simulated robot's physics and its two localisation sensors:

* :class:`DiffDriveRover` integrates the true pose ``(x, y, yaw)`` (map frame, metres / radians) under
  velocity commands with velocity and acceleration limits and **wheel slip**: each wheel's ground speed is
  its commanded rotation speed times ``(1 + ε)``, ``ε ~ N(0, wheel_slip_std²)`` drawn independently per
  wheel and per control step, plus an optional sideways (lateral) slip velocity. Slip is the physical
  **execution noise**: the rover does not move exactly as commanded.
* :class:`WheelOdometry` measures the wheels' rotation (what encoders see, i.e. the motion *without*
  slip) plus encoder noise, and reports a twist covariance that accounts for both the encoder noise and
  the slip it cannot see, so a filter that trusts the covariance stays consistent.
* :class:`PositionFix` is an absolute position measurement (GNSS/UWB-like): true ``xy`` plus
  ``N(0, fix_std² I)`` at ``fix_rate`` Hz, optionally with outliers, and noisier (or lost) inside an optional
  GNSS-degraded zone.

Parameters are declared once as :class:`~uncertain_bo.parameters.Param` lists (``ROVER_PARAMS``,
``ODOMETRY_PARAMS``, ``FIX_PARAMS``); every component takes a mapping of validated values and reads it at
use time, so a live parameter dictionary (ROS parameter updates) takes effect at the next step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from uncertain_bo.parameters import Param, ParameterError, validate

__all__ = ['ROVER_PARAMS', 'ODOMETRY_PARAMS', 'FIX_PARAMS', 'RoverState', 'DiffDriveRover',
           'WheelOdometry', 'PositionFix', 'wrap_angle']

ROVER_PARAMS = [
    Param('max_linear_vel', 2.0, 'largest forward/backward speed the rover executes (m/s); commands '
          'beyond it are clipped', range=(0.01, 20.0)),
    Param('max_angular_vel', 1.0, 'largest yaw rate the rover executes (rad/s); commands beyond it are '
          'clipped', range=(0.01, 20.0)),
    Param('max_linear_accel', 1.0, 'largest change of speed per second (m/s²)', range=(0.01, 100.0)),
    Param('max_angular_accel', 2.0, 'largest change of yaw rate per second (rad/s²)', range=(0.01, 100.0)),
    Param('wheel_separation', 0.6, 'distance between the left and right wheel contact points (m)',
          range=(0.05, 10.0)),
    Param('wheel_slip_std', 0.05, 'standard deviation of the per-wheel multiplicative slip: ground speed = '
          'wheel speed x (1 + N(0, std²)), drawn per wheel per control step (dimensionless, 0.05 = 5 %)',
          range=(0.0, 1.0)),
    Param('lateral_slip_std', 0.0, 'standard deviation of the sideways slip velocity drawn per control '
          'step (m/s); 0 disables lateral slip', range=(0.0, 5.0)),
]

ODOMETRY_PARAMS = [
    Param('odom_linear_vel_std', 0.02, 'wheel-encoder noise on the measured forward speed (m/s, 1 sigma)',
          range=(0.0, 5.0)),
    Param('odom_angular_vel_std', 0.02, 'wheel-encoder noise on the measured yaw rate (rad/s, 1 sigma)',
          range=(0.0, 5.0)),
]

FIX_PARAMS = [
    Param('fix_std', 2.0, 'standard deviation of each coordinate of an absolute position fix (m)',
          range=(0.001, 100.0)),
    Param('fix_rate', 1.0, 'absolute position fixes per simulated second (Hz); 0 disables fixes (the pose '
          'covariance then grows without bound)', range=(0.0, 100.0)),
    Param('fix_outlier_prob', 0.0, 'probability that a fix is an outlier (probability in [0, 1])',
          range=(0.0, 1.0)),
    Param('fix_outlier_std', 20.0, 'standard deviation of the extra error of an outlier fix (m)',
          range=(0.0, 1000.0)),
    Param('degraded_zone', [0.0, 0.0, 0.0, 0.0], 'GNSS-degraded zone [xmin, xmax, ymin, ymax] (m, map frame) '
          'where fixes are noisier and may be lost (tree cover, a cliff); all zeros = no zone. Let it extend '
          'beyond the field to make one of its edges the only boundary inside the field',
          range=(-1e7, 1e7), length=4),
    Param('degraded_fix_std', 3.0, 'standard deviation of each fix coordinate deep inside the degraded zone '
          '(m); the covariance published with each fix is the true one at the rover\'s position',
          range=(0.001, 100.0)),
    Param('degraded_ramp', 10.0, 'depth inside the degraded zone (m) over which the fix std rises smoothly '
          '(smoothstep) from fix_std at the edge to degraded_fix_std, and the dropout probability from 0 to '
          'degraded_fix_dropout; 0 = a sharp edge', range=(0.0, 1e4)),
    Param('degraded_fix_dropout', 0.0, 'probability that a due fix is lost deep inside the degraded zone '
          '(probability in [0, 1])', range=(0.0, 1.0)),
]


def wrap_angle(a):
    """Wrap an angle (rad, float or array) into ``[-pi, pi)``."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


@dataclass
class RoverState:
    """Result of one :meth:`DiffDriveRover.step`.

    Attributes:
        pose: true pose ``(x, y, yaw)`` after the step (m, m, rad, map frame).
        v, vy, w: true body-frame velocities over the step (m/s forward, m/s left, rad/s).
        wheel_v, wheel_w: forward speed and yaw rate implied by the wheels' rotation (no slip), i.e. what
            ideal encoders would measure (m/s, rad/s).
        wheel_left, wheel_right: commanded wheel rim speeds after the limits (m/s).
    """

    pose: np.ndarray
    v: float
    vy: float
    w: float
    wheel_v: float
    wheel_w: float
    wheel_left: float
    wheel_right: float


class DiffDriveRover:
    """Unicycle / differential-drive kinematics with velocity, acceleration limits and wheel slip.

    Args:
        params: values for ``ROVER_PARAMS`` (missing names take defaults); validated on construction and
            read at every step (a live dict may be updated between steps).
        pose: initial true pose ``(x, y, yaw)`` (m, m, rad).

    Raises:
        ParameterError: a parameter is out of range.
    """

    def __init__(self, params: Mapping[str, Any] | None = None, pose=(0.0, 0.0, 0.0)):
        self.params = _ensure(params, ROVER_PARAMS)
        self.pose = np.array(pose, dtype=float).reshape(3)
        self.pose[2] = wrap_angle(self.pose[2])
        self.v = 0.0   # current commanded (wheel) forward speed, m/s
        self.w = 0.0   # current commanded (wheel) yaw rate, rad/s

    def step(self, v_cmd: float, w_cmd: float, dt: float, rng: np.random.Generator) -> RoverState:
        """Execute ``(v_cmd, w_cmd)`` for ``dt`` seconds.

        Args:
            v_cmd: commanded forward speed (m/s).
            w_cmd: commanded yaw rate (rad/s, counter-clockwise positive).
            dt: step length (s, > 0).
            rng: source of the slip noise.

        Returns:
            :class:`RoverState` with the new true pose.

        Raises:
            ValueError: ``dt <= 0`` or a non-finite command.
        """
        if not dt > 0:
            raise ValueError(f'dt must be positive seconds, got {dt!r}')
        if not (math.isfinite(v_cmd) and math.isfinite(w_cmd)):
            raise ValueError(f'velocity command must be finite, got ({v_cmd!r}, {w_cmd!r})')
        p = self.params
        v_target = _clip(float(v_cmd), -p['max_linear_vel'], p['max_linear_vel'])
        w_target = _clip(float(w_cmd), -p['max_angular_vel'], p['max_angular_vel'])
        dv = p['max_linear_accel'] * dt
        dw = p['max_angular_accel'] * dt
        self.v = _clip(v_target, self.v - dv, self.v + dv)
        self.w = _clip(w_target, self.w - dw, self.w + dw)
        half = 0.5 * p['wheel_separation']
        left, right = self.v - self.w * half, self.v + self.w * half
        s = p['wheel_slip_std']
        eps_l, eps_r = rng.normal(0.0, s, 2).tolist() if s > 0 else (0.0, 0.0)
        g_left, g_right = left * (1.0 + eps_l), right * (1.0 + eps_r)
        v = 0.5 * (g_left + g_right)
        w = (g_right - g_left) / p['wheel_separation']
        vy = float(rng.normal(0.0, p['lateral_slip_std'])) if p['lateral_slip_std'] > 0 else 0.0
        self.pose = integrate_pose(self.pose, v, vy, w, dt)
        return RoverState(self.pose.copy(), v, vy, w, self.v, self.w, left, right)


def _clip(a: float, lo: float, hi: float) -> float:
    return lo if a < lo else hi if a > hi else a


def integrate_pose(pose: np.ndarray, v: float, vy: float, w: float, dt: float) -> np.ndarray:
    """Exact integration of constant body velocities ``(v, vy, w)`` over ``dt`` from ``pose`` (3,)."""
    x, y, th = pose
    if abs(w * dt) < 1e-9:
        c, s = math.cos(th), math.sin(th)
        return np.array([x + (v * c - vy * s) * dt, y + (v * s + vy * c) * dt, wrap_angle(th)])
    th2 = th + w * dt
    sin1, cos1, sin2, cos2 = math.sin(th), math.cos(th), math.sin(th2), math.cos(th2)
    dx = (v * (sin2 - sin1) + vy * (cos2 - cos1)) / w
    dy = (v * (cos1 - cos2) + vy * (sin2 - sin1)) / w
    return np.array([x + dx, y + dy, wrap_angle(th2)])


class WheelOdometry:
    """Wheel-encoder odometry: measured twist = wheel rotation + encoder noise.

    The rover's slip is invisible to the encoders; :meth:`twist_covariance` therefore reports the encoder
    noise **plus** the slip variance implied by the current wheel speeds, so that the odometry's
    covariance describes its actual error with respect to the true ground motion.

    Args:
        params: values for ``ODOMETRY_PARAMS`` and ``ROVER_PARAMS`` (slip and wheel separation are needed
            for the covariance); read at use time.
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, ODOMETRY_PARAMS + ROVER_PARAMS)

    def measure(self, state: RoverState, rng: np.random.Generator) -> tuple[float, float]:
        """Measured ``(v, w)`` (m/s, rad/s) for a rover step: wheel-implied velocities + N(0, std²)."""
        p = self.params
        v = state.wheel_v + (rng.normal(0.0, p['odom_linear_vel_std']) if p['odom_linear_vel_std'] else 0.0)
        w = state.wheel_w + (rng.normal(0.0, p['odom_angular_vel_std']) if p['odom_angular_vel_std'] else 0.0)
        return float(v), float(w)

    def velocity_covariance(self, state: RoverState) -> np.ndarray:
        """3x3 covariance of the error of the measured ``(v, vy, w)`` w.r.t. the true ground motion.

        Slip part: with rim speeds ``l, r``, slip ``σ`` and separation ``L``, ``v = (l ε_l + r ε_r)/2`` and
        ``w = (r ε_r - l ε_l)/L`` give ``var v = σ²(l² + r²)/4``, ``var w = σ²(l² + r²)/L²``,
        ``cov(v, w) = σ²(r² - l²)/(2L)``; ``var vy = lateral_slip_std²``; encoder variances are added.
        """
        p = self.params
        s2 = p['wheel_slip_std'] ** 2
        L = p['wheel_separation']
        l2, r2 = state.wheel_left ** 2, state.wheel_right ** 2
        cov = np.zeros((3, 3))
        cov[0, 0] = s2 * (l2 + r2) / 4.0 + p['odom_linear_vel_std'] ** 2
        cov[2, 2] = s2 * (l2 + r2) / L ** 2 + p['odom_angular_vel_std'] ** 2
        cov[0, 2] = cov[2, 0] = s2 * (r2 - l2) / (2.0 * L)
        cov[1, 1] = p['lateral_slip_std'] ** 2
        return cov

    def twist_covariance(self, state: RoverState) -> np.ndarray:
        """6x6 twist covariance, row-major over (vx, vy, vz, wx, wy, wz), as in nav_msgs/Odometry.

        The unmeasured vz, wx, wy are exactly zero for a planar rover, as is vy without lateral slip; they
        get a small positive variance (1e-9) so the matrix is positive definite.
        """
        c3 = self.velocity_covariance(state)
        c3[1, 1] = max(c3[1, 1], 1e-9)
        cov = np.diag([0.0, 0.0, 1e-9, 1e-9, 1e-9, 0.0])
        idx = [0, 1, 5]
        cov[np.ix_(idx, idx)] = c3
        return cov


class PositionFix:
    """Absolute position fix (GNSS/UWB-like): true ``xy`` + ``N(0, σ(xy)² I)``, optionally outliers.

    ``σ(xy)`` is ``fix_std`` everywhere except in the optional **degraded zone** (``degraded_zone``): there it
    rises with the depth ``d`` inside the zone (distance to the nearest zone edge, m) as
    ``σ = fix_std + s (degraded_fix_std - fix_std)`` with the smoothstep weight ``s = 3u² - 2u³``,
    ``u = min(d / degraded_ramp, 1)`` (``s = 1`` anywhere inside for a zero ramp), and a due fix is lost with
    probability ``s · degraded_fix_dropout``. Without a zone the fixes are exactly those of the plain model.

    Args:
        params: values for ``FIX_PARAMS``; read at use time.

    Raises:
        ParameterError: a parameter is out of range, or ``degraded_zone`` is not all zeros and has
            ``xmin >= xmax`` or ``ymin >= ymax``.
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, FIX_PARAMS)
        zone = self.params['degraded_zone']
        if any(zone) and not (zone[0] < zone[1] and zone[2] < zone[3]):
            raise ParameterError(f'parameter \'degraded_zone\' = {list(zone)!r} is invalid: expected [xmin, xmax, '
                                 'ymin, ymax] metres with xmin < xmax and ymin < ymax, or all zeros for no zone')

    @property
    def covariance(self) -> np.ndarray:
        """2x2 covariance (m²) of a fix outside the degraded zone (the nominal one, not the outliers')."""
        return self.params['fix_std'] ** 2 * np.eye(2)

    def zone_weight(self, xy: np.ndarray) -> float:
        """Smoothstep weight ``s`` in [0, 1] of the degraded zone at ``xy`` (2,) metres: 0 outside the zone,
        on its edge and when there is no zone (or an inverted one, after a live parameter update); 1 at
        ``degraded_ramp`` metres or more inside."""
        zone = self.params['degraded_zone']
        if not any(zone):
            return 0.0
        x, y = float(xy[0]), float(xy[1])
        depth = min(x - zone[0], zone[1] - x, y - zone[2], zone[3] - y)
        if not depth > 0.0:
            return 0.0
        ramp = self.params['degraded_ramp']
        if ramp <= 0.0 or depth >= ramp:
            return 1.0
        u = depth / ramp
        return u * u * (3.0 - 2.0 * u)

    def std_at(self, xy: np.ndarray) -> float:
        """Standard deviation (m) of each coordinate of a fix taken at ``xy`` (2,) metres."""
        p = self.params
        s = self.zone_weight(xy)
        return p['fix_std'] if s == 0.0 else p['fix_std'] + s * (p['degraded_fix_std'] - p['fix_std'])

    def covariance_at(self, xy: np.ndarray) -> np.ndarray:
        """2x2 covariance (m²) published with a fix taken at ``xy`` (2,) metres (the outliers' excluded)."""
        return self.std_at(xy) ** 2 * np.eye(2)

    def dropout_at(self, xy: np.ndarray) -> float:
        """Probability (0-1) that a fix due at ``xy`` (2,) metres is lost."""
        s = self.zone_weight(xy)
        return 0.0 if s == 0.0 else s * self.params['degraded_fix_dropout']

    def measure(self, xy_true: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A fix (2,) in metres for the true position ``xy_true`` (2,), with the noise of :meth:`std_at`."""
        p = self.params
        xy = np.asarray(xy_true, dtype=float)[:2]
        z = xy + rng.normal(0.0, self.std_at(xy), 2)
        if p['fix_outlier_prob'] > 0 and rng.random() < p['fix_outlier_prob']:
            z = z + rng.normal(0.0, p['fix_outlier_std'], 2)
        return z


def _has_all(params: Mapping[str, Any], specs) -> bool:
    return all(s.name in params for s in specs)


def _ensure(params: Mapping[str, Any] | None, specs) -> Mapping[str, Any]:
    """Validate the names of ``params`` that ``specs`` declare (others are ignored).

    Returns ``params`` itself when it already holds every spec'd name (a live dict: later updates are seen
    at use time), else a validated copy with defaults filled in.

    Raises:
        ParameterError: a value is out of range or of the wrong type.
    """
    names = {s.name for s in specs}
    checked = validate(specs, {k: v for k, v in (params or {}).items() if k in names})
    if params is not None and _has_all(params, specs):
        return params
    return checked

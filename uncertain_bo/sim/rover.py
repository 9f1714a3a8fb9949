"""Planar differential-drive rover with wheel slip, its wheel odometry and an absolute position fix.

The three pieces are the simulated robot's physics and its two localisation sensors:

* :class:`DiffDriveRover` integrates the true pose ``(x, y, yaw)`` (map frame, metres / radians) under
  velocity commands with velocity and acceleration limits and **wheel slip**: each wheel's ground speed is
  its commanded rotation speed times ``(1 + ε)``, ``ε ~ N(0, wheel_slip_std²)`` drawn independently per
  wheel and per control step, plus an optional sideways (lateral) slip velocity. Slip is the physical
  **execution noise**: the rover does not move exactly as commanded.
* :class:`WheelOdometry` is the rover's odometry, from one of three sources (``odometry_source``): the wheels'
  rotation (what encoders see, i.e. the motion *without* slip), the wheels for the speed and a gyro for the yaw
  rate, or a sensor of the ground motion itself (visual odometry, a DVL with an INS: slip included). It adds
  white noise per step and, optionally, a constant scale-factor error drawn once per run
  (``odom_scale_error_std``: the dead-reckoning drift that grows in proportion to the distance driven,
  :mod:`uncertain_bo.sim.drift`). The twist covariance it reports accounts for the white noise and the slip it
  cannot see (the scale error is a bias a filter estimates as a state), so a filter that trusts the covariance
  stays consistent.
* :class:`PositionFix` is an absolute position measurement (GNSS/UWB-like): true ``xy`` plus
  ``N(0, fix_std² I)`` at ``fix_rate`` Hz, optionally with outliers, and noisier (or lost) inside an optional
  GNSS-degraded zone; or, with ``fix_beacons``, only within the radius of a few sources at known places
  (beacons, fiducials, UWB anchors, open-sky patches), each with its own std.

Parameters are declared once as :class:`~uncertain_bo.parameters.specs.Param` lists (``ROVER_PARAMS``,
``ODOMETRY_PARAMS``, ``FIX_PARAMS``); every component takes a mapping of validated values and reads it at
use time, so a live parameter dictionary (ROS parameter updates) takes effect at the next step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from uncertain_bo.parameters.specs import Param, ParameterError, validate

__all__ = ['ROVER_PARAMS', 'ODOMETRY_PARAMS', 'FIX_PARAMS', 'RoverState', 'DiffDriveRover',
           'WheelOdometry', 'PositionFix', 'beacon_array', 'wrap_angle']

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
    Param('odom_angular_vel_std', 0.02, 'noise on the measured yaw rate (rad/s, 1 sigma, per step): the wheel '
          "encoders', or the gyro's or ground sensor's (odometry_source)", range=(0.0, 5.0)),
    Param('odometry_source', 'wheel', "what the odometry measures: 'wheel' (speed and yaw rate from the wheels' "
          "rotation: slip unseen), 'wheel_gyro' (speed from the wheels, slip unseen; yaw rate from a gyro: the "
          "true yaw rate plus odom_angular_vel_std noise) or 'ground_velocity' (visual odometry, a DVL with an INS: "
          'the true ground motion (v, vy, w) plus odom_linear_vel_std / odom_angular_vel_std noise, slip seen)',
          choices=('wheel', 'wheel_gyro', 'ground_velocity')),
    Param('odom_scale_error_std', 0.0, "std of the odometry's constant scale-factor error e, drawn once per run from "
          'the seed: the measured speeds are the true ones divided by (1 + e) (systematic slip on soil, a wrong wheel '
          "radius, a DVL's scale factor; dimensionless). A localiser given the same odom_scale_error_std estimates "
          'e as a state; 0 = none', range=(0.0, 0.3)),
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
    Param('fix_beacons', [0.0, 0.0, 0.0, 0.0], 'absolute fixes only at known places (beacons, fiducials, UWB '
          'anchors, open-sky patches): a flat list x, y, radius, std for each source (m, map frame); within radius '
          'of a source the due fixes (fix_rate) have that std (the smallest where sources overlap), elsewhere there '
          'are none, and fix_std / degraded_zone do not apply. All zeros = no sources: fixes everywhere',
          range=(-1e7, 1e7)),
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

    Example:
        Ten seconds of "1 m/s straight ahead" with 5 % wheel slip: the rover does not move exactly as commanded,
        while its wheels report exactly the command:

        >>> import numpy as np
        >>> rover = DiffDriveRover({'wheel_slip_std': 0.05}, pose=(0.0, 0.0, 0.0))
        >>> rng = np.random.default_rng(0)
        >>> for _ in range(100):
        ...     state = rover.step(1.0, 0.0, dt=0.1, rng=rng)
        >>> state.pose.round(2).tolist(), state.wheel_v, state.wheel_w        # true pose vs. the wheels
        ([9.52, 0.75, 0.14], 1.0, 0.0)
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

    Example:
        Without slip (and with acceleration limits too high to matter) the rover follows the commanded arc
        exactly: a quarter circle of radius 2 m at 1 m/s:

        >>> import math
        >>> import numpy as np
        >>> rover = DiffDriveRover({'wheel_slip_std': 0.0, 'max_linear_accel': 100.0, 'max_angular_accel': 100.0})
        >>> for _ in range(100):                                 # pi seconds
        ...     state = rover.step(1.0, 0.5, dt=math.pi / 100, rng=np.random.default_rng(0))
        >>> state.pose.round(3).tolist(), round(math.pi / 2, 3)
        ([2.0, 2.0, 1.571], 1.571)
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
    """The rover's odometry: measured body twist = what its source sees, over (1 + scale error), + white noise.

    ``odometry_source`` says what is measured: ``'wheel'`` the wheels' rotation (slip invisible), ``'wheel_gyro'``
    the wheels' forward speed (slip invisible) and the true yaw rate from a gyro, ``'ground_velocity'`` the true
    ground motion ``(v, vy, w)`` (visual odometry, a DVL aided by an INS). The measured speeds are divided by
    ``1 + scale_error`` (:attr:`scale_error`, drawn once per run by the world from ``odom_scale_error_std``).
    :meth:`velocity_covariance` reports the white noise plus the slip variance the source cannot see, implied by
    the current wheel speeds, so that a filter trusting it stays consistent; the scale error is a bias, left to a
    filter that models it as a state (``ekf.odom_scale_error_std``).

    Args:
        params: values for ``ODOMETRY_PARAMS`` and ``ROVER_PARAMS`` (slip and wheel separation are needed
            for the covariance); read at use time.

    Attributes:
        scale_error: this run's constant scale-factor error (dimensionless; 0 until the world draws it).

    Example:
        Wheel encoders cannot see the slip: the twist covariance they report includes it:

        >>> import numpy as np
        >>> rover = DiffDriveRover({'wheel_slip_std': 0.05, 'max_linear_accel': 100.0})
        >>> odometry = WheelOdometry({'odometry_source': 'wheel', 'odom_linear_vel_std': 0.02,
        ...                           'odom_angular_vel_std': 0.02, 'wheel_slip_std': 0.05, 'wheel_separation': 0.6})
        >>> state = rover.step(1.0, 0.0, dt=0.1, rng=np.random.default_rng(0))
        >>> v, w = odometry.measure(state, np.random.default_rng(1))
        >>> # v: sqrt(0.05² 1²/2 + 0.02²), w: sqrt(2 0.05² 1² / 0.6² + 0.02²)
        >>> np.sqrt(np.diag(odometry.velocity_covariance(state))).round(3).tolist()    # (v, vy, w) std
        [0.041, 0.0, 0.12]
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, ODOMETRY_PARAMS + ROVER_PARAMS)
        self.scale_error = 0.0

    def measure(self, state: RoverState, rng: np.random.Generator) -> tuple[float, float]:
        """Measured ``(v, w)`` (m/s, rad/s) for a rover step (:meth:`measure_twist` without ``vy``)."""
        v, _, w = self.measure_twist(state, rng)
        return v, w

    def measure_twist(self, state: RoverState, rng: np.random.Generator) -> tuple[float, float, float]:
        """Measured ``(v, vy, w)`` (m/s, m/s, rad/s) for a rover step: the source's velocities over
        ``1 + scale_error``, plus ``N(0, odom_linear_vel_std²)`` on the speeds (``vy`` only for
        ``'ground_velocity'``; the wheel sources report 0) and ``N(0, odom_angular_vel_std²)`` on the yaw rate."""
        p = self.params
        source = p['odometry_source']
        if source == 'wheel':
            v, vy, w = state.wheel_v, 0.0, state.wheel_w
        elif source == 'wheel_gyro':
            v, vy, w = state.wheel_v, 0.0, state.w
        else:
            v, vy, w = state.v, state.vy, state.w
        k = 1.0 / (1.0 + self.scale_error)
        v = k * v + (rng.normal(0.0, p['odom_linear_vel_std']) if p['odom_linear_vel_std'] else 0.0)
        w = w + (rng.normal(0.0, p['odom_angular_vel_std']) if p['odom_angular_vel_std'] else 0.0)
        if source == 'ground_velocity':
            vy = k * vy + (rng.normal(0.0, p['odom_linear_vel_std']) if p['odom_linear_vel_std'] else 0.0)
        return float(v), float(vy), float(w)

    def velocity_covariance(self, state: RoverState) -> np.ndarray:
        """3x3 covariance of the error of the measured ``(v, vy, w)`` w.r.t. the true ground motion (the scale
        error excluded).

        Slip part, for what the source cannot see: with rim speeds ``l, r``, slip ``σ`` and separation ``L``,
        ``v = (l ε_l + r ε_r)/2`` and ``w = (r ε_r - l ε_l)/L`` give ``var v = σ²(l² + r²)/4``, ``var w = σ²(l² +
        r²)/L²``, ``cov(v, w) = σ²(r² - l²)/(2L)`` (``'wheel'``; ``'wheel_gyro'`` keeps ``var v`` only,
        ``'ground_velocity'`` none); ``var vy = lateral_slip_std²`` for the wheel sources; the white noise
        variances are added (on ``vy`` too for ``'ground_velocity'``).
        """
        p = self.params
        source = p['odometry_source']
        s2 = p['wheel_slip_std'] ** 2 if source != 'ground_velocity' else 0.0
        L = p['wheel_separation']
        l2, r2 = state.wheel_left ** 2, state.wheel_right ** 2
        cov = np.zeros((3, 3))
        cov[0, 0] = s2 * (l2 + r2) / 4.0 + p['odom_linear_vel_std'] ** 2
        cov[2, 2] = p['odom_angular_vel_std'] ** 2
        if source == 'wheel':
            cov[2, 2] += s2 * (l2 + r2) / L ** 2
            cov[0, 2] = cov[2, 0] = s2 * (r2 - l2) / (2.0 * L)
        cov[1, 1] = p['odom_linear_vel_std'] ** 2 if source == 'ground_velocity' else p['lateral_slip_std'] ** 2
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

    With **fix sources at known places** (``fix_beacons``: ``x, y, radius, std`` per source) a fix exists only
    within a source's radius, with that source's std (the smallest of the sources covering ``xy``); the zone
    and ``fix_std`` do not apply there (:meth:`available_at`, :meth:`std_at`).

    Args:
        params: values for ``FIX_PARAMS``; read at use time.

    Raises:
        ParameterError: a parameter is out of range, ``degraded_zone`` is not all zeros and has
            ``xmin >= xmax`` or ``ymin >= ymax``, or ``fix_beacons`` is not a whole number of ``x, y, radius,
            std`` quadruples with radius >= 0 and std > 0 where radius > 0.

    Example:
        GNSS with a degraded zone east of x = 50 m, and a beacon that gives fixes only within 10 m of itself:

        >>> import numpy as np
        >>> gnss = PositionFix({'fix_std': 0.5, 'degraded_zone': [50, 100, 0, 100], 'degraded_fix_std': 5.0,
        ...                     'degraded_ramp': 0.0})
        >>> gnss.std_at(np.array([10.0, 10.0])), gnss.std_at(np.array([60.0, 10.0]))     # m
        (0.5, 5.0)
        >>> beacon = PositionFix({'fix_beacons': [100.0, 100.0, 10.0, 0.5]})               # x, y, reach, std
        >>> beacon.available_at(np.array([105.0, 100.0])), beacon.available_at(np.array([150.0, 100.0]))
        (True, False)
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, FIX_PARAMS)
        zone = self.params['degraded_zone']
        if any(zone) and not (zone[0] < zone[1] and zone[2] < zone[3]):
            raise ParameterError(f'parameter \'degraded_zone\' = {list(zone)!r} is invalid: expected [xmin, xmax, '
                                 'ymin, ymax] metres with xmin < xmax and ymin < ymax, or all zeros for no zone')
        beacon_array(self.params['fix_beacons'])

    @property
    def beacons(self) -> np.ndarray:
        """``(k, 4)`` fix sources ``x, y, radius, std`` (m) with a positive radius; ``(0, 4)`` without sources."""
        return beacon_array(self.params['fix_beacons'])

    def available_at(self, xy: np.ndarray) -> bool:
        """Whether a fix due at ``xy`` (2,) metres can be had: everywhere without fix sources, else within the
        radius of one (the degraded zone's dropouts are drawn separately, :meth:`dropout_at`)."""
        b = self.beacons
        return len(b) == 0 or bool(np.any(np.hypot(b[:, 0] - xy[0], b[:, 1] - xy[1]) <= b[:, 2]))

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
        """Standard deviation (m) of each coordinate of a fix taken at ``xy`` (2,) metres (with fix sources: the
        smallest std of those covering ``xy``; ``fix_std`` where none does, though no fix is had there)."""
        p = self.params
        b = self.beacons
        if len(b):
            inside = np.hypot(b[:, 0] - xy[0], b[:, 1] - xy[1]) <= b[:, 2]
            return float(b[inside, 3].min()) if inside.any() else p['fix_std']
        s = self.zone_weight(xy)
        return p['fix_std'] if s == 0.0 else p['fix_std'] + s * (p['degraded_fix_std'] - p['fix_std'])

    def covariance_at(self, xy: np.ndarray) -> np.ndarray:
        """2x2 covariance (m²) published with a fix taken at ``xy`` (2,) metres (the outliers' excluded)."""
        return self.std_at(xy) ** 2 * np.eye(2)

    def dropout_at(self, xy: np.ndarray) -> float:
        """Probability (0-1) that a fix due at ``xy`` (2,) metres is lost in the degraded zone (0 with fix
        sources: there :meth:`available_at` decides)."""
        if len(self.beacons):
            return 0.0
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


def beacon_array(values) -> np.ndarray:
    """``fix_beacons`` (a flat list ``x, y, radius, std, ...``, m) as a ``(k, 4)`` array of the sources with a
    positive radius (``(0, 4)``: none).

    Raises:
        ParameterError: not a whole number of quadruples, a negative radius, or a std <= 0 with a radius > 0.
    """
    v = np.asarray(values, dtype=float).ravel()
    if v.size % 4:
        raise ParameterError(f"parameter 'fix_beacons' = {list(values)!r} is invalid: expected x, y, radius, std "
                             f'for each fix source (a multiple of 4 numbers, metres), got {v.size}')
    b = v.reshape(-1, 4)
    if np.any(b[:, 2] < 0) or np.any((b[:, 2] > 0) & (b[:, 3] <= 0)):
        raise ParameterError(f"parameter 'fix_beacons' = {list(values)!r} is invalid: each source needs a radius "
                             '>= 0 and, with a radius > 0, a std > 0 (m)')
    return b[b[:, 2] > 0]


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

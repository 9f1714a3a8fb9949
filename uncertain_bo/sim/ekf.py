"""Planar EKF (x, y, yaw) fusing wheel odometry and absolute position fixes, built on filterpy.

:class:`PlanarEKF` subclasses ``filterpy.kalman.ExtendedKalmanFilter`` and overrides the nonlinear state
propagation as filterpy intends (``predict_x``), setting ``F`` (Jacobian) and ``Q`` before each predict:

* **predict** from a wheel-odometry twist ``(v, w)`` over ``dt`` with the exact constant-twist motion
  model; ``Q = G (dt² Σ_u) Gᵀ`` where ``Σ_u`` is the odometry's (v, vy, w) covariance (per-step white
  velocity error, as in :class:`~uncertain_bo.sim.rover.DiffDriveRover`) and ``G`` the Jacobian of the
  motion w.r.t. the velocities;
* **update** from a 2-D position fix with its covariance ``R``, rejected when its Mahalanobis distance
  exceeds ``fix_gate_mahalanobis`` (outlier gate), unless ``fix_gate_max_rejections`` fixes in a row were
  rejected (then the filter is assumed lost and the fix is accepted);
* yaw is wrapped to ``[-pi, pi)`` after every step.

The filter output is a location distribution ``N(xy, P_xy)`` in the ``map`` frame: with absolute fixes
its covariance stays bounded; with odometry alone it grows without bound (dead reckoning).

**Odometry scale error** (``odom_scale_error_std`` > 0): the state gains a fourth component, the odometry's
constant scale-factor error ``e`` (prior ``N(0, odom_scale_error_std²)``, no process noise): every measured
speed is taken as ``(1 + e)`` times itself, so the position variance grows with the square of the distance
driven since the last fix, as a dead-reckoning drift quoted in per cent of distance travelled does
(:mod:`uncertain_bo.sim.drift`), and fixes taken while driving estimate ``e``. :attr:`PlanarEKF.covariance`,
:attr:`~PlanarEKF.pose` and everything published stay over ``(x, y, yaw)``.

**The revised past** (:meth:`PlanarEKF.keep_history`, :meth:`PlanarEKF.smoothed`): the filter can keep every step's
filtered and predicted state and Jacobian, and give the Rauch-Tung-Striebel smoothed trajectory over them
(Rauch, Tung & Striebel 1965; Särkkä, *Bayesian Filtering and Smoothing*, 2013, ch. 9-10, the extended RTS
smoother): after a fix that ends a long dead-reckoning leg, every past pose of the leg moves towards the truth
and its covariance shrinks, which is what a reading taken on the leg should be re-placed with.

**Fixed-lag smoothing on fixes** (``smooth_on_fix``): the filter keeps the last ``smoothing_lag`` seconds of steps
(memory and the cost of a smoothing bounded by the lag, not the mission) and :meth:`PlanarEKF.revised_past` gives the
smoothed window when a smoothing is due: at a fix fused after at least ``smoothing_min_gap`` s without one (a
dead-reckoning stretch ends), and once more when fixes stop for ``smoothing_min_gap`` s after fixes fused since the
last smoothing (a beacon's later fixes, which refine the heading and the scale error, revise the past again); never
between fixes in a stretch of them. The in-process mission hands it to the explorer
(:mod:`uncertain_bo.sim.smoothing`), the ``ekf`` node publishes it (``smoothed_path``).

:meth:`PlanarEKF.add_odometry` / :meth:`PlanarEKF.add_fix` handle message time stamps: a fix stamped after
the filter time waits until odometry has propagated the state up to it, so the result does not depend on
the order in which the two streams arrive.
"""
from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from filterpy.kalman import ExtendedKalmanFilter

from uncertain_bo.parameters.specs import Param
from uncertain_bo.sim.localisation import StampedFusion, velocity_noise
from uncertain_bo.sim.rover import _ensure, wrap_angle

__all__ = ['EKF_PARAMS', 'PlanarEKF', 'SmoothedTrajectory', 'velocity_noise']

EKF_PARAMS = [
    Param('initial_x', 100.0, 'initial estimate of x (m, map frame)', range=(-1e7, 1e7)),
    Param('initial_y', 100.0, 'initial estimate of y (m, map frame)', range=(-1e7, 1e7)),
    Param('initial_yaw', 0.0, 'initial estimate of the heading (rad, counter-clockwise from +x/east)',
          range=(-math.pi, math.pi)),
    Param('initial_xy_std', 1.0, 'standard deviation of the initial x and y estimates (m)',
          range=(1e-4, 1e4)),
    Param('initial_yaw_std', 0.1, 'standard deviation of the initial heading estimate (rad)',
          range=(1e-4, 3.2)),
    Param('process_noise_scale', 1.0, 'multiplies the odometry covariance used as process noise '
          '(dimensionless; > 1 makes the filter more conservative)', range=(0.0, 1e3)),
    Param('min_linear_vel_std', 0.01, 'floor on the odometry forward-speed standard deviation used as '
          'process noise, e.g. when a message reports zero covariance (m/s)', range=(0.0, 10.0)),
    Param('min_angular_vel_std', 0.01, 'floor on the odometry yaw-rate standard deviation used as process '
          'noise (rad/s)', range=(0.0, 10.0)),
    Param('fix_gate_mahalanobis', 4.0, 'reject a position fix whose Mahalanobis distance from the predicted '
          'position exceeds this (standard deviations, 2-D); 0 disables the gate', range=(0.0, 100.0)),
    Param('fix_gate_max_rejections', 5, 'after this many consecutive rejected fixes the next one is '
          'accepted anyway (the filter is then assumed lost); 0 = never override the gate',
          range=(0, 1000)),
    Param('min_fix_std', 0.01, 'floor on the standard deviation of a fix (m), used when a fix message '
          'reports a zero or tiny covariance', range=(1e-6, 100.0)),
    Param('max_dt', 1.0, 'odometry gaps longer than this are integrated in steps of at most this '
          'length (s)', range=(1e-3, 100.0)),
    Param('second_order_mean', True, 'shrink each predicted displacement by exp(-var(yaw)/2), the exact '
          'expected displacement under Gaussian heading uncertainty (removes the along-track bias of a '
          'first-order EKF on long straight drives)'),
    Param('odom_scale_error_std', 0.0, "prior std of the odometry's constant scale-factor error (dimensionless; "
          "sim_rover's odom_scale_error_std): > 0 adds it to the state, every measured speed is multiplied by (1 + "
          'the estimate) and fixes taken while driving estimate it; 0 = the three-state filter', range=(0.0, 0.3),
          read_only=True),
    Param('smooth_on_fix', False, 'revise the past on absolute fixes: keep the last smoothing_lag s of steps and '
          'smooth them (fixed-lag extended RTS) at a fix after smoothing_min_gap s without one, and when fixes stop '
          'for that long; the in-process mission re-places the stored readings at the smoothed poses, the ekf node '
          'publishes them as nav_msgs/Path on smoothed_path (docs/gnss_denied.md)', read_only=True),
    Param('smoothing_lag', 900.0, 'how far back smooth_on_fix revises (s): the steps kept and smoothed (10 a second at '
          'sim_rate 10, about 20 us each per smoothing)', range=(1.0, 1e5), read_only=True),
    Param('smoothing_min_gap', 5.0, 'smooth_on_fix: a fix after this long without one ends a dead-reckoning stretch, '
          'and fixes stopping for this long end a stretch of fixes; both smooth the past (s; 0 = at every fix)',
          range=(0.0, 1e5), read_only=True),
    Param('unobserved_variance', 1e6, 'variance reported for the unobserved z, roll and pitch in the 6x6 '
          'pose covariance (m², rad²); large but finite', range=(1.0, 1e12)),
]


@dataclass(frozen=True)
class SmoothedTrajectory:
    """The smoothed past of a :class:`PlanarEKF` (:meth:`PlanarEKF.smoothed`).

    Attributes:
        t: ``(n,)`` times of the filter's steps (s), the first its start.
        x: ``(n, d)`` smoothed states (``x, y, yaw`` m, m, rad, and the scale error when the filter has it).
        P: ``(n, d, d)`` their covariances.

    Example:
        Ten seconds of dead reckoning east at 1 m/s, then a fix: smoothing carries the fix back along the path:

        >>> import numpy as np
        >>> ekf = PlanarEKF({'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
        >>> ekf.keep_history()
        >>> ekf.add_odometry(10.0, v=1.0, w=0.0)
        []
        >>> ekf.add_fix(10.0, np.array([10.2, 0.1]), 0.25 * np.eye(2))
        True
        >>> past = ekf.smoothed()
        >>> past.t.shape, past.x.shape, past.P.shape                 # the start and one state a second (max_dt)
        ((11,), (11, 3), (11, 3, 3))
        >>> np.allclose(past.x[-1], ekf.pose)                    # the last one is the current estimate
        True
        >>> np.sqrt(past.P[[0, 5], 1, 1]).round(2).tolist()   # cross-track std (m) at 0 s, 5 s (filtered: 1.0, 1.12)
        [0.75, 0.5]
    """

    t: np.ndarray
    x: np.ndarray
    P: np.ndarray


class PlanarEKF(ExtendedKalmanFilter, StampedFusion):
    """EKF over the planar pose ``x = (x, y, yaw)`` (m, m, rad), map frame; with ``odom_scale_error_std`` > 0
    over ``(x, y, yaw, e)``, ``e`` the odometry's scale error (module docstring).

    Args:
        params: values for ``EKF_PARAMS`` (missing names take defaults; a live dict is read at use time).
        x0: initial pose (3,) overriding ``initial_x/y/yaw`` (the scale error starts at 0).
        P0: initial pose covariance (3, 3) overriding ``initial_xy_std/initial_yaw_std`` (the scale error's
            variance is ``odom_scale_error_std²``, uncorrelated).
        t0: filter time (s) of the initial state.

    Attributes:
        t: time (s) of the current estimate.
        n_fixes_accepted, n_fixes_rejected: counters of the outlier gate.
        last_fix_mahalanobis: Mahalanobis distance of the last fix considered (None before the first).

    Example:
        Dead reckoning east at 1 m/s for 10 s: the heading uncertainty (0.1 rad) spreads the position across track
        and shortens the expected displacement (second-order mean); a fix brings it back:

        >>> import numpy as np
        >>> ekf = PlanarEKF({'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0, 'initial_xy_std': 1.0})
        >>> ekf.add_odometry(10.0, v=1.0, w=0.0)              # fixes fused on the way: none
        []
        >>> ekf.pose.round(2).tolist(), np.sqrt(np.diag(ekf.cov_xy)).round(2).tolist()    # m, std along / across
        ([9.95, 0.0, 0.0], [1.0, 1.43])
        >>> ekf.add_fix(10.0, np.array([10.2, 0.1]), 0.5 ** 2 * np.eye(2))
        True
        >>> np.sqrt(np.diag(ekf.cov_xy)).round(2).tolist()     # the location distribution N(xy, cov_xy)
        [0.45, 0.47]
    """

    def __init__(self, params: Mapping[str, Any] | None = None, x0=None, P0=None, t0: float = 0.0):
        params = _ensure(params, EKF_PARAMS)
        scale_std = float(params['odom_scale_error_std'])
        n = 4 if scale_std > 0 else 3
        super().__init__(dim_x=n, dim_z=2)
        self.params = params
        p = self.params
        if x0 is None:
            x0 = (p['initial_x'], p['initial_y'], p['initial_yaw'])
        if P0 is None:
            P0 = np.diag([p['initial_xy_std'] ** 2, p['initial_xy_std'] ** 2, p['initial_yaw_std'] ** 2])
        self.x = np.zeros((n, 1))
        self.x[:3, 0] = np.asarray(x0, dtype=float).reshape(3)
        self.x[2, 0] = wrap_angle(self.x[2, 0])
        self.P = np.zeros((n, n))
        self.P[:3, :3] = np.asarray(P0, dtype=float).reshape(3, 3)
        if n == 4:
            self.P[3, 3] = scale_std ** 2
        self._H = np.eye(2, n)
        self._history: dict[str, deque] | None = None
        self._lag: float | None = None
        self.t = float(t0)
        self._u = (0.0, 0.0, 0.0, 0.0)  # (v, vy, w, dt) for predict_x
        self._init_fusion()
        self._last_fix_t: float | None = None   # filter time of the last fused fix
        self._smoothing_due = False             # a fix ended a dead-reckoning stretch
        self._fixes_unsmoothed = False          # fixes fused since the last smoothing
        if params['smooth_on_fix']:
            self.keep_history(lag=float(params['smoothing_lag']))

    # ------------------------------------------------------------------ state access
    @property
    def pose(self) -> np.ndarray:
        """Current estimate ``(x, y, yaw)`` (3,)."""
        return self.x[:3, 0].copy()

    @property
    def scale_error(self) -> float:
        """Estimated scale-factor error of the odometry (dimensionless; 0 for the three-state filter)."""
        return float(self.x[3, 0]) if len(self.x) > 3 else 0.0

    @property
    def xy(self) -> np.ndarray:
        """Current position estimate (2,), metres."""
        return self.x[:2, 0].copy()

    @property
    def cov_xy(self) -> np.ndarray:
        """Position covariance (2, 2), m²: the location distribution is ``N(xy, cov_xy)``."""
        return self.P[:2, :2].copy()

    @property
    def covariance(self) -> np.ndarray:
        """Covariance (3, 3) of ``(x, y, yaw)`` (m², m·rad, rad²), symmetrised."""
        P = self.P[:3, :3]
        return 0.5 * (P + P.T)

    # ------------------------------------------------------------------ filterpy hooks
    def predict_x(self, u=0):
        """Nonlinear propagation (filterpy hook): constant body twist over ``dt`` from ``self._u``."""
        v, vy, w, dt = self._u
        x, y, th = self.x[:3, 0]
        if abs(w * dt) < 1e-9:
            c, s = math.cos(th), math.sin(th)
            nx, ny = x + (v * c - vy * s) * dt, y + (v * s + vy * c) * dt
        else:
            th2 = th + w * dt
            nx = x + (v * (math.sin(th2) - math.sin(th)) + vy * (math.cos(th2) - math.cos(th))) / w
            ny = y + (v * (math.cos(th) - math.cos(th2)) + vy * (math.sin(th2) - math.sin(th))) / w
        # Second-order mean correction for heading uncertainty: for yaw ~ N(th, P_yaw),
        # E[cos(yaw)] = cos(th) exp(-P_yaw / 2) (same for sin), so the expected displacement shrinks.
        shrink = math.exp(-0.5 * max(float(self.P[2, 2]), 0.0)) if self.params['second_order_mean'] else 1.0
        nx, ny = x + shrink * (nx - x), y + shrink * (ny - y)
        self.x = np.array([[nx], [ny], [wrap_angle(th + w * dt)], *self.x[3:]])

    # ------------------------------------------------------------------ predict / update
    def _propagate(self, v, vy, w, h, n, S):
        for i in range(n):
            self._predict_once(v, vy, w, h, S)
            if self._history is not None:
                hist = self._history
                t = self.t + (i + 1) * h
                hist['t'].append(t)
                hist['F'].append(self.F.copy())
                hist['x_pred'].append(self.x[:, 0].copy())
                hist['P_pred'].append(self.P.copy())
                hist['x'].append(self.x[:, 0].copy())
                hist['P'].append(self.P.copy())
                while self._lag is not None and hist['t'][0] < t - self._lag:   # fixed lag: drop the oldest step
                    for v in hist.values():
                        v.popleft()

    def _predict_once(self, v, vy, w, dt, S):
        k = 1.0 + self.scale_error         # the measured speeds over the estimated scale error
        v, vy = k * v, k * vy
        th = float(self.x[2, 0])
        th2 = th + w * dt
        # Jacobians of the exact motion; for small w*dt use the straight-line limit (midpoint heading).
        if abs(w * dt) < 1e-6:
            thm = th + 0.5 * w * dt
            c, s = math.cos(thm), math.sin(thm)
            F = np.array([[1.0, 0.0, (-v * s - vy * c) * dt],
                          [0.0, 1.0, (v * c - vy * s) * dt],
                          [0.0, 0.0, 1.0]])
            G = np.array([[c * dt, -s * dt, 0.5 * dt * dt * (-v * s - vy * c)],
                          [s * dt, c * dt, 0.5 * dt * dt * (v * c - vy * s)],
                          [0.0, 0.0, dt]])
        else:
            s1, c1, s2, c2 = math.sin(th), math.cos(th), math.sin(th2), math.cos(th2)
            dx = (v * (s2 - s1) + vy * (c2 - c1)) / w
            dy = (v * (c1 - c2) + vy * (s2 - s1)) / w
            F = np.array([[1.0, 0.0, (v * (c2 - c1) - vy * (s2 - s1)) / w],
                          [0.0, 1.0, (v * (s2 - s1) + vy * (c2 - c1)) / w],
                          [0.0, 0.0, 1.0]])
            # d(dx)/dw = (dt*(v c2 - vy s2) - dx)/w ; d(dy)/dw = (dt*(v s2 + vy c2) - dy)/w
            G = np.array([[(s2 - s1) / w, (c2 - c1) / w, (dt * (v * c2 - vy * s2) - dx) / w],
                          [(c1 - c2) / w, (s2 - s1) / w, (dt * (v * s2 + vy * c2) - dy) / w],
                          [0.0, 0.0, dt]])
        G[:, :2] *= k                      # the noise is on the measured speeds
        if len(self.x) > 3:                # d(position)/de: the step's displacement at the measured speeds
            Fe = np.eye(4)
            Fe[:3, :3] = F
            Fe[:2, 3] = _displacement(th, v, vy, w, dt) / k
            F = Fe
            Ge = np.zeros((4, 3))
            Ge[:3] = G
            G = Ge
        self.F = F
        self.Q = G @ S @ G.T
        self._u = (v, vy, w, dt)
        self.predict()
        self.P = 0.5 * (self.P + self.P.T)

    def _fuse_fix(self, z, R, L, lost):
        self.update(z.reshape(2, 1), HJacobian=lambda x: self._H, Hx=_hx, R=R)
        self.x[2, 0] = wrap_angle(self.x[2, 0])
        self.P = 0.5 * (self.P + self.P.T)
        if self._history is not None:       # the filtered state at this step's time is now the updated one
            self._history['x'][-1] = self.x[:, 0].copy()
            self._history['P'][-1] = self.P.copy()
        gap = math.inf if self._last_fix_t is None else self.t - self._last_fix_t
        self._last_fix_t = self.t
        if gap >= float(self.params['smoothing_min_gap']):
            self._smoothing_due = True
        else:
            self._fixes_unsmoothed = True

    # ------------------------------------------------------------------ the revised past
    def keep_history(self, enabled: bool = True, lag: float | None = None) -> None:
        """Start (or stop, dropping it) keeping every step's filtered and predicted state from now on, for
        :meth:`smoothed`: all of them (``lag`` None), or those of the last ``lag`` seconds (a fixed lag). Memory:
        about 0.5 kB a step (36,000 steps, an hour at 10 Hz: 18 MB)."""
        self._history = None
        self._lag = lag
        if enabled:
            self._history = {'t': deque([self.t]), 'x': deque([self.x[:, 0].copy()]), 'P': deque([self.P.copy()]),
                             'F': deque([None]), 'x_pred': deque([None]), 'P_pred': deque([None])}

    def smoothed(self, since: float | None = None) -> SmoothedTrajectory:
        """The Rauch-Tung-Striebel smoothed states of the steps kept (:meth:`keep_history`), given every odometry
        message and fix fused so far (the last one equals the current estimate); with ``since`` (s) only the steps from
        the last one at or before it on (the backward pass stops there).

        Raises:
            RuntimeError: no history is kept.
        """
        hist = self._history
        if hist is None:
            raise RuntimeError('no history: call keep_history() before the steps to be smoothed')
        t = np.fromiter(hist['t'], float, len(hist['t']))
        i0 = 0 if since is None else max(0, int(np.searchsorted(t, since, side='right')) - 1)
        tail = {k: list(itertools.islice(v, i0, None)) for k, v in hist.items()}
        xs, Ps = np.array(tail['x']), np.array(tail['P'])
        for k in range(len(xs) - 2, -1, -1):
            F, P_pred = tail['F'][k + 1], tail['P_pred'][k + 1]
            C = np.linalg.solve(P_pred, F @ Ps[k]).T        # P_k F^T P_pred^-1 (both covariances symmetric)
            d = xs[k + 1] - tail['x_pred'][k + 1]
            d[2] = wrap_angle(d[2])
            xs[k] = xs[k] + C @ d
            xs[k, 2] = wrap_angle(xs[k, 2])
            Ps[k] = Ps[k] + C @ (Ps[k + 1] - P_pred) @ C.T
            Ps[k] = 0.5 * (Ps[k] + Ps[k].T)
        return SmoothedTrajectory(t[i0:], xs, Ps)

    def smoothing_due(self) -> bool:
        """With ``smooth_on_fix``: whether :meth:`revised_past` would smooth now (module docstring)."""
        if self._history is None or not self.params['smooth_on_fix']:
            return False
        ended = (self._fixes_unsmoothed and self._last_fix_t is not None
                 and self.t - self._last_fix_t >= float(self.params['smoothing_min_gap']))
        return self._smoothing_due or ended

    def revised_past(self, since: float | None = None) -> SmoothedTrajectory | None:
        """With ``smooth_on_fix``: the smoothed window (:meth:`smoothed` from ``since`` on, s) when a smoothing is
        due (:meth:`smoothing_due`; call after fusing each step), else None. Without it: None."""
        if not self.smoothing_due():
            return None
        self._smoothing_due = self._fixes_unsmoothed = False
        return self.smoothed(since)

    def inflate(self, var_xy: float, var_yaw: float) -> None:
        """Add ``var_xy`` (m²) to the x and y variances and ``var_yaw`` (rad²) to the heading variance (e.g. over
        an odometry gap that was not integrated). A kept history starts again here: no smoothing through the gap."""
        self.P[0, 0] += var_xy
        self.P[1, 1] += var_xy
        self.P[2, 2] += var_yaw
        if self._history is not None:
            self.keep_history(lag=self._lag)


def _displacement(th: float, v: float, vy: float, w: float, dt: float) -> np.ndarray:
    """``(dx, dy)`` (m) of holding the body twist ``(v, vy, w)`` for ``dt`` s from heading ``th`` (exact arc)."""
    if abs(w * dt) < 1e-9:
        c, s = math.cos(th), math.sin(th)
        return np.array([(v * c - vy * s) * dt, (v * s + vy * c) * dt])
    th2 = th + w * dt
    return np.array([(v * (math.sin(th2) - math.sin(th)) + vy * (math.cos(th2) - math.cos(th))) / w,
                     (v * (math.cos(th) - math.cos(th2)) + vy * (math.sin(th2) - math.sin(th))) / w])


def _hx(x):
    return x[:2]

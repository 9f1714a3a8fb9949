r"""Particle-filter localiser of the simulated rover: a particle cloud over the planar pose.

:class:`ParticleFilter` is the sequential Monte Carlo alternative to :class:`~uncertain_bo.sim.ekf.PlanarEKF`
(same inputs, same time-stamp handling, same parameter names where they mean the same thing):

* **predict** each particle with the same noisy wheel odometry the EKF uses: the measured body twist
  ``(v, vy, w)`` plus a velocity error drawn per particle from ``N(0, S)``, ``S`` the odometry's
  covariance scaled and floored exactly as the EKF's process noise
  (:func:`~uncertain_bo.sim.localisation.velocity_noise`), held over the step with the exact constant-twist
  motion (sub-steps of at most ``max_dt``). Unlike the EKF no linearisation is involved: the cloud keeps the
  banana shape that heading uncertainty gives the position;
* **update** on an absolute position fix ``z ~ N(xy, R)``: log-weights += :math:`-\tfrac12 (z - x_i)^\top
  R^{-1} (z - x_i)`, normalised by log-sum-exp (no underflow however far the fix is). The same outlier
  gate as the EKF is applied to the fix's Mahalanobis distance from the moment-matched prediction; when
  ``fix_gate_max_rejections`` fixes in a row were rejected the filter is assumed lost and the cloud is
  re-initialised around the next fix (``N(z, R)``, headings kept), since re-weighting a cloud that no longer
  covers the fix would leave a single particle;
* **resample** with filterpy's systematic resampling (``filterpy.monte_carlo.systematic_resample``) when
  the effective sample size :math:`N_\mathrm{eff} = 1 / \sum_i w_i^2` drops below
  ``resample_threshold`` x ``particles``; the weights are then uniform again.

With ``odom_scale_error_std`` > 0 every particle also carries its own value of the odometry's constant
scale-factor error (drawn from ``N(0, odom_scale_error_std²)`` at the start, kept through resampling) and moves
with the measured speeds times ``1 +`` it, as the EKF's fourth state does.

The location distribution it reports is the particle cloud itself (:attr:`ParticleFilter.particles`,
:attr:`ParticleFilter.weights`), and its moment-matched summary :math:`\mathcal N(\bar{\mathbf x},
\Sigma)` (:attr:`~ParticleFilter.xy`, :attr:`~ParticleFilter.cov_xy`; circular mean and wrapped spread for
the heading).

Determinism: all Monte Carlo draws come from a ``numpy.random.Generator`` seeded by ``seed``. filterpy's
resampling functions draw their random offset from NumPy's *global* legacy random state, so the call is
made with that state temporarily seeded from the filter's own generator and restored afterwards: same seed
and inputs give the same cloud, and nobody else's global random stream is disturbed (single-threaded use
of the global state is assumed during that call). filterpy 2.0's ``systematic_resample`` can index past
the end when the cumulative weights round to just below 1 (rlabbe/filterpy PR #186, unmerged); the weights
are passed with their last cumulative sum at or above 1 to rule that out.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Mapping

import numpy as np
from filterpy.monte_carlo import systematic_resample

from uncertain_bo.parameters.specs import Param
from uncertain_bo.sim.ekf import EKF_PARAMS
from uncertain_bo.sim.localisation import StampedFusion
from uncertain_bo.sim.rover import _ensure, wrap_angle

__all__ = ['PF_PARAMS', 'ParticleFilter', 'effective_sample_size']

_SHARED = ('initial_x', 'initial_y', 'initial_yaw', 'initial_xy_std', 'initial_yaw_std', 'process_noise_scale',
           'min_linear_vel_std', 'min_angular_vel_std', 'fix_gate_mahalanobis', 'fix_gate_max_rejections',
           'min_fix_std', 'max_dt', 'odom_scale_error_std', 'unobserved_variance')

#: parameters of the particle filter: the EKF's (same meaning) plus the Monte Carlo ones
PF_PARAMS = [p for p in EKF_PARAMS if p.name in _SHARED] + [
    Param('particles', 500, 'number of particles N (more: smoother cloud, linear cost per step)',
          range=(10, 1000000), read_only=True),
    Param('resample_threshold', 0.5, 'resample (systematic) when the effective sample size 1/sum(w²) drops '
          'below this fraction of the number of particles (dimensionless, 0-1; 1 = after every fix)',
          range=(0.0, 1.0)),
    Param('seed', 0, 'seed of the Monte Carlo draws (initial cloud, odometry noise, resampling)',
          range=(0, 2 ** 31 - 1), read_only=True),
]


def effective_sample_size(weights: np.ndarray) -> float:
    """Effective sample size :math:`1 / \\sum_i w_i^2` of normalised weights ``(N,)`` (1 to N)."""
    w = np.asarray(weights, dtype=float)
    return float(1.0 / np.dot(w, w))


@contextlib.contextmanager
def _global_numpy_seed(rng: np.random.Generator):
    """Seed NumPy's legacy global random state from ``rng`` for the duration of the block, then restore it."""
    state = np.random.get_state()
    np.random.seed(int(rng.integers(0, 2 ** 32 - 1)))
    try:
        yield
    finally:
        np.random.set_state(state)


class ParticleFilter(StampedFusion):
    """Particle filter over the planar pose ``(x, y, yaw)`` (m, m, rad), map frame.

    Args:
        params: values for :data:`PF_PARAMS` (missing names take defaults; a live dict is read at use time).
        x0: initial pose (3,) overriding ``initial_x/y/yaw``.
        P0: initial covariance (3, 3) overriding ``initial_xy_std/initial_yaw_std``; the initial cloud is
            drawn from ``N(x0, P0)``.
        t0: filter time (s) of the initial cloud.

    Attributes:
        t: time (s) of the current estimate.
        n_fixes_accepted, n_fixes_rejected, n_resamples, n_reinitialisations: counters.
        last_fix_mahalanobis: Mahalanobis distance of the last fix considered (None before the first).

    Raises:
        ParameterError: an invalid parameter value.

    Example:
        The same drive as :class:`~uncertain_bo.sim.ekf.PlanarEKF`'s example with a particle cloud, whose
        moment-matched Gaussian is the location distribution:

        >>> import numpy as np
        >>> pf = ParticleFilter({'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0, 'seed': 0})
        >>> pf.particles.shape, round(pf.effective_sample_size)
        ((500, 3), 500)
        >>> pf.add_odometry(10.0, v=1.0, w=0.0)
        []
        >>> pf.add_fix(10.0, np.array([10.2, 0.1]), 0.25 * np.eye(2))
        True
        >>> pf.xy.round(1).tolist(), bool(np.sqrt(pf.cov_xy[1, 1]) < 0.6)
        ([10.2, 0.1], True)
    """

    def __init__(self, params: Mapping[str, Any] | None = None, x0=None, P0=None, t0: float = 0.0):
        self.params = _ensure(params, PF_PARAMS)
        p = self.params
        self.rng = np.random.default_rng(np.random.SeedSequence(int(p['seed'])))
        if x0 is None:
            x0 = (p['initial_x'], p['initial_y'], p['initial_yaw'])
        if P0 is None:
            P0 = np.diag([p['initial_xy_std'] ** 2, p['initial_xy_std'] ** 2, p['initial_yaw_std'] ** 2])
        n = int(p['particles'])
        self._x = self.rng.multivariate_normal(np.asarray(x0, dtype=float).reshape(3),
                                               np.asarray(P0, dtype=float).reshape(3, 3), size=n,
                                               method='eigh')
        self._x[:, 2] = wrap_angle(self._x[:, 2])
        scale_std = float(p['odom_scale_error_std'])
        self._scale = self.rng.normal(0.0, scale_std, n) if scale_std > 0 else None
        self._w = np.full(n, 1.0 / n)
        self.t = float(t0)
        self._init_fusion()
        self.n_resamples = 0
        self.n_reinitialisations = 0

    # ------------------------------------------------------------------ the cloud
    @property
    def particles(self) -> np.ndarray:
        """``(N, 3)`` particle poses ``(x, y, yaw)`` (copy), m and rad."""
        return self._x.copy()

    @property
    def weights(self) -> np.ndarray:
        """``(N,)`` normalised particle weights (copy); they sum to 1."""
        return self._w.copy()

    @property
    def effective_sample_size(self) -> float:
        """:math:`1/\\sum_i w_i^2`, between 1 (one particle carries all weight) and N (uniform weights)."""
        return effective_sample_size(self._w)

    # ------------------------------------------------------------------ moment-matched summary
    @property
    def xy(self) -> np.ndarray:
        """Weighted mean position (2,), m."""
        return self._w @ self._x[:, :2]

    @property
    def yaw(self) -> float:
        """Circular weighted mean heading, rad in ``[-pi, pi]``."""
        return math.atan2(float(self._w @ np.sin(self._x[:, 2])), float(self._w @ np.cos(self._x[:, 2])))

    @property
    def pose(self) -> np.ndarray:
        """Moment-matched pose ``(x, y, yaw)`` (3,)."""
        return np.array([*self.xy, self.yaw])

    @property
    def covariance(self) -> np.ndarray:
        """Weighted covariance (3, 3) of ``(x, y, yaw)``, headings as wrapped deviations from the circular
        mean (m², m·rad, rad²)."""
        d = np.empty_like(self._x)
        d[:, :2] = self._x[:, :2] - self.xy
        d[:, 2] = wrap_angle(self._x[:, 2] - self.yaw)
        c = (self._w[:, None] * d).T @ d
        return 0.5 * (c + c.T)

    @property
    def cov_xy(self) -> np.ndarray:
        """Position covariance (2, 2), m²: the moment-matched location distribution is ``N(xy, cov_xy)``."""
        return self.covariance[:2, :2]

    # ------------------------------------------------------------------ predict / update
    def _propagate(self, v, vy, w, h, n, S):
        root = _psd_root(S)
        u0 = np.array([v, vy, w])
        for _ in range(n):      # every particle moves with its own velocity error (and scale error)
            u = u0 + self.rng.standard_normal((len(self._x), 3)) @ root.T
            if self._scale is not None:
                u[:, :2] *= 1.0 + self._scale[:, None]
            self._x = _move(self._x, u[:, 0], u[:, 1], u[:, 2], h)

    def _fuse_fix(self, z, R, L, lost):
        p = self.params
        if lost:
            # lost: the cloud no longer covers the fix; start again around it (headings kept)
            self._x[:, :2] = z + self.rng.standard_normal((len(self._x), 2)) @ L.T
            self._w = np.full(len(self._x), 1.0 / len(self._x))
            self.n_reinitialisations += 1
            return
        r = np.linalg.solve(L, (z - self._x[:, :2]).T)           # whitened residuals (2, N)
        logw = np.log(np.maximum(self._w, np.finfo(float).tiny)) - 0.5 * np.einsum('ij,ij->j', r, r)
        logw -= logw.max()
        w = np.exp(logw)
        self._w = w / w.sum()
        if self.effective_sample_size < p['resample_threshold'] * len(self._w):
            self.resample()

    def resample(self) -> None:
        """Systematic resampling (filterpy) to uniform weights; particles are copied, none are perturbed."""
        w = self._w / self._w.sum()
        total = np.cumsum(w)[-1]
        if total < 1.0:             # filterpy PR #186: cumulative sum must reach 1 or the index can overrun
            w[-1] += 2.0 * (1.0 - total)
        with _global_numpy_seed(self.rng):
            idx = systematic_resample(w)
        self._x = self._x[idx]
        if self._scale is not None:
            self._scale = self._scale[idx]
        self._w = np.full(len(self._x), 1.0 / len(self._x))
        self.n_resamples += 1

    def inflate(self, var_xy: float, var_yaw: float) -> None:
        """Spread every particle by ``N(0, var_xy)`` in x and y (m²) and ``N(0, var_yaw)`` in heading (rad²),
        e.g. over an odometry gap that was not integrated."""
        n = len(self._x)
        self._x[:, :2] += math.sqrt(max(var_xy, 0.0)) * self.rng.standard_normal((n, 2))
        self._x[:, 2] = wrap_angle(self._x[:, 2] + math.sqrt(max(var_yaw, 0.0)) * self.rng.standard_normal(n))


def _psd_root(S: np.ndarray) -> np.ndarray:
    """``L`` with ``L Lᵀ = S`` for a symmetric PSD (possibly singular) ``S``."""
    evals, evecs = np.linalg.eigh(0.5 * (S + S.T))
    return evecs * np.sqrt(np.clip(evals, 0.0, None))


def _move(x: np.ndarray, v: np.ndarray, vy: np.ndarray, w: np.ndarray, dt: float) -> np.ndarray:
    """Poses ``(N, 3)`` after holding body twists ``(v, vy, w)`` (each ``(N,)``) for ``dt`` s (exact arcs;
    the straight-line limit for ``|w dt| < 1e-9``), as :meth:`PlanarEKF.predict_x
    <uncertain_bo.sim.ekf.PlanarEKF.predict_x>` without its second-order mean correction (a cloud
    represents the heading spread itself)."""
    th = x[:, 2]
    th2 = th + w * dt
    s1, c1 = np.sin(th), np.cos(th)
    straight = np.abs(w * dt) < 1e-9
    w_safe = np.where(straight, 1.0, w)
    s2, c2 = np.sin(th2), np.cos(th2)
    dx_arc = (v * (s2 - s1) + vy * (c2 - c1)) / w_safe
    dy_arc = (v * (c1 - c2) + vy * (s2 - s1)) / w_safe
    dx = np.where(straight, (v * c1 - vy * s1) * dt, dx_arc)
    dy = np.where(straight, (v * s1 + vy * c1) * dt, dy_arc)
    out = np.empty_like(x)
    out[:, 0] = x[:, 0] + dx
    out[:, 1] = x[:, 1] + dy
    out[:, 2] = wrap_angle(th2)
    return out

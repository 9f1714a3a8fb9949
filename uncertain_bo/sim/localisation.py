"""What the simulation's localisation filters share: fusing two time-stamped message streams.

:class:`StampedFusion` is what :class:`~uncertain_bo.sim.ekf.PlanarEKF` and
:class:`~uncertain_bo.sim.particle_filter.ParticleFilter` have in common:

- time stamps: wheel odometry propagates the filter to each odometry stamp, and a position fix stamped
  after the filter time waits until odometry has propagated the state up to it, so the estimate does not
  depend on the order in which the two streams arrive;
- input checks, process noise (:func:`velocity_noise`) and sub-stepping of an odometry interval;
- the fix's noise floor and Mahalanobis outlier gate (with its give-up-after-N-rejections override);
- the 6x6 ROS pose covariance.

A filter using it provides ``params`` (EKF parameter values), ``t`` (filter time, s), ``xy``, ``cov_xy``,
``covariance`` (3x3 over x, y, yaw), ``_propagate(v, vy, w, h, n, S)`` (``n`` steps of ``h`` seconds) and
``_fuse_fix(z, R, L, lost)``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ['StampedFusion', 'velocity_noise']


def velocity_noise(params: Mapping[str, Any], vel_cov: np.ndarray | None) -> np.ndarray:
    """Process noise over the held body twist ``(v, vy, w)``, (3, 3) in (m/s)², (rad/s)²: the odometry's
    covariance (``(2, 2)`` over (v, w) or ``(3, 3)`` over (v, vy, w); None = zero) times
    ``process_noise_scale``, its v and w variances floored by ``min_linear_vel_std²`` and
    ``min_angular_vel_std²`` (``params``: :data:`~uncertain_bo.sim.ekf.EKF_PARAMS` values). The EKF and the
    particle filter use it alike.

    Raises:
        ValueError: a non-finite covariance or one of another shape.
    """
    S = np.zeros((3, 3))
    if vel_cov is not None:
        c = np.asarray(vel_cov, dtype=float)
        if not np.all(np.isfinite(c)):
            raise ValueError('odometry covariance must be finite')
        if c.shape == (2, 2):
            S[np.ix_([0, 2], [0, 2])] = c
        elif c.shape == (3, 3):
            S = c.copy()
        else:
            raise ValueError(f'vel_cov must be (2, 2) over (v, w) or (3, 3) over (v, vy, w), '
                             f'got {c.shape}')
    S *= params['process_noise_scale']
    S[0, 0] = max(S[0, 0], params['min_linear_vel_std'] ** 2)
    S[2, 2] = max(S[2, 2], params['min_angular_vel_std'] ** 2)
    return S


class StampedFusion:
    """Mixin: :meth:`add_odometry` / :meth:`add_fix` on message stamps (see the module docstring).

    Example:
        A fix stamped ahead of the filter is held until the odometry reaches its stamp, then fused at its own time
        (here by :class:`~uncertain_bo.sim.ekf.PlanarEKF`):

        >>> import numpy as np
        >>> from uncertain_bo.sim.ekf import PlanarEKF
        >>> ekf = PlanarEKF({'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
        >>> ekf.add_fix(5.0, np.array([5.0, 0.0]), 0.25 * np.eye(2)) is None      # held
        True
        >>> ekf.add_odometry(10.0, v=1.0, w=0.0)                                    # fused at 5 s on the way
        [True]
        >>> ekf.t, ekf.n_fixes_accepted
        (10.0, 1)
    """

    t: float
    _pending: list[tuple[float, np.ndarray, np.ndarray]]

    def _init_fusion(self) -> None:
        """No held fixes, gate counters at zero (call from the filter's ``__init__``)."""
        self._pending: list[tuple[float, np.ndarray, np.ndarray]] = []
        self._consecutive_rejections = 0
        self.n_fixes_accepted = 0
        self.n_fixes_rejected = 0
        self.last_fix_mahalanobis: float | None = None

    def add_odometry(self, stamp: float, v: float, w: float, vel_cov: np.ndarray | None = None,
                     vy: float = 0.0) -> list[bool]:
        """Propagate to ``stamp`` (s) with an odometry twist, fusing pending fixes stamped up to it.

        The twist is taken as held since the filter time (a message covering the last interval). Fixes
        stamped inside the interval are fused at their own time. A stamp at or before the filter time
        (duplicate or reordered message) propagates nothing.

        Returns:
            For each pending fix fused by this call, whether the gate accepted it.
        """
        results = []
        self._pending.sort(key=lambda f: f[0])
        while self._pending and self._pending[0][0] <= stamp:
            t_fix, z, R = self._pending.pop(0)
            if t_fix > self.t:
                self.predict_odometry(v, w, t_fix - self.t, vel_cov, vy)
            results.append(self.update_fix(z, R))
        if stamp > self.t:
            self.predict_odometry(v, w, stamp - self.t, vel_cov, vy)
        return results

    def add_fix(self, stamp: float, xy: np.ndarray, cov: np.ndarray) -> bool | None:
        """Fuse a fix stamped ``stamp`` (s) now if it is not newer than the filter time, else hold it.

        Returns:
            Gate result if fused now, None if held until odometry reaches ``stamp``.
        """
        if stamp <= self.t + 1e-9:
            return self.update_fix(xy, cov)
        self._pending.append((float(stamp), np.asarray(xy, dtype=float), np.asarray(cov, dtype=float)))
        return None

    def predict_odometry(self, v: float, w: float, dt: float, vel_cov: np.ndarray | None = None,
                         vy: float = 0.0) -> None:
        """Propagate with a measured body twist held for ``dt`` seconds, in steps of at most ``max_dt``.

        Args:
            v, w: measured forward speed (m/s) and yaw rate (rad/s).
            dt: duration (s, >= 0); zero does nothing.
            vel_cov: covariance of the measured (v, vy, w), (3, 3), or of (v, w), (2, 2); None uses the
                ``min_*_std`` floors (see :func:`velocity_noise`).
            vy: measured sideways speed (m/s), 0 for a diff-drive rover.

        Raises:
            ValueError: negative or non-finite ``dt``, non-finite twist or covariance.
        """
        if not (math.isfinite(dt) and dt >= 0):
            raise ValueError(f'dt must be a finite non-negative number of seconds, got {dt!r}')
        if not all(math.isfinite(a) for a in (v, w, vy)):
            raise ValueError(f'odometry twist must be finite, got v={v!r}, vy={vy!r}, w={w!r}')
        if dt == 0.0:
            return
        S = velocity_noise(self.params, vel_cov)
        n = max(1, int(math.ceil(dt / self.params['max_dt'] - 1e-9)))
        self._propagate(v, vy, w, dt / n, n, S)
        self.t += dt

    def update_fix(self, xy: np.ndarray, cov: np.ndarray) -> bool:
        """Fuse an absolute position fix at the current filter time, unless the outlier gate rejects it.

        The gate compares the Mahalanobis distance of the fix from the estimate (covariance ``cov_xy + R``)
        with ``fix_gate_mahalanobis`` (0 = off); after ``fix_gate_max_rejections`` consecutive rejections
        the next fix is fused anyway (the filter, not the fixes, is then presumed lost).

        Args:
            xy: measured position (2,), metres, map frame.
            cov: its covariance (2, 2), m² (floored at ``min_fix_std²`` on the diagonal).

        Returns:
            True if the fix was fused, False if the outlier gate rejected it.

        Raises:
            ValueError: non-finite fix or covariance, or a covariance that is not positive definite after
                the floor.
        """
        z = np.asarray(xy, dtype=float).reshape(2)
        R = np.array(cov, dtype=float).reshape(2, 2)
        if not (np.all(np.isfinite(z)) and np.all(np.isfinite(R))):
            raise ValueError('position fix and its covariance must be finite')
        p = self.params
        R = 0.5 * (R + R.T)
        floor = p['min_fix_std'] ** 2
        R[0, 0], R[1, 1] = max(R[0, 0], floor), max(R[1, 1], floor)
        try:
            L = np.linalg.cholesky(R)
        except np.linalg.LinAlgError:
            raise ValueError(f'position fix covariance is not positive definite: {R.tolist()}') from None
        innov = z - self.xy
        d = float(math.sqrt(max(0.0, float(innov @ np.linalg.solve(self.cov_xy + R, innov)))))
        self.last_fix_mahalanobis = d
        gate = p['fix_gate_mahalanobis']
        override = (p['fix_gate_max_rejections'] > 0
                    and self._consecutive_rejections >= p['fix_gate_max_rejections'])
        outlier = gate > 0 and d > gate
        if outlier and not override:
            self._consecutive_rejections += 1
            self.n_fixes_rejected += 1
            return False
        self._consecutive_rejections = 0
        self.n_fixes_accepted += 1
        self._fuse_fix(z, R, L, lost=outlier)
        return True

    def pose_covariance_6x6(self) -> np.ndarray:
        """6x6 pose covariance over (x, y, z, roll, pitch, yaw) as in ROS messages (row-major when flattened).

        x, y, yaw blocks come from the filter; z, roll and pitch are not estimated and get the large but
        finite ``unobserved_variance`` (never 1e308-style sentinels, which turn into inf/NaN downstream).
        """
        c = np.zeros((6, 6))
        idx = [0, 1, 5]
        c[np.ix_(idx, idx)] = self.covariance
        v = self.params['unobserved_variance']
        c[2, 2] = c[3, 3] = c[4, 4] = v
        return c

    def _propagate(self, v: float, vy: float, w: float, h: float, n: int,
                   S: np.ndarray) -> None:  # pragma: no cover - provided by the filter
        raise NotImplementedError

    def _fuse_fix(self, z: np.ndarray, R: np.ndarray, L: np.ndarray,
                  lost: bool) -> None:  # pragma: no cover - provided by the filter
        raise NotImplementedError

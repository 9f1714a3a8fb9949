"""What the simulation's localisation filters share: fusing two time-stamped message streams.

:class:`StampedFusion` is the time-stamp handling of :class:`~uncertain_bo.sim.ekf.PlanarEKF` and
:class:`~uncertain_bo.sim.particle_filter.ParticleFilter`: wheel odometry propagates the filter to each
odometry stamp, and a position fix stamped after the filter time waits until odometry has propagated the
state up to it, so the estimate does not depend on the order in which the two streams arrive. A filter
using it provides ``t`` (filter time, s), ``predict_odometry(v, w, dt, vel_cov, vy)`` and
``update_fix(xy, cov) -> bool``.
"""
from __future__ import annotations

import numpy as np

__all__ = ['StampedFusion']


class StampedFusion:
    """Mixin: :meth:`add_odometry` / :meth:`add_fix` on message stamps (see the module docstring)."""

    t: float
    _pending: list[tuple[float, np.ndarray, np.ndarray]]

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
                         vy: float = 0.0) -> None:  # pragma: no cover - provided by the filter
        raise NotImplementedError

    def update_fix(self, xy: np.ndarray, cov: np.ndarray) -> bool:  # pragma: no cover - provided by the filter
        raise NotImplementedError

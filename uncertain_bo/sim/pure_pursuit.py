"""Pure-pursuit path following for a differential-drive rover (Nav2 Regulated Pure Pursuit names).

:class:`PurePursuit` turns a pose estimate and a polyline plan into a velocity command:

1. if the estimated position is within ``xy_goal_tolerance`` of the plan's last point: stop, arrived;
2. find the closest point of the plan to the rover and the **carrot** ``lookahead_dist`` further along
   the plan (the goal itself when closer);
3. if the heading error to the carrot exceeds ``rotate_to_heading_min_angle``: rotate in place at
   ``rotate_to_heading_angular_vel``;
4. otherwise drive at ``desired_linear_vel`` (reduced linearly within ``approach_velocity_scaling_dist``
   of the goal, not below ``min_approach_linear_velocity``) on the arc through the carrot, curvature
   ``2 sin(α) / l`` (α heading error, l carrot distance), limiting the yaw rate to ``max_angular_vel`` by
   slowing down, not by leaving the arc.

The law is stateless: the same (pose, plan) always gives the same command.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from uncertain_bo.parameters.specs import Param
from uncertain_bo.sim.rover import _ensure, wrap_angle

__all__ = ['PURE_PURSUIT_PARAMS', 'PurePursuit']

PURE_PURSUIT_PARAMS = [
    Param('lookahead_dist', 2.0, 'distance along the plan from the closest point to the carrot the rover '
          'steers to (m); larger is smoother, smaller tracks tighter', range=(0.05, 100.0)),
    Param('desired_linear_vel', 1.5, 'cruise forward speed (m/s)', range=(0.01, 20.0)),
    Param('max_angular_vel', 1.0, 'largest commanded yaw rate while driving (rad/s)', range=(0.01, 20.0)),
    Param('rotate_to_heading_angular_vel', 1.0, 'yaw rate of an in-place rotation (rad/s)',
          range=(0.01, 20.0)),
    Param('rotate_to_heading_min_angle', 0.785, 'heading error to the carrot above which the rover rotates '
          'in place instead of driving (rad)', range=(0.0, math.pi)),
    Param('xy_goal_tolerance', 0.25, 'the goal is reached when the estimated position is this close to it '
          '(m)', range=(0.001, 100.0)),
    Param('approach_velocity_scaling_dist', 1.0, 'within this distance of the goal the speed is scaled '
          'down linearly with the remaining distance (m); 0 disables', range=(0.0, 100.0)),
    Param('min_approach_linear_velocity', 0.05, 'lowest forward speed while approaching the goal (m/s)',
          range=(0.0, 20.0)),
]


class PurePursuit:
    """Pure-pursuit control law.

    Args:
        params: values for ``PURE_PURSUIT_PARAMS`` (missing names take defaults; a live dict is read at
            every call).

    Raises:
        ParameterError: a parameter is out of range.

    Example:
        Heading east at the origin: a goal 10 m ahead is driven at cruise speed, one to the north is first turned
        to (rotate to heading), and one within ``xy_goal_tolerance`` (0.25 m) is reached:

        >>> law = PurePursuit()
        >>> law.command((0.0, 0.0, 0.0), [[10.0, 0.0]])         # (v m/s, w rad/s, arrived)
        (1.5, 0.0, False)
        >>> law.command((0.0, 0.0, 0.0), [[0.0, 10.0]])
        (0.0, 1.0, False)
        >>> law.command((9.9, 0.0, 0.0), [[10.0, 0.0]])
        (0.0, 0.0, True)
    """

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = _ensure(params, PURE_PURSUIT_PARAMS)

    def command(self, pose, path) -> tuple[float, float, bool]:
        """Velocity command to follow ``path`` from ``pose``.

        Args:
            pose: estimated pose ``(x, y, yaw)`` (m, m, rad), same frame as the path.
            path: (m, 2) polyline in metres, m >= 1 (a single point is a goal); the last point is the goal.

        Returns:
            ``(v, w, arrived)``: forward speed (m/s), yaw rate (rad/s), and True when within
            ``xy_goal_tolerance`` of the goal (then ``v = w = 0``).

        Raises:
            ValueError: empty or non-finite path, or a pose without 3 finite numbers.
        """
        p = self.params
        pose = np.asarray(pose, dtype=float).reshape(-1)
        if pose.size != 3 or not np.all(np.isfinite(pose)):
            raise ValueError(f'pose must be 3 finite numbers (x, y, yaw), got {pose.tolist()}')
        pts = np.asarray(path, dtype=float).reshape(-1, 2)
        if pts.shape[0] == 0 or not np.all(np.isfinite(pts)):
            raise ValueError('path must hold at least one finite (x, y) point')
        xy, yaw = pose[:2], pose[2]
        goal = pts[-1]
        dist_goal = float(np.hypot(*(goal - xy)))
        if dist_goal <= p['xy_goal_tolerance']:
            return 0.0, 0.0, True
        carrot = self._carrot(xy, pts, p['lookahead_dist'])
        d = carrot - xy
        l = float(np.hypot(*d))
        if l < 1e-9:
            carrot, d, l = goal, goal - xy, dist_goal
        alpha = float(wrap_angle(math.atan2(d[1], d[0]) - yaw))
        if abs(alpha) > p['rotate_to_heading_min_angle']:
            return 0.0, math.copysign(p['rotate_to_heading_angular_vel'], alpha), False
        v = p['desired_linear_vel']
        scale_dist = p['approach_velocity_scaling_dist']
        if scale_dist > 0 and dist_goal < scale_dist:
            v = max(v * dist_goal / scale_dist, min(p['min_approach_linear_velocity'], v))
        kappa = 2.0 * math.sin(alpha) / l
        w = v * kappa
        if abs(w) > p['max_angular_vel']:
            v = p['max_angular_vel'] / abs(kappa)
            w = math.copysign(p['max_angular_vel'], w)
        return float(v), float(w), False

    @staticmethod
    def _carrot(xy: np.ndarray, pts: np.ndarray, lookahead: float) -> np.ndarray:
        """Point ``lookahead`` metres along the polyline after the point closest to ``xy``."""
        if pts.shape[0] == 1:
            return pts[0]
        seg = pts[1:] - pts[:-1]
        seg_len = np.hypot(seg[:, 0], seg[:, 1])
        # closest point on each segment
        sq = np.einsum('ij,ij->i', seg, seg)
        tt = np.clip(np.einsum('ij,ij->i', xy - pts[:-1], seg) / np.where(sq > 0, sq, 1.0), 0.0, 1.0)
        proj = pts[:-1] + tt[:, None] * seg
        k = int(np.argmin(np.hypot(*(proj - xy).T)))
        cum = np.concatenate([[0.0], np.cumsum(seg_len)])
        s_target = cum[k] + tt[k] * seg_len[k] + lookahead
        if s_target >= cum[-1]:
            return pts[-1]
        j = int(np.searchsorted(cum, s_target, side='right')) - 1
        j = min(j, len(seg) - 1)
        frac = (s_target - cum[j]) / seg_len[j] if seg_len[j] > 0 else 0.0
        return pts[j] + frac * seg[j]

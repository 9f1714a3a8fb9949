"""Judging one input on its own: what is wrong with a pose estimate or a stamp, whatever came before.

:func:`pose_problem` (frame, finite values, range, the search area widened by ``area_margin``, covariance, particles,
and the heading where a ``sensor_offset`` needs it: :func:`heading_problem`) and :func:`stamp_problem` (ahead of the
host clock by more than ``future_stamp_tolerance``, or older than a limit) return ``(category, detail)``: the
category is the rejection counter's key (a bounded set), the detail the log line's reason. What depends on earlier
inputs (order, time-base restarts, the plausibility gate, degenerate covariances floored) is
:class:`~uncertain_bo.explorer.inputs.InputStreams`'s.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..distributions.covariance import covariance_problem, weights_problem
from .area import area_text, distance_outside
from .estimates import PoseEstimate

__all__ = ['pose_problem', 'stamp_problem', 'heading_problem', 'MAX_ABS_COORDINATE', 'STALE_REPLAY_AGE']

#: poses with a coordinate beyond this (m) are rejected: sentinels/overflow, not a place on Earth's surface
MAX_ABS_COORDINATE = 1e7
#: a stale stamp older than the clock by more than this (s) comes from another clock (wall time vs
#: simulated time), not from latency: the log hint says so
STALE_REPLAY_AGE = 3600.0


def pose_problem(pose: PoseEstimate, params: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(category, detail)`` of what is wrong with ``pose`` on its own, or None: its frame (``global_frame``), a
    non-finite stamp or position, a position beyond :data:`MAX_ABS_COORDINATE` or outside ``search_bounds`` widened
    by ``area_margin``, a covariance that is not a finite symmetric PSD ``(2, 2)`` matrix, unusable particles or
    weights, and with a non-zero ``sensor_offset`` its heading (:func:`heading_problem`).

    Args:
        pose: the estimate.
        params: the explorer's parameters (``global_frame``, ``search_bounds``, ``area_margin``, ``sensor_offset``).
    """
    if pose.frame_id != params['global_frame']:
        return ('wrong frame_id', f"frame_id {pose.frame_id[:64]!r} is not the configured frame "
                f"{params['global_frame']!r}")
    if not math.isfinite(pose.stamp):
        return 'non-finite stamp', 'stamp is not finite'
    xy = np.asarray(pose.xy, dtype=float)
    if xy.shape != (2,) or not np.all(np.isfinite(xy)):
        return 'non-finite position', f'position {xy.tolist()} is not 2 finite numbers (NaN or inf)'
    if np.any(np.abs(xy) > MAX_ABS_COORDINATE):
        return ('position out of range', f'position {xy.tolist()} m is beyond ±{MAX_ABS_COORDINATE:g} m '
                '(a sentinel or overflowed value)')
    margin = float(params['area_margin'])
    outside = distance_outside(xy, params, margin)
    if outside > 0.0:
        return ('outside the area', f'position ({xy[0]:.6g}, {xy[1]:.6g}) m is {outside:.3g} m outside '
                f'{area_text(params, margin)} (a glitch, another frame, or a rover started outside: '
                'drive it closer or widen area_margin)')
    cov = np.asarray(pose.cov, dtype=float)
    if cov.shape != (2, 2):
        return 'covariance wrong shape', f'expected a (2, 2) position covariance, got shape {cov.shape}'
    reason = covariance_problem(cov)
    if reason:
        return f'covariance {reason.split(" (")[0]}', f'covariance {reason}'
    if pose.samples is not None:
        x = np.asarray(pose.samples, dtype=float)
        if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] != 2:
            return 'particles wrong shape', f'particle samples must be (m >= 1, 2), got shape {x.shape}'
        if not np.all(np.isfinite(x)):
            return 'non-finite particles', 'particle cloud contains NaN or inf positions'
        if np.any(np.abs(x) > MAX_ABS_COORDINATE):
            return ('particles out of range', f'a particle is beyond ±{MAX_ABS_COORDINATE:g} m (a sentinel or '
                    'overflowed value)')
        if pose.weights is not None:
            problem = weights_problem(np.asarray(pose.weights, dtype=float).reshape(-1), x.shape[0])
            if problem:
                return 'invalid particle weights', f'particle {problem}'
    offset = params.get('sensor_offset', (0.0, 0.0))
    if any(float(v) != 0.0 for v in offset):
        return heading_problem(pose, offset)
    return None


def stamp_problem(stamp: float, now: float, max_age: float, tolerance: float) -> tuple[str, str] | None:
    """``(category, detail)`` when ``stamp`` (s) is more than ``tolerance`` s (``future_stamp_tolerance``) ahead of
    the host clock's ``now`` (s) or more than ``max_age`` s behind it, else None; the detail says the likely cause
    (an unfilled header stamp, another clock, a late arrival)."""
    lead = stamp - now
    if lead > tolerance:
        return ('future stamp', f'stamp {stamp:.3f} s is {lead:.3f} s ahead of the clock, more than '
                f'future_stamp_tolerance = {tolerance:g} s (clock skew between machines, or a driver '
                'stamping with another clock)')
    age = -lead
    if age > max_age:
        if stamp <= 0.0:
            why = 'stamped 0: the publisher does not fill in its header stamp'
        elif age > STALE_REPLAY_AGE:
            why = ('a clock that is not the node clock: a bag replayed without use_sim_time, or a driver '
                   'stamping with another clock?')
        else:
            why = ('arrived late: the publisher or the network lags, or this node was busy and its '
                   'subscription queue backed up')
        return ('stale stamp',
                f'stamp {stamp:.3f} s is {age:.3f} s older than the clock (limit {max_age:g} s): {why}')
    return None


def heading_problem(pose: PoseEstimate, offset) -> tuple[str, str] | None:
    """``(category, detail)`` of what is wrong with ``pose``'s heading for placing a sensor at ``offset`` ``(2,)`` m
    (``sensor_offset``: :mod:`uncertain_bo.distributions.lever_arm`), or None: no heading (an orientation that is no
    rotation), a non-finite one, a yaw covariance that makes the (x, y, yaw) covariance invalid, a cloud without one
    finite heading per particle."""
    need = f'sensor_offset = [{float(offset[0]):g}, {float(offset[1]):g}] m needs the heading of base_link'
    if pose.samples is not None:
        t = None if pose.sample_yaw is None else np.asarray(pose.sample_yaw, dtype=float).reshape(-1)
        if t is None or t.shape[0] != np.asarray(pose.samples).shape[0]:
            return 'particles without headings', f'{need}: the particle cloud must carry one heading per particle'
        if not np.all(np.isfinite(t)):
            return ('non-finite particle headings', f'{need}: a particle\'s orientation is no rotation (all-zero or '
                    'non-finite quaternion)')
    if pose.yaw is None or not math.isfinite(pose.yaw):
        return ('no heading', f'{need}, and this pose has none (an all-zero or non-finite orientation quaternion: is '
                'the localisation filling it in?)')
    if pose.yaw_cov is not None:
        row = np.asarray(pose.yaw_cov, dtype=float)
        if row.shape != (3,):
            return 'heading covariance wrong shape', f'yaw covariance row must be (3,), got shape {row.shape}'
        reason = covariance_problem(pose.pose_covariance)
        if reason:
            return (f'heading covariance {reason.split(" (")[0]}',
                    f'the (x, y, yaw) covariance {reason} (yaw row {row.tolist()})')
    return None

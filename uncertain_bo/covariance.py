"""Covariance validity check shared by the library (tensors) and the ROS message layer (NumPy).

One implementation, NumPy only, so nodes that never touch the GP (ekf, pure_pursuit, sim_rover) can use
it without importing torch; :func:`uncertain_bo.distributions.check_covariance` (tensors) and
:func:`uncertain_bo.ros.conversions.validate_position_covariance` (messages) both call it.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ['covariance_problem']


def covariance_problem(cov, *, atol: float = 1e-9) -> str | None:
    """Why ``cov`` is not a valid covariance, or None if it is.

    Args:
        cov: ``(..., d, d)`` candidate covariance matrices (array-like, converted to float64).
        atol: tolerance on asymmetry and on negative eigenvalues, relative to the largest absolute entry
            (absolute for matrices whose largest entry is below 1).

    Returns:
        None when every matrix is finite, symmetric and positive semi-definite (the zero matrix is valid:
        a Dirac location); otherwise a short reason: ``'expected square ...'``, ``'contains NaN or inf'``,
        ``'negative variance (...)'``, ``'not symmetric'`` or ``'not positive semi-definite (min
        eigenvalue ...)'``.
    """
    c = np.asarray(cov, dtype=np.float64)
    if c.shape == (2, 2):
        return _problem_2x2(*c.ravel().tolist(), atol)
    with np.errstate(over='ignore', invalid='ignore', under='ignore'):   # extreme values: verdict, no warnings
        return _problem(c, atol)


def _problem(c: np.ndarray, atol: float) -> str | None:
    if c.ndim < 2 or c.shape[-1] != c.shape[-2]:
        return f'expected square (..., d, d) matrices, got shape {tuple(c.shape)}'
    if not np.all(np.isfinite(c)):
        return 'contains NaN or inf'
    if c.size == 0:
        return None
    scale = float(np.max(np.abs(c)))
    tol = atol * max(scale, 1.0)
    diag = np.diagonal(c, axis1=-2, axis2=-1)
    if np.any(diag < -tol):
        return f'negative variance ({float(diag.min()):.3g})'
    if np.any(np.abs(c - np.swapaxes(c, -1, -2)) > tol):
        return 'not symmetric'
    if scale == 0.0:
        return None
    # eigenvalues of the matrix scaled to entries <= 1 (no overflow near the float64 limit)
    u = c / scale
    emin = float(np.linalg.eigvalsh(0.5 * (u + np.swapaxes(u, -1, -2))).min())
    if not np.isfinite(emin) or emin < -tol / scale:
        return f'not positive semi-definite (min eigenvalue {emin * scale:.3g})'
    return None


def _problem_2x2(a: float, b: float, c: float, d: float, atol: float) -> str | None:
    """:func:`covariance_problem` of ``[[a, b], [c, d]]`` in closed form (the pose path runs it at the
    pose rate: no NumPy call overhead)."""
    if not all(math.isfinite(v) for v in (a, b, c, d)):
        return 'contains NaN or inf'
    scale = max(abs(a), abs(b), abs(c), abs(d))
    tol = atol * max(scale, 1.0)
    if a < -tol or d < -tol:
        return f'negative variance ({min(a, d):.3g})'
    if abs(b - c) > tol:
        return 'not symmetric'
    if scale == 0.0:
        return None
    a, d, s = a / scale, d / scale, 0.5 * (b / scale) + 0.5 * (c / scale)   # entries <= 1: no overflow
    emin = 0.5 * (a + d) - math.hypot(0.5 * (a - d), s)
    if emin < -tol / scale:
        return f'not positive semi-definite (min eigenvalue {emin * scale:.3g})'
    return None

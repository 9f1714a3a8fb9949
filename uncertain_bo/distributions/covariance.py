"""Covariance and particle-cloud checks shared by the library and the ROS message layer (NumPy).

One implementation of each, NumPy only, so code that never touches the GP (the ekf, pure_pursuit,
sim_rover and particle-filter nodes, the message conversions) can use it without importing torch:

- :func:`covariance_problem`: why a matrix is not a covariance;
  :func:`uncertain_bo.distributions.check_covariance` (tensors) and
  :func:`uncertain_bo.ros.conversions.validate_position_covariance` (messages) both call it;
- :func:`weights_problem`: why particle weights are not usable (the tensor path of
  :func:`uncertain_bo.distributions.weights_problem` gives the same reasons);
- :func:`particle_moments`: the moment-matched mean and covariance of a weighted particle cloud (what
  :class:`uncertain_bo.distributions.Empirical` computes for tensors).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ['covariance_problem', 'weights_problem', 'particle_moments']


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


WEIGHTS_NOT_FINITE = 'weights must be finite and non-negative'
WEIGHTS_NO_TOTAL = 'weights must have a positive total (per distribution)'
WEIGHTS_TOTAL_OVERFLOWS = 'weights overflow (their total is not finite)'


def weights_problem(weights, m: int | None = None) -> str | None:
    """Why ``weights`` are not usable sample weights, or None.

    Args:
        weights: ``(..., m)`` weights, one row per distribution (array-like, converted to float64).
        m: the number of samples the weights belong to, or None to skip the count check.

    Returns:
        None when every row is finite, non-negative with a positive finite total; otherwise one of
        ``'weights must be one per sample (m), got shape ...'``, :data:`WEIGHTS_NOT_FINITE`,
        :data:`WEIGHTS_NO_TOTAL` (also for ``m = 0``) or :data:`WEIGHTS_TOTAL_OVERFLOWS`.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 0 or (m is not None and w.shape[-1] != m):
        return f'weights must be one per sample ({m}), got shape {tuple(w.shape)}'
    if w.shape[-1] == 0:
        return WEIGHTS_NO_TOTAL
    if not np.all(np.isfinite(w) & (w >= 0)):
        return WEIGHTS_NOT_FINITE
    with np.errstate(over='ignore'):
        total = w.sum(-1)
    if np.any(total <= 0):
        return WEIGHTS_NO_TOTAL
    if not np.all(np.isfinite(total)):
        return WEIGHTS_TOTAL_OVERFLOWS
    return None


def particle_moments(samples, weights=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Moment matching of a weighted particle cloud: mean :math:`\bar{\mathbf x} = \sum_i w_i \mathbf x_i` and
    population covariance :math:`\sum_i w_i (\mathbf x_i - \bar{\mathbf x})(\mathbf x_i - \bar{\mathbf x})^\top`
    with the weights normalised to sum to 1 (one particle: zero covariance, a Dirac).

    Args:
        samples: ``(m, d)`` particle positions (array-like, any units).
        weights: ``(m,)`` non-negative weights with a positive finite sum, or None for equal weights.

    Returns:
        ``(mean (d,), covariance (d, d))`` in the units of the samples (squared). Overflow of huge samples
        gives non-finite moments without warnings (callers validate the result).

    Raises:
        ValueError: samples not ``(m, d)``, an empty cloud, or weights that :func:`weights_problem` refuses
            (the message says why).
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f'particle samples must be (m, d), got shape {x.shape}')
    if x.shape[0] == 0:
        raise ValueError('empty particle cloud')
    if weights is None:
        w = np.full(x.shape[0], 1.0 / x.shape[0])
    else:
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        problem = weights_problem(w, x.shape[0])
        if problem:
            raise ValueError(f'particle {problem}')
        with np.errstate(over='ignore', invalid='ignore', under='ignore'):
            w = w / w.sum()
    with np.errstate(over='ignore', invalid='ignore', under='ignore'):
        mean = w @ x
        d = x - mean
        cov = (w[:, None] * d).T @ d
    return mean, cov

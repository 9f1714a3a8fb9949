"""Checks of location-distribution parameters: covariances and sample weights, on tensors where they live.

:func:`check_covariance` and :func:`weights_problem` give tensors the reasons the NumPy (torch-free) layer
(:mod:`uncertain_bo.distributions.covariance`, used by the ROS message layer) gives arrays;
:class:`InvalidDistributionError` is what every constructor of :mod:`uncertain_bo.distributions` raises.
:func:`ros_covariance_to_xy` reads the planar block of a ROS 2 pose covariance layout. :data:`DTYPE` (float64) is the
dtype of every tensor of the package."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from .covariance import WEIGHTS_NO_TOTAL, WEIGHTS_NOT_FINITE, WEIGHTS_TOTAL_OVERFLOWS, covariance_problem
from .covariance import weights_problem as _np_weights_problem

__all__ = ['DTYPE', 'InvalidDistributionError', 'check_covariance', 'weights_problem', 'ros_covariance_to_xy']

DTYPE = torch.float64


class InvalidDistributionError(ValueError):
    """A distribution's parameters are not valid (NaN/inf, wrong shape, covariance not PSD).

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian
        >>> Gaussian(torch.zeros(1, 2), torch.tensor([[1.0, 0.0], [0.0, -1.0]]))
        Traceback (most recent call last):
        ...
        uncertain_bo.distributions.checks.InvalidDistributionError: ...
    """


def check_covariance(cov: Tensor, *, atol: float = 1e-9) -> str | None:
    """Why ``cov`` is not a valid covariance, or None if it is.

    Args:
        cov: ``(..., d, d)`` candidate covariance matrices: a tensor on any device, or anything NumPy reads.
        atol: tolerance on asymmetry and on negative eigenvalues, relative to the largest absolute entry
            (absolute for matrices whose largest entry is below 1).

    Returns:
        None when every matrix is finite, symmetric and positive semi-definite (the zero matrix is valid:
        a Dirac location); otherwise a short reason such as ``'not positive semi-definite (min eigenvalue
        -3.1)'``. Tensors are checked where they live, in float64, each ``(d, d)`` matrix against tolerances
        relative to its own entries, with one device-to-host transfer of a few numbers; other inputs go to
        the NumPy :func:`uncertain_bo.distributions.covariance.covariance_problem` (the ROS message layer's check; the
        same reasons, tolerances relative to the whole array).
    """
    if not isinstance(cov, Tensor):
        return covariance_problem(cov, atol=atol)
    return _first_covariance_problem(cov, atol)[1]


def _first_covariance_problem(cov: Tensor, atol: float = 1e-9) -> tuple[int | None, str | None]:
    """``(flat index of the first invalid matrix, its reason)``, or ``(None, None)``: every ``(d, d)`` matrix of
    ``cov`` judged on its own (tolerances relative to its own largest entry), on ``cov``'s device, with one
    device-to-host transfer of seven numbers."""
    c = cov.detach()
    if c.ndim < 2 or c.shape[-1] != c.shape[-2]:
        return 0, f'expected square (..., d, d) matrices, got shape {tuple(c.shape)}'
    if c.numel() == 0:
        return None, None
    d = c.shape[-1]
    c = c.to(DTYPE).reshape(-1, d, d)
    finite = torch.isfinite(c).flatten(1).all(-1)
    c = torch.where(torch.isfinite(c), c, torch.zeros((), dtype=c.dtype, device=c.device))
    scale = c.abs().flatten(1).amax(-1)                                # (N,)
    tol = atol * scale.clamp_min(1.0)
    diag_min = torch.diagonal(c, dim1=-2, dim2=-1).amin(-1)
    asym = (c - c.transpose(-1, -2)).abs().flatten(1).amax(-1)
    u = c / scale.clamp_min(torch.finfo(DTYPE).tiny)[:, None, None]   # entries <= 1: no overflow
    emin = torch.linalg.eigvalsh(0.5 * (u + u.transpose(-1, -2))).amin(-1)
    bad = ~finite | (diag_min < -tol) | (asym > tol) | ((scale > 0) & ~(emin >= -tol / scale.clamp_min(1e-300)))
    first = torch.argmax(bad.to(torch.uint8))
    stats = torch.stack([bad.any().to(DTYPE), first.to(DTYPE), finite[first].to(DTYPE), diag_min[first], tol[first],
                         asym[first], emin[first] * scale[first]]).tolist()   # the one sync
    any_bad, i, ok_finite, dmin, tol_i, asym_i, emin_i = stats
    if not any_bad:
        return None, None
    i = int(i)
    if not ok_finite:
        return i, 'contains NaN or inf'
    if dmin < -tol_i:
        return i, f'negative variance ({dmin:.3g})'
    if asym_i > tol_i:
        return i, 'not symmetric'
    return i, f'not positive semi-definite (min eigenvalue {emin_i:.3g})'


def weights_problem(weights) -> str | None:
    """Why ``weights`` ``(..., m)`` are not usable sample weights (per row: finite, non-negative, a positive
    finite total), or None.

    Tensors are checked on their device with one device-to-host transfer; anything else goes to the NumPy
    :func:`uncertain_bo.distributions.covariance.weights_problem` (the particle clouds of the ROS layer), which gives
    the same reasons.

    Returns:
        None, ``'weights must be finite and non-negative'``, ``'weights must have a positive total (per
        distribution)'`` (also for ``m = 0``) or ``'weights overflow (their total is not finite)'``.
    """
    if not isinstance(weights, Tensor):
        return _np_weights_problem(weights)
    w = weights.detach()
    if w.shape[-1] == 0:
        return WEIGHTS_NO_TOTAL
    total = w.sum(-1)
    bad_entries = ~(torch.isfinite(w) & (w >= 0)).all()
    bad_total, total_overflows = (total <= 0).any(), ~torch.isfinite(total).all()
    bad_entries, bad_total, total_overflows = torch.stack([bad_entries, bad_total, total_overflows]).tolist()
    if bad_entries:
        return WEIGHTS_NOT_FINITE
    if bad_total:
        return WEIGHTS_NO_TOTAL
    if total_overflows:
        return WEIGHTS_TOTAL_OVERFLOWS
    return None


def ros_covariance_to_xy(cov36: Sequence[float]) -> Tensor:
    """Planar (x, y) block of a ROS 6x6 pose covariance.

    Args:
        cov36: 36 floats, row-major over (x, y, z, rot-X, rot-Y, rot-Z), as in
            ``geometry_msgs/PoseWithCovariance.covariance`` (REP-103 units: m², rad²).

    Returns:
        ``(2, 2)`` float64 tensor ``[[xx, xy], [yx, yy]]`` (entries 0, 1, 6, 7), m².

    Raises:
        InvalidDistributionError: not 36 numbers.
    """
    c = torch.as_tensor(list(cov36), dtype=DTYPE)
    if c.numel() != 36:
        raise InvalidDistributionError(f'a ROS pose covariance has 36 entries, got {c.numel()}')
    return c.reshape(6, 6)[:2, :2].clone()


def _as_tensor(x, name: str, ndim: int) -> Tensor:
    t = torch.as_tensor(x, dtype=DTYPE)
    if t.ndim != ndim:
        raise InvalidDistributionError(f'{name} must have {ndim} dimensions, got shape {tuple(t.shape)}')
    return t

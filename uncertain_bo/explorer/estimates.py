"""What the explorer is handed: pose estimates (location distributions) and readings.

A :class:`PoseEstimate` is a localisation estimate of ``base_link`` in the global frame: a Gaussian (mean and
``(2, 2)`` position covariance) and optionally the particle cloud it summarises and the heading with its covariance
row; a :class:`Reading` is one sensor value with its stamp and variance. The position-covariance helpers
(:func:`position_trace`, :func:`position_std`, :func:`psd_projection`) are the ones every stage uses to judge and
store a location. How an estimate is judged on arrival is :mod:`~uncertain_bo.explorer.input_checks`; how estimates
and readings are buffered and paired is :mod:`~uncertain_bo.explorer.inputs`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..distributions.covariance import particle_moments
from ..distributions.lever_arm import pose_moments

__all__ = ['PoseEstimate', 'Reading', 'position_trace', 'position_std', 'psd_projection']


def position_trace(cov: np.ndarray) -> float:
    """``var x + var y`` of a (2, 2) covariance, m² (inf rather than a warning when it overflows)."""
    return float(cov[0][0]) + float(cov[1][1])


def position_std(cov: np.ndarray) -> float:
    """σ_L: the per-axis position std sqrt((var x + var y) / 2) of a (2, 2) covariance, m."""
    return math.sqrt(max(position_trace(cov), 0.0) / 2.0)


def psd_projection(cov: np.ndarray) -> np.ndarray:
    r"""Exactly symmetric, positive semi-definite version of a (2, 2) covariance that passed
    :func:`~uncertain_bo.distributions.covariance.covariance_problem` (which tolerates round-off asymmetry and tiny
    negative eigenvalues).

    The off-diagonal becomes the mean of the two and negative variances become 0; a negative eigenvalue
    :math:`\lambda_{min}` that remains (within the check's tolerance) is lifted by adding :math:`|\lambda_{min}|`
    to both variances, so no entry moves by more than the tolerance (clipping the off-diagonal alone moved it
    by up to :math:`3\cdot10^{-5}` of the largest entry when a variance is 0); last, the off-diagonal is
    clipped to ``|xy| <= sqrt(xx) sqrt(yy)`` against rounding (a 2x2 matrix is PSD iff its diagonal and
    determinant are non-negative). Closed forms in units of the largest entry: robust where an
    eigendecomposition of an ill-conditioned matrix (e.g. variances 0 and 1e165, off-diagonal 1e-12) is not.
    Exact zeros stay zero (a Dirac).
    """
    c = np.asarray(cov, dtype=float).reshape(2, 2)
    a, d = max(c[0, 0], 0.0), max(c[1, 1], 0.0)
    s = 0.5 * c[0, 1] + 0.5 * c[1, 0]
    scale = max(a, d, abs(s))
    if 0.0 < scale < math.inf:
        an, dn, sn = a / scale, d / scale, s / scale         # entries <= 1: no overflow
        det = an * dn - sn * sn
        if det < 0.0:   # -lambda_min = -2 det / (tr + sqrt(tr^2 - 4 det)), without cancellation
            lift = -2.0 * det / ((an + dn) + math.hypot(an - dn, 2.0 * sn)) * scale
            a, d = a + lift, d + lift
    bound = math.sqrt(a) * math.sqrt(d)
    if abs(s) > bound:
        s = math.copysign(bound, s)
    return np.array([[a, s], [s, d]])


@dataclass(frozen=True)
class PoseEstimate:
    """A localisation estimate of ``base_link``: stamp (s), frame, position mean ``(2,)`` m, covariance ``(2, 2)``
    m², and optionally the particle cloud it summarises: ``samples`` ``(m, 2)`` m with ``weights`` ``(m,)`` (None:
    equal weights).

    The heading, where the source gives one (a sensor mounted away from ``base_link`` needs it:
    ``sensor_offset``, :mod:`uncertain_bo.distributions.lever_arm`): ``yaw`` (rad, REP-103: counter-clockwise from +x;
    None: unknown), ``yaw_cov`` ``(3,)`` the yaw row of the (x, y, yaw) covariance: ``[cov(x, yaw) m·rad, cov(y, yaw)
    m·rad, var(yaw) rad²]`` (None: zero, the heading known exactly), and ``sample_yaw`` ``(m,)`` each particle's
    heading (rad).

    Example:
        A particle cloud summarised by its moments (the cloud is kept for sample-based kernels):

        >>> import numpy as np
        >>> from uncertain_bo.explorer.estimates import PoseEstimate
        >>> cloud = np.array([[9.0, 10.0], [11.0, 10.0], [10.0, 12.0], [10.0, 8.0]])
        >>> pose = PoseEstimate.from_particles(4.2, 'map', cloud)
        >>> pose.xy, np.diag(pose.cov), pose.samples.shape
        (array([10., 10.]), array([0.5, 2. ]), (4, 2))
    """

    stamp: float
    frame_id: str
    xy: np.ndarray
    cov: np.ndarray
    samples: np.ndarray | None = None
    weights: np.ndarray | None = None
    yaw: float | None = None
    yaw_cov: np.ndarray | None = None
    sample_yaw: np.ndarray | None = None

    @property
    def pose_covariance(self) -> np.ndarray:
        """``(3, 3)`` covariance over (x, y, yaw): :attr:`cov` bordered by :attr:`yaw_cov` (zeros where None)."""
        c = np.zeros((3, 3))
        c[:2, :2] = np.asarray(self.cov, dtype=float).reshape(2, 2)
        if self.yaw_cov is not None:
            row = np.asarray(self.yaw_cov, dtype=float).reshape(3)
            c[2, :] = row
            c[:2, 2] = row[:2]
        return c

    @classmethod
    def from_particles(cls, stamp: float, frame_id: str, samples, weights=None, yaws=None) -> 'PoseEstimate':
        """Estimate of a particle cloud: the cloud plus its moment-matched mean and (population) covariance; with
        the particles' headings, also the circular mean heading and the yaw row of the (x, y, yaw) covariance
        (:func:`uncertain_bo.distributions.lever_arm.pose_moments`).

        Not validated beyond what moment matching needs (the explorer validates on arrival); overflow
        gives non-finite moments, which the explorer rejects.

        Args:
            stamp: time of the cloud, s.
            frame_id: frame of the particles.
            samples: ``(m, 2)`` particle positions, m (``(m, k)`` with ``k > 2``: the first two columns).
            weights: ``(m,)`` non-negative weights with a positive finite sum (normalised here), or None.
            yaws: ``(m,)`` the particles' headings, rad, or None (unknown; non-finite ones are kept as they are and
                rejected on arrival only where a ``sensor_offset`` needs them).

        Raises:
            ValueError: an empty cloud, samples not ``(m, >= 2)``, weights that are not finite,
                non-negative, one per particle with a positive finite sum
                (:func:`uncertain_bo.distributions.covariance.particle_moments`), or not one heading per particle.
        """
        x = np.asarray(samples, dtype=float)
        if x.ndim != 2 or x.shape[1] < 2:
            raise ValueError(f'particle samples must be (m, 2), got shape {x.shape}')
        x = np.ascontiguousarray(x[:, :2])
        mean, cov = particle_moments(x, weights)   # ValueError: an empty cloud, unusable weights
        w = None if weights is None else np.asarray(weights, dtype=float).reshape(-1)
        if w is not None:
            w = w / w.sum()
        if yaws is None:
            return cls(float(stamp), frame_id, mean, cov, x, w)
        t = np.array(yaws, dtype=float).reshape(-1)
        if t.shape[0] != x.shape[0]:
            raise ValueError(f'particle headings must be one per particle ({x.shape[0]}), got {t.shape[0]}')
        pose, pose_cov = pose_moments(x, t, w)
        return cls(float(stamp), frame_id, mean, cov, x, w, float(pose[2]), pose_cov[2].copy(), t)


@dataclass(frozen=True)
class Reading:
    """A sensor reading: stamp (s, None if the message has no header), value, variance (0 = unknown).

    ``stamped_on_arrival`` is True for a header-less reading that :meth:`InputStreams.add_reading` stamped with
    the host's clock when it arrived (see :mod:`uncertain_bo.explorer.inputs`).

    Example:
        >>> from uncertain_bo.explorer.estimates import Reading
        >>> Reading(12.5, 101325.2, variance=0.25)        # a stamped pressure reading, Pa (variance Pa²)
        Reading(stamp=12.5, value=101325.2, variance=0.25, stamped_on_arrival=False)
    """

    stamp: float | None
    value: float
    variance: float = 0.0
    stamped_on_arrival: bool = False

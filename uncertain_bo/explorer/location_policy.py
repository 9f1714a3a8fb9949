r"""Which location distribution :math:`P^L_t` a measurement gets: a Gaussian, a particle cloud, or (for the GP)
the commanded target.

The method decides what its GP trains on (:attr:`~uncertain_bo.planning.planner.Planner.input_kind`;
docs/architecture.md, "How a method plugs in"):

- **samples** — a sample-based kernel (:class:`~uncertain_bo.kernels.SampleDistributionKernel`: ``airbo``,
  ``airbo_empirical``, ``ugp_kme``). A pose estimate that carries the localiser's particle cloud
  (:meth:`~uncertain_bo.explorer.estimates.PoseEstimate.from_particles`, e.g. AMCL's or the simulation's particle
  filter) is stored as an :class:`~uncertain_bo.distributions.Empirical` location distribution of
  ``max_particles`` particles: systematic resampling of the weighted cloud to uniform weights, in random
  order, so that any prefix is itself a fair subsample. Clouds are reduced to ``max_particles`` on arrival, so
  the pose buffer stays bounded.
- **gaussian** — the moment-matched :class:`~uncertain_bo.distributions.Gaussian` of the pose estimate (its
  mean and covariance); particle clouds are dropped on arrival (not needed).
- **target** — the GP trains on the commanded targets (standard BO, the baseline that ignores input noise).
  The measurement still stores the pose's Gaussian: the journal keeps where the reading was taken and the
  learned execution noise uses it.

A run keeps one kind: a resumed journal's kind (and particle count) wins over the parameters, and a pose
without particles in a run of empirical locations is stored as ``max_particles`` deterministic draws of its
Gaussian.

**Where the sensor is** (``sensor_offset``, :mod:`uncertain_bo.distributions.lever_arm`): this is the one place where a
pose estimate of ``base_link`` becomes the location distribution of a reading (measurements, en-route readings and
revised locations alike), so the lever arm is applied here and nowhere else. With an offset :math:`\mathbf r` the
Gaussian is the exact mean and covariance of :math:`\mathbf p + R(\theta)\mathbf r` under the pose's Gaussian over (x,
y, yaw) (:func:`~uncertain_bo.distributions.lever_arm.sensor_moments`: the heading's uncertainty times the arm, and its
correlation with the position, join the covariance); a particle cloud is moved particle by particle with each one's own
heading (no linearisation), and a Gaussian pose in a run of particles becomes draws of its (x, y, yaw) Gaussian moved
so. A cloud in a run of Gaussians is summarised on arrival (its particles are dropped) by its (x, y, yaw) moments
(:meth:`~uncertain_bo.explorer.estimates.PoseEstimate.from_particles`), whose exact sensor moments are then used. With
the offset ``[0, 0]`` every location is bit for bit what it was without the parameter.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..distributions.covariance import particle_moments
from ..distributions import DTYPE, Empirical, Gaussian, InvalidDistributionError, LocationDistributions
from ..distributions.lever_arm import sensor_moments, sensor_position
from ..planning.planner import Planner
from .estimates import PoseEstimate, psd_projection

__all__ = ['LocationPolicy', 'planar_gaussian', 'resample_particles', 'takes_sample_sets']

log = logging.getLogger(__name__)


def resample_particles(samples: np.ndarray, weights: np.ndarray | None, m: int,
                       rng: np.random.Generator) -> np.ndarray:
    """``m`` equally weighted particles representing a weighted cloud: systematic resampling (one uniform
    offset, ``m`` evenly spaced positions on the cumulative weights; Douc & Cappé 2005), returned in random
    order so that any prefix is itself a fair subsample (sample-based kernels may use only the first few).

    filterpy's ``systematic_resample`` draws as many indices as there are weights, hence ``np.searchsorted``.

    Args:
        samples: ``(N, d)`` particles.
        weights: ``(N,)`` normalised weights, or None for equal weights.
        m: number of particles wanted (>= 1).
        rng: random generator (offset and order).

    Returns:
        ``(m, d)`` particles (copies of input particles).
    """
    x = np.asarray(samples, dtype=float)
    n = x.shape[0]
    if weights is None:
        cum = np.arange(1, n + 1, dtype=float) / n
    else:
        cum = np.cumsum(np.asarray(weights, dtype=float))
        cum /= cum[-1]
    positions = (rng.random() + np.arange(m)) / m
    idx = np.minimum(np.searchsorted(cum, positions, side='right'), n - 1)
    return x[rng.permutation(idx)]


def takes_sample_sets(planner: Planner) -> bool:
    """True when ``planner``'s GP trains on sample sets (:attr:`~uncertain_bo.planning.planner.Planner.input_kind` is
    ``'samples'``: a sample-based kernel), i.e. an empirical location distribution is used as such rather than
    moment-matched."""
    return planner.input_kind == 'samples'


def planar_gaussian(pose: PoseEstimate) -> tuple[np.ndarray, np.ndarray]:
    """``(mean (3,), covariance (3, 3))`` of ``pose`` over (x m, y m, yaw rad): its position, heading and
    :attr:`~uncertain_bo.explorer.estimates.PoseEstimate.pose_covariance` with the position block projected onto the
    PSD cone as every stored location's is (:func:`~uncertain_bo.explorer.estimates.psd_projection`)."""
    cov = pose.pose_covariance
    cov[:2, :2] = psd_projection(pose.cov)
    return np.array([pose.xy[0], pose.xy[1], pose.yaw], dtype=float), cov


class LocationPolicy:
    """Turns pose estimates into the location distributions a run stores (see the module docstring).

    Args:
        planner: the run's planner (its method decides the kind; its resumed observations fix it).
        params: the explorer's parameters (``max_particles``, ``seed``, ``sensor_offset``).

    Attributes:
        kind: what the method's GP trains on (:attr:`~uncertain_bo.planning.planner.Planner.input_kind`): ``'target'``,
            ``'gaussian'`` or ``'samples'``.
        samples: ``kind == 'samples'`` (empirical location distributions are kept as such).
        stored_particles: the run's kind once decided: None (nothing stored yet), 0 (Gaussian) or the particle
            count of its empirical locations.
        offset: ``(2,)`` the sensor in ``base_link``, m (``sensor_offset``; read-only, so read once).
        lever_arm: the offset is not zero: readings are placed at the sensor, not at ``base_link``.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters, PoseEstimate
        >>> from uncertain_bo.explorer.location_policy import LocationPolicy
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0,
        ...                                     'method': 'airbo', 'max_particles': 16})
        >>> policy = LocationPolicy(planner_from_parameters(params), params)
        >>> policy.kind, policy.particles                 # AIRBO's kernel takes sample sets: empirical locations
        ('samples', 16)
        >>> cloud = PoseEstimate.from_particles(1.0, 'map', np.random.default_rng(0).normal(10.0, 0.5, (500, 2)))
        >>> policy.location(policy.on_arrival(cloud)).samples.shape   # (batch, particles, d)
        torch.Size([1, 16, 2])
    """

    def __init__(self, planner: Planner, params: dict[str, Any]):
        self.params = params
        self.rng = np.random.default_rng(np.random.SeedSequence([int(params['seed']), 0x9A27]))
        self.kind = planner.input_kind
        self.samples = self.kind == 'samples'
        self.stored_particles = self._journal_particles(planner)
        self.offset = np.array(params.get('sensor_offset', (0.0, 0.0)), dtype=float).reshape(2)
        self.lever_arm = bool(np.any(self.offset != 0.0))

    def _journal_particles(self, planner: Planner) -> int | None:
        """Kind of the planner's existing locations: None (none yet), 0 (parametric) or the particle count."""
        if not planner.n:
            return None
        try:
            locations = planner.locations
        except InvalidDistributionError as exc:  # pragma: no cover - the planner itself refuses mixed kinds
            log.warning('stored locations cannot be combined (%s): storing Gaussian summaries', exc)
            return 0
        if isinstance(locations, Empirical):
            m = int(locations.samples.shape[1])
            if m != self.params['max_particles']:
                log.info('the journal holds empirical locations of %d particles: keeping %d (max_particles = %d '
                         'applies to new runs)', m, m, self.params['max_particles'])
            return m
        if self.samples:
            log.info('the journal holds Gaussian locations: storing moment-matched Gaussians in this run too')
        return 0

    @property
    def particles(self) -> int:
        """Particles per stored empirical location distribution, 0 when the run stores Gaussians (or has not
        decided yet and will not use particles)."""
        return self.wanted_particles() or 0

    def wanted_particles(self) -> int | None:
        """Particles to keep per pose: the run's count, ``max_particles`` while undecided with a sample-based
        kernel, else None (no particles needed)."""
        if self.stored_particles is None:
            return int(self.params['max_particles']) if self.samples else None
        return self.stored_particles or None

    def on_arrival(self, pose: PoseEstimate) -> PoseEstimate:
        """``pose`` with its particle cloud reduced to what the run stores: resampled to the run's particle
        count (equal weights; each particle keeps its heading), or dropped when the run stores Gaussians."""
        m = self.wanted_particles()
        if m is None:
            return replace(pose, samples=None, weights=None, sample_yaw=None)
        x, yaw = self._resampled(pose, m)
        return replace(pose, samples=x, weights=None, sample_yaw=yaw)

    def _resampled(self, pose: PoseEstimate, m: int) -> tuple[np.ndarray, np.ndarray | None]:
        """``m`` equally weighted particles of ``pose``'s cloud and their headings (None where it has none)."""
        if pose.sample_yaw is None:
            return resample_particles(pose.samples, pose.weights, m, self.rng), None
        both = np.column_stack([pose.samples, pose.sample_yaw])     # the same draws as the positions alone
        drawn = resample_particles(both, pose.weights, m, self.rng)
        return np.ascontiguousarray(drawn[:, :2]), np.ascontiguousarray(drawn[:, 2])

    def sensor_gaussian(self, pose: PoseEstimate) -> tuple[np.ndarray, np.ndarray]:
        """``(mean (2,) m, covariance (2, 2) m²)`` of where the sensor was for ``pose`` (module docstring): ``pose``'s
        own position and covariance without a lever arm; with one, the moments of its cloud moved particle by
        particle, or the exact moments of its Gaussian over (x, y, yaw)."""
        if not self.lever_arm:
            return pose.xy, pose.cov
        if pose.samples is not None and pose.sample_yaw is not None:
            return particle_moments(sensor_position(pose.samples, pose.sample_yaw, self.offset), pose.weights)
        return sensor_moments(*planar_gaussian(pose), self.offset)

    def location(self, pose: PoseEstimate, warn: bool = True) -> LocationDistributions:
        """The location distribution stored for ``pose`` (batch of 1): where the sensor was (module docstring);
        ``warn``: log when a pose without particles becomes draws of its Gaussian in a run of particles (not for a
        revised pose, which never has any)."""
        xy, cov = self.sensor_gaussian(pose)
        gaussian = Gaussian(torch.as_tensor(xy, dtype=DTYPE).reshape(1, 2),
                            torch.as_tensor(psd_projection(cov), dtype=DTYPE).reshape(1, 2, 2))
        m = self.wanted_particles()
        if m is None or (self.stored_particles is None and pose.samples is None):
            return gaussian
        if pose.samples is not None:
            x, yaw = pose.samples, pose.sample_yaw
            if len(x) != m or pose.weights is not None:   # (poses are reduced on arrival already)
                x, yaw = self._resampled(pose, m)
            if self.lever_arm:
                x = sensor_position(x, yaw, self.offset)
            return Empirical(torch.as_tensor(x, dtype=DTYPE).reshape(1, m, 2))
        if warn:
            log.warning('pose without a particle cloud in a run of empirical locations: storing %d draws of its '
                        'Gaussian', m)
        generator = torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))
        if not self.lever_arm:
            return Empirical(gaussian.sample(m, generator))
        mean, cov = planar_gaussian(pose)
        draws = Gaussian(torch.as_tensor(mean, dtype=DTYPE).reshape(1, 3),
                         torch.as_tensor(cov, dtype=DTYPE).reshape(1, 3, 3)).sample(m, generator)[0].numpy()
        return Empirical(torch.as_tensor(sensor_position(draws[:, :2], draws[:, 2], self.offset),
                                         dtype=DTYPE).reshape(1, m, 2))

    def describe(self, pose: PoseEstimate, location: LocationDistributions) -> str:
        """Where ``location`` came from, for the journal (``'pose -> gaussian'``, ``'particle cloud -> empirical
        (160 particles)'``, ``'pose -> gaussian at sensor_offset [0.8, 0.1] m'``, ...)."""
        return ('particle cloud' if pose.samples is not None else 'pose') + (
            f' -> empirical ({location.samples.shape[1]} particles)' if isinstance(location, Empirical)
            else ' -> gaussian') + (f' at sensor_offset [{self.offset[0]:g}, {self.offset[1]:g}] m'
                                    if self.lever_arm else '')

    def stored(self, location: LocationDistributions) -> None:
        """Record that ``location`` was stored: the first stored location fixes the run's kind."""
        if self.stored_particles is None:
            self.stored_particles = location.samples.shape[1] if isinstance(location, Empirical) else 0

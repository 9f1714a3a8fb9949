"""Which location distribution :math:`P^L_t` a measurement gets: a Gaussian, a particle cloud, or (for the GP)
the commanded target.

The method decides what its GP trains on (:attr:`~uncertain_bo.planner.Planner.input_kind`; docs/architecture.md,
"How a method plugs in"):

- **samples** — a sample-based kernel (:class:`~uncertain_bo.kernels.SampleDistributionKernel`: ``airbo``,
  ``airbo_empirical``, ``ugp_kme``). A pose estimate that carries the localiser's particle cloud
  (:meth:`~uncertain_bo.explorer.inputs.PoseEstimate.from_particles`, e.g. AMCL's or the simulation's particle
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
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from ..distributions import DTYPE, Empirical, Gaussian, InvalidDistributionError, LocationDistributions
from ..planner import Planner
from .inputs import PoseEstimate, psd_projection

__all__ = ['LocationPolicy', 'resample_particles', 'takes_sample_sets']

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
    """True when ``planner``'s GP trains on sample sets (:attr:`~uncertain_bo.planner.Planner.input_kind` is
    ``'samples'``: a sample-based kernel), i.e. an empirical location distribution is used as such rather than
    moment-matched."""
    return planner.input_kind == 'samples'


class LocationPolicy:
    """Turns pose estimates into the location distributions a run stores (see the module docstring).

    Args:
        planner: the run's planner (its method decides the kind; its resumed observations fix it).
        params: the explorer's parameters (``max_particles``, ``seed``).

    Attributes:
        kind: what the method's GP trains on (:attr:`~uncertain_bo.planner.Planner.input_kind`): ``'target'``,
            ``'gaussian'`` or ``'samples'``.
        samples: ``kind == 'samples'`` (empirical location distributions are kept as such).
        stored_particles: the run's kind once decided: None (nothing stored yet), 0 (Gaussian) or the particle
            count of its empirical locations.
    """

    def __init__(self, planner: Planner, params: dict[str, Any]):
        self.params = params
        self.rng = np.random.default_rng(np.random.SeedSequence([int(params['seed']), 0x9A27]))
        self.kind = planner.input_kind
        self.samples = self.kind == 'samples'
        self.stored_particles = self._journal_particles(planner)

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
        count (equal weights), or dropped when the run stores Gaussians."""
        m = self.wanted_particles()
        if m is None:
            return replace(pose, samples=None, weights=None)
        return replace(pose, samples=resample_particles(pose.samples, pose.weights, m, self.rng), weights=None)

    def location(self, pose: PoseEstimate, warn: bool = True) -> LocationDistributions:
        """The location distribution stored for ``pose`` (batch of 1); ``warn``: log when a pose without particles
        becomes draws of its Gaussian in a run of particles (not for a revised pose, which never has any)."""
        gaussian = Gaussian(torch.as_tensor(pose.xy, dtype=DTYPE).reshape(1, 2),
                            torch.as_tensor(psd_projection(pose.cov), dtype=DTYPE).reshape(1, 2, 2))
        m = self.wanted_particles()
        if m is None or (self.stored_particles is None and pose.samples is None):
            return gaussian
        if pose.samples is not None:
            x = pose.samples
            if len(x) != m or pose.weights is not None:   # (poses are reduced on arrival already)
                x = resample_particles(x, pose.weights, m, self.rng)
            return Empirical(torch.as_tensor(x, dtype=DTYPE).reshape(1, m, 2))
        if warn:
            log.warning('pose without a particle cloud in a run of empirical locations: storing %d draws of its '
                        'Gaussian', m)
        return Empirical(gaussian.sample(m, torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))))

    @staticmethod
    def describe(pose: PoseEstimate, location: LocationDistributions) -> str:
        """Where ``location`` came from, for the journal (``'pose -> gaussian'``, ``'particle cloud -> empirical
        (160 particles)'``, ...)."""
        return ('particle cloud' if pose.samples is not None else 'pose') + (
            f' -> empirical ({location.samples.shape[1]} particles)' if isinstance(location, Empirical)
            else ' -> gaussian')

    def stored(self, location: LocationDistributions) -> None:
        """Record that ``location`` was stored: the first stored location fixes the run's kind."""
        if self.stored_particles is None:
            self.stored_particles = location.samples.shape[1] if isinstance(location, Empirical) else 0

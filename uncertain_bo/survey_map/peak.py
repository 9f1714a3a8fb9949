r"""The robust peak of a posterior map, its value with a credible interval, and a region that holds it.

The **robust objective** is :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]`,
:math:`\boldsymbol\xi \sim \mathcal N(0, \Sigma_e)`: the reading a rover sent to :math:`\mathbf x` expects, given
that it lands there with the execution noise :math:`\Sigma_e` (for a CSV survey the stated GNSS error: a vessel
returning to a place with the same receiver; for a run, its ``execution_noise_std``). Its posterior is the shared
GP's over the planner's candidate distributions :math:`\mathcal N(\mathbf x, \Sigma_e)` (closed form, the expected SE
kernel), the same quantity the planner's recommendations maximise.

- **Peak**: the covered cell with the largest posterior mean of :math:`g` (the planner's ``area_mean`` rule on the
  map's grid, to the resolution of one cell).
- **Value**: the posterior mean of :math:`g` there and the central ``credibility`` interval
  :math:`\mu \pm z\sigma` of its Gaussian posterior marginal (exact for the GP).
- **Region**: the smallest set of covered cells that holds :math:`\operatorname{argmax}_{\text{cells}} g` with
  posterior probability at least ``probability``. Method: ``samples`` joint draws of :math:`g` over the candidate
  cells from the model's joint posterior (:meth:`~uncertain_bo.models.DistributionGP.posterior` over the candidate
  distributions: the exact or sparse posterior the map uses), the argmax of each draw counted per cell, and the cells
  taken in decreasing count until their share reaches ``probability``. The candidate cells are those whose upper bound
  :math:`\mu + 5\sigma` reaches the largest lower bound :math:`\max(\mu - 5\sigma)`, at most ``max_candidates`` of
  them (the highest upper bounds; ``truncated`` when more qualified). The cells left out hold the argmax with
  probability at most

  .. math::
      \epsilon = \min_t \Big[\sum_{c\ \text{left out}} \bar\Phi\Big(\frac{t - \mu_c}{\sigma_c}\Big)
      + \Phi\Big(\frac{t - \mu_b}{\sigma_b}\Big)\Big]

  (``excluded_bound``; a union bound: a left-out cell wins only if it exceeds :math:`t` or the best-mean cell
  :math:`b` falls below it), so the region holds the argmax over all covered cells with probability at least its
  sampled mass minus :math:`\epsilon`. Monte Carlo error of the sampled mass: about :math:`\sqrt{p(1 - p)/S}`.

Joint draws rather than the pathwise sample paths of :mod:`uncertain_bo.models.sample_paths`: those condition on
every reading exactly (:math:`O(n^3)`), which a survey of :math:`10^4`-:math:`10^5` readings cannot afford, while the
joint posterior over a few thousand cells is the map's own (sparse) posterior.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .posterior import CHUNK, PosteriorMap

__all__ = ['Peak', 'robust_peak', 'region_area', 'PRUNE_Z']

#: the pruning bound, in posterior standard deviations (module docstring)
PRUNE_Z = 5.0


@dataclass
class Peak:
    """The robust peak of a map (module docstring).

    Attributes:
        xy: ``(2,)`` map coordinates of the peak cell's centre, m.
        cell: ``(row, col)`` of the peak cell.
        mean, std: posterior mean and standard deviation of :math:`g` there (the survey's units).
        interval: the central ``credibility`` interval ``(low, high)``.
        credibility: its probability.
        argmax_probability: the share of the joint draws whose argmax is the peak cell.
        region_cells: ``(k, 2)`` ``(row, col)`` of the region's cells, most probable first.
        region_probability: the stated probability the region holds the argmax.
        region_mass: the share of the draws whose argmax is in it (>= ``region_probability``).
        candidates: cells the joint draws were over; samples: the draws.
        truncated: more cells qualified as candidates than ``max_candidates``; excluded_bound: the union bound of
            the module docstring on the probability that a cell left out holds the argmax.

    Example:
        A warm spring at (20, 30) m in a 50 m x 50 m lake, temperature read every 10 m: the robust peak of the map,
        with its 95 % credible interval and the cells that hold the argmax with 95 % probability:

        >>> from uncertain_bo.survey_map.posterior import MapSettings, fit_map
        >>> from uncertain_bo.survey_map.sources import Survey
        >>> xy = 10.0 * np.stack(np.meshgrid(range(6), range(6)), -1).reshape(-1, 2)     # m
        >>> celsius = 12 + 4 * 2.0 ** (-((xy - [20.0, 30.0]) ** 2).sum(-1) / 400)
        >>> temperature = Survey.from_points(xy, celsius, location_std=1.0, value_name='celsius')
        >>> peak = robust_peak(fit_map(temperature, MapSettings(resolution=5.0)), samples=200)
        >>> peak.xy.tolist(), round(peak.mean, 2), [round(v, 1) for v in peak.interval]    # °C (readings' top: 16)
        ([20.0, 30.0], 15.96, [15.9, 16.0])
        >>> peak.region_contains(*peak.cell), peak.region_mass >= peak.region_probability
        (True, True)
    """

    xy: np.ndarray
    cell: tuple[int, int]
    mean: float
    std: float
    interval: tuple[float, float]
    credibility: float
    argmax_probability: float
    region_cells: np.ndarray
    region_probability: float
    region_mass: float
    candidates: int
    samples: int
    truncated: bool
    excluded_bound: float
    region_probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def region_contains(self, row: int, col: int) -> bool:
        """Whether cell ``(row, col)`` is in the region."""
        return bool(np.any((self.region_cells[:, 0] == row) & (self.region_cells[:, 1] == col)))


def robust_peak(pmap: PosteriorMap, credibility: float = 0.95, probability: float = 0.95, samples: int = 1000,
                max_candidates: int = 3000, seed: int = 0) -> Peak:
    """The robust peak of ``pmap`` among its covered cells, with a credible interval and region (module docstring).

    Args:
        pmap: the fitted map.
        credibility: probability of the value's credible interval, in (0, 1).
        probability: the probability the region must hold the argmax with, in (0, 1).
        samples: joint posterior draws.
        max_candidates: most cells drawn jointly.
        seed: seed of the draws.

    Raises:
        ValueError: a probability outside (0, 1), fewer than 100 samples, or no covered cell.
    """
    from scipy.stats import norm

    from ..distributions import DTYPE
    from ..models.prediction import safe_cholesky

    for name, p in (('--credibility', credibility), ('--region-probability', probability)):
        if not 0.0 < p < 1.0:
            raise ValueError(f'{name} must be a probability strictly between 0 and 1, got {p!r}')
    if samples < 100:
        raise ValueError(f'--samples must be at least 100 joint draws, got {samples}')
    grid, planner = pmap.grid, pmap.planner
    flat = np.flatnonzero(pmap.covered.ravel())
    if flat.size == 0:
        raise ValueError('no cell of the map is covered by a reading; give a larger --coverage')
    cells = grid.centres()[flat]
    mean, std = np.empty(len(cells)), np.empty(len(cells))
    for s in range(0, len(cells), CHUNK):
        m, sd = planner.predict(torch.as_tensor(cells[s:s + CHUNK], dtype=DTYPE))
        mean[s:s + CHUNK], std[s:s + CHUNK] = m.numpy(), sd.numpy()
    best = int(np.argmax(mean))
    upper = mean + PRUNE_Z * std
    cand = np.flatnonzero(upper >= np.max(mean - PRUNE_Z * std))
    truncated = cand.size > max_candidates
    if truncated:
        cand = cand[np.argsort(-upper[cand], kind='stable')[:max_candidates]]
        if best not in cand:
            cand[-1] = best
    left_out = np.ones(flat.size, dtype=bool)
    left_out[cand] = False
    excluded_bound = _excluded_bound(mean[left_out], std[left_out], mean[best], std[best])
    with torch.no_grad():
        post = planner.model.posterior(planner.candidates(torch.as_tensor(cells[cand], dtype=DTYPE)))
        mu = post.mean.reshape(-1)
        lower = safe_cholesky(post.distribution.covariance_matrix.reshape(cand.size, cand.size))
        gen = torch.Generator(device=mu.device).manual_seed(int(seed))
        winners = torch.empty(0, dtype=torch.long)
        for s in range(0, samples, 256):
            z = torch.randn(cand.size, min(256, samples - s), generator=gen, dtype=mu.dtype, device=mu.device)
            winners = torch.cat([winners, (mu[:, None] + lower @ z).argmax(dim=0).cpu()])
    counts = np.bincount(winners.numpy(), minlength=cand.size) / samples
    order = np.argsort(-counts, kind='stable')
    cum = np.cumsum(counts[order])
    k = min(int(np.searchsorted(cum, probability - 1e-12)) + 1, cand.size)
    region = flat[cand[order[:k]]]
    rows, cols = np.divmod(region, grid.nx)
    peak_flat = int(flat[best])
    z = float(norm.ppf(0.5 + credibility / 2))
    m, sd = float(mean[best]), float(std[best])
    return Peak(xy=grid.centres()[peak_flat], cell=tuple(int(v) for v in divmod(peak_flat, grid.nx)), mean=m, std=sd,
                interval=(m - z * sd, m + z * sd), credibility=credibility,
                argmax_probability=float(counts[np.flatnonzero(cand == best)[0]]),
                region_cells=np.column_stack([rows, cols]), region_probability=probability,
                region_mass=float(cum[k - 1]), candidates=int(cand.size), samples=int(samples), truncated=truncated,
                excluded_bound=excluded_bound, region_probabilities=counts[order[:k]])


def _excluded_bound(mean: np.ndarray, std: np.ndarray, best_mean: float, best_std: float) -> float:
    """The union bound of the module docstring for cells with posterior ``mean``, ``std`` ``(k,)`` left out of the
    draws, against the best-mean cell, minimised over 400 thresholds ``t``; 0 when no cell is left out."""
    from scipy.stats import norm

    if mean.size == 0:
        return 0.0
    t = best_mean + best_std * np.linspace(-10.0, 0.0, 400)
    std = np.maximum(std, 1e-300)
    tail = np.zeros_like(t)
    for s in range(0, mean.size, 20_000):      # 400 x 20,000 at a time
        tail += norm.sf((t[:, None] - mean[None, s:s + 20_000]) / std[None, s:s + 20_000]).sum(axis=1)
    return float(min(1.0, np.min(tail + norm.cdf((t - best_mean) / max(best_std, 1e-300)))))


def region_area(peak: Peak, resolution: float) -> float:
    """Area of the peak's region, m²."""
    return float(len(peak.region_cells)) * resolution * resolution

r"""Keep-out zones: places where the planner must not send the rover again.

A target that could not be measured (the sensor stayed silent, or every reading there was refused, after all
retries) is not proposed again: the explorer adds a **keep-out zone**, a ball of radius :math:`r` around the
target, and every later decision of every method respects it. The mechanism is one hook after the method's
decision (:meth:`KeepOut.admissible`, called by :meth:`~uncertain_bo.planning.planner.Planner.suggest`): a proposed
target inside a zone is moved to the **nearest admissible point** of the search box, i.e. the nearest point of
the box outside every zone. So the initial design, a survey's planned tour, the acquisition maximiser and
BoTorch's loop are all covered by the same rule, and no method needs to know about zones:

- an initial-design or survey point inside a zone is measured just outside it (the survey keeps its tour);
- the acquisition maximiser's choice inside a zone is measured at the zone's edge, nearest to it. Its readings
  there lower the posterior variance inside the zone as well, so a UCB-type acquisition stops pulling towards
  the spot; if the edge cannot be measured either, its own zone extends the first.

The default radius (:func:`default_radius`) is tied to the execution noise: twice the largest
execution-noise standard deviation (a rover sent within :math:`2\sigma` of the failed target would likely stop
on the same spot), at least the arrival tolerance.

**Pending targets** (decided, not yet measured: another rover's, or an earlier target of the same batch) are
temporary zones of the same hook, for one decision and not journaled (:meth:`KeepOut.around`): a rover is never
sent within :math:`r` of a place another rover is driving to, whatever the method proposed (GP-BUCB's fantasised
reading keeps the posterior mean there, so where the mean is high UCB can pick next to it). The radius is the
planner's ``pending_radius``, by default :func:`noise_radius`: twice the largest standard deviation of the
execution-noise model at the pending target (the keep-out default without the arrival tolerance; with the
explorer's defaults 1.5 m). Where those zones leave no admissible point, only the keep-out zones apply.

Zones are journaled (``{'type': 'keep_out', 'index', 'centre', 'radius', 'reason', 'wall_time'}`` records) and
rebuilt from the journal on resume (:meth:`KeepOut.from_records`), so a restarted mission keeps them and does not
re-send a pending target that lies in one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import torch
from torch import Tensor

if TYPE_CHECKING:
    from ..distributions import ExecutionNoise

__all__ = ['KeepOut', 'KeepOutZone', 'NoAdmissibleTargetError', 'default_radius', 'noise_radius', 'RING_POINTS']

#: candidate points per zone boundary when searching for the nearest admissible point (2-D: spacing
#: 2 pi r / RING_POINTS, 2.6 cm for r = 1.5 m); higher dimensions use ``RING_POINTS * d`` directions
RING_POINTS = 360
#: relative margin by which a moved target lies outside the zone it was moved out of (round-off safety)
_MARGIN = 1e-6


class NoAdmissibleTargetError(RuntimeError):
    """Every point of the search box lies in a keep-out zone: there is nothing left to propose.

    Example:
        >>> import torch
        >>> keep_out = KeepOut()
        >>> zone = keep_out.add(torch.tensor([5.0, 5.0]), radius=20.0, reason='flooded')
        >>> try:
        ...     keep_out.admit([torch.tensor([1.0, 1.0])], None, lambda c: torch.zeros(len(c)),
        ...                    torch.tensor([[0.0, 0.0], [10.0, 10.0]]))
        ... except NoAdmissibleTargetError as exc:
        ...     print(exc)
        no target left: the 1 keep-out zones cover the search bounds [[0.0, 0.0], [10.0, 10.0]]
    """


@dataclass(frozen=True)
class KeepOutZone:
    """A ball the planner does not propose targets in.

    Attributes:
        centre: ``(d,)`` centre in target coordinates (m in the map frame on a rover).
        radius: radius, same unit (> 0).
        index: the measurement index the failed target was for.
        reason: why it was kept out (one line, for the journal and the diagnostics).

    Example:
        >>> import torch
        >>> KeepOutZone(torch.tensor([3.0, 4.0]), 1.5, index=7, reason='goal timed out').record()
        {'type': 'keep_out', 'index': 7, 'centre': [3.0, 4.0], 'radius': 1.5, 'reason': 'goal timed out'}
    """

    centre: Tensor
    radius: float
    index: int = -1
    reason: str = ''

    def record(self) -> dict[str, Any]:
        """The zone's journal record (without ``wall_time``)."""
        return {'type': 'keep_out', 'index': int(self.index), 'centre': self.centre.tolist(),
                'radius': float(self.radius), 'reason': self.reason}


def default_radius(execution_noise_std: Sequence[float], xy_goal_tolerance: float = 0.0) -> float:
    """The keep-out radius when none is configured: ``max(2 max(execution_noise_std), xy_goal_tolerance)``, m."""
    return max(2.0 * max(float(s) for s in execution_noise_std), float(xy_goal_tolerance))


def noise_radius(execution_noise: 'ExecutionNoise', points: Tensor) -> Tensor:
    """``(k,)`` twice the largest standard deviation of ``execution_noise`` at each of ``points`` ``(k, d)``
    (:func:`default_radius` of the model there; the covariance of its location distributions, moment-matched for a
    sampled model), in the points' unit; 0 where the model has no noise."""
    cov = execution_noise(points).covariance.to(points)
    return 2.0 * torch.linalg.eigvalsh(cov).amax(-1).clamp_min(0.0).sqrt()


class KeepOut:
    """The keep-out zones of one planner, and the nearest admissible target.

    Args:
        zones: initial zones (e.g. from a journal).

    Example:
        A target inside a zone is moved to the nearest admissible point of the search box:

        >>> import torch
        >>> keep_out = KeepOut()
        >>> zone = keep_out.add(torch.tensor([5.0, 5.0]), radius=1.0, reason='goal timed out')
        >>> bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]])
        >>> keep_out.admissible(torch.tensor([5.5, 5.0]), bounds)
        tensor([6.0000, 5.0000])
        >>> keep_out.inside(torch.tensor([[5.2, 5.0], [8.0, 8.0]])).tolist()
        [True, False]
    """

    def __init__(self, zones: Iterable[KeepOutZone] = ()):
        self.zones: list[KeepOutZone] = list(zones)

    def __len__(self) -> int:
        return len(self.zones)

    def add(self, centre: Tensor, radius: float, index: int = -1, reason: str = '') -> KeepOutZone:
        """Add a zone of ``radius`` around ``centre`` ``(d,)``.

        Raises:
            ValueError: a non-positive or non-finite radius, or a non-finite centre.
        """
        centre = torch.as_tensor(centre).detach().reshape(-1).clone()
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f'keep-out radius must be a finite number > 0, got {radius!r}')
        if not torch.isfinite(centre).all():
            raise ValueError(f'keep-out centre must be finite, got {centre.tolist()}')
        zone = KeepOutZone(centre, float(radius), int(index), reason)
        self.zones.append(zone)
        return zone

    def around(self, centres: Tensor, radii: Tensor, reason: str = 'pending') -> 'KeepOut':
        """A new :class:`KeepOut`: these zones and a ball of radius ``radii[i]`` around each of ``centres`` ``(k, d)``
        (the radii ``(k,)``; a ball of radius 0 is left out). Temporary zones (pending targets): nothing is journaled
        and this object is unchanged.

        Raises:
            ValueError: a non-finite centre or radius.
        """
        out = KeepOut(self.zones)
        for centre, radius in zip(torch.as_tensor(centres).reshape(len(radii), -1), radii.tolist()):
            if radius != 0.0:
                out.add(centre, radius, reason=reason)
        return out

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], dim: int) -> 'KeepOut':
        """The zones of a journal's ``keep_out`` records (malformed ones are skipped: a journal written by a
        crashed or foreign process must not stop a resume)."""
        out = cls()
        for r in records:
            if r.get('type') != 'keep_out':
                continue
            try:
                centre = torch.tensor([float(v) for v in r['centre']], dtype=torch.float64)
                if centre.numel() != dim:
                    continue
                out.add(centre, float(r['radius']), int(r.get('index', -1)), str(r.get('reason', '')))
            except (KeyError, TypeError, ValueError):
                continue
        return out

    def inside(self, points: Tensor) -> Tensor:
        """``(q,)`` bool: which of ``points`` ``(q, D)`` lie inside a zone (strictly; on the first ``d``
        coordinates, ``d`` the zones' dimension, so joint (x, w) decision points work too)."""
        points = torch.as_tensor(points)
        mask = torch.zeros(points.shape[:-1], dtype=torch.bool, device=points.device)
        for z in self.zones:
            c = z.centre.to(points)
            d = c.numel()
            mask |= (points[..., :d] - c).norm(dim=-1) < z.radius
        return mask

    def admit(self, proposed: list[Tensor], pending: Tensor | None, radii: Callable[[Tensor], Tensor],
              bounds: Tensor, apart: bool = True) -> list[Tensor]:
        """The targets sent for a method's ``proposed`` ones ``(D,)`` in decision order (one rule for every method):
        each outside these zones and the discs of radius ``radii(centres (k, d)) -> (k,)`` around the ``pending``
        targets ``(p, D)`` and, with ``apart`` (every pick is sent), around the picks before it, or the nearest point
        of ``bounds`` ``(2, D)`` that is (:meth:`admissible`; only these zones where those discs leave none); a target
        not moved is the proposed object itself. Without ``apart`` (a route horizon's look-ahead: only the route's
        first stop is sent) the picks are not kept apart from each other.

        Raises:
            NoAdmissibleTargetError: these zones cover ``bounds``.
        """
        d = self.zones[0].centre.numel() if self.zones else bounds.shape[-1]
        exclusion = self
        if pending is not None:
            exclusion = exclusion.around(pending[:, :d], radii(pending[:, :d]))
        out = []
        for j, target in enumerate(proposed):
            moved = exclusion.admissible(target, bounds)
            if moved is None:
                moved = self.admissible(target, bounds)
            if moved is None:
                raise NoAdmissibleTargetError(f'no target left: the {len(self)} keep-out zones cover the '
                                              f'search bounds {bounds.tolist()}')
            out.append(moved)
            if apart and j + 1 < len(proposed):     # the next picks keep away from this one, which is sent too
                place = moved[:d].reshape(1, d)
                exclusion = exclusion.around(place, radii(place))
        return out

    def admissible(self, target: Tensor, bounds: Tensor) -> Tensor | None:
        """``target`` itself (the same object) when it lies outside every zone, else the nearest point of the box
        ``bounds`` outside every zone; None when none is found (the zones cover the box).

        The nearest point lies on a zone boundary (or is ``target``): candidates are ``target``'s radial
        projection onto each zone's sphere and :data:`RING_POINTS` points spread over it, moved into the box,
        filtered for admissibility; the nearest one wins (exact for one zone, within the ring spacing where
        zones overlap).

        Args:
            target: ``(D,)`` proposed point (the first ``d`` coordinates are the target).
            bounds: ``(2, D)`` the decision box.
        """
        if not self.zones or not bool(self.inside(torch.as_tensor(target).reshape(1, -1))[0]):
            return target                       # the same object: the caller can tell it was not moved
        target = torch.as_tensor(target).reshape(-1)
        bounds = torch.as_tensor(bounds).to(target)
        d = self.zones[0].centre.numel()
        dirs = _directions(d, RING_POINTS).to(target)
        cands = []
        for z in self.zones:
            c = z.centre.to(target)
            r = z.radius * (1.0 + _MARGIN) + 1e-12
            off = target[:d] - c
            norm = float(off.norm())
            radial = off / norm if norm > 0 else dirs[:1]
            ring = c + r * torch.cat([radial.reshape(1, -1), dirs])
            full = target.expand(ring.shape[0], -1).clone()
            full[:, :d] = ring
            cands.append(full)
        cands = torch.cat(cands)
        cands = torch.minimum(torch.maximum(cands, bounds[0]), bounds[1])
        ok = ~self.inside(cands)
        if not bool(ok.any()):
            return None
        cands = cands[ok]
        best = int(torch.argmin((cands - target).norm(dim=-1)))
        return cands[best].clone()


def _directions(d: int, n: int) -> Tensor:
    """``(m, d)`` unit directions: ``n`` evenly spaced angles in 2-D, else ``n * d`` fixed quasi-random ones."""
    if d == 1:
        return torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    if d == 2:
        a = torch.arange(n, dtype=torch.float64) * (2.0 * math.pi / n)
        return torch.stack([a.cos(), a.sin()], dim=-1)
    g = torch.Generator().manual_seed(0x6E09)
    v = torch.randn(n * d, d, generator=g, dtype=torch.float64)
    return v / v.norm(dim=-1, keepdim=True)

r"""Survey baselines: what a field engineer does instead of Bayesian optimisation.

- ``lawnmower``: a boustrophedon grid with as many cells as the measurement budget (30 → 6 × 5 on a square
  area), one target per cell centre, rows swept in alternating directions from the corner nearest the start.
  The whole grid is shifted by a seeded uniform offset of up to half a cell in each axis, so seeds differ
  (cell centres stay inside the bounds); ``lawnmower_fixed`` is the unshifted grid (the same targets for
  every seed).
- ``random``: uniform targets in the bounds (seeded), visited as a greedy nearest-neighbour tour from the
  start (a random order would drive much farther than anyone would).

Both decide without looking at the readings. Their recommendation is the planner's own rule on the same
observations: a uGP-UCB GP (expected-SE kernel on the location distributions) fitted by marginal likelihood,
best posterior mean of :math:`\hat P_{\mathbf x}` over past targets. The benchmarks also score the rule
"the target with the highest reading" for every method.

The planned targets follow from the planner's bounds, ``budget``, ``seed`` and ``start`` alone, so a run
resumed from its journal decides the same targets. Past the budget (``max_measurements`` raised at run time)
the planner's own rule decides.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from ..planning.route import nearest_neighbour_tour
from .method import DecisionContext, Proposal, UCBMethod, register

__all__ = ['Survey', 'Lawnmower', 'LawnmowerFixed', 'RandomSurvey', 'lawnmower_targets', 'random_tour', 'grid_shape']


def grid_shape(n: int, width: float, height: float) -> tuple[int, int]:
    """``(columns, rows)`` of a grid of at least ``n`` cells over a ``width`` x ``height`` box: fewest unused
    cells first, then cells closest to square (``30`` on a square → ``(6, 5)``).

    Raises:
        ValueError: ``n < 1`` or a non-positive side.
    """
    if n < 1 or not (width > 0 and height > 0):
        raise ValueError(f'grid_shape needs n >= 1 and positive sides, got n={n}, {width} x {height}')
    best = None
    for cols in range(1, n + 1):
        rows = math.ceil(n / cols)
        cell_aspect = (width / cols) / (height / rows)
        key = (cols * rows - n, round(abs(math.log(cell_aspect)), 9), -cols)
        if best is None or key < best[0]:
            best = (key, cols, rows)
    return best[1], best[2]


def lawnmower_targets(bounds: Tensor, n: int, start: Tensor | None = None,
                      shift: Tensor | None = None) -> Tensor:
    """Boustrophedon survey: ``n`` cell centres of a :func:`grid_shape` grid, rows (constant y) swept in
    alternating x direction, starting from the corner nearest ``start``.

    Args:
        bounds: ``(2, d=2)`` search box (m).
        n: number of targets (the measurement budget).
        start: ``(2,)`` start position (default: the lower-left corner).
        shift: ``(2,)`` offset of the whole grid in cells, each in ``[-0.5, 0.5]`` (default none).

    Returns:
        ``(n, 2)`` targets in visiting order, inside ``bounds``; dtype and device of ``bounds``.

    Raises:
        ValueError: ``bounds`` is not 2-D.
    """
    if bounds.shape != (2, 2):
        raise ValueError(f'lawnmower surveys a 2-D area; bounds have shape {tuple(bounds.shape)}')
    lo, hi = bounds[0], bounds[1]
    span = hi - lo
    cols, rows = grid_shape(n, float(span[0]), float(span[1]))
    cell = span / torch.tensor([cols, rows], dtype=bounds.dtype, device=bounds.device)
    off = torch.zeros(2, dtype=bounds.dtype, device=bounds.device) if shift is None else shift.to(bounds)
    xs = lo[0] + (torch.arange(cols, dtype=bounds.dtype, device=bounds.device) + 0.5 + off[0]) * cell[0]
    ys = lo[1] + (torch.arange(rows, dtype=bounds.dtype, device=bounds.device) + 0.5 + off[1]) * cell[1]
    start = lo if start is None else torch.as_tensor(start).to(bounds).reshape(-1)
    # corner nearest the start: sweep rows from that y edge, the first row from that x edge
    ys = ys if (start[1] - ys[0]).abs() <= (start[1] - ys[-1]).abs() else ys.flip(0)
    xs = xs if (start[0] - xs[0]).abs() <= (start[0] - xs[-1]).abs() else xs.flip(0)
    pts = []
    for j, y in enumerate(ys):
        row = xs if j % 2 == 0 else xs.flip(0)
        pts += [torch.stack([x, y]) for x in row]
    return torch.minimum(torch.maximum(torch.stack(pts[:n]), lo), hi)


def random_tour(bounds: Tensor, n: int, seed: int, start: Tensor | None = None) -> Tensor:
    """``n`` uniform targets in ``bounds`` ``(2, d)`` (seeded), as a nearest-neighbour tour from ``start``
    (default: the centre of the box). Returns ``(n, d)`` on the device and dtype of ``bounds``."""
    gen = torch.Generator(device=bounds.device).manual_seed(int(seed))
    unit = torch.rand(n, bounds.shape[1], generator=gen, dtype=bounds.dtype, device=bounds.device)
    pts = bounds[0] + unit * (bounds[1] - bounds[0])
    start = bounds.mean(0) if start is None else start
    return pts[nearest_neighbour_tour(pts, start)]


class Survey(UCBMethod):
    """Targets planned once from the bounds, budget, seed and start (see the module docstring); past the
    budget, and for the recommendation, the uGP-UCB rules on the same observations.

    Example:
        A survey plans its tour from the measurement budget, so it needs one:

        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> bounds = torch.tensor([[0.0, 0.0], [40.0, 20.0]], dtype=torch.float64)            # m
        >>> noise = GaussianExecutionNoise.isotropic(1.0, 2)                              # 1 m std
        >>> planner = Planner(bounds, noise, method='lawnmower', budget=8, seed=0)
        >>> Planner(bounds, noise, method='lawnmower').suggest()
        Traceback (most recent call last):
        ...
        ValueError: lawnmower needs the measurement budget: construct the Planner with budget=max_measurements
        >>> planner.suggest().shape, planner.decisions[-1].phase
        (torch.Size([2]), 'survey')
    """

    kind = ''
    baseline = True
    uses_beta = False
    plans_route = True

    def __init__(self):
        self._plan: Tensor | None = None

    def plan(self, ctx: DecisionContext) -> Tensor:
        """The survey's ``(budget, d)`` targets in visiting order.

        Raises:
            ValueError: the planner has no ``budget`` (the survey needs the number of measurements).
        """
        if self._plan is None:
            self.check_space(ctx.bounds)
            if ctx.budget is None:
                raise ValueError(f'{self.name} needs the measurement budget: construct the Planner with '
                                 'budget=max_measurements')
            bounds, seed = ctx.bounds, ctx.run_seed
            start = None if ctx.start is None else ctx.start.to(bounds)
            if self.kind == 'random':
                self._plan = random_tour(bounds, ctx.budget, seed, start)
            else:
                shift = None
                if self.kind == 'lawnmower':
                    gen = torch.Generator(device=bounds.device).manual_seed(int(seed))
                    shift = torch.rand(2, generator=gen, dtype=bounds.dtype, device=bounds.device) - 0.5
                self._plan = lawnmower_targets(bounds, ctx.budget, start, shift)
        return self._plan

    def check_space(self, bounds: Tensor) -> None:
        """A boustrophedon grid covers a 2-D area (a random tour any box).

        Raises:
            ValueError: a lawnmower survey of a space that is not 2-D.
        """
        if self.kind != 'random' and bounds.shape[-1] != 2:
            raise ValueError(f'{self.name} surveys a 2-D area; the decision space is {bounds.shape[-1]}-D')

    def decide_one(self, ctx: DecisionContext) -> Proposal:
        plan = self.plan(ctx)
        if ctx.index < len(plan):
            return Proposal(plan[ctx.index].clone(), 'survey')
        return super().decide_one(ctx)


@register
class Lawnmower(Survey):
    """Survey baseline: boustrophedon grid, one cell per measurement, seeded shift of up to half a cell.

    Example:
        The first two cells of an 8-measurement boustrophedon tour (shifted by the seed):

        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> bounds = torch.tensor([[0.0, 0.0], [40.0, 20.0]], dtype=torch.float64)            # m
        >>> noise = GaussianExecutionNoise.isotropic(1.0, 2)                              # 1 m std
        >>> planner = Planner(bounds, noise, method='lawnmower', budget=8, seed=0)
        >>> tour = planner.method_object.plan(planner.snapshot())           # 8 cells of 10 m x 10 m
        >>> [round(step, 6) for step in (tour[1] - tour[0]).tolist()]      # one cell apart, wherever the shift
        [10.0, 0.0]
    """

    name = kind = 'lawnmower'
    description = 'survey baseline: boustrophedon grid, one cell per measurement, seeded shift of up to half a cell'


@register
class LawnmowerFixed(Survey):
    """Survey baseline: boustrophedon grid, one cell per measurement, unshifted.

    Example:
        The first two cells of an 8-measurement boustrophedon tour:

        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> bounds = torch.tensor([[0.0, 0.0], [40.0, 20.0]], dtype=torch.float64)            # m
        >>> noise = GaussianExecutionNoise.isotropic(1.0, 2)                              # 1 m std
        >>> planner = Planner(bounds, noise, method='lawnmower_fixed', budget=8, seed=0)
        >>> planner.method_object.plan(planner.snapshot())[:2].tolist()   # centres of 10 m x 10 m cells
        [[5.0, 5.0], [15.0, 5.0]]
    """

    name = 'lawnmower_fixed'
    kind = 'lawnmower_fixed'
    description = 'survey baseline: boustrophedon grid, one cell per measurement, unshifted'


@register
class RandomSurvey(Survey):
    """Survey baseline: uniform random targets visited as a nearest-neighbour tour.

    Example:
        Uniform random targets in the box, visited as a nearest-neighbour tour:

        >>> import torch
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> bounds = torch.tensor([[0.0, 0.0], [40.0, 20.0]], dtype=torch.float64)            # m
        >>> noise = GaussianExecutionNoise.isotropic(1.0, 2)                              # 1 m std
        >>> planner = Planner(bounds, noise, method='random', budget=8, seed=0)
        >>> tour = planner.method_object.plan(planner.snapshot())           # the 8 targets in visiting order
        >>> tour.shape, bool(((bounds[0] <= tour) & (tour <= bounds[1])).all())
        (torch.Size([8, 2]), True)
    """

    name = kind = 'random'
    description = 'survey baseline: uniform random targets visited as a nearest-neighbour tour'

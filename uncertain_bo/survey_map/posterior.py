r"""The posterior map of a survey: the project's shared GP fitted to every reading, evaluated on a grid.

The readings go into the planner's model exactly as a rover's en-route readings do
(:meth:`Planner.observe(None, location, y, variance) <uncertain_bo.planning.planner.Planner.observe>`: each with its
location distribution :math:`\mathcal N(\mathbf x_i, \Sigma_i)` and reported variance), so the map is
:class:`~uncertain_bo.models.DistributionGP` with the expected SE kernel, each reading's input-induced noise
(``input_noise``), the hyperparameters fitted on at most ``fit_points`` readings (the planner's
``fit_max_points``: evenly spaced along the survey) and, beyond ``sparse_above`` readings, the sparse posterior (SGPR
on ``inducing_points`` inducing inputs chosen the same way; the planner's ``sparse_above`` and
``inducing_points``). Nothing here is a second GP.

The **grid** (:class:`Grid`) has square cells of ``resolution`` metres whose centres start at the south-west
corner of the points' bounding box (cell ``(row 0, col 0)``), so the GeoTIFF's pixel centres line up with the
points' own coordinates. A cell is **covered** (:func:`covered_cells`) when it lies inside the readings' convex hull
(or holds a reading) and a reading lies within ``coverage`` metres of its centre (default: the fitted lengthscale,
the distance over which the GP itself says a reading informs the map): the survey's own area, not the corners of its
bounding box nor an extrapolated trend beyond its edge. The GeoTIFF leaves the other cells empty (nodata) and the
peak is searched among the covered cells only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .sources import Survey, SurveyError

__all__ = ['Grid', 'MapSettings', 'PosteriorMap', 'fit_map', 'fitted_planner', 'covered_cells', 'CHUNK']

#: cells evaluated per batch (bounds the memory of a kernel block: CHUNK x inducing inputs)
CHUNK = 4096


@dataclass(frozen=True)
class Grid:
    """Square cells over a rectangle; row 0 is the south edge, column 0 the west edge.

    Attributes:
        x0, y0: centre of cell (row 0, col 0), m.
        resolution: cell side, m.
        nx, ny: columns and rows.

    Example:
        Cells of 10 m over soundings that span 0-55 m east and 0-30 m north; the first cell centre is the
        south-west corner:

        >>> import numpy as np
        >>> grid = Grid.around(np.array([[0.0, 0.0], [55.0, 30.0], [20.0, 12.0]]), resolution=10.0)
        >>> grid.shape, grid.extent(), grid.cell_of(20.0, 12.0), grid.cell_of(90.0, 0.0)
        ((4, 6), (0.0, 50.0, 0.0, 30.0), (1, 2), None)
    """

    x0: float
    y0: float
    resolution: float
    nx: int
    ny: int

    @classmethod
    def around(cls, xy: np.ndarray, resolution: float | None, max_cells: int = 4_000_000) -> 'Grid':
        """The grid whose first cell centre is the south-west corner of the points ``xy`` ``(n, 2)`` and whose
        cells cover them; ``resolution`` None: the longer side of their box over 200.

        Raises:
            ValueError: a resolution that is not a positive number, or one giving more than ``max_cells`` cells.
        """
        lo, hi = xy.min(axis=0), xy.max(axis=0)
        span = hi - lo
        if resolution is None:
            resolution = float(span.max()) / 200.0
        if not (math.isfinite(resolution) and resolution > 0):
            raise ValueError(f'--resolution must be a positive number of metres, got {resolution!r}')
        # the last centre is within half a cell of the farthest point (its cell holds it)
        nx, ny = (int(math.ceil(s / resolution - 0.5)) + 1 for s in span)
        if nx * ny > max_cells:
            raise ValueError(f'--resolution {resolution:g} m gives {nx} x {ny} cells over {span[0]:.0f} x '
                             f'{span[1]:.0f} m (more than {max_cells}); give a coarser resolution')
        return cls(float(lo[0]), float(lo[1]), float(resolution), nx, ny)

    @property
    def shape(self) -> tuple[int, int]:
        """``(ny, nx)``."""
        return self.ny, self.nx

    def centres(self) -> np.ndarray:
        """``(ny * nx, 2)`` cell centres, m, row-major from the south-west cell."""
        gx = self.x0 + self.resolution * np.arange(self.nx)
        gy = self.y0 + self.resolution * np.arange(self.ny)
        xx, yy = np.meshgrid(gx, gy)
        return np.column_stack([xx.ravel(), yy.ravel()])

    def cell_of(self, x: float, y: float) -> tuple[int, int] | None:
        """``(row, col)`` of the cell containing ``(x, y)`` m, or None outside the grid."""
        col = int(math.floor((x - self.x0) / self.resolution + 0.5))
        row = int(math.floor((y - self.y0) / self.resolution + 0.5))
        return (row, col) if 0 <= row < self.ny and 0 <= col < self.nx else None

    def extent(self) -> tuple[float, float, float, float]:
        """``(xmin, xmax, ymin, ymax)`` of the cell centres, m (a field grid's nodes)."""
        return (self.x0, self.x0 + self.resolution * (self.nx - 1), self.y0, self.y0 + self.resolution * (self.ny - 1))


@dataclass(frozen=True)
class MapSettings:
    """How a survey is fitted and gridded (``uncertain-bo map`` options).

    Attributes:
        resolution: cell side, m (None: the longer side of the points' box / 200).
        fit_points: readings the hyperparameter fit uses (the planner's ``fit_max_points``).
        sparse_above: beyond this many readings the posterior is sparse (the planner's ``sparse_above``).
        inducing_points: inducing inputs of the sparse posterior (the planner's ``inducing_points``).
        coverage: a cell is mapped when a reading lies within this many metres (None: the fitted lengthscale,
            the shorter of the two; 0: every cell).
        seed: seed of the planner (its fit's restarts).

    Example:
        ``--resolution 0.001`` over a 2 km survey would make billions of cells:

        >>> import numpy as np
        >>> settings = MapSettings(resolution=0.001, coverage=25.0)
        >>> Grid.around(np.array([[0.0, 0.0], [2000.0, 1500.0]]), settings.resolution)
        Traceback (most recent call last):
        ...
        ValueError: --resolution 0.001 m gives 2000001 x 1500001 cells over 2000 x 1500 m (more than 4000000); ...
        >>> Grid.around(np.array([[0.0, 0.0], [2000.0, 1500.0]]), MapSettings().resolution).resolution   # box / 200
        10.0
    """

    resolution: float | None = None
    fit_points: int = 500
    sparse_above: int = 1000
    inducing_points: int = 500
    coverage: float | None = None
    seed: int = 0


@dataclass
class PosteriorMap:
    """A fitted survey on its grid.

    Attributes:
        grid: the cells.
        mean, std: ``(ny, nx)`` posterior mean and standard deviation of the field :math:`f` at the cell centres
            (the survey's units), on every cell.
        covered: ``(ny, nx)`` cells within the coverage radius of a reading.
        coverage: that radius, m.
        planner: the fitted planner (its ``model`` is the shared GP; its ``candidates`` the robust objective's
            execution noise).
        sparse: whether the posterior is the sparse one.

    Example:
        Soundings every 10 m over a shoal at (30, 20) m (depth 10 m there), mapped on 2 m cells:

        >>> from uncertain_bo.survey_map.sources import Survey
        >>> xy = 10.0 * np.stack(np.meshgrid(range(6), range(6)), -1).reshape(-1, 2)     # m
        >>> soundings = Survey.from_points(xy, 10 - ((xy - [30.0, 20.0]) ** 2).sum(-1) / 250, location_std=1.0)
        >>> depth = fit_map(soundings, MapSettings(resolution=2.0))
        >>> depth.grid.shape, depth.sparse
        ((26, 26), False)
        >>> row, col = depth.grid.cell_of(30.0, 20.0)
        >>> round(float(depth.mean[row, col]), 1), bool(depth.std[row, col] < 0.1)     # m
        (10.1, True)
    """

    grid: Grid
    mean: np.ndarray
    std: np.ndarray
    covered: np.ndarray
    coverage: float
    planner: object
    sparse: bool

    def hyperparameters(self) -> dict:
        """The GP's fitted hyperparameters (lengthscales m, signal and noise variance in the survey's units²)."""
        return self.planner.model.hyperparameters()


def fitted_planner(survey: Survey, settings: MapSettings, execution_std: tuple[float, float]):
    """A planner over the survey's bounding box holding every reading, with its GP fitted.

    Args:
        survey: the readings.
        settings: fit and sparse settings.
        execution_std: per-axis std (m) of the execution noise of the robust objective (its ``candidates``).

    Raises:
        SurveyError: a reading the planner refuses (its validation message; nothing is mapped).
    """
    from ..distributions import DTYPE, Gaussian, GaussianExecutionNoise
    from ..planning.planner import InvalidObservationError, Planner

    lo, hi = survey.xy.min(axis=0), survey.xy.max(axis=0)
    planner = Planner(torch.tensor(np.stack([lo, hi]), dtype=DTYPE),
                      GaussianExecutionNoise.isotropic([float(s) for s in execution_std]), method='ugp_ucb',
                      n_initial=1, seed=settings.seed, fit_max_points=settings.fit_points,
                      sparse_above=settings.sparse_above, inducing_points=settings.inducing_points, input_noise=True)
    means = torch.as_tensor(survey.xy, dtype=DTYPE)
    covs = torch.as_tensor(survey.covariance, dtype=DTYPE)
    for i in range(survey.n):
        try:
            planner.observe(None, Gaussian(means[i:i + 1], covs[i:i + 1], validate=False), float(survey.value[i]),
                            float(survey.variance[i]))
        except InvalidObservationError as exc:
            raise SurveyError(f'{survey.source}: reading {i + 1} cannot be mapped ({exc})') from None
    planner.predict(means[:1])          # brings the model up to date: the fit, the sparse switch
    return planner


def fit_map(survey: Survey, settings: MapSettings = MapSettings(),
            execution_std: tuple[float, float] | None = None) -> PosteriorMap:
    """The posterior map of ``survey`` (module docstring).

    Args:
        survey: the readings.
        settings: grid, fit, sparse and coverage settings.
        execution_std: the robust objective's execution noise (default: the survey's own,
            :attr:`~uncertain_bo.survey_map.sources.Survey.execution_std`).

    Raises:
        ValueError: a bad resolution or coverage, or a reading the planner refuses.
    """
    from ..distributions import DTYPE

    if settings.coverage is not None and not (math.isfinite(settings.coverage) and settings.coverage >= 0):
        raise ValueError(f'--coverage must be a number of metres >= 0, got {settings.coverage!r}')
    grid = Grid.around(survey.xy, settings.resolution)
    planner = fitted_planner(survey, settings, execution_std or survey.execution_std)
    cells = grid.centres()
    mean, var = np.empty(len(cells)), np.empty(len(cells))
    with torch.no_grad():
        for s in range(0, len(cells), CHUNK):
            m, v = planner.model.marginals(torch.as_tensor(cells[s:s + CHUNK], dtype=DTYPE))
            mean[s:s + CHUNK], var[s:s + CHUNK] = m.numpy(), v.numpy()
    radius = settings.coverage
    if radius is None:
        radius = float(min(planner.model.hyperparameters()['lengthscale']))
    covered = covered_cells(grid, survey.xy, radius)
    return PosteriorMap(grid, mean.reshape(grid.shape), np.sqrt(var).reshape(grid.shape), covered, radius, planner,
                        planner.model.inducing is not None)


def covered_cells(grid: Grid, xy: np.ndarray, radius: float) -> np.ndarray:
    """``(ny, nx)`` cells inside the convex hull of the readings ``xy`` ``(n, 2)`` (or holding one) and within
    ``radius`` m of one; every cell when ``radius`` is 0."""
    from scipy.spatial import ConvexHull, Delaunay, cKDTree

    cells = grid.centres()
    if radius <= 0:
        return np.ones(grid.shape, dtype=bool)
    dist, _ = cKDTree(xy).query(cells, k=1)
    inside = Delaunay(xy[ConvexHull(xy).vertices]).find_simplex(cells) >= 0
    holds = dist <= grid.resolution / math.sqrt(2.0)         # the cell's own reading, on or beyond the hull
    return ((inside | holds) & (dist <= radius)).reshape(grid.shape)

"""How hard a field is to search: :func:`field_statistics` (what :meth:`Field.statistics
<uncertain_bo.sim.field.Field.statistics>` returns) measures its value range, how small the region near the robust
optimum is, and how wide its features are (e-folding lags of the autocorrelation of its values and slopes).
The measured properties of the named fields (:data:`~uncertain_bo.sim.field_spec.FIELD_NAMES`) come from here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .field import Field

__all__ = ['FieldStatistics', 'field_statistics']


def field_statistics(field: 'Field', cov=0.75 ** 2, regret: float = 0.1) -> 'FieldStatistics':
    """:meth:`Field.statistics <uncertain_bo.sim.field.Field.statistics>` of ``field`` (arguments, units and
    errors there)."""
    g = field.convolved(cov).grid()[2]
    gstar, gmed = float(g.max()), float(np.median(g))
    near = float(np.mean((gstar - g) <= regret * (gstar - gmed))) if gstar > gmed else 1.0
    nodes_x, nodes_y, values = field.grid()
    xs, ys = np.meshgrid(nodes_x, nodes_y)
    design = np.column_stack([xs.ravel(), ys.ravel(), np.ones(xs.size)])
    coef, *_ = np.linalg.lstsq(design, values.ravel(), rcond=None)
    z = values - (design @ coef).reshape(values.shape)
    dx, dy = field.spacing
    lengths = [_efold_lag(z, 1, dx), _efold_lag(z, 0, dy)]
    slopes = [_efold_lag(np.diff(z, axis=1) / dx, 1, dx), _efold_lag(np.diff(z, axis=0) / dy, 0, dy)]
    return FieldStatistics(float(values.min()), float(values.max()), near, _mean_length(lengths),
                           _mean_length(slopes))


@dataclass(frozen=True)
class FieldStatistics:
    """What :func:`field_statistics` (:meth:`Field.statistics <uncertain_bo.sim.field.Field.statistics>`) measures.

    Attributes:
        value_min, value_max: smallest and largest node value (field units).
        near_optimal_fraction: fraction (0-1) of the grid nodes, i.e. of the area, where the robust field's
            normalised regret ``(g* - g) / (g* - median g)`` is at most the threshold.
        correlation_length: e-folding distance (m) of the autocorrelation of the field minus its
            least-squares plane, i.e. the lag along a grid axis at which the correlation between values
            first drops below 1/e (linear interpolation between nodes), averaged over the two axes: the size
            of hills and valleys.
        slope_correlation_length: the same for the slopes (node differences along each axis, lagged along
            that axis): the width of ridges and slopes, how far the rover may be off before it reads a
            different part of the terrain.

    Example:
        A single hill (a Hann window, 60 m wide) on 60 m x 60 m: values in [0, 1], hills about 17 m across, and the
        share of the area within 10 % regret of the robust optimum under 2 m execution noise:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 60, 0, 60), name='hill')
        >>> stats = hill.statistics(cov=2.0 ** 2, regret=0.1)
        >>> stats.value_min, stats.value_max, round(stats.correlation_length, 1), round(stats.near_optimal_fraction, 3)
        (0.0, 1.0, 16.7, 0.02)
    """

    value_min: float
    value_max: float
    near_optimal_fraction: float
    correlation_length: float
    slope_correlation_length: float


def _efold_lag(d: np.ndarray, axis: int, spacing: float) -> float:
    """Lag (m) along ``axis`` at which the autocorrelation of ``d`` (mean removed) first drops below 1/e;
    inf if it never does within the grid, nan if ``d`` is constant."""
    d = np.moveaxis(np.asarray(d, dtype=float), axis, 0)
    d = d - d.mean()
    c0 = float(np.mean(d * d))
    if not c0 > 0.0:
        return math.nan
    target, prev = math.exp(-1.0), 1.0
    for lag in range(1, d.shape[0]):
        rho = float(np.mean(d[:-lag] * d[lag:])) / c0
        if rho < target:
            return (lag - 1 + (prev - target) / (prev - rho)) * spacing
        prev = rho
    return math.inf


def _mean_length(lengths: list[float]) -> float:
    """Mean over the axes along which the quantity varies (nan entries skipped; nan if none)."""
    ok = [v for v in lengths if not math.isnan(v)]
    return float(np.mean(ok)) if ok else math.nan

r"""The robust optimum :math:`g^*` of a simulated field within the search bounds.

The regret of a run is measured against what the rover could have found: the largest value of the robust
objective :math:`g = f * \mathcal N(0, \Sigma_E)` (:meth:`~uncertain_bo.sim.field.Field.convolved`) over the
targets the explorer may choose, i.e. the grid nodes inside ``search_bounds``, not over the whole field (a peak
outside the search area is unreachable and would count as regret no method can remove). The normaliser
:math:`g^* - \operatorname{median} g` takes the median over the same nodes. With ``search_bounds`` covering the
field both are the field's own :meth:`~uncertain_bo.sim.field.Field.argmax` and
:meth:`~uncertain_bo.sim.field.Field.median`, exactly.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ['robust_optimum']


def robust_optimum(robust, search_bounds: Sequence[float] | None = None) -> tuple[np.ndarray, float, float]:
    """``(xy (2,) m, g*, median of g)`` over the grid nodes of ``robust`` inside ``search_bounds``.

    Args:
        robust: the robust objective on a grid (:class:`~uncertain_bo.sim.field.Field`).
        search_bounds: ``[xmin, xmax, ymin, ymax]`` in m; None = the whole field. Search bounds narrower than
            the grid spacing (no node inside) are sampled on a 64 x 64 grid of bilinear values instead.

    Raises:
        ValueError: ``search_bounds`` do not overlap the field.
    """
    xs, ys, z = robust.grid()
    if search_bounds is None:
        j, i = np.unravel_index(int(np.argmax(z)), z.shape)
        return np.array([xs[i], ys[j]]), float(z[j, i]), float(np.median(z))
    xmin, xmax, ymin, ymax = (float(v) for v in search_bounds)
    fx0, fx1, fy0, fy1 = robust.bounds
    if xmax < fx0 or xmin > fx1 or ymax < fy0 or ymin > fy1:
        raise ValueError(f'search_bounds {list(search_bounds)} do not overlap the field {list(robust.bounds)}')
    tol = 1e-9 * max(abs(fx1 - fx0), abs(fy1 - fy0), 1.0)
    mx = (xs >= xmin - tol) & (xs <= xmax + tol)
    my = (ys >= ymin - tol) & (ys <= ymax + tol)
    if mx.any() and my.any():
        sub = z[np.ix_(my, mx)]
        j, i = np.unravel_index(int(np.argmax(sub)), sub.shape)
        return np.array([xs[mx][i], ys[my][j]]), float(sub[j, i]), float(np.median(sub))
    gx = np.linspace(max(xmin, fx0), min(xmax, fx1), 64)
    gy = np.linspace(max(ymin, fy0), min(ymax, fy1), 64)
    pts = np.stack(np.meshgrid(gx, gy), -1).reshape(-1, 2)
    values = robust.value(pts)
    k = int(np.argmax(values))
    return pts[k], float(values[k]), float(np.median(values))

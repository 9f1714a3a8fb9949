r"""Narrow-feature fields made from a formula: gas plumes from leaks, seeps on a seabed, on a gentle background.

Both generators lay their field out on a reference rectangle of ``size = (width, height)`` metres (positions and
widths in those metres, x east, y north, from its south-west corner) and sample it on a grid fine enough for its
narrowest feature; the catalogue (:mod:`uncertain_bo.sim.field_catalogue`, source kinds ``plume`` and ``seeps``)
maps it onto a field's extent as it maps every grid, so a field built on its own suite's extent has these
positions in metres.

**Plume** (:func:`plume_values`): the ground-level concentration of a continuous point release advected by a
steady wind, the Gaussian plume with total ground reflection (e.g. Seinfeld & Pandis, *Atmospheric Chemistry and
Physics*, ch. 18),

.. math::

    C(d, c) = \frac{Q}{\pi U \sigma_y(d) \sigma_z(d)} \exp\Big(-\frac{c^2}{2 \sigma_y(d)^2}\Big), \qquad
    \sigma_y(d) = \sigma_0 + a d, \quad \sigma_z(d) = \sigma_0 + b d,

with :math:`d` the downwind and :math:`c` the crosswind distance from the source (m), plume widths growing
linearly downwind (the near-field form of the usual power laws), and upwind of the source the crosswind profile
at the source decaying as :math:`\exp(-d^2 / 2\sigma_0^2)` (diffusion against the wind over the source's size).
Each source is scaled so that its peak, **at the source itself**, is its ``amplitude``: the concentration falls
monotonically downwind and crosswind from there. Several sources add up.

**Seeps** (:func:`seep_values`): isotropic Gaussian spots :math:`a_k \exp(-|x - s_k|^2 / 2 w_k^2)` (fluid or gas
seeping through a seabed, a few metres wide), added up.

**Background** (:func:`background_values`): a smooth random field, the posterior-free draw of a GP with a squared
exponential kernel by random Fourier features (:math:`m` cosines with frequencies from :math:`N(0, \ell^{-2})`),
fixed by its seed, of a given std: the slowly varying ambient level a sensor reads away from the features.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ['plume_values', 'seep_values', 'background_values', 'generator_grid']


def generator_grid(size: Sequence[float], spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """Node coordinates ``(X, Y)`` (each ``(ny, nx)``, m) over ``[0, width] x [0, height]`` with node spacing at
    most ``spacing`` m; row 0 is the south edge."""
    w, h = float(size[0]), float(size[1])
    nx = max(2, int(math.ceil(w / spacing - 1e-9)) + 1)
    ny = max(2, int(math.ceil(h / spacing - 1e-9)) + 1)
    return np.meshgrid(np.linspace(0.0, w, nx), np.linspace(0.0, h, ny))


def plume_values(X: np.ndarray, Y: np.ndarray, sources: Sequence[Sequence[float]], wind_deg: float,
                 spread: float, vertical_spread: float | None = None) -> np.ndarray:
    """Gaussian-plume concentration (module docstring) at the points ``(X, Y)`` (m, any equal shapes).

    Args:
        X, Y: where to evaluate (m).
        sources: ``[x, y, amplitude, sigma0]`` per source: its position (m), its peak value (field units) and
            the plume's crosswind and vertical std at the source (m, > 0).
        wind_deg: direction the wind blows **towards**, degrees counter-clockwise from east (+x).
        spread: crosswind growth ``a`` of the plume's std per metre downwind (dimensionless, >= 0).
        vertical_spread: vertical growth ``b`` (dimensionless; default ``spread / 2``).

    Returns:
        Concentration, the shape of ``X``.

    Raises:
        ValueError: a source's ``sigma0`` is not positive or a spread is negative.
    """
    b = spread / 2.0 if vertical_spread is None else vertical_spread
    if spread < 0 or b < 0:
        raise ValueError(f'plume spreads must be >= 0, got {spread}, {b}')
    th = math.radians(wind_deg)
    ux, uy = math.cos(th), math.sin(th)
    out = np.zeros(np.shape(X))
    for x0, y0, amp, s0 in sources:
        if not s0 > 0:
            raise ValueError(f'plume source at ({x0}, {y0}): sigma0 must be > 0 m, got {s0}')
        dx, dy = X - x0, Y - y0
        d = dx * ux + dy * uy                     # downwind distance
        c = -dx * uy + dy * ux                    # crosswind distance
        dd = np.maximum(d, 0.0)
        sy, sz = s0 + spread * dd, s0 + b * dd
        value = (s0 * s0) / (sy * sz) * np.exp(-0.5 * (c / sy) ** 2)
        value = np.where(d < 0, np.exp(-0.5 * (c / s0) ** 2 - 0.5 * (d / s0) ** 2), value)
        out += amp * value
    return out


def seep_values(X: np.ndarray, Y: np.ndarray, seeps: Sequence[Sequence[float]]) -> np.ndarray:
    """Sum of isotropic Gaussian spots ``[x, y, amplitude, width]`` (m, field units, m: the std) at ``(X, Y)``.

    Raises:
        ValueError: a width is not positive.
    """
    out = np.zeros(np.shape(X))
    for x0, y0, amp, width in seeps:
        if not width > 0:
            raise ValueError(f'seep at ({x0}, {y0}): width must be > 0 m, got {width}')
        out += amp * np.exp(-0.5 * ((X - x0) ** 2 + (Y - y0) ** 2) / width ** 2)
    return out


def background_values(X: np.ndarray, Y: np.ndarray, std: float, lengthscale: float, seed: int,
                      features: int = 200) -> np.ndarray:
    """A smooth random field of std ``std`` (field units) and squared-exponential lengthscale ``lengthscale`` (m)
    at ``(X, Y)``: ``std sqrt(2/m) sum_k cos(w_k . x + b_k)``, ``w_k ~ N(0, I / lengthscale²)``, ``b_k ~ U(0,
    2 pi)``, ``m = features``, drawn from ``seed`` (random Fourier features; module docstring)."""
    if std == 0:
        return np.zeros(np.shape(X))
    rng = np.random.default_rng(int(seed))
    w = rng.standard_normal((features, 2)) / float(lengthscale)
    phase = rng.uniform(0.0, 2.0 * math.pi, features)
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    if X.ndim == 2 and Y.shape == X.shape and np.array_equal(X, np.broadcast_to(X[:1], X.shape)) \
            and np.array_equal(Y, np.broadcast_to(Y[:, :1], Y.shape)):
        # a grid (np.meshgrid): cos(a + b) = cos a cos b - sin a sin b with a = w_x x + b_k over the columns and
        # b = w_y y over the rows, two (ny, m) @ (m, nx) products instead of m cosines of the whole grid
        a = np.outer(w[:, 0], X[0]) + phase[:, None]             # (m, nx)
        b = np.outer(Y[:, 0], w[:, 1])                           # (ny, m)
        vals = np.cos(b) @ np.cos(a) - np.sin(b) @ np.sin(a)
    else:
        vals = np.zeros(np.shape(X))
        for (wx, wy), ph in zip(w, phase):          # one feature at a time: memory of one grid, not m grids
            vals += np.cos(X * wx + Y * wy + ph)
    return vals * (math.sqrt(2.0 / features) * float(std))

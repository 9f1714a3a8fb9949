r"""NES's gravity-assist manoeuvre (Fröhlich et al. 2020, "Noisy-Input Entropy Search for Efficient Robust
Bayesian Optimization", AISTATS, §4.3 and Fig. 4): choose the launch angle :math:`\alpha_0` and speed :math:`v_0`
of a spacecraft coasting (engines off) from planet A so that the gravity of planets A-D brings it close to the
target planet D, cheaply.

**Simulator.** A 2-D point mass starts at :math:`(0.1, 0)` with velocity :math:`v_0(\cos\alpha_0, \sin\alpha_0)`
and moves under :math:`\ddot{\mathbf p} = \sum_k G m_k (\mathbf p_k - \mathbf p)/\|\mathbf p_k - \mathbf p\|^3`,
:math:`G = 1`, for :math:`t \in [0, 4]`; planets A (0, 0) mass 1, D (10, 0) mass 10 (the target), B (4, 0.2)
mass 2, C (5, -1.5) mass 8 (the paper's reference configuration). The cost is
:math:`J(\alpha_0, v_0) = \log_{10}(d_{\rm target} + \beta v_0)`, :math:`\beta = 2`, with :math:`d_{\rm target}` the
closest approach to D; the benchmark maximises :math:`f = -J` on :math:`\alpha_0 \in [-10°, 45°]` (radians),
:math:`v_0 \in [4.1, 5.0]`, under input noise :math:`\sigma_\alpha = 3°`, :math:`\sigma_v = 0.05`.

The integrator is classical RK4 over a batch of launches at once, each launch with its own step
:math:`h = \min(h_{\max}, \eta \min_k r_k^{3/2} / \sqrt{G m_k})` (a fraction :math:`\eta` of the local free-fall time
scale, so a close pass is resolved; :math:`\eta = 0.02`, :math:`h_{\max} = 0.01`); the closest approach inside a
step is found on the cubic Hermite interpolant of the step's end states. The reference code samples the
distance every 0.001 time units of a 'vode' solution; a closest approach between samples differs from the
sampled minimum by less than :math:`4 \cdot 10^{-4}` in :math:`J` on random launches.

**Regret oracle.** :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]` has no closed form: :math:`f` is
simulated on a grid (0.25° by 0.005) that extends :math:`5\sigma` beyond the domain, convolved with the Gaussian
(``scipy.ndimage.gaussian_filter``, truncated at :math:`5\sigma`) and interpolated by a bicubic spline over the
domain. The grid is computed once (a few minutes on one core) and cached under
``$XDG_CACHE_HOME/uncertain_bo/gravity_assist`` (default ``~/.cache``). The robust optimum is
:math:`g^* = -0.99886` at :math:`(\alpha_0, v_0) = (27.87°, 4.791)`, the broad optimum in the upper right of the
domain; the global optimum of :math:`f` (-0.934 at (1.75°, 4.295), the lower left) sits on a narrow ridge where
:math:`g = -1.0283`. Accuracy (:func:`robust_grid_accuracy`): the same convolution on every other grid point
(0.5° by 0.01) differs from the full grid's by at most :math:`5.4 \cdot 10^{-4}` over the domain (median
:math:`5.9 \cdot 10^{-6}`; :math:`1.6 \cdot 10^{-5}` at :math:`\mathbf x^*`), and 40 x 40 Gauss-Hermite quadrature
of simulations at :math:`\mathbf x^*` by :math:`8 \cdot 10^{-5}` (quadrature converges slowly there: :math:`d_{\rm
target}` has a kink where a trajectory passes through D).
"""
from __future__ import annotations

import math
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ['PLANETS', 'MASSES', 'TARGET', 'START', 'GRAVITY_BOUNDS', 'GRAVITY_SIGMA', 'closest_approach',
           'gravity_assist_cost', 'gravity_assist', 'robust_grid', 'robust_grid_accuracy']

PLANETS = np.array([[0.0, 0.0], [10.0, 0.0], [4.0, 0.2], [5.0, -1.5]])   # A, D (target), B, C
MASSES = np.array([1.0, 10.0, 2.0, 8.0])                                  # G m_k, G = 1
TARGET = 1                                                                 # index of D in PLANETS
START = np.array([0.1, 0.0])
HORIZON = 4.0
BETA = 2.0
GRAVITY_BOUNDS = np.array([[math.radians(-10.0), 4.1], [math.radians(45.0), 5.0]])
GRAVITY_SIGMA = np.array([math.radians(3.0), 0.05])
_EXTEND = 5.0                      # the f grid reaches this many σ beyond the domain
_GRID_STEP = (math.radians(0.25), 0.005)
ETA, H_MAX = 0.02, 0.01           # the integrator's step rule: h = min(H_MAX, ETA * local dynamical time)


def _acceleration(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gravitational acceleration ``(n, 2)`` at ``p (n, 2)`` and the squared distances ``(n, 4)`` to the planets."""
    d = PLANETS[None] - p[:, None]
    r2 = np.einsum('nkj,nkj->nk', d, d)
    return np.einsum('nk,nkj->nj', MASSES / (r2 * np.sqrt(r2)), d), r2


def _closest_on_step(p0, u0, p1, u1, h, samples: int = 64) -> np.ndarray:
    """Minimum distance to the target along the cubic Hermite interpolant of each step (rows ``(m, 2)``)."""
    s = np.linspace(0.0, 1.0, samples)[None, :, None]
    h = h[:, None, None]
    s2, s3 = s * s, s * s * s
    path = ((2 * s3 - 3 * s2 + 1) * p0[:, None] + (s3 - 2 * s2 + s) * h * u0[:, None]
            + (-2 * s3 + 3 * s2) * p1[:, None] + (s3 - s2) * h * u1[:, None])
    return np.linalg.norm(path - PLANETS[TARGET], axis=-1).min(-1)


def closest_approach(alpha: np.ndarray, v0: np.ndarray, *, eta: float = ETA, h_max: float = H_MAX,
                     horizon: float = HORIZON) -> np.ndarray:
    r"""Closest approach :math:`d_{\rm target} = \min_{t \in [0, T]} \|\mathbf p(t) - \mathbf p_D\|` of the
    launches ``alpha`` (radians) and ``v0`` (same shape), by RK4 with a per-launch step
    :math:`h = \min(h_{\max}, \eta \min_k r_k^{3/2}/\sqrt{m_k})` over the whole batch at once (Fröhlich et al.
    2020, §4.3). Returns an array of ``alpha``'s shape."""
    alpha, v0 = np.broadcast_arrays(np.asarray(alpha, dtype=float), np.asarray(v0, dtype=float))
    shape = alpha.shape
    alpha, v0 = alpha.ravel(), v0.ravel()
    n = alpha.size
    p = np.tile(START, (n, 1))
    u = np.stack([v0 * np.cos(alpha), v0 * np.sin(alpha)], -1)
    t = np.zeros(n)
    d_min = np.linalg.norm(p - PLANETS[TARGET], axis=-1)
    active = np.arange(n)
    rsqrt_m = 1.0 / np.sqrt(MASSES)
    while active.size:
        pa, ua, ta = p[active], u[active], t[active]
        for _ in range(32):          # 32 steps between compactions of the active set (finished launches: h = 0)
            a1, r2 = _acceleration(pa)
            h = np.minimum(np.minimum(h_max, eta * np.min(r2 ** 0.75 * rsqrt_m, -1)), horizon - ta)
            hc = h[:, None]
            p2, u2 = pa + 0.5 * hc * ua, ua + 0.5 * hc * a1
            a2, _ = _acceleration(p2)
            p3, u3 = pa + 0.5 * hc * u2, ua + 0.5 * hc * a2
            a3, _ = _acceleration(p3)
            p4, u4 = pa + hc * u3, ua + hc * a3
            a4, _ = _acceleration(p4)
            pn = pa + hc / 6 * (ua + 2 * u2 + 2 * u3 + u4)
            un = ua + hc / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
            rel0, rel1 = pa - PLANETS[TARGET], pn - PLANETS[TARGET]
            d_end = np.linalg.norm(rel1, axis=-1)
            d_min[active] = np.minimum(d_min[active], d_end)
            # a minimum inside the step: approaching at its start, receding at its end
            inside = np.flatnonzero((np.einsum('nj,nj->n', rel0, ua) < 0) & (np.einsum('nj,nj->n', rel1, un) > 0)
                                    & (h > 0))
            if inside.size:
                d_in = _closest_on_step(pa[inside], ua[inside], pn[inside], un[inside], h[inside])
                d_min[active[inside]] = np.minimum(d_min[active[inside]], d_in)
            pa, ua, ta = pn, un, ta + h
        p[active], u[active], t[active] = pa, ua, ta
        active = active[ta < horizon * (1 - 1e-12)]
    return d_min.reshape(shape)


def gravity_assist_cost(alpha: np.ndarray, v0: np.ndarray, **kwargs) -> np.ndarray:
    r""":math:`J(\alpha_0, v_0) = \log_{10}(d_{\rm target} + \beta v_0)`, :math:`\beta = 2` (Fröhlich et al. 2020,
    §4.3); ``alpha`` in radians. ``kwargs`` go to :func:`closest_approach`."""
    return np.log10(closest_approach(alpha, v0, **kwargs) + BETA * np.asarray(v0, dtype=float))


def _cache_dir() -> Path:
    return Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'uncertain_bo' / 'gravity_assist'


def _f_grid(step: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(alpha axis, v axis, f = -J on the grid)`` over the domain extended by 5σ, cached on disk."""
    axes = []
    for j in range(2):
        lo = GRAVITY_BOUNDS[0, j] - _EXTEND * GRAVITY_SIGMA[j]
        n = int(round((GRAVITY_BOUNDS[1, j] - GRAVITY_BOUNDS[0, j] + 2 * _EXTEND * GRAVITY_SIGMA[j]) / step[j]))
        axes.append(lo + step[j] * np.arange(n + 1))
    # the name carries the simulator's settings: a changed integrator never reads a stale grid
    path = _cache_dir() / f'f-grid-eta{ETA:g}-hmax{H_MAX:g}-{len(axes[0])}x{len(axes[1])}.npz'
    if path.exists():
        with np.load(path) as z:
            if np.allclose(z['alpha'], axes[0]) and np.allclose(z['v0'], axes[1]):
                return axes[0], axes[1], z['f']
    a, v = np.meshgrid(*axes, indexing='ij')
    f = np.concatenate([-gravity_assist_cost(ac, vc) for ac, vc in
                        zip(np.array_split(a.ravel(), max(1, a.size // 8192)),
                            np.array_split(v.ravel(), max(1, a.size // 8192)))]).reshape(a.shape)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f'.{os.getpid()}.tmp.npz')
        np.savez_compressed(tmp, alpha=axes[0], v0=axes[1], f=f)
        tmp.replace(path)
    except OSError:             # a read-only cache only costs the recomputation
        pass
    return axes[0], axes[1], f


def _smoothed(axes, f: np.ndarray, stride: int):
    """Bicubic spline of the Gaussian-filtered grid (every ``stride``-th point) over the domain."""
    from scipy.interpolate import RectBivariateSpline
    from scipy.ndimage import gaussian_filter

    a, v, f = axes[0][::stride], axes[1][::stride], f[::stride, ::stride]
    step = (a[1] - a[0], v[1] - v[0])
    g = gaussian_filter(f, (GRAVITY_SIGMA[0] / step[0], GRAVITY_SIGMA[1] / step[1]), mode='nearest',
                        truncate=_EXTEND)
    ia = (a >= GRAVITY_BOUNDS[0, 0] - 3 * step[0]) & (a <= GRAVITY_BOUNDS[1, 0] + 3 * step[0])
    iv = (v >= GRAVITY_BOUNDS[0, 1] - 3 * step[1]) & (v <= GRAVITY_BOUNDS[1, 1] + 3 * step[1])
    return RectBivariateSpline(a[ia], v[iv], g[np.ix_(ia, iv)], kx=3, ky=3)


@lru_cache(maxsize=2)
def robust_grid(stride: int = 1):
    r"""Bicubic spline ``spline(alpha, v0, grid=False)`` of :math:`g = \mathbb E[f(\mathbf x + \boldsymbol\xi)]`,
    :math:`f = -J`, :math:`\boldsymbol\xi \sim \mathcal N(0, \mathrm{diag}(\sigma_\alpha^2, \sigma_v^2))`, over the
    domain: the Gaussian filter of :math:`f` on the cached 0.25° × 0.005 grid (``stride = 2``: every other
    point)."""
    a, v, f = _f_grid(_GRID_STEP)
    return _smoothed((a, v), f, stride)


def robust_grid_accuracy(points: int = 201) -> float:
    """Largest difference over a ``points`` × ``points`` grid of the domain between :math:`g` from the full f grid
    and from every other grid point (the oracle's accuracy estimate)."""
    a = np.linspace(GRAVITY_BOUNDS[0, 0], GRAVITY_BOUNDS[1, 0], points)
    v = np.linspace(GRAVITY_BOUNDS[0, 1], GRAVITY_BOUNDS[1, 1], points)
    return float(np.abs(robust_grid(1)(a, v) - robust_grid(2)(a, v)).max())


def gravity_assist(x: np.ndarray, var: np.ndarray) -> np.ndarray:
    r"""NES objective ``fn(x (n, 2), var (2,)) -> (n,)`` on :math:`(\alpha_0 \text{[rad]}, v_0)`: ``var = 0``
    simulates :math:`f = -J`; ``var`` equal to :math:`(\sigma_\alpha^2, \sigma_v^2)` interpolates the cached robust
    objective :math:`g` (:func:`robust_grid`). Raises ``ValueError`` for any other ``var`` (the oracle is built for
    the paper's noise only)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    var = np.asarray(var, dtype=float)
    if not np.any(var):
        return -gravity_assist_cost(x[:, 0], x[:, 1])
    if not np.allclose(var, GRAVITY_SIGMA ** 2, rtol=1e-9, atol=0.0):
        raise ValueError(f'the gravity-assist robust objective is cached for sigma = {GRAVITY_SIGMA.tolist()} only, '
                         f'not {np.sqrt(var).tolist()}')
    xc = np.clip(x, GRAVITY_BOUNDS[0], GRAVITY_BOUNDS[1])
    return robust_grid()(xc[:, 0], xc[:, 1], grid=False)

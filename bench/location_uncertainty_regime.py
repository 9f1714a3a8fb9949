"""Where modelling location uncertainty pays: the expected-SE GP against the point GP, by σ_L / ℓ.

Readings of a field are taken at locations known only through a Gaussian location distribution
N(x̂_i, σ_L,i² I) (the localisation filter's estimate). The library's GP with the expected squared-exponential
kernel (Oliveira et al. 2019, Eq. 9; closed form App. A.8 Eq. 80) uses those distributions; the point GP
(what ``gp_ucb`` and BoTorch's SingleTaskGP on localisation means do) treats x̂_i as exact. This benchmark
measures, as a function of the ratio r = σ_L / ℓ of the localisation error to the field's lengthscale, how much
better the location-aware model predicts the field and locates its peak — the mechanism through which
``ugp_ucb`` can beat ``gp_ucb`` on the rover.

Setting (per seed): a field f ~ GP(0, SE with lengthscale ℓ = 0.15) on [0, 1]² (random Fourier features,
1000 features), n = 40 readings at uniformly drawn estimated locations x̂_i, true locations
x_i = x̂_i + N(0, σ_L,i² I), readings y_i = f(x_i) + N(0, 0.05²). Two localisation regimes:

- ``homoscedastic``: every reading has σ_L = r ℓ;
- ``degraded``: readings east of x = 0.5 have σ_L = r ℓ, west of it 0.1 r ℓ (the rover's GNSS-degraded zone).

Three GPs: the point GP, the location-aware GP, and the location-aware GP with each reading's input-induced
variance in its noise (``DistributionGP(input_induced_noise=True)``). All are fitted by MAP with the explorer's priors
(``DistributionGP(noise_prior='lognormal')``).
Metrics on a 41 × 41 test grid of exactly known points: RMSE of the posterior mean against f (in units of f's
prior std), and the peak regret f* − f(argmax μ) normalised by f* − median f. Paired over seeds (Wilcoxon).

Usage::

    python bench/location_uncertainty_regime.py --seeds 30 --out /tmp/regime    # ~5 min, one thread

Writes ``regime.csv`` (one row per seed, ratio, regime, model) and ``regime.png`` (median relative RMSE and
regret against r), and prints the table.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import numpy as np
import torch
from scipy.stats import wilcoxon

from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import DistributionGP

RATIOS = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0)
LENGTHSCALE = 0.15
N_READINGS = 40
NOISE_STD = 0.05
DTYPE = torch.float64


def sample_field(rng: np.random.Generator, n_features: int = 1000):
    """A draw from GP(0, SE(ℓ)) on R² by random Fourier features; returns f(x) for (m, 2) arrays."""
    w = rng.normal(size=(n_features, 2)) / LENGTHSCALE
    b = rng.uniform(0, 2 * np.pi, n_features)
    a = rng.normal(size=n_features) * np.sqrt(2.0 / n_features)
    return lambda x: np.cos(x @ w.T + b) @ a


def one_case(seed: int, ratio: float, regime: str, grid: np.ndarray) -> dict[str, tuple[float, float]]:
    """Fit both GPs on one field and return ``{model: (relative RMSE, normalised peak regret)}``."""
    rng = np.random.default_rng([seed, int(ratio * 1000), regime == 'degraded'])
    f = sample_field(np.random.default_rng(seed))  # same field for every ratio and regime of a seed
    x_hat = rng.uniform(0, 1, size=(N_READINGS, 2))
    sigma = np.full(N_READINGS, ratio * LENGTHSCALE)
    if regime == 'degraded':
        sigma[x_hat[:, 0] < 0.5] *= 0.1
    x_true = x_hat + rng.normal(size=x_hat.shape) * sigma[:, None]
    y = f(x_true) + rng.normal(size=N_READINGS) * NOISE_STD
    f_grid = f(grid)
    f_star, f_med = f_grid.max(), np.median(f_grid)
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
    cov = torch.as_tensor(sigma ** 2, dtype=DTYPE)[:, None, None] * torch.eye(2, dtype=DTYPE)
    gaussian = Gaussian(torch.as_tensor(x_hat, dtype=DTYPE), cov)
    inputs = {'point': (Dirac(torch.as_tensor(x_hat, dtype=DTYPE)), False),
              'location-aware': (gaussian, False),
              'location-aware + input noise': (gaussian, True)}
    out = {}
    for name, (locations, input_noise) in inputs.items():
        torch.manual_seed(seed)  # the fit's restarts
        gp = DistributionGP(bounds, noise_prior='lognormal', input_induced_noise=input_noise)
        gp.set_data(locations, torch.as_tensor(y, dtype=DTYPE))
        gp.fit()
        with torch.no_grad():
            mean, _ = gp.marginals(Dirac(torch.as_tensor(grid, dtype=DTYPE)))
        mean = mean.numpy()
        rmse = float(np.sqrt(np.mean((mean - f_grid) ** 2)))  # f has unit prior std
        regret = float((f_star - f_grid[np.argmax(mean)]) / (f_star - f_med))
        out[name] = (rmse, regret)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--seeds', type=int, default=30)
    p.add_argument('--ratios', default=','.join(map(str, RATIOS)), help='comma-separated σ_L / ℓ')
    p.add_argument('--out', default='runs/regime')
    args = p.parse_args(argv)
    try:
        ratios = [float(r) for r in args.ratios.split(',')]
    except ValueError:
        print(f'error: --ratios must be comma-separated numbers, got {args.ratios!r}', file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    axis = np.linspace(0, 1, 41)
    grid = np.stack(np.meshgrid(axis, axis, indexing='ij'), -1).reshape(-1, 2)
    rows, t0 = [], time.time()
    cases = [(r, g) for g in ('homoscedastic', 'degraded') for r in ratios]
    for k, (ratio, regime) in enumerate(cases):
        for seed in range(args.seeds):
            for model, (rmse, regret) in one_case(seed, ratio, regime, grid).items():
                rows.append({'seed': seed, 'ratio': ratio, 'regime': regime, 'model': model,
                             'rmse': rmse, 'regret': regret})
        print(f'[{k + 1}/{len(cases)}] {regime} σ_L/ℓ = {ratio}: done ({time.time() - t0:.0f} s)', flush=True)
    with open(os.path.join(args.out, 'regime.csv'), 'w', newline='') as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    table = summarise(rows, ratios)
    plot(table, os.path.join(args.out, 'regime.png'))
    print(f'wrote {args.out}/regime.csv and regime.png')
    return 0


AWARE = ('location-aware', 'location-aware + input noise')


def summarise(rows: list[dict], ratios: list[float]) -> list[dict]:
    """Print and return, per (regime, ratio), medians and the paired comparison of each location-aware model
    with the point model."""
    table = []
    for aware in AWARE:
        print(f'\n{aware} against the point GP:')
        table += _summarise_one(rows, ratios, aware)
    return table


def _summarise_one(rows: list[dict], ratios: list[float], aware: str) -> list[dict]:
    print('| regime | σ_L/ℓ | RMSE point | RMSE aware | aware better (seeds) | p | regret point | regret aware '
          '| aware lower / higher | p |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    table = []
    for regime in ('homoscedastic', 'degraded'):
        for ratio in ratios:
            sel = {m: sorted((r for r in rows if r['regime'] == regime and r['ratio'] == ratio and r['model'] == m),
                             key=lambda r: r['seed']) for m in ('point', aware)}
            e_p = np.array([r['rmse'] for r in sel['point']])
            e_a = np.array([r['rmse'] for r in sel[aware]])
            g_p = np.array([r['regret'] for r in sel['point']])
            g_a = np.array([r['regret'] for r in sel[aware]])
            p_e = _wilcoxon(e_a, e_p)
            p_g = _wilcoxon(g_a, g_p)
            row = {'model': aware, 'regime': regime, 'ratio': ratio,
                   'rmse_point': np.median(e_p), 'rmse_aware': np.median(e_a),
                   'rel_rmse': np.median(e_a / e_p), 'regret_point': np.median(g_p),
                   'regret_aware': np.median(g_a)}
            table.append(row)
            print(f"| {regime} | {ratio} | {row['rmse_point']:.3f} | {row['rmse_aware']:.3f} | "
                  f"{int((e_a < e_p).sum())}/{len(e_a)} | {p_e:.2g} | {row['regret_point']:.3f} | "
                  f"{row['regret_aware']:.3f} | {int((g_a < g_p).sum())}/{int((g_a > g_p).sum())} | {p_g:.2g} |")
    return table


def _wilcoxon(a: np.ndarray, b: np.ndarray) -> float:
    d = a - b
    return float(wilcoxon(a, b).pvalue) if np.any(d != 0) else 1.0


def plot(table: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for regime, style in (('homoscedastic', '-o'), ('degraded', '--s')):
        for aware, color in zip(AWARE, ('tab:blue', 'tab:orange')):
            rows = [r for r in table if r['regime'] == regime and r['model'] == aware]
            ratios = [r['ratio'] for r in rows]
            axes[0].plot(ratios, [r['rel_rmse'] for r in rows], style, color=color, label=f'{aware}, {regime}')
            axes[1].plot(ratios, [r['regret_aware'] for r in rows], style, color=color, label=f'{aware}, {regime}')
        axes[1].plot(ratios, [r['regret_point'] for r in rows], style, color='tab:gray', label=f'point, {regime}')
    axes[0].axhline(1.0, color='k', lw=0.8)
    axes[0].set(xscale='log', xlabel='σ_L / ℓ', ylabel='median RMSE ratio (aware / point)',
                title='field prediction: < 1 means the location-aware GP is better')
    axes[1].set(xscale='log', xlabel='σ_L / ℓ', ylabel='median normalised peak regret', title='peak estimate')
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == '__main__':
    sys.exit(main())

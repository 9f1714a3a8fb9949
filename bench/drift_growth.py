"""The calibrated dead-reckoning drift sources in the simulator: error against distance driven, beside the closed form
and the published figure (docs/gnss_denied.md, docs/img/drift_growth.png).

For each source of ``uncertain_bo.sim.drift.DRIFT_SOURCES``: ``--seeds`` rovers drive a straight leg with the
source's odometry at its calibration rate (10 Hz), the EKF dead-reckoning from a draw of its own start
(``uncertain_bo.sim.drift.straight_legs``); at distances up to 1.5 x the reference distance the median radial error
(CEP50) over the seeds is plotted with the CEP50 of the closed form (sampled from its Gaussian) and the published
rate at the reference distance. Prints the numbers as a Markdown table.

    python bench/drift_growth.py --seeds 60 --out docs/img/drift_growth.png
"""
from __future__ import annotations

import argparse

import numpy as np

from uncertain_bo.sim.drift import DRIFT_SOURCES, straight_legs


def closed_form_cep(source, distances, draws: int = 100000) -> np.ndarray:
    """Median radius of the closed-form error at each distance (sampled from its Gaussian, m)."""
    along, cross = source.variances(np.asarray(distances))
    z = np.random.default_rng(0).standard_normal((draws, 2))
    return np.array([np.median(np.hypot(z[:, 0] * np.sqrt(a), z[:, 1] * np.sqrt(c))) for a, c in zip(along, cross)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, default=60)
    parser.add_argument('--out', default='drift_growth.png')
    args = parser.parse_args()

    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(DRIFT_SOURCES), figsize=(4.6 * len(DRIFT_SOURCES), 3.6))
    print('| source | distance (m) | simulated CEP50 (m) | closed form (m) | EKF-reported per-axis std (m) |')
    print('|---|---|---|---|---|')
    for ax, src in zip(axes, DRIFT_SOURCES.values()):
        d = np.linspace(0.1, 1.5, 15) * src.reference_m
        err, cov = straight_legs(src, args.seeds, d)
        sim = np.median(np.hypot(err[..., 0], err[..., 1]), axis=0)
        closed = closed_form_cep(src, d)
        reported = np.sqrt(np.mean(np.trace(cov, axis1=2, axis2=3), axis=0) / 2)
        for i in (4, 9, 14):
            print(f'| {src.name} | {d[i]:.0f} | {sim[i]:.2f} | {closed[i]:.2f} | {reported[i]:.2f} |')
        ax.plot(d, sim, 'o', ms=4, label=f'simulated, {args.seeds} seeds (CEP50)')
        ax.plot(d, closed, '-', label='closed form (CEP50)')
        ax.plot([src.reference_m], [src.rate * src.reference_m], 'k*', ms=10,
                label=f'published: {src.rate:.1%} of {src.reference_m:.0f} m')
        ax.set_title(f'{src.name}: {src.what}', fontsize=7, wrap=True)
        ax.set_xlabel('distance driven since the last fix, m', fontsize=8)
        ax.set_ylabel('position error, m', fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)
    print(f'wrote {args.out}')


if __name__ == '__main__':
    main()

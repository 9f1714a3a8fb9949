"""Where each method queries and what it recommends on NES's gravity-assist manoeuvre (Fröhlich et al. 2020,
§4.3, Fig. 4): f = -J and the robust objective g over the domain, with every run's queries after the initial
design and its final recommendation, one panel per method, from an ``uncertain-bo bench --problem
nes-gravity-assist`` output folder. Prints, per method, the share of the last 20 queries and of the final
recommendations on the left ridge that holds the sensitive global optimum of f (alpha_0 < 10 deg).

    .venv/bin/python bench/nes_gravity_assist_map.py RUN_DIR [--out FILE.png]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from uncertain_bo.benchmarks.gravity_assist import GRAVITY_BOUNDS, _f_grid, _GRID_STEP, robust_grid

LABELS = {'nes_ep': 'NES-EP', 'nes_rs': 'NES-RS', 'ei': 'standard EI', 'bo_uu_ucb': 'BO-UU UCB',
          'bo_uu_ei': 'BO-UU EI', 'bo_uu_mes': 'BO-UU MES', 'uei': 'UEI'}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('run_dir')
    parser.add_argument('--out', default=None, help='PNG path (default: RUN_DIR/nes-gravity-assist_queries.png)')
    args = parser.parse_args()
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    runs: dict[str, list[dict]] = {}
    for path in sorted(Path(args.run_dir, 'runs').glob('nes-gravity-assist__*.json')):
        run = json.loads(path.read_text())
        runs.setdefault(run['spec']['method'], []).append(run)
    if not runs:
        raise SystemExit(f'no nes-gravity-assist runs under {args.run_dir}/runs')
    a, v, f = _f_grid(_GRID_STEP)
    alpha = np.linspace(*GRAVITY_BOUNDS[:, 0], 221)
    speed = np.linspace(*GRAVITY_BOUNDS[:, 1], 181)
    g = robust_grid()(alpha, speed)
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(4.2 * (len(runs) + 1), 3.8), sharey=True)
    im = axes[0].pcolormesh(np.degrees(a), v, f.T, shading='auto', vmin=-1.15, cmap='viridis')
    axes[0].set(xlim=np.degrees(GRAVITY_BOUNDS[:, 0]), ylim=GRAVITY_BOUNDS[:, 1], title='f = -J',
                xlabel='alpha_0 [deg]', ylabel='v_0')
    fig.colorbar(im, ax=axes[0])
    for ax, (method, rs) in zip(axes[1:], runs.items()):
        ax.contourf(np.degrees(alpha), speed, g.T, 30, cmap='viridis')
        last, recs = [], []
        for run in rs:
            q = np.array([r['target'] for r in run['records'] if r['phase'] != 'initial'])
            ax.plot(np.degrees(q[:, 0]), q[:, 1], '.', color='w', ms=2, alpha=0.5)
            rec = np.array(run['records'][-1]['rec_target'])
            ax.plot(np.degrees(rec[0]), rec[1], 'o', mfc='none', mec='r', ms=6)
            last.append(q[-20:])
            recs.append(rec)
        opt = rs[0]['instance']['optimum']
        ax.plot(np.degrees(opt[0]), opt[1], '*', color='k', ms=12)
        ax.set(title=f'{LABELS.get(method, method)}: g, queries, recommendations', xlabel='alpha_0 [deg]')
        last, recs = np.concatenate(last), np.array(recs)

        def left_ridge(x):
            return np.degrees(x[:, 0]) < 10.0
        print(f'{method}: {len(rs)} runs; last 20 queries on the left ridge {left_ridge(last).mean():.0%}; '
              f'recommendations there {int(left_ridge(recs).sum())} of {len(recs)}')
    fig.tight_layout()
    out = args.out or str(Path(args.run_dir) / 'nes-gravity-assist_queries.png')
    fig.savefig(out, dpi=90)
    print('wrote', out)


if __name__ == '__main__':
    main()

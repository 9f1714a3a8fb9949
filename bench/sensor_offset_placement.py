"""Where a probe on a lever arm is placed: at the sensor (``sensor_offset``) or at the pose estimate's position.

A simulated rover carries its probe ``--offset`` metres from ``base_link`` (sim_rover ``sensor_offset``: the
simulated sensor really reads the field there) with a noisy heading (``--yaw-noise``: the wheel odometry's angular
velocity noise, rad/s; GNSS fixes give the EKF its heading only through motion). Per seed, one in-process mission
(:class:`uncertain_bo.sim.mission.Mission`) with the explorer told the offset, then, on the SAME readings, two
placements of each measurement:

- ``aware``: the stored location distribution, at the sensor (mean ``p + E R(yaw) r``, covariance with the heading's
  uncertainty times the lever arm: :func:`uncertain_bo.distributions.lever_arm.sensor_moments`);
- ``shifted``: the mean moved by the arm at the mean heading, ``p + R(yaw) r``, with the pose's own covariance (the
  lever arm without the heading's uncertainty in the covariance);
- ``pose``: the pose estimate of ``base_link`` (mean and covariance), what every reading got before ``sensor_offset``.

Metrics against the sensor's true position (sim truth): the mean location error |mean - truth| (m), the mean
squared Mahalanobis distance (2 for a calibrated 2-D Gaussian), and, from the location-aware GP
(:class:`~uncertain_bo.models.DistributionGP`, the explorer's priors) fitted on each placement of the same readings,
the field RMSE of its posterior mean on a 41 x 41 grid (in units of the field's std) and the peak regret
``f* - f(argmax mean)`` normalised by ``f* - median f``. Medians over seeds, paired Wilcoxon p-values. Fields:
``default`` (config/sim.yaml's 'jacksboro-smooth', 200 m square) or ``narrow`` (a 30 m square with one bump of
3 m standard deviation, a plume or a leak, on a gentle slope; its place drawn per seed). No assertions.

Usage (each about 10 min on one core; the numbers of docs/field_robots.md, "A sensor away from base_link")::

    python bench/sensor_offset_placement.py --seeds 16 --field narrow --measurements 40
    python bench/sensor_offset_placement.py --seeds 16 --field default --measurements 30
    python bench/sensor_offset_placement.py --seeds 16 --field narrow --measurements 40 --offset 2.0,0.0 \
        --yaw-noise 0.2 [--gp-input-noise]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from scipy.stats import wilcoxon

from uncertain_bo.distributions import DTYPE, Dirac, Gaussian
from uncertain_bo.distributions.lever_arm import sensor_position
from uncertain_bo.models import DistributionGP
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.mission import Mission, mission_parameters

NARROW_SIDE = 30.0       # m
NARROW_WIDTH = 3.0       # bump standard deviation, m


def narrow_field(seed: int) -> Field:
    """A 30 m square: a bump of 3 m std and height 1 (a plume, a leak) at a place drawn from ``seed`` on a slope of
    0.3 across the square."""
    rng = np.random.default_rng([seed, 7])
    axis = np.linspace(0.0, NARROW_SIDE, 241)
    x, y = np.meshgrid(axis, axis)                      # (ny, nx), Z[j, i] at (xs[i], ys[j])
    cx, cy = rng.uniform(6.0, NARROW_SIDE - 6.0, 2)
    z = np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * NARROW_WIDTH ** 2)) + 0.3 * x / NARROW_SIDE
    return Field(z, (0.0, NARROW_SIDE, 0.0, NARROW_SIDE), name='narrow')


def mission(seed: int, args) -> tuple[Field, list[dict]]:
    """Run one mission; per measurement its reading, both placements and the sensor's true position."""
    offset = list(args.offset)
    sim = {'seed': seed, 'sensor_offset': offset, 'odom_angular_vel_std': args.yaw_noise}
    explorer = {'seed': seed, 'sensor_offset': offset, 'max_measurements': args.measurements,
                'n_initial': min(10, args.measurements)}
    field = None
    if args.field == 'narrow':
        field = narrow_field(seed)
        side = NARROW_SIDE
        sim.update(field_extent=[0.0, side, 0.0, side], initial_x=side / 2, initial_y=side / 2)
    params = mission_parameters({'sim_rover': sim, 'explorer': explorer,
                                 'ekf': {'initial_x': sim.get('initial_x', 100.0),
                                         'initial_y': sim.get('initial_y', 100.0)}})
    m = Mission(params, field=field)
    result = m.run(max_sim_time=20000.0)
    rows = []
    for meas, truth in zip(result.measurements, result.true_positions):
        mean, cov = meas.place
        rows.append({'y': float(meas.reading.value), 'truth': np.asarray(truth, float),
                     'aware': (np.asarray(mean, float), np.asarray(cov, float)),
                     'shifted': (sensor_position(meas.pose.xy, meas.pose.yaw, offset),
                                 np.asarray(meas.pose.cov, float)),
                     'pose': (np.asarray(meas.pose.xy, float), np.asarray(meas.pose.cov, float)),
                     'yaw_sd': float(np.sqrt(max(meas.pose.pose_covariance[2, 2], 0.0)))})
    return m.field, rows


def placement_metrics(field: Field, rows: list[dict], which: str, grid: np.ndarray, f_grid: np.ndarray,
                      seed: int, input_noise: bool) -> dict[str, float]:
    means = np.array([r[which][0] for r in rows])
    covs = np.array([r[which][1] for r in rows])
    truth = np.array([r['truth'] for r in rows])
    d = truth - means
    maha = np.einsum('ni,nij,nj->n', d, np.linalg.inv(covs), d)
    xmin, xmax, ymin, ymax = field.bounds
    bounds = torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE)
    torch.manual_seed(seed)
    gp = DistributionGP(bounds, noise_prior='lognormal', input_induced_noise=input_noise)
    gp.set_data(Gaussian(torch.as_tensor(means, dtype=DTYPE), torch.as_tensor(covs, dtype=DTYPE)),
                torch.as_tensor([r['y'] for r in rows], dtype=DTYPE))
    gp.fit()
    with torch.no_grad():
        mu, _ = gp.marginals(Dirac(torch.as_tensor(grid, dtype=DTYPE)))
    mu = mu.numpy()
    f_star, f_med = f_grid.max(), np.median(f_grid)
    return {'error': float(np.linalg.norm(d, axis=1).mean()), 'maha2': float(maha.mean()),
            'rmse': float(np.sqrt(np.mean((mu - f_grid) ** 2)) / f_grid.std()),
            'regret': float((f_star - f_grid[np.argmax(mu)]) / (f_star - f_med))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=16)
    ap.add_argument('--field', choices=['default', 'narrow'], default='narrow')
    ap.add_argument('--offset', default='1.5,0.0', help='x,y of the probe in base_link, m (default 1.5,0.0)')
    ap.add_argument('--yaw-noise', type=float, default=0.05,
                    help="wheel odometry's angular velocity noise, rad/s (config/sim.yaml: 0.02)")
    ap.add_argument('--measurements', type=int, default=30)
    ap.add_argument('--gp-input-noise', action='store_true',
                    help="the GP with each reading's input-induced variance in its noise (explorer gp_input_noise)")
    args = ap.parse_args(argv)
    try:
        args.offset = [float(v) for v in args.offset.split(',')]
        assert len(args.offset) == 2
    except (ValueError, AssertionError):
        print(f'error: --offset must be two comma-separated numbers, got {args.offset!r}', file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    per = {'aware': [], 'shifted': [], 'pose': []}
    yaw_sd = []
    print('seed  n  yaw sd (rad) | error (m) aware / shifted / pose | maha² | RMSE | regret')
    for seed in range(args.seeds):
        field, rows = mission(seed, args)
        xmin, xmax, ymin, ymax = field.bounds
        gx, gy = np.meshgrid(np.linspace(xmin, xmax, 41), np.linspace(ymin, ymax, 41))
        grid = np.column_stack([gx.ravel(), gy.ravel()])
        f_grid = field.value(grid)
        got = {k: placement_metrics(field, rows, k, grid, f_grid, seed, args.gp_input_noise) for k in per}
        for k in per:
            per[k].append(got[k])
        yaw_sd.append(np.median([r['yaw_sd'] for r in rows]))
        cells = [' / '.join(f'{got[k][metric]:.3f}' for k in per) for metric in ('error', 'maha2', 'rmse', 'regret')]
        print(f"{seed:4d} {len(rows):3d}  {yaw_sd[-1]:.3f}  | " + ' | '.join(cells), flush=True)
    print(f"\n{args.field} field, offset {args.offset} m, yaw noise {args.yaw_noise} rad/s, {args.seeds} seeds, "
          f"{args.measurements} measurements, GP input noise {args.gp_input_noise}; median heading sd "
          f"{np.median(yaw_sd):.3f} rad")
    print('(maha2: "better" is nearer 2)')
    print('| metric | aware | shifted | pose | aware better than pose (seeds, p) | than shifted (seeds, p) |')
    print('|---|---|---|---|---|---|')
    for metric in ('error', 'maha2', 'rmse', 'regret'):
        v = {k: np.array([r[metric] for r in per[k]]) for k in per}
        loss = {k: np.abs(x - 2.0) if metric == 'maha2' else x for k, x in v.items()}
        cells = []
        for other in ('pose', 'shifted'):
            diff = loss['aware'] - loss[other]
            pv = wilcoxon(diff).pvalue if np.any(diff != 0) else 1.0
            cells.append(f'{int(np.sum(diff < 0))}/{len(diff)}, p = {pv:.3g}')
        print(f"| {metric} | {np.median(v['aware']):.3f} | {np.median(v['shifted']):.3f} | {np.median(v['pose']):.3f} "
              f"| {cells[0]} | {cells[1]} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())

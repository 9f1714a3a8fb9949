"""How far consistent pose estimates stay below the pose gate's threshold on the simulated rover.

Runs in-process missions (:class:`uncertain_bo.sim.mission.Mission`: sim rover at 2 m/s, 2 m GNSS-like fixes at
1 Hz, EKF or particle filter) with the shipped parameters (``max_speed`` 5 m/s) and records the gate's
:math:`d^2` (:func:`uncertain_bo.explorer.pose_gate.jump_mahalanobis2`) of every test of every pose (the last
accepted estimate and the windows up to 16 s), in four settings: the default EKF, the particle filter, 5 % fix
outliers (20 m std), and the GNSS-degraded zone of ``config/gnss_degraded.yaml``. A false rejection would show as
a rejected pose and a d² above the threshold.

Usage::

    .venv/bin/python bench/pose_gate_margin.py [--measurements 15] [--max-speed 5.0]

Output: one line per setting: poses judged and tests made, how many tests moved beyond the reachable disc
(d² > 0), the largest d², the threshold, and the explorer's rejection counters of poses.
"""
import argparse

import numpy as np

import uncertain_bo.explorer.pose_gate as gate_module
from uncertain_bo.parameters.specs import config_path
from uncertain_bo.sim.mission import Mission, mission_parameters

SETTINGS = {
    'ekf': ({}, []),
    'particle filter': ({'localiser': 'pf'}, []),
    'fix outliers 5 %': ({'fix_outlier_prob': 0.05}, []),
    'gnss degraded': ({}, ['gnss_degraded.yaml']),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--measurements', type=int, default=15)
    ap.add_argument('--max-speed', type=float, default=None, help='override max_speed, m/s (default: shipped)')
    args = ap.parse_args()
    original, check = gate_module.jump_mahalanobis2, gate_module.PoseGate.check
    for name, (sim, files) in SETTINGS.items():
        seen, poses = [], []

        def recorded(*a, _seen=seen):
            d2 = original(*a)
            _seen.append(d2)
            return d2

        def counted(gate, *a, _poses=poses):
            _poses.append(1)
            return check(gate, *a)

        gate_module.jump_mahalanobis2 = recorded
        gate_module.PoseGate.check = counted
        explorer = {'max_measurements': args.measurements, 'num_restarts': 2, 'raw_samples': 64}
        if args.max_speed is not None:
            explorer['max_speed'] = args.max_speed
        params = mission_parameters({'explorer': explorer, 'sim_rover': sim},
                                    files=[config_path(f) for f in files])
        result = Mission(params).run(max_sim_time=6000)
        gate_module.jump_mahalanobis2, gate_module.PoseGate.check = original, check
        d2 = np.array(seen)
        rejected = {k: v for k, v in result.rejected.items() if k.startswith('pose')}
        print(f'{name}: {len(poses)} poses judged in {len(d2)} tests, {int((d2 > 0).sum())} beyond the reachable '
              f'disc, largest d² {d2.max():.3g} (threshold {gate_module.PoseGate({}).threshold:.3g}); poses rejected '
              f'{rejected}')


if __name__ == '__main__':
    main()

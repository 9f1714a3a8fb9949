"""Seconds per BO iteration in NES's within-model setting (Fröhlich et al. 2020, App. C.1, Table 1).

Each method runs the ``nes-within-model`` problem (1-D GP-prior draws, true hyperparameters, 3 initial + 27
decided evaluations) through the planner; every decided ``suggest()`` is timed in process time (one thread: what
the machine's load does not inflate) and in wall time. Targets on a 2-core CPU: NES-EP <= 0.19 s, NES-RS
<= 0.54 s (the paper: 1.90 s and 5.39 s on a Xeon E5-1620 v4).

    .venv/bin/python bench/nes_iteration_time.py [--methods nes_ep,nes_rs,...] [--seeds 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from uncertain_bo.acquisition import get_method
from uncertain_bo.benchmarks import get_problem
from uncertain_bo.benchmarks.base import BenchSettings
from uncertain_bo.planning.planner import Planner

METHODS = 'nes_ep,nes_rs,bo_uu_ei,bo_uu_ucb,bo_uu_mes,uei,ei'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--methods', default=METHODS)
    parser.add_argument('--seeds', type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    problem = get_problem('nes-within-model')
    print('| acquisition | CPU s / iteration, mean (std) | wall s / iteration, mean (std) | decisions |')
    print('|---|---|---|---|')
    for name in args.methods.split(','):
        cpu, wall = [], []
        for seed in range(args.seeds):
            inst = problem.instance(seed)
            world = inst.world(seed)
            planner = Planner(inst.bounds, method=name, seed=seed,
                              **inst.planner_config(get_method(name), BenchSettings()))
            for _ in range(problem.default_iterations):
                c0, w0 = time.process_time(), time.perf_counter()
                target = planner.suggest()
                c1, w1 = time.process_time(), time.perf_counter()
                if planner.decisions[-1].phase == 'acquisition':
                    cpu.append(c1 - c0)
                    wall.append(w1 - w0)
                m = world.measure(target)
                planner.observe(target, m.location, m.y)
        print(f'| {name} | {np.mean(cpu):.3f} ({np.std(cpu):.3f}) | {np.mean(wall):.3f} ({np.std(wall):.3f}) | '
              f'{len(cpu)} |', flush=True)


if __name__ == '__main__':
    main()

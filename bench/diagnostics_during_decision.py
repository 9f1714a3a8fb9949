"""Does ``/diagnostics`` keep its period while the explorer node decides?

Target: during a decision of about 2 s the largest gap between two ``/diagnostics`` messages stays within
2x ``diagnostics_period``.

A journal with ``--observations`` measurements is written first (targets in a 200 m x 200 m area, EKF-like
covariances, readings of the real elevation field), then an explorer node resumes it with large optimiser
settings (``--restarts``, ``--raw-samples``: the next acquisition decision takes seconds) and one pose
estimate starts the decision. The explorer node spins as ``ros2 run`` spins it (``rclpy.spin`` on a
single-threaded executor); a probe node in another executor records the wall time of every
``/diagnostics`` message until the goal arrives. ``--inline`` decides on the executor thread instead
(``decide_in_background: false``), which is how the node behaved before: diagnostics go dark.

    .venv/bin/python bench/diagnostics_during_decision.py [--period 0.2] [--observations 150]
        [--restarts 150 --raw-samples 100000]
    .venv/bin/python bench/diagnostics_during_decision.py --inline
"""
from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch


def write_journal(run_dir: Path, n: int, seed: int = 0) -> None:
    from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
    from uncertain_bo.planning.planner import Planner
    from uncertain_bo.sim.field import Field

    rng = np.random.default_rng(seed)
    field = Field.default()
    planner = Planner(torch.tensor([[0.0, 0.0], [200.0, 200.0]]), GaussianExecutionNoise.isotropic(0.75, 2),
                      n_initial=5, seed=seed, journal=run_dir / 'journal.jsonl')
    for _ in range(n):
        target = rng.uniform(0, 200, 2)
        where = target + rng.normal(0, 0.7, 2)
        a = rng.normal(0, 0.5, (2, 2))
        cov = a @ a.T + 0.1 * np.eye(2)
        y = float(field.value(where[None])[0]) + rng.normal(0, 2.0)
        planner.observe(torch.tensor(target), Gaussian(torch.tensor(where[None]), torch.tensor(cov[None])), y)


def measure(args) -> dict:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor

    from uncertain_bo.ros import conversions as cv
    from uncertain_bo.ros.explorer import ExplorerNode
    from uncertain_bo.ros.params import parameter_overrides

    run_dir = Path(tempfile.mkdtemp(prefix='diag-bench-'))
    write_journal(run_dir, args.observations)
    rclpy.init(domain_id=int(os.environ.get('ROS_DOMAIN_ID', '77')))
    node = ExplorerNode(parameter_overrides=parameter_overrides({
        'run_dir': str(run_dir), 'n_initial': 5, 'max_measurements': args.observations + 5,
        'num_restarts': args.restarts, 'raw_samples': args.raw_samples, 'refit_every': 1,
        'diagnostics_period': args.period, 'decide_in_background': not args.inline}))
    probe = rclpy.create_node('diag_probe')
    arrivals: list[float] = []
    goals: list[float] = []
    probe.create_subscription(DiagnosticArray, '/diagnostics', lambda m: arrivals.append(time.monotonic()), 50)
    probe.create_subscription(PoseStamped, 'goal_pose', lambda m: goals.append(time.monotonic()), 10)
    odom = probe.create_publisher(Odometry, 'odometry/filtered', 10)
    probe_exec = SingleThreadedExecutor()
    probe_exec.add_node(probe)
    node_exec = SingleThreadedExecutor()
    node_exec.add_node(node)
    # executor.spin() as rclpy.spin does (blocks in the wait set; no polling that would compete for the GIL)
    threads = [threading.Thread(target=e.spin, daemon=True) for e in (probe_exec, node_exec)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)   # discovery; a few periodic diagnostics
        cov6 = np.zeros((6, 6))
        cov6[:2, :2] = np.eye(2) * 0.04
        t_start = time.monotonic()
        while not goals and time.monotonic() - t_start < args.timeout:
            now = probe.get_clock().now().nanoseconds * 1e-9
            odom.publish(cv.make_odometry(now, 'map', 'base_link', [100.0, 100.0], 0.0, cov6))
            time.sleep(0.05)
        t_goal = goals[0] if goals else time.monotonic()
        time.sleep(2 * args.period)
    finally:
        for e in (probe_exec, node_exec):
            e.shutdown(timeout_sec=5.0)
        for t in threads:
            t.join(timeout=5.0)
        decision = node.explorer.planner.decisions[-1] if node.explorer.planner.decisions else None
        node.destroy_node()
        probe.destroy_node()
        rclpy.shutdown()
    window = [a for a in arrivals if t_start - args.period <= a <= t_goal + 2 * args.period]
    gaps = np.diff(window) if len(window) > 1 else np.array([t_goal - t_start])
    return {'decision_s': decision.seconds if decision is not None and goals else None,
            'decision_phase': decision.phase if decision is not None else None,
            'wall_to_goal_s': t_goal - t_start, 'messages': len(window),
            'max_gap_s': float(gaps.max()), 'median_gap_s': float(np.median(gaps)), 'period_s': args.period}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--period', type=float, default=0.2, help='diagnostics_period, s (default 0.2)')
    ap.add_argument('--observations', type=int, default=150, help='measurements in the resumed journal')
    ap.add_argument('--restarts', type=int, default=150, help='num_restarts of the decision')
    ap.add_argument('--raw-samples', type=int, default=100000, help='raw_samples of the decision')
    ap.add_argument('--inline', action='store_true', help='decide on the executor thread (the old behaviour)')
    ap.add_argument('--timeout', type=float, default=120.0, help='wall-clock limit, s')
    args = ap.parse_args()
    from uncertain_bo.cli import configure_torch_threads
    configure_torch_threads()
    r = measure(args)
    verdict = 'met' if r['max_gap_s'] <= 2 * r['period_s'] else 'MISSED'
    dec = 'n/a' if r['decision_s'] is None else f"{r['decision_s']:.2f} s ({r['decision_phase']})"
    print(f"{'inline' if args.inline else 'background'} decision {dec}; goal after {r['wall_to_goal_s']:.2f} s; "
          f"{r['messages']} /diagnostics messages, median gap {r['median_gap_s']:.3f} s, "
          f"max gap {r['max_gap_s']:.3f} s (period {r['period_s']} s; target <= 2x period: {verdict})")


if __name__ == '__main__':
    main()

"""Why "stale stamp ... bag replayed without use_sim_time?" appeared under fast simulated time, and that
deciding in the background fixes it.

A probe publishes ``/clock`` at ``--rate`` x real time (every 10 ms) and a pose estimate stamped with each
new time; an explorer node on simulated time resumes a journal of ``--observations`` measurements and
decides with large optimiser settings (about a second per decision), sending targets it never reaches
(``goal_timeout`` 3 s, no sensor), so it decides again and again. When the decision runs on the executor
thread (``--inline``, the old behaviour), the executor stops taking messages: the node clock (``/clock`` is
kept depth 1) jumps to the newest time when it resumes, while the pose queue still holds the poses of the
blocked second, which are now older than ``max_pose_age`` and rejected as stale (and some poses, taken
before the clock message of their instant, look future-stamped). With background decisions nothing queues.

    .venv/bin/python bench/stale_poses_fast_sim_time.py [--inline] [--seconds 20] [--rate 13]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--inline', action='store_true', help='decide on the executor thread (the old behaviour)')
    ap.add_argument('--seconds', type=float, default=20.0, help='wall-clock duration, s')
    ap.add_argument('--rate', type=float, default=13.0, help='simulated time per real time')
    ap.add_argument('--observations', type=int, default=150, help='measurements in the resumed journal')
    ap.add_argument('--switch-interval', type=float, default=None,
                    help="Python's thread switch interval, s (default: the interpreter's, 0.005)")
    args = ap.parse_args()
    if args.switch_interval:
        import sys
        sys.setswitchinterval(args.switch_interval)

    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rosgraph_msgs.msg import Clock

    from diagnostics_during_decision import write_journal
    from uncertain_bo.cli import configure_torch_threads
    from uncertain_bo.ros import conversions as cv
    from uncertain_bo.ros.explorer import ExplorerNode
    from uncertain_bo.ros.params import parameter_overrides

    configure_torch_threads()
    run_dir = Path(tempfile.mkdtemp(prefix='stale-bench-'))
    write_journal(run_dir, args.observations)
    rclpy.init(domain_id=int(os.environ.get('ROS_DOMAIN_ID', '91')))
    node = ExplorerNode(parameter_overrides=parameter_overrides({
        'run_dir': str(run_dir), 'n_initial': 5, 'max_measurements': args.observations + 100,
        'num_restarts': 60, 'raw_samples': 40000, 'decide_in_background': not args.inline,
        'xy_goal_tolerance': 0.01, 'goal_timeout': 3.0, 'dwell_time': 0.5})
        + [Parameter('use_sim_time', value=True)])
    probe = rclpy.create_node('clock_probe')
    clock_pub = probe.create_publisher(Clock, '/clock', 10)
    pose_pub = probe.create_publisher(Odometry, 'odometry/filtered', 50)
    executors = [SingleThreadedExecutor(), SingleThreadedExecutor()]
    executors[0].add_node(node)
    executors[1].add_node(probe)
    threads = [threading.Thread(target=e.spin, daemon=True) for e in executors]
    for t in threads:
        t.start()
    cov6 = np.zeros((6, 6))
    cov6[:2, :2] = np.eye(2) * 0.04
    t_sim, step = 1000.0, 0.01 * args.rate
    end = time.monotonic() + args.seconds
    try:
        while time.monotonic() < end:
            t_sim += step
            clock_pub.publish(Clock(clock=cv.to_time_msg(t_sim)))
            pose_pub.publish(cv.make_odometry(t_sim, 'map', 'base_link', [100.0, 100.0], 0.0, cov6))
            time.sleep(0.01)
        ex = node.explorer
        stale = ex.rejected.get('pose: stale stamp', 0)
        future = ex.rejected.get('pose: future stamp', 0)
        print(f"{'inline' if args.inline else 'background'} decisions at {args.rate:g}x simulated time: "
              f"{len(ex.planner.decisions)} decisions in {args.seconds:g} s; "
              f"{ex.received['poses']} poses received, {stale} rejected as stale, {future} as future-stamped")
    finally:
        for e in executors:
            e.shutdown(timeout_sec=30.0)   # (an inline decision finishes first)
        for t in threads:
            t.join(timeout=30.0)
        node.destroy_node()
        probe.destroy_node()
        rclpy.shutdown()


if __name__ == '__main__':
    main()

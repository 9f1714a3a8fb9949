"""High-rate input: the explorer node's memory and responsiveness under a 500 Hz pose / 100 Hz reading flood.

The explorer runs in its own process (``python -m uncertain_bo.ros.explorer`` with config/explorer.yaml and
a few overrides: 50 m search area, up to 1000 measurements, wall-clock time) on a private ROS_DOMAIN_ID.
This process plays the rover: it publishes ``odometry/filtered`` at ``--pose-rate`` and ``reading`` at
``--reading-rate`` for ``--seconds``, moving its position towards the explorer's current goal at ``--speed``, so
the explorer keeps deciding, driving, dwelling and measuring under the flood.

Measured:

- resident memory of the explorer process (``/proc/<pid>/status`` VmRSS sampled every 0.2 s, and VmHWM):
  idle (up, no input for ``--idle`` s) vs peak during the flood; the target is peak - idle <= 50 MB;
  also the RSS at 10 s into the flood vs at its end (growth = unbounded buffering);
- responsiveness: goals published and measurements stored during the flood, /diagnostics messages
  received and the longest gap between two of them (the longest time the node did not get to its timers),
  and how many of the published poses the node processed (``poses received`` in /diagnostics; the rest were
  dropped by the bounded subscription queue while a decision ran).

Usage::

    .venv/bin/python bench/explorer_high_rate.py                  # 60 s at 500 Hz / 100 Hz
    .venv/bin/python bench/explorer_high_rate.py --seconds 10     # quick look
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    vals = {}
    with open(f'/proc/{pid}/status') as fh:
        for line in fh:
            if line.startswith(('VmRSS:', 'VmHWM:')):
                k, v = line.split(':')
                vals[k] = int(v.split()[0]) / 1024.0
    return vals.get('VmRSS', float('nan')), vals.get('VmHWM', float('nan'))


class Sampler(threading.Thread):
    def __init__(self, pid: int, period: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples: list[tuple[float, float]] = []
        self.running = True

    def run(self):
        while self.running:
            try:
                self.samples.append((time.monotonic(), rss_mb(self.pid)[0]))
            except OSError:
                return
            time.sleep(self.period)

    def peak(self, t0: float, t1: float) -> float:
        v = [r for t, r in self.samples if t0 <= t <= t1]
        return max(v) if v else float('nan')

    def at(self, t: float) -> float:
        v = [r for s, r in self.samples if s <= t]
        return v[-1] if v else float('nan')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=60.0, help='length of the flood, s')
    ap.add_argument('--pose-rate', type=float, default=500.0, help='Hz')
    ap.add_argument('--reading-rate', type=float, default=100.0, help='Hz')
    ap.add_argument('--idle', type=float, default=5.0, help='idle time before the flood, s')
    ap.add_argument('--speed', type=float, default=5.0, help="the simulated rover's speed towards the goal, m/s")
    ap.add_argument('--domain', type=int, default=232, help='private ROS_DOMAIN_ID (< 233)')
    ap.add_argument('--out', type=Path, default=None, help='folder for the run_dir, log and result.json')
    args = ap.parse_args(argv)

    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    os.environ.setdefault('ROS_LOCALHOST_ONLY', '1')
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Temperature

    from uncertain_bo.ros import conversions as cv
    from uncertain_bo.ros.reading_messages import make_reading

    out = args.out or Path(tempfile.mkdtemp(prefix='explorer_high_rate_'))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, 'RCUTILS_LOGGING_BUFFERED_STREAM': '1',
           'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    cmd = [sys.executable, '-m', 'uncertain_bo.ros.explorer', '--ros-args',
           '--params-file', str(ROOT / 'config' / 'explorer.yaml'),
           '-p', f'run_dir:={out / "run"}', '-p', 'search_bounds:=[0.0, 50.0, 0.0, 50.0]',
           '-p', 'max_measurements:=1000', '-p', 'dwell_time:=0.5', '-p', 'reading_timeout:=2.0',
           '-p', 'max_pose_age:=0.2']
    log = open(out / 'explorer.log', 'w')
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    sampler = Sampler(proc.pid)
    sampler.start()

    rclpy.init()
    node = rclpy.create_node('high_rate_rover')
    goals, diags = [], []
    node.create_subscription(PoseStamped, 'goal_pose', lambda m: goals.append((time.monotonic(), m)), 10)
    node.create_subscription(DiagnosticArray, '/diagnostics', lambda m: diags.append((time.monotonic(), m)), 50)
    odom = node.create_publisher(Odometry, 'odometry/filtered', 50)
    reading = node.create_publisher(Temperature, 'reading', 10)
    ex = SingleThreadedExecutor()
    ex.add_node(node)

    def status():
        for _, arr in reversed(diags):
            for s in arr.status:
                if s.name.startswith('explorer'):
                    return {kv.key: kv.value for kv in s.values}
        return {}

    result: dict = {}
    try:
        t_start = time.monotonic()
        while not diags and time.monotonic() - t_start < 120:     # explorer up (imports, journal)
            ex.spin_once(timeout_sec=0.05)
        if not diags:
            raise RuntimeError(f'explorer did not come up; see {out / "explorer.log"}')
        startup = time.monotonic() - t_start
        t_idle = time.monotonic()
        while time.monotonic() - t_idle < args.idle:
            ex.spin_once(timeout_sec=0.05)
        idle_rss, _ = rss_mb(proc.pid)

        # ---- the flood
        xy = np.array([25.0, 25.0])
        cov = np.zeros((6, 6))
        cov[0, 0] = cov[1, 1] = 0.04
        dt_pose, dt_reading = 1.0 / args.pose_rate, 1.0 / args.reading_rate
        t0 = time.monotonic()
        next_pose = next_reading = t0
        sent_poses = sent_readings = 0
        n_goals0, n_diag0 = len(goals), len(diags)
        last = t0
        lag_max = 0.0
        while True:
            now = time.monotonic()
            if now - t0 >= args.seconds:
                break
            if goals:                                      # drive towards the goal
                g = goals[-1][1].pose.position
                d = np.array([g.x, g.y]) - xy
                step = args.speed * (now - last)
                xy = xy + d * min(1.0, step / max(np.linalg.norm(d), 1e-9))
            last = now
            stamp = time.time()
            if now >= next_pose:
                odom.publish(cv.make_odometry(stamp, 'map', 'base_link', xy, 0.0, cov))
                sent_poses += 1
                next_pose += dt_pose
            if now >= next_reading:
                reading.publish(make_reading('temperature', stamp, 'base_link', float(xy.sum()), 0.01))
                sent_readings += 1
                next_reading += dt_reading
            lag_max = max(lag_max, now - next_pose)
            ex.spin_once(timeout_sec=0.0)
            wait = min(next_pose, next_reading) - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, 0.001))
        t1 = time.monotonic()
        end = time.monotonic()
        while time.monotonic() - end < 2.0:                # last diagnostics
            ex.spin_once(timeout_sec=0.05)
        rss_end, hwm = rss_mb(proc.pid)
        flood_diags = [t for t, _ in diags[n_diag0:] if t0 <= t <= t1]
        gaps = np.diff([t0, *flood_diags, t1]) if flood_diags else np.array([t1 - t0])
        st = status()
        peak = sampler.peak(t0, t1 + 2.0)
        result = {
            'seconds': args.seconds, 'pose_rate_hz': sent_poses / (t1 - t0),
            'reading_rate_hz': sent_readings / (t1 - t0), 'publisher_max_lag_s': lag_max,
            'startup_s': startup, 'idle_rss_mb': idle_rss, 'peak_rss_mb': peak, 'vm_hwm_mb': hwm,
            'peak_minus_idle_mb': peak - idle_rss, 'target_mb': 50.0,
            'rss_at_10s_mb': sampler.at(t0 + 10.0), 'rss_at_end_mb': sampler.at(t1),
            'goals_during_flood': len(goals) - n_goals0, 'measurements': st.get('measurements'),
            'poses_published': sent_poses, 'poses_received_by_node': st.get('poses received'),
            'readings_published': sent_readings, 'readings_received_by_node': st.get('readings received'),
            'rejected_total': st.get('rejected total'),
            'diagnostics_during_flood': len(flood_diags), 'longest_diagnostics_gap_s': float(gaps.max()),
            'last_decision_seconds': st.get('last decision seconds'), 'explorer_state': st.get('state'),
        }
    finally:
        sampler.running = False
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        log.close()
    (out / 'result.json').write_text(json.dumps(result, indent=2))
    r = result
    print(f"flood: {r['pose_rate_hz']:.0f} Hz poses, {r['reading_rate_hz']:.0f} Hz readings for {r['seconds']:.0f} s "
          f"(explorer up after {r['startup_s']:.1f} s)")
    print(f"memory: idle {r['idle_rss_mb']:.1f} MB, peak {r['peak_rss_mb']:.1f} MB (VmHWM {r['vm_hwm_mb']:.1f}), "
          f"peak - idle {r['peak_minus_idle_mb']:+.1f} MB (target <= 50); RSS at 10 s {r['rss_at_10s_mb']:.1f} MB, "
          f"at the end {r['rss_at_end_mb']:.1f} MB")
    print(f"responsiveness: {r['goals_during_flood']} goals, measurements {r['measurements']}, "
          f"{r['diagnostics_during_flood']} diagnostics (longest gap {r['longest_diagnostics_gap_s']:.2f} s); "
          f"poses processed {r['poses_received_by_node']}/{r['poses_published']}, readings "
          f"{r['readings_received_by_node']}/{r['readings_published']}, rejected {r['rejected_total']}")
    print(f'details: {out / "result.json"}')
    return 0 if r['peak_minus_idle_mb'] <= 50.0 and r['goals_during_flood'] > 0 else 1


if __name__ == '__main__':
    sys.exit(main())

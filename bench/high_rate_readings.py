"""Readings at 1 kHz for minutes: the explorer node's decision latency, memory and input accounting.

A field sensor that streams (gas, temperature) may publish at hundreds of Hz to kHz. The explorer runs in its own
process (``python -m uncertain_bo.ros.explorer`` with config/explorer.yaml and a few overrides: a 50 m search
area, many measurements, ``reading_type`` float64 or temperature) on a private ROS_DOMAIN_ID. This process plays
the rover: it publishes ``reading`` at ``--reading-rate`` (std_msgs/Float64 or sensor_msgs/Temperature) and
``odometry/filtered`` (nav_msgs/Odometry) at ``--pose-rate`` for ``--duration`` seconds, and moves its position
towards each ``goal_pose`` the explorer sends at ``--speed``, so the explorer keeps deciding, driving, dwelling and
measuring under the stream.

Measured:

- decision latency: the ``seconds`` of the journal's decision records (wall time of the GP update and the
  acquisition maximisation on the explorer's decision thread, which shares the GIL with the subscription
  callbacks), median / p90 / max; and the response time the rover sees: from a measurement's journal record
  (its ``wall_time``) to the next ``goal_pose`` received here;
- resident memory of the explorer process (psutil if installed, else ``/proc/<pid>/status`` VmRSS) every
  ``--rss-every`` seconds; growth from the first sample of the stream to the last, and over its second half;
- readings and poses received by the node (its ``/diagnostics`` counters) against those published, rejected
  inputs, and measurements done.

Usage::

    nice -n 10 .venv/bin/python bench/high_rate_readings.py                    # 5 min, 1 kHz Float64, 50 Hz poses
    nice -n 10 .venv/bin/python bench/high_rate_readings.py --duration 60 --reading-type temperature
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb(pid: int) -> float:
    """Resident memory of process ``pid``, MB (psutil if installed, else /proc/<pid>/status VmRSS)."""
    try:
        import psutil
        return psutil.Process(pid).memory_info().rss / 2 ** 20
    except ImportError:
        with open(f'/proc/{pid}/status') as fh:
            for line in fh:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    return float('nan')


def journal_records(path: Path) -> list[dict]:
    out = []
    if path.is_file():
        for line in path.read_bytes().split(b'\n'):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--duration', type=float, default=300.0, help='length of the stream, s')
    ap.add_argument('--reading-rate', type=float, default=1000.0, help='Hz')
    ap.add_argument('--pose-rate', type=float, default=50.0, help='Hz')
    ap.add_argument('--reading-type', choices=('float64', 'temperature'), default='float64')
    ap.add_argument('--rss-every', type=float, default=30.0, help='RSS sample period, s')
    ap.add_argument('--speed', type=float, default=5.0, help="the simulated rover's speed towards the goal, m/s")
    ap.add_argument('--measurements', type=int, default=1000, help="the explorer's max_measurements")
    ap.add_argument('--domain', type=int, default=182, help='private ROS_DOMAIN_ID')
    ap.add_argument('--out', type=Path, default=None, help='folder for the run_dir, log and result.json')
    args = ap.parse_args(argv)

    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    os.environ.setdefault('ROS_LOCALHOST_ONLY', '1')
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data

    from uncertain_bo.ros import conversions as cv
    from uncertain_bo.ros.reading_messages import READING_TYPES, make_reading

    out = args.out or Path(tempfile.mkdtemp(prefix='high_rate_readings_'))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, 'RCUTILS_LOGGING_BUFFERED_STREAM': '1',
           'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    cmd = [sys.executable, '-m', 'uncertain_bo.ros.explorer', '--ros-args',
           '--params-file', str(ROOT / 'config' / 'explorer.yaml'),
           '-p', f'run_dir:={out / "run"}', '-p', 'search_bounds:=[0.0, 50.0, 0.0, 50.0]',
           '-p', f'max_measurements:={args.measurements}', '-p', f'reading_type:={args.reading_type}']
    log = open(out / 'explorer.log', 'w')
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

    rclpy.init()
    node = rclpy.create_node('high_rate_rover')
    goals, diags = [], []
    node.create_subscription(PoseStamped, 'goal_pose', lambda m: goals.append((time.time(), m)), 10)
    node.create_subscription(DiagnosticArray, '/diagnostics', lambda m: diags.append(m), 50)
    odom = node.create_publisher(Odometry, 'odometry/filtered', 50)
    msg_type = READING_TYPES[args.reading_type][0]
    reading = node.create_publisher(msg_type, 'reading', qos_profile_sensor_data)
    ex = SingleThreadedExecutor()
    ex.add_node(node)

    def status():
        for arr in reversed(diags):
            for s in arr.status:
                if s.name.startswith('explorer'):
                    return {kv.key: kv.value for kv in s.values}
        return {}

    result: dict = {}
    rss: list[tuple[float, float]] = []
    try:
        t_start = time.monotonic()
        while not diags and time.monotonic() - t_start < 180:     # explorer up (imports, journal)
            ex.spin_once(timeout_sec=0.05)
        if not diags:
            raise RuntimeError(f'explorer did not come up; see {out / "explorer.log"}')
        startup = time.monotonic() - t_start
        st0 = status()
        rss_idle = rss_mb(proc.pid)

        # ---- the stream
        xy = np.array([25.0, 25.0])
        cov = np.zeros((6, 6))
        cov[0, 0] = cov[1, 1] = 0.04
        dt_pose, dt_reading = 1.0 / args.pose_rate, 1.0 / args.reading_rate
        t0 = time.monotonic()
        next_pose = next_reading = next_rss = t0
        sent_poses = sent_readings = 0
        last = t0
        max_lag = 0.0
        while True:
            now = time.monotonic()
            if now - t0 >= args.duration:
                break
            if now >= next_rss:
                rss.append((now - t0, rss_mb(proc.pid)))
                print(f'  {now - t0:6.0f} s  RSS {rss[-1][1]:7.1f} MB  readings sent {sent_readings}  '
                      f'received {status().get("readings received")}  measurements {status().get("measurements")}',
                      flush=True)
                next_rss += args.rss_every
            if goals:                                      # drive towards the latest goal
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
            while now >= next_reading:                     # catch up after a slow spin (counts stay honest)
                reading.publish(make_reading(args.reading_type, stamp, 'base_link', float(xy.sum()), 0.01))
                sent_readings += 1
                next_reading += dt_reading
            max_lag = max(max_lag, time.monotonic() - next_reading)
            ex.spin_once(timeout_sec=0.0)
            wait = min(next_pose, next_reading) - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, 0.0005))
        t1 = time.monotonic()
        rss.append((t1 - t0, rss_mb(proc.pid)))
        end = time.monotonic()
        n_diag = len(diags)
        while time.monotonic() - end < 5.0 and len(diags) < n_diag + 2:   # counters after the stream
            ex.spin_once(timeout_sec=0.05)
        st = status()
        recs = journal_records(out / 'run' / 'journal.jsonl')
        secs = [r['seconds'] for r in recs if r.get('type') == 'decision' and r.get('phase') == 'acquisition']
        obs_wall = [r['wall_time'] for r in recs if r.get('type') == 'observation']
        goal_wall = [t for t, _ in goals]
        response = []
        for w in obs_wall:                                 # measurement stored -> next goal at the rover
            nxt = [t for t in goal_wall if t > w]
            if nxt:
                response.append(nxt[0] - w)

        def stats(v):
            return ({'n': len(v), 'median': statistics.median(v), 'p90': float(np.percentile(v, 90)),
                     'max': max(v)} if v else {'n': 0})

        half = [r for t, r in rss if t >= (t1 - t0) / 2]
        result = {
            'duration_s': t1 - t0, 'reading_type': args.reading_type,
            'reading_rate_hz': sent_readings / (t1 - t0), 'pose_rate_hz': sent_poses / (t1 - t0),
            'publisher_max_lag_s': max_lag, 'startup_s': startup,
            'rss_idle_mb': rss_idle, 'rss_series': rss, 'rss_first_mb': rss[0][1], 'rss_last_mb': rss[-1][1],
            'rss_growth_mb': rss[-1][1] - rss[0][1], 'rss_growth_second_half_mb': half[-1] - half[0],
            'readings_published': sent_readings,
            'readings_received': int(st.get('readings received', 0)) - int(st0.get('readings received', 0)),
            'poses_published': sent_poses,
            'poses_received': int(st.get('poses received', 0)) - int(st0.get('poses received', 0)),
            'rejected_total': st.get('rejected total'), 'measurements': st.get('measurements'),
            'goals': len(goals), 'decision_seconds': stats(secs), 'response_seconds': stats(response),
            'explorer_state': st.get('state'), 'load_average': os.getloadavg(),
        }
    finally:
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
    print(f"stream: {r['reading_rate_hz']:.0f} Hz {r['reading_type']} readings, {r['pose_rate_hz']:.0f} Hz poses for "
          f"{r['duration_s']:.0f} s (explorer up after {r['startup_s']:.1f} s; publisher's longest lag "
          f"{r['publisher_max_lag_s'] * 1e3:.0f} ms)")
    print(f"inputs: readings received {r['readings_received']}/{r['readings_published']} "
          f"({r['readings_received'] / max(r['readings_published'], 1):.1%}), poses {r['poses_received']}/"
          f"{r['poses_published']} ({r['poses_received'] / max(r['poses_published'], 1):.1%}), "
          f"rejected {r['rejected_total']}; {r['measurements']} measurements, {r['goals']} goals")
    for name in ('decision_seconds', 'response_seconds'):
        s = r[name]
        if s['n']:
            print(f"{name.replace('_', ' ')}: n {s['n']}, median {s['median']:.3f}, p90 {s['p90']:.3f}, "
                  f"max {s['max']:.3f}")
    print('RSS (MB) every %.0f s: %s' % (args.rss_every, ', '.join(f'{v:.0f}' for _, v in r['rss_series'])))
    print(f"RSS growth {r['rss_growth_mb']:+.1f} MB over the stream, {r['rss_growth_second_half_mb']:+.1f} MB over "
          f"its second half (idle before the stream {r['rss_idle_mb']:.1f} MB); load average "
          f"{r['load_average'][0]:.2f}")
    print(f'details: {out / "result.json"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""Large particle clouds over DDS: what fraction of geometry_msgs/PoseArray clouds reaches the explorer.

A publisher process sends particle clouds as the ``particle_filter`` node does (``make_particle_cloud``, topic
``particle_cloud``, its QoS: ``qos_profile_sensor_data``, best effort, keep last 5) at ``--rate`` Hz (the PF's
2 Hz of simulated time; in the lockstep demo simulated time runs several times faster than wall time). This
process receives them as the explorer does (``qos_profile_sensor_data``, ``raw=True``, parsed with
``pose_array_from_cdr`` and subsampled to ``cloud_receive_limit`` = 5000) and counts them. The clouds are built
once per size (and re-stamped per send), so the publisher's rate is the transport's question, not the cost of
building 10^4 Pose objects in Python (about 0.04 ms per pose, measured in the node's docstring).

For each ``--sizes`` (particles per cloud) and each ``--qos``:

- ``best_effort``: both sides as shipped (the PF node's publisher and the explorer's subscription);
- ``reliable``: both sides reliable, keep last 5 (what a user might try; note that a reliable subscription would
  not match a best-effort publisher such as AMCL's ``particle_cloud``);
- ``subsampled``: best effort, the cloud resampled at the source to ``--published-particles`` (the PF node's
  ``published_particles`` parameter, shipped 200).

Reported: clouds published, received, the arrival fraction, and the median publish-to-receive latency.

Usage::

    nice -n 10 .venv/bin/python bench/particle_cloud_arrival.py                          # 10^3, 10^4, 5*10^4
    nice -n 10 .venv/bin/python bench/particle_cloud_arrival.py --sizes 10000 --count 24 --qos best_effort
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

QOS_CHOICES = ('best_effort', 'reliable', 'subsampled')


def qos(kind: str):
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    if kind == 'reliable':
        return QoSProfile(depth=qos_profile_sensor_data.depth, reliability=ReliabilityPolicy.RELIABLE)
    return qos_profile_sensor_data


def publisher(args) -> int:
    """Child process: publish ``--count`` clouds of ``--size`` particles at ``--rate`` Hz after the match."""
    import rclpy
    from geometry_msgs.msg import PoseArray

    from uncertain_bo.explorer import resample_particles
    from uncertain_bo.ros import conversions as cv
    from uncertain_bo.ros.particle_filter import make_particle_cloud

    rclpy.init()
    node = rclpy.create_node('cloud_publisher')
    pub = node.create_publisher(PoseArray, 'particle_cloud', qos(args.qos))
    rng = np.random.default_rng(0)
    particles = np.column_stack([rng.normal(25, 1, (args.size, 2)), rng.uniform(-3, 3, args.size)])
    if args.qos == 'subsampled':
        particles = resample_particles(particles, np.full(args.size, 1.0 / args.size), args.published_particles, rng)
    msg = make_particle_cloud(0.0, 'map', particles)
    t0 = time.monotonic()
    while pub.get_subscription_count() == 0 and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    time.sleep(0.5)
    period = 1.0 / args.rate
    nxt = time.monotonic()
    for _ in range(args.count):
        msg.header = cv.make_header(time.time(), 'map')
        pub.publish(msg)
        nxt += period
        time.sleep(max(0.0, nxt - time.monotonic()))
    time.sleep(2.0)                     # let the last fragments go out before the writer is destroyed
    node.destroy_node()
    rclpy.shutdown()
    return 0


def measure(size: int, kind: str, args, out: Path) -> dict:
    import rclpy
    from geometry_msgs.msg import PoseArray
    from rclpy.executors import SingleThreadedExecutor

    from uncertain_bo.ros.particle_clouds import pose_array_from_cdr

    rclpy.init()
    node = rclpy.create_node('cloud_receiver')
    got: list[tuple[float, int]] = []
    rng = np.random.default_rng(0)

    def on_cloud(raw: bytes) -> None:           # the explorer's _on_cloud_raw, minus the explorer
        cloud = pose_array_from_cdr(raw, 5000, rng)
        got.append((time.time() - cloud.stamp, len(raw)))

    node.create_subscription(PoseArray, 'particle_cloud', on_cloud, qos(kind), raw=True)
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    cmd = [sys.executable, __file__, '--child', '--size', str(size), '--qos', kind, '--rate', str(args.rate),
           '--count', str(args.count), '--published-particles', str(args.published_particles)]
    env = {**os.environ, 'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    with open(out / f'publisher_{size}_{kind}.log', 'w') as log:
        child = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        while child.poll() is None:
            ex.spin_once(timeout_sec=0.05)
        t = time.monotonic()
        while time.monotonic() - t < 1.0:
            ex.spin_once(timeout_sec=0.05)
    ex.shutdown()
    node.destroy_node()
    rclpy.shutdown()
    lat = [d for d, _ in got]
    return {'particles': size, 'qos': kind, 'published': args.count, 'received': len(got),
            'fraction': len(got) / args.count, 'bytes': got[0][1] if got else None,
            'latency_median_s': statistics.median(lat) if lat else None, 'publisher_exit': child.returncode}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sizes', type=int, nargs='+', default=[1000, 10000, 50000], help='particles per cloud')
    ap.add_argument('--qos', choices=QOS_CHOICES, nargs='+', default=list(QOS_CHOICES))
    ap.add_argument('--rate', type=float, default=2.0, help='clouds per second (wall clock)')
    ap.add_argument('--count', type=int, default=24, help='clouds per size and QoS')
    ap.add_argument('--published-particles', type=int, default=200, help="the 'subsampled' case's cloud size")
    ap.add_argument('--domain', type=int, default=183, help='private ROS_DOMAIN_ID')
    ap.add_argument('--out', type=Path, default=None, help='folder for the publisher logs and result.json')
    ap.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    ap.add_argument('--size', type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    os.environ.setdefault('ROS_LOCALHOST_ONLY', '1')
    if args.child:
        args.qos = args.qos[0]
        return publisher(args)

    out = args.out or Path(tempfile.mkdtemp(prefix='particle_cloud_arrival_'))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f'{"particles":>9s} {"QoS":>12s} {"bytes":>9s} {"published":>9s} {"received":>8s} {"fraction":>8s} '
          f'{"latency":>8s}')
    for size in args.sizes:
        for kind in args.qos:
            r = measure(size, kind, args, out)
            rows.append(r)
            lat = f"{r['latency_median_s'] * 1e3:.0f} ms" if r['latency_median_s'] is not None else '-'
            print(f"{size:9d} {kind:>12s} {r['bytes'] or 0:9d} {r['published']:9d} {r['received']:8d} "
                  f"{r['fraction']:8.0%} {lat:>8s}", flush=True)
    result = {'rate_hz': args.rate, 'count': args.count, 'published_particles': args.published_particles,
              'rmw': os.environ.get('RMW_IMPLEMENTATION', 'default'), 'rows': rows, 'load_average': os.getloadavg()}
    (out / 'result.json').write_text(json.dumps(result, indent=2))
    print(f'{args.count} clouds at {args.rate:g} Hz per row; load average {os.getloadavg()[0]:.2f}; details: '
          f'{out / "result.json"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

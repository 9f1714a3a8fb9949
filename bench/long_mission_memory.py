"""Memory of a long simulated mission: does a 2-hour mission's resident memory grow without bound?

Runs the in-process simulated mission (:class:`uncertain_bo.sim.mission.Mission`: sim_rover, EKF or particle
filter, pure pursuit and the explorer's measurement cycle around the planner, config/sim.yaml and
config/explorer.yaml, no DDS) with ``max_mission_time = --sim-seconds`` of simulated time and ``max_measurements``
large (``--measurements``), as fast as the CPU allows, and samples the process's resident memory (psutil, or
``/proc/self/status`` VmRSS) every ``--every`` simulated seconds (default 10 simulated minutes), with the number of
measurements and en-route readings stored by then and the wall time. A journal is written (``--out``/run), as a
field run writes one.

Reported: the RSS series, growth from the first sample to the last and over the second half of the mission (MB per
simulated hour), and the planner's decision times (median, max) as the data grow. To tell a leak from the working
memory of a GP over more readings, a fresh process then opens a copy of the journal (the planner resumes every
observation), makes ``--fresh-decisions`` decisions, and reports its RSS: a leak shows as the mission's last RSS far
above the fresh process's; and the mission's own RSS is read again after ``gc.collect()`` and glibc's
``malloc_trim(0)`` (freed heap pages handed back to the OS: what remains is live memory or fragmentation).

Usage::

    nice -n 10 .venv/bin/python bench/long_mission_memory.py                       # 2 h of sim time
    nice -n 10 .venv/bin/python bench/long_mission_memory.py --sim-seconds 1800    # quick look
    nice -n 10 .venv/bin/python bench/long_mission_memory.py --en-route-spacing 5  # with en-route readings
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    """Resident memory of this process, MB (psutil if installed, else /proc/self/status VmRSS)."""
    try:
        import psutil
        return psutil.Process().memory_info().rss / 2 ** 20
    except ImportError:
        with open('/proc/self/status') as fh:
            for line in fh:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    return float('nan')


def mission_params(args) -> dict:
    from uncertain_bo.sim.mission import mission_parameters
    return mission_parameters({
        'sim_rover': {'seed': args.seed, 'localiser': args.localiser},
        'explorer': {'seed': args.seed, 'max_measurements': args.measurements,
                     'max_mission_time': args.sim_seconds, 'en_route_spacing': args.en_route_spacing,
                     **({'method': args.method} if args.method else {})}})


def replay_child(args) -> int:
    """Fresh process: resume a copy of the journal, decide ``--fresh-decisions`` times (each target observed at a
    0.5 m Gaussian with the mean reading), print JSON with the RSS."""
    import torch

    from uncertain_bo.cli import configure_torch_threads
    from uncertain_bo.distributions import DTYPE, Gaussian
    from uncertain_bo.explorer import planner_from_parameters
    configure_torch_threads()
    rss0 = rss_mb()
    planner = planner_from_parameters(mission_params(args)['explorer'], journal=args.child_replay)
    planner.take_resumed_target()
    rss_loaded = rss_mb()
    peak = rss_loaded
    y = float(planner.y.mean())
    for _ in range(args.fresh_decisions):
        target = planner.suggest()
        peak = max(peak, rss_mb())
        loc = Gaussian(target.reshape(1, -1).to(DTYPE), 0.25 * torch.eye(2, dtype=DTYPE)[None])
        planner.observe(target, loc, y)
    print(json.dumps({'rss_start_mb': rss0, 'rss_loaded_mb': rss_loaded, 'rss_after_mb': rss_mb(),
                      'rss_peak_mb': peak, 'readings': planner.n + planner.n_en_route}))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sim-seconds', type=float, default=7200.0, help='max_mission_time, simulated s')
    ap.add_argument('--every', type=float, default=600.0, help='RSS sample period, simulated s')
    ap.add_argument('--measurements', type=int, default=100000, help='max_measurements')
    ap.add_argument('--en-route-spacing', type=float, default=0.0, help='en_route_spacing, m (0 = off)')
    ap.add_argument('--localiser', choices=('ekf', 'pf'), default='ekf')
    ap.add_argument('--method', default=None, help="explorer method (default config/explorer.yaml's)")
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--fresh-decisions', type=int, default=3, help='decisions of the fresh process (0 = skip it)')
    ap.add_argument('--out', type=Path, default=None, help='folder for run/ (journal) and result.json')
    ap.add_argument('--child-replay', type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_replay is not None:
        return replay_child(args)

    from uncertain_bo.cli import configure_torch_threads
    configure_torch_threads()
    from uncertain_bo.sim.mission import Mission

    out = args.out or Path(tempfile.mkdtemp(prefix='long_mission_'))
    (out / 'run').mkdir(parents=True, exist_ok=True)
    params = mission_params(args)
    rss0 = rss_mb()
    mission = Mission(params, journal=out / 'run' / 'journal.jsonl')
    series: list[dict] = []
    measurements = [0]
    wall0 = time.perf_counter()
    next_sample = [0.0]
    step = mission.world.step

    def sample(t: float) -> None:
        series.append({'sim_s': round(t, 1), 'wall_s': round(time.perf_counter() - wall0, 1), 'rss_mb': rss_mb(),
                       'measurements': measurements[0], 'en_route': mission.planner.n_en_route})
        s = series[-1]
        print(f"  sim {s['sim_s'] / 60:6.1f} min  wall {s['wall_s']:7.1f} s  RSS {s['rss_mb']:7.1f} MB  "
              f"measurements {s['measurements']:4d}  en-route {s['en_route']:5d}", flush=True)

    def sampled_step(v, w):             # the world's step, sampling RSS each time sim time passes a multiple
        s = step(v, w)
        if s.t >= next_sample[0]:
            sample(s.t)
            next_sample[0] += args.every
        return s

    mission.world.step = sampled_step

    def counted(m, rec):
        measurements[0] += 1

    print(f'mission: {args.sim_seconds:g} s of sim time, localiser {args.localiser}, en_route_spacing '
          f'{args.en_route_spacing:g} m, seed {args.seed}; RSS before the mission {rss0:.1f} MB')
    result = mission.run(max_sim_time=args.sim_seconds + 600.0, on_measurement=counted)
    sample(result.sim_time)
    import ctypes
    import gc
    gc.collect()
    try:                                # hand freed heap pages back: what stays is live memory (or fragmentation)
        ctypes.CDLL('libc.so.6').malloc_trim(0)
        rss_trimmed = rss_mb()
    except (OSError, AttributeError):
        rss_trimmed = None
    secs = [d.seconds for d in mission.planner.decisions if d.seconds is not None]
    first, last = series[0], series[-1]
    half = [s for s in series if s['sim_s'] >= last['sim_s'] / 2]
    hours = (last['sim_s'] - half[0]['sim_s']) / 3600.0
    summary = {
        'sim_seconds': args.sim_seconds, 'seed': args.seed, 'localiser': args.localiser,
        'en_route_spacing': args.en_route_spacing, 'method': mission.planner.method,
        'stop_reason': result.stop_reason, 'sim_time_s': result.sim_time, 'wall_time_s': result.wall_time,
        'measurements': len(result.measurements), 'en_route_readings': result.en_route_readings,
        'rss_before_mission_mb': rss0, 'rss_first_mb': first['rss_mb'], 'rss_last_mb': last['rss_mb'],
        'rss_max_mb': max(s['rss_mb'] for s in series), 'rss_after_gc_and_malloc_trim_mb': rss_trimmed,
        'growth_mb': last['rss_mb'] - first['rss_mb'],
        'growth_second_half_mb_per_sim_h': ((last['rss_mb'] - half[0]['rss_mb']) / hours) if hours > 0 else None,
        'decision_s_median': statistics.median(secs) if secs else None, 'decision_s_max': max(secs, default=None),
        'decision_s_last10_median': statistics.median(secs[-10:]) if secs else None,
        'journal_bytes': os.path.getsize(out / 'run' / 'journal.jsonl'),
        'load_average': os.getloadavg(), 'series': series,
    }
    if args.fresh_decisions:
        import shutil
        import subprocess
        copy = out / 'fresh' / 'journal.jsonl'
        copy.parent.mkdir(exist_ok=True)
        shutil.copy(out / 'run' / 'journal.jsonl', copy)
        cmd = [sys.executable, __file__, '--child-replay', str(copy), '--fresh-decisions', str(args.fresh_decisions),
               '--sim-seconds', str(args.sim_seconds), '--measurements', str(args.measurements),
               '--en-route-spacing', str(args.en_route_spacing), '--localiser', args.localiser,
               '--seed', str(args.seed), *(['--method', args.method] if args.method else [])]
        child = subprocess.run(cmd, capture_output=True, text=True)
        lines = child.stdout.strip().splitlines()
        summary['fresh_process'] = json.loads(lines[-1]) if child.returncode == 0 and lines else child.stderr[-2000:]
    (out / 'result.json').write_text(json.dumps(summary, indent=2))
    print(f"ended: {summary['stop_reason']} at sim {summary['sim_time_s'] / 60:.1f} min after "
          f"{summary['wall_time_s']:.0f} s wall; {summary['measurements']} measurements, "
          f"{summary['en_route_readings']} en-route readings; journal {summary['journal_bytes'] / 1e6:.2f} MB")
    g2 = summary['growth_second_half_mb_per_sim_h']
    print(f"RSS: first sample {first['rss_mb']:.1f} MB, last {last['rss_mb']:.1f} MB, max {summary['rss_max_mb']:.1f}"
          f" MB; growth {summary['growth_mb']:+.1f} MB"
          + (f", second half {g2:+.1f} MB per simulated hour" if g2 is not None else '')
          + (f"; after gc + malloc_trim {rss_trimmed:.1f} MB" if rss_trimmed is not None else ''))
    if secs:
        print(f"decisions: {len(secs)}, median {summary['decision_s_median']:.2f} s, "
              f"max {summary['decision_s_max']:.2f} s, "
              f"median of the last 10 {summary['decision_s_last10_median']:.2f} s")
    fresh = summary.get('fresh_process')
    if isinstance(fresh, dict):
        print(f"fresh process on the same journal ({fresh['readings']} readings): {fresh['rss_start_mb']:.1f} MB after "
              f"imports, {fresh['rss_loaded_mb']:.1f} MB resumed, peak {fresh['rss_peak_mb']:.1f} MB over "
              f"{args.fresh_decisions} decisions (the mission's last RSS: {last['rss_mb']:.1f} MB)")
    elif fresh is not None:
        print(f'fresh process failed: {fresh}')
    print(f"load average {summary['load_average'][0]:.2f}; details: {out / 'result.json'}")
    return 0


if __name__ == '__main__':
    sys.exit(main())

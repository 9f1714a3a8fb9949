"""Resume of an en-route journal with the particle-filter localiser: Ctrl-C mid-mission, restart, count records.

Runs ``uncertain-bo demo --localiser pf`` (sim_rover, particle_filter, pure_pursuit and the explorer over DDS on
simulated time; the explorer's pose source is the particle cloud) with en-route readings on (``en_route_spacing``
from a parameter file written to the output folder), sends SIGINT once the journal holds ``--stop-after``
records of ``--stop-on`` (observations, or en-route readings: stopped while driving), then starts the same
command again with the same ``--out`` (the journal is resumed) and lets it run to ``--measurements``.
Checked on the journal (journal.jsonl) before and after:

- no loss: every observation and en-route record present before the restart is still there, unchanged, in order;
- no duplicates, no gaps: the ``index`` of the observation records is exactly 0..N-1 and that of the en-route
  records 0..M-1 (each in journal order);
- each en-route record's ``measurements`` equals the number of observation records before it;
- the resumed run reached ``--measurements`` observations, and stored en-route readings after the restart.

The exit status of the interrupted run is reported as well (130 is the CLI's Ctrl-C status; a negative status is
the signal that ended the process).

Prints a table of the counts and the verdict; writes result.json to ``--out`` (default a temporary folder). Exit
status 0 when every check passes, 1 otherwise.

Usage::

    nice -n 10 .venv/bin/python bench/resume_pf_en_route.py                          # 10 measurements, stop at 4
    nice -n 10 .venv/bin/python bench/resume_pf_en_route.py --stop-on en_route --stop-after 15   # stop en route
    nice -n 10 .venv/bin/python bench/resume_pf_en_route.py --method airbo   # empirical locations (the particles)
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def records(journal: Path) -> list[dict]:
    """The journal's complete records (a torn last line is left out, as the journal's reader does)."""
    out = []
    if not journal.is_file():
        return out
    for line in journal.read_bytes().split(b'\n'):
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def of_type(recs: list[dict], kind: str) -> list[dict]:
    return [r for r in recs if r.get('type') == kind]


def contiguous(recs: list[dict]) -> tuple[bool, str]:
    idx = [r.get('index') for r in recs]
    if idx == list(range(len(idx))):
        return True, f'0..{len(idx) - 1}' if idx else 'none'
    dup = sorted({i for i in idx if idx.count(i) > 1})
    missing = sorted(set(range(max(idx) + 1)) - set(idx)) if idx else []
    return False, f'duplicates {dup[:10]}, missing {missing[:10]}, order {idx[:40]}'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--measurements', type=int, default=10, help='max_measurements of both runs')
    ap.add_argument('--stop-after', type=int, default=4,
                    help='SIGINT once the journal holds this many records of --stop-on')
    ap.add_argument('--stop-on', choices=('observation', 'en_route'), default='observation',
                    help="the record type counted for --stop-after ('en_route': stop while driving)")
    ap.add_argument('--spacing', type=float, default=10.0, help='en_route_spacing, m')
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--method', default=None,
                    help='explorer method (a sample-based one such as airbo stores the particle clouds themselves)')
    ap.add_argument('--domain', type=int, default=181, help='ROS_DOMAIN_ID')
    ap.add_argument('--timeout', type=float, default=900.0, help='wall-clock limit of each run, s')
    ap.add_argument('--out', type=Path, default=None, help='folder for the run, logs and result.json')
    args = ap.parse_args(argv)

    out = args.out or Path(tempfile.mkdtemp(prefix='resume_pf_en_route_'))
    out.mkdir(parents=True, exist_ok=True)
    params = out / 'en_route.yaml'
    params.write_text(f'explorer:\n  ros__parameters:\n    en_route_spacing: {args.spacing!r}\n')
    run = out / 'run'
    journal = run / 'journal.jsonl'
    env = {**os.environ, 'ROS_DOMAIN_ID': str(args.domain), 'ROS_LOCALHOST_ONLY': '1', 'PYTHONUNBUFFERED': '1'}
    cmd = [str(Path(sys.executable).parent / 'uncertain-bo'), 'demo', '--localiser', 'pf', '--params', str(params),
           '--measurements', str(args.measurements), '--seed', str(args.seed), '--out', str(run),
           '--timeout', str(args.timeout), *(['--method', args.method] if args.method else [])]

    # ---- first run, interrupted
    t0 = time.monotonic()
    with open(out / 'first.log', 'w') as log:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        while proc.poll() is None and len(of_type(records(journal), args.stop_on)) < args.stop_after:
            if time.monotonic() - t0 > args.timeout:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            rc1 = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc1 = 'killed after 60 s'
    first_wall = time.monotonic() - t0
    before = records(journal)
    obs_b, er_b = of_type(before, 'observation'), of_type(before, 'en_route')

    # ---- resumed run
    t1 = time.monotonic()
    with open(out / 'second.log', 'w') as log:
        rc2 = subprocess.run(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                             timeout=args.timeout + 120).returncode
    second_wall = time.monotonic() - t1
    after = records(journal)
    obs_a, er_a = of_type(after, 'observation'), of_type(after, 'en_route')

    kept = [r for r in after if r.get('type') in ('observation', 'en_route')][:len(obs_b) + len(er_b)]
    prefix_kept = kept == [r for r in before if r.get('type') in ('observation', 'en_route')]
    obs_ok, obs_why = contiguous(obs_a)
    er_ok, er_why = contiguous(er_a)
    starts = len(of_type(after, 'start'))
    seen, counts_ok = 0, True          # each en-route record's 'measurements': the observations stored before it
    for r in after:
        if r.get('type') == 'observation':
            seen += 1
        elif r.get('type') == 'en_route' and r.get('measurements') != seen:
            counts_ok = False
    checks = {
        'records from before the restart kept, unchanged, in order': prefix_kept,
        f'observation indices contiguous ({obs_why})': obs_ok,
        f'en-route indices contiguous ({er_why})': er_ok,
        f'resumed run reached {args.measurements} observations': len(obs_a) == args.measurements,
        'en-route readings stored after the restart': len(er_a) > len(er_b),
        "each en-route record's 'measurements' = observations before it": counts_ok,
    }
    result = {'measurements': args.measurements, 'stop_after': args.stop_after,
              'stop_on': args.stop_on, 'method': args.method, 'spacing_m': args.spacing, 'seed': args.seed,
              'first_exit': rc1, 'first_wall_s': first_wall, 'second_exit': rc2,
              'second_wall_s': second_wall, 'observations_before': len(obs_b), 'en_route_before': len(er_b),
              'observations_after': len(obs_a), 'en_route_after': len(er_a), 'start_records': starts,
              'record_types_after': {t: len(of_type(after, t)) for t in sorted({r.get('type') for r in after})},
              'checks': checks, 'load_average': os.getloadavg()}
    (out / 'result.json').write_text(json.dumps(result, indent=2, default=str))
    print(f'{"":28s} {"observations":>12s} {"en-route":>9s}  exit  wall')
    print(f'{"first run (SIGINT)":28s} {len(obs_b):12d} {len(er_b):9d}  {rc1!s:4s}  {first_wall:.0f} s')
    print(f'{"after the resumed run":28s} {len(obs_a):12d} {len(er_a):9d}  {rc2!s:4s}  {second_wall:.0f} s')
    for what, ok in checks.items():
        print(f'  {"PASS" if ok else "FAIL"}  {what}')
    kinds = sorted({r['location']['kind'] for r in after if r.get('type') in ('observation', 'en_route')})
    print(f'location kinds stored: {kinds}')
    print(f'record types: {result["record_types_after"]}; load average {os.getloadavg()[0]:.2f}; details: {out}')
    return 0 if all(checks.values()) else 1


if __name__ == '__main__':
    sys.exit(main())

"""Fault injection: SIGKILL the explorer at random moments of a simulated run, restart it, check the journal.

The simulated rover graph runs as separate processes (``sim_rover``, ``ekf``, ``pure_pursuit``, each
``python -m uncertain_bo.ros.<node> --ros-args --params-file config/sim.yaml --params-file <run>.yaml``) on
a private ROS_DOMAIN_ID; the explorer runs in its own process with a fixed ``run_dir``. The explorer is
killed with SIGKILL ``--kills`` times and restarted each time, until the run completes. A kill comes at a
random delay after the explorer is up, or just after it logs a new target or a stored measurement (the
crash windows "decided, not reached" and "stored, not yet decided"), so every stage gets hit.

Then the journal is checked:

- observation indices are 0..N-1, each exactly once (nothing duplicated, nothing skipped);
- no reading (its stamp) was stored twice;
- every measurement an explorer incarnation reported as stored ("measurement k/N: reading v") is in the
  journal with that value (nothing reported was lost);
- the run completed: N = max_measurements observations and explorer_result.json, final exit status 0.

Usage::

    .venv/bin/python bench/fault_injection.py                 # 20 kills, 16 measurements, 40 m field
    .venv/bin/python bench/fault_injection.py --kills 5 --measurements 8 --out /tmp/fi
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from uncertain_bo.journal.journal import Journal  # noqa: E402

MEASUREMENT_LINE = re.compile(r'measurement (\d+)/(\d+): reading (\S+) at')


def write_params(path: Path, run_dir: Path, args) -> None:
    e = args.extent
    c = e / 2.0
    params = {
        'sim_rover': {'ros__parameters': {
            'field_extent': [0.0, e, 0.0, e], 'initial_x': c, 'initial_y': c, 'seed': args.seed,
            'real_time_factor': args.real_time_factor, 'status_period': 0.0}},
        'ekf': {'ros__parameters': {'initial_x': c, 'initial_y': c, 'use_sim_time': True}},
        'pure_pursuit': {'ros__parameters': {'use_sim_time': True}},
        'explorer': {'ros__parameters': {
            'use_sim_time': True, 'run_dir': str(run_dir), 'search_bounds': [0.0, e, 0.0, e],
            'max_measurements': args.measurements, 'n_initial': 4, 'num_restarts': 4, 'raw_samples': 128,
            'dwell_time': 1.0, 'goal_timeout': 120.0, 'exit_when_done': True, 'seed': args.seed}},
    }
    import yaml
    path.write_text(yaml.safe_dump(params))


class Proc:
    """A node process whose output goes to a log file; remembers when lines matching events appear."""

    def __init__(self, name: str, cmd: list[str], env: dict, log: Path):
        self.name = name
        self.log = open(log, 'a', encoding='utf-8')
        self.p = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, bufsize=1)
        self.lines: list[tuple[float, str]] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append((time.monotonic(), line))
            self.log.write(line)
            self.log.flush()

    def wait_for(self, pattern: str, after: int = 0, timeout: float = 60.0) -> int | None:
        """Index of the first line from ``after`` containing ``pattern`` (None on timeout/exit)."""
        end = time.monotonic() + timeout
        i = after
        while time.monotonic() < end:
            while i < len(self.lines):
                if pattern in self.lines[i][1]:
                    return i
                i += 1
            if self.p.poll() is not None and i >= len(self.lines):
                self._t.join(timeout=1.0)
                if i >= len(self.lines):
                    return None
            time.sleep(0.01)
        return None

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        self.p.wait()
        self._t.join(timeout=2.0)
        self.log.close()


def node_cmd(module: str, param_files: list[Path]) -> list[str]:
    cmd = [sys.executable, '-m', f'uncertain_bo.ros.{module}', '--ros-args']
    for f in param_files:
        cmd += ['--params-file', str(f)]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kills', type=int, default=20)
    ap.add_argument('--measurements', type=int, default=16)
    ap.add_argument('--extent', type=float, default=40.0, help='side of the square field and search area, m')
    ap.add_argument('--real-time-factor', type=float, default=4.0,
                    help='simulated seconds per wall second (paced so that kills land mid-run)')
    ap.add_argument('--seed', type=int, default=0, help='seed of the simulation, explorer and kill schedule')
    ap.add_argument('--domain', type=int, default=231, help='private ROS_DOMAIN_ID (< 233)')
    ap.add_argument('--max-up', type=float, default=3.0,
                    help='largest random delay (s) between the explorer being up and the kill')
    ap.add_argument('--timeout', type=float, default=1200.0, help='wall-clock limit, s')
    ap.add_argument('--out', type=Path, default=None, help='folder for run_dir, logs and result.json')
    args = ap.parse_args(argv)

    out = args.out or Path(tempfile.mkdtemp(prefix='fault_injection_'))
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / 'run'
    if (run_dir / 'journal.jsonl').exists():
        print(f'error: {run_dir} already holds a journal; use a fresh --out', file=sys.stderr)
        return 2
    logs = out / 'logs'
    logs.mkdir(exist_ok=True)
    params = out / 'params.yaml'
    write_params(params, run_dir, args)
    # UDP only: Fast DDS's shared-memory transport can leave a port locked when a participant is SIGKILLed
    # mid-send, and then every other process writing to it blocks (eProsima/Fast-DDS#5469, #1144): the
    # whole graph stalls after a few kills. A rover that must survive explorer crashes wants the same.
    env = {**os.environ, 'ROS_DOMAIN_ID': str(args.domain), 'ROS_LOCALHOST_ONLY': '1',
           'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4',
           'RCUTILS_LOGGING_BUFFERED_STREAM': '1', 'PYTHONUNBUFFERED': '1',
           'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    sim_yaml, explorer_yaml = ROOT / 'config' / 'sim.yaml', ROOT / 'config' / 'explorer.yaml'
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    sim = [Proc(n, node_cmd(n, [sim_yaml, params]), env, logs / f'{n}.log')
           for n in ('sim_rover', 'ekf', 'pure_pursuit')]
    kills: list[dict] = []
    reported: dict[int, str] = {}
    incarnations = 0
    exit_code = None
    try:
        while time.monotonic() - t0 < args.timeout:
            incarnations += 1
            ex = Proc('explorer', node_cmd('explorer', [explorer_yaml, params]), env,
                      logs / f'explorer_{incarnations:02d}.log')
            up = ex.wait_for('exploring', timeout=120.0)
            if up is None:
                ex.kill()
                raise RuntimeError(f'explorer incarnation {incarnations} did not start; see {ex.log.name}')
            if len(kills) < args.kills:
                mode = rng.choice(['random', 'after target', 'after measurement'])
                if mode == 'random':
                    time.sleep(rng.uniform(0.0, args.max_up))
                else:
                    key = 'target ' if mode == 'after target' else 'measurement '
                    if ex.wait_for(key, after=up + 1, timeout=3.0 * args.max_up + 10.0) is not None:
                        time.sleep(rng.uniform(0.0, 0.3))
                state = 'exited' if ex.p.poll() is not None else 'killed'
                ex.kill()
            else:
                exit_code = ex.p.wait(timeout=max(1.0, args.timeout - (time.monotonic() - t0)))
                ex.kill()
                state = 'final'
            for _, line in ex.lines:
                m = MEASUREMENT_LINE.search(line)
                if m:
                    reported[int(m.group(1)) - 1] = m.group(3)
            if state == 'killed':
                stored = sum(1 for _, s in ex.lines if 'measurement ' in s and ': reading ' in s)
                kills.append({'incarnation': incarnations, 'mode': mode, 'up_s': round(
                    time.monotonic() - ex.lines[up][0], 2), 'stored_by_it': stored})
                print(f'kill {len(kills):2d}/{args.kills} ({mode}, {kills[-1]["up_s"]:.1f} s after start): '
                      f'{stored} measurement(s) stored by incarnation {incarnations}', flush=True)
            if state in ('final', 'exited'):
                if state == 'exited':
                    exit_code = ex.p.returncode
                break
    finally:
        for p in sim:
            p.kill(signal.SIGINT)

    # ------------------------------------------------------------------ checks
    journal = Journal(run_dir / 'journal.jsonl', read_only=True)
    obs = journal.observations
    indices = [r['index'] for r in obs]
    n = args.measurements
    missing = sorted(set(range(n)) - set(indices))
    duplicated = sorted({i for i in indices if indices.count(i) > 1})
    stamps = [r.get('reading_stamp') for r in obs]
    dup_readings = len(stamps) - len(set(stamps))
    by_index = {r['index']: r for r in obs}
    lost = sorted(i for i, v in reported.items()
                  if i not in by_index or f"{by_index[i]['y']:.6g}" != v)
    explorer_logs = [f.read_text() for f in sorted(logs.glob('explorer_*.log'))]
    torn = sum(text.count('torn last record') for text in explorer_logs)
    resent = sum('decided before a restart: sent again' in text for text in explorer_logs)
    completed = (run_dir / 'explorer_result.json').is_file() and len(obs) == n and exit_code == 0
    result = {
        'kills': len(kills), 'restarts': incarnations - 1, 'incarnations': incarnations,
        'observations': len(obs), 'expected': n, 'missing_indices': missing, 'duplicated_indices': duplicated,
        'readings_stored_twice': dup_readings, 'reported_stored': len(reported), 'reported_but_lost': lost,
        'kills_after_target': sum(k['mode'] == 'after target' for k in kills),
        'kills_after_measurement': sum(k['mode'] == 'after measurement' for k in kills),
        'kills_random': sum(k['mode'] == 'random' for k in kills),
        'restarts_that_resent_a_pending_goal': resent,
        'torn_records_skipped': torn, 'decisions': sum(r['type'] == 'decision' for r in journal.records),
        'completed': completed, 'final_exit_code': exit_code, 'wall_time_s': round(time.monotonic() - t0, 1),
        'run_dir': str(run_dir), 'kill_log': kills,
    }
    (out / 'result.json').write_text(json.dumps(result, indent=2))
    print()
    print(f"kills {result['kills']}, restarts {result['restarts']}, observations {len(obs)}/{n}, "
          f"lost {len(missing) + len(lost)}, duplicated {len(duplicated) + dup_readings}, "
          f"completed {completed} (exit {exit_code}), wall {result['wall_time_s']} s")
    print(f"kills after a new target {result['kills_after_target']}, after a stored measurement "
          f"{result['kills_after_measurement']}, at random {result['kills_random']}; restarts that re-sent "
          f"a pending goal {result['restarts_that_resent_a_pending_goal']}; torn records skipped {torn}; "
          f"decisions journaled {result['decisions']}")
    print(f'details: {out / "result.json"}')
    ok = completed and not missing and not duplicated and not dup_readings and not lost
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

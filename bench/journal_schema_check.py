"""What the journal's schema check (uncertain_bo/journal/schema.py) adds to loading a long run's journal.

A synthetic journal of ``--measurements`` observations with ``--en-route`` en-route readings after each, every
location a Gaussian (2x2 covariance) or an empirical cloud of ``--particles`` particles, is written to a temporary
folder; the script times parsing its lines (``json.loads``, what loading cost before the schema) and
:func:`~uncertain_bo.journal.check.check_journal` on the parsed records, each the median of ``--repeats``.

Usage::

    .venv/bin/python bench/journal_schema_check.py [--measurements 200] [--en-route 50] [--particles 160]
        [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from uncertain_bo.distributions import Empirical, Gaussian
from uncertain_bo.journal.journal import location_to_record
from uncertain_bo.journal.check import check_journal


def write(path: Path, kind: str, measurements: int, en_route: int, particles: int) -> None:
    gen = torch.Generator().manual_seed(0)

    def location(i: int) -> dict:
        if kind == 'gaussian':
            return location_to_record(Gaussian(torch.tensor([[1.0 + i % 50, 2.0]], dtype=torch.float64),
                                               torch.eye(2, dtype=torch.float64)[None] * 0.1))
        return location_to_record(Empirical(torch.rand(1, particles, 2, dtype=torch.float64, generator=gen) * 50))

    locations = [location(i) for i in range(20)]
    lines = [{'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1, 'bounds': [[0, 0], [100, 100]]}]
    e = 0
    for i in range(measurements):
        lines.append({'type': 'observation', 'index': i, 'target': [1.0, 2.0], 'location': locations[i % 20],
                      'y': 1.0, 'reading_variance': 0.01})
        for k in range(en_route):
            lines.append({'type': 'en_route', 'index': e, 'measurements': i + 1, 'location': locations[k % 20],
                          'y': 1.0})
            e += 1
    path.write_text(''.join(json.dumps(r) + '\n' for r in lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--measurements', type=int, default=200)
    ap.add_argument('--en-route', type=int, default=50)
    ap.add_argument('--particles', type=int, default=160)
    ap.add_argument('--repeats', type=int, default=3)
    args = ap.parse_args()
    print('| locations | records | MB | json.loads (s) | schema check (s) |\n|---|---|---|---|---|')
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ('gaussian', 'empirical'):
            path = Path(tmp) / f'{kind}.jsonl'
            write(path, kind, args.measurements, args.en_route, args.particles)
            parse, check = [], []
            for _ in range(args.repeats):
                t = time.perf_counter()
                recs = [json.loads(line) for line in path.read_text().splitlines()]
                parse.append(time.perf_counter() - t)
                t = time.perf_counter()
                checked = check_journal(recs[0], list(enumerate(recs[1:], 2)))
                check.append(time.perf_counter() - t)
                assert not checked.damage
            label = kind if kind == 'gaussian' else f'empirical ({args.particles} particles)'
            print(f'| {label} | {len(recs)} | {path.stat().st_size / 1e6:.1f} | {statistics.median(parse):.2f} | '
                  f'{statistics.median(check):.2f} |')


if __name__ == '__main__':
    main()

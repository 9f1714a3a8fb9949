"""How far off the pose estimate was where the readings were taken, in a `bench --problem rover-denied` folder.

For each field and strategy of the runs in DIR/runs: the median over seeds of each run's median and largest true
localisation error at its measurements (|true position - location mean|, m: records' ``executed`` and
``location_mean``, where the reading was taken; with revisions, ``ekf.smooth_on_fix``, also against
``location_mean_revised``, where the model holds it at the end), beside the median final normalised regret and
distance (what docs/gnss_denied.md tabulates next to the fields' feature sizes). Markdown on standard output; reads
only.

    python bench/denied_localisation_error.py runs/denied/tuning runs/denied/held_out
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from uncertain_bo.benchmarks.metrics import strategy_label


def errors(run: dict, revised: bool = False) -> np.ndarray:
    """True localisation error (m) at each measurement of a run: where it was taken, or (``revised``) where the model
    holds it at the end (the same where nothing was revised)."""
    return np.array([float(np.hypot(*(np.subtract(r['executed'], r.get('location_mean_revised', r['location_mean'])
                                                  if revised else r['location_mean']))))
                     for r in run['records']])


def rows(folder: Path) -> dict[tuple[str, str], list[tuple[float, ...]]]:
    """``{(field, strategy): [(median error, max error, regret, distance, revised median error, revised max error)
    per run]}``."""
    out: dict[tuple[str, str], list[tuple[float, ...]]] = defaultdict(list)
    for path in sorted((folder / 'runs').glob('*.json')):
        run = json.loads(path.read_text())
        err, rev = errors(run), errors(run, revised=True)
        field = run['spec']['settings'].get('field') or run['instance'].get('field')   # --field, or the problem's
        key = (str(field), strategy_label(run['spec']))
        out[key].append((float(np.median(err)), float(np.max(err)), run['final']['rec_normalised_regret'],
                         run['final']['distance_driven_m'], float(np.median(rev)), float(np.max(rev))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('dirs', nargs='+', type=Path, help='output folders of uncertain-bo bench')
    args = parser.parse_args()
    print('| field | strategy | runs | localisation error at the measurements, median / largest (m) | '
          'after revisions (m) | final normalised regret | distance (m) |')
    print('|---|---|---|---|---|---|---|')
    for folder in args.dirs:
        for (field, label), vals in sorted(rows(folder).items()):
            a = np.array(vals)
            print(f'| {field} | {label} | {len(a)} | {np.median(a[:, 0]):.2f} / {np.median(a[:, 1]):.2f} | '
                  f'{np.median(a[:, 4]):.2f} / {np.median(a[:, 5]):.2f} | {np.median(a[:, 2]):.3f} | '
                  f'{np.median(a[:, 3]):.0f} |')


if __name__ == '__main__':
    main()

"""``uncertain-bo export RUN_DIR [--csv PATH]``: a run's journal as CSV, with a summary of the run.

Reads ``RUN_DIR/journal.jsonl`` (or a journal file given directly) **read-only**, so it is safe while
the explorer is still writing: a torn last line is skipped (and reported), never truncated. Writes one
CSV row per observation (index, target, location mean and covariance, reading, stamps, ...), the en-route
readings (``en_route_spacing``) to ``<csv>_en_route.csv`` beside it, and prints the counts: observations,
decisions, the observation indices a resumed run declared lost (:mod:`uncertain_bo.journal_schema`) and whether the
run finished (``explorer_result.json``).

A journal that breaks the schema (a damaged record, a duplicated or missing index) is refused before any CSV is
written: one ``error:`` line naming the line, exit status 2.
"""
from __future__ import annotations

import sys
from pathlib import Path

__all__ = ['add_parser', 'export']


def add_parser(sub) -> None:
    p = sub.add_parser('export', help="write a run's observations journal as CSV",
                       description='Export the observations of a run (journal.jsonl) as CSV and print a '
                                   'summary. Read-only: safe while the run is still going.')
    p.add_argument('run_dir', type=Path, help='run folder (with journal.jsonl) or a journal file')
    p.add_argument('--csv', type=Path, default=None,
                   help='output CSV (default: RUN_DIR/observations.csv; "-" for standard output)')
    p.set_defaults(func=_cli)


def export(run_dir: Path, csv_path: Path | None = None) -> dict:
    """Export the journal of ``run_dir`` and return a summary dict.

    Raises:
        uncertain_bo.journal.JournalError: no journal, or a damaged one (any record breaking the schema; nothing is
            written then).
    """
    from .journal import Journal

    run_dir = Path(run_dir)
    path = run_dir if run_dir.is_file() else run_dir / 'journal.jsonl'
    folder = path.parent
    journal = Journal(path, read_only=True)
    obs = journal.observations
    out = csv_path if csv_path is not None else folder / 'observations.csv'
    en_route_out = None
    if str(out) != '-':
        journal.export_csv(out)
        if journal.en_route:   # readings taken on the way (en_route_spacing), beside the measurements
            en_route_out = out.with_name(out.stem + '_en_route' + out.suffix)
            journal.export_csv(en_route_out, en_route=True)
    result = folder / 'explorer_result.json'
    summary = {
        'journal': str(path), 'csv': str(out), 'version': journal.header.get('version'),
        'observations': len(obs), 'en_route_readings': len(journal.en_route),
        'en_route_csv': str(en_route_out) if en_route_out is not None else None,
        'decisions': sum(r.get('type') == 'decision' for r in journal.records),
        'torn_records_skipped': journal.skipped,
        'lost_indices': journal.checked.lost_indices,
        'finished': result.is_file(),
    }
    if str(out) == '-':
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            sys.stdout.write(journal.export_csv(Path(tmp) / 'o.csv').read_text())
    return summary


def _cli(args) -> int:
    from .journal import JournalError
    from .user_errors import report

    try:
        s = export(args.run_dir, args.csv)
    except JournalError as exc:
        return report(exc)
    out = sys.stderr if str(s['csv']) == '-' else sys.stdout
    print(f"{s['observations']} observations, {s['decisions']} decisions from {s['journal']} "
          f"(format version {s['version']}"
          + (f", {s['torn_records_skipped']} torn last record skipped" if s['torn_records_skipped'] else '')
          + ')', file=out)
    if s['lost_indices']:
        print(f"observation indices {s['lost_indices']} were lost (a resumed run skipped them as damaged)", file=out)
    print(f"run {'finished' if s['finished'] else 'not finished (no explorer_result.json)'}", file=out)
    if str(s['csv']) != '-':
        print(f"wrote {s['csv']}", file=out)
    if s['en_route_csv']:
        print(f"wrote {s['en_route_csv']} ({s['en_route_readings']} en-route readings)", file=out)
    return 0

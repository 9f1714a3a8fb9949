"""``uncertain-bo export RUN_DIR [--csv PATH]``: a run's journal as CSV, with a summary of the run.

Reads ``RUN_DIR/journal.jsonl`` (or a journal file given directly) **read-only**, so it is safe while
the explorer is still writing: a torn last line is skipped (and reported), never truncated. Writes one
CSV row per observation (index, target, location mean and covariance, reading, stamps, ...), the en-route
readings (``en_route_spacing``) to ``<csv>_en_route.csv`` beside it, and prints the counts: observations,
decisions, the observation indices a resumed run declared lost (:mod:`uncertain_bo.journal.schema`) and whether the
run finished (``explorer_result.json``).

A journal that breaks the schema (a damaged record or line, a duplicated or missing index) is refused before any
CSV is written: one ``error:`` line naming the line, exit status 2. So is an output that is one of export's inputs
(``--csv RUN/journal.jsonl``, or a link to the journal or to ``explorer_result.json``), and a ``--csv`` in a folder
that does not exist or is not writable (:mod:`uncertain_bo.reporting.output_files`). The CSVs are written atomically: a
failure leaves no half-written file.
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
        uncertain_bo.journal.journal.JournalError: no journal, or a damaged one (any record breaking the schema;
            nothing is written then).
        uncertain_bo.user_errors.UsageError: an output is one of the inputs (the journal, ``explorer_result.json``),
            or cannot be written (its folder is missing or not writable); nothing is written then.
    """
    from .journal import Journal
    from ..reporting.output_files import check_outputs, check_writable, replacing

    run_dir = Path(run_dir)
    path = run_dir if run_dir.is_file() else run_dir / 'journal.jsonl'
    folder = path.parent
    result = folder / 'explorer_result.json'
    out = csv_path if csv_path is not None else folder / 'observations.csv'
    to_stdout = str(out) == '-'
    outputs = [] if to_stdout else [(out, '--csv')]
    if not to_stdout:   # the en-route readings' CSV beside it, named before the journal is read: checked alike
        outputs.append((out.with_name(out.stem + '_en_route' + out.suffix), 'the en-route CSV'))
    check_outputs(outputs, [(path, 'the journal'), (result, "the run's explorer_result.json")])
    journal = Journal(path, read_only=True)
    for p, what in outputs:
        check_writable(p, what)
    obs = journal.observations
    en_route_out = None
    if to_stdout:
        journal.write_csv(sys.stdout)
    elif journal.en_route:   # readings taken on the way (en_route_spacing), beside the measurements
        en_route_out = outputs[1][0]
        with replacing(out, en_route_out) as (tmp, tmp_en_route):
            for p, en_route in ((tmp, False), (tmp_en_route, True)):
                with open(p, 'w', newline='', encoding='utf-8') as fh:
                    journal.write_csv(fh, en_route=en_route)
    else:
        journal.export_csv(out)
    return {
        'journal': str(path), 'csv': str(out), 'version': journal.header.get('version'),
        'observations': len(obs), 'en_route_readings': len(journal.en_route),
        'en_route_csv': str(en_route_out) if en_route_out is not None else None,
        'decisions': sum(r.get('type') == 'decision' for r in journal.records),
        'torn_records_skipped': journal.skipped,
        'lost_indices': journal.checked.lost_indices,
        'finished': result.is_file(),
    }


def _cli(args) -> int:
    from ..user_errors import report, user_error_types

    try:
        s = export(args.run_dir, args.csv)
    except user_error_types() as exc:
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

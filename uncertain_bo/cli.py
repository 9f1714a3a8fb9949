"""The ``uncertain-bo`` command.

Subcommands live next to what they run; each module in :data:`COMMANDS` exposes
``add_parser(subparsers)`` which registers its sub-parser and sets ``func`` (args -> exit code).
Imports are lazy so ``uncertain-bo --help`` stays fast and works without ROS.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

__all__ = ['main', 'COMMANDS', 'OneLineParser', 'configure_torch_threads']

#: modules providing subcommands (``add_parser(subparsers)``)
COMMANDS = [
    'uncertain_bo.ros.graph',       # demo / sim: the simulated rover graph over real ROS 2 topics
    'uncertain_bo.sim.report_cli',  # report: summary.json + PNG of an existing run
    'uncertain_bo.benchmarks.cli',  # bench / plot: benchmark problems with robust-regret oracles
    'uncertain_bo.export_cli',      # export: a run's observations journal as CSV
    'uncertain_bo.ros.check',       # check: validate a robot's ROS 2 parameter file, starting nothing
    'uncertain_bo.param_yaml',      # params: a node's parameter file, generated from its parameter specs
    'uncertain_bo.survey_map.cli',  # map: a survey's posterior map (GeoTIFF, PNG, peak.json)
]


class OneLineParser(argparse.ArgumentParser):
    """argparse with command-line mistakes reported in one line (``error: uncertain-bo demo: argument
    --measurements: invalid int value: 'abc' (see uncertain-bo demo --help)``), exit status 2, instead of the
    usage text followed by the error. Sub-parsers inherit the class."""

    def error(self, message: str):
        self.exit(2, f'error: {self.prog}: {message} (see {self.prog} --help)\n')


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = OneLineParser(
        prog='uncertain-bo',
        description='Bayesian optimisation under uncertain inputs: simulated exploration, benchmarks, reports, and '
                    "a check of a robot's ROS 2 parameter file.")
    parser.add_argument('-v', '--verbose', action='store_true', help='debug logging')
    parser.add_argument('--version', action='version', version=f'uncertain-bo {__version__}')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name in COMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def configure_torch_threads() -> None:
    """One intra-op thread: our GPs are small (n <= a few hundred), where torch's thread pool costs more
    than it saves; on a loaded 2-core machine 2 threads made decisions 3-7x slower (spin-waiting).
    ``UNCERTAIN_BO_TORCH_THREADS`` overrides."""
    import os

    import torch
    torch.set_num_threads(int(os.environ.get('UNCERTAIN_BO_TORCH_THREADS', '1')))


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:   # `uncertain-bo bench --help | head`: the reader left, nothing is wrong
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format='%(levelname)s %(name)s: %(message)s')
    configure_torch_threads()
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    from .user_errors import report, user_error_types
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print('interrupted', file=sys.stderr)
        return 130
    except user_error_types() as exc:   # one line and a non-zero exit, not a traceback
        return report(exc)


if __name__ == '__main__':
    sys.exit(main())

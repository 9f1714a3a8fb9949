"""The ``uncertain-bo`` command.

Subcommands live next to what they run: each module named in :data:`COMMANDS` exposes ``add_parser(subparsers)``,
which registers its sub-parser(s) and sets ``func`` (args -> exit code). Only the module of the command given is
imported: ``uncertain-bo --help`` lists the commands from :data:`COMMANDS` alone, without importing torch or rclpy
(test_cli checks both, and that the table says what the modules register). ``bench --help`` and ``check`` build
their parsers and checks from the registries' plain data (:mod:`uncertain_bo.registries`), so they answer without
torch or rclpy too (test/test_registries.py); a command that runs without torch, or configures it itself once it
needs it, says so with ``set_defaults(uses_torch=False)`` (``check``; ``bench``, whose ``--list-problems`` and
``--describe`` need none), and :func:`configure_torch_threads` is not called for it.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

__all__ = ['main', 'COMMANDS', 'OneLineParser', 'build_parser', 'configure_torch_threads']

#: command -> (the module whose ``add_parser`` registers it, its one-line help in ``uncertain-bo --help``)
COMMANDS = {
    'demo': ('uncertain_bo.ros.demo_cli', 'simulated rover explores a real field over ROS 2 topics (uGP-UCB explorer)'),
    'sim': ('uncertain_bo.ros.demo_cli', 'alias of demo'),
    'report': ('uncertain_bo.sim.report_cli', 'summarise and plot a run (scored against its field when it has one)'),
    'bench': ('uncertain_bo.benchmarks.cli', 'run benchmark problems (parallel over seeds)'),
    'plot': ('uncertain_bo.benchmarks.cli', 'draw regret figures of a bench output directory'),
    'export': ('uncertain_bo.journal.export_cli', "write a run's observations journal as CSV"),
    'check': ('uncertain_bo.ros.check', "validate a robot's ROS 2 parameter file without starting anything"),
    'params': ('uncertain_bo.parameters.yaml_source',
               "print (or write) a node's parameter file, generated from its parameter specs"),
    'map': ('uncertain_bo.survey_map.cli', "a survey's posterior map (GeoTIFF, PNG, peak.json) from a CSV of points, "
                                           "a run's journal or its recording"),
    'replay': ('uncertain_bo.ros.replay', "replay a rosbag2 recording (MCAP or sqlite3) through the explorer's "
                                          'measurement cycle'),
}


class OneLineParser(argparse.ArgumentParser):
    """argparse with command-line mistakes reported in one line (``error: uncertain-bo demo: argument
    --measurements: invalid int value: 'abc' (see uncertain-bo demo --help)``), exit status 2, instead of the
    usage text followed by the error. Sub-parsers inherit the class.

    Example:
        >>> import contextlib, io
        >>> from uncertain_bo.cli import OneLineParser
        >>> parser = OneLineParser(prog='uncertain-bo demo')
        >>> _ = parser.add_argument('--measurements', type=int)
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     try:
        ...         parser.parse_args(['--measurements', 'abc'])
        ...     except SystemExit as exc:
        ...         print('exit', exc.code)
        exit 2
        >>> print(err.getvalue(), end='')
        error: uncertain-bo demo: argument --measurements: invalid int value: 'abc' (see uncertain-bo demo --help)
    """

    def error(self, message: str):
        self.exit(2, f'error: {self.prog}: {message} (see {self.prog} --help)\n')


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with the full sub-parser of the command ``argv`` names (its module imported)
    and a placeholder for every other command (its help line only). ``argv=None``: every command in full."""
    from . import __version__

    parser = OneLineParser(
        prog='uncertain-bo',
        description='Bayesian optimisation under uncertain inputs: simulated exploration, benchmarks, reports, '
                    "survey maps, replays of recordings, and a check of a robot's ROS 2 parameter file.")
    parser.add_argument('-v', '--verbose', action='store_true', help='debug logging')
    parser.add_argument('--version', action='version', version=f'uncertain-bo {__version__}')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND')
    given = next((a for a in argv if not a.startswith('-')), None) if argv is not None else None
    modules = ({module for module, _ in COMMANDS.values()} if argv is None
               else {COMMANDS[given][0]} if given in COMMANDS else set())
    for name, (module, text) in COMMANDS.items():
        if name in sub.choices:
            continue
        if module in modules:
            importlib.import_module(module).add_parser(sub)
        else:
            sub.add_parser(name, help=text)
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
    from .extras import missing_dependency
    from .user_errors import report

    try:
        return _run(sys.argv[1:] if argv is None else list(argv))
    except ImportError as exc:     # an optional dependency the command needs: one line that says what to install
        message = missing_dependency(exc)
        if message is None:
            raise
        return report(message)


def _run(argv: list[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format='%(levelname)s %(name)s: %(message)s')
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    if getattr(args, 'uses_torch', True):
        configure_torch_threads()
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

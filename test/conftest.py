"""Shared test configuration: float64, deterministic seeds, a per-session ROS domain, and what to install for the
tests that skip.

Tests that need an optional package (rclpy and the message packages, rosbags, Dask, rasterio, launch_ros) skip
where it is missing, with ``pytest.importorskip`` at module level (a whole module of ROS tests, marked
``pytest.mark.ros``) or inside the test; none errors on import. The library's own tests run without any of them
(``pip install '.[test]'``). Each such skip's reason names the extra of pyproject.toml that brings the package
(:func:`install_hint`), as listed at the end of the run (pytest.ini: ``-rs``); a command missing one says the
same in one ``error:`` line (:mod:`uncertain_bo.extras`).
"""
import os
import re

import pytest
import torch

from uncertain_bo import extras

# Keep DDS traffic of concurrent test runs on this machine apart (ROS_DOMAIN_ID must be < 233).
os.environ.setdefault('ROS_DOMAIN_ID', str(100 + os.getpid() % 100))
os.environ.setdefault('ROS_LOCALHOST_ONLY', '1')
torch.set_default_dtype(torch.float64)
# as the explorer and the CLI run (uncertain_bo.cli.configure_torch_threads): small GPs, one thread
torch.set_num_threads(1)

#: rclpy prints "The following exception was never retrieved: ..." to stderr when a Future that failed is garbage
#: collected, i.e. whenever the collector happens to run: inside a later, unrelated test's captured stderr, where a
#: test that a command prints exactly one `error:` line then fails for another test's leftover. Those messages are
#: collected here instead and listed at the end of the run (pytest_terminal_summary).
DROPPED_FUTURE_EXCEPTIONS: list[str] = []
try:
    from rclpy.task import Future as _RclpyFuture
except ImportError:         # pragma: no cover - rclpy is in requirements.txt
    _RclpyFuture = None
else:
    def _collect_dropped_exception(self) -> None:
        if getattr(self, '_exception', None) is not None and not getattr(self, '_exception_fetched', True):
            DROPPED_FUTURE_EXCEPTIONS.append(f'{type(self._exception).__name__}: {self._exception}')

    _RclpyFuture.__del__ = _collect_dropped_exception


def install_hint(reason: str) -> str:
    """A skip reason with where the missing package comes from (:func:`uncertain_bo.extras.install_hint`):
    pytest.importorskip's ``could not import 'rclpy': No module named 'rclpy'`` -> ``... (the ros extra: pip
    install '.[ros]' from the source tree, or a sourced ROS 2 installation)``; other reasons unchanged."""
    match = re.match(r"(?:Skipped: )?could not import '([\w.]+)'", reason)   # as the report holds it
    hint = extras.install_hint(match.group(1)) if match else None
    return f'{reason} ({hint})' if hint else reason


def _add_install_hint(report) -> None:
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, line, reason = report.longrepr
        report.longrepr = (path, line, install_hint(reason))


pytest_collectreport = pytest_runtest_logreport = _add_install_hint


def pytest_terminal_summary(terminalreporter):
    if DROPPED_FUTURE_EXCEPTIONS:
        kinds = sorted(set(DROPPED_FUTURE_EXCEPTIONS))
        terminalreporter.write_line(f'rclpy futures dropped with an exception never retrieved: '
                                    f'{len(DROPPED_FUTURE_EXCEPTIONS)} ({"; ".join(kinds)[:300]})')


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


@pytest.fixture(scope='module')
def context(request):
    """A fresh rclpy context for one test module, on the module's ``DOMAIN_ID`` (else ``ROS_DOMAIN_ID``)."""
    rclpy = pytest.importorskip('rclpy')
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=int(getattr(request.module, 'DOMAIN_ID', os.environ['ROS_DOMAIN_ID'])))
    yield ctx
    rclpy.shutdown(context=ctx)

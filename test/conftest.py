"""Shared test configuration: float64, deterministic seeds, a per-session ROS domain."""
import os

import pytest
import torch

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

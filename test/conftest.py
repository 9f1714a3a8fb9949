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

"""``cached_threadpool_limits``: BoTorch's fit and maximiser still run L-BFGS-B with one BLAS thread, through
threadpoolctl's cached controller instead of a new controller (a scan of the loaded libraries) per call, and BoTorch's
``threadpool_limits`` is back once no block runs."""
import threadpoolctl
import torch
from botorch.generation import gen
from botorch.optim.utils import timeout

from uncertain_bo.acquisition.optimize import OptimizerSettings, maximize
from uncertain_bo.distributions import DTYPE, Dirac
from uncertain_bo.models import DistributionGP
from uncertain_bo.threadpools import cached_threadpool_limits

BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)


def blas_threads():
    """Thread counts of the loaded BLAS libraries (through the cached controller: threadpool_info builds one)."""
    return {lib['num_threads'] for lib in threadpoolctl.get_cached_controller().info() if lib['user_api'] == 'blas'}


def test_fit_and_maximiser_build_no_controller_per_call_and_keep_one_blas_thread(monkeypatch):
    x = torch.rand(12, 2, generator=torch.Generator().manual_seed(0), dtype=DTYPE)
    gp = DistributionGP(BOUNDS)
    gp.set_data(Dirac(x), torch.sin(5 * x).sum(-1))
    seen = []

    def acquisition(X):
        seen.append(blas_threads())
        return -((X - 0.3) ** 2).sum(-1).squeeze(-1)

    settings = OptimizerSettings(num_restarts=2, raw_samples=16, maxiter=20)
    gp.fit(), maximize(acquisition, BOUNDS, settings, seed=0)     # warm-up: threadpoolctl's cache built
    built = []
    init = threadpoolctl.ThreadpoolController.__init__

    def counted(self, *args, **kwargs):
        built.append(1)
        init(self, *args, **kwargs)
    monkeypatch.setattr(threadpoolctl.ThreadpoolController, '__init__', counted)
    seen.clear()
    gp.fit()
    target, _ = maximize(acquisition, BOUNDS, settings, seed=0)
    assert built == []                                   # BoTorch's own threadpool_limits builds one per L-BFGS-B run
    assert {1} in seen          # the limit BoTorch sets around L-BFGS-B (not around the raw samples) is still set
    assert torch.allclose(target, torch.tensor([0.3, 0.3], dtype=DTYPE), atol=1e-6)
    assert gen.threadpool_limits is threadpoolctl.threadpool_limits
    assert timeout.threadpool_limits is threadpoolctl.threadpool_limits


def test_nested_blocks_restore_botorch_only_when_the_last_one_leaves():
    with cached_threadpool_limits():
        with cached_threadpool_limits():
            pass
        assert gen.threadpool_limits is not threadpoolctl.threadpool_limits
    assert gen.threadpool_limits is threadpoolctl.threadpool_limits

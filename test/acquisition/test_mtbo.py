"""MTBO's multi-task kernel (``acquisition/mtbo.py``): SE times the task correlation matrix, written out; and its fit on
a multi-task problem against the constant predictor."""
import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.mtbo import MTBO, ICMKernel
from uncertain_bo.distributions import DTYPE, Dirac
from uncertain_bo.models import DistributionGP


def test_icm_kernel_is_se_times_task_correlation():
    k = ICMKernel(4, 2)
    x = torch.tensor([[0.1, 0.2, 1.0, 0.0], [0.3, 0.1, 0.0, 1.0], [0.5, 0.5, 1.0, 0.0]], dtype=DTYPE)
    k = k.to(DTYPE)
    with torch.no_grad():   # an arbitrary task covariance: the kernel uses its correlation matrix
        k.task.covar_factor = torch.tensor([[2.0], [0.3]], dtype=DTYPE)
        k.task.var = torch.tensor([0.2, 3.0], dtype=DTYPE)
    K = k.forward(x, x)
    cov = k.task.covar_matrix.to_dense()
    B = cov / torch.outer(cov.diagonal().sqrt(), cov.diagonal().sqrt())
    ell = k.lengthscale[0, :2]
    se = torch.exp(-0.5 * (((x[:, None, :2] - x[None, :, :2]) / ell) ** 2).sum(-1))
    t = x[:, 2:].argmax(-1)
    torch.testing.assert_close(K, se * B[t][:, t])
    torch.testing.assert_close(k.forward(x, x, diag=True), K.diagonal())


def test_mtbo_refuses_contexts_that_are_not_one_hot_tasks():
    # samples of a continuous context (DRBQO's synthetic problems) are no tasks: the ICM kernel would take their
    # last n columns for a one-hot code and compute an SE kernel over the remaining (here: no) coordinates
    with pytest.raises(TypeError, match='one-hot'):
        MTBO(contexts=torch.rand(10, 2, dtype=DTYPE))
    with pytest.raises(TypeError, match='one-hot'):
        MTBO(contexts=torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=DTYPE))
    assert MTBO(contexts=torch.eye(3, dtype=DTYPE)[[2, 0, 1]]).contexts.shape == (3, 3)
    with pytest.raises(ValueError, match='n_tasks < dim'):
        ICMKernel(4, 10)


def multitask_data(n_tasks=10, seed=0):
    """Tasks sharing one function up to small offsets, observed unevenly (as folds in a BO run): most readings
    on task 0, one on each other task."""
    g = np.random.default_rng(seed)
    counts = [12] + [1] * (n_tasks - 1)
    x = np.concatenate([g.uniform(0, 1, (c, 2)) for c in counts])
    t = np.repeat(np.arange(n_tasks), counts)

    def f(x, t):
        return np.sin(6 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * t

    u = g.uniform(0, 1, (200, 2))
    tu = np.arange(200) % n_tasks
    joint = lambda x, t: torch.as_tensor(np.concatenate([x, np.eye(n_tasks)[t]], 1), dtype=DTYPE)  # noqa: E731
    return joint(x, t), torch.as_tensor(f(x, t), dtype=DTYPE), joint(u, tu), torch.as_tensor(f(u, tu), dtype=DTYPE)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_icm_fit_on_a_multitask_problem_predicts_every_task(seed):
    # regression: with a free per-task variance (plain IndexKernel) the fit sent some task variances to ~0 and
    # others to ~100x, and predictions on the sparsely observed tasks fell outside the data's range (MTBO then
    # recommended the worst grid point of the CV problem); oracle: the constant predictor
    X, y, Xt, yt = multitask_data(seed=seed)
    n_tasks = X.shape[1] - 2
    bounds = torch.tensor([[0.0] * X.shape[1], [1.0] * X.shape[1]], dtype=DTYPE)
    gp = DistributionGP(bounds, ICMKernel(X.shape[1], n_tasks))
    gp.set_data(Dirac(X), y)
    assert gp.fit()
    ell = torch.tensor(gp.hyperparameters()['lengthscale'][:2])
    assert ((ell > 0.05) & (ell < 5)).all(), ell
    mean, _ = gp.marginals(Dirac(Xt))
    rmse = float((mean - yt).pow(2).mean().sqrt())
    assert rmse < 0.5 * float((y.mean() - yt).pow(2).mean().sqrt())
    lo, hi = float(y.min()), float(y.max())
    assert lo - 0.5 * (hi - lo) < float(mean.min()) and float(mean.max()) < hi + 0.5 * (hi - lo)

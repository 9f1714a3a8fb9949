"""The incumbent handed to BoTorch keeps the model's precision: on a field of 101 325 Pa varying by a few hundredths,
a float incumbent (which BoTorch stores as float32) moved EI by percents of its maximum. Each EI method's stored
``best_f`` is float64 and equal to its float64 incumbent, and MTBO's context scores are the closed-form EI; with
torch's default dtype float32, as in a user's process."""
import math

import numpy as np
import pytest
import torch
from scipy.stats import norm

from uncertain_bo.acquisition.base import incumbent
from uncertain_bo.acquisition.quadrature import joint_points
from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

PASCAL = 101_325.0
FAST = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=50)


@pytest.fixture(autouse=True)
def float32_default():
    """torch's default dtype as a user's process has it (the suite's conftest makes it float64)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(default)


def pressure_planner(method, **settings):
    """Six readings of 101 325 Pa + 0.05 sin(...) on [0, 1]."""
    p = Planner(torch.tensor([[0.0], [1.0]], dtype=DTYPE), GaussianExecutionNoise.isotropic(0.05, 1), method=method,
                n_initial=6, seed=0, optimizer=FAST, method_settings=settings)
    for _ in range(6):
        x = p.suggest()
        p.observe(x, Dirac(x[None]), PASCAL + 0.05 * math.sin(5 * float(x[0])))
    return p


def test_incumbent_is_a_tensor_of_the_models_dtype():
    like = torch.zeros((), dtype=DTYPE)
    best = incumbent(PASCAL + 0.0123, like)
    assert best.dtype == DTYPE and best.shape == () and float(best) == PASCAL + 0.0123
    assert float(torch.as_tensor(PASCAL + 0.0123)) != PASCAL + 0.0123     # what BoTorch's as_tensor made of a float


@pytest.mark.parametrize('method', ['uei', 'bo_uu_ei', 'ei', 'ugp_risk'])
def test_ei_methods_store_the_incumbent_in_float64(method):
    p = pressure_planner(method, **({'risk': 'cvar', 'alpha': 0.75, 'n_w': 8} if method == 'ugp_risk' else {}))
    ctx = p.snapshot()
    acq = p.method_object.acquisition(ctx)
    best_f = getattr(acq, 'ei', acq).best_f
    assert best_f.dtype == DTYPE
    if method == 'uei':
        with torch.no_grad():
            expected = float(p.model.marginals(p.model.train_locations)[0].max())
    elif method == 'ugp_risk':
        method_object = p.method_object
        expected = float(method_object.scores(method_object.view(ctx, ctx.seed), p.targets.to(DTYPE)).max())
    else:
        expected = float(best_f)            # the best mean anywhere: its value checked in test_bo_uu
    assert float(best_f) == pytest.approx(expected, abs=1e-9)
    assert abs(float(best_f) - PASCAL) < 0.06            # a pressure of the field, not a float32 rounding of it
    assert float(best_f) != float(best_f.float())         # more digits than float32 holds


def test_bqo_ei_stores_the_incumbent_plus_xi_in_float64():
    contexts = torch.randn(4, 1, dtype=DTYPE, generator=torch.Generator().manual_seed(0))
    bounds = torch.tensor([[0.0, -3.0], [1.0, 3.0]], dtype=DTYPE)
    p = Planner(bounds, GaussianExecutionNoise.isotropic(1e-9, 2), method='bqo_ei', n_initial=6, seed=0,
                optimizer=FAST, method_settings={'contexts': contexts, 'rho': 1.0})
    for _ in range(6):
        t = p.suggest()
        p.observe(t, Dirac(t.reshape(1, -1)), PASCAL + 0.05 * math.sin(5 * float(t[0]) + float(t[1])))
    acq = p.method_object.acquisition(p.snapshot())
    with torch.no_grad():
        mean = p.model.posterior(joint_points(p.targets[:, :1], contexts)).mean.squeeze(-1)
    y = p.y
    expected = float(mean.mean(-1).max()) + 0.1 * float(y.max() - y.min())
    assert acq.best_f.dtype == DTYPE and float(acq.best_f) == pytest.approx(expected, abs=1e-9)


def test_mtbo_context_scores_are_the_closed_form_ei_over_the_float64_incumbent():
    contexts = torch.eye(2, dtype=DTYPE)
    bounds = torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=DTYPE)
    p = Planner(bounds, GaussianExecutionNoise.isotropic(1e-9, 4), method='mtbo', n_initial=6, seed=0,
                optimizer=FAST, method_settings={'contexts': contexts, 'rho': 1.0})
    for _ in range(6):
        t = p.suggest()
        p.observe(t, Dirac(t.reshape(1, -1)), PASCAL + 0.05 * math.sin(5 * float(t[0]) - 3 * float(t[1]) + float(t[3])))
    ctx = p.snapshot()
    x = torch.tensor([0.3, 0.8], dtype=DTYPE)
    scores = p.method_object.context_scores(ctx, x)
    points = joint_points(x.reshape(1, -1), contexts)[0]
    with torch.no_grad():
        post = p.model.posterior(points.unsqueeze(-2))
    m, s = post.mean.reshape(-1).numpy(), post.variance.reshape(-1).sqrt().numpy()
    y = p.y.numpy()
    tau = y.max() + 0.1 * (y.max() - y.min())
    u = (m - tau) / s
    np.testing.assert_allclose(scores.numpy(), s * (u * norm.cdf(u) + norm.pdf(u)), rtol=1e-8, atol=1e-12)

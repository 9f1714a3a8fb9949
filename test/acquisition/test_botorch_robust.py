"""The ``botorch_robust`` baseline (``acquisition/botorch_robust.py``): its perturbation set's moments against the
execution-noise covariance, its decisions after the planner's initial design and its recommendation of a past
target."""
import math

import torch

from uncertain_bo.acquisition import get_method
from uncertain_bo.acquisition.botorch_robust import BoTorchRobust
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [200.0, 120.0]], dtype=torch.float64)


def test_botorch_robust_decides_after_the_initial_design_and_recommends_a_past_target():
    method = BoTorchRobust(n_w=8, num_restarts=2, raw_samples=32)
    p = Planner(BOX, GaussianExecutionNoise.isotropic(2.0, 2), method='botorch_robust', seed=5, n_initial=4)
    peak = torch.tensor([150.0, 40.0], dtype=torch.float64)
    for t in range(6):
        own = method.decide_one(p.snapshot())
        assert (own.phase == 'initial') == (t < 4)
        x = p.suggest()
        if own.phase != 'initial':   # the planner's method object is the same rule with the same seed
            assert ((x >= BOX[0]) & (x <= BOX[1])).all() and p.decisions[-1].phase == 'acquisition'
        y = float(torch.exp(-((x - peak) ** 2).sum() / 2000.0))
        p.observe(x, Gaussian(x[None], torch.eye(2, dtype=torch.float64)[None]), y)
    rec = p.recommend()
    assert any(torch.equal(rec.target, t) for t in p.targets) and math.isfinite(rec.mean)
    assert get_method('botorch_robust').baseline and not get_method('botorch_robust').uses_beta


def test_botorch_robust_maximises_with_the_planners_optimiser_settings(monkeypatch):
    """Like every method it takes the planner's ``optimizer`` (restarts, raw samples, L-BFGS-B iterations); its own
    ``num_restarts`` / ``raw_samples`` settings, when given, replace those."""
    import botorch.optim
    from uncertain_bo.acquisition.optimize import OptimizerSettings

    calls = []
    real = botorch.optim.optimize_acqf

    def spy(*args, **kwargs):
        calls.append((kwargs['num_restarts'], kwargs['raw_samples'], kwargs['options']['maxiter']))
        return real(*args, **kwargs)

    monkeypatch.setattr(botorch.optim, 'optimize_acqf', spy)
    for settings, expected in ((None, (2, 16, 30)), ({'num_restarts': 3, 'raw_samples': 24}, (3, 24, 30))):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(2.0, 2), method='botorch_robust', seed=5, n_initial=3,
                    optimizer=OptimizerSettings(num_restarts=2, raw_samples=16, maxiter=30), method_settings=settings)
        for _ in range(4):
            x = p.suggest()
            p.observe(x, Gaussian(x[None], torch.eye(2, dtype=torch.float64)[None]), float(x.sum()))
        assert calls[-1] == expected

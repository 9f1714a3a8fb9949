"""The best-posterior-mean-anywhere recommendation (``acquisition/recommendation.py``) against a dense grid of the
NumPy posterior mean of the robust objective, through the planner's ``'area_mean'`` rule and NES's own rule."""
import numpy as np
import torch

from uncertain_bo.distributions import DTYPE, Dirac, GaussianExecutionNoise
from uncertain_bo.planner import Planner

from . import oracle

BOX = torch.tensor([[0.0, 0.0], [4.0, 3.0]], dtype=DTYPE)
SIGMA = 0.3


def test_area_mean_is_the_grid_maximum_of_the_robust_mean_for_the_planner_rule_and_for_nes():
    recs = []
    for method, rule in (('ugp_ucb', 'area_mean'), ('nes_ep', None)):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(SIGMA, 2), method=method, n_initial=8, seed=4)
        for _ in range(8):
            x = p.suggest()
            p.observe(x, Dirac(x[None]), float(torch.sin(x[0]) * torch.cos(x[1])))
        recs.append(p.recommend(rule))
        hp = p.model.hyperparameters()
        locs = p.model.train_locations
        u = np.stack(np.meshgrid(np.linspace(0, 4, 161), np.linspace(0, 3, 121)), -1).reshape(-1, 2)
        mu, _ = oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), u,
                                 np.broadcast_to(np.eye(2) * SIGMA ** 2, (len(u), 2, 2)), hp['lengthscale'],
                                 hp['outputscale'], hp['noise'], hp['mean'])
        rec = recs[-1]
        assert rec.index == -1 and rec.mean >= mu.max() - 1e-6
        assert float(np.linalg.norm(rec.target.numpy() - u[np.argmax(mu)])) < 0.05
    torch.testing.assert_close(recs[0].target, recs[1].target, atol=1e-5, rtol=0)   # one rule, the same numbers

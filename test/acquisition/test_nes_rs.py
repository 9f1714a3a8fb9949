"""NES-RS (``acquisition/nes_rs.py``): the binned KDE entropy against the Gaussian's closed form, and RS against EP
(the same quantity by two estimators)."""
import math

import torch

from uncertain_bo.acquisition.nes import NESEntropyReduction, dirac_query, max_value_levels, sample_robust_max_values
from uncertain_bo.acquisition.nes_rs import kde_entropy, rs_entropy_reduction
from uncertain_bo.distributions import DTYPE

from .test_nes import CANDIDATES, _model


def test_kde_entropy_of_a_gaussian():
    g = torch.Generator().manual_seed(7)
    s = 1.5 * torch.randn(4, 1000, generator=g, dtype=DTYPE)
    h = kde_entropy(s)
    exact = 0.5 * math.log(2 * math.pi * math.e * 1.5 ** 2)
    assert torch.allclose(h, torch.full_like(h, exact), atol=0.06)


def test_nes_rs_and_ep_agree_on_where_information_is():
    """RS and EP estimate the same quantity (EP imposing g ≤ g* at the data and the query only, RS everywhere):
    their scores over a grid are strongly correlated."""
    gp, _, _ = _model(n=6, seed=0)
    bounds = torch.tensor([[0.0], [1.0]], dtype=DTYPE)
    mv, _, _ = sample_robust_max_values(gp, CANDIDATES, bounds, num=50, seed=8)
    gs = max_value_levels(mv)
    grid = torch.linspace(0, 1, 41, dtype=DTYPE)[:, None]
    with torch.no_grad():
        ep = NESEntropyReduction(gp, CANDIDATES, dirac_query, gs, gp.train_locations.mean).score(grid)
    # RS is a noisy estimate (KDE on 1000 samples per seed): average three seeds
    rs = torch.stack([rs_entropy_reduction(gp, CANDIDATES, dirac_query, grid, bounds, gs, n_accept=1000, seed=s)
                      for s in range(3)]).mean(0)
    corr = torch.corrcoef(torch.stack([ep, rs]))[0, 1]
    assert corr > 0.7

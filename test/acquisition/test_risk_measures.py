"""``ugp_risk`` (``acquisition/risk_measures.py``): BoTorch's risk measures over the execution noise on the shared
model — the factory, the recommendation against the CVaR of the NumPy posterior mean at the perturbed points, and a
batch of two through the planner."""

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.risk_measures import risk_measure
from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.models.target_model import perturbation_set
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

from . import oracle

BOX = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=DTYPE)
FAST = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=30)


def empirical_cvar(values, alpha):
    """CVaR_α of equally weighted values by its variational form sup_z z - E[(z - Y)^+]/(1 - α) (Rockafellar & Uryasev
    2002), the supremum attained at one of the values."""
    v = np.asarray(values, dtype=float)
    return max(z - np.maximum(z - v, 0.0).mean() / (1.0 - alpha) for z in v)


def test_risk_measure_names_and_levels():
    values = torch.arange(8, dtype=DTYPE).flip(0).reshape(1, 1, 8, 1)          # 7 .. 0
    assert float(risk_measure('expectation', 8, 0.8)(values)) == pytest.approx(3.5)
    assert float(risk_measure('var', 8, 0.8)(values)) == pytest.approx(1.0)    # 2nd lowest
    assert float(risk_measure('cvar', 8, 0.8)(values)) == pytest.approx(0.375)  # the worst 1.6 draws: (0 + 0.6) / 1.6


@pytest.mark.parametrize('alpha, n_w', [(0.8, 16), (0.75, 16), (0.8, 15), (0.9, 7), (0.5, 9), (0.99, 16)])
def test_cvar_alpha_is_the_worst_one_minus_alpha_share(alpha, n_w):
    """CVaR_α averages the worst (1 - α) share of the draws for any n_w (BoTorch's CVaR took the worst 4 of 16, 25 %,
    at α = 0.8), by the Rockafellar-Uryasev form; differentiable in the samples."""
    samples = torch.randn(3, 2, 2 * n_w, 1, dtype=DTYPE, generator=torch.Generator().manual_seed(n_w),
                          requires_grad=True)
    cvar = risk_measure('cvar', n_w, alpha)(samples)
    assert cvar.shape == (3, 2, 2)
    blocks = samples.detach().reshape(3, 2, 2, n_w).numpy()
    expected = np.array([[[empirical_cvar(b, alpha) for b in row] for row in mat] for mat in blocks])
    np.testing.assert_allclose(cvar.detach().numpy(), expected, rtol=1e-10, atol=1e-12)
    cvar.sum().backward()
    assert torch.isfinite(samples.grad).all() and samples.grad.abs().sum() > 0
    with pytest.raises(ValueError, match='unknown risk measure'):
        risk_measure('cvar2', 8, 0.8)
    with pytest.raises(ValueError, match='alpha'):
        risk_measure('var', 8, 1.5)


def test_ugp_risk_recommends_the_best_cvar_of_the_posterior_mean_and_decides_batches():
    noise = GaussianExecutionNoise.isotropic(0.8, 2)
    p = Planner(BOX, noise, method='ugp_risk', n_initial=6, seed=1, optimizer=FAST,
                method_settings={'risk': 'cvar', 'alpha': 0.75, 'n_w': 8})
    g = torch.Generator().manual_seed(2)
    for _ in range(8):
        x = p.suggest()
        ex = x + 0.8 * torch.randn(2, generator=g, dtype=DTYPE)
        p.observe(x, Gaussian(ex[None], 0.1 * torch.eye(2, dtype=DTYPE)[None]), float(torch.sin(ex / 2).sum()))
    assert [d.phase for d in p.decisions[6:]] == ['acquisition'] * 2
    rec = p.recommend()
    xi = perturbation_set(noise, 8, p.seed * 100_003 + p.n, at=BOX.mean(0), like=BOX).numpy()
    hp = p.model.hyperparameters()
    locs = p.model.train_locations
    scores = []
    for t in p.targets.numpy():
        mu, _ = oracle.posterior(locs.mean.numpy(), locs.covariance.numpy(), p.model.train_y.numpy(), t + xi,
                                 np.zeros((8, 2, 2)), hp['lengthscale'], hp['outputscale'], hp['noise'], hp['mean'])
        scores.append(empirical_cvar(mu, 0.75))
    assert rec.index == int(np.argmax(scores)) and rec.mean == pytest.approx(max(scores), rel=1e-8)
    batch = p.suggest(q=2)
    assert batch.shape == (2, 2) and float((batch[0] - batch[1]).norm()) > 1e-3

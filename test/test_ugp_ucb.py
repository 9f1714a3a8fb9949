"""uGP-UCB's acquisition: the score against the model's posterior, and the in-box share of the kernel
footprint against numerical quadrature."""
import math

import pytest
import torch
from scipy.integrate import dblquad

from uncertain_bo.acquisition.ugp_ucb import UpperConfidenceBound, in_box_fraction
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP

BOX = torch.tensor([[0.0, 0.0], [200.0, 100.0]], dtype=torch.float64)


@pytest.fixture(scope='module')
def model():
    gen = torch.Generator().manual_seed(0)
    x = BOX[0] + torch.rand(12, 2, generator=gen, dtype=torch.float64) * (BOX[1] - BOX[0])
    y = torch.sin(x[:, 0] / 30) + torch.cos(x[:, 1] / 20)
    gp = DistributionGP(BOX)
    gp.set_data(Gaussian(x, torch.eye(2, dtype=torch.float64).expand(12, 2, 2) * 0.25), y)
    gp.set_hyperparameters(lengthscale=[25.0, 15.0], outputscale=1.0, noise=1e-3)
    return gp


def test_ucb_is_mean_plus_beta_std_of_the_candidates(model):
    noise = GaussianExecutionNoise.isotropic(0.75, 2)
    x = torch.tensor([[10.0, 10.0], [100.0, 50.0], [200.0, 0.0]], dtype=torch.float64)
    mean, var = model.posterior(noise(x))
    ucb = UpperConfidenceBound(model, noise, 2.5)
    assert torch.allclose(ucb.score(x), mean + 2.5 * var.sqrt())
    assert torch.allclose(ucb(x.unsqueeze(-2)), ucb.score(x))   # BoTorch's b x 1 x d interface
    with pytest.raises(ValueError):
        UpperConfidenceBound(model, noise, -1.0)


@pytest.mark.parametrize('point', [(100.0, 50.0), (0.0, 50.0), (0.0, 0.0), (7.0, 96.0), (190.0, 30.0)])
def test_in_box_fraction_matches_quadrature(model, point):
    ell = (model.kernel.lengthscale.reshape(-1) * (BOX[1] - BOX[0])).tolist()   # metres
    x0, y0 = point

    def k(y, x):
        return math.exp(-0.5 * (((x - x0) / ell[0]) ** 2 + ((y - y0) / ell[1]) ** 2))

    inside, _ = dblquad(k, 0.0, 200.0, 0.0, 100.0, epsabs=1e-10)
    expected = inside / (2 * math.pi * ell[0] * ell[1])
    got = float(in_box_fraction(model, torch.tensor([point], dtype=torch.float64))[0])
    assert got == pytest.approx(expected, rel=1e-6)


def test_in_box_ucb_only_damps_exploration_at_the_edge(model):
    noise = GaussianExecutionNoise.isotropic(0.75, 2)
    plain, boxed = UpperConfidenceBound(model, noise, 3.0), UpperConfidenceBound(model, noise, 3.0, in_box=True)
    centre = torch.tensor([[100.0, 50.0]], dtype=torch.float64)
    corner = torch.tensor([[0.0, 0.0]], dtype=torch.float64)
    assert float(in_box_fraction(model, centre)) > 0.99   # footprint inside: nearly plain UCB
    assert float(boxed.score(centre)) <= float(plain.score(centre))
    mean, var = model.posterior(noise(corner))
    phi = float(in_box_fraction(model, corner))
    assert phi == pytest.approx(0.25, rel=1e-6)
    assert float(boxed.score(corner)) == pytest.approx(float(mean + 3.0 * phi * var.sqrt()))


def test_planner_in_box_exploration_applies_to_ucb_methods_only():
    from uncertain_bo.planner import Planner

    def run(method, in_box):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method=method, n_initial=3, seed=1,
                    in_box_exploration=in_box)
        for _ in range(3):
            x = p.suggest()
            p.observe(x, Gaussian(x[None], torch.eye(2, dtype=torch.float64)[None] * 0.1), float(x[0] / 100))
        return p.suggest()

    x = run('gp_ucb', True)
    assert ((x >= BOX[0]) & (x <= BOX[1])).all()
    assert torch.equal(run('uei', True), run('uei', False))   # no exploration bonus to weight

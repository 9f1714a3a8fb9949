"""UEI (``acquisition/uei.py``; Nogueira et al. 2016): EI averaged over the unscented sigma points of the execution
noise, against the closed-form EI at each sigma point; its registry entry and its run through the planner (with
IGP-UCB, the other baseline on the commanded targets)."""
import numpy as np
import pytest
import torch
from scipy.stats import norm

from uncertain_bo.acquisition import METHODS, get_method
from uncertain_bo.acquisition.uei import UnscentedExpectedImprovement
from uncertain_bo.distributions import Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.planning.planner import Planner
from uncertain_bo.distributions.unscented import UnscentedRBFKernel, sigma_points

UNIT = torch.tensor([[0.0, 0.0], [1.0, 1.0]])


def test_uei_is_weighted_ei_over_sigma_points(gen):
    gp = DistributionGP(UNIT, UnscentedRBFKernel(2), standardize=False, priors=False)
    x = torch.rand(12, 2, generator=gen)
    gp.set_data(Dirac(x), torch.cos(4 * x[:, 0]) * x[:, 1])
    gp.set_hyperparameters(lengthscale=0.2, outputscale=1.0, noise=0.01, mean=0.0)
    noise = GaussianExecutionNoise(torch.tensor([[0.01, 0.002], [0.002, 0.004]]))
    targets = torch.tensor([[0.2, 0.7], [0.6, 0.4], [0.98, 0.5]])
    plain = UnscentedExpectedImprovement(gp, noise, kappa=1.0, log=False, clip=True)
    logged = UnscentedExpectedImprovement(gp, noise, kappa=1.0, log=True, clip=True)
    best = float(gp.marginals(Dirac(x))[0].max())
    assert plain.best == pytest.approx(best)
    pts, w = sigma_points(targets, noise.covariance, 1.0)
    pts = pts.clamp(0, 1)
    expected = []
    for j in range(3):
        with torch.no_grad():
            m, v = gp.marginals(Dirac(pts[j]))
        s = v.sqrt().numpy()
        u = (m.numpy() - best) / s
        ei = s * (u * norm.cdf(u) + norm.pdf(u))            # EI of N(m, s²) over the incumbent, closed form
        expected.append(float((w.numpy() * ei).sum()))
    got = plain(targets.unsqueeze(-2)).detach()
    torch.testing.assert_close(got, torch.tensor(expected), rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(logged(targets.unsqueeze(-2)).detach(), got.log(), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ registry and planner wiring
def test_registry_describes_the_baselines():
    assert {'ugp_ucb', 'igp_ucb', 'uei'} <= set(METHODS)
    igp, uei = get_method('igp_ucb'), get_method('uei')
    assert igp.inputs == 'target' and not igp.robust_candidates
    assert uei.inputs == 'target' and uei.robust_candidates
    assert isinstance(uei().kernel(3), UnscentedRBFKernel) and uei().kernel(3).kappa == 1.0
    assert uei(kappa=0.5).kernel(3).kappa == 0.5


def test_method_settings_reach_the_method_and_unknown_ones_are_refused():
    planner = Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method='uei', method_settings={'kappa': 0.5})
    assert planner.method_object.kappa == 0.5 and planner.model.kernel.kappa == 0.5
    with pytest.raises(ValueError, match="method 'ugp_ucb'.*takes no settings"):
        Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method='ugp_ucb', method_settings={'kappa': 1})


@pytest.mark.parametrize('method', ['igp_ucb', 'uei'])
def test_baselines_train_on_targets_and_run_in_the_planner(method, gen):
    planner = Planner(UNIT, GaussianExecutionNoise.isotropic(0.05, 2), method=method, n_initial=4, seed=1,
                      refit_every=0, beta=2.0)
    for _ in range(7):
        x = planner.suggest()
        assert ((x >= 0) & (x <= 1)).all()
        where = x + 0.05 * torch.randn(2, generator=gen)
        planner.observe(x, Gaussian((where + 0.02 * torch.randn(2, generator=gen)).reshape(1, 2),
                                    torch.eye(2) * 4e-4), float(torch.sin(3 * where).sum()))
    rec = planner.recommend()  # moves the last observation into the GP
    locs = planner.model.train_locations
    torch.testing.assert_close(locs.mean, planner.targets)          # GP inputs = commanded targets
    assert float(locs.covariance.abs().max()) == 0.0                # ... as points
    assert all(np.isfinite(d.acquisition_value) for d in planner.decisions[4:])
    mean, _ = planner.predict(planner.targets)
    assert rec.mean == pytest.approx(float(mean.max()))

"""The data several acquisition tests score against the NumPy closed forms of ``oracle.py``: nine readings of
:math:`\\sin x_1 + \\tfrac12\\cos x_2` at heteroscedastic Gaussian location distributions in a box that is not the
unit square, a GP with fixed physical hyperparameters on them, and a correlated execution-noise model."""
import numpy as np
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.acquisition.optimize import OptimizerSettings

DT = torch.float64
BOX = torch.tensor([[-2.0, 10.0], [6.0, 14.0]], dtype=DT)   # not the unit square: the unit-cube map is tested
ELL, SF2, LAM, MEAN0 = (1.5, 0.8), 2.0, 0.05, 0.3           # physical lengthscales, signal and noise variance
EXEC_COV = np.array([[0.09, 0.02], [0.02, 0.04]])           # execution-noise model Σ̂ (correlated)
FAST = OptimizerSettings(num_restarts=2, raw_samples=64, maxiter=50)


def gaussian_inputs_gp():
    """``(gp, x (9, 2), covs (9, 2, 2), y (9,))``: the GP on nine Gaussian location distributions."""
    rng = np.random.default_rng(7)
    x = rng.uniform(BOX[0].numpy(), BOX[1].numpy(), (9, 2))
    a = rng.normal(size=(9, 2, 2)) * 0.2
    covs = a @ a.transpose(0, 2, 1)                      # heteroscedastic location covariances Σ_i
    y = np.sin(x[:, 0]) + 0.5 * np.cos(x[:, 1])
    gp = DistributionGP(BOX, standardize=False, priors=False)
    gp.set_data(Gaussian(torch.as_tensor(x), torch.as_tensor(covs)), torch.as_tensor(y))
    gp.set_hyperparameters(lengthscale=list(ELL), outputscale=SF2, noise=LAM, mean=MEAN0)
    return gp, x, covs, y


def noise_model():
    """The execution-noise model :math:`\\hat P_{\\mathbf x}` with covariance ``EXEC_COV``."""
    return GaussianExecutionNoise(torch.as_tensor(EXEC_COV))


def field(x):
    """A smooth test field on BOX (field units)."""
    return float(torch.sin(x[0]) + torch.cos(0.8 * x[1]))


def observed_planner(method, seed=3):
    """A planner of ``method`` on BOX after 4 measurements of :func:`field`, each at a location distribution
    ``N(executed, 0.01 I)`` around the target executed with 0.1 m noise (the same executions for every method)."""
    from uncertain_bo.planning.planner import Planner
    p = Planner(BOX, noise_model(), method=method, n_initial=3, seed=seed, optimizer=FAST)
    g = torch.Generator().manual_seed(0)
    for _ in range(4):
        x = p.suggest()
        ex = x + 0.1 * torch.randn(2, generator=g, dtype=DT)
        p.observe(x, Gaussian(ex[None], 0.01 * torch.eye(2, dtype=DT)[None]), field(ex))
    return p

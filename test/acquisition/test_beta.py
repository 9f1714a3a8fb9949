"""β schedules (``acquisition/beta.py``): FixedBeta, TheoryBeta against Oliveira et al. 2019 Eq. 20 computed by
hand (information gain Eq. 18 from the NumPy closed-form kernel, ``oracle.py``), and Proposition 3's noise."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.acquisition.beta import (FixedBeta, TheoryBeta, effective_noise_std, make_beta, prop3_sigma_f,
                                           se_lipschitz_constant)
from uncertain_bo.distributions import Dirac, Gaussian
from uncertain_bo.models import DistributionGP

from . import oracle

DT = torch.float64
BOX = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DT)


def _model(n, ell=(0.1, 0.2), sf2=1.0, lam=0.01):
    rng = np.random.default_rng(n)
    x = rng.uniform(0.0, 1.0, (n, 2))
    covs = np.repeat((0.05 ** 2 * np.eye(2))[None], n, axis=0)
    gp = DistributionGP(BOX, standardize=False, priors=False, noise_lower_bound=1e-8)
    if n:
        gp.set_data(Gaussian(torch.as_tensor(x), torch.as_tensor(covs)), torch.as_tensor(np.sin(6 * x[:, 0])))
    gp.set_hyperparameters(lengthscale=list(ell), outputscale=sf2, noise=lam, mean=0.0)
    return gp, x, covs


def test_fixed_beta_is_constant_and_make_beta_wraps_numbers():
    gp = _model(5)[0]
    assert [FixedBeta(3.0)(t, gp) for t in (0, 1, 50)] == [3.0, 3.0, 3.0]
    assert make_beta(2) == FixedBeta(2.0) and isinstance(make_beta(2).value, float)
    theory = TheoryBeta(b=1.0, delta=0.1, sigma_nu=0.1)
    fixed = FixedBeta(4.0)
    assert make_beta(theory) is theory and make_beta(fixed) is fixed


@pytest.mark.parametrize('n, ell, sf2, lam', [(0, (0.1, 0.2), 1.0, 0.01), (6, (0.1, 0.2), 1.0, 0.01),
                                              (25, (0.3, 0.05), 2.5, 0.2)])
def test_theory_beta_is_equation_20_by_hand(n, ell, sf2, lam):
    """β_t = b + σ_ν sqrt(2 (I_{t-1} + 1 + log(1/δ))), I = ½ log|I + λ⁻¹ K̂| (Eqs. 18, 20); no data: I = 0."""
    gp, x, covs = _model(n, ell, sf2, lam)
    b, delta, sigma_nu = 2.3, 0.4, 0.35
    gain = oracle.information_gain(x, covs, ell, sf2, lam) if n else 0.0
    expected = b + sigma_nu * math.sqrt(2.0 * (gain + 1.0 + math.log(1.0 / delta)))
    assert TheoryBeta(b=b, delta=delta, sigma_nu=sigma_nu)(n, gp) == pytest.approx(expected, rel=1e-10)


def test_theory_beta_grows_with_the_data_and_checks_its_arguments():
    schedule = TheoryBeta(b=1.0, delta=0.4, sigma_nu=0.1)
    values = [schedule(n, _model(n)[0]) for n in (0, 5, 20)]
    assert values[0] < values[1] < values[2]
    for bad in (dict(b=1.0, delta=0.0, sigma_nu=0.1), dict(b=1.0, delta=1.0, sigma_nu=0.1),
                dict(b=-1.0, delta=0.5, sigma_nu=0.1), dict(b=1.0, delta=0.5, sigma_nu=-0.1)):
        with pytest.raises(ValueError):
            TheoryBeta(**bad)


def test_proposition_3_noise_by_hand():
    """σ_F = ‖f‖_k ℓ_k tr(Σ)^{1/2}, ℓ_k = σ_f / min ℓ_i for the SE kernel; σ_ν = sqrt(σ_F² + σ_ζ²)."""
    cov = torch.tensor([[0.01, 0.003], [0.003, 0.04]], dtype=DT)
    sigma_f = prop3_sigma_f(3.0, cov, lengthscale=[0.2, 0.1], outputscale=4.0)
    assert sigma_f == pytest.approx(3.0 * (2.0 / 0.1) * math.sqrt(0.05), rel=1e-12)
    assert se_lipschitz_constant(0.5) == pytest.approx(2.0)
    assert effective_noise_std(0.1, sigma_f) == pytest.approx(math.hypot(0.1, sigma_f), rel=1e-12)
    assert effective_noise_std(0.1) == 0.1
    with pytest.raises(ValueError):
        se_lipschitz_constant([0.1, 0.0])


def test_prop3_and_theory_beta_against_hand_computation():
    # SE kernel, σ_f² = 1, ℓ = 0.1: ℓ_k = σ_f/ℓ = 10; Σ = diag(0.01, 0.01): tr = 0.02
    assert se_lipschitz_constant(0.1) == pytest.approx(10.0)
    assert se_lipschitz_constant([0.2, 0.1], outputscale=4.0) == pytest.approx(20.0)
    sigma_f = prop3_sigma_f(2.0, torch.eye(2) * 0.01, lengthscale=0.1)
    assert sigma_f == pytest.approx(2.0 * 10.0 * math.sqrt(0.02))
    sigma_nu = effective_noise_std(0.1, sigma_f)
    assert sigma_nu == pytest.approx(math.sqrt(8.0 + 0.01))

    # Eq. 20 with two Dirac observations 0.1 apart (ℓ = 0.1 => k12 = e^{-1/2}), λ = 0.5:
    # γ = ½ log det(I + K/λ) = ½ log((1 + 1/λ)² − (k12/λ)²) = ½ log(9 − 4/e)
    gp = DistributionGP(BOX, standardize=False, priors=False)
    gp.set_data(Dirac(torch.tensor([[0.2, 0.5], [0.3, 0.5]])), torch.tensor([0.1, -0.2]))
    gp.set_hyperparameters(lengthscale=0.1, outputscale=1.0, noise=0.5, mean=0.0)
    gamma = 0.5 * math.log(9.0 - 4.0 / math.e)
    b, delta, s_nu = 2.5, 0.4, 0.7
    hand = b + s_nu * math.sqrt(2.0 * (gamma + 1.0 + math.log(1.0 / delta)))
    assert TheoryBeta(b, delta, s_nu)(2, gp) == pytest.approx(hand, rel=1e-12)

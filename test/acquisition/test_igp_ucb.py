"""IGP-UCB (``acquisition/igp_ucb.py``): Theorem 2's effective noise by hand, and ``gp_ucb`` as its alias."""
import math

import pytest
import torch

from uncertain_bo.acquisition import get_method
from uncertain_bo.acquisition.igp_ucb import input_noise_sigma_nu


def test_sigma_nu_is_prop3s_input_noise_and_the_output_noise_in_quadrature():
    # SE kernel, σ_f² = 1, ℓ = 0.1: ℓ_k = 10; Σ = 0.01 I (tr 0.02), ‖f‖ ≤ 2: σ_F = 2 · 10 · √0.02; σ_ζ = 0.1
    got = input_noise_sigma_nu(2.0, torch.eye(2) * 0.01, 0.1, lengthscale=0.1)
    assert got == pytest.approx(math.sqrt((2.0 * 10.0 * math.sqrt(0.02)) ** 2 + 0.1 ** 2))


def test_gp_ucb_and_erbf_are_aliases_of_the_methods_they_are():
    for alias, of in (('gp_ucb', 'igp_ucb'), ('erbf', 'ugp_ucb')):
        cls = get_method(alias)
        assert cls.alias_of == of and issubclass(cls, get_method(of)) and 'alias of' in cls.description
        assert cls.inputs == get_method(of).inputs and cls.robust_candidates == get_method(of).robust_candidates

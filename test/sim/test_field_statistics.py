"""Tests for uncertain_bo.sim.field_statistics against closed forms (through Field.statistics)."""
import math

import numpy as np
import pytest

from uncertain_bo.sim.field import Field


def test_statistics_against_closed_forms():
    # f = cos(2πx/Px) cos(2πy/Py): lagging along x multiplies by cos(2πL/Px) (the y factor cancels), for the
    # values and the slopes alike, so both e-fold at L = P arccos(1/e) / 2π; the two axes are averaged
    xs = np.linspace(0.0, 200.0, 801)
    X, Y = np.meshgrid(xs, xs)
    px, py = 20.0, 12.5
    f = Field(np.cos(2 * np.pi * X / px) * np.cos(2 * np.pi * Y / py), (0, 200, 0, 200))
    st = f.statistics(cov=0.0)
    expected = 0.5 * (px + py) * math.acos(math.exp(-1.0)) / (2 * math.pi)
    assert st.correlation_length == pytest.approx(expected, rel=0.02)     # finite window, lag interpolation: ~1 %
    assert st.slope_correlation_length == pytest.approx(expected, rel=0.02)
    # one Gaussian bump: g = a σ²/v exp(-r²/2v), v = σ² + s² (closed form); median g ~ 0 far from it, so
    # the nodes within 0.1 regret of g* are the disk where exp(-r²/2v) >= 0.9 (up to the tiny median)
    sig, s = 6.0, 2.0
    bump = Field(np.exp(-((X - 90.0) ** 2 + (Y - 120.0) ** 2) / (2 * sig ** 2)), (0, 200, 0, 200))
    v = sig ** 2 + s ** 2
    g = sig ** 2 / v * np.exp(-((X - 90.0) ** 2 + (Y - 120.0) ** 2) / (2 * v))
    oracle = np.mean(g.max() - g <= 0.1 * (g.max() - np.median(g)))
    got = bump.statistics(cov=s ** 2 * np.eye(2)).near_optimal_fraction
    assert got == pytest.approx(oracle, rel=0.02)
    assert got == pytest.approx(math.pi * 2 * v * math.log(1 / 0.9) / 200.0 ** 2, rel=0.05)   # disk area

"""AIRBO's benchmark functions and robust-optimum oracles reproduce the published optima."""
import pytest
import torch

from uncertain_bo.benchmarks.functions_airbo import (AIRBO_BENCHMARKS, bumped_bowl, double_peak, get_airbo_problem,
                                                     rkhs1d, robust_argmax_grid, robust_value)


def test_function_landmarks():
    assert float(rkhs1d(torch.tensor([[0.89235]]))) == pytest.approx(5.73839, abs=1e-4)  # Assael et al.
    grid = torch.linspace(0, 1, 100_001).unsqueeze(-1)
    assert float(grid[torch.argmax(rkhs1d(grid))]) == pytest.approx(0.89235, abs=2e-5)
    assert float(grid[torch.argmax(double_peak(grid))]) == pytest.approx(0.350, abs=1e-3)  #
    r = torch.linspace(0, 1.5, 150_001)
    g = bumped_bowl(torch.stack([r, torch.zeros_like(r)], -1))
    assert float(r[torch.argmin(g)]) == pytest.approx(0.503, abs=1e-3)
    assert float(g.min()) == pytest.approx(0.0087, abs=1e-4)


@pytest.mark.parametrize('name', ['rkhs1d-gauss', 'double-peak-beta'])
@pytest.mark.parametrize('seed', [0, 1])
def test_grid_oracle_reproduces_published_robust_argmax(name, seed):
    p = get_airbo_problem(name)
    x, g = robust_argmax_grid(p, n_grid=1000, n_samples=500, seed=seed)
    assert x == pytest.approx(p.robust_argmax[0], abs=0.003)
    assert g == pytest.approx(p.robust_optimum, rel=0.01)  # 500-sample Monte Carlo


def test_double_peak_nominal_and_gaussian_optima_differ():
    """The beta input moves the robust optimum from the tall peak (0.35) to the wide one (0.25)."""
    p = get_airbo_problem('double-peak-beta')
    g = robust_value(p, torch.tensor([[0.252], [0.350]]), n_samples=2000)
    assert g[0] > g[1] + 1.0


def test_bumped_bowl_robust_optimum_at_origin():
    p = get_airbo_problem('bumped-bowl-10d')
    assert p.minimize and p.dim == 10
    g0 = float(robust_value(p, torch.zeros(1, 10), n_samples=20_000))
    assert g0 == pytest.approx(0.0125, abs=3e-4)
    # moving off the origin in any of a few directions is worse under the noise
    gen = torch.Generator().manual_seed(0)
    dirs = torch.randn(20, 10, generator=gen)
    pts = 0.15 * dirs / dirs.norm(dim=-1, keepdim=True)
    assert (robust_value(p, pts, n_samples=2000) > g0).all()
    # the nominal minimiser (on the ring) is far worse
    ring = torch.zeros(1, 10)
    ring[0, 0] = 0.503
    assert float(robust_value(p, ring, n_samples=2000)) > 10 * g0


def test_regret_sign_and_zero_at_optimum():
    for p in AIRBO_BENCHMARKS:
        x = torch.tensor([p.robust_argmax])
        assert float(p.robust_regret(x)) == 0.0
        off = x + 0.3
        assert float(p.robust_regret(off)) > 0
        assert float(p.objective(x)) == pytest.approx(-float(p.function(x)) if p.minimize else float(p.function(x)))


def test_unknown_problem():
    with pytest.raises(KeyError, match='known'):
        get_airbo_problem('rkhs')

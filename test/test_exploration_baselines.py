"""Survey and BoTorch baselines, the exploration metrics and the reproducibility of in-process missions.

Oracles: the lawnmower's geometry (cell centres, one per cell, boustrophedon adjacency, a shift of at most
half a cell), the nearest-neighbour property of the random tour, the perturbation set's moments against the
execution-noise covariance, scipy's Wilcoxon test on the same differences, and path lengths of straight
trajectories in closed form.
"""
import csv
import math

import numpy as np
import pytest
import torch
from scipy.stats import wilcoxon

from uncertain_bo.acquisition import DecisionContext, get_method
from uncertain_bo.acquisition.botorch_robust import BoTorchRobust, perturbation_set
from uncertain_bo.acquisition.survey import grid_shape, lawnmower_targets, nearest_neighbour_tour, random_tour
from uncertain_bo.benchmarks import BenchSettings, expand, run_many
from uncertain_bo.benchmarks.metrics import markdown_tables, paired_comparisons, summarize
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planner import Planner
from uncertain_bo.sim.report import distance_at

BOX = torch.tensor([[0.0, 0.0], [200.0, 120.0]], dtype=torch.float64)


@pytest.mark.parametrize('n,w,h,shape', [(30, 1, 1, (6, 5)), (12, 1, 1, (4, 3)), (7, 1, 1, (7, 1)),
                                         (8, 8, 1, (8, 1)), (6, 3, 2, (3, 2)), (9, 1, 1, (3, 3))])
def test_grid_shape(n, w, h, shape):
    cols, rows = grid_shape(n, w, h)
    assert cols * rows >= n and (cols, rows) == shape


def test_grid_shape_rejects_bad_input():
    with pytest.raises(ValueError, match='n >= 1'):
        grid_shape(0, 1.0, 1.0)


@pytest.mark.parametrize('shift', [None, (0.5, -0.5), (-0.3, 0.2)])
def test_lawnmower_is_a_boustrophedon_over_cell_centres(shift):
    n = 12
    s = None if shift is None else torch.tensor(shift, dtype=torch.float64)
    pts = lawnmower_targets(BOX, n, start=torch.tensor([190.0, 5.0], dtype=torch.float64), shift=s)
    cols, rows = grid_shape(n, 200.0, 120.0)
    cell = torch.tensor([200.0 / cols, 120.0 / rows], dtype=torch.float64)
    assert pts.shape == (n, 2) and pts.dtype == BOX.dtype
    assert ((pts >= BOX[0]) & (pts <= BOX[1])).all()
    off = torch.zeros(2, dtype=torch.float64) if s is None else s
    idx = (pts - BOX[0]) / cell - 0.5 - off            # integer cell indices
    assert torch.allclose(idx, idx.round(), atol=1e-9)
    assert len({tuple(v) for v in idx.round().tolist()}) == n   # one target per cell
    # starts at the corner nearest the start (lower right), consecutive targets are neighbouring cells
    first = idx.round()[0]
    assert first.tolist() == [cols - 1, 0]
    steps = (idx.round()[1:] - idx.round()[:-1]).abs().sum(-1)
    assert (steps == 1).all()


def test_lawnmower_planner_shift_is_seeded_and_at_most_half_a_cell():
    def plan(method, seed):
        p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method=method, seed=seed, budget=30)
        p.set_start(torch.tensor([100.0, 60.0], dtype=torch.float64))
        plan = p.method_object.plan(DecisionContext(p, p.n))
        return torch.stack([p.suggest()] + [plan[i] for i in range(1, 30)])

    a, b, a2 = plan('lawnmower', 1), plan('lawnmower', 2), plan('lawnmower', 1)
    fixed1, fixed2 = plan('lawnmower_fixed', 1), plan('lawnmower_fixed', 2)
    assert torch.equal(a, a2) and not torch.allclose(a, b) and torch.equal(fixed1, fixed2)
    cell = torch.tensor([200.0 / 6, 120.0 / 5], dtype=torch.float64)
    shift = (a.min(0).values - fixed1.min(0).values) / cell
    assert (shift.abs() <= 0.5 + 1e-12).all()


def test_random_tour_is_a_greedy_nearest_neighbour_tour():
    start = torch.tensor([10.0, 10.0], dtype=torch.float64)
    pts = random_tour(BOX, 25, seed=4, start=start)
    assert torch.equal(pts, random_tour(BOX, 25, seed=4, start=start))
    assert ((pts >= BOX[0]) & (pts <= BOX[1])).all()
    pos = start
    for i in range(len(pts)):
        remaining = pts[i:]
        assert (pts[i] - pos).norm() <= (remaining - pos).norm(dim=-1).min() + 1e-12
        pos = pts[i]
    square = torch.tensor([[0.0, 0.0], [3.0, 0.0], [1.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    assert nearest_neighbour_tour(square, torch.zeros(2, dtype=torch.float64))[:, 0].tolist() == [0, 1, 2, 3]


def test_survey_needs_the_budget_and_decides_survey_phases():
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method='random', seed=0)
    with pytest.raises(ValueError, match='budget'):
        p.suggest()
    p = Planner(BOX, GaussianExecutionNoise.isotropic(0.75, 2), method='lawnmower', seed=0, budget=3,
                n_initial=2)
    for _ in range(3):
        x = p.suggest()
        p.observe(x, Gaussian(x[None], 0.1 * torch.eye(2, dtype=torch.float64)[None]), float(x.sum()))
    assert [d.phase for d in p.decisions] == ['survey'] * 3
    rec = p.recommend()                       # the GP rule over past targets
    assert any(torch.equal(rec.target, t) for t in p.targets)
    assert p.suggest() is not None and p.decisions[-1].phase == 'acquisition'  # past the budget: the planner's rule


def test_perturbation_set_moments_match_the_execution_noise():
    cov = torch.tensor([[4.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    xi = perturbation_set(GaussianExecutionNoise(cov), BOX, 1024, seed=3) * (BOX[1] - BOX[0])
    assert xi.shape == (1024, 2)
    assert torch.allclose(xi.mean(0), torch.zeros(2, dtype=torch.float64), atol=0.05)
    assert torch.allclose(torch.cov(xi.T), cov, rtol=0.08, atol=0.05)


def test_botorch_robust_decides_after_the_initial_design_and_recommends_a_past_target():
    method = BoTorchRobust(n_w=8, num_restarts=2, raw_samples=32)
    p = Planner(BOX, GaussianExecutionNoise.isotropic(2.0, 2), method='botorch_robust', seed=5, n_initial=4)
    peak = torch.tensor([150.0, 40.0], dtype=torch.float64)
    for t in range(6):
        own = method.decide(DecisionContext(p, p.n))
        assert (own.phase == 'initial') == (t < 4)
        x = p.suggest()
        if own.phase != 'initial':   # the planner's method object is the same rule with the same seed
            assert ((x >= BOX[0]) & (x <= BOX[1])).all() and p.decisions[-1].phase == 'acquisition'
        y = float(torch.exp(-((x - peak) ** 2).sum() / 2000.0))
        p.observe(x, Gaussian(x[None], torch.eye(2, dtype=torch.float64)[None]), y)
    rec = p.recommend()
    assert any(torch.equal(rec.target, t) for t in p.targets) and math.isfinite(rec.mean)
    assert get_method('botorch_robust').baseline and not get_method('botorch_robust').uses_beta


def _fake_run(method, seed, regret, distance, variant='beta=-_mismatch=1', explorer=()):
    final = {'rec_normalised_regret': regret, 'reading_normalised_regret': regret + 0.1,
             'distance_driven_m': distance, 'mean_regret': 1.0, 'rec_regret': regret}
    spec = {'problem': 'rover', 'method': method, 'variant': variant, 'seed': seed, 'iterations': 5,
            'settings': {'beta': 3.0, 'mismatch': 1.0, 'ugp_noise': 'output', 'field': None,
                         'explorer': [list(kv) for kv in explorer]}}
    return {'spec': spec, 'final': final, 'records': [], 'instance': {'optimum_value': 1.0}, 'wall_seconds': 1.0}


def test_paired_comparisons_match_scipy_wilcoxon():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 12), rng.uniform(0, 1, 12)
    da, db = rng.uniform(500, 900, 12), rng.uniform(400, 800, 12)
    results = ([_fake_run('ugp_ucb', s, a[s], da[s]) for s in range(12)]
               + [_fake_run('lawnmower', s, b[s], db[s]) for s in range(1, 12)])   # seed 0 unpaired
    comps = {(c['baseline'], c['rule']): c for c in paired_comparisons(results)}
    own = comps[('lawnmower', 'own vs own')]
    assert own['n_pairs'] == 11
    assert own['p'] == pytest.approx(wilcoxon(a[1:] - b[1:]).pvalue)
    assert own['wins'] == int((a[1:] < b[1:]).sum()) and own['losses'] == int((a[1:] > b[1:]).sum())
    assert comps[('lawnmower', 'own vs reading')]['p'] == pytest.approx(wilcoxon(a[1:] - b[1:] - 0.1).pvalue)
    assert comps[('lawnmower', 'distance driven')]['p'] == pytest.approx(wilcoxon(da[1:] - db[1:]).pvalue)
    assert ('ugp_ucb', 'own vs own') not in comps   # only methods against baselines and references
    with_ref = results + [_fake_run('gp_ucb', s, b[s] + 0.05, db[s]) for s in range(12)]
    ref = [c for c in paired_comparisons(with_ref) if c['baseline'] == 'gp_ucb' and c['rule'] == 'own vs own']
    assert len(ref) == 1 and ref[0]['method'] == 'ugp_ucb' and ref[0]['n_pairs'] == 12
    assert ref[0]['p'] == pytest.approx(wilcoxon(a - b - 0.05).pvalue)
    summary = summarize(results)
    md = markdown_tables(summary)
    assert '| ugp_ucb |' in md and '| lawnmower |' in md and 'Wilcoxon p' in md
    group = [g for g in summary['groups'] if g['method'] == 'ugp_ucb'][0]
    assert group['rec_normalised_regret']['median'] == pytest.approx(np.median(a))


def test_tables_tell_apart_configurations_that_differ_only_by_an_explorer_parameter():
    # two uGP-UCB configurations (fixed and learned execution noise) and a baseline, as `--explorer-param` makes
    fixed = [_fake_run('ugp_ucb', s, 0.1 * s, 100.0, 'beta=3_mismatch=1') for s in range(4)]
    learned = [_fake_run('ugp_ucb', s, 0.01 * s, 100.0, 'beta=3_mismatch=1_learn_execution_noise=True',
                         explorer=[('learn_execution_noise', True)]) for s in range(4)]
    base = [_fake_run('lawnmower', s, 0.5, 100.0) for s in range(4)]
    summary = summarize(fixed + learned + base)
    labels = {g['label'] for g in summary['groups']}
    assert labels == {'ugp_ucb (β=3.0)', 'ugp_ucb (β=3.0, learn_execution_noise=True)', 'lawnmower'}
    md = markdown_tables(summary)
    for label in labels:
        assert f'| {label} |' in md
    comps = {(c['label'], c['baseline_label'], c['rule']): c for c in summary['comparisons']}
    assert comps[('ugp_ucb (β=3.0, learn_execution_noise=True)', 'lawnmower', 'own vs own')]['method_median'] == \
        pytest.approx(np.median([0.01 * s for s in range(4)]))
    assert comps[('ugp_ucb (β=3.0)', 'lawnmower', 'own vs own')]['method_median'] == \
        pytest.approx(np.median([0.1 * s for s in range(4)]))
    assert '| ugp_ucb (β=3.0, learn_execution_noise=True) | lawnmower | own vs own | 4 |' in md


def test_distance_at_is_the_path_length_up_to_each_stamp():
    t = np.arange(0.0, 11.0)
    traj = np.column_stack([t, 3.0 * t, 4.0 * t, t, t])      # 5 m per second along a straight line
    np.testing.assert_allclose(distance_at(traj, [0.0, 2.5, 10.0, 99.0]), [0.0, 12.5, 50.0, 50.0])
    assert distance_at(None, [1.0]) == [None]


def _records(out):
    with open(out / 'records.csv') as fh:
        rows = list(csv.DictReader(fh))
    return [{k: v for k, v in r.items() if k not in ('seconds', 'fit_seconds')} for r in rows]


@pytest.mark.slow
def test_same_seed_gives_identical_records(tmp_path):
    """Two in-process missions with one seed write the same records.csv rows (timings aside), bit for bit,
    also when other work ran in the process in between (the fit and the optimiser draw from seeded streams)."""
    specs = expand('rover', ['ugp_ucb'], [3], 7, [BenchSettings()])
    run_many(specs, tmp_path / 'a', n_jobs=1, progress=False)
    torch.rand(17)  # the global stream moves on
    run_many(specs, tmp_path / 'b', n_jobs=1, progress=False)
    a, b = _records(tmp_path / 'a'), _records(tmp_path / 'b')
    assert len(a) == 7 and a == b

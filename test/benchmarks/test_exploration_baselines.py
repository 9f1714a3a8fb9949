"""The exploration metrics and the reproducibility of in-process missions (the survey and BoTorch baselines
themselves: ``test/acquisition/test_survey.py``, ``test_botorch_robust.py``).

Oracles: scipy's Wilcoxon test on the same differences, and path lengths of straight trajectories in closed form.
"""
import csv

import numpy as np
import pytest
import torch
from scipy.stats import wilcoxon

from uncertain_bo.benchmarks import BenchSettings, expand, run_many
from uncertain_bo.benchmarks.metrics import markdown_tables, paired_comparisons, summarize
from uncertain_bo.sim.report import distance_at


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

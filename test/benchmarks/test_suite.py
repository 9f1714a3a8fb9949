"""Tests for uncertain_bo.benchmarks.suite (suite files) and suite_report (the suite table)."""
import numpy as np
import pytest

from uncertain_bo.benchmarks.suite import SPLITS, SuiteError, load_suite
from uncertain_bo.benchmarks.suite_report import suite_markdown, suite_summary
from uncertain_bo.sim.field import Field


def test_shipped_suite_is_split_and_every_field_has_noise_and_localisation():
    s = load_suite('fields')
    tuning, held = s.field_names('tuning'), s.field_names('held_out')
    assert len(tuning) + len(held) >= 8 and not set(tuning) & set(held)
    assert s.field_names() == tuning + held
    for f in s.field_names():
        e = s.fields[f]
        assert 0.01 <= e['noise_fraction'] <= 0.05
        assert e['localisation'] in s.localisation
        if e['localisation'] == 'degraded':
            assert len(e['degraded_zone']) == 4
    # both parts hold a degraded-localisation field and a point survey
    for part in SPLITS:
        kinds = {s.fields[f]['source']['kind'] for f in s.field_names(part)}
        assert 'points' in kinds, part
        assert any(s.fields[f]['localisation'] == 'degraded' for f in s.field_names(part)), part


def test_sim_overrides_carry_the_noise_relative_to_the_field_and_the_zone():
    s = load_suite('fields')
    over = s.sim_overrides('precip-tianshan')
    _, _, z = Field.load('precip-tianshan').grid()
    assert over['reading_noise_std'] == pytest.approx(0.02 * np.ptp(z))
    assert over['reading_noise_fraction'] == 0.0 and over['field'] == 'precip-tianshan'
    assert over['degraded_zone'] == [-100.0, 300.0, -100.0, 100.0] and over['degraded_fix_dropout'] == 0.5
    assert 'degraded_zone' not in s.sim_overrides('terrain-ridges')


def test_bad_suite_names_and_parts():
    with pytest.raises(SuiteError, match="unknown suite 'nope'; shipped suites: denied, fields"):
        load_suite('nope')
    with pytest.raises(SuiteError, match="has no part 'test'"):
        load_suite('fields').field_names('test')


def test_denied_suite_loads_with_its_parts_and_mixes_what_it_says():
    """The GNSS-denied family: both parts exist and share no field; each part holds a narrow (plume or seeps) and a
    broad field, at least two drift sources and a noisy sensor; the tuning part and the whole suite hold beacons
    and surfacing."""
    from uncertain_bo.sim.drift import DRIFT_SOURCES

    s = load_suite('denied')
    tuning, held = s.field_names('tuning'), s.field_names('held_out')
    assert len(tuning) >= 4 and len(held) >= 4 and not set(tuning) & set(held)
    over = {f: s.sim_overrides(f) for f in s.field_names()}
    for part in (tuning, held):
        kinds = {s.fields[f]['source']['kind'] for f in part}
        assert kinds & {'plume', 'seeps'} and any('dome' in f or 'terrain' in f for f in part)
        assert len({over[f]['odometry_source'] + str(over[f]['odom_scale_error_std']) for f in part}) >= 2
        assert max(s.fields[f]['noise_fraction'] for f in part) >= 0.10
    assert any(over[f].get('surface_every', 0) > 0 for f in tuning)
    assert any(over[f].get('fix_beacons', [0])[2] > 0 for f in tuning)
    for f, o in over.items():
        # a drift source's parameters reach the simulator and, identically, the localiser (a consistent filter)
        assert o['odom_scale_error_std'] == o['ekf.odom_scale_error_std'] > 0
        assert o['ekf.initial_yaw_std'] > 0 and o['field_extent'] == list(s.extent_of(f))
        assert o['reading_noise_std'] > 0 and o['reading_noise_fraction'] == 0.0
    wheel = DRIFT_SOURCES['wheel'].parameters()
    assert all(over['leak-plume-a'][k] == v for k, v in wheel.items())
    assert s.extent_of('seeps-shelf') == (0.0, 500.0, 0.0, 500.0) and s.extent_of('leak-plume-a') == s.extent
    _, _, z = Field.load('seeps-shelf', extent=s.extent_of('seeps-shelf')).grid()
    assert over['seeps-shelf']['reading_noise_std'] == pytest.approx(0.05 * np.ptp(z))


def test_a_suite_with_an_unknown_drift_source_or_a_bad_extent_is_refused():
    from uncertain_bo.benchmarks.suite import _check

    base = {'localisation': {'x': {'drift': 'wheel'}}, 'split': {'tuning': ['a']},
            'fields': {'a': {'noise_fraction': 0.1, 'localisation': 'x'}}}
    assert _check('t', base).localisation['x'] == {'drift': 'wheel'}
    with pytest.raises(SuiteError, match="localisation 'x': unknown drift source 'lidar'"):
        _check('t', {**base, 'localisation': {'x': {'drift': 'lidar'}}})
    with pytest.raises(SuiteError, match="field 'a'.*extent"):
        _check('t', {**base, 'fields': {'a': {'noise_fraction': 0.1, 'localisation': 'x', 'extent': [0, 0, 0, 1]}}})


def _run(field, method, seed, regret, distance=500.0):
    recs = [{'distance_driven': distance * t / 3, 'rec_nregret': regret * (4 - t)} for t in (1, 2, 3)]
    return {'spec': {'problem': 'rover', 'method': method, 'seed': seed, 'variant': 'beta=3',
                     'settings': {'field': field, 'beta': 3.0, 'ugp_noise': 'execution', 'mismatch': 1.0}},
            'records': recs, 'final': {'rec_normalised_regret': regret, 'best_visited_normalised_regret': regret / 2,
                                       'reading_normalised_regret': regret, 'distance_driven_m': distance,
                                       'mission_time_s': 2 * distance}}


def test_suite_summary_medians_and_paired_tests_against_scipy():
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(0)
    a = {f: rng.uniform(0, 1, 8) for f in ('terrain-ridges', 'coal-ash', 'ozone-midwest')}
    b = {f: v + rng.uniform(0.05, 0.3, 8) for f, v in a.items()}
    results = [_run(f, 'ugp_ucb', s, a[f][s]) for f in a for s in range(8)]
    results += [_run(f, 'lawnmower', s, b[f][s], distance=400.0) for f in a for s in range(8)]
    out = suite_summary(results, 'fields', baselines=['lawnmower'])
    assert [e['field'] for e in out['fields']] == ['terrain-ridges', 'coal-ash', 'ozone-midwest']   # suite order
    ridge = out['fields'][0]['strategies']
    assert ridge['ugp_ucb (β=3.0)']['rec_normalised_regret'] == pytest.approx(np.median(a['terrain-ridges']))
    tuning = out['parts']['tuning']['ugp_ucb (β=3.0)']['rec_normalised_regret']
    assert tuning == pytest.approx(np.median([np.median(a['terrain-ridges']), np.median(a['coal-ash'])]))
    t = next(t for t in out['tests'] if t.get('field') == 'coal-ash')
    assert (t['wins'], t['losses']) == (8, 0)
    assert t['p'] == pytest.approx(wilcoxon(a['coal-ash'] - b['coal-ash']).pvalue)
    pooled = next(t for t in out['tests'] if t.get('part') == 'all')
    d = np.concatenate([a[f] - b[f] for f in a])
    assert pooled['n_pairs'] == 24 and pooled['p'] == pytest.approx(wilcoxon(d).pvalue)
    assert not any(t['strategy'] == 'lawnmower' for t in out['tests'])       # no baseline-vs-itself rows
    md = suite_markdown(out)
    assert '### ozone-midwest (held-out, 8 seeds)' in md and 'Median over the 3 field(s) of the whole suite' in md
    assert "distance 1.25 x the lawnmower's" in md


def test_rounding_differences_are_ties_not_wins():
    same = [0.59, 0.59 + 2.2e-16, 0.59 - 1e-15, 0.7]
    results = [_run('seabed-depth', 'ugp_ucb', s, v) for s, v in enumerate(same)]
    results += [_run('seabed-depth', 'lawnmower', s, 0.59) for s in range(4)]
    (t,) = [t for t in suite_summary(results, 'fields', ['lawnmower'])['tests'] if t.get('field')]
    assert (t['wins'], t['losses'], t['n_pairs']) == (0, 1, 4)

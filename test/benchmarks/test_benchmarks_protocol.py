"""Papers' protocols as data (``bench --protocol``): every shipped protocol expands to registered problems and
methods with a measured run time; the listing shows every one with its size and CPU-hour estimate; the summary's
statistics match independent computations; mistakes exit 2 and write nothing."""
import json

import numpy as np
import pytest
from scipy import stats

from uncertain_bo.benchmarks.cli import main as bench_cli
from uncertain_bo.benchmarks.protocol import (STATISTICS, estimate_cpu_seconds, load_protocol, parse_protocol,
                                              protocol_names, protocol_specs, protocol_summary, run_times)

EXPECTED = {'ugp-ucb-2019-rkhs2d', 'nes-2020-sin', 'nes-2020-rkhs', 'nes-2020-gmm', 'nes-2020-poly',
            'nes-2020-hartmann3', 'nes-2020-hartmann6', 'nes-2020-within-model', 'nes-2020-gravity-assist',
            'drbqo-2020-logistic', 'drbqo-2020-beale', 'drbqo-2020-eggholder', 'drbqo-2020-hartmann3',
            'drbqo-2020-hartmann6', 'drbqo-2020-levy4', 'drbqo-2020-cv-elasticnet', 'airbo-2023-rkhs1d-gauss',
            'airbo-2023-double-peak-beta', 'airbo-2023-bumped-bowl-10d'}


def test_every_protocol_expands_to_registered_runs_with_a_measured_run_time():
    names = protocol_names()
    assert EXPECTED <= set(names)
    table = run_times()
    for name in names:
        p = load_protocol(name)
        specs = protocol_specs(p)           # raises on an unknown problem, method or problem parameter
        assert len({s.key for s in specs}) == len(specs) > 0
        for part in p.parts:
            assert {s.iterations for s in specs if s.problem == part.problem and s.method in part.methods} \
                >= {part.iterations}
        secs, missing = estimate_cpu_seconds(specs, table)
        assert not missing, (name, missing)
        assert secs > 0
        assert p.metric.statistic in STATISTICS and p.deviations


def test_drbqo_logistic_is_the_papers_grid():
    p = load_protocol('drbqo-2020-logistic')
    specs = protocol_specs(p)
    # six methods x five radii x 30 repetitions, T = 100 after 12 initial points
    assert len(specs) == 6 * 5 * 30 and {s.iterations for s in specs} == {112}
    assert {dict(s.settings.problem)['rho'] for s in specs} == {0.1, 0.3, 0.5, 1, 3}
    reduced = protocol_specs(p, seeds=2, seed_offset=5, methods=['drbqo'])
    assert len(reduced) == 5 * 2 and {s.seed for s in reduced} == {5, 6}


def test_listing_shows_every_protocol_with_size_and_cpu_hours(capsys):
    assert bench_cli(['bench', '--protocol']) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split() and
            line.split()[0] in protocol_names()}
    assert set(rows) == set(protocol_names())
    for name, cols in rows.items():
        runs, evaluations, hours = int(cols[1]), int(cols[2]), float(cols[3])
        specs = protocol_specs(load_protocol(name))
        assert runs == len(specs) and evaluations == sum(s.iterations for s in specs)
        assert hours == pytest.approx(estimate_cpu_seconds(specs)[0] / 3600, abs=0.051)
    assert 'CPU hours:' in out and 'no measured run time' not in out
    assert bench_cli(['bench', '--list-protocols']) == 0
    assert capsys.readouterr().out == out


def _result(method, seed, regrets, values):
    recs = [{'t': t + 1, 'rec_regret': r, 'rec_value': v} for t, (r, v) in enumerate(zip(regrets, values))]
    return {'spec': {'problem': 'p', 'method': method, 'variant': 'beta=-_mismatch=1', 'seed': seed,
                     'iterations': len(recs), 'settings': {'beta': 2.0}}, 'records': recs}


def test_summary_reports_final_and_best_so_far_in_the_papers_statistic():
    rng = np.random.default_rng(0)
    regrets = rng.uniform(0, 1, (7, 12))
    results = [_result('m', s, regrets[s], 1 - regrets[s]) for s in range(7)]
    text = '''title: t
paper: A & B, "T", V 2020
parts: [{problem: nes-sin, methods: [ei], seeds: 7, iterations: 12}]
metric: {name: regret, key: rec_regret, statistic: %s, best_so_far: true, also: [rec_value]}'''
    final, best = regrets[:, -1], regrets.min(axis=1)
    g = protocol_summary(results, parse_protocol('x', text % 'mean_ci96'))['groups'][0]
    assert g['n_runs'] == 7 and g['seeds'] == list(range(7))
    assert g['final']['mean'] == pytest.approx(final.mean())
    assert g['final']['ci96'] == pytest.approx(stats.t.interval(0.96, 6, loc=final.mean(), scale=stats.sem(final)))
    assert g['best_so_far']['mean'] == pytest.approx(best.mean())
    assert g['also']['rec_value']['mean'] == pytest.approx(1 - final.mean())
    g = protocol_summary(results, parse_protocol('x', text % 'median_quartiles'))['groups'][0]
    assert [g['best_so_far'][k] for k in ('q25', 'median', 'q75')] == pytest.approx(np.quantile(best, [.25, .5, .75]))
    # a value the paper maximises: best so far is the largest
    up = text.replace('key: rec_regret', 'key: rec_value').replace('best_so_far: true', 'best_so_far: true, '
                                                                   'higher_is_better: true')
    g = protocol_summary(results, parse_protocol('x', up % 'mean_std'))['groups'][0]
    assert g['best_so_far']['mean'] == pytest.approx((1 - regrets).max(axis=1).mean())


@pytest.mark.parametrize('text, message', [
    ('title: t\npaper: p\nparts: [{problem: nes-sin, methods: [ei], seeds: 0, iterations: 5}]\n'
     'metric: {name: r, key: rec_regret, statistic: mean_std}', 'seeds must be a positive integer'),
    ('title: t\npaper: p\nparts: [{problem: nes-sin, methods: [ei], seeds: 2, iterations: 5, budget: 3}]\n'
     'metric: {name: r, key: rec_regret, statistic: mean_std}', 'unknown key(s) budget'),
    ('title: t\npaper: p\nparts: [{problem: nes-sin, methods: [ei], seeds: 2, iterations: 5}]\n'
     'metric: {name: r, key: rec_regret, statistic: mean}', 'unknown statistic'),
])
def test_invalid_protocols_are_rejected_with_the_reason(text, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
        parse_protocol('x', text)


@pytest.mark.parametrize('flags, message', [
    (['--protocol', 'nes-2020-nope'], "unknown protocol 'nes-2020-nope'"),
    (['--protocol', 'nes-2020-sin', '--problem', 'nes-sin'], 'drop --problem'),
    (['--protocol', 'nes-2020-sin', '--iterations', '5', '--mismatch', '2'], 'drop --iterations, --mismatch'),
    (['--protocol', 'nes-2020-sin', '--method', 'airbo'], "has no method(s) airbo"),
    (['--protocol', 'nes-2020-sin', '--seeds', '0'], '--seeds must be a positive integer'),
])
def test_protocol_mistakes_exit_2_and_write_nothing(flags, message, tmp_path, capsys):
    out = tmp_path / 'out'
    assert bench_cli(['bench', '--out', str(out)] + flags) == 2
    err = capsys.readouterr().err
    assert message in err and 'Traceback' not in err
    assert not out.exists()


@pytest.mark.slow
def test_a_reduced_protocol_runs_and_reports_the_papers_metric(tmp_path, capsys):
    out = tmp_path / 'out'
    assert bench_cli(['bench', '--protocol', 'nes-2020-sin', '--seeds', '1', '--method', 'bo_uu_ucb', '--n-jobs', '1',
                      '--restarts', '2', '--raw-samples', '64', '--out', str(out)]) == 0
    summary = json.loads((out / 'protocol_summary.json').read_text())
    run = json.loads(next((out / 'runs').iterdir()).read_text())
    assert summary['size'] == "reduced: 1 of the protocol's 700 runs" and summary['statistic'] == 'median_quartiles'
    (g,) = summary['groups']
    assert g['iterations'] == 23 and g['n_runs'] == 1
    assert g['final']['median'] == run['records'][-1]['rec_regret'] == run['final']['rec_regret']
    assert g['also']['rec_distance']['median'] == run['records'][-1]['rec_distance']
    assert 'inference regret' in capsys.readouterr().out

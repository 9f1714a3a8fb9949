"""``uncertain-bo bench --sim-param / --params / --suite``: simulation parameters reach the rover mission, and
every user mistake is one line on standard error with exit status 2 and nothing written."""
import json
import math

import pytest

from uncertain_bo.benchmarks.rover import Rover
from uncertain_bo.cli import main


def bench(tmp_path, *args):
    return main(['bench', '--problem', 'rover', '--method', 'lawnmower', '--seeds', '1', '--iterations', '3',
                 '--n-jobs', '1', '--out', str(tmp_path / 'out'), *args])


def test_sim_param_reaches_the_simulator_and_the_run_key(tmp_path):
    inst = Rover().instance(0, sim=(('reading_noise_std', 0.05), ('ekf.initial_xy_std', 0.5)))
    assert inst.params['sim_rover']['reading_noise_std'] == 0.05
    assert inst.params['sim_rover']['reading_noise_fraction'] == 0.0     # the absolute noise replaces the default
    assert inst.params['ekf']['initial_xy_std'] == 0.5
    assert bench(tmp_path, '--sim-param', 'reading_noise_std=0.05') == 0
    (run,) = (tmp_path / 'out' / 'runs').glob('*.json')
    assert 'reading_noise_std=0.05' in run.name
    assert json.loads(run.read_text())['spec']['settings']['sim'] == [['reading_noise_std', 0.05]]


def test_params_file_applies_under_the_command_line(tmp_path):
    f = tmp_path / 'p.yaml'
    f.write_text('sim_rover:\n  ros__parameters:\n    reading_noise_std: 0.2\n    use_sim_time: false\n'
                 'explorer:\n  ros__parameters:\n    beta: 2.0\n')
    from uncertain_bo.benchmarks.cli import _params_file
    explorer, sim = _params_file(str(f), (('beta', 4.0),), (('reading_noise_std', 0.3),))
    assert explorer == (('beta', 2.0), ('beta', 4.0))                   # the command line comes last and wins
    assert sim == (('reading_noise_std', 0.2), ('reading_noise_std', 0.3))   # use_sim_time (ROS only) left out
    assert dict(sim)['reading_noise_std'] == 0.3


@pytest.mark.parametrize('text', ['', '# only comments\n'], ids=['empty', 'comments only'])
def test_an_empty_params_file_is_warned_about_in_one_line(tmp_path, capsys, text):
    """Issue 20 item 4: `bench --params empty.yaml` ran silently with the shipped parameters (check and demo warn)."""
    f = tmp_path / 'empty.yaml'
    f.write_text(text)
    from uncertain_bo.benchmarks.cli import _params_file
    assert _params_file(str(f), (('beta', 4.0),), ()) == ((('beta', 4.0),), ())
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert err.startswith(f'warning: {f} has no parameters (empty, or comments only): every node keeps its defaults '
                          '(config/explorer.yaml')


def test_suite_field_brings_its_noise_and_localisation_and_sim_param_wins():
    from uncertain_bo.benchmarks.suite import load_suite
    over = Rover().overrides_for(0, 'ozone-midwest', sim=(('degraded_fix_std', 4.0),))
    suite = load_suite('fields').sim_overrides('ozone-midwest')
    assert over['sim_rover']['reading_noise_std'] == suite['reading_noise_std']
    assert over['sim_rover']['degraded_zone'] == [-100.0, 300.0, 100.0, 300.0]
    assert over['sim_rover']['degraded_fix_std'] == 4.0


@pytest.mark.parametrize('args, message', [
    (['--sim-param', 'nosuch=1'], "nosuch"),
    (['--sim-param', 'gps.fix_std=1'], "no simulation node 'gps'"),
    (['--sim-param', 'fix_std'], 'expects NAME=VALUE'),
    (['--sim-param', 'fix_std=-3'], 'fix_std'),
    (['--params', '/nonexistent.yaml'], 'cannot read parameter file'),
    (['--suite', 'nope'], "unknown suite 'nope'"),
    (['--suite', 'fields:test'], "has no part 'test'"),
    (['--suite', 'fields', '--field', 'coal-ash'], 'leave out --field'),
    (['--problem-param', 'reading_noise_std=0.05'], 'go in --sim-param'),
    (['--sim-param', 'fix_beacons=[1.0, 2.0, 3.0]'], 'fix_beacons'),
    (['--sim-param', 'odometry_source=lidar'], 'odometry_source'),
    (['--suite', 'denied:tuning', '--sim-param', 'ekf.odom_scale_error_std=-1'], 'odom_scale_error_std'),
])
def test_user_mistakes_are_one_line_exit_2_nothing_written(tmp_path, capsys, args, message):
    assert bench(tmp_path, *args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and '\n' not in err and 'Traceback' not in err, err
    assert not (tmp_path / 'out').exists()


def test_a_renamed_parameter_in_params_is_one_line_exit_2_nothing_written(tmp_path, capsys):
    """The bench keeps only the in-process parameters of a --params file: an old name was left out with the
    ROS-only ones, and the run used the new name's default."""
    f = tmp_path / 'old.yaml'
    f.write_text("explorer:\n  ros__parameters:\n    frame_id: 'odom'\n")
    assert bench(tmp_path, '--params', str(f)) == 2
    assert capsys.readouterr().err.strip() == (f"error: parameter 'frame_id' was renamed to 'global_frame' (node "
                                               f"/explorer, {f} line 3): use the new name there")
    assert not (tmp_path / 'out').exists()


def _grid_file(path, peak=(0.3, 0.7), nodes=21):
    import numpy as np

    xs = np.linspace(0.0, 1.0, nodes)
    X, Y = np.meshgrid(xs, xs)
    np.savez(path, values=np.exp(-((X - peak[0]) ** 2 + (Y - peak[1]) ** 2) / 0.02), xmin=0.0, xmax=1.0, ymin=0.0,
             ymax=1.0)
    return path


@pytest.mark.parametrize('make, extra, message', [
    (lambda d: (d / 'bad.csv').write_text('x,y,value\n1,2,3\n4,5\n6,7,8\n9,1,2\n') and d / 'bad.csv', [],
     'bad.csv:3: expected 3 columns x,y,value, got 2'),
    (lambda d: d / 'missing.csv', [], 'missing.csv does not exist; check the path'),
    (lambda d: _grid_file(d / 'ok.npz'), ['--sim-param', 'initial_x=-50'], "start (initial_x, initial_y) = (-50, 100)"),
])
def test_a_field_file_that_cannot_be_run_is_one_line_before_any_run(tmp_path, capsys, make, extra, message):
    """`bench --problem rover-denied --field PATH`: a bad file, or a start outside the field, is found by reading the
    file once before any run (it used to fail every run, exit 1, with the output folder written)."""
    path = make(tmp_path)
    rc = main(['bench', '--problem', 'rover-denied', '--method', 'lawnmower', '--seeds', '1', '--iterations', '3',
               '--n-jobs', '1', '--field', str(path), '--out', str(tmp_path / 'out'), *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and '\n' not in err and 'Traceback' not in err, err
    assert not (tmp_path / 'out').exists()


def test_a_field_file_is_read_once_while_it_is_unchanged(tmp_path):
    from uncertain_bo.benchmarks.rover import load_field

    path = _grid_file(tmp_path / 'f.npz')
    first = load_field(str(path), (0.0, 200.0, 0.0, 200.0))
    assert load_field(str(path), [0, 200, 0, 200]) is first
    assert load_field(str(path), (0.0, 100.0, 0.0, 200.0)).bounds == (0.0, 100.0, 0.0, 200.0)
    _grid_file(path, peak=(0.8, 0.2), nodes=31)          # the file changed: read again
    again = load_field(str(path), (0.0, 200.0, 0.0, 200.0))
    assert again is not first and again.value([160.0, 40.0]) > first.value([160.0, 40.0])


def test_sim_param_on_a_problem_without_a_simulator(tmp_path, capsys):
    rc = main(['bench', '--problem', 'rkhs2d', '--sim-param', 'fix_std=1', '--out', str(tmp_path / 'o')])
    assert rc == 2 and '--sim-param' in capsys.readouterr().err and not (tmp_path / 'o').exists()


@pytest.mark.slow
def test_plot_rewrites_the_suite_report_and_rejects_an_unknown_suite(tmp_path, capsys):
    from .test_suite import _run

    runs = tmp_path / 'runs'
    runs.mkdir()
    for seed in range(3):
        for method, regret in (('ugp_ucb', 0.1 + seed / 10), ('lawnmower', 0.5)):
            r = _run('coal-ash', method, seed, regret)
            r['instance'] = {'optimum_value': 1.0}
            r['spec']['iterations'] = 3
            r['wall_seconds'] = 1.0
            r['key'] = f'{method}{seed}'
            for rec in r['records']:
                rec.update(t=1, phase='acquisition', target=[0.0, 0.0], executed=[0.0, 0.0], location_mean=[0.0, 0.0],
                           rec_target=[0.0, 0.0], seconds=0.1, mean_regret=0.1, rec_regret=0.1)
            r['final'].update(mean_regret=0.1, rec_regret=0.1)
            (runs / f'{method}{seed}.json').write_text(json.dumps(r))
    assert main(['plot', str(tmp_path), '--suite', 'nope']) == 2
    assert "unknown suite 'nope'" in capsys.readouterr().err and not (tmp_path / 'summary.json').exists()
    assert main(['plot', str(tmp_path), '--suite', 'fields', '--baselines', 'lawnmower']) == 0
    md = (tmp_path / 'suite.md').read_text()
    assert '### coal-ash (tuning, 3 seeds)' in md and '| ugp_ucb (β=3.0) | lawnmower (β=3.0) | 3 | 3 / 0 |' in md
    assert (tmp_path / 'suite_regret_vs_distance.png').stat().st_size > 1000


def test_rover_denied_runs_any_field_file_with_its_sim_params(tmp_path):
    """`bench --problem rover-denied --field PATH --sim-param ...` end to end (3 measurements): the field file, the
    drift and the surfacing rule reach the mission; distance and regret are recorded as for rover."""
    import numpy as np

    xs = np.linspace(0.0, 1.0, 41)
    X, Y = np.meshgrid(xs, xs)
    path = tmp_path / 'survey.npz'
    np.savez(path, values=np.exp(-((X - 0.3) ** 2 + (Y - 0.7) ** 2) / 0.02), xmin=0.0, xmax=1.0, ymin=0.0, ymax=1.0)
    sims = ['fix_rate=0.0', 'surface_every=60.0', 'surface_duration=20.0', 'odom_scale_error_std=0.05',
            'ekf.odom_scale_error_std=0.05']
    rc = main(['bench', '--problem', 'rover-denied', '--method', 'lawnmower', '--seeds', '1', '--iterations', '3',
               '--n-jobs', '1', '--field', str(path), '--out', str(tmp_path / 'out'),
               *[a for s in sims for a in ('--sim-param', s)]])
    assert rc == 0
    (run,) = (tmp_path / 'out' / 'runs').glob('*.json')
    r = json.loads(run.read_text())
    assert r['spec']['problem'] == 'rover-denied' and r['spec']['settings']['field'] == str(path)
    assert ['surface_every', 60.0] in r['spec']['settings']['sim']
    assert len(r['records']) == 3 and r['final']['distance_driven_m'] > 60.0
    assert 0.0 <= r['final']['rec_normalised_regret']
    # the instance a seed builds: the field file, the drift and the localiser's drawn start
    from uncertain_bo.benchmarks import get_problem
    inst = get_problem('rover-denied').instance(0, field=str(path), sim=tuple((a.split('=')[0], float(a.split('=')[1]))
                                                                              for a in sims))
    sim, ekf = inst.params['sim_rover'], inst.params['ekf']
    assert sim['field'] == str(path) and sim['odometry_source'] == 'wheel_gyro' and sim['surface_every'] == 60.0
    assert ekf['odom_scale_error_std'] == 0.05 and inst.params['explorer']['max_covariance_trace'] == 1e4
    assert (ekf['initial_x'], ekf['initial_y']) != (sim['initial_x'], sim['initial_y'])
    assert math.hypot(ekf['initial_x'] - sim['initial_x'], ekf['initial_y'] - sim['initial_y']) < 5 * 0.3

"""The particle-filter localiser in the in-process mission and the ``rover-pf`` benchmark problem."""
import json
import math

import numpy as np
import torch

from uncertain_bo.benchmarks import get_problem
from uncertain_bo.benchmarks.cli import main as bench_cli
from uncertain_bo.distributions import Empirical
from uncertain_bo.sim.mission import Mission, mission_parameters
from uncertain_bo.sim.particle_filter import ParticleFilter

START = {'initial_x': 30.0, 'initial_y': 30.0}


def small_mission(method, seed=2):
    params = mission_parameters({
        'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': seed, 'localiser': 'pf', **START},
        'particle_filter': {**START, 'particles': 300, 'seed': seed},
        'explorer': {'max_measurements': 3, 'n_initial': 2, 'max_particles': 50, 'raw_samples': 64,
                     'num_restarts': 2, 'refit_every': 0}})
    return Mission(params, method=method)


def test_mission_with_the_particle_filter_feeds_airbo_empirical_locations():
    m = small_mission('airbo')
    assert isinstance(m.ekf, ParticleFilter)
    result = m.run(max_sim_time=3000.0)
    assert result.completed and result.rejected == {}
    locs = m.planner.locations
    assert isinstance(locs, Empirical) and locs.samples.shape == (3, 50, 2)   # the third was an AIRBO decision
    # the particles are where the rover was: the true position lies inside each cloud's spread
    err = result.true_positions - locs.mean.numpy()
    sd = np.sqrt(np.trace(locs.covariance.numpy(), axis1=1, axis2=2) / 2)
    assert np.all(np.linalg.norm(err, axis=1) < 4 * sd + 0.5)


def test_rover_pf_problem_and_bench_smoke(tmp_path):
    rover, rover_pf = get_problem('rover').instance(3), get_problem('rover-pf').instance(3)
    assert rover.params['sim_rover']['localiser'] == 'ekf'
    assert rover_pf.params['sim_rover']['localiser'] == 'pf' and rover_pf.params['particle_filter']['seed'] == 3
    assert torch.equal(rover.bounds, rover_pf.bounds) and rover.optimum[1] == rover_pf.optimum[1]
    out = tmp_path / 'rover-pf'
    # one AIRBO decision on empirical particle inputs (the other methods share the Gaussian path of `rover`)
    args = ['bench', '--problem', 'rover-pf', '--method', 'airbo', '--seeds', '1', '--iterations', '2',
            '--n-initial', '1', '--raw-samples', '64', '--restarts', '2', '--n-jobs', '1', '--out', str(out)]
    assert bench_cli(args) == 0
    summary = json.loads((out / 'summary.json').read_text())
    assert [g['method'] for g in summary['groups']] == ['airbo']
    assert all(g['n_runs'] == 1 and math.isfinite(g['mean_regret_mean']) for g in summary['groups'])

"""In-process mission (no DDS): same sim, EKF, pure pursuit and measurement cycle as the ROS graph."""
import json

import numpy as np
import pytest

from uncertain_bo.sim.mission import Mission, mission_parameters


def test_mission_reaches_targets_and_stores_ekf_locations():
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    params = mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
                                 'ekf': start, 'explorer': {'max_measurements': 7, 'n_initial': 4}})
    assert params['explorer']['search_bounds'] == [0.0, 60.0, 0.0, 60.0]
    result = Mission(params).run(max_sim_time=3000.0)
    assert result.completed and len(result.measurements) == 7
    targets = np.array([m.target for m in result.measurements])
    estimates = np.array([m.pose.xy for m in result.measurements])
    # execution noise: where the reading was really taken vs the target; localisation: vs the estimate
    err = result.true_positions - targets
    assert np.abs(err).max() < 5.0 and np.sqrt((err ** 2).sum(1).mean()) < 2.5
    assert np.sqrt(((result.true_positions - estimates) ** 2).sum(1).mean()) < 2.0
    for m in result.measurements:
        assert np.all(np.linalg.eigvalsh(m.pose.cov) > 1e-4) and not m.timed_out
    assert len(result.recommendations) == 7 and result.rejected == {}
    assert result.trajectory.shape[1] == 5 and result.sim_time < 3000.0


def small_field(**explorer):
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    return mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
                               'ekf': start, 'explorer': {'max_measurements': 7, 'n_initial': 4, **explorer}})


def test_mission_stops_before_a_target_beyond_the_distance_budget():
    mission = Mission(small_field(max_distance=100.0))
    result = mission.run(max_sim_time=3000.0)
    assert result.completed and 1 <= len(result.measurements) < 7
    assert result.stop_reason.startswith('the next target') and 'max_distance = 100 m' in result.stop_reason
    assert result.distance_estimate <= 100.0 and mission.world.distance_travelled <= 100.0
    unsent = mission.planner.decisions[-1]            # decided, never sent: the explorer's odometer + the leg
    assert unsent.index == len(result.measurements)
    leg = np.linalg.norm(unsent.target.numpy() - result.measurements[-1].pose.xy)
    assert result.distance_estimate + leg > 100.0


def test_learned_execution_noise_reaches_the_result_file_and_summary_json(tmp_path):
    from uncertain_bo.sim.report import summarize

    mission = Mission(small_field(learn_execution_noise=True, max_measurements=4), journal=tmp_path / 'journal.jsonl',
                      result_file=tmp_path / 'explorer_result.json')
    result = mission.run(max_sim_time=3000.0)
    assert result.completed and len(result.measurements) == 4
    # oracle: the shrinkage estimate written out from the stored pairs (prior diag(0.75²) m² worth 5 measurements)
    obs = mission.planner.journal_file.observations
    e = np.array([np.array(r['location']['mean']) - np.array(r['target']) for r in obs if not r['goal_timed_out']])
    covs = [np.array(r['location']['covariance']) for r in obs if not r['goal_timed_out']]
    expected = (5.0 * np.diag([0.75 ** 2] * 2) + e.T @ e + sum(covs)) / (5.0 + len(e))
    summary = summarize(tmp_path, mission.field, np.diag([0.75 ** 2] * 2))
    for noise in (json.loads((tmp_path / 'explorer_result.json').read_text())['execution_noise'],
                  summary['execution_noise_model']):
        assert noise['source'] == 'learned'
        assert np.allclose(noise['std'], np.sqrt(np.diag(expected)))
        assert np.isclose(noise['correlation'], expected[0, 1] / np.sqrt(expected[0, 0] * expected[1, 1]))
    assert summary['stopped_because'] == 'max_measurements = 4 reached'


def test_shipped_reading_noise_is_relative_and_a_users_absolute_noise_replaces_it(tmp_path):
    p = mission_parameters()
    assert p['sim_rover']['reading_noise_fraction'] > 0           # config/sim.yaml: scales with the field
    p = mission_parameters({'sim_rover': {'reading_noise_std': 0.05}})
    assert p['sim_rover']['reading_noise_fraction'] == 0.0 and p['sim_rover']['reading_noise_std'] == 0.05
    f = tmp_path / 'sensor.yaml'
    f.write_text('sim_rover:\n  ros__parameters:\n    reading_noise_std: 0.2\n')
    p = mission_parameters(files=[f])
    assert p['sim_rover']['reading_noise_fraction'] == 0.0 and p['sim_rover']['reading_noise_std'] == 0.2
    p = mission_parameters({'sim_rover': {'reading_noise_std': 0.05, 'reading_noise_fraction': 0.01}})
    assert p['sim_rover']['reading_noise_fraction'] == 0.01                      # both given: the user's own


def test_the_relocalise_hook_takes_the_surfacing_action_and_its_time_counts():
    """A rule plugged into the mission runner surfaces once, 40 s into the mission: the rover stops for
    surface_duration, gets one fix, and the mission's time includes it."""
    def run(rule):
        params = small_field(max_measurements=3, method='lawnmower', max_covariance_trace=1e4)
        params['sim_rover'].update(fix_rate=0.0, surface_duration=60.0, surface_fix_std=1.0)
        return Mission(params).run(max_sim_time=3000.0, relocalise=rule)

    asked = []

    def rule(loop):
        asked.append(loop.t)
        return loop.t >= 40.0 and loop.world.surfacing.count == 0

    with_fix, without = run(rule), run(None)
    assert with_fix.completed and without.completed and asked
    assert with_fix.surfacings == 1 and without.surfacings == 0 and without.fix_events == []
    (event,) = with_fix.fix_events
    assert event.source == 'surface' and event.t == pytest.approx(40.0 + 60.0)   # asked at 40 s, fixed 60 s later
    assert np.allclose(event.cov, np.eye(2))
    # the same targets and drive otherwise: the minute stopped is part of the mission's time
    assert with_fix.sim_time == pytest.approx(without.sim_time + 60.0, abs=5.0)

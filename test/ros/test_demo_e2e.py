"""End to end: the four nodes over real ROS 2 topics on simulated time, ~8 measurements.

A small 60 m x 60 m patch of the real field keeps the drives short. Checks that the rover reaches its
targets, the journal holds (target, EKF location distribution, reading) pairs, and the report is written.
"""
import json

import numpy as np
import pytest

pytest.importorskip('rclpy')
pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_simulated_exploration_over_ros_topics(tmp_path):
    from uncertain_bo.ros.graph import run_demo
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    summary = run_demo(tmp_path, {
        'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'status_period': 0.0, **start},
        'ekf': start,
        'explorer': {'max_measurements': 8, 'n_initial': 4},
    }, timeout=400)
    assert summary['completed'] and summary['measurements'] == 8
    obs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()
           if '"observation"' in s]
    assert len(obs) == 8
    for r in obs:
        cov = np.array(r['location']['covariance'])
        # the EKF's location distribution: PSD, not a Dirac, bounded by GNSS-like fixes (2 m std)
        assert np.all(np.linalg.eigvalsh(cov) > 1e-4) and np.trace(cov) < 2 * 2.0 ** 2
        assert r['location']['kind'] == 'gaussian' and np.isfinite(r['y'])
        assert abs(r['reading_stamp'] - r['pose_stamp']) <= 0.5
        assert 0.0 <= r['target'][0] <= 60.0 and 0.0 <= r['target'][1] <= 60.0
    # the rover got there: where it really measured vs the target (execution noise), per axis
    assert summary['measured_execution_std'] is not None
    assert max(summary['measured_execution_std']) < 2.0
    assert max(abs(m) for m in summary['measured_execution_mean']) < 1.5
    assert not any(p['goal_timed_out'] for p in summary['per_measurement'])
    assert summary['robust_optimum']['value'] >= summary['recommended_robust_value']
    assert (tmp_path / 'run.png').stat().st_size > 10_000
    assert len(summary['decision_seconds']) == 8


def test_demo_with_a_float64_probe_measures(tmp_path):
    """A robot's params file with a std_msgs/Float64 probe: the simulated sensor publishes the explorer's type
    (before: an RCLError type clash on 'reading'), and the header-less readings pair on arrival."""
    from uncertain_bo.ros.graph import run_demo
    params = tmp_path / 'robot.yaml'
    params.write_text('explorer:\n  ros__parameters:\n    reading_type: float64\n    reading_noise_std: 0.5\n')
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    summary = run_demo(tmp_path / 'run', {
        'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'status_period': 0.0, **start},
        'ekf': start,
        'explorer': {'max_measurements': 2, 'n_initial': 2},
    }, extra_files=[params], timeout=200)
    assert summary['completed'] and summary['measurements'] == 2
    used = json.loads((tmp_path / 'run' / 'parameters.json').read_text())
    assert used['sim_rover']['reading_type'] == used['explorer']['reading_type'] == 'float64'
    obs = [json.loads(s) for s in (tmp_path / 'run' / 'journal.jsonl').read_text().splitlines()
           if '"observation"' in s]
    assert len(obs) == 2 and all(r['reading_stamped_on_arrival'] for r in obs)
    assert all(r['reading_variance'] == pytest.approx(0.25) for r in obs)   # reading_noise_std², no variance


def test_reading_types_set_differently_for_both_nodes_are_refused(tmp_path):
    from uncertain_bo.parameters.specs import ParameterError
    from uncertain_bo.ros.graph import load_graph_parameters
    with pytest.raises(ParameterError, match="reading_type is 'temperature' for sim_rover but 'float64'"):
        load_graph_parameters(overrides={'sim_rover': {'reading_type': 'temperature'},
                                         'explorer': {'reading_type': 'float64'}})

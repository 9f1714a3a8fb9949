"""In-process mission (no DDS): same sim, EKF, pure pursuit and measurement cycle as the ROS graph."""
import numpy as np

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

"""Measurement cycle (ROS-free): pairing, validation, timeouts — driven with synthetic streams."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.parameters import validate
from uncertain_bo.planner import Planner


class Host:
    def __init__(self):
        self.goals, self.stops, self.measurements, self.done = [], [], [], None

    def send_goal(self, target):
        self.goals.append(np.array(target))

    def stop(self, position):
        self.stops.append(np.array(position))

    def measured(self, m, rec):
        self.measurements.append(m)

    def finished(self, rec):
        self.done = rec


def make(tmp_path=None, **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 3,
                                        'dwell_time': 1.0, 'goal_timeout': 30.0, 'reading_timeout': 2.0,
                                        **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5, journal=None if tmp_path is None else tmp_path / 'j.jsonl')
    host = Host()
    return Explorer(planner, host, params), host


def pose(t, xy, cov=None, frame='map'):
    return PoseEstimate(t, frame, np.asarray(xy, float), np.eye(2) * 0.25 if cov is None else np.asarray(cov))


def drive_to_goal_and_measure(ex, host, t0, reading_value=5.0, offset=(0.3, -0.2)):
    """Pose stream at 10 Hz sitting near the current goal; readings at 2 Hz. Returns the end time."""
    t = t0
    for _ in range(100):
        goal = host.goals[-1]
        ex.on_pose(pose(t, goal + np.array(offset)))
        if abs((t * 2) - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, reading_value))
        ex.tick(t)
        t = round(t + 0.1, 6)
        if ex.state in (State.DECIDING, State.DONE) or len(host.goals) > 1 + len(host.measurements):
            break
    return t


def test_full_cycle_pairs_reading_with_nearest_pose_in_time(tmp_path):
    ex, host = make(tmp_path)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    assert ex.state is State.DRIVING and len(host.goals) == 1
    # the first target is the design point nearest to the start (tour ordering)
    design = ex.planner._design
    assert np.allclose(host.goals[0], design[0].numpy())
    t = 0.1
    while len(host.measurements) < 3:
        t = drive_to_goal_and_measure(ex, host, t)
    assert ex.state is State.DONE and host.done is not None
    m = host.measurements[0]
    # reading stamped t+0.03 pairs with the pose at t (nearest), not t+0.1
    assert abs(m.pose.stamp - m.reading.stamp) == pytest.approx(0.03, abs=1e-9)
    assert np.allclose(m.pose.xy, m.target + np.array([0.3, -0.2]))
    obs = ex.planner.journal_file.observations
    assert len(obs) == 3 and obs[0]['location']['kind'] == 'gaussian'
    assert obs[0]['location']['covariance'] == [[0.25, 0.0], [0.0, 0.25]]


@pytest.mark.parametrize('bad, reason', [
    (pose(1.0, [1, 1], cov=[[np.nan, 0], [0, 1]]), 'NaN'),
    (pose(1.0, [1, 1], cov=[[-1, 0], [0, 1]]), 'negative variance'),
    (pose(1.0, [1, 1], cov=[[1, 3], [3, 1]]), 'positive semi-definite'),
    (pose(1.0, [np.inf, 1]), 'position'),
    (pose(1.0, [1, 1], frame='odom'), "frame_id 'odom'"),
])
def test_malformed_poses_never_reach_the_buffer(bad, reason):
    ex, _ = make()
    assert not ex.on_pose(bad)
    assert ex.latest_pose is None
    assert reason in ex.last_reason


def test_zero_covariance_is_a_valid_dirac_pose():
    ex, _ = make()
    assert ex.on_pose(pose(1.0, [1, 1], cov=np.zeros((2, 2))))


def test_backwards_stamp_resets_buffers():
    ex, _ = make()
    for t in (10.0, 10.1, 10.2):
        ex.on_pose(pose(t, [1, 1]))
    assert ex.on_pose(pose(2.0, [1, 1]))  # simulation reset / bag loop
    assert ex.latest_pose.stamp == 2.0
    assert len(ex._poses) == 1
    assert any('backwards' in k for k in ex.rejected)


def test_reading_without_pose_nearby_is_dropped_and_not_stored():
    ex, host = make(max_pose_age=0.2, reading_timeout=2.0)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    goal = host.goals[0]
    ex.on_pose(pose(1.0, goal))
    ex.tick(1.0)            # arrived -> dwell until 2.0
    ex.tick(2.0)            # measuring from 2.0
    ex.on_reading(Reading(2.5, 7.0))  # poses stopped arriving at 1.0
    ex.tick(2.6)
    assert ex.planner.n == 0 and not ex.rejected   # held: poses may lag the sensor
    ex.tick(4.6)            # reading_timeout after the reading: the pose stream is stale
    assert ex.planner.n == 0 and any('no pose estimate newer' in k for k in ex.rejected)
    assert 'pose stream stale' in ex.last_reason
    ex.on_reading(Reading(4.7, 7.0))
    ex.on_pose(pose(5.5, goal))  # poses resume, but none within 0.2 s of 4.7
    ex.tick(5.5)
    assert ex.planner.n == 0 and any('no pose within max_pose_age' in k for k in ex.rejected)


def test_reading_held_while_localisation_lags():
    ex, host = make(max_pose_age=0.2)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    goal = host.goals[0]
    ex.on_pose(pose(1.0, goal))
    ex.tick(1.0)
    ex.tick(2.0)
    ex.on_reading(Reading(3.0, 7.0))
    ex.tick(4.5)            # clock is 1.5 s past the reading, poses still at 1.0: hold, don't drop
    assert ex.planner.n == 0 and not ex.rejected
    for t in (2.9, 3.05, 3.2):  # the lagging EKF output catches up
        ex.on_pose(pose(t, goal))
    ex.tick(4.6)
    assert ex.planner.n == 1 and host.measurements[0].pose.stamp == pytest.approx(3.05)


def test_reading_waits_for_a_closer_pose():
    ex, host = make(max_pose_age=0.5)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    goal = host.goals[0]
    ex.on_pose(pose(1.0, goal))
    ex.tick(1.0)
    ex.tick(2.0)
    ex.on_pose(pose(2.0, goal))
    ex.on_reading(Reading(2.3, 7.0))
    ex.tick(2.35)           # nearest pose 0.3 s old; a newer one may come: hold
    assert ex.planner.n == 0
    ex.on_pose(pose(2.32, goal + 0.1))
    ex.tick(2.4)
    assert ex.planner.n == 1
    assert host.measurements[0].pose.stamp == pytest.approx(2.32)


def test_goal_timeout_measures_where_the_rover_is():
    ex, host = make(goal_timeout=5.0)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    far = host.goals[0] + np.array([20.0, 0.0])
    t = 0.0
    while ex.planner.n == 0 and t < 20:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, far))
        if abs(t * 2 - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(t, 3.0))
        ex.tick(t)
    assert len(host.stops) == 1 and np.allclose(host.stops[0], far)
    m = host.measurements[0]
    assert m.timed_out and np.allclose(m.pose.xy, far)
    assert 5.0 < t < 8.0


def test_silent_sensor_retries_then_skips_target():
    ex, host = make(reading_timeout=1.0, reading_retries=2)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    t = 0.0
    while len(host.goals) < 2 and t < 30:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, host.goals[0]))
        ex.tick(t)
    assert ex.planner.n == 0
    assert len(host.goals) == 2 and np.allclose(host.goals[1], host.goals[0])  # same target retried
    assert 4.0 < t < 5.5  # dwell 1 s + 3 x reading_timeout 1 s
    assert any('sensor silent' in k for k in ex.rejected)

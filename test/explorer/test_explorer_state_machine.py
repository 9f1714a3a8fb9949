"""Measurement cycle (ROS-free): pairing, validation, timeouts — driven with synthetic streams."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import Reading, State
from uncertain_bo.planning.planner import Planner

from explorer_cycle import at_goal_until, drive_to_goal_and_measure, make, pose


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


def test_backwards_stamp_resets_buffers():
    ex, _ = make()
    for t in (10.0, 10.1, 10.2):
        ex.on_pose(pose(t, [1, 1]))
    assert ex.on_pose(pose(2.0, [1, 1]))  # simulation reset / bag loop
    assert ex.latest_pose.stamp == 2.0
    assert len(ex.inputs.poses) == 1
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


def arrived(max_pose_age):
    """An explorer measuring at its first goal (arrived at t = 1 s, dwell over at t = 2 s), its host, the goal."""
    ex, host = make(max_pose_age=max_pose_age)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    goal = host.goals[0]
    ex.on_pose(pose(1.0, goal))
    ex.tick(1.0)
    ex.tick(2.0)
    return ex, host, goal


def test_reading_held_while_localisation_lags():
    ex, host, goal = arrived(max_pose_age=0.2)
    ex.on_reading(Reading(3.0, 7.0))
    ex.tick(4.5)            # clock is 1.5 s past the reading, poses still at 1.0: hold, don't drop
    assert ex.planner.n == 0 and not ex.rejected
    for t in (2.9, 3.05, 3.2):  # the lagging EKF output catches up
        ex.on_pose(pose(t, goal))
    ex.tick(4.6)
    assert ex.planner.n == 1 and host.measurements[0].pose.stamp == pytest.approx(3.05)


def test_reading_waits_for_a_closer_pose():
    ex, host, goal = arrived(max_pose_age=0.5)
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
    assert 4.0 < t < 5.5  # dwell 1 s + 3 x reading_timeout 1 s
    assert any('sensor silent' in k for k in ex.rejected)
    # the skipped target is kept out: the next goal is outside its zone (2 x execution_noise_std 0.75 m)
    assert len(host.goals) == 2 and np.linalg.norm(host.goals[1] - host.goals[0]) >= 1.5 - 1e-9
    assert ex.skipped_targets == 1 and len(ex.planner.keep_out) == 1


def test_stale_pose_is_rejected_relative_to_the_clock():
    ex, _ = make(max_pose_age=0.5)
    assert not ex.on_pose(pose(10.0, [1, 1]), now=11.0)
    assert ex.latest_pose is None and ex.rejected['pose: stale stamp'] == 1
    assert 'older than the clock' in ex.last_reason
    assert ex.on_pose(pose(10.7, [1, 1]), now=11.0)
    assert ex.on_pose(pose(11.2, [1, 1]), now=11.0)  # slightly ahead of a lagging clock: fine


def test_rejection_categories_stay_bounded_under_arbitrary_frames():
    ex, _ = make()
    for i in range(500):
        ex.on_pose(pose(float(i), [1, 1], frame=f'frame_{i}'))
        ex.on_pose(pose(float(i), [1, 1], cov=[[-float(i) - 1, 0], [0, 1]]))
    assert set(ex.rejected) == {'pose: wrong frame_id', 'pose: covariance negative variance'}
    assert sum(ex.rejected.values()) == 1000


def test_reading_paired_with_a_diverged_pose_is_dropped():
    ex, host = make(max_covariance_trace=4.0, max_pose_age=0.2)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    goal = host.goals[0]
    ex.on_pose(pose(1.0, goal), now=1.0)
    ex.tick(1.0)
    ex.tick(3.1)                                                # dwell over: measuring
    ex.on_pose(pose(3.2, goal, cov=np.eye(2) * 2.5), now=3.2)   # trace 5 > 4 ...
    ex.on_reading(Reading(3.21, 7.0))
    ex.on_pose(pose(3.3, goal), now=3.3)                       # ... the newest pose is fine again
    ex.tick(3.3)
    assert ex.planner.n == 0 and ex.rejected['reading: paired pose over max_covariance_trace'] == 1


def test_clock_jump_backwards_restarts_the_stage_timers():
    ex, host = make(goal_timeout=5.0)
    ex.on_pose(pose(100.0, [1.0, 1.0]), now=100.0)
    ex.tick(100.0)
    far = host.goals[0] + np.array([20.0, 0.0])
    ex.on_pose(pose(103.0, far), now=103.0)
    ex.tick(103.0)
    # simulation reset: the clock restarts at 0; the goal must not time out at once, nor never
    ex.on_pose(pose(0.0, far), now=0.0)
    ex.tick(0.0)
    assert ex.state is State.DRIVING
    t = 0.0
    while ex.state is State.DRIVING and t < 10:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, far), now=t)
        ex.tick(t)
    assert ex.state is not State.DRIVING and 1.5 < t < 2.5  # 5 s after the goal, 3 s of which before the jump


def test_high_rate_streams_keep_buffers_bounded():
    """500 Hz poses + 100 Hz readings for 60 s of stream time: buffers stay at their bounds."""
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=30)   # space-filling targets only: this test is about the input path
    ex, host = make(planner=planner, pose_buffer_size=200, max_measurements=30, dwell_time=0.5,
                    reading_timeout=1.0)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    peak = (0, 0)
    for k in range(1, 30001):   # 2 ms steps
        t = k * 0.002
        ex.on_pose(pose(t, host.goals[-1] + 0.05), now=t)
        if k % 5 == 0:
            ex.on_reading(Reading(t - 0.001, 1.0 + (k % 7)))
        if k % 50 == 0:
            ex.tick(t)
        peak = tuple(max(a, b) for a, b in zip(peak, ex.buffered))
    assert peak[0] == 200 and peak[1] <= 64
    assert ex.received['poses'] == 30001 and ex.received['readings'] == 6000
    assert ex.planner.n == 30 and ex.state is State.DONE   # measured everything while flooded
    assert not ex.rejected


def test_runtime_parameter_changes_take_effect(tmp_path):
    ex, host = make(tmp_path, max_measurements=5)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    ex.params.update(beta=1.5, pose_buffer_size=20, search_bounds=[10.0, 20.0, 10.0, 20.0],
                     execution_noise_std=[0.0, 0.0])
    ex.apply_parameters({'beta': 1.5, 'pose_buffer_size': 20, 'search_bounds': None,
                         'execution_noise_std': None})
    assert ex.planner.beta_schedule(0, None) == 1.5
    assert ex.inputs.poses.maxlen == 20
    assert ex.planner.bounds.tolist() == [[10.0, 10.0], [20.0, 20.0]]
    t = at_goal_until(ex, host, 0.0, lambda: ex.planner.n == 2)
    assert all((10 <= g).all() and (g <= 20).all() for g in host.goals[1:])  # next decisions in the new box
    # lowering max_measurements below what is done finishes at once; raising it again continues
    ex.params['max_measurements'] = 2
    t = at_goal_until(ex, host, t, lambda: ex.state is State.DONE, limit=1.0)
    assert ex.state is State.DONE and host.done is not None
    ex.params['max_measurements'] = 3
    at_goal_until(ex, host, t, lambda: ex.planner.n == 3)
    assert ex.planner.n == 3 and ex.state is State.DONE


def test_stored_covariances_are_exactly_psd(tmp_path):
    # singular up to round-off: degenerate, so floored (not rejected) for this test of what is stored
    ex, host = make(tmp_path, max_measurements=1, degenerate_pose_covariance='floor')
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    nearly = [[1e-3, 1e-3 + 1e-13], [1e-3, 1e-3 - 1e-12]]  # round-off: asymmetric, slightly indefinite
    at_goal_until(ex, host, 0.0, lambda: ex.planner.n == 1, cov=nearly)
    cov = np.array(ex.planner.journal_file.observations[0]['location']['covariance'])
    assert np.array_equal(cov, cov.T) and cov[0, 0] >= 0 and abs(cov[0, 1]) <= np.sqrt(cov[0, 0] * cov[1, 1])
    assert np.linalg.eigvalsh(cov).min() >= -1e-18


def test_invalid_reading_variance_and_huge_values_are_rejected():
    ex, _ = make()
    ex.on_pose(pose(1.0, [1.0, 1.0]))    # a reading before the first pose cannot be located (rejected for that)
    assert not ex.on_reading(Reading(1.0, 5.0, float('nan')))
    assert not ex.on_reading(Reading(1.0, 5.0, -1.0))
    assert not ex.on_reading(Reading(1.0, 1e300))
    assert ex.on_reading(Reading(1.0, 5.0, 0.0))
    assert set(ex.rejected) == {'reading: invalid variance', 'reading: value out of range'}


@pytest.mark.parametrize('message_variance, expected', [(0.0, 0.25), (0.09, 0.09)])
def test_reading_variance_reaches_the_gp_with_reading_noise_std_as_fallback(message_variance, expected):
    """A message's variance is the reading's noise floor; without one, reading_noise_std² is."""
    ex, host = make(reading_noise_std=0.5)
    ex.on_pose(pose(0.0, [1.0, 1.0]))
    ex.tick(0.0)
    t = 0.1
    for _ in range(100):
        goal = host.goals[-1]
        ex.on_pose(pose(t, goal))
        if abs((t * 2) - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, 5.0, message_variance))
        ex.tick(t)
        t = round(t + 0.1, 6)
        if host.measurements:
            break
    assert ex.planner.n == 1
    ex.planner.predict(torch.zeros(1, 2, dtype=torch.float64))  # moves the observation into the GP
    assert ex.planner.model.reading_noise.tolist() == [pytest.approx(expected)]


def test_header_less_readings_are_stamped_on_arrival_and_measured(tmp_path):
    """std_msgs/Float64 has no header: each reading is stamped when it arrives and pairs like a stamped one
    (before: stamped 'now' at every pairing attempt, no pose was ever newer, the explorer measured forever)."""
    ex, host = make(tmp_path, reading_timeout=2.0)
    t = 0.0
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    while ex.state is not State.DONE and t < 60.0:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, host.goals[-1] + 0.1), now=t)
        if abs(t * 2 - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(None, 5.0), now=t)
        ex.tick(t)
    assert ex.state is State.DONE and ex.planner.n == 3, (ex.state, dict(ex.rejected))
    for m in host.measurements:
        assert m.reading.stamped_on_arrival and m.reading.stamp == pytest.approx(m.pose.stamp, abs=0.05)
    assert all(r['reading_stamped_on_arrival'] for r in ex.planner.journal_file.observations)
    assert t < 3 * (1.0 + 3.0) + 5.0       # dwell + a reading within the window, never a timeout


def test_header_less_reading_before_the_clock_runs_is_rejected():
    ex, _ = make()
    assert not ex.on_reading(Reading(None, 5.0), now=None)
    assert ex.rejected['reading: no clock to stamp it'] == 1


def test_a_target_the_sensor_never_reads_is_not_decided_again(tmp_path):
    """Every reading outside reading_range: each failed target becomes a keep-out zone, no later goal is in one,
    and the mission ends after max_consecutive_skips (before: the same target decided again and again)."""
    ex, host = make(tmp_path, reading_timeout=0.5, reading_retries=1, reading_range=[0.0, 1.0], max_measurements=8,
                    max_consecutive_skips=4, keep_out_radius=3.0)
    t = 0.0
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    while ex.state is not State.DONE and t < 120.0:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, host.goals[-1]), now=t)
        ex.on_reading(Reading(t, 5.0), now=t)            # always outside [0, 1]
        ex.tick(t)
    assert ex.state is State.DONE and 'max_consecutive_skips = 4' in ex.done_reason
    assert ex.planner.n == 0 and ex.skipped_targets == 4 and len(host.goals) == 4
    assert len(ex.planner.decisions) == 4
    for i, g in enumerate(host.goals):          # no goal within 3 m of an earlier skipped one
        for earlier in host.goals[:i]:
            assert np.linalg.norm(g - earlier) >= 3.0 - 1e-9
    zones = [r for r in ex.planner.journal_file.records if r['type'] == 'keep_out']
    assert len(zones) == 4 and all(z['radius'] == 3.0 and 'value out of range' in z['reason'] for z in zones)
    result = ex.result(None)
    assert result['targets_skipped'] == 4 and len(result['keep_out_zones']) == 4


def test_keep_out_zones_survive_a_restart_and_the_mission_measures_around_them(tmp_path):
    """Readings refused only near one place: the mission still takes its measurements, none in a zone; a
    restarted planner on the journal keeps the zones and does not re-send the skipped target."""
    ex, host = make(tmp_path, reading_timeout=0.5, reading_retries=0, reading_range=[0.0, 10.0], max_measurements=6,
                    keep_out_radius=4.0)
    ex.planner.n_initial = 5
    t = 0.0
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    bad = host.goals[0]         # the sensor reads nonsense within 2.5 m of the first target
    while ex.state is not State.DONE and t < 200.0:
        t = round(t + 0.1, 6)
        here = host.goals[-1]
        ex.on_pose(pose(t, here), now=t)
        ex.on_reading(Reading(t, 50.0 if np.linalg.norm(here - bad) < 2.5 else 5.0), now=t)
        ex.tick(t)
    assert ex.state is State.DONE and ex.planner.n == 6
    zones = ex.planner.keep_out.zones
    assert ex.skipped_targets == len(zones) >= 1
    for m in host.measurements:
        for z in zones:
            assert np.linalg.norm(m.target - z.centre.numpy()) >= 4.0 - 1e-9
    # a restart keeps the zones
    again = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                    n_initial=5, journal=tmp_path / 'j.jsonl')
    assert len(again.keep_out) == len(zones)
    assert torch.equal(again.keep_out.zones[0].centre, zones[0].centre)


def test_a_goal_is_sent_again_until_the_controller_acts():
    """The first goal published before the controller matched was lost and the rover sat until goal_timeout:
    the explorer now re-sends the goal every goal_resend_period until the estimate moves towards it."""
    ex, host = make(goal_resend_period=2.0, goal_timeout=100.0)
    t = 0.0
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    target = host.goals[0]
    while t < 7.0:                                   # the rover does not move: the goal may be lost
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, [1.0, 1.0]), now=t)
        ex.tick(t)
    assert len(host.goals) == 4 and all(np.array_equal(g, target) for g in host.goals)   # at 0, 2, 4, 6 s
    assert ex.goal_reason == 'resent' and ex.goal_resend.resent == 3
    start = np.array([1.0, 1.0])
    step = (target - start) / np.linalg.norm(target - start)
    while t < 20.0:                                  # now the controller drives: no more re-sends
        t = round(t + 0.1, 6)
        start = start + 0.1 * step
        ex.on_pose(pose(t, start), now=t)
        ex.tick(t)
        if ex.state is not State.DRIVING:
            break
    assert len(host.goals) == 4


def test_a_controller_that_reports_its_goals_drives_the_cycle():
    """Nav2's action result: aborted -> the target is skipped at once with the reason (counted, kept out) and the
    next one decided; succeeded -> dwell and measure even outside xy_goal_tolerance."""
    ex, host = make(keep_out_radius=2.0)
    t = 0.0
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    first = host.goals[0]
    ex.goal_failed('aborted by the controller', 'error_code 104: no valid path', t + 1.0)
    assert ex.rejected['goal: aborted by the controller'] == 1 and ex.skipped_targets == 1
    assert 'error_code 104: no valid path' in ex.planner.keep_out.zones[0].reason
    ex.tick(t + 1.1)
    assert ex.state is State.DRIVING and np.linalg.norm(host.goals[-1] - first) >= 2.0 - 1e-9
    ex.goal_reached(t + 1.2)                       # the rover is still 'far' by its estimate: Nav2 says reached
    assert ex.state is State.DWELLING
    ex.goal_failed('aborted by the controller', 'late report', t + 1.3)    # not driving: ignored
    assert ex.skipped_targets == 1

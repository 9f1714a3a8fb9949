"""Measurement cycle (ROS-free) under hostile stamps and values: nothing stalls, nothing is dropped silently.

Future-stamped readings and poses, readings stamped 0 or long ago, implausible values, bursts of backwards
stamps, and decisions on a worker thread.
"""
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State, check_explorer_parameters
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost


def make(decider=None, planner_cls=Planner, **overrides):
    # these synthetic pose streams jump to each goal in one step (no driving): the pose gate (max_speed) would
    # reject the jumps; it is off unless a test turns it on
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 3,
                                        'dwell_time': 1.0, 'goal_timeout': 30.0, 'reading_timeout': 2.0,
                                        'max_speed': 0.0, **overrides})
    planner = planner_cls(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                          n_initial=5)
    host = RecordingHost()
    return Explorer(planner, host, params, decider=decider), host


def pose(t, xy):
    return PoseEstimate(t, 'map', np.asarray(xy, float), np.eye(2) * 0.25)


def to_measuring(ex, host, t=0.0):
    """Start, arrive at the first goal and dwell: returns the time at which the explorer is MEASURING."""
    start = t
    ex.on_pose(pose(t, [1.0, 1.0]), now=t)
    ex.tick(t)
    assert ex.state is State.DRIVING
    while ex.state is not State.MEASURING:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, host.goals[-1]), now=t)
        ex.tick(t)
        assert t < start + 10
    return t


def run_poses(ex, host, t, until, readings=(), dt=0.1, limit=60.0, now_for_readings=True):
    """10 Hz poses at the goal; ``readings``: (time, Reading) handed in when their time comes."""
    pending = sorted(readings, key=lambda r: r[0])
    end = t + limit
    while t < end and not until():
        t = round(t + dt, 6)
        ex.on_pose(pose(t, host.goals[-1]), now=t)
        while pending and pending[0][0] <= t:
            ex.on_reading(pending.pop(0)[1], now=t if now_for_readings else None)
        ex.tick(t)
    return t


@pytest.mark.parametrize('now_given', [True, False], ids=['clock-at-arrival', 'no-clock-at-arrival'])
def test_future_stamped_reading_does_not_stall_the_measurement(now_given):
    ex, host = make(reading_timeout=1.0, reading_retries=2)
    t0 = to_measuring(ex, host)
    bad = Reading(t0 + 1000.0, 1.0)
    good = [(t0 + 0.3 + 0.5 * i, Reading(t0 + 0.3 + 0.5 * i, 7.0)) for i in range(3)]
    t = run_poses(ex, host, t0, lambda: ex.planner.n == 1, readings=[(t0 + 0.1, bad), *good],
                  now_for_readings=now_given)
    assert ex.planner.n == 1 and host.measurements[0].reading.value == 7.0
    assert t - t0 < 1.0                         # the first good reading, not after 64 newer ones
    assert ex.rejected['reading: future stamp'] == 1
    assert 'ahead of the clock' in (ex.last_reason or '') or now_given


def test_future_stamped_reading_then_silence_skips_within_timeout_and_retries():
    ex, host = make(reading_timeout=1.0, reading_retries=2)
    t0 = to_measuring(ex, host)
    t = run_poses(ex, host, t0, lambda: len(host.goals) >= 2,
                  readings=[(t0 + 0.1, Reading(t0 + 500.0, 1.0))], now_for_readings=False)
    assert ex.planner.n == 0 and len(host.goals) == 2
    # reading_timeout x (retries + 1), plus one 0.1 s tick per window and one to decide the next target
    assert t - t0 <= 1.0 * (2 + 1) + 0.1 * 4 + 1e-9
    assert ex.rejected['reading: future stamp'] == 1
    # the operator is told readings arrived and why none was used, not "sensor silent"
    assert ex.rejected['measurement: no usable reading, target skipped'] == 1
    assert 'sensor silent' not in ex.last_reason and '1 future stamp' in ex.last_reason


@pytest.mark.parametrize('stamp', [0.0, -5.0, 'old'], ids=['zero', 'negative', 'long-ago'])
def test_stale_readings_are_counted_and_not_reported_as_a_silent_sensor(stamp):
    ex, host = make(reading_timeout=1.0, reading_retries=1)
    t0 = to_measuring(ex, host, t=1000.0)
    s = t0 - 3600.0 if stamp == 'old' else stamp
    readings = [(t0 + 0.1 * i, Reading(s, 3.0)) for i in range(1, 21)]
    run_poses(ex, host, t0, lambda: len(host.goals) >= 2, readings=readings)
    assert ex.planner.n == 0
    assert ex.rejected['reading: stale stamp'] == 20
    assert ex.rejected.get('measurement: sensor silent, target skipped', 0) == 0
    assert '20 readings arrived' in ex.last_reason and 'stale stamp' in ex.last_reason


def test_stale_hint_names_the_likely_cause():
    ex, _ = make(max_pose_age=0.5)
    assert not ex.on_reading(Reading(0.0, 1.0), now=100.0)
    assert 'stamped 0' in ex.last_reason
    assert not ex.on_pose(pose(1e9 - 7200.0, [1, 1]), now=1e9)
    assert 'use_sim_time' in ex.last_reason                  # hours away: another clock
    assert not ex.on_pose(pose(1e9 - 2.0, [1, 1]), now=1e9)
    assert 'use_sim_time' not in ex.last_reason and 'late' in ex.last_reason   # seconds: a backlog


def test_future_stamped_poses_are_rejected_and_counted():
    ex, _ = make(future_stamp_tolerance=0.5)
    assert not ex.on_pose(pose(20.0, [1, 1]), now=10.0)
    assert ex.latest_pose is None and ex.rejected['pose: future stamp'] == 1
    assert ex.on_pose(pose(10.4, [1, 1]), now=10.0)          # within the tolerance
    assert ex.on_pose(pose(10.5, [1, 1]), now=None)          # no clock yet: not judged


def test_late_or_repeated_poses_do_not_move_the_rover_back():
    """A lossy radio link delivers a pose after newer ones (within max_pose_age): it is rejected, not taken for the
    rover's latest position, and the odometer does not drive back to it; one delivered twice changes nothing."""
    ex, _ = make(max_pose_age=0.5)
    assert ex.on_pose(pose(10.0, [0, 0]), now=10.0) and ex.on_pose(pose(10.2, [3, 4]), now=10.2)
    assert not ex.on_pose(pose(10.0, [0, 0]), now=10.3)                          # late
    ex.on_pose(pose(10.2, [3, 4]), now=10.3)                                     # twice
    assert ex.rejected == {'pose: out of order': 1}
    np.testing.assert_array_equal(ex.latest_pose.xy, [3, 4])
    ex.budget.stopped()
    assert ex.budget.totals(10.3)['distance_driven_m'] == pytest.approx(5.0)   # 0 -> (3, 4) once


def test_backwards_jump_warnings_are_throttled(caplog):
    ex, _ = make()
    with caplog.at_level(logging.WARNING, logger='uncertain_bo.explorer'):
        for i in range(200):   # a bag looping every other message
            ex.on_pose(pose(100.0 if i % 2 == 0 else 10.0, [1, 1]))
    lines = [r for r in caplog.records if 'jumped backwards' in r.getMessage()]
    assert ex.rejected['pose: stamp jumped backwards (buffer reset)'] == 100
    assert 1 <= len(lines) <= 2


def test_reading_range_rejects_implausible_values_and_is_validated():
    ex, _ = make(reading_range=[-10.0, 50.0])
    ex.on_pose(pose(1.0, [1.0, 1.0]))    # a reading before the first pose cannot be located (rejected for that)
    assert not ex.on_reading(Reading(1.0, 1e12))
    assert not ex.on_reading(Reading(1.0, -10.5))
    assert ex.on_reading(Reading(1.0, 49.0))
    assert ex.rejected['reading: value out of range'] == 2
    assert 'reading_range' in ex.last_reason
    ex, _ = make()   # the default is wide but finite
    ex.on_pose(pose(1.0, [1.0, 1.0]))
    assert not ex.on_reading(Reading(1.0, 1e7)) and ex.on_reading(Reading(1.0, 9.9e5))
    assert 'reading_range' in check_explorer_parameters({'reading_range': [5.0, 5.0]})


class SlowPlanner(Planner):
    """A planner whose decisions take ``delay`` s of wall time (and record the thread they ran on)."""

    delay = 0.6

    def suggest(self):
        self.decided_on = threading.current_thread().name
        time.sleep(self.delay)
        return super().suggest()


class SlowRecommendPlanner(Planner):
    """A planner whose recommendations (where the GP is refitted after a measurement) take ``delay`` s."""

    delay = 0.6

    def recommend(self, rule=None):
        self.recommended_on = threading.current_thread().name
        time.sleep(self.delay)
        return super().recommend(rule)


def test_the_fit_after_a_measurement_runs_on_the_decider_and_the_cycle_stays_responsive():
    """The recommendation after each measurement refits the GP: on the host's executor it blocked every pose
    and reading callback for the fit's duration (on a wall clock the queued poses then arrived stale)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix='decide') as pool:
        ex, host = make(decider=pool, planner_cls=SlowRecommendPlanner, max_measurements=2)
        longest, t = 0.0, 0.0
        ex.on_pose(pose(t, [1.0, 1.0]), now=t)
        while ex.state is not State.DONE:
            t = round(t + 0.1, 6)
            w = time.monotonic()
            goal = host.goals[-1] if host.goals else np.array([1.0, 1.0])
            assert ex.on_pose(pose(t, goal), now=t)
            ex.on_reading(Reading(t, 3.0), now=t)
            ex.tick(t)
            longest = max(longest, time.monotonic() - w)
            time.sleep(0.01)
            assert t < 100
        assert longest < 0.3, longest
        assert len(host.measurements) == 2 and host.done is not None
        assert ex.planner.recommended_on.startswith('decide')


def test_background_decision_keeps_the_cycle_responsive():
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix='decide') as pool:
        ex, host = make(decider=pool, planner_cls=SlowPlanner)
        ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
        t0 = time.monotonic()
        ex.tick(0.0)
        assert time.monotonic() - t0 < 0.3          # tick did not wait for the decision
        assert ex.state is State.DECIDING and ex.deciding_in_background and not host.goals
        ex.params['beta'] = 5.0
        ex.apply_parameters({'beta': 5.0})           # deferred until the decision is done
        longest, t = 0.0, 0.0
        while not host.goals:
            t += 0.1
            w = time.monotonic()
            assert ex.on_pose(pose(t, [1.0, 1.0]), now=t)
            ex.tick(t)
            longest = max(longest, time.monotonic() - w)
            time.sleep(0.02)
            assert t < 100
        assert longest < 0.3 and ex.state is State.DRIVING
        assert ex.planner.decided_on.startswith('decide')
        assert ex.planner.beta == 5.0


def test_readings_before_the_first_pose_are_counted_as_rejected_with_the_reason():
    """Issue 20 item 4: a reading that arrives before any pose estimate cannot be located; it was accepted
    silently. Now it is counted as received and as rejected ('reading: before the first pose'), and the
    diagnostics say so while the explorer waits for a pose."""
    from uncertain_bo.reporting.operator_view import StatusReporter

    ex, _ = make()
    assert not ex.on_reading(Reading(0.5, 7.0), now=0.5)
    assert not ex.on_reading(Reading(None, 7.0), now=0.6)
    assert ex.received['readings'] == 2 and ex.rejected['reading: before the first pose'] == 2
    assert 'before any pose estimate' in ex.last_reason and ex.inputs.latest_reading is None
    report = StatusReporter().report(ex, 0.7)
    values = dict(report.values)
    assert values['readings received'] == '2' and values['rejected reading: before the first pose'] == '2'
    assert 'waiting for pose' in report.message and 'before any pose estimate' in report.message
    ex.on_pose(pose(1.0, [1.0, 1.0]), now=1.0)
    assert ex.on_reading(Reading(1.0, 7.0), now=1.0) and ex.rejected['reading: before the first pose'] == 2

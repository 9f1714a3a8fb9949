"""Mission budgets (uncertain_bo.explorer.budget): max_distance and max_mission_time, ROS-free.

The oracle is the test's own rover: it drives straight at the current goal at 5 m/s and adds up the length
of the path it really drove, and its clock is the test's.
"""
import json

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, ODOMETER_STEP, Explorer, PoseEstimate, Reading, State, TravelBudget
from uncertain_bo.explorer.pose_gate import REANCHOR_SECONDS
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import DrivingHost


def start(tmp_path, **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'dwell_time': 0.5,
                                        'max_measurements': 10, 'reading_timeout': 2.0, **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5, journal=tmp_path / 'journal.jsonl')
    host = DrivingHost()
    return Explorer(planner, host, params, result_file=tmp_path / 'explorer_result.json'), host


class Rover:
    """Drives 0.5 m per 0.1 s straight at the current goal (or along ``heading`` when given, ignoring goals);
    exact pose estimates at 10 Hz, readings at 5 Hz. ``path`` is the length it really drove, m."""

    def __init__(self, heading=None):
        # standing still from -REANCHOR_SECONDS: the pose gate confirms the first place at t = 0 (mission clock 0)
        self.xy, self.t, self.path = np.array([3.0, 4.0]), -REANCHOR_SECONDS - 0.1, 0.0
        self.heading = heading

    def step(self, ex, host):
        self.t = round(self.t + 0.1, 6)
        if self.heading is not None and host.active:
            d = self.heading(self.t) * 0.5
        elif host.active:
            d = host.goals[-1] - self.xy
            d = d * min(1.0, 0.5 / max(np.linalg.norm(d), 1e-9))
        else:
            d = np.zeros(2)
        self.xy = self.xy + d
        self.path += float(np.linalg.norm(d))
        ex.on_pose(PoseEstimate(self.t, 'map', self.xy.copy(), np.eye(2) * 0.04), now=self.t)
        if round(self.t * 10) % 2 == 0:
            ex.on_reading(Reading(self.t, float(self.xy.sum())))
        ex.tick(self.t)

    def run(self, ex, host, steps=20000):
        for _ in range(steps):
            if ex.state is State.DONE:
                return
            self.step(ex, host)
        raise AssertionError('the mission did not end')


def records(tmp_path, kind):
    return [r for r in map(json.loads, (tmp_path / 'journal.jsonl').read_text().splitlines()) if r['type'] == kind]


def test_odometer_adds_up_a_path_and_ignores_jitter_and_diverged_estimates():
    rng = np.random.default_rng(0)
    budget = TravelBudget({'max_covariance_trace': 25.0})
    for _ in range(2000):                                  # standing still: 5 cm jitter is not driving
        budget.moved_to(rng.normal(0.0, 0.05, 2), 0.01)
    assert budget.distance < ODOMETER_STEP
    budget.stopped()
    base = budget.distance
    for x in np.arange(0.0, 100.01, 0.5):                  # then 100 m along x with the same jitter
        budget.moved_to(np.array([x, 0.0]) + rng.normal(0.0, 0.05, 2), 0.01)
    budget.stopped()
    assert 99.5 < budget.distance - base < 100.5
    budget.moved_to(np.array([1e4, 0.0]), 30.0)            # a diverged estimate (trace > 25 m²) is not a move
    assert 99.5 < budget.distance - base < 100.5


def test_distance_budget_ends_the_mission_before_a_target_it_cannot_reach(tmp_path):
    ex, host = start(tmp_path, max_distance=80.0)
    rover = Rover()
    rover.run(ex, host)
    assert ex.done_reason.startswith('the next target') and 'max_distance = 80 m' in ex.done_reason
    assert 1 <= ex.planner.n < 10 and host.done is not None
    assert rover.path <= 80.0                                        # never exceeded
    unsent = records(tmp_path, 'decision')[-1]                       # decided, not sent: it did not fit
    assert unsent['index'] == ex.planner.n and len(host.goals) == ex.planner.n
    assert rover.path + np.linalg.norm(np.array(unsent['target']) - rover.xy) > 80.0
    assert ex.budget.distance == pytest.approx(rover.path, abs=1e-6)           # straight legs: exact
    assert 0 < records(tmp_path, 'observation')[-1]['distance_driven_m'] <= rover.path + 1e-3
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['stopped_because'] == ex.done_reason and result['measurements'] == ex.planner.n


def test_a_detour_past_the_distance_budget_stops_the_rover_and_measures_there(tmp_path):
    ex, host = start(tmp_path, max_distance=30.0)
    rover = Rover(heading=lambda t: np.array([np.cos(t / 3.0), np.sin(t / 3.0)]))   # circles, never arrives
    rover.run(ex, host)
    assert len(host.stops) == 1 and ex.planner.n == 1
    assert 30.0 <= rover.path <= 30.0 + 0.5                          # stopped within one 0.1 s step
    obs = records(tmp_path, 'observation')[0]
    assert obs['goal_timed_out'] and np.allclose(obs['location']['mean'], host.stops[0], atol=0.5)
    assert ex.done_reason.startswith('max_distance = 30 m driven') and ex.goal_timeouts == 0


def test_after_a_budget_stop_mid_drive_the_peak_is_reported_where_the_reading_was_taken(tmp_path):
    # the shipped rule (highest_reading) used to report the commanded target, metres from the reading
    ex, host = start(tmp_path, max_distance=30.0)
    Rover(heading=lambda t: np.array([np.cos(t / 3.0), np.sin(t / 3.0)])).run(ex, host)
    obs = records(tmp_path, 'observation')[0]
    rec = records(tmp_path, 'recommendation')[0]
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert np.linalg.norm(np.subtract(obs['target'], obs['location']['mean'])) > 3.0    # the target was not reached
    for place in (rec['target'], result['recommended_target'], rec['location_mean'],
                  result['recommended_location']['mean']):
        np.testing.assert_allclose(place, obs['location']['mean'])
    for cov in (rec['location_covariance'], result['recommended_location']['covariance']):
        np.testing.assert_allclose(cov, obs['location']['covariance'])
    assert result['recommended_measurement'] == obs['index'] == 0


def test_time_budget_ends_the_mission_before_a_target_it_cannot_measure_in_time(tmp_path):
    ex, host = start(tmp_path, max_mission_time=40.0)
    rover = Rover()
    rover.run(ex, host)
    assert ex.done_reason.startswith('the next target') and 'max_mission_time = 40 s' in ex.done_reason
    assert 1 <= ex.planner.n < 10 and not host.stops                # ended between targets: nothing cut short
    assert rover.t <= 40.0 + 0.1                                     # ended in time (first pose at t = 0.1)
    assert records(tmp_path, 'observation')[-1]['mission_time_s'] <= 40.0
    unsent = records(tmp_path, 'decision')[-1]                       # at 5 m/s plus the dwell it would not fit
    assert rover.t + np.linalg.norm(np.array(unsent['target']) - rover.xy) / 5.0 + 0.5 > 40.0


def test_time_budget_spent_mid_leg_stops_the_rover_at_once(tmp_path):
    ex, host = start(tmp_path, max_mission_time=5.0)
    rover = Rover(heading=lambda t: np.array([1.0, 0.0]) if t < 5.0 else np.zeros(2))
    rover.run(ex, host)
    assert ex.done_reason.startswith('max_mission_time = 5 s used') and ex.planner.n == 0
    assert len(host.stops) == 1 and rover.t <= 5.0 + 0.2
    result = json.loads((tmp_path / 'explorer_result.json').read_text())   # no measurement, no recommendation
    assert result['measurements'] == 0 and result['recommended_target'] is None and host.done is None
    assert result['stopped_because'] == ex.done_reason and result['mission_time_s'] == pytest.approx(5.0, abs=0.11)


def test_budgets_resume_from_the_journal(tmp_path):
    ex, host = start(tmp_path, max_distance=80.0)
    rover = Rover()
    rover.run(ex, host)
    n, decisions = ex.planner.n, len(records(tmp_path, 'decision'))
    driven = records(tmp_path, 'observation')[-1]['distance_driven_m']
    del ex
    ex, host = start(tmp_path, max_distance=80.0)                    # restart on the same journal
    assert ex.planner.n == n and ex.budget.distance == pytest.approx(driven)
    rover.run(ex, host)                                              # the pending target still does not fit
    assert ex.done_reason.startswith('the next target') and not host.goals
    assert len(records(tmp_path, 'decision')) == decisions and ex.planner.n == n


def test_raising_a_budget_at_run_time_sends_the_unsent_target(tmp_path):
    ex, host = start(tmp_path, max_distance=80.0)
    rover = Rover()
    rover.run(ex, host)
    ex.params['max_distance'] = 500.0                                # raised at run time: the mission goes on
    ex.apply_parameters({'max_distance': 500.0})
    decisions = len(records(tmp_path, 'decision'))
    for _ in range(3):
        rover.step(ex, host)
    assert ex.state is State.DRIVING and ex.done_reason is None
    assert np.allclose(host.goals[-1], records(tmp_path, 'decision')[-1]['target'])   # the unsent one ...
    assert len(records(tmp_path, 'decision')) == decisions                             # ... not decided again
    assert records(tmp_path, 'parameters')[-1]['changed'] == {'max_distance': 500.0}

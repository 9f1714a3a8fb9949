"""En-route readings (``en_route_spacing``): readings taken while driving, spaced by distance, each paired with
the pose estimate at its own stamp; stored in the GP, not counted as measurements; refused ones counted."""
import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from explorer_cycle import settle
from recording_host import RecordingHost

SPEED = 1.0   # m/s of the synthetic rover


def make(tmp_path, **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
                                        'dwell_time': 0.5, 'goal_timeout': 200.0, 'reading_timeout': 2.0,
                                        'en_route_spacing': 3.0, 'n_initial': 5, **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5, journal=tmp_path / 'j.jsonl', execution_noise_prior_weight=5.0)
    host = RecordingHost()
    return Explorer(planner, host, params), host


def pose(t, xy, cov=0.25):
    return PoseEstimate(t, 'map', np.asarray(xy, float), np.eye(2) * cov)


def field(xy):
    return float(xy[0] + 2.0 * xy[1])      # the reading tells where it was taken


def run_mission(ex, host, *, lag_from=None, until=None):
    """Poses at 10 Hz driving straight to the current goal at SPEED; readings at 1 Hz stamped 0.03 s after a pose,
    valued at where the rover was then. ``lag_from``: (t0, t1) during which the pose stream is silent."""
    t, xy = 0.0, np.array([1.0, 1.0])
    trail = {}
    while ex.state is not State.DONE and t < (until or 600.0):
        if ex.state is State.DRIVING:
            step = host.goals[-1] - xy
            dist = np.linalg.norm(step)
            xy = xy + (step / dist * min(SPEED * 0.1, dist) if dist > 0 else 0.0)
        silent = lag_from is not None and lag_from[0] <= t < lag_from[1]
        if not silent:
            ex.on_pose(pose(t, xy), t)
            trail[round(t, 6)] = xy.copy()
        if abs(t - round(t)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, field(xy)), t + 0.03)
        ex.tick(t)
        t = round(t + 0.1, 6)
    return trail


def test_en_route_readings_are_spaced_paired_by_stamp_and_do_not_count_as_measurements(tmp_path):
    ex, host = make(tmp_path)
    trail = run_mission(ex, host)
    planner = ex.planner
    assert ex.state is State.DONE and planner.n == 2 and len(host.measurements) == 2   # stops budget unaffected
    assert planner.n_en_route >= 3 and ex.en_route_readings == planner.n_en_route
    assert planner.model.n == planner.n + planner.n_en_route          # all in the GP
    records = planner.journal_file.en_route
    assert len(records) == planner.n_en_route
    # every stored reading in time order: (stamp, where, en-route?)
    stored = sorted([(m.reading.stamp, m.pose.xy, False) for m in host.measurements]
                    + [(r['reading_stamp'], np.array(r['location']['mean']), True) for r in records],
                    key=lambda s: s[0])
    for (_, before, _), (_, where, en_route) in zip(stored, stored[1:]):
        if en_route:   # spaced from the reading stored before it (the start of a leg is the stop before it)
            assert np.linalg.norm(where - before) >= 3.0 - 1e-9
    for rec in records:
        # paired with the pose nearest its stamp (0.03 s before it), whose position is stored as the mean
        assert rec['pose_stamp'] == pytest.approx(rec['reading_stamp'] - 0.03)
        where = trail[round(rec['pose_stamp'], 6)]
        assert np.allclose(rec['location']['mean'], where)
        assert rec['location']['covariance'] == [[0.25, 0.0], [0.0, 0.25]]
        assert rec['y'] == pytest.approx(field(where))
    # no target, so they do not feed the learned execution noise: two reached goals only
    assert planner.execution_estimator.n == 2
    result = ex.result(planner.recommend())
    assert result['measurements'] == 2 and result['en_route_readings'] == planner.n_en_route


def test_en_route_off_by_default(tmp_path):
    ex, host = make(tmp_path, en_route_spacing=0.0)
    run_mission(ex, host)
    assert ex.planner.n == 2 and ex.planner.n_en_route == 0 and ex.planner.model.n == 2


def test_an_en_route_reading_without_a_pose_near_its_stamp_is_refused_and_counted(tmp_path):
    ex, host = make(tmp_path, en_route_spacing=2.0, max_pose_age=0.5)
    start = np.array([1.0, 1.0])
    settle(ex, start, 0.0, make_pose=pose)
    goal = host.goals[-1]
    assert ex.state is State.DRIVING and np.linalg.norm(goal - start) > 5.0
    heading = (goal - start) / np.linalg.norm(goal - start)
    for k in range(1, 22):                      # 2 m at 1 m/s: an en-route reading is due by t = 2.1
        t = k / 10
        ex.on_pose(pose(t, start + heading * t), t)
        ex.tick(t)
    ex.on_reading(Reading(2.7, 7.0), 2.7)       # no pose between 2.1 and 3.3: none within 0.5 s of 2.7
    ex.tick(2.7)
    assert ex.planner.n_en_route == 0           # waiting for a pose newer than the reading
    ex.on_pose(pose(3.3, start + heading * 3.3), 3.3)
    ex.tick(3.3)
    assert ex.rejected['en-route reading: no pose within max_pose_age'] == 1
    assert ex.planner.n_en_route == 0 and ex.planner.journal_file.en_route == []
    # the next reading pairs (due again: the rover is still 2 m or more from the last stored reading)
    ex.on_reading(Reading(3.35, 8.0), 3.35)
    ex.on_pose(pose(3.4, start + heading * 3.4), 3.4)
    ex.tick(3.4)
    assert ex.planner.n_en_route == 1 and ex.planner.n == 0
    assert np.allclose(ex.planner.en_route_locations.mean[0].numpy(), start + heading * 3.4)


def test_malformed_poses_while_driving_never_reach_the_en_route_readings(tmp_path):
    ex, host = make(tmp_path, max_measurements=1)
    settle(ex, [1.0, 1.0], 0.0, make_pose=pose)
    assert ex.state is State.DRIVING
    assert not ex.on_pose(PoseEstimate(0.1, 'map', np.array([4.5, 1.0]), np.array([[np.nan, 0], [0, 1]])), 0.1)
    assert dict(ex.rejected) == {'pose: covariance contains NaN or inf': 1}
    # the rover drives on (valid estimates): the en-route reading is taken from those, never from the NaN one
    for k in range(1, 40):
        t = 0.1 + k / 10
        ex.on_pose(pose(t, [1.0 + t, 1.0]), t)
        if k % 10 == 0:
            ex.on_reading(Reading(t, 3.0), t)
        ex.tick(t)
    assert ex.planner.n_en_route >= 1
    assert all(np.isfinite(r['location']['covariance']).all() for r in ex.planner.journal_file.en_route)


def test_a_resumed_run_keeps_its_en_route_readings(tmp_path):
    ex, host = make(tmp_path)
    run_mission(ex, host)
    before = ex.planner
    before.model                                       # brought up to date when read
    again = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                    n_initial=5, journal=tmp_path / 'j.jsonl', execution_noise_prior_weight=5.0)
    assert again.n == before.n and again.n_en_route == before.n_en_route
    assert torch.equal(again.en_route_y, before.en_route_y)
    assert torch.allclose(again.en_route_locations.mean, before.en_route_locations.mean)
    assert again.execution_estimator.n == before.execution_estimator.n
    again.model                                       # the replayed readings go into the GP, in the same order
    assert again.model.n == before.model.n == before.n + before.n_en_route
    assert torch.equal(again.model.train_y, before.model.train_y)
    assert torch.equal(again.model.reading_noise, before.model.reading_noise)
    assert torch.allclose(again.model.train_locations.mean, before.model.train_locations.mean)
    assert torch.allclose(again.model.train_locations.covariance, before.model.train_locations.covariance)
    # the explorer on the resumed journal continues the budgets from the last record, en-route ones included
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 3})
    resumed = Explorer(again, RecordingHost(), params)
    last = max(before.journal_file.records, key=lambda r: r.get('distance_driven_m', -1))
    assert resumed.budget.distance == pytest.approx(last['distance_driven_m'])


def test_export_writes_the_en_route_readings_beside_the_measurements(tmp_path):
    import csv

    from uncertain_bo.journal.export_cli import export

    ex, host = make(tmp_path)
    run_mission(ex, host)
    summary = export(tmp_path / 'j.jsonl', tmp_path / 'obs.csv')
    assert summary['observations'] == 2 and summary['en_route_readings'] == ex.planner.n_en_route
    rows = list(csv.DictReader(open(summary['en_route_csv'])))
    assert len(rows) == ex.planner.n_en_route and 'target_0' not in rows[0]
    means = ex.planner.en_route_locations.mean
    assert [float(r['mean_0']) for r in rows] == pytest.approx(means[:, 0].tolist())
    assert [float(r['y']) for r in rows] == pytest.approx(ex.planner.en_route_y.tolist())

"""The simulated localiser revises the past (issue 32, item 2): with ``ekf.smooth_on_fix`` the EKF keeps a fixed lag
of steps and smooths them after a fix (:meth:`~uncertain_bo.sim.ekf.PlanarEKF.revised_past`), and the in-process
mission re-places the stored readings through the explorer (:mod:`uncertain_bo.sim.smoothing`): closer to where they
were really taken (the simulator's truth), journaled and replayed once on resume; off, nothing changes."""
import json

import numpy as np
import pytest

from uncertain_bo.explorer import planner_from_parameters
from uncertain_bo.parameters.specs import config_path
from uncertain_bo.sim.drift import initial_estimate
from uncertain_bo.sim.ekf import PlanarEKF
from uncertain_bo.sim.mission import Mission, mission_parameters
from uncertain_bo.sim.report import summarize

ODOM_COV = np.diag([1e-4, 1e-4, 1e-5])


def drive(filters, t0, t1, fix_every=None, rng=None):
    """Odometry at 10 Hz from t0 to t1 (s) into every filter, a fix every ``fix_every`` s; which steps were due."""
    due = []
    for k in range(int(round((t1 - t0) * 10))):
        t = t0 + (k + 1) * 0.1
        fix = fix_every is not None and abs(t / fix_every - round(t / fix_every)) < 1e-6
        z = rng.normal([100.0 + t, 100.0], 0.5)            # the filters start at (100, 100) heading east
        for f in filters:
            if fix:
                f.add_fix(t, z, np.eye(2) * 0.25)
            f.add_odometry(t, 1.0, 0.0, ODOM_COV)
        if filters[0].revised_past() is not None:
            due.append(round(t, 1))
    return due


def test_a_fixed_lag_window_is_the_full_smoother_s_tail_and_smooths_when_a_fix_ends_or_fixes_stop():
    rng = np.random.default_rng(0)
    lagged = PlanarEKF({'smooth_on_fix': True, 'smoothing_lag': 20.0, 'smoothing_min_gap': 5.0,
                        'odom_scale_error_std': 0.02})
    full = PlanarEKF({'odom_scale_error_std': 0.02})
    full.keep_history()
    assert drive([lagged, full], 0.0, 40.0, rng=rng) == []              # dead reckoning: nothing to revise
    assert drive([lagged, full], 40.0, 46.0, fix_every=1.0, rng=rng) == [41.0]     # the first fix after 41 s
    assert drive([lagged, full], 46.0, 60.0, rng=rng) == [51.0]         # fixes stopped 5 s after the last (46 s)
    assert drive([lagged, full], 60.0, 62.0, fix_every=1.0, rng=rng) == [61.0]
    w, f = lagged.smoothed(), full.smoothed()
    assert len(w.t) == 201 and w.t[0] == pytest.approx(42.0)            # 20 s at 10 Hz and the step at its start
    n = len(w.t)
    assert np.allclose(w.t, f.t[-n:]) and np.allclose(w.x, f.x[-n:]) and np.allclose(w.P, f.P[-n:])
    since = lagged.smoothed(since=55.05)                                 # from the step at or before 55.05 s
    assert since.t[0] == pytest.approx(55.0) and np.allclose(since.x, w.x[-len(since.t):])
    assert PlanarEKF().revised_past() is None and PlanarEKF()._history is None    # off: no history kept


def denied_mission(tmp_path, smooth, n=5, seed=3):
    """A short GNSS-denied mission (config/gnss_denied.yaml) on a 60 m field: fixes only within 6 m of five beacons,
    odometry with an 8 % scale error (a strong drift, so that short legs drift by metres)."""
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    beacons = [30.0, 30.0, 10.0, 10.0, 50.0, 50.0, 10.0, 50.0, 50.0, 10.0]
    over = {'sim_rover': {'seed': seed, 'field_extent': [0.0, 60.0, 0.0, 60.0], 'odom_scale_error_std': 0.08,
                          'fix_beacons': [v for x, y in zip(beacons[::2], beacons[1::2]) for v in (x, y, 6.0, 0.3)],
                          **start},
            'ekf': {'smooth_on_fix': smooth, 'odom_scale_error_std': 0.08, 'initial_yaw_std': 0.05, **start},
            'explorer': {'seed': seed, 'max_measurements': n, 'n_initial': n}}
    params = initial_estimate(mission_parameters(over, files=[config_path('gnss_denied.yaml')]), seed)
    mission = Mission(params, method='random', journal=tmp_path / 'journal.jsonl')
    return params, mission, mission.run(max_sim_time=600.0)


def test_smoothing_on_fixes_re_places_readings_nearer_the_truth_once_in_the_journal(tmp_path):
    params, mission, result = denied_mission(tmp_path, True)
    planner = mission.planner
    taken = np.array([m.pose.xy for m in result.measurements])
    now = planner.observations.locations.mean.numpy()
    err_taken = np.hypot(*(taken - result.true_positions).T)
    err_now = np.hypot(*(now - result.true_positions).T)
    assert planner.revisions_applied >= 3 and not planner.revisions_rejected
    assert err_now.mean() < 0.5 * err_taken.mean(), (err_taken, err_now)
    records = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    revisions = [r for r in records if r['type'] == 'revision']
    assert len(revisions) == planner.revisions_applied and {r['source'] for r in revisions} == {'ekf_smoother'}
    resumed = planner_from_parameters(params['explorer'], method='random', journal=tmp_path / 'journal.jsonl')
    assert resumed.n == planner.n == len(result.measurements) and resumed.revisions_applied == len(revisions)
    assert np.allclose(resumed.observations.locations.mean.numpy(), now, rtol=0, atol=1e-12)
    assert np.allclose(resumed.observations.locations.covariance.numpy(),
                       planner.observations.locations.covariance.numpy(), rtol=0, atol=1e-12)
    summary = summarize(tmp_path, mission.field, np.diag([0.75 ** 2] * 2))    # the report: before and after
    revised = {r['index'] for r in revisions if r['revises'] == 'observation'}
    assert summary['readings_revised'] == len({(r['revises'], r['index']) for r in revisions}) and revised
    for i, row in enumerate(summary['per_measurement']):
        assert np.allclose(row['location_mean'], now[i], rtol=0, atol=1e-9)
        assert ('location_mean_as_taken' in row) == (i in revised)
        assert np.allclose(row.get('location_mean_as_taken', now[i]), taken[i], rtol=0, atol=1e-9)


def test_without_smoothing_every_reading_keeps_its_filtered_location(tmp_path):
    _, mission, result = denied_mission(tmp_path, False)
    assert mission.ekf._history is None and mission.planner.revisions_applied == 0
    assert np.array_equal(mission.planner.observations.locations.mean.numpy(),
                          np.array([m.pose.xy for m in result.measurements]))
    assert 'revision' not in (tmp_path / 'journal.jsonl').read_text()

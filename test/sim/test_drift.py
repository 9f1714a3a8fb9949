"""Tests for uncertain_bo.sim.drift: the calibrated dead-reckoning drift sources in the simulated rover and its
localisers (error growth against the closed form, the published rates, a consistent EKF and particle filter)."""
import math
import re

import numpy as np
import pytest

from uncertain_bo.parameters.specs import config_path
from uncertain_bo.parameters.rcl_yaml import load_param_file
from uncertain_bo.sim.drift import CEP50_PER_SIGMA, DRIFT_SOURCES, drift_source, initial_estimate, straight_legs
from uncertain_bo.sim.ekf import PlanarEKF
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.particle_filter import ParticleFilter
from uncertain_bo.sim.world import SimWorld

FLAT = Field(np.zeros((2, 2)), (-1000, 1000, -1000, 1000))
SPEED = 1.5


def split(params):
    """A drift source's flat parameters -> (sim_rover, ekf) dicts."""
    sim = {k: v for k, v in params.items() if '.' not in k}
    ekf = {k.split('.', 1)[1]: v for k, v in params.items() if k.startswith('ekf.')}
    return sim, ekf


@pytest.mark.parametrize('name', sorted(DRIFT_SOURCES))
def test_drift_grows_as_the_closed_form_says(name):
    """Monte Carlo over seeds: the simulated rover's dead-reckoning error after 60 m and 120 m of straight driving
    has the along- and cross-track variances of the closed form, and the EKF reports them (consistent)."""
    src = drift_source(name)
    distances = [60.0, 120.0]
    sim_rate = 2.0                       # fewer steps (the closed form knows the step length)
    err, cov = straight_legs(src, 120, distances, sim_rate)
    along, cross = src.variances(np.array(distances), sim_rate=sim_rate, start_xy_var=1e-6)
    for i in range(len(distances)):
        emp_along, emp_cross = np.mean(err[:, i, 0] ** 2), np.mean(err[:, i, 1] ** 2)
        # 120 draws of a zero-mean Gaussian: the mean square has a relative standard error of 13 %
        assert emp_along == pytest.approx(along[i], rel=0.4), (name, distances[i], 'along')
        assert emp_cross == pytest.approx(cross[i], rel=0.4), (name, distances[i], 'cross')
        assert emp_along + emp_cross == pytest.approx(along[i] + cross[i], rel=0.3)
        # the EKF's reported covariance is the closed form (heading east: x along track, y across)
        assert np.mean(cov[:, i, 0, 0]) == pytest.approx(along[i], rel=0.1), (name, 'ekf along')
        assert np.mean(cov[:, i, 1, 1]) == pytest.approx(cross[i], rel=0.1), (name, 'ekf cross')
    # doubling the distance roughly quadruples the error variance: the drift grows with the distance driven
    growth = np.mean(np.sum(err[:, 1] ** 2, axis=1)) / np.mean(np.sum(err[:, 0] ** 2, axis=1))
    assert 2.5 < growth < 6.0, growth


@pytest.mark.parametrize('name', sorted(DRIFT_SOURCES))
def test_each_source_meets_its_published_rate(name):
    """At the source's reference distance the closed-form error's median radius (sampled, not from the CEP
    formula) is the published rate times the distance."""
    src = drift_source(name)
    along, cross = src.variances(src.reference_m)
    e = np.random.default_rng(0).standard_normal((200000, 2)) * np.sqrt([along, cross])
    assert np.median(np.hypot(e[:, 0], e[:, 1])) == pytest.approx(src.rate * src.reference_m, rel=0.01)
    assert CEP50_PER_SIGMA == pytest.approx(1.1774, abs=1e-4)
    with pytest.raises(ValueError, match='unknown drift source'):
        drift_source('lidar')


def test_a_filter_without_the_scale_state_is_caught_overconfident():
    """The consistency check can fail: the same drive with the EKF unaware of the odometry's scale error reports
    far less along-track variance than the error has (NEES well above 2)."""
    err, cov = straight_legs(drift_source('wheel'), 60, [120.0], 2.0, ekf={'odom_scale_error_std': 0.0})
    nees = [e @ np.linalg.solve(c, e) for e, c in zip(err[:, 0], cov[:, 0])]
    assert np.mean(nees) > 5.0
    err, cov = straight_legs(drift_source('wheel'), 60, [120.0], 2.0)
    nees = [e @ np.linalg.solve(c, e) for e, c in zip(err[:, 0], cov[:, 0])]
    assert 1.2 < np.mean(nees) < 3.0


def nees_through_beacons(seed, name='wheel'):
    """A curvy open-loop drive of 240 s through the wheel source's drift with fixes only within 10 m of three
    beacons; the EKF starts from a draw of its own covariance. Returns the NEES of the position every 30 s and the
    number of fixes."""
    sim, ekf = split(drift_source(name).parameters())
    rng = np.random.default_rng(1000 + seed)
    beacons = [0.0, 0.0, 10.0, 0.5, 120.0, 30.0, 10.0, 0.5, 60.0, 110.0, 10.0, 0.5]
    world = SimWorld(FLAT, {**sim, 'seed': seed, 'sim_rate': 2.0, 'reading_rate': 0.0, 'fix_rate': 1.0,
                            'fix_beacons': beacons, 'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
    f = PlanarEKF(initial_estimate({'sim_rover': world.params, 'ekf': {**PlanarEKF(ekf).params}}, seed)['ekf'])
    phase = rng.uniform(0, 2 * math.pi)
    out = []
    while world.t < 240.0 - 1e-9:
        s = world.step(SPEED, 0.12 * math.sin(0.05 * world.t + phase))
        if s.fix is not None:
            f.add_fix(s.t, s.fix.xy, s.fix.cov)
        f.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov, vy=s.odometry.vy)
        if s.step % 60 == 0:
            e = s.truth.pose[:2] - f.xy
            out.append(float(e @ np.linalg.solve(f.cov_xy, e)))
    return out, len(world.fix_events)


def test_ekf_is_consistent_through_drift_and_beacon_fixes():
    """NEES of the EKF's position over 60 runs with drift and fixes only at beacons: chi² with 2 dof (mean 2)."""
    runs = [nees_through_beacons(seed) for seed in range(60)]
    nees = np.array([r[0] for r in runs])                   # (runs, 8 times)
    assert sum(r[1] for r in runs) > 60                     # fixes did happen (at the beacons)
    # per time: 60 chi²(2) draws, the mean's standard error 0.26 (P(outside) < 1e-3 each)
    assert np.all((nees.mean(axis=0) > 1.2) & (nees.mean(axis=0) < 3.0)), nees.mean(axis=0)
    assert 1.6 < nees.mean() < 2.5, nees.mean()


def test_ekf_learns_the_scale_error_from_fixes_while_driving():
    """With fixes along a 400 m drive the EKF's scale-error estimate converges on the world's draw."""
    sim, ekf = split(drift_source('wheel').parameters())
    hits = 0
    for seed in range(12):
        world = SimWorld(FLAT, {**sim, 'seed': seed, 'sim_rate': 5.0, 'reading_rate': 0.0, 'fix_rate': 1.0,
                                'fix_std': 0.3, 'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
        f = PlanarEKF({**ekf, 'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
        while world.distance_travelled < 400.0:
            s = world.step(SPEED, 0.05)
            if s.fix is not None:
                f.add_fix(s.t, s.fix.xy, s.fix.cov)
            f.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov)
        true = world.odometry.scale_error
        assert math.sqrt(f.P[3, 3]) < 0.2 * drift_source('wheel').bias_stds()[0]      # learnt, not the prior
        hits += abs(f.scale_error - true) < 2.0 * math.sqrt(f.P[3, 3])
    assert hits >= 10, hits                                 # 2 std: 95 % of 12


def test_particle_filter_carries_the_scale_error_too():
    """Dead reckoning 120 m east: the particle cloud's along-track spread matches the EKF's (scale state)."""
    sim, ekf = split(drift_source('vo').parameters())
    world = SimWorld(FLAT, {**sim, 'seed': 3, 'sim_rate': 2.0, 'fix_rate': 0.0, 'reading_rate': 0.0,
                            'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0})
    common = {**ekf, 'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0, 'initial_xy_std': 1e-3}
    f = PlanarEKF(common)
    pf = ParticleFilter({**common, 'particles': 4000, 'seed': 1})
    no_scale = ParticleFilter({**common, 'odom_scale_error_std': 0.0, 'particles': 4000, 'seed': 1})
    while world.distance_travelled < 120.0:
        s = world.step(SPEED, 0.0)
        for loc in (f, pf, no_scale):
            loc.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov, vy=s.odometry.vy)
    assert pf.cov_xy[0, 0] == pytest.approx(f.cov_xy[0, 0], rel=0.15)
    assert pf.cov_xy[1, 1] == pytest.approx(f.cov_xy[1, 1], rel=0.15)
    assert no_scale.cov_xy[0, 0] < 0.1 * f.cov_xy[0, 0]


def test_initial_estimate_draws_the_start_from_the_localisers_covariance():
    params = {'sim_rover': {'initial_x': 10.0, 'initial_y': -5.0, 'initial_yaw': 3.1},
              'ekf': {'initial_xy_std': 2.0, 'initial_yaw_std': 0.1},
              'particle_filter': {'initial_xy_std': 2.0, 'initial_yaw_std': 0.1}}
    draws = np.array([[initial_estimate(params, s)['ekf'][k] for k in ('initial_x', 'initial_y', 'initial_yaw')]
                      for s in range(3000)])
    assert draws[:, :2].mean(axis=0) == pytest.approx([10.0, -5.0], abs=0.12)
    assert draws[:, :2].std(axis=0) == pytest.approx([2.0, 2.0], rel=0.05)
    dyaw = (draws[:, 2] - 3.1 + math.pi) % (2 * math.pi) - math.pi
    assert dyaw.std() == pytest.approx(0.1, rel=0.05) and np.all(np.abs(draws[:, 2]) <= math.pi)
    a, b = initial_estimate(params, 4), initial_estimate(params, 4)
    assert a == b and a['ekf'] == a['particle_filter'] != initial_estimate(params, 5)['ekf']
    assert params['ekf'] == {'initial_xy_std': 2.0, 'initial_yaw_std': 0.1}             # not modified


def test_shipped_gnss_denied_file_is_the_wheel_source():
    """config/gnss_denied.yaml states the 'wheel' drift source's parameters (what docs/gnss_denied.md says)."""
    path = config_path('gnss_denied.yaml')
    data = load_param_file(path)
    for name, value in drift_source('wheel').parameters().items():
        node, _, param = name.rpartition('.')
        assert data[node or 'sim_rover'][param] == pytest.approx(value), name
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):          # every parameter is commented (the line above, or its group's)
        if re.match(r'^ {4}[a-z_]+:', line):
            j = i - 1
            while re.match(r'^ {4}[a-z_]+:', lines[j]):
                j -= 1
            assert lines[j].strip().startswith('#'), f'gnss_denied.yaml:{i + 1} has no comment'
    from uncertain_bo.sim.mission import mission_parameters
    mission_parameters(files=[path])          # every value valid for its node


def test_a_fix_after_a_dead_reckoning_leg_revises_the_past_consistently():
    """The EKF's smoothed past (extended RTS): 100 m of dead reckoning, then fixes at a beacon at the leg's end. Over
    80 runs the smoothed pose 50 m back is closer to the truth than the filtered one was, its covariance is smaller
    and it is consistent (NEES mean 2); the last smoothed state is the current estimate."""
    sim, ekf = split(drift_source('wheel').parameters())
    err_f, err_s, nees_s, var_f, var_s = [], [], [], [], []
    for seed in range(80):
        world = SimWorld(FLAT, {**sim, 'seed': seed, 'sim_rate': 2.0, 'reading_rate': 0.0, 'fix_rate': 2.0,
                                'fix_beacons': [103.0, 0.0, 5.0, 0.3], 'initial_x': 0.0, 'initial_y': 0.0,
                                'initial_yaw': 0.0})
        f = PlanarEKF(initial_estimate({'sim_rover': world.params, 'ekf': {**PlanarEKF(ekf).params}}, seed)['ekf'])
        f.keep_history()
        truth, filtered = [world.true_pose[:2]], [(f.xy, f.cov_xy)]
        while world.distance_travelled < 106.0:
            s = world.step(SPEED, -2.0 * world.true_pose[2])
            if s.fix is not None:
                f.add_fix(s.t, s.fix.xy, s.fix.cov)
            f.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov)
            truth.append(s.truth.pose[:2])
            filtered.append((f.xy, f.cov_xy))
        sm = f.smoothed()
        assert len(sm.t) == len(truth) and np.allclose(sm.x[-1, :2], f.xy) and np.allclose(sm.P[-1, :2, :2], f.cov_xy)
        k = int(np.argmin(np.abs(np.array(truth)[:, 0] - 50.0)))      # 50 m into the leg, no fix yet there
        e_s = truth[k] - sm.x[k, :2]
        err_f.append(np.sum((truth[k] - filtered[k][0]) ** 2))
        err_s.append(np.sum(e_s ** 2))
        nees_s.append(e_s @ np.linalg.solve(sm.P[k, :2, :2], e_s))
        var_f.append(np.trace(filtered[k][1]))
        var_s.append(np.trace(sm.P[k, :2, :2]))
    assert np.mean(err_s) < 0.2 * np.mean(err_f)          # measured: 0.20 against 3.3 m²
    assert np.mean(var_s) < 0.2 * np.mean(var_f)          # measured: 0.21 against 2.9 m²
    assert 1.4 < np.mean(nees_s) < 2.8, np.mean(nees_s)
    with pytest.raises(RuntimeError, match='keep_history'):
        PlanarEKF().smoothed()

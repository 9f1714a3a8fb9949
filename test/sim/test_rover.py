"""Tests for uncertain_bo.sim.rover: kinematics, limits, slip statistics, odometry and fix models."""
import math

import numpy as np
import pytest

from uncertain_bo.parameters.specs import ParameterError
from uncertain_bo.sim.rover import (FIX_PARAMS, ODOMETRY_PARAMS, ROVER_PARAMS, DiffDriveRover,
                                    PositionFix, WheelOdometry, integrate_pose, wrap_angle)

NO_SLIP = {'wheel_slip_std': 0.0, 'lateral_slip_std': 0.0}


def test_straight_line_with_acceleration_ramp():
    r = DiffDriveRover(NO_SLIP, pose=(1.0, 2.0, 0.0))
    rng = np.random.default_rng(0)
    dt = 0.05
    for _ in range(200):
        s = r.step(0.5, 0.0, dt, rng)
    # speed ramps by max_linear_accel*dt = 0.05 m/s per step up to 0.5: sum of speeds * dt
    expected = dt * (sum(0.05 * k for k in range(1, 11)) + 0.5 * 190)
    assert s.pose[0] - 1.0 == pytest.approx(expected, abs=1e-9)
    assert s.pose[1] == pytest.approx(2.0, abs=1e-12) and s.pose[2] == pytest.approx(0.0, abs=1e-12)


def test_circle_radius_is_v_over_w():
    r = DiffDriveRover(NO_SLIP)
    rng = np.random.default_rng(0)
    pts = []
    for k in range(800):
        s = r.step(0.6, 0.4, 0.05, rng)
        if k > 100:
            pts.append(s.pose[:2])
    pts = np.array(pts)
    # fit the centre as the mean of a whole number of laps is awkward; use the algebraic circle fit
    A = np.column_stack([2 * pts, np.ones(len(pts))])
    b = (pts ** 2).sum(axis=1)
    cx, cy, c = np.linalg.lstsq(A, b, rcond=None)[0]
    radius = math.sqrt(c + cx ** 2 + cy ** 2)
    assert radius == pytest.approx(0.6 / 0.4, rel=1e-6)


def test_velocity_and_acceleration_limits():
    r = DiffDriveRover({**NO_SLIP, 'max_linear_vel': 0.7, 'max_angular_vel': 0.5})
    rng = np.random.default_rng(0)
    s = r.step(10.0, 10.0, 0.05, rng)
    assert s.wheel_v == pytest.approx(0.05) and s.wheel_w == pytest.approx(0.1)   # accel limits
    for _ in range(100):
        s = r.step(10.0, -10.0, 0.05, rng)
    assert s.wheel_v == pytest.approx(0.7) and s.wheel_w == pytest.approx(-0.5)
    with pytest.raises(ValueError, match='dt'):
        r.step(0.1, 0.0, 0.0, rng)
    with pytest.raises(ValueError, match='finite'):
        r.step(np.nan, 0.0, 0.1, rng)


def test_wheel_slip_statistics_match_closed_form():
    # per wheel, ground speed = rim speed (1 + eps), eps ~ N(0, s²):
    # v = (l(1+el) + r(1+er))/2 and w = (r(1+er) - l(1+el))/L
    s, L, v, w = 0.1, 0.6, 0.8, 0.5
    params = {'wheel_slip_std': s, 'lateral_slip_std': 0.0, 'wheel_separation': L,
              'max_linear_accel': 100.0, 'max_angular_accel': 100.0}
    rng = np.random.default_rng(5)
    vs, ws = [], []
    r = DiffDriveRover(params)
    for _ in range(20000):
        r.v, r.w = v, w          # already at the commanded speed: no acceleration limit involved
        st = r.step(v, w, 0.05, rng)
        vs.append(st.v)
        ws.append(st.w)
    left, right = v - w * L / 2, v + w * L / 2
    assert np.mean(vs) == pytest.approx(v, abs=0.003)
    assert np.var(vs) == pytest.approx(s ** 2 * (left ** 2 + right ** 2) / 4, rel=0.05)
    assert np.var(ws) == pytest.approx(s ** 2 * (left ** 2 + right ** 2) / L ** 2, rel=0.05)
    assert np.cov(vs, ws)[0, 1] == pytest.approx(s ** 2 * (right ** 2 - left ** 2) / (2 * L), rel=0.1)
    # the odometry model reports exactly this (plus encoder noise, zero here)
    od = WheelOdometry({**params, 'odom_linear_vel_std': 0.0, 'odom_angular_vel_std': 0.0})
    c = od.velocity_covariance(st)
    assert c[0, 0] == pytest.approx(np.var(vs), rel=0.05)
    assert c[2, 2] == pytest.approx(np.var(ws), rel=0.05)
    assert c[0, 2] == pytest.approx(np.cov(vs, ws)[0, 1], rel=0.1)


def test_lateral_slip_moves_sideways():
    r = DiffDriveRover({'wheel_slip_std': 0.0, 'lateral_slip_std': 0.2}, pose=(0, 0, math.pi / 2))
    rng = np.random.default_rng(1)
    xs = [r.step(0.0, 0.0, 0.05, rng).pose[0] for _ in range(4000)]
    # heading north: body-left is -x; the x increments are N(0, (0.2*0.05)²) -> random walk
    inc = np.diff(np.concatenate([[0.0], xs]))
    assert np.std(inc) == pytest.approx(0.2 * 0.05, rel=0.05)


def test_odometry_measures_wheels_not_ground_and_noise_std():
    params = {'wheel_slip_std': 0.2, 'odom_linear_vel_std': 0.03, 'odom_angular_vel_std': 0.01}
    r = DiffDriveRover(params)
    od = WheelOdometry(params)
    rng = np.random.default_rng(2)
    st = None
    for _ in range(50):
        st = r.step(0.5, 0.2, 0.05, rng)
    meas = np.array([od.measure(st, rng) for _ in range(20000)])
    assert meas[:, 0].mean() == pytest.approx(st.wheel_v, abs=0.002)   # the slipping ground speed is not seen
    assert meas[:, 0].std() == pytest.approx(0.03, rel=0.05)
    assert meas[:, 1].std() == pytest.approx(0.01, rel=0.05)
    tc = od.twist_covariance(st)
    assert tc.shape == (6, 6) and np.allclose(tc, tc.T)
    assert np.all(np.linalg.eigvalsh(tc) > 0)
    assert tc[0, 0] == pytest.approx(od.velocity_covariance(st)[0, 0])
    assert tc[5, 5] == pytest.approx(od.velocity_covariance(st)[2, 2])
    assert tc[0, 5] == pytest.approx(od.velocity_covariance(st)[0, 2])


def test_position_fix_noise_and_outliers():
    fx = PositionFix({'fix_std': 1.5})
    rng = np.random.default_rng(3)
    z = np.array([fx.measure(np.array([10.0, -4.0]), rng) for _ in range(20000)])
    assert z.mean(axis=0) == pytest.approx([10.0, -4.0], abs=0.05)
    assert z.std(axis=0) == pytest.approx([1.5, 1.5], rel=0.03)
    assert np.allclose(fx.covariance, 2.25 * np.eye(2))
    fo = PositionFix({'fix_std': 0.1, 'fix_outlier_prob': 0.2, 'fix_outlier_std': 50.0})
    z = np.array([fo.measure(np.zeros(2), rng) for _ in range(5000)])
    frac_far = np.mean(np.hypot(z[:, 0], z[:, 1]) > 1.0)
    assert frac_far == pytest.approx(0.2, abs=0.02)


def test_parameters_validated_with_units_in_descriptions():
    with pytest.raises(ParameterError, match="wheel_slip_std"):
        DiffDriveRover({'wheel_slip_std': -0.1})
    with pytest.raises(ParameterError, match='fix_std'):
        PositionFix({'fix_std': 0.0})
    for spec in ROVER_PARAMS + ODOMETRY_PARAMS + FIX_PARAMS:
        assert '(' in spec.description, f'{spec.name}: description should give a unit in parentheses'
        assert spec.range is not None or spec.choices is not None


def test_live_parameter_dict_is_read_at_each_step():
    params = {p.name: p.default for p in ROVER_PARAMS}
    params.update(NO_SLIP, max_linear_vel=1.0)
    r = DiffDriveRover(params)
    rng = np.random.default_rng(0)
    for _ in range(40):
        r.step(5.0, 0.0, 0.05, rng)
    assert r.v == pytest.approx(1.0)
    params['max_linear_vel'] = 0.3
    assert r.step(5.0, 0.0, 0.05, rng).wheel_v == pytest.approx(0.95)   # decelerating at 1 m/s²
    for _ in range(20):
        s = r.step(5.0, 0.0, 0.05, rng)
    assert s.wheel_v == pytest.approx(0.3)


def test_integrate_pose_matches_fine_euler_and_wrap():
    pose = np.array([1.0, -2.0, 3.0])
    exact = integrate_pose(pose, 0.7, 0.1, 0.9, 2.0)
    p = pose.copy()
    n = 200000
    h = 2.0 / n
    for _ in range(1):
        th = p[2] + 0.9 * h * np.arange(n)
        p[0] += h * np.sum(0.7 * np.cos(th) - 0.1 * np.sin(th))
        p[1] += h * np.sum(0.7 * np.sin(th) + 0.1 * np.cos(th))
    assert exact[:2] == pytest.approx(p[:2], abs=1e-4)
    assert exact[2] == pytest.approx(wrap_angle(3.0 + 1.8))
    assert -math.pi <= exact[2] < math.pi


def test_fixes_only_within_a_fix_sources_radius():
    fx = PositionFix({'fix_std': 2.0, 'fix_beacons': [0.0, 0.0, 10.0, 0.5, 15.0, 0.0, 8.0, 0.2],
                      'degraded_zone': [-100.0, 100.0, -100.0, 100.0], 'degraded_fix_dropout': 1.0})
    assert fx.beacons.shape == (2, 4)
    assert fx.available_at(np.array([9.9, 0.0])) and fx.available_at(np.array([22.9, 0.0]))
    assert not fx.available_at(np.array([0.0, 10.1])) and not fx.available_at(np.array([23.1, 0.0]))
    assert fx.std_at(np.array([3.0, 0.0])) == 0.5
    assert fx.std_at(np.array([8.0, 0.0])) == 0.2                 # both cover it: the more precise one
    assert fx.dropout_at(np.array([3.0, 0.0])) == 0.0             # with sources the zone does not apply
    assert np.allclose(fx.covariance_at(np.array([16.0, 1.0])), 0.04 * np.eye(2))
    rng = np.random.default_rng(4)
    z = np.array([fx.measure(np.array([15.0, 0.0]), rng) for _ in range(5000)])
    assert z.std(axis=0) == pytest.approx([0.2, 0.2], rel=0.05)
    # no sources (all zeros): fixes everywhere, as before
    plain = PositionFix({'fix_std': 2.0})
    assert plain.available_at(np.array([1e5, -1e5])) and plain.beacons.shape == (0, 4)


@pytest.mark.parametrize('beacons, message', [
    ([0.0, 0.0, 5.0], 'multiple of 4'),
    ([0.0, 0.0, -5.0, 1.0], 'radius'),
    ([0.0, 0.0, 5.0, 0.0], 'std > 0'),
])
def test_malformed_fix_sources_are_refused(beacons, message):
    with pytest.raises(ParameterError, match=message):
        PositionFix({'fix_beacons': beacons})


def test_odometry_sources_see_what_they_measure():
    params = {'wheel_slip_std': 0.2, 'lateral_slip_std': 0.1, 'odom_linear_vel_std': 0.0,
              'odom_angular_vel_std': 0.0}
    r = DiffDriveRover(params)
    rng = np.random.default_rng(2)
    st = None
    for _ in range(50):
        st = r.step(0.5, 0.2, 0.05, rng)
    wheel = WheelOdometry(params).measure_twist(st, rng)
    gyro = WheelOdometry({**params, 'odometry_source': 'wheel_gyro'}).measure_twist(st, rng)
    ground = WheelOdometry({**params, 'odometry_source': 'ground_velocity'}).measure_twist(st, rng)
    assert wheel == pytest.approx((st.wheel_v, 0.0, st.wheel_w))
    assert gyro == pytest.approx((st.wheel_v, 0.0, st.w))         # the gyro sees the slipping yaw rate
    assert ground == pytest.approx((st.v, st.vy, st.w))            # a ground sensor sees all the motion
    od = WheelOdometry({**params, 'odometry_source': 'ground_velocity'})
    od.scale_error = 0.25
    assert od.measure_twist(st, rng)[:2] == pytest.approx((st.v / 1.25, st.vy / 1.25))
    # the covariance reports what the source misses: the slip for the wheels, nothing for a ground sensor
    g = WheelOdometry({**params, 'odometry_source': 'ground_velocity'}).velocity_covariance(st)
    assert np.allclose(g, 0.0)
    c = WheelOdometry({**params, 'odometry_source': 'wheel_gyro'}).velocity_covariance(st)
    w = WheelOdometry(params).velocity_covariance(st)
    assert c[0, 0] == w[0, 0] > 0 and c[2, 2] == 0.0 < w[2, 2] and c[0, 2] == 0.0 != w[0, 2]

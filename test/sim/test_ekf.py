"""Tests for uncertain_bo.sim.ekf.PlanarEKF: consistency with the simulated rover, bounded/unbounded
covariance, outlier gate, time stamps, ROS covariance layout."""
import math

import numpy as np
import pytest

from uncertain_bo.sim.ekf import PlanarEKF
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.rover import DiffDriveRover, WheelOdometry, wrap_angle
from uncertain_bo.sim.world import SimWorld

FLAT = Field(np.zeros((2, 2)), (0, 200, 0, 200))
P0 = np.diag([1.0, 1.0, 0.01])


def run_filter(seed, duration=15.0, sim_rate=5.0, fix_cov_scale=1.0, world=None, ekf_params=None):
    """Drive a curvy open-loop course; the EKF starts from a draw of its own initial distribution.

    Returns (true pose, ekf) at the end."""
    rng = np.random.default_rng(seed)
    w = SimWorld(FLAT, {'seed': seed, 'sim_rate': sim_rate, 'reading_rate': 0.0, **(world or {})})
    ekf = PlanarEKF(ekf_params, x0=w.true_pose + rng.multivariate_normal(np.zeros(3), P0), P0=P0)
    phase, amp = rng.uniform(0, 2 * np.pi), rng.uniform(0.2, 0.8)
    while w.t < duration - 1e-9:
        s = w.step(0.8, amp * math.sin(0.4 * w.t + phase))
        if s.fix is not None:
            ekf.add_fix(s.t, s.fix.xy, fix_cov_scale * s.fix.cov)
        ekf.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov)
    return s.truth.pose, ekf


def nees_xy(truth, ekf):
    e = truth[:2] - ekf.xy
    return float(e @ np.linalg.solve(ekf.cov_xy, e))


def consistency(n_runs=150, **kw):
    """NEES of the position at the end of independent runs: for a consistent filter it is chi² with 2 dof
    (mean 2, P(NEES <= 4) = 1 - e^-2 = 0.865)."""
    nees = np.array([nees_xy(*run_filter(seed, **kw)) for seed in range(n_runs)])
    return nees.mean(), np.mean(nees <= 4.0)


def test_position_error_consistent_with_covariance():
    mean, inside = consistency()
    # 150 independent chi²(2) draws: the mean has standard error 0.16, the fraction 0.028
    assert 1.5 < mean < 2.6, mean
    assert 0.78 < inside < 0.95, inside


def test_consistency_check_detects_an_overconfident_filter():
    # the same check must fail for a filter told that fixes are 4x more precise than they are
    mean, inside = consistency(n_runs=60, fix_cov_scale=1.0 / 16.0)
    assert mean > 5.0 and inside < 0.7


def test_prediction_covariance_matches_monte_carlo():
    # dead reckoning only: EKF covariance after 10 s vs the spread of 400 simulated rovers given the same
    # (noise-free) odometry; slip is the only error
    params = {'wheel_slip_std': 0.08, 'lateral_slip_std': 0.03, 'odom_linear_vel_std': 0.0,
              'odom_angular_vel_std': 0.0}
    dt, n = 0.1, 100
    cmds = [(0.8, 0.5 * math.sin(0.3 * k)) for k in range(n)]
    ekf = PlanarEKF({'min_linear_vel_std': 0.0, 'min_angular_vel_std': 0.0}, x0=(0, 0, 0),
                    P0=np.diag([1e-8, 1e-8, 1e-8]))
    rng = np.random.default_rng(0)
    ends = []
    for i in range(400):
        r = DiffDriveRover(params)
        od = WheelOdometry(params)
        for k, (v, w) in enumerate(cmds):
            st = r.step(v, w, dt, rng)
            if i == 0:
                ekf.add_odometry((k + 1) * dt, *od.measure(st, rng), od.velocity_covariance(st))
        ends.append(st.pose)
    err = np.array(ends) - ekf.pose
    err[:, 2] = wrap_angle(err[:, 2])
    emp = np.cov(err.T)
    for i, j in [(0, 0), (1, 1), (2, 2), (0, 1), (1, 2)]:
        tol = 0.2 * math.sqrt(emp[i, i] * emp[j, j])        # ~3 standard errors of a 400-sample estimate
        assert ekf.P[i, j] == pytest.approx(emp[i, j], abs=tol), (i, j)
    assert np.abs(err.mean(axis=0)[:2]).max() < 0.1        # no bias beyond sampling error


def test_covariance_bounded_with_fixes_and_growing_without():
    _, with_fix = run_filter(1, duration=200.0, sim_rate=5.0)
    trace_with = np.trace(with_fix.cov_xy)
    assert trace_with < 2 * 2.0 ** 2                        # below twice one fix's variance (fix_std 2 m)
    traces = []
    w = SimWorld(FLAT, {'fix_rate': 0.0, 'sim_rate': 5.0})
    ekf = PlanarEKF(x0=w.true_pose, P0=P0)
    for k in range(1000):
        s = w.step(0.8, 0.3)
        ekf.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov)
        if k % 100 == 99:
            traces.append(np.trace(ekf.cov_xy))
    assert np.all(np.diff(traces) > 0) and traces[-1] > 2 * traces[0]


def test_outlier_gate_and_its_override():
    ekf = PlanarEKF({'fix_gate_mahalanobis': 4.0, 'fix_gate_max_rejections': 3}, x0=(0, 0, 0),
                    P0=np.diag([1.0, 1.0, 0.01]))
    R = 4.0 * np.eye(2)
    assert ekf.update_fix([1.0, -1.0], R) is True
    far = [60.0, 0.0]
    assert [ekf.update_fix(far, R) for _ in range(3)] == [False, False, False]
    assert np.hypot(*ekf.xy) < 2.0
    assert ekf.update_fix(far, R) is True                   # 3 rejections in a row: assume we are lost
    assert ekf.n_fixes_rejected == 3 and ekf.n_fixes_accepted == 2
    off = PlanarEKF({'fix_gate_mahalanobis': 0.0}, x0=(0, 0, 0))
    assert off.update_fix(far, R) is True


def test_fix_order_does_not_matter_and_is_fused_at_its_stamp():
    def make():
        return PlanarEKF(x0=(0, 0, 0.3), P0=P0)

    a, b, c = make(), make(), make()
    a.add_fix(0.1, [0.5, 0.2], np.eye(2))                   # arrives before the odometry that reaches it
    a.add_odometry(0.1, 1.0, 0.2, np.diag([0.01, 0.0, 0.01]))
    b.add_odometry(0.1, 1.0, 0.2, np.diag([0.01, 0.0, 0.01]))
    b.add_fix(0.1, [0.5, 0.2], np.eye(2))                   # arrives after
    assert np.allclose(a.x, b.x) and np.allclose(a.P, b.P)
    # a fix inside the odometry interval is fused at its own time: same as splitting the interval
    c.add_fix(0.05, [0.5, 0.2], np.eye(2))
    c.add_odometry(0.1, 1.0, 0.2, np.diag([0.01, 0.0, 0.01]))
    d = make()
    d.add_odometry(0.05, 1.0, 0.2, np.diag([0.01, 0.0, 0.01]))
    d.add_fix(0.05, [0.5, 0.2], np.eye(2))
    d.add_odometry(0.1, 1.0, 0.2, np.diag([0.01, 0.0, 0.01]))
    assert np.allclose(c.x, d.x) and np.allclose(c.P, d.P)
    assert c.t == pytest.approx(0.1)


def test_yaw_wrapped_and_pose_covariance_layout():
    ekf = PlanarEKF(x0=(0, 0, 3.0), P0=P0)
    for k in range(200):
        ekf.add_odometry(0.1 * (k + 1), 0.0, 1.0, np.diag([1e-4, 0.0, 1e-4]))
        assert -math.pi <= ekf.x[2, 0] < math.pi
    c = ekf.pose_covariance_6x6()
    assert c.shape == (6, 6) and np.all(np.isfinite(c)) and np.allclose(c, c.T)
    assert np.all(np.linalg.eigvalsh(c) > 0)
    assert c[2, 2] == c[3, 3] == c[4, 4] == 1e6             # unobserved z, roll, pitch: large, finite
    assert c[0, 0] == pytest.approx(ekf.P[0, 0]) and c[5, 5] == pytest.approx(ekf.P[2, 2])
    assert c[0, 5] == pytest.approx(ekf.P[0, 2]) and c[1, 5] == pytest.approx(ekf.P[1, 2])
    flat = c.reshape(36)                                    # row-major: index 6*row + col
    assert flat[1] == pytest.approx(ekf.P[0, 1]) and flat[35] == pytest.approx(ekf.P[2, 2])


def test_input_errors():
    ekf = PlanarEKF()
    with pytest.raises(ValueError, match='dt'):
        ekf.predict_odometry(1.0, 0.0, -0.1)
    with pytest.raises(ValueError, match='finite'):
        ekf.predict_odometry(np.nan, 0.0, 0.1)
    with pytest.raises(ValueError, match='finite'):
        ekf.update_fix([np.inf, 0.0], np.eye(2))

"""Tests for uncertain_bo.sim.particle_filter.ParticleFilter.

Oracles: the simulated rover's ground truth (a known trajectory), the chi-square distribution of the
normalised estimation error squared (NEES) of a consistent 2-D estimate, and — on a linear-Gaussian
case (known heading, straight drive, linear fixes), where the Kalman filter is the exact posterior — the
EKF's mean and covariance.
"""
import math

import numpy as np
import pytest

from uncertain_bo.parameters.specs import ParameterError
from uncertain_bo.sim.ekf import PlanarEKF
from uncertain_bo.sim.particle_filter import PF_PARAMS, ParticleFilter, effective_sample_size
from uncertain_bo.sim.world import SimWorld


def drive(world, filters, steps, command):
    """Step ``world`` with ``command(k) -> (v, w)``, feeding every filter; returns per-fix records
    ``(truth xy, [(mean, cov) per filter])``."""
    s = world.initial_step()
    for f in filters:
        f.t = s.t
    out = []
    for k in range(steps):
        for f in filters:
            if s.fix is not None:
                f.add_fix(s.t, s.fix.xy, s.fix.cov)
            f.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov)
        if s.fix is not None:
            out.append((s.truth.pose[:2].copy(), [(f.xy.copy(), f.cov_xy.copy()) for f in filters]))
        s = world.step(*command(k))
    return out


def test_tracks_a_known_trajectory_with_consistent_covariance():
    world = SimWorld(params={'seed': 5})
    pf = ParticleFilter({'seed': 5, 'particles': 400})
    ekf = PlanarEKF()
    recs = drive(world, [pf, ekf], 3000, lambda k: (1.2, 0.25 * math.sin(k / 80.0)))   # 300 s of wavy driving
    truth = np.array([r[0] for r in recs])
    pf_err = truth - np.array([r[1][0][0] for r in recs])
    ekf_err = truth - np.array([r[1][1][0] for r in recs])
    rms_pf, rms_ekf = np.sqrt((pf_err ** 2).sum(1).mean()), np.sqrt((ekf_err ** 2).sum(1).mean())
    fix_std = world.params['fix_std']
    # bounded error: well below one fix's error (sqrt(2) * 2 m RMS over two axes) and close to the EKF's
    assert rms_pf < 0.6 * math.sqrt(2) * fix_std
    assert rms_pf < 1.3 * rms_ekf
    # consistent covariance: mean NEES of a 2-D estimate is 2 (chi-square, 2 dof); it is autocorrelated over
    # 300 fixes, so allow a wide band that still catches a covariance off by a factor 2 either way
    covs = [r[1][0][1] for r in recs[20:]]
    nees = [e @ np.linalg.solve(c, e) for e, c in zip(pf_err[20:], covs)]
    assert 1.0 < np.mean(nees) < 4.0
    # the covariance reflects the fix noise: posterior std between the odometry-only floor and a fix's std
    sd = np.sqrt(np.mean([np.trace(c) / 2 for c in covs]))
    assert 0.2 < sd < fix_std
    assert pf.n_resamples > 0 and pf.n_fixes_accepted > 250


def test_matches_the_kalman_filter_on_a_linear_gaussian_case():
    # heading known exactly (tiny initial std, no yaw-rate noise), straight drive: position is linear in
    # the velocity errors and the fixes are linear, so the EKF (without its second-order correction) is the
    # exact posterior; the particle filter must agree up to Monte Carlo error
    common = {'initial_yaw_std': 1e-4, 'min_angular_vel_std': 0.0, 'min_linear_vel_std': 0.05,
              'initial_xy_std': 1.5, 'fix_gate_mahalanobis': 0.0}
    pf = ParticleFilter({**common, 'particles': 4000, 'seed': 1})
    ekf = PlanarEKF({**common, 'second_order_mean': False})
    rng = np.random.default_rng(0)
    vel_cov = np.diag([0.1 ** 2, 0.0, 0.0])
    R = np.diag([2.0 ** 2, 1.0 ** 2])
    for k in range(1, 201):
        for f in (pf, ekf):
            f.add_odometry(k * 0.1, 1.0, 0.0, vel_cov)
        if k % 10 == 0:
            z = np.array([100.0 + 0.1 * k, 100.0]) + rng.normal(0.0, [2.0, 1.0])
            for f in (pf, ekf):
                assert f.add_fix(k * 0.1, z, R)
    cov = ekf.cov_xy
    sd = np.sqrt(np.diag(cov))
    # mean: within 4 Monte Carlo standard errors (the effective sample size is >= N/2 after resampling)
    assert np.all(np.abs(pf.xy - ekf.xy) < 4 * sd / math.sqrt(pf.effective_sample_size))
    assert np.allclose(pf.cov_xy, cov, rtol=0.15, atol=0.02 * sd.max() ** 2)
    assert abs(pf.yaw) < 1e-3


def test_weights_stay_normalised_through_updates_and_resampling():
    pf = ParticleFilter({'particles': 300, 'resample_threshold': 0.9, 'fix_gate_mahalanobis': 0.0})
    rng = np.random.default_rng(1)
    for k in range(1, 60):
        pf.add_odometry(k * 0.1, 0.5, 0.1, np.diag([0.01, 0.0, 0.01]))
        if k % 5 == 0:
            pf.add_fix(k * 0.1, pf.xy + rng.normal(0, 0.5, 2), np.eye(2) * 0.25)
        w = pf.weights
        assert w.shape == (300,) and np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
        assert 1.0 <= pf.effective_sample_size <= 300 + 1e-9
    assert pf.n_resamples > 0
    # right after a resample the weights are uniform
    pf.resample()
    assert np.all(pf.weights == 1.0 / 300) and pf.effective_sample_size == pytest.approx(300)
    assert effective_sample_size(np.array([1.0, 0.0, 0.0])) == 1.0


def test_resampling_is_seeded_and_leaves_the_global_random_state_alone():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    clouds = []
    for _ in range(2):
        pf = ParticleFilter({'particles': 200, 'seed': 7, 'resample_threshold': 1.0})
        pf.add_odometry(0.5, 1.0, 0.2, np.diag([0.04, 0.0, 0.01]))
        pf.add_fix(0.5, [100.3, 100.1], np.eye(2))
        clouds.append(pf.particles)
        assert pf.n_resamples == 1
    assert np.array_equal(clouds[0], clouds[1])
    assert np.array_equal(np.random.get_state()[1], before)
    # a resample whose cumulative weights end just below 1 (filterpy's round-off overrun) does not fail
    pf._w = np.full(200, 1.0 / 200) * (1 - 1e-15)
    pf.resample()


def test_outlier_gate_and_recovery_when_lost():
    pf = ParticleFilter({'particles': 300, 'fix_gate_max_rejections': 3, 'initial_xy_std': 0.5})
    far = np.array([150.0, 100.0])
    results = [pf.update_fix(far, np.eye(2)) for _ in range(4)]
    assert results == [False, False, False, True]            # 3 rejected, then accepted as "lost"
    assert pf.n_reinitialisations == 1
    assert np.linalg.norm(pf.xy - far) < 0.5 and np.trace(pf.cov_xy) < 4.0
    with pytest.raises(ValueError, match='finite'):
        pf.update_fix([np.nan, 0.0], np.eye(2))
    with pytest.raises(ValueError, match='dt'):
        pf.predict_odometry(1.0, 0.0, -1.0)


def test_pending_fix_waits_for_odometry_and_gap_inflation():
    pf = ParticleFilter({'particles': 200})
    assert pf.add_fix(0.55, [100.5, 100.0], np.eye(2)) is None      # newer than the filter: held
    assert pf.add_odometry(1.0, 1.0, 0.0) == [True]                  # fused at 0.55 on the way to 1.0
    assert pf.t == pytest.approx(1.0)
    before = np.trace(pf.cov_xy)
    pf.inflate(4.0, 0.1)
    assert np.trace(pf.cov_xy) > before + 6.0
    c6 = pf.pose_covariance_6x6()
    assert c6.shape == (6, 6) and c6[2, 2] == pf.params['unobserved_variance'] and c6[5, 5] > 0


def test_parameters_are_validated():
    assert {p.name for p in PF_PARAMS} >= {'particles', 'resample_threshold', 'seed', 'initial_x', 'min_fix_std'}
    with pytest.raises(ParameterError, match='particles'):
        ParticleFilter({'particles': 1})
    with pytest.raises(ParameterError, match='resample_threshold'):
        ParticleFilter({'resample_threshold': 1.5})

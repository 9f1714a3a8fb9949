"""The pose plausibility gate (uncertain_bo.explorer.pose_gate): one glitch pose must not teleport the rover.

Issue 20: a pose at (1e6, 1e6) arriving while driving was stored as an en-route reading there and the distance
driven jumped from 38 m to 2,828,444 m, with no rejection; with max_distance set the glitch ended the mission.
"""
import logging

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State, planner_from_parameters
from uncertain_bo.explorer.pose_gate import (BURST, FALSE_REJECTION, REANCHOR_POSES, REANCHOR_SECONDS, PoseGate,
                                             jump_mahalanobis2)
from uncertain_bo.operator_view import StatusReporter
from uncertain_bo.parameters import validate
from uncertain_bo.planner import Planner

from recording_host import RecordingHost

SPEED = 1.0     # m/s, the simulated rover's speed below (max_speed is the default, 5 m/s)
DT = 0.1        # s between poses


def make(**overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
                                        'dwell_time': 0.5, 'goal_timeout': 300.0, 'reading_timeout': 2.0,
                                        'en_route_spacing': 1.0, **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5)
    host = RecordingHost()
    return Explorer(planner, host, params), host


def pose(t, xy, var=0.04):
    return PoseEstimate(t, 'map', np.asarray(xy, float), np.eye(2) * var)


def drive(ex, host, glitch=None, steps=1000):
    """Drive at SPEED towards the current goal with poses and readings every DT; optionally hand in one ``glitch``
    pose (an offset from the true position, m; or a callable of the true position) half a step after a pose in
    the middle of the second leg, together with a reading of the same stamp, then tick before the next pose (so
    the glitch is the newest pose and the reading's nearest one). Returns the true path."""
    xy = np.array([25.0, 25.0])
    path = []
    for k in range(steps):
        t = round(k * DT, 6)
        if ex.state is State.DRIVING:
            d = host.goals[-1] - xy
            n = np.linalg.norm(d)
            xy = xy + (d / n * min(n, SPEED * DT) if n > 0 else 0.0)
        path.append(xy.copy())
        ex.on_pose(pose(t, xy), now=t)
        ex.on_reading(Reading(t, float(xy.sum())), now=t)
        ex.tick(t)
        if (glitch is not None and ex.state is State.DRIVING and ex.planner.n == 1
                and min(np.linalg.norm(xy - host.goals[-1]), np.linalg.norm(xy - host.goals[-2])) > 3.0):
            g, glitch = glitch, None
            tg = round(t + DT / 2, 6)
            where = g(xy) if callable(g) else xy + np.asarray(g, float)
            ex.on_pose(pose(tg, where), now=tg)
            ex.on_reading(Reading(tg, float(xy.sum())), now=tg)
            ex.tick(tg)
        if ex.state is State.DONE:
            break
    return np.array(path)


def stored(ex):
    """What reached the planner and the odometer: en-route locations and readings, measurement locations."""
    p = ex.planner
    er = p.en_route_locations
    return (er.mean.numpy().copy() if er is not None else np.zeros((0, 2)), p.en_route_y.numpy().copy(),
            p.locations.mean.numpy().copy() if p.locations is not None else np.zeros((0, 2)), p.y.numpy().copy())


# ------------------------------------------------------------------ the equation
def test_jump_within_reach_is_zero_and_without_motion_is_the_plain_mahalanobis_distance():
    s0, s1 = np.diag([0.3, 0.1]), np.array([[0.2, 0.05], [0.05, 0.4]])
    assert jump_mahalanobis2([0, 0], s0, [3.0, 4.0], s1, reach=5.0) == 0.0
    delta = np.array([3.0, 4.0])
    s = s0 + s1 + 0.01 * np.eye(2)
    assert jump_mahalanobis2([0, 0], s0, delta, s1, reach=0.0) == pytest.approx(delta @ np.linalg.solve(s, delta))


def test_jump_beyond_reach_is_the_mahalanobis_distance_to_the_reachable_disc():
    """Isotropic: (|delta| - r)^2 / s. Anisotropic: the minimum over the disc's boundary, brute force."""
    assert jump_mahalanobis2([1, 1], np.eye(2) * 0.2, [1, 11], np.eye(2) * 0.29, reach=4.0) == pytest.approx(
        36.0 / 0.5)
    rng = np.random.default_rng(0)
    angles = np.linspace(0, 2 * np.pi, 200001)
    circle = np.stack([np.cos(angles), np.sin(angles)], 1)
    for _ in range(20):
        a, b = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
        s0, s1 = a @ a.T * rng.uniform(0.01, 5), b @ b.T * rng.uniform(0.01, 5)
        delta, reach = rng.normal(size=2) * 10, rng.uniform(0.1, 5)
        if np.linalg.norm(delta) <= reach:
            continue
        s_inv = np.linalg.inv(s0 + s1 + 0.01 * np.eye(2))
        r = delta - reach * circle
        brute = np.einsum('ni,ij,nj->n', r, s_inv, r).min()
        assert jump_mahalanobis2([0, 0], s0, delta, s1, reach) == pytest.approx(brute, rel=1e-6)


@pytest.mark.parametrize('var', [0.0, 1e-4, 0.04, 4.0], ids=['dirac', '1cm', '20cm', '2m'])
def test_a_rover_at_max_speed_is_never_rejected(var):
    """Consistent estimates (truth + noise of the stated covariance) of a rover at exactly max_speed, in random
    directions and at random intervals (jitter included), pass: the gate rejects a consistent estimate with
    probability at most FALSE_REJECTION (1e-6), here never in 3000 poses."""
    rng = np.random.default_rng(1)
    gate = PoseGate({'max_speed': 2.0})
    xy, t = np.zeros(2), 0.0
    for _ in range(3000):
        dt = rng.uniform(0.01, 1.0)
        heading = rng.uniform(0, 2 * np.pi)
        xy = xy + 2.0 * dt * np.array([np.cos(heading), np.sin(heading)])
        t += dt
        est = xy + (rng.multivariate_normal(np.zeros(2), np.eye(2) * var) if var > 0 else 0.0)
        assert gate.check(t, est, np.eye(2) * var).accepted
    assert gate.consecutive == 0 and gate.reanchored == 0 and FALSE_REJECTION <= 1e-6


def test_a_diverged_estimate_far_away_passes_the_gate():
    """A huge covariance is the divergence pause's business (max_covariance_trace), not a jump."""
    gate = PoseGate({'max_speed': 5.0})
    assert gate.check(0.0, [0.0, 0.0], np.eye(2) * 0.04).accepted
    assert gate.check(0.1, [40.0, 0.0], np.eye(2) * 1e4).accepted


def test_max_speed_zero_switches_the_gate_off():
    gate = PoseGate({'max_speed': 0.0})
    assert gate.check(0.0, [0.0, 0.0], np.zeros((2, 2))).accepted
    assert gate.check(0.1, [1e6, 1e6], np.zeros((2, 2))).accepted


# ------------------------------------------------------------------ the defect, end to end
GLITCHES = {'5 m in 0.1 s': [5.0, 0.0], '1e3 m': [1e3, 0.0], '1e6 m': lambda xy: np.array([1e6, 1e6]),
            '9e6 m': lambda xy: np.array([9e6, -9e6])}


@pytest.mark.parametrize('glitch', list(GLITCHES.values()), ids=list(GLITCHES))
def test_a_glitch_pose_while_driving_changes_nothing_and_is_counted(glitch):
    """The same drive with and without one glitch pose: the en-route readings, the measurements and the distance
    driven are identical; the glitch is counted ('pose: implausible jump') and shown in the diagnostics. Before the
    gate the glitch was stored as an en-route reading there and its jump was added to the distance driven."""
    clean, clean_host = make()
    drive(clean, clean_host)
    ex, host = make()
    drive(ex, host, glitch=glitch)
    assert ex.rejected['pose: implausible jump'] == 1      # the glitch came
    assert ex.planner.n == clean.planner.n == 2 and ex.planner.n_en_route == clean.planner.n_en_route > 10
    for a, b in zip(stored(ex), stored(clean)):
        np.testing.assert_array_equal(a, b)
    assert ex.budget.distance == clean.budget.distance < 100.0
    assert np.abs(stored(ex)[0]).max() <= 50.0
    assert dict(ex.rejected) == {'pose: implausible jump': 1} and not clean.rejected
    assert 'implausible' not in (clean.last_reason or '') and 'max_speed = 5 m/s' in ex.last_reason
    report = dict(StatusReporter().report(ex, 100.0).values)
    assert report['rejected pose: implausible jump'] == '1'


def test_a_particle_cloud_glitch_goes_through_the_same_gate():
    ex, _ = make()
    rng = np.random.default_rng(2)
    cloud = rng.normal(size=(200, 2)) * 0.2
    assert ex.on_pose(PoseEstimate.from_particles(0.0, 'map', cloud + [10.0, 10.0]), now=0.0)
    assert not ex.on_pose(PoseEstimate.from_particles(0.1, 'map', cloud + [1e6, 1e6]), now=0.1)
    assert ex.on_pose(PoseEstimate.from_particles(0.2, 'map', cloud + [10.2, 10.0]), now=0.2)
    assert ex.rejected['pose: implausible jump'] == 1 and np.allclose(ex.latest_pose.xy, cloud.mean(0) + [10.2, 10])


def test_a_reinitialised_localisation_is_reported_and_re_anchored(caplog):
    """The estimates move 30 m at once and stay there (set_pose, the rover carried): the first ones are rejected,
    the burst is reported (log warning, diagnostics), and after REANCHOR_POSES consistent poses over
    REANCHOR_SECONDS the new place is accepted without adding the jump to the distance driven; the mission goes
    on from there (a real re-initialisation must not lock the explorer out)."""
    ex, host = make(en_route_spacing=0.0)
    ex.on_pose(pose(0.0, [10.0, 10.0]), now=0.0)
    ex.tick(0.0)
    assert ex.state is State.DRIVING
    t, accepted_at = 0.0, None
    with caplog.at_level(logging.WARNING, logger='uncertain_bo.explorer.inputs'):
        for k in range(1, 60):
            t = round(k * DT, 6)
            if ex.on_pose(pose(t, [40.0, 10.0]), now=t) and accepted_at is None:
                accepted_at = t
            ex.tick(t)
    n_rejected = round((accepted_at - DT) / DT)
    assert REANCHOR_SECONDS <= accepted_at - DT < REANCHOR_SECONDS + 2 * DT and n_rejected >= REANCHOR_POSES
    assert ex.rejected['pose: implausible jump'] == n_rejected
    assert ex.inputs.gate.bursts == 1 and ex.inputs.gate.reanchored == 1
    assert sum('in a row jumped implausibly' in r.getMessage() for r in caplog.records) == 1
    assert sum('re-anchored' in r.getMessage() for r in caplog.records) == 1
    assert np.allclose(ex.latest_pose.xy, [40.0, 10.0]) and ex.budget.distance == 0.0
    assert ex.last_reason.startswith('pose re-anchored') and '30.0 m from the last accepted' in ex.last_reason
    report = dict(StatusReporter().report(ex, t).values)
    assert report['pose gate bursts'] == '1' and report['pose gate re-anchored'] == '1'
    # the mission goes on from the new place: drive to the goal from there and measure
    xy = np.array([40.0, 10.0])
    while ex.planner.n == 0 and t < 200.0:
        t = round(t + DT, 6)
        if ex.state is State.DRIVING:
            d = host.goals[-1] - xy
            xy = xy + d / max(np.linalg.norm(d), 1e-9) * min(np.linalg.norm(d), SPEED * DT)
        ex.on_pose(pose(t, xy), now=t)
        ex.on_reading(Reading(t, 1.0), now=t)
        ex.tick(t)
    assert ex.planner.n == 1 and ex.rejected['pose: implausible jump'] == n_rejected
    leg = np.linalg.norm(host.goals[0] - [40.0, 10.0])     # driven from the new place, stopping within tolerance
    assert leg - ex.params['arrival_tolerance'] - SPEED * DT <= ex.budget.distance <= leg


def test_a_glitch_burst_that_does_not_stay_is_not_re_anchored():
    """Glitch poses scattered far away (not consistent with each other) never re-anchor the gate, however many."""
    gate = PoseGate({'max_speed': 5.0})
    assert gate.check(0.0, [10.0, 10.0], np.eye(2) * 0.04).accepted
    rng = np.random.default_rng(3)
    for k in range(1, 100):
        assert not gate.check(k * DT, rng.uniform(1e3, 1e6, size=2), np.eye(2) * 0.04).accepted
    assert gate.reanchored == 0 and gate.consecutive == 99 and gate.bursts == 1
    assert gate.check(100 * DT, [10.5, 10.0], np.eye(2) * 0.04).accepted and gate.consecutive == 0
    assert BURST <= REANCHOR_POSES


def test_a_glitch_does_not_end_the_mission_by_max_distance(monkeypatch):
    """In-process mission (sim rover, EKF, pure pursuit) with max_distance: one pose at (1e6, 1e6) while driving
    used to end it ('max_distance = ... driven (1414... m)'); now it is rejected and the mission completes."""
    import uncertain_bo.sim.mission as mission_module
    from uncertain_bo.sim.mission import Mission, mission_parameters

    class GlitchOnce(Explorer):
        glitched = False

        def on_pose(self, p, now=None):
            if not self.glitched and self.state is State.DRIVING and self.planner.n >= 1:
                type(self).glitched = True
                return super().on_pose(PoseEstimate(p.stamp, p.frame_id, np.array([1e6, 1e6]), p.cov), now)
            return super().on_pose(p, now)

    monkeypatch.setattr(mission_module, 'Explorer', GlitchOnce)
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    params = mission_parameters({'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 1, **start},
                                 'ekf': start, 'explorer': {'max_measurements': 3, 'n_initial': 3,
                                                            'max_distance': 1000.0}})
    result = Mission(params).run(max_sim_time=3000.0)
    assert GlitchOnce.glitched
    assert result.completed and result.stop_reason == 'max_measurements = 3 reached', result.stop_reason
    assert result.distance_estimate < 200.0 and result.rejected == {'pose: implausible jump': 1}


def test_a_glitch_while_measuring_does_not_inflate_the_learned_execution_noise():
    """What sent every later target to one point: a glitch pose paired with a measurement's reading stored the
    measurement at (1e6, 1e6), 1.4e6 m from its target; the learned execution noise took that offset in
    (covariance ~1e11 m²), every candidate's distribution then covered the whole area, the acquisition was flat and
    every later target was the centre of search_bounds. Now the glitch is rejected: the measurement is stored where
    the rover is and the learned execution noise stays near its prior."""
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 5,
                                        'n_initial': 3, 'dwell_time': 0.5, 'reading_timeout': 2.0,
                                        'learn_execution_noise': True, 'num_restarts': 2, 'raw_samples': 64})
    host = RecordingHost()
    ex = Explorer(planner_from_parameters(params), host, params)
    xy, t, glitched = np.array([25.0, 25.0]), 0.0, False
    while ex.state is not State.DONE and t < 600.0:
        t = round(t + DT, 6)
        if ex.state is State.DRIVING:
            d = host.goals[-1] - xy
            xy = xy + d / max(np.linalg.norm(d), 1e-9) * min(np.linalg.norm(d), SPEED * DT)
        where = xy
        if not glitched and ex.state is State.MEASURING and ex.planner.n == 2:
            glitched, where = True, np.array([1e6, 1e6])
        ex.on_pose(pose(t, where), now=t)
        ex.on_reading(Reading(t, float(np.exp(-np.sum((xy - 30.0) ** 2) / 200.0))), now=t)
        ex.tick(t)
    assert glitched and ex.planner.n == 5 and ex.rejected['pose: implausible jump'] == 1
    assert np.abs(ex.planner.locations.mean.numpy()).max() <= 50.0
    assert np.linalg.eigvalsh(ex.planner.learned_execution_covariance().numpy()).max() < 10.0
    later = np.array(host.goals[3:])
    assert len(later) == 2 and np.linalg.norm(later[0] - later[1]) > 0.5

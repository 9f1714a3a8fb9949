"""The pose plausibility gate (uncertain_bo.explorer.pose_gate): one glitch pose must not teleport the rover.

Issue 20: a pose at (1e6, 1e6) arriving while driving was stored as an en-route reading there and the distance
driven jumped from 38 m to 2,828,444 m, with no rejection; with max_distance set the glitch ended the mission.
Issue 31: the gate could be bypassed (a pose stamped back after one stamped ahead reset it; a glitch after a
diverged estimate passed against the diverged one), a glitch as the very first pose became the mission's start,
and a slow drift beyond max_speed passed pose by pose.
"""
import logging

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import (EXPLORER_PARAMS, ODOMETER_STEP, Explorer, PoseEstimate, Reading, State,
                                   planner_from_parameters)
from uncertain_bo.explorer.pose_gate import (BURST, FALSE_REJECTION, MAX_STAMP_GAP, REANCHOR_POSES,
                                             REANCHOR_SECONDS, THRESHOLD, TESTS, PoseGate, jump_mahalanobis2)
from uncertain_bo.reporting.operator_view import StatusReporter
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from explorer_cycle import settle
from recording_host import RecordingHost

SPEED = 1.0     # m/s, the simulated rover's speed below (max_speed is the default, 5 m/s)
DT = 0.1        # s between poses
START = np.array([25.0, 25.0])


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


def confirmed_gate(params=None, xy=(0.0, 0.0), var=0.04):
    """A gate that has confirmed its first place at ``xy`` (poses every DT); returns it and the time."""
    gate = PoseGate(params or {'max_speed': 5.0})
    t = 0.0
    while not gate.check(t, xy, np.eye(2) * var).accepted:
        t = round(t + DT, 6)
        assert t <= REANCHOR_SECONDS + 1.0
    return gate, t


def drive(ex, host, glitch=None, steps=1000, inject=None, estimate=None, dt=DT, clock=True):
    """Drive at SPEED towards the current goal with poses and readings every ``dt`` (the rover stands at START
    until the first goal); optionally, once, in the middle of the second leg: hand in one ``glitch`` pose (an
    offset from the true position, m; or a callable of the true position) half a step after a pose, together with
    a reading of the same stamp, then tick before the next pose (so the glitch is the newest pose and the
    reading's nearest one); or call ``inject(ex, t, xy)`` (it hands in what it likes). ``estimate(t, xy)``: the
    estimate's position when the rover is at ``xy`` (default: ``xy``); ``clock``: hand in the host's clock.
    Returns the true path."""
    xy = START.copy()
    path = []
    if glitch is not None:
        def inject(ex, t, xy, g=glitch):
            tg = round(t + dt / 2, 6)
            where = g(xy) if callable(g) else xy + np.asarray(g, float)
            ex.on_pose(pose(tg, where), now=tg)
            ex.on_reading(Reading(tg, float(xy.sum())), now=tg)
            ex.tick(tg)
    for k in range(steps):
        t = round(k * dt, 6)
        if ex.state is State.DRIVING:
            d = host.goals[-1] - xy
            n = np.linalg.norm(d)
            xy = xy + (d / n * min(n, SPEED * dt) if n > 0 else 0.0)
        path.append(xy.copy())
        ex.on_pose(pose(t, xy if estimate is None else estimate(t, xy)), now=t if clock else None)
        ex.on_reading(Reading(t, float(xy.sum())), now=t if clock else None)
        ex.tick(t)
        if inject is not None and second_leg(ex, host, xy):
            inject(ex, t, xy)
            inject = None
        if ex.state is State.DONE:
            break
    return np.array(path)


def second_leg(ex, host, xy):
    """Driving the second leg, more than 3 m from both of its ends."""
    return (ex.state is State.DRIVING and ex.planner.n == 1
            and min(np.linalg.norm(xy - host.goals[-1]), np.linalg.norm(xy - host.goals[-2])) > 3.0)


def stored(ex):
    """What reached the planner and the odometer: en-route locations and readings, measurement locations."""
    p = ex.planner
    er = p.en_route_locations
    return (er.mean.numpy().copy() if er is not None else np.zeros((0, 2)), p.en_route_y.numpy().copy(),
            p.locations.mean.numpy().copy() if p.locations is not None else np.zeros((0, 2)), p.y.numpy().copy())


def poses_rejected(ex):
    """The pose rejections by category (readings before the first place is confirmed are rejected too)."""
    return {k: v for k, v in ex.rejected.items() if k.startswith('pose')}


def off_path(ex, path):
    """Largest distance of a stored location (en-route or measured) from the rover's true path, m."""
    locs = np.concatenate([stored(ex)[0], stored(ex)[2]])
    return max(np.min(np.linalg.norm(path - loc, axis=1)) for loc in locs)


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


@pytest.mark.parametrize('straight', [False, True], ids=['turning', 'straight'])
@pytest.mark.parametrize('var', [0.0, 1e-4, 0.04, 4.0], ids=['dirac', '1cm', '20cm', '2m'])
def test_a_rover_at_max_speed_is_never_rejected(var, straight):
    """Consistent estimates (truth + noise of the stated covariance) of a rover at exactly max_speed, turning at
    random or in a straight line (where the windows up to 16 s see the whole allowance used), at random intervals
    (jitter included), pass: the gate rejects a consistent estimate with probability at most FALSE_REJECTION
    (1e-6) over all its tests, here never in 2000 poses; poses before the first place is confirmed are pending,
    not rejected."""
    rng = np.random.default_rng(1)
    gate = PoseGate({'max_speed': 2.0})
    xy, t, heading, accepted = np.zeros(2), 0.0, 0.3, 0
    for _ in range(2000):
        dt = rng.uniform(0.01, 1.0)
        heading = heading if straight else rng.uniform(0, 2 * np.pi)
        xy = xy + 2.0 * dt * np.array([np.cos(heading), np.sin(heading)])
        t += dt
        est = xy + (rng.multivariate_normal(np.zeros(2), np.eye(2) * var) if var > 0 else 0.0)
        verdict = gate.check(t, est, np.eye(2) * var)
        assert verdict.accepted or verdict.pending
        accepted += verdict.accepted
    assert accepted >= 2000 - 2 * REANCHOR_POSES and gate.consecutive == 0 and gate.reanchored == 0
    assert THRESHOLD == pytest.approx(2 * np.log(TESTS / FALSE_REJECTION)) and FALSE_REJECTION <= 1e-6


def test_a_diverged_estimate_far_away_passes_the_gate_but_is_no_reference():
    """A huge covariance is the divergence pause's business (max_covariance_trace), not a jump; but the pose after
    it is tested against the last trusted estimate, not against the diverged one."""
    gate, t = confirmed_gate({'max_speed': 5.0, 'max_covariance_trace': 25.0})
    assert gate.check(t + 0.1, [40.0, 0.0], np.eye(2) * 1e4).accepted
    assert not gate.check(t + 0.2, [40.0, 0.0], np.eye(2) * 0.04).accepted      # 40 m in 0.2 s
    assert gate.check(t + 0.3, [0.5, 0.0], np.eye(2) * 0.04).accepted


def test_max_speed_zero_switches_the_gate_off():
    gate = PoseGate({'max_speed': 0.0})      # no plausibility known: the first pose is accepted as it is
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
    clean, clean_host = make(area_margin=1e7)      # the gate's test: not the area's (test_the_area_...)
    drive(clean, clean_host)
    ex, host = make(area_margin=1e7)
    drive(ex, host, glitch=glitch)
    assert ex.rejected['pose: implausible jump'] == 1      # the glitch came
    assert ex.planner.n == clean.planner.n == 2 and ex.planner.n_en_route == clean.planner.n_en_route > 10
    for a, b in zip(stored(ex), stored(clean)):
        np.testing.assert_array_equal(a, b)
    assert ex.budget.distance == clean.budget.distance < 100.0
    assert np.abs(stored(ex)[0]).max() <= 50.0
    assert poses_rejected(ex) == {'pose: implausible jump': 1} and not poses_rejected(clean)
    assert 'implausible' not in (clean.last_reason or '') and 'max_speed = 5 m/s' in ex.last_reason
    report = dict(StatusReporter().report(ex, 100.0).values)
    assert report['rejected pose: implausible jump'] == '1'


def test_a_particle_cloud_glitch_goes_through_the_same_gate():
    ex, _ = make(area_margin=1e7)
    rng = np.random.default_rng(2)
    cloud = rng.normal(size=(200, 2)) * 0.2
    settle(ex, [10.0, 10.0], 0.0, make_pose=lambda t, xy: PoseEstimate.from_particles(t, 'map', cloud + xy))
    assert ex.latest_pose is not None
    assert not ex.on_pose(PoseEstimate.from_particles(0.1, 'map', cloud + [1e6, 1e6]), now=0.1)
    assert ex.on_pose(PoseEstimate.from_particles(0.2, 'map', cloud + [10.2, 10.0]), now=0.2)
    assert ex.rejected['pose: implausible jump'] == 1 and np.allclose(ex.latest_pose.xy, cloud.mean(0) + [10.2, 10])


def test_a_reinitialised_localisation_is_reported_and_re_anchored(caplog):
    """The estimates move 30 m at once and stay there (set_pose, the rover carried): the first ones are rejected,
    the burst is reported (log warning, diagnostics), and after REANCHOR_POSES consistent poses over
    REANCHOR_SECONDS the new place is accepted without adding the jump to the distance driven; the mission goes
    on from there (a real re-initialisation must not lock the explorer out)."""
    ex, host = make(en_route_spacing=0.0)
    settle(ex, [10.0, 10.0], 0.0, make_pose=pose)
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
    assert leg - ex.params['xy_goal_tolerance'] - SPEED * DT <= ex.budget.distance <= leg


def test_a_glitch_burst_that_does_not_stay_is_not_re_anchored():
    """Glitch poses scattered far away (not consistent with each other) never re-anchor the gate, however many."""
    gate, t = confirmed_gate(xy=(10.0, 10.0))
    rng = np.random.default_rng(3)
    for k in range(1, 100):
        assert not gate.check(t + k * DT, rng.uniform(1e3, 1e6, size=2), np.eye(2) * 0.04).accepted
    assert gate.reanchored == 0 and gate.consecutive == 99 and gate.bursts == 1
    assert gate.check(t + 100 * DT, [10.5, 10.0], np.eye(2) * 0.04).accepted and gate.consecutive == 0
    assert BURST <= REANCHOR_POSES


def test_a_glitch_does_not_end_the_mission_by_max_distance(monkeypatch):
    """In-process mission (sim rover, EKF, pure pursuit) with max_distance: one pose at (1e6, 1e6) while driving
    used to end it ('max_distance = ... driven (1414... m)'); now it is rejected (outside the area: search_bounds
    + area_margin) and the mission completes."""
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
    assert result.distance_estimate < 200.0
    assert {k: v for k, v in result.rejected.items() if k.startswith('pose')} == {'pose: outside the area': 1}


def test_a_glitch_while_measuring_does_not_inflate_the_learned_execution_noise():
    """What sent every later target to one point: a glitch pose paired with a measurement's reading stored the
    measurement at (1e6, 1e6), 1.4e6 m from its target; the learned execution noise took that offset in
    (covariance ~1e11 m²), every candidate's distribution then covered the whole area, the acquisition was flat and
    every later target was the centre of search_bounds. Now the glitch is rejected: the measurement is stored where
    the rover is and the learned execution noise stays near its prior."""
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 5,
                                        'n_initial': 3, 'dwell_time': 0.5, 'reading_timeout': 2.0,
                                        'learn_execution_noise': True, 'num_restarts': 2, 'raw_samples': 64,
                                        'area_margin': 1e7})
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


# ------------------------------------------------------------------ issue 31: bypasses, the first pose, drifts
def path_length(path):
    return float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1)))


GLITCH_PLACES = {'1e6 m': (np.array([1e6, 1e6]), 1e7), 'in the area margin': (np.array([95.0, -45.0]), 50.0)}


@pytest.mark.parametrize('where, margin', list(GLITCH_PLACES.values()), ids=list(GLITCH_PLACES))
def test_a_pose_stamped_back_after_one_stamped_ahead_cannot_reset_the_gate(where, margin):
    """Issue 31: a pose stamped 0.45 s ahead, then a glitch stamped 0.3 s back: the 'stamp jumped backwards' reset
    cleared the buffers and the gate, and the glitch was accepted (the odometer gained 1,414,215 m, the explorer
    stopped and measured 'where the rover is', (1e6, 1e6)). The node clock went on: the glitch is out of order."""
    ex, host = make(area_margin=margin)

    def stamped_back(ex, t, xy):
        ex.on_pose(pose(round(t + 0.45, 6), xy), now=t)         # ahead, within future_stamp_tolerance
        ex.tick(t)
        ex.on_pose(pose(round(t - 0.3, 6), where), now=t)        # the glitch, stamped back
        ex.on_reading(Reading(t, 1.0), now=t)
        ex.tick(t)
    path = drive(ex, host, inject=stamped_back)
    assert ex.rejected['pose: out of order'] >= 1 and not ex.rejected['pose: stamp jumped backwards (buffer reset)']
    assert ex.planner.n == 2 and ex.done_reason.startswith('max_measurements') and not host.stops
    assert off_path(ex, path) < 0.01 and ex.budget.distance <= path_length(path) + 1e-9


def test_without_a_clock_a_pose_stamped_back_restarts_the_time_base_and_the_place_is_confirmed_again():
    """Where the host has no clock (simulated time before the first /clock) stamps alone say that time went back:
    the buffers are cleared, but the glitch that did it is not believed; the place is confirmed again by the poses
    after it (the glitch is discarded), and the odometer never takes the jump."""
    ex, host = make(area_margin=1e7)

    def stamped_back(ex, t, xy):
        ex.on_pose(pose(round(t + 0.45, 6), xy))
        ex.on_pose(pose(round(t - 0.3, 6), [1e6, 1e6]))
        ex.on_reading(Reading(t, 1.0))
        ex.tick(t)
        assert ex.latest_pose is None and ex.inputs.gate.confirming
    path = drive(ex, host, inject=stamped_back, clock=False)
    assert ex.rejected['pose: stamp jumped backwards (buffer reset)'] == 1 and ex.rejected['pose: unconfirmed'] == 1
    assert ex.inputs.gate.reanchored == 1 and ex.planner.n == 2 and not host.stops
    assert off_path(ex, path) < 0.01 and ex.budget.distance <= path_length(path) + 1e-9


def test_a_simulation_reset_restarts_the_time_base_and_the_mission_goes_on():
    """A real reset (the clock and the stamps jump back 100 s; the rover is put back at its start) is recoverable:
    the buffers are cleared, the place is confirmed again after REANCHOR_SECONDS, and the teleport is not driven."""
    ex, host = make(en_route_spacing=0.0)
    settle(ex, START, 0.0, make_pose=pose)
    xy, t = START.copy(), 0.0
    for _ in range(30):                                   # 3 m towards the first goal
        t = round(t + DT, 6)
        d = host.goals[-1] - xy
        xy = xy + d / np.linalg.norm(d) * SPEED * DT
        ex.on_pose(pose(t, xy), now=t)
        ex.tick(t)
    driven = ex.budget.distance
    t, xy = t - 100.0, START.copy()
    accepted = []
    for _ in range(40):
        t = round(t + DT, 6)
        accepted.append(ex.on_pose(pose(t, xy), now=t))
        ex.tick(t)
    assert ex.rejected['pose: stamp jumped backwards (buffer reset)'] == 1
    assert accepted.index(True) == round(REANCHOR_SECONDS / DT) and all(accepted[accepted.index(True):])
    assert ex.inputs.gate.reanchored == 1 and ex.budget.distance == pytest.approx(driven)
    assert np.allclose(ex.latest_pose.xy, START) and ex.state is State.DRIVING


@pytest.mark.parametrize('where, margin', list(GLITCH_PLACES.values()), ids=list(GLITCH_PLACES))
def test_a_glitch_right_after_a_diverged_estimate_is_rejected_and_the_pause_holds(where, margin):
    """Issue 31: a glitch right after a diverged estimate (covariance 1e30: the explorer pauses) passed the gate
    against the diverged one, ended the pause and was stored as an en-route reading at (1e6, 1e6) with 1,414,231 m
    driven. A diverged estimate is no reference now: the glitch is tested against the last trusted pose; the pause
    holds the rover where it was trusted to be (not at the diverged estimate's mean), and goes on after."""
    ex, host = make(area_margin=margin)
    seen = {}

    def diverged_then_glitch(ex, t, xy):
        ex.on_pose(pose(round(t + 0.02, 6), where, var=1e30), now=round(t + 0.02, 6))
        ex.tick(round(t + 0.02, 6))
        seen['paused'], seen['held'] = ex.state, host.stops[-1].copy()
        ex.on_pose(pose(round(t + 0.04, 6), where), now=round(t + 0.04, 6))
        ex.on_reading(Reading(round(t + 0.04, 6), 1.0), now=round(t + 0.04, 6))
        ex.tick(round(t + 0.04, 6))
        seen['after'], seen['xy'] = ex.state, xy.copy()
    path = drive(ex, host, inject=diverged_then_glitch)
    assert seen['paused'] is State.PAUSED and seen['after'] is State.PAUSED
    assert np.linalg.norm(seen['held'] - seen['xy']) < 0.2             # held at the trusted pose (0.1 s earlier)
    assert ex.rejected['pose: implausible jump'] == 1 and ex.planner.n == 2 and len(host.stops) == 1
    assert off_path(ex, path) < 0.01 and ex.budget.distance <= path_length(path) + 1e-9


FIRST_GLITCHES = {'1e6 m, outside the area': ((1e6, 1e6), 50.0, 'pose: outside the area'),
                  '1e6 m, the gate': ((1e6, 1e6), 1e7, 'pose: unconfirmed'),
                  'in the area margin': ((95.0, -45.0), 50.0, 'pose: unconfirmed')}


@pytest.mark.parametrize('where, margin, key', list(FIRST_GLITCHES.values()), ids=list(FIRST_GLITCHES))
def test_a_glitch_as_the_first_pose_is_never_the_start(where, margin, key):
    """Issue 31: a glitch as the very first pose was accepted unchecked: it became the journal's start, the
    initial tour was ordered from it, and with max_distance 3000 the mission ended at 0 measurements ('the next
    target is 1414162.3 m away'). Now no start, tour or odometer until REANCHOR_POSES poses over REANCHOR_SECONDS
    agree: the run is the run without the glitch, and the glitch is counted."""
    clean, clean_host = make(max_distance=3000.0, area_margin=margin)
    drive(clean, clean_host)
    ex, host = make(max_distance=3000.0, area_margin=margin)
    ex.on_pose(pose(-0.05, where), now=-0.05)
    ex.tick(-0.05)
    assert ex.state is State.WAITING_FOR_POSE and ex.planner.start is None
    drive(ex, host)
    assert np.allclose(ex.planner.start.numpy(), START) and ex.done_reason.startswith('max_measurements')
    assert len(host.goals) == len(clean_host.goals) and all(map(np.array_equal, host.goals, clean_host.goals))
    for a, b in zip(stored(ex), stored(clean)):
        np.testing.assert_array_equal(a, b)
    assert ex.budget.distance == clean.budget.distance and poses_rejected(ex) == {key: 1}


def test_a_drift_is_caught_over_a_window_where_every_step_passes():
    """0.5 m per pose at 20 Hz (10 m/s, twice max_speed): every consecutive pair passes the pairwise test, yet the
    windows reject the drift within a second."""
    gate, t = confirmed_gate()
    xy = np.zeros(2)
    for k in range(1, 41):
        step_d2 = jump_mahalanobis2(xy, np.eye(2) * 0.04, xy + [0.5, 0.0], np.eye(2) * 0.04, 5.0 * 0.05)
        assert step_d2 < THRESHOLD / 4
        xy = xy + [0.5, 0.0]
        if not gate.check(t + k * 0.05, xy, np.eye(2) * 0.04).accepted:
            break
    assert k * 0.05 <= 1.0 and gate.consecutive == 1


@pytest.mark.parametrize('factor', [1.5, 2.0, 4.0])
def test_a_drift_faster_than_max_speed_is_caught(factor):
    """Issue 31: a drift of 0.5-1 m per pose at 20 Hz (2-4 x max_speed) was accepted pose by pose: en-route
    readings up to 27 m outside the search area, 19-29 m on the odometer. Here the estimate drifts sideways from
    the true path at factor x max_speed for 2 s (20 Hz), then is back on the truth: the drift is rejected within
    a second (with 0.2 m standard deviations the windows need (v - max_speed) T > 1.7 m), nothing is stored beyond
    what was accepted before, and the mission goes on."""
    ex, host = make(en_route_spacing=0.5)
    drift = {}

    def estimate(t, xy):
        if 'start' not in drift and second_leg(ex, host, xy):
            d = (host.goals[-1] - xy) / np.linalg.norm(host.goals[-1] - xy)
            drift.update(start=t, velocity=factor * 5.0 * np.array([-d[1], d[0]]))
        if 'start' in drift and 0.0 <= t - drift['start'] < 2.0:
            if 'caught' not in drift and ex.rejected['pose: implausible jump']:
                drift['caught'] = t - drift['start']
            return xy + drift['velocity'] * (t - drift['start'])
        return xy
    path = drive(ex, host, estimate=estimate, dt=0.05, steps=4000)
    caught = drift['caught'] - 0.05                          # the rejection is seen one pose later
    assert caught <= 1.0 and ex.planner.n == 2 and ex.done_reason.startswith('max_measurements')
    worst = factor * 5.0 * caught                            # the estimate's offset when it was caught
    assert worst <= 20.0 and off_path(ex, path) <= worst
    assert ex.budget.distance <= path_length(path) + 2 * worst + ODOMETER_STEP


def test_a_pose_stamped_far_ahead_cannot_widen_the_gate():
    """Where the host has no clock the stamps are not checked against one: a pose stamped 1e6 s ahead used to
    allow 5e6 m of motion. The stamp counts at most MAX_STAMP_GAP s."""
    gate, t = confirmed_gate()
    assert not gate.check(t + 1e6, [1000.0, 0.0], np.eye(2) * 0.04).accepted
    assert gate.check(t + 1e6, [5.0 * MAX_STAMP_GAP - 1.0, 0.0], np.eye(2) * 0.04).accepted


def test_poses_outside_the_area_are_rejected_and_nothing_starts_there():
    """search_bounds widened by area_margin: beyond it no pose is used (a sentinel, another frame's origin, a rover
    started far away), counted and said in the status."""
    ex, host = make()
    for k in range(30):
        assert not ex.on_pose(pose(k * DT, [1e6, 1e6]), now=k * DT)
        assert not ex.on_pose(pose(k * DT + 0.05, [120.0, 25.0]), now=k * DT + 0.05)   # 20 m beyond the margin
        ex.tick(k * DT + 0.05)
    assert ex.state is State.WAITING_FOR_POSE and not host.goals and ex.planner.start is None
    assert poses_rejected(ex) == {'pose: outside the area': 60}
    message = StatusReporter().report(ex, 3.0).message
    assert '20 m outside search_bounds = [0.0, 50.0, 0.0, 50.0] + area_margin = 50 m' in message


DEGENERATE = {'zero': np.zeros((2, 2)), 'one axis': np.diag([0.04, 0.0]),
              'singular': np.array([[0.04, 0.04], [0.04, 0.04]])}


@pytest.mark.parametrize('cov', list(DEGENERATE.values()), ids=list(DEGENERATE))
def test_a_degenerate_pose_covariance_is_rejected_by_default(cov):
    """Issue 30: an all-zero pose covariance (the publisher does not fill it in) was taken as an exact position.
    A position standard deviation below min_position_std along any direction is rejected, counted, and said."""
    ex, host = make()
    settle(ex, START, 0.0, make_pose=lambda t, xy: PoseEstimate(t, 'map', xy, cov))
    assert ex.state is State.WAITING_FOR_POSE and not host.goals
    assert poses_rejected(ex) == {'pose: degenerate covariance': round(REANCHOR_SECONDS / DT) + 1}
    assert "degenerate_pose_covariance: 'floor'" in ex.last_reason and 'min_position_std = 0.01 m' in ex.last_reason


@pytest.mark.parametrize('cov', list(DEGENERATE.values()), ids=list(DEGENERATE))
def test_a_degenerate_pose_covariance_is_floored_with_a_warning_when_configured(cov, caplog):
    """degenerate_pose_covariance: 'floor': the standard deviation along the degenerate direction is raised to
    min_position_std (the other direction kept), with a warning; counted in the diagnostics; the run goes on and
    stores the floored covariance."""
    ex, host = make(degenerate_pose_covariance='floor', min_position_std=0.05, en_route_spacing=0.0,
                    max_measurements=1)
    with caplog.at_level(logging.WARNING, logger='uncertain_bo.explorer.inputs'):
        settle(ex, START, 0.0, make_pose=lambda t, xy: PoseEstimate(t, 'map', xy, cov))
    assert ex.state is State.DRIVING and not poses_rejected(ex)
    w_in, w_out = np.linalg.eigvalsh(cov), np.linalg.eigvalsh(ex.latest_pose.cov)
    assert np.allclose(w_out, np.maximum(w_in, 0.05 ** 2))
    n = round(REANCHOR_SECONDS / DT) + 1
    assert ex.inputs.floored == n and sum('pose covariance floored' in r.getMessage() for r in caplog.records) == 3
    assert dict(StatusReporter().report(ex, 0.0).values)['pose covariances floored'] == str(n)

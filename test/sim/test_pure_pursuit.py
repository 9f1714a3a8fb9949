"""Tests for uncertain_bo.sim.pure_pursuit.PurePursuit."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uncertain_bo.sim.pure_pursuit import PurePursuit
from uncertain_bo.sim.rover import DiffDriveRover

DT = 0.05


def closed_loop(start, path, law, rover_params=None, t_max=200.0, seed=0):
    """Rover (with slip) + law with perfect pose. Returns (arrived, time, final pose, trajectory)."""
    rover = DiffDriveRover(rover_params or {}, pose=start)
    rng = np.random.default_rng(seed)
    traj = [rover.pose.copy()]
    t = 0.0
    while t < t_max:
        v, w, arrived = law.command(rover.pose, path)
        if arrived:
            return True, t, rover.pose, np.array(traj)
        rover.step(v, w, DT, rng)
        traj.append(rover.pose.copy())
        t += DT
    return False, t, rover.pose, np.array(traj)


def test_reaches_goal_from_random_starts_in_bounded_time():
    law = PurePursuit()
    p = law.params
    rng = np.random.default_rng(0)
    for k in range(12):
        start = (*rng.uniform(-20, 20, 2), rng.uniform(-math.pi, math.pi))
        goal = rng.uniform(-20, 20, 2)
        dist = float(np.hypot(*(goal - start[:2])))
        ok, t, pose, _ = closed_loop(start, np.array([start[:2], goal]), law, seed=k)
        # bound: drive at the cruise speed, turn around once, plus the slow approach and acceleration
        bound = dist / p['desired_linear_vel'] + math.pi / p['rotate_to_heading_angular_vel'] + 6.0
        assert ok, (start, goal)
        assert t <= bound, (t, bound)
        assert np.hypot(*(pose[:2] - goal)) <= p['xy_goal_tolerance']


def test_follows_an_l_shaped_plan_closely():
    law = PurePursuit({'lookahead_dist': 1.0})
    path = np.array([[0.0, 0.0], [20.0, 0.0], [20.0, 15.0]])
    ok, _, _, traj = closed_loop((0.0, 0.0, 0.0), path, law, rover_params={'wheel_slip_std': 0.0})
    assert ok

    def dist_to_path(q):
        d = []
        for a, b in zip(path[:-1], path[1:]):
            t = np.clip(np.dot(q - a, b - a) / np.dot(b - a, b - a), 0, 1)
            d.append(np.hypot(*(q - (a + t * (b - a)))))
        return min(d)

    errs = np.array([dist_to_path(q[:2]) for q in traj])
    assert errs.max() < 1.0            # corner cut bounded by the lookahead
    assert np.median(errs) < 0.05      # on the straight parts it tracks the line


def test_rotates_in_place_towards_a_goal_behind():
    law = PurePursuit()
    v, w, arrived = law.command((0.0, 0.0, 0.0), np.array([[0.0, 0.0], [-5.0, 1.0]]))
    assert v == 0.0 and w > 0 and not arrived                 # goal behind-left: turn left
    v, w, _ = law.command((0.0, 0.0, 0.0), np.array([[0.0, 0.0], [-5.0, -1.0]]))
    assert v == 0.0 and w < 0
    assert abs(w) == law.params['rotate_to_heading_angular_vel']
    v, w, _ = law.command((0.0, 0.0, 0.0), np.array([[0.0, 0.0], [5.0, 0.5]]))
    assert v > 0 and w > 0                                    # ahead-left: drive on a left arc


def test_arrival_stop_and_slow_down_near_goal():
    law = PurePursuit({'xy_goal_tolerance': 0.3, 'approach_velocity_scaling_dist': 2.0,
                       'desired_linear_vel': 1.0, 'min_approach_linear_velocity': 0.05})
    goal = np.array([[10.0, 0.0]])
    assert law.command((9.8, 0.1, 1.0), goal) == (0.0, 0.0, True)
    speeds = [law.command((10.0 - d, 0.0, 0.0), goal)[0] for d in (5.0, 1.5, 1.0, 0.5, 0.31)]
    assert speeds[0] == pytest.approx(1.0)
    assert speeds[1] == pytest.approx(0.75) and speeds[2] == pytest.approx(0.5)
    assert speeds[-1] == pytest.approx(0.155)
    assert all(a >= b for a, b in zip(speeds, speeds[1:]))


def test_curvature_law_closed_form():
    # carrot at distance l, heading error alpha: w = v * 2 sin(alpha) / l
    law = PurePursuit({'lookahead_dist': 2.0, 'desired_linear_vel': 0.5, 'max_angular_vel': 5.0,
                       'approach_velocity_scaling_dist': 0.0})
    path = np.array([[0.0, 0.0], [100.0, 0.0]])
    v, w, _ = law.command((0.0, -1.0, 0.0), path)
    # closest point (0, 0); carrot (2, 0): l = sqrt(5), alpha = atan2(1, 2)
    assert v == pytest.approx(0.5)
    assert w == pytest.approx(0.5 * 2 * math.sin(math.atan2(1, 2)) / math.sqrt(5))


@settings(max_examples=200, deadline=None)
@given(x=st.floats(-50, 50), y=st.floats(-50, 50), yaw=st.floats(-10, 10),
       pts=st.lists(st.tuples(st.floats(-50, 50), st.floats(-50, 50)), min_size=1, max_size=5))
def test_commands_always_within_limits(x, y, yaw, pts):
    law = PurePursuit()
    p = law.params
    v, w, arrived = law.command((x, y, yaw), np.array(pts))
    assert math.isfinite(v) and math.isfinite(w)
    assert 0.0 <= v <= p['desired_linear_vel'] + 1e-12
    assert abs(w) <= max(p['max_angular_vel'], p['rotate_to_heading_angular_vel']) + 1e-12
    if arrived:
        assert v == w == 0.0


def test_bad_inputs():
    law = PurePursuit()
    with pytest.raises(ValueError, match='path'):
        law.command((0, 0, 0), np.zeros((0, 2)))
    with pytest.raises(ValueError, match='pose'):
        law.command((0, np.nan, 0), np.ones((2, 2)))

"""explorer/leg.py: the current leg's target, reason and goal clock."""
import numpy as np

from uncertain_bo.explorer.leg import Leg


def test_goal_timeout_counts_from_the_legs_start_and_moves_with_a_clock_jump():
    leg = Leg()
    assert leg.target is None and leg.reason == 'new' and leg.decided_wall_time is None
    leg.start(np.array([3.0, 4.0]), now=50.0)
    assert not leg.timed_out(109.0, goal_timeout=60.0) and leg.timed_out(110.5, goal_timeout=60.0)
    leg.shift(-40.0)            # the host clock went back 40 s (a simulation reset): 60 s still to go from 10 s
    assert not leg.timed_out(69.0, goal_timeout=60.0) and leg.timed_out(70.5, goal_timeout=60.0)


def test_a_leg_given_up_has_no_target_and_a_decision_is_stamped():
    leg = Leg()
    leg.start(np.array([3.0, 4.0]), now=0.0)
    leg.decided()
    leg.clear()
    assert leg.target is None and leg.decided_wall_time > 0.0

"""sim_rover with several rovers on one clock (rovers: [rover0, rover1]): namespaced topics, the team's starts,
and a lockstep that does not deadlock when one rover stops answering. ROS domain 204."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from uncertain_bo.parameters.specs import ParameterError  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.sim_rover import SimRoverNode  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 204


def test_two_rovers_one_clock_and_a_silent_rover_is_not_waited_for(context):
    sim = SimRoverNode(context=context, parameter_overrides=parameter_overrides({
        'rovers': ['rover0', 'rover1'], 'spacing': 10.0, 'initial_x': 100.0, 'initial_y': 100.0,
        'lockstep_timeout': 0.5, 'status_period': 0.0, 'seed': 3}))
    probe = rclpy.create_node('team_sim_probe', context=context)
    truth = {'rover0': [], 'rover1': []}
    clock = []
    answering = {'rover0': True, 'rover1': True}
    cmd = {r: probe.create_publisher(Twist, f'{r}/cmd_vel', 10) for r in truth}

    def on_truth(rover, msg):
        truth[rover].append(msg)
        if answering[rover]:          # a controller that answers every step (closes the lockstep)
            msg = Twist()
            msg.linear.x = 0.5
            cmd[rover].publish(msg)
    for r in truth:
        probe.create_subscription(Odometry, f'{r}/ground_truth', lambda m, r=r: on_truth(r, m), 100)
    probe.create_subscription(Clock, '/clock', clock.append, 100)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(sim)
    ex.add_node(probe)
    try:
        assert spin_until(ex, lambda: sim.steps >= 50, timeout=10.0)
        assert sim.timeout_steps <= 3                 # both answer: lockstep, (almost) no waiting on a loaded CI
        first = {r: cv.odometry_to_pose(truth[r][0]).xy for r in truth}
        assert np.allclose(first['rover0'], [95.0, 100.0]) and np.allclose(first['rover1'], [105.0, 100.0])
        assert truth['rover1'][0].child_frame_id == 'rover1/base_link'
        # rover1's controller dies: one lockstep_timeout, then the simulation goes on at rover0's pace (a loaded
        # machine may make rover0 late a few times too; waiting for rover1 at every step would be ~200 timeouts)
        answering['rover1'] = False
        steps, timeouts, t0 = sim.steps, sim.timeout_steps, time.monotonic()
        assert spin_until(ex, lambda: sim.steps >= steps + 200, timeout=60.0)
        assert 1 <= sim.timeout_steps - timeouts <= 10 and not sim.rovers[1].responsive
        assert time.monotonic() - t0 < 0.5 * 200 / 4        # not a lockstep_timeout per step
        # every rover still steps on the one clock; rover1 stopped (cmd_vel_timeout), rover0 drives on
        assert cv.from_time_msg(truth['rover0'][-1].header.stamp) == \
            pytest.approx(cv.from_time_msg(truth['rover1'][-1].header.stamp))
        assert cv.from_time_msg(clock[-1].clock) == pytest.approx(sim.world.t, abs=0.5)
        assert abs(truth['rover1'][-1].twist.twist.linear.x) < 0.05 < truth['rover0'][-1].twist.twist.linear.x
        # it answers again: waited for again
        answering['rover1'] = True
        assert spin_until(ex, lambda: sim.rovers[1].responsive, timeout=5.0)
    finally:
        ex.shutdown()
        sim.destroy_node()
        probe.destroy_node()


def test_rovers_must_be_distinct(context):
    with pytest.raises(ParameterError, match='rovers'):
        SimRoverNode(context=context, parameter_overrides=parameter_overrides({'rovers': ['a', 'a']}))
    with pytest.raises(ParameterError, match='rovers'):
        SimRoverNode(context=context, parameter_overrides=parameter_overrides({'rovers': ['', 'a']}))

"""ros/operator_outputs.py: the explorer nodes' operator-view publishers and GP maps' state, a rover's goal topics."""
import os

import numpy as np
import pytest
import torch

rclpy = pytest.importorskip('rclpy')

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import OccupancyGrid, Path as PathMsg  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from uncertain_bo.distributions import Dirac  # noqa: E402
from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters  # noqa: E402
from uncertain_bo.parameters.specs import validate  # noqa: E402
from uncertain_bo.ros.operator_outputs import GoalTopics, OperatorOutputs  # noqa: E402
from uncertain_bo.ros.qos import LATCHED  # noqa: E402

from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 1 + (os.getpid() + 17) % 39


@pytest.fixture
def node(context):
    node = rclpy.create_node('explorer', context=context)
    yield node
    node.destroy_node()


def received(node, msg_type, topic):
    got = []
    node.create_subscription(msg_type, topic, got.append, LATCHED)
    return got


def test_the_gp_maps_are_published_with_their_scales_and_are_then_up_to_date(node, context):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 10.0, 0.0, 10.0], 'refit_every': 0})
    planner = planner_from_parameters(params)
    for xy, y in (([2.0, 2.0], 1.0), ([8.0, 3.0], 4.0), ([5.0, 8.0], 2.0)):
        planner.observe(torch.tensor(xy), Dirac(torch.tensor([xy])), y)
    view = OperatorOutputs(node, 1.0, lambda: None)
    means, stds = received(node, OccupancyGrid, '~/gp_mean'), received(node, OccupancyGrid, '~/gp_std')
    assert view.maps_dirty and view.map_scales is None and view.mean_scale is None and view.scale_texts() == []
    view.update_maps(planner, params['search_bounds'], 12, 'map', 3.0)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    assert spin_until(executor, lambda: means and stds, timeout=5.0)
    assert not view.maps_dirty and view.map_seconds >= 0.0
    assert (means[0].info.width, means[0].info.height, means[0].header.frame_id) == (12, 12, 'map')
    texts = view.scale_texts()
    assert len(texts) == 2 and texts[0].startswith('~/gp_mean') and texts[1].startswith('~/gp_std')
    assert view.mean_scale is view.map_scales[0]
    executor.shutdown()


def test_a_new_diagnostics_period_makes_the_timer_anew(node):
    calls = []
    view = OperatorOutputs(node, 2.0, lambda: calls.append(1))
    first = view.timer
    view.set_period(0.25)
    assert view.timer is not first and view.timer.timer_period_ns == 250_000_000
    assert first not in list(node.timers)


@pytest.mark.parametrize('goal', [True, False], ids=['goal_pose-and-plan', 'plan-only (Nav2 sends the goal)'])
def test_goal_topics_send_and_stop(node, context, goal):
    goals = GoalTopics(node, 'rover3')
    poses, plans = received(node, PoseStamped, '/rover3/goal_pose'), received(node, PathMsg, '/rover3/plan')
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    goals.send(1.0, 'map', np.array([0.0, 0.0]), np.array([4.0, 3.0]), goal=goal)
    assert spin_until(executor, lambda: plans, timeout=5.0)
    goals.stop(2.0, 'map', np.array([1.0, 1.0]), heading=None, goal=goal)
    assert spin_until(executor, lambda: len(plans) == 2, timeout=5.0)
    executor.spin_once(timeout_sec=0.1)
    assert [len(p.poses) for p in plans] == [2, 1]
    assert [(p.pose.position.x, p.pose.position.y) for p in poses] == ([(4.0, 3.0), (1.0, 1.0)] if goal else [])
    executor.shutdown()

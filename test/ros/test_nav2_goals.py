"""Nav2's NavigateToPose client (uncertain_bo.ros.nav2_goals) against an rclpy action server of a stand-in
nav2_msgs built from the action's interface at test time (test/nav2_stand_in.py): rejected, aborted, succeeded
with feedback, cancelled. Own rclpy context on ROS domain 80 + pid % 10."""
import os
import time

import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rclpy.executors import MultiThreadedExecutor  # noqa: E402

from uncertain_bo.ros import nav2_goals  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 80 + os.getpid() % 10


def test_goal_interface_choice(monkeypatch):
    monkeypatch.setattr(nav2_goals, 'navigate_to_pose_type', lambda: None)
    assert nav2_goals.resolve_goal_interface('auto') == ('topic', None)
    assert nav2_goals.resolve_goal_interface('topic') == ('topic', None)
    with pytest.raises(ValueError, match="'nav2_action' needs nav2_msgs.*apt install ros-"):
        nav2_goals.resolve_goal_interface('nav2_action')
    monkeypatch.setattr(nav2_goals, 'navigate_to_pose_type', lambda: 'NavigateToPose')
    assert nav2_goals.resolve_goal_interface('auto') == ('nav2_action', 'NavigateToPose')
    assert nav2_goals.resolve_goal_interface('topic') == ('topic', None)


@pytest.fixture(scope='module')
def navigate_to_pose():
    import nav2_stand_in
    try:
        return nav2_stand_in.navigate_to_pose()[0]
    except nav2_stand_in.Unavailable as exc:
        pytest.skip(f'stand-in nav2_msgs: {exc}')


def test_rejected_aborted_succeeded_and_cancelled_goals(context, navigate_to_pose):
    from rclpy.action import ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup

    server_node = rclpy.create_node('nav2_stand_in', context=context)

    def on_goal(request):
        return GoalResponse.REJECT if request.pose.pose.position.x < 0 else GoalResponse.ACCEPT

    def execute(handle):
        result = navigate_to_pose.Result()
        x = handle.request.pose.pose.position.x
        if x == 1.0:
            handle.abort()
            result.error_code, result.error_msg = 9003, 'timed out'
            return result
        if x == 3.0:                                       # runs until cancelled
            end = time.monotonic() + 5.0
            while not handle.is_cancel_requested and time.monotonic() < end:
                time.sleep(0.02)
            handle.canceled()
            return result
        fb = navigate_to_pose.Feedback()
        fb.distance_remaining, fb.number_of_recoveries = 2.5, 1
        handle.publish_feedback(fb)
        time.sleep(0.2)
        handle.succeed()
        return result

    ActionServer(server_node, navigate_to_pose, 'navigate_to_pose', execute, goal_callback=on_goal,
                 cancel_callback=lambda _: CancelResponse.ACCEPT, callback_group=ReentrantCallbackGroup())
    client_node = rclpy.create_node('explorer_stub', context=context)
    events = []
    goals = nav2_goals.Nav2Goals(client_node, navigate_to_pose, 'navigate_to_pose', '',
                                 reached=lambda: events.append(('reached',)),
                                 failed=lambda c, d: events.append((c, d)))
    ex = MultiThreadedExecutor(num_threads=3, context=context)
    ex.add_node(server_node)
    ex.add_node(client_node)
    try:
        assert spin_until(ex, goals.client.server_is_ready, timeout=10.0)
        goals.send(0.0, 'map', [-1.0, 0.0])
        assert spin_until(ex, lambda: events, timeout=10.0)
        assert events.pop() == ('rejected by the controller', 'Nav2 rejected the goal')
        goals.send(0.0, 'map', [1.0, 0.0])
        assert spin_until(ex, lambda: events, timeout=10.0)
        assert events.pop() == ('aborted by the controller', 'error_code 9003: timed out')
        goals.send(0.0, 'map', [2.0, 0.0])
        assert spin_until(ex, lambda: events, timeout=10.0)
        assert events.pop() == ('reached',)
        assert goals.feedback['distance remaining (m)'] == 2.5 and goals.feedback['recoveries'] == 1
        goals.send(0.0, 'map', [3.0, 0.0])
        assert spin_until(ex, lambda: goals.accepted, timeout=10.0)
        goals.cancel()                                     # the explorer stops the rover: no event for it
        spin_until(ex, lambda: False, timeout=1.0)
        assert events == []
        assert goals.outcomes == {'sent': 4, 'rejected': 1, 'accepted': 3, 'aborted': 1, 'succeeded': 1}
        assert 'nav2 goals' in goals.values()
    finally:
        ex.shutdown()
        server_node.destroy_node()
        client_node.destroy_node()

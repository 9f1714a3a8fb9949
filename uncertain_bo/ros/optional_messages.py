"""Message packages the explorer may be configured to need that a machine may lack (nav2_msgs), and the one line
that says so: one place for the node (:mod:`~uncertain_bo.ros.nav2_goals`, :mod:`~uncertain_bo.ros.rover_inputs`) and
``uncertain-bo check`` (:mod:`~uncertain_bo.ros.check`, which imports no rclpy).

Example:
    >>> from uncertain_bo.ros.optional_messages import goal_interface_problem
    >>> goal_interface_problem('topic') is None       # goal_pose needs nothing optional
    True
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ['NAV2_PARTICLE_CLOUD', 'GOAL_INTERFACE_NEEDS_NAV2', 'PARTICLE_CLOUD_NEEDS_NAV2', 'navigate_to_pose_type',
           'particle_cloud_class', 'goal_interface_problem', 'particle_cloud_problem']

#: the ``particle_cloud_type`` that needs nav2_msgs
NAV2_PARTICLE_CLOUD = 'nav2_msgs/msg/ParticleCloud'
_INSTALL = 'install it: apt install ros-$ROS_DISTRO-nav2-msgs, and source the ROS setup'
GOAL_INTERFACE_NEEDS_NAV2 = (f"parameter 'goal_interface' = 'nav2_action' needs nav2_msgs, which is not importable "
                             f"here ({_INSTALL}), or use 'topic' (goal_pose) or 'auto'")
PARTICLE_CLOUD_NEEDS_NAV2 = (f"parameter 'particle_cloud_type' = {NAV2_PARTICLE_CLOUD!r} needs nav2_msgs, which is "
                             f'not importable here ({_INSTALL}), or subscribe a geometry_msgs/msg/PoseArray cloud')


def navigate_to_pose_type():
    """``nav2_msgs.action.NavigateToPose``, or None where ``nav2_msgs`` is not importable."""
    try:
        from nav2_msgs.action import NavigateToPose
    except ImportError:
        return None
    return NavigateToPose


def particle_cloud_class():
    """``nav2_msgs.msg.ParticleCloud``, or None where ``nav2_msgs`` is not importable."""
    try:
        from nav2_msgs.msg import ParticleCloud
    except ImportError:
        return None
    return ParticleCloud


def goal_interface_problem(choice: str) -> str | None:
    """:data:`GOAL_INTERFACE_NEEDS_NAV2` when ``goal_interface`` ``choice`` is ``'nav2_action'`` and nav2_msgs is
    not importable, else None."""
    return GOAL_INTERFACE_NEEDS_NAV2 if choice == 'nav2_action' and navigate_to_pose_type() is None else None


def particle_cloud_problem(values: Mapping[str, Any]) -> str | None:
    """:data:`PARTICLE_CLOUD_NEEDS_NAV2` when the explorer's ``values`` subscribe a nav2_msgs particle cloud and
    nav2_msgs is not importable, else None."""
    needs = values.get('pose_source') == 'particle_cloud' and values.get('particle_cloud_type') == NAV2_PARTICLE_CLOUD
    return PARTICLE_CLOUD_NEEDS_NAV2 if needs and particle_cloud_class() is None else None

"""The operator view's ROS outputs of an explorer node, and the goal topics of a rover.

:class:`OperatorOutputs` owns what an explorer node (single or team) shows its operator: the publishers of
``~/markers`` (visualization_msgs/MarkerArray), ``~/gp_mean`` and ``~/gp_std`` (nav_msgs/OccupancyGrid, latched
like maps) and ``/diagnostics`` (diagnostic_msgs/DiagnosticArray), the GP maps' state (out of date since the last
measurement or parameter change, their colour scales, the seconds the last ones took) and the diagnostics timer
(``diagnostics_period``, on the steady clock: /diagnostics keeps going while simulated time stands still).
:class:`GoalTopics` owns a rover's ``goal_pose`` (geometry_msgs/PoseStamped) and ``plan`` (nav_msgs/Path)
publishers, both latched. The messages themselves are filled by :mod:`uncertain_bo.ros.operator_view` and
:mod:`uncertain_bo.ros.conversions`; what is shown is the node's to say.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Path as PathMsg
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from ..reporting.operator_view import GridScale
from .conversions import make_path, make_pose_stamped
from .operator_view import gp_maps
from .qos import LATCHED, RELIABLE_10

__all__ = ['OperatorOutputs', 'GoalTopics']


class OperatorOutputs:
    """The operator view's publishers, GP maps' state and diagnostics timer of an explorer node.

    Args:
        node: the publishing node.
        period: seconds between two calls of ``periodic`` (``diagnostics_period``), on the steady clock.
        periodic: what the timer calls (the node publishes its status and markers).

    Attributes:
        markers, diagnostics: the ``~/markers`` and ``/diagnostics`` publishers.
        maps_dirty: the GP maps are out of date (a measurement or a parameter change since they were published).
        map_scales: the ``(mean, std)`` colour scales of the last GP maps, or None before the first.
        map_seconds: wall seconds the last GP maps took, or None before the first.

    Example:
        >>> import rclpy
        >>> from uncertain_bo.ros.operator_outputs import OperatorOutputs
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = rclpy.create_node('explorer', context=ctx)
        >>> view = OperatorOutputs(node, period=1.0, periodic=lambda: None)
        >>> view.markers.topic_name, view.maps_dirty, view.scale_texts()
        ('/explorer/markers', True, [])
        >>> view.set_period(0.5); view.timer.timer_period_ns
        500000000
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node: Node, period: float, periodic: Callable[[], None]):
        self._node = node
        self._periodic = periodic
        self.markers = node.create_publisher(MarkerArray, '~/markers', LATCHED)
        self._mean = node.create_publisher(OccupancyGrid, '~/gp_mean', LATCHED)
        self._std = node.create_publisher(OccupancyGrid, '~/gp_std', LATCHED)
        self.diagnostics = node.create_publisher(DiagnosticArray, '/diagnostics', RELIABLE_10)
        self.maps_dirty = True
        self.map_scales: tuple[GridScale, GridScale] | None = None
        self.map_seconds: float | None = None
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.timer = node.create_timer(period, periodic, clock=self._steady)

    def set_period(self, period: float) -> None:
        """A new ``diagnostics_period`` (s): the timer is made anew."""
        self._node.destroy_timer(self.timer)
        self.timer = self._node.create_timer(period, self._periodic, clock=self._steady)

    def update_maps(self, planner, bounds: Sequence[float], cells: int, frame: str, stamp: float) -> None:
        """Publish ``~/gp_mean`` and ``~/gp_std`` of ``planner`` over ``bounds`` (``[xmin, xmax, ymin, ymax]``, m)
        on ``cells`` cells a side (:func:`~uncertain_bo.ros.operator_view.gp_maps`); the maps are then up to
        date."""
        self.maps_dirty = False
        t0 = time.perf_counter()
        mean_msg, std_msg, self.map_scales = gp_maps(planner, bounds, cells, frame, stamp)
        self._mean.publish(mean_msg)
        self._std.publish(std_msg)
        self.map_seconds = time.perf_counter() - t0

    @property
    def mean_scale(self) -> GridScale | None:
        """The colour scale of ``~/gp_mean`` (the markers' reading colours), or None before the first maps."""
        return self.map_scales[0] if self.map_scales is not None else None

    def scale_texts(self) -> list[str]:
        """The GP maps' colour scales in words (the status marker and /diagnostics show them); none before the
        first maps."""
        if self.map_scales is None:
            return []
        m, s = self.map_scales
        return [m.describe('~/gp_mean (robust mean)'), s.describe('~/gp_std')]


class GoalTopics:
    """A rover's ``goal_pose`` and ``plan`` publishers (latched: a controller that matches later still gets the
    current goal).

    Args:
        node: the publishing node.
        namespace: the rover's namespace (a team's rover), '' for the node's own topics.

    Example:
        >>> import numpy as np, rclpy
        >>> from uncertain_bo.ros.operator_outputs import GoalTopics
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = rclpy.create_node('team_explorer', context=ctx)
        >>> goals = GoalTopics(node, 'rover0')
        >>> goals.names()
        '/rover0/goal_pose and /rover0/plan'
        >>> goals.send(0.0, 'map', np.array([1.0, 2.0]), np.array([4.0, 6.0]))   # no subscriber: nothing to wait for
        >>> goals.acknowledged()()
        True
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node: Node, namespace: str = ''):
        prefix = f'{namespace}/' if namespace else ''
        self.goal = node.create_publisher(PoseStamped, f'{prefix}goal_pose', LATCHED)
        self.plan = node.create_publisher(PathMsg, f'{prefix}plan', LATCHED)

    def names(self) -> str:
        return f'{self.goal.topic_name} and {self.plan.topic_name}'

    def send(self, stamp: float, frame: str, start: np.ndarray, target: np.ndarray, goal: bool = True) -> None:
        """``target`` (``(2,)``, m in ``frame``) on ``goal_pose`` (unless ``goal`` is False: another interface
        sends it) and the line ``start`` -> ``target`` on ``plan``; ``stamp`` in s."""
        if goal:
            self.goal.publish(make_pose_stamped(stamp, frame, target))
        self.plan.publish(make_path(stamp, frame, [start, target]))

    def stop(self, stamp: float, frame: str, position: np.ndarray, heading: float | None,
             goal: bool = True) -> None:
        """Stop at ``position``: a goal there facing ``heading`` (rad; a controller that checks the goal's heading
        does not turn) unless ``goal`` is False, and a one-point ``plan`` (the latched plan must not keep an old
        target for a controller that (re)joins later)."""
        if goal:
            self.goal.publish(make_pose_stamped(stamp, frame, position, heading or 0.0))
        self.plan.publish(make_path(stamp, frame, [position]))

    def acknowledged(self) -> Callable[[], bool]:
        """A predicate, true once every subscriber acknowledged what was published."""
        return lambda: all(pub.wait_for_all_acked(Duration()) for pub in (self.goal, self.plan))

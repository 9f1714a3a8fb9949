"""Nav2's ``NavigateToPose`` action as the explorer's goal interface.

Nav2 takes goals through the ``navigate_to_pose`` action (``nav2_msgs/action/NavigateToPose``: goal
``pose`` + ``behavior_tree``; feedback ``current_pose``, ``navigation_time``, ``estimated_time_remaining``,
``number_of_recoveries``, ``distance_remaining``; result ``error_code`` + ``error_msg``). On a topic a goal that
Nav2 cannot reach is noticed only through ``goal_timeout``; through the action the explorer learns at once:

- **succeeded** -> :meth:`~uncertain_bo.explorer.Explorer.goal_reached`: dwell and measure;
- **rejected** or **aborted** -> :meth:`~uncertain_bo.explorer.Explorer.goal_failed` with Nav2's error code and
  message: the target is skipped (counted as ``goal: rejected by the controller`` / ``goal: aborted by the
  controller``, kept out like a target that could not be measured) and the next one is decided;
- **feedback** -> :attr:`Nav2Goals.feedback`: distance remaining, navigation time, estimated time remaining and
  recoveries, shown in ``/diagnostics``.

The explorer's parameter ``goal_interface`` chooses: ``'nav2_action'`` (this module), ``'topic'`` (``goal_pose``
and ``plan``, for ``pure_pursuit`` and controllers without the action), or ``'auto'``: the action where
``nav2_msgs`` is importable, the topic otherwise. A new goal preempts the running one (Nav2 does that itself);
results of preempted goals are ignored. :meth:`Nav2Goals.cancel` cancels the running goal (a budget's end), and a
goal whose acceptance comes only after that (sent just before it) as soon as it is accepted; :meth:`Nav2Goals.stop`
does the same when the node is shut down (Ctrl-C, SIGTERM) and says when Nav2 has answered.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable

import numpy as np
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient

from .conversions import from_time_msg, make_pose_stamped
from .optional_messages import GOAL_INTERFACE_NEEDS_NAV2, navigate_to_pose_type

__all__ = ['Nav2Goals', 'GOAL_INTERFACES', 'navigate_to_pose_type', 'resolve_goal_interface']

#: the explorer's ``goal_interface`` choices
GOAL_INTERFACES = ('auto', 'topic', 'nav2_action')


def resolve_goal_interface(choice: str) -> tuple[str, Any]:
    """``(interface, action type or None)`` for the ``goal_interface`` parameter.

    Raises:
        ValueError: ``'nav2_action'`` asked for but ``nav2_msgs`` is not importable (the message says how to get it).
    """
    action = navigate_to_pose_type()
    if choice == 'topic' or (choice == 'auto' and action is None):
        return 'topic', None
    if action is None:
        raise ValueError(GOAL_INTERFACE_NEEDS_NAV2)
    return 'nav2_action', action


class Nav2Goals:
    """Sends the explorer's goals as ``NavigateToPose`` goals and reports their outcome (module docstring).

    Args:
        node: the explorer node (callbacks run on its executor).
        action_type: the ``NavigateToPose`` action class.
        action_name: Nav2's action name (``navigate_to_pose``; remappable).
        behavior_tree: the goal's ``behavior_tree`` (empty: Nav2's default).
        reached: called as ``reached()`` when the current goal succeeded.
        failed: called as ``failed(category, detail)`` when it was rejected or aborted.

    Attributes:
        feedback: the current goal's latest feedback as ``{'distance remaining (m)', 'navigation time (s)',
            'estimated time remaining (s)', 'recoveries'}`` (empty before any).
        outcomes: goals by outcome (``'sent'``, ``'accepted'``, ``'rejected'``, ``'succeeded'``, ``'aborted'``,
            ``'canceled'``).

    Example:
        The explorer node builds one where ``goal_interface`` resolves to Nav2's action (``nav2_msgs`` importable;
        else its goals go to ``goal_pose``):

        >>> from uncertain_bo.ros.nav2_goals import navigate_to_pose_type, resolve_goal_interface
        >>> interface, action_type = resolve_goal_interface('auto')
        >>> interface == ('nav2_action' if navigate_to_pose_type() is not None else 'topic')
        True
        >>> resolve_goal_interface('topic')
        ('topic', None)
    """

    def __init__(self, node, action_type, action_name: str, behavior_tree: str,
                 reached: Callable[[], None], failed: Callable[[str, str], None]):
        self.node = node
        self.action_type = action_type
        self.action_name = action_name
        self.behavior_tree = behavior_tree
        self.client = ActionClient(node, action_type, action_name)
        self._reached, self._failed = reached, failed
        self.feedback: dict[str, float] = {}
        self.outcomes: Counter = Counter()
        self._seq = 0
        self._handle = None          # the accepted handle of the current goal
        self._accepted = False
        self._cancelled = False      # the last command was a cancel (no goal sent since)
        self._requests: list = []    # goal requests not answered yet (futures)
        self._cancels: list = []     # cancel requests not answered yet (futures)

    @property
    def accepted(self) -> bool:
        """True once Nav2 accepted the current goal (so a re-send is not needed)."""
        return self._accepted

    def send(self, stamp: float, frame: str, target: np.ndarray) -> None:
        """Send ``target`` ``(2,)`` m in ``frame`` as a new goal (preempting the running one)."""
        self._seq += 1
        seq = self._seq
        self._handle, self._accepted, self.feedback, self._cancelled = None, False, {}, False
        goal = self.action_type.Goal()
        goal.pose = make_pose_stamped(stamp, frame, target)
        goal.behavior_tree = self.behavior_tree
        self.outcomes['sent'] += 1
        if not self.client.server_is_ready():
            self.node.get_logger().warning(
                f"Nav2's action server '{self.action_name}' is not available yet: goal sent anyway "
                '(re-sent every goal_resend_period until accepted)', throttle_duration_sec=10.0)
        future = self.client.send_goal_async(goal, feedback_callback=lambda fb: self._on_feedback(seq, fb))
        self._requests.append(future)
        future.add_done_callback(lambda f: self._on_response(seq, f))

    def cancel(self) -> None:
        """Cancel the running goal (Nav2 stops the robot), and a goal sent before but not answered yet as soon as
        Nav2 accepts it."""
        self._seq += 1      # its result no longer concerns the explorer
        self._cancelled = True
        handle, self._handle, self._accepted = self._handle, None, False
        if handle is not None:
            self._cancel(handle)

    def stop(self) -> Callable[[], bool]:
        """:meth:`cancel`, for a node that is shutting down: returns a predicate that is true once Nav2 has answered
        every goal and cancel request (spin the node until then; a goal it accepts meanwhile is cancelled)."""
        if self._handle is not None or self._requests:
            self.node.get_logger().info(f"cancelling the goal sent to Nav2's {self.action_name} action")
        self.cancel()
        return lambda: not self._requests and all(f.done() for f in self._cancels)

    def _cancel(self, handle) -> None:
        self._cancels = [f for f in self._cancels if not f.done()] + [handle.cancel_goal_async()]

    # ------------------------------------------------------------ callbacks (node executor)
    def _on_response(self, seq: int, future) -> None:
        if future in self._requests:
            self._requests.remove(future)
        if seq != self._seq:
            handle = None if future.exception() is not None else future.result()
            if self._cancelled and handle is not None and handle.accepted:
                self._cancel(handle)   # accepted after the explorer cancelled it: it must not drive on
            return
        try:
            handle = future.result()
        except Exception as exc:  # noqa: BLE001 - a failed request is a rejected goal, with the reason
            self.outcomes['rejected'] += 1
            self._failed('rejected by the controller', f'the goal request failed: {exc}')
            return
        if not handle.accepted:
            self.outcomes['rejected'] += 1
            self._failed('rejected by the controller', 'Nav2 rejected the goal')
            return
        self.outcomes['accepted'] += 1
        self._handle, self._accepted = handle, True
        handle.get_result_async().add_done_callback(lambda f: self._on_result(seq, f))

    def _on_feedback(self, seq: int, msg) -> None:
        if seq != self._seq:
            return
        fb = msg.feedback
        self.feedback = {'distance remaining (m)': float(fb.distance_remaining),
                         'navigation time (s)': from_time_msg(fb.navigation_time),
                         'estimated time remaining (s)': from_time_msg(fb.estimated_time_remaining),
                         'recoveries': int(fb.number_of_recoveries)}

    def _on_result(self, seq: int, future) -> None:
        if seq != self._seq:
            return
        self._handle = None
        try:
            response = future.result()
        except Exception as exc:  # noqa: BLE001
            self.outcomes['aborted'] += 1
            self._failed('aborted by the controller', f'no result: {exc}')
            return
        status = response.status
        if status == GoalStatus.STATUS_SUCCEEDED:
            self.outcomes['succeeded'] += 1
            self._reached()
        elif status == GoalStatus.STATUS_CANCELED:
            self.outcomes['canceled'] += 1   # by someone else (RViz, an operator): like an abort for the explorer
            self._failed('canceled by the controller', self._reason(response.result, 'the goal was canceled'))
        else:
            self.outcomes['aborted'] += 1
            self._failed('aborted by the controller', self._reason(response.result, f'status {status}'))

    @staticmethod
    def _reason(result, default: str) -> str:
        code = getattr(result, 'error_code', None)
        msg = getattr(result, 'error_msg', '') or ''
        if code is None or (code == 0 and not msg):
            return default
        return f'error_code {code}' + (f': {msg}' if msg else '')

    def values(self) -> dict[str, str]:
        """Diagnostics key/values: the current goal's feedback and the outcome counts."""
        out = {f'nav2 {k}': (f'{v:.2f}' if isinstance(v, float) and math.isfinite(v) else str(v))
               for k, v in self.feedback.items()}
        out['nav2 goals'] = ', '.join(f'{n} {k}' for k, n in sorted(self.outcomes.items())) or 'none yet'
        return out

"""One rover's inputs to an explorer: its pose-estimate and reading subscriptions, converted and handed to its
:class:`~uncertain_bo.explorer.Explorer`.

Used by the explorer node (one rover, topics in the node's namespace) and by the team explorer node (one
:class:`RoverInputs` per rover, topics under the rover's namespace: ``<ns>/odometry/filtered``, ``<ns>/reading``).
The pose topic and type follow ``pose_source`` (:data:`POSE_SOURCES`), the reading's ``reading_type``. What a
message becomes in the explorer is :class:`RoverMessages`, which a replay of a recording uses as well. Poses are
subscribed best effort (compatible with reliable and best-effort publishers, e.g. Gazebo bridges); particle clouds
are read from the serialised message with NumPy and subsampled to ``cloud_receive_limit`` particles on receipt.

A particle cloud is one of two message types (``particle_cloud_type``, :data:`PARTICLE_CLOUD_TYPES`), named as the
stacks name them: ``geometry_msgs/msg/PoseArray`` (equally weighted particles: this package's ``particle_filter``,
AMCL before Nav2) or ``nav2_msgs/msg/ParticleCloud`` (what Nav2's AMCL publishes on ``particle_cloud``: each particle
a pose and a weight; the weights become the empirical location distribution's weights, checked by
:func:`uncertain_bo.distributions.covariance.weights_problem` and normalised). ``nav2_msgs`` is imported only when that
type is asked for.

Each input is named by its resolved topic (remappings and namespace applied) and its type, e.g.
``/soil/moisture (std_msgs/msg/Float64)``: in the node's start-up line (:meth:`RoverInputs.describe`) and in the
explorer's warnings about it (:attr:`~uncertain_bo.explorer.inputs.InputStreams.sources`). :class:`InputWatch`
says what a node is still waiting for: every input (and ``/clock`` under ``use_sim_time``) from which nothing has
arrived, with what publishes on its topic, :data:`WAIT_FIRST_REPORT` s after it was subscribed and then every
:data:`WAIT_REPORT_PERIOD` s until it arrives.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable

import numpy as np
from geometry_msgs.msg import PoseArray, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from ..explorer import Explorer, PoseEstimate, Reading
from ..parameters.specs import ParameterError
from .conversions import from_time_msg, quaternion_to_yaw, ros_covariance_to_planar, ros_covariance_to_xy
from .optional_messages import PARTICLE_CLOUD_NEEDS_NAV2, particle_cloud_class
from .particle_clouds import (particle_cloud_from_cdr, particle_cloud_to_particles, pose_array_from_cdr,
                              pose_array_to_particles)
from .reading_messages import READING_TYPES, reading_from_msg

__all__ = ['RoverInputs', 'RoverMessages', 'InputWatch', 'POSE_SOURCES', 'PARTICLE_CLOUD_TYPES', 'pose_message_type',
           'pose_estimate_from_msg', 'node_clock_now', 'node_clock_ns', 'seconds', 'sim_time', 'type_name',
           'CLOCK_TOPIC', 'CLOCK_TYPE', 'WAIT_FIRST_REPORT', 'WAIT_REPORT_PERIOD']

#: wall seconds after subscribing before an input from which nothing arrived is reported (then every
#: WAIT_REPORT_PERIOD s until it arrives)
WAIT_FIRST_REPORT = 5.0
WAIT_REPORT_PERIOD = 30.0

#: where a node on simulated time takes its clock from
CLOCK_TOPIC, CLOCK_TYPE = '/clock', 'rosgraph_msgs/msg/Clock'

#: pose_source -> (message type, topic)
POSE_SOURCES = {
    'odometry': (Odometry, 'odometry/filtered'),
    'pose_with_covariance': (PoseWithCovarianceStamped, 'pose'),
    'particle_cloud': (PoseArray, 'particle_cloud'),
}

#: ``particle_cloud_type`` -> (message class or None when imported on demand, reader of the serialised message)
PARTICLE_CLOUD_TYPES = {
    'geometry_msgs/msg/PoseArray': (PoseArray, pose_array_from_cdr),
    'nav2_msgs/msg/ParticleCloud': (None, particle_cloud_from_cdr),
}


def pose_message_type(pose_source: str, particle_cloud_type: str = 'geometry_msgs/msg/PoseArray'):
    """The message class subscribed for ``pose_source`` (a particle cloud's: ``particle_cloud_type``).

    Raises:
        uncertain_bo.parameters.specs.ParameterError: ``nav2_msgs/msg/ParticleCloud`` asked for but ``nav2_msgs`` is not
            importable (the message says how to get it), or an unknown type.
    """
    if pose_source != 'particle_cloud':
        return POSE_SOURCES[pose_source][0]
    if particle_cloud_type not in PARTICLE_CLOUD_TYPES:
        raise ParameterError(f"parameter 'particle_cloud_type' = {particle_cloud_type!r}: one of "
                             f"{', '.join(PARTICLE_CLOUD_TYPES)}")
    cls = PARTICLE_CLOUD_TYPES[particle_cloud_type][0]
    if cls is not None:
        return cls
    cls = particle_cloud_class()
    if cls is None:
        raise ParameterError(PARTICLE_CLOUD_NEEDS_NAV2)
    return cls


#: pose estimates: best effort (compatible with reliable and best-effort publishers), keep last 10
_POSE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


def pose_estimate_from_msg(msg, pose_source: str) -> PoseEstimate:
    """:class:`~uncertain_bo.explorer.PoseEstimate` of a pose message (not validated: the explorer does).

    Raises:
        ValueError: the message cannot be read (bad quaternion, empty particle cloud, ...).
    """
    if pose_source in ('odometry', 'pose_with_covariance'):
        # the heading only matters with a sensor_offset (input_checks.heading_problem): an orientation that is no
        # rotation (hand-written publishers leave it all-zero) must not cost the measurement otherwise
        pos = msg.pose.pose.position
        try:
            yaw = quaternion_to_yaw(msg.pose.pose.orientation)
        except ValueError:
            yaw = None
        return PoseEstimate(from_time_msg(msg.header.stamp), msg.header.frame_id,
                            np.array([pos.x, pos.y], dtype=float), ros_covariance_to_xy(msg.pose.covariance),
                            yaw=yaw, yaw_cov=ros_covariance_to_planar(msg.pose.covariance)[2])
    if pose_source == 'particle_cloud':
        cloud = pose_array_to_particles(msg) if hasattr(msg, 'poses') else particle_cloud_to_particles(msg)
        return PoseEstimate.from_particles(cloud.stamp, cloud.frame_id, cloud.samples, cloud.weights, cloud.yaws)
    raise ValueError(f'unknown pose_source {pose_source!r}')


def type_name(msg_type) -> str:
    """The ROS name of a message class, as ``ros2 topic info`` writes it: ``'nav_msgs/msg/Odometry'``."""
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


def sim_time(node: Node) -> bool:
    """True when ``node`` runs on simulated time (``use_sim_time``: its clock comes from :data:`CLOCK_TOPIC`)."""
    return bool(node.get_parameter('use_sim_time').value)


def node_clock_ns(node: Node) -> int | None:
    """``node``'s clock in integer ns, or None while it is not running yet (simulated time before the first /clock)."""
    ns = node.get_clock().now().nanoseconds
    return ns if ns > 0 else None


def seconds(ns: int | None) -> float | None:
    """A clock reading in integer ns as the explorer takes it, in s (None stays None): every arrival time the
    explorer is given is computed so, live and in a replay (a recording keeps the integer)."""
    return ns * 1e-9 if ns is not None else None


def node_clock_now(node: Node) -> float | None:
    """``node``'s clock in s, or None while it is not running yet (simulated time before the first /clock)."""
    return seconds(node_clock_ns(node))


class RoverMessages:
    """One rover's pose-estimate and reading messages into its ``explorer``, without a node: each message is converted
    (a particle cloud read from its serialised bytes and subsampled to ``cloud_receive_limit``), refused and counted
    when it cannot be read, and handed in with ``now``, the time it arrived in s (None: no clock yet). The explorer
    node's subscriptions (:class:`RoverInputs`) and the replay of a recording
    (:mod:`uncertain_bo.ros.replay`) both hand their messages in here, so a replayed message reaches the explorer
    exactly as the live one did.

    Args:
        explorer: the rover's measurement cycle.
        params: validated explorer node parameters (``pose_source``, ``particle_cloud_type``, ``reading_type``,
            ``cloud_receive_limit``, ``seed``).
        seed: extra entropy of the cloud subsampling's random stream (rovers of one node differ by it).

    Attributes:
        heading: yaw (rad) of the latest pose message with an orientation (odometry, pose with covariance),
            None before one (and for particle clouds): the explorer's stop goal faces where the rover does.

    Example:
        Messages handed to an explorer without a node (what the replay does):

        >>> import numpy as np
        >>> from sensor_msgs.msg import Temperature
        >>> from uncertain_bo.explorer import Explorer, planner_from_parameters
        >>> from uncertain_bo.parameters.specs import validate
        >>> from uncertain_bo.ros.conversions import make_odometry
        >>> from uncertain_bo.ros.explorer_parameters import EXPLORER_NODE_PARAMS
        >>> from uncertain_bo.ros.rover_inputs import RoverMessages
        >>> params = validate(EXPLORER_NODE_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0})
        >>> explorer = Explorer(planner_from_parameters(params), None, params)
        >>> messages = RoverMessages(explorer, params)
        >>> odometry = make_odometry(1.0, 'map', 'base_link', [5.0, 5.0], 0.5, np.diag([0.1, 0.1, 0, 0, 0, 0.01]))
        >>> messages.pose(odometry, now=1.0)
        >>> explorer.latest_pose.xy, messages.heading
        (array([5., 5.]), 0.5)
        >>> messages.reading(Temperature(temperature=float('nan')), 1.1)  # unreadable: refused and counted
        >>> dict(explorer.rejected)
        {'reading: non-finite value': 1}
    """

    def __init__(self, explorer: Explorer, params: dict[str, Any], seed: int = 0):
        self.explorer, self.p = explorer, params
        entropy = [int(params['seed']), 0xC10D] + ([int(seed)] if seed else [])
        self._cloud_rng = np.random.default_rng(np.random.SeedSequence(entropy))
        self._read_cloud = PARTICLE_CLOUD_TYPES[params['particle_cloud_type']][1]
        self.heading: float | None = None

    def pose(self, msg, now: float | None) -> None:
        """A deserialised pose message (``odometry``, ``pose_with_covariance``; a PoseArray or ParticleCloud object
        too) that arrived at ``now``."""
        try:
            self.heading = quaternion_to_yaw(msg.pose.pose.orientation)
        except (ValueError, AttributeError):
            pass                 # no orientation (hand-written publishers leave it all-zero): the last one stays
        try:
            pose = pose_estimate_from_msg(msg, self.p['pose_source'])
        except (ValueError, TypeError, IndexError) as exc:
            self.explorer.received['poses'] += 1
            self.explorer.reject('pose', 'malformed message', str(exc))
            return
        self.explorer.on_pose(pose, now)

    def cloud(self, raw: bytes, now: float | None) -> None:
        """A serialised particle cloud (of ``particle_cloud_type``) that arrived at ``now``."""
        try:
            cloud = self._read_cloud(raw, self.p['cloud_receive_limit'], self._cloud_rng)
            pose = PoseEstimate.from_particles(cloud.stamp, cloud.frame_id, cloud.samples, cloud.weights, cloud.yaws)
        except (ValueError, TypeError, IndexError) as exc:
            self.explorer.received['poses'] += 1
            self.explorer.reject('pose', 'malformed message', str(exc))
            return
        self.explorer.on_pose(pose, now)

    def reading(self, msg, now: float | None) -> None:
        """A deserialised reading message (of ``reading_type``) that arrived at ``now``."""
        try:
            stamp, value, variance = reading_from_msg(msg, self.p['reading_type'])
        except (ValueError, TypeError) as exc:
            self.explorer.received['readings'] += 1
            self.explorer.reject('reading', 'malformed message', str(exc))
            return
        self.explorer.on_reading(Reading(stamp, value, variance), now)


class RoverInputs(RoverMessages):
    """Subscribes one rover's pose estimate and reading on ``node`` and feeds them to ``explorer``
    (:class:`RoverMessages`).

    Args:
        node: the node that owns the subscriptions (its clock times the arrivals).
        explorer: the rover's measurement cycle.
        params: validated explorer node parameters (``pose_source``, ``particle_cloud_type``, ``reading_type``,
            ``cloud_receive_limit``, ``seed``).
        namespace: prefix of the topics (``'rover0'`` -> ``rover0/odometry/filtered``, ``rover0/reading``); ''
            for the node's own topics.
        seed: extra entropy of the cloud subsampling's random stream (rovers of one node differ by it).

    Attributes:
        last_pose, last_reading: node-clock time (s) of the latest pose message and reading message that
            arrived (valid or not), None before the first: a team drops a rover silent for too long.
        heading: as :class:`RoverMessages`.
        types: ``'pose'`` / ``'reading'`` -> the message class subscribed.
        subscribed: ``time.monotonic()`` when the subscriptions were made (:class:`InputWatch` counts from it).
        tap: None, or ``tap(what, message, ns)`` called with every message (``'pose'``, ``'reading'``; a cloud as
            its serialised bytes) and its arrival time in integer ns (None: no clock yet) before it is handed in:
            a recording (:mod:`uncertain_bo.ros.recording`) keeps them in the order the explorer got them.

    Raises:
        uncertain_bo.parameters.specs.ParameterError: a ``nav2_msgs`` cloud type where ``nav2_msgs`` is not importable.

    Example:
        >>> import rclpy
        >>> from uncertain_bo.explorer import Explorer, planner_from_parameters
        >>> from uncertain_bo.parameters.specs import validate
        >>> from uncertain_bo.ros.explorer_parameters import EXPLORER_NODE_PARAMS
        >>> from uncertain_bo.ros.rover_inputs import RoverInputs
        >>> params = validate(EXPLORER_NODE_PARAMS, {'pose_source': 'pose_with_covariance'})
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = rclpy.create_node('team_explorer', context=ctx)
        >>> explorer = Explorer(planner_from_parameters(params), None, params)
        >>> inputs = RoverInputs(node, explorer, params, namespace='rover1')
        >>> inputs.topic('pose'), inputs.topic('reading')
        ('/rover1/pose', '/rover1/reading')
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node: Node, explorer: Explorer, params: dict[str, Any], namespace: str = '', seed: int = 0):
        super().__init__(explorer, params, seed)
        self.node = node
        prefix = f'{namespace}/' if namespace else ''
        self.last_pose: float | None = None
        self.last_reading: float | None = None
        self.tap: Callable[[str, Any, int | None], None] | None = None
        topic = POSE_SOURCES[params['pose_source']][1]
        msg_type = pose_message_type(params['pose_source'], params['particle_cloud_type'])
        self.types = {'pose': msg_type, 'reading': READING_TYPES[params['reading_type']][0]}
        #: input -> the parameter that chose its message type (named when nothing arrives on it)
        self.type_parameters = {'pose': 'particle_cloud_type' if params['pose_source'] == 'particle_cloud'
                                else 'pose_source', 'reading': 'reading_type'}
        if params['pose_source'] == 'particle_cloud':
            # raw: read the serialised cloud with NumPy and subsample it before anything else
            self.pose_sub = node.create_subscription(msg_type, prefix + topic, self.on_cloud_raw,
                                                     qos_profile_sensor_data, raw=True)
        else:
            # best effort matches both reliable and best-effort publishers (robot_localization, Gazebo
            # bridges); a short queue so a busy moment does not leave a backlog of old poses
            self.pose_sub = node.create_subscription(msg_type, prefix + topic, self.on_pose_msg, _POSE_QOS)
        self.reading_sub = node.create_subscription(self.types['reading'], prefix + 'reading', self.on_reading,
                                                    qos_profile_sensor_data)
        self.subscribed = time.monotonic()
        explorer.inputs.sources.update({what: self.source(what) for what in self.types})

    def topic(self, what: str) -> str:
        """The resolved topic of input ``what`` (``'pose'``, ``'reading'``): remappings and namespace applied."""
        return (self.pose_sub if what == 'pose' else self.reading_sub).topic_name

    def source(self, what: str) -> str:
        """Input ``what``'s topic and type: ``'/rover0/odometry/filtered (nav_msgs/msg/Odometry)'``."""
        return f'{self.topic(what)} ({type_name(self.types[what])})'

    def describe(self) -> str:
        """The inputs for a start-up line: ``'pose on /odometry/filtered (nav_msgs/msg/Odometry), reading on ...'``."""
        return ', '.join(self.explorer.inputs.named(what) for what in self.types)

    def heard(self, what: str) -> bool:
        """True once a message (valid or not) arrived on input ``what``."""
        return self.explorer.received['poses' if what == 'pose' else 'readings'] > 0

    def arrival_ns(self, info) -> int | None:
        """When a message arrived, integer ns on the node clock (None before the clock runs).

        On a wall clock: the middleware's reception stamp, so that a message that waited in the node's
        subscription queue (the executor was busy) is judged by when it arrived, not by when its callback ran:
        a pose is stale when the localisation lags, not when this node was busy; a header-less reading is stamped
        with the moment it came in. Under simulated time (the reception stamp is a wall time): the node clock.
        """
        if not self.node.get_clock().ros_time_is_active:
            ns = info.get('received_timestamp', 0) if info else 0
            if ns > 0:
                return int(ns)
        return node_clock_ns(self.node)

    def _arrived(self, what: str, msg, info) -> float | None:
        """The arrival time in s of input ``what``'s ``msg`` (:meth:`arrival_ns`), after the :attr:`tap` has it."""
        ns = self.arrival_ns(info)
        if self.tap is not None:
            self.tap(what, msg, ns)
        return seconds(ns)

    def on_pose_msg(self, msg, info) -> None:
        self.last_pose = node_clock_now(self.node)
        self.pose(msg, self._arrived('pose', msg, info))

    def on_cloud_raw(self, raw: bytes, info) -> None:
        self.last_pose = node_clock_now(self.node)
        self.cloud(raw, self._arrived('pose', raw, info))

    def on_reading(self, msg, info) -> None:
        self.last_reading = node_clock_now(self.node)
        self.reading(msg, self._arrived('reading', msg, info))


class InputWatch:
    """Tells the operator what a node is still waiting for (module docstring): on a steady clock (it runs while no
    ``/clock`` does), a warning naming every input from which nothing has arrived, with its topic, its type and
    what publishes there (no publisher; publishers of another type; publishers but nothing received yet).

    Args:
        node: the node (its logger; its graph for the publishers).
        inputs: returns the inputs to watch now (a team's active rovers).

    Example:
        >>> import rclpy
        >>> from uncertain_bo.explorer import Explorer, planner_from_parameters
        >>> from uncertain_bo.parameters.specs import validate
        >>> from uncertain_bo.ros.explorer_parameters import EXPLORER_NODE_PARAMS
        >>> from uncertain_bo.ros.rover_inputs import InputWatch, RoverInputs
        >>> params = validate(EXPLORER_NODE_PARAMS, {})
        >>> ctx = rclpy.Context(); ctx.init()
        >>> node = rclpy.create_node('explorer', context=ctx)
        >>> inputs = RoverInputs(node, Explorer(planner_from_parameters(params), None, params), params)
        >>> watch = InputWatch(node, lambda: [inputs])
        >>> import time
        >>> [(what, topic) for what, topic, *_ in watch.waiting(now=time.monotonic())]   # nothing has arrived yet
        [('pose', '/odometry/filtered'), ('reading', '/reading')]
        >>> node.destroy_node(); ctx.shutdown()
    """

    def __init__(self, node: Node, inputs: Callable[[], Iterable[RoverInputs]]):
        self.node, self.inputs = node, inputs
        self._started = time.monotonic()
        self._reported: dict[str, float] = {}   # topic -> time.monotonic() of its last report
        self.timer = node.create_timer(1.0, self.check, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def waiting(self, now: float) -> list[tuple[str, str, Any, float, str]]:
        """``(what, topic, type name, seconds waited, the parameter that chose the type)`` of every input from
        which nothing has arrived yet; ``/clock`` first (under ``use_sim_time``, while the node clock does not
        run)."""
        out = []
        if sim_time(self.node) and node_clock_now(self.node) is None:
            out.append(('simulated time (use_sim_time is true)', CLOCK_TOPIC, CLOCK_TYPE, now - self._started, ''))
        for inputs in self.inputs():
            out += [(what, inputs.topic(what), type_name(inputs.types[what]), now - inputs.subscribed,
                     inputs.type_parameters[what]) for what in inputs.types if not inputs.heard(what)]
        return out

    def check(self) -> None:
        """Warn about the inputs waited for longer than :data:`WAIT_FIRST_REPORT` s (each again every
        :data:`WAIT_REPORT_PERIOD` s)."""
        now = time.monotonic()
        due = [w for w in self.waiting(now) if w[3] >= WAIT_FIRST_REPORT
               and now - self._reported.get(w[1], -float('inf')) >= WAIT_REPORT_PERIOD]
        if not due:
            return
        for w in due:
            self._reported[w[1]] = now
        self.node.get_logger().warning('waiting: ' + '; '.join(
            f'{topic} ({expected}): no {what} for {waited:.0f} s, {self.publishers(topic, expected, parameter)}'
            for what, topic, expected, waited, parameter in due))

    def publishers(self, topic: str, expected: str, parameter: str = '') -> str:
        """What publishes on ``topic``, for a field engineer: nothing, another type than ``expected`` (chosen by
        ``parameter``), or publishers that have sent nothing yet."""
        infos = self.node.get_publishers_info_by_topic(topic)
        if not infos:
            return 'no publisher (is it running, and is the topic remapped?)'
        nodes = ', '.join(sorted({f'{i.node_namespace.rstrip("/")}/{i.node_name}' for i in infos
                                  if 'UNKNOWN' not in i.node_name})) or f'{len(infos)} publisher(s)'
        wrong = sorted({i.topic_type for i in infos if i.topic_type != expected})
        if wrong:
            return (f'{nodes} publishes {", ".join(wrong)}, not {expected}'
                    + (f' (parameter {parameter})' if parameter else ''))
        return f'{nodes} publishes it, but nothing has arrived (a QoS mismatch, or nothing published yet)'

"""ROS-free simulated world: rover + wheel odometry + position fix + field sensor on one sim clock.

:class:`SimWorld` is what the ``sim_rover`` node wraps and what an in-process mission runner drives
directly. Each :meth:`SimWorld.step` executes a velocity command for ``1 / sim_rate`` simulated seconds
and returns the measurements due at the new time: wheel odometry (every step), a position fix (at
``fix_rate`` Hz; noisier, or lost, inside the optional GNSS-degraded zone of
:class:`~uncertain_bo.sim.rover.PositionFix`, with the true covariance), a field reading (at ``reading_rate``
Hz, taken at the true position) and the ground truth. :attr:`SimWorld.distance_travelled` is the odometer.

GNSS-denied operation (:mod:`uncertain_bo.sim.drift`): the odometry drifts (its source, white noise and a
constant scale error drawn per run), absolute fixes come only at known places (``fix_beacons``) or from the
surfacing action (:mod:`uncertain_bo.sim.surfacing`: :meth:`SimWorld.request_surfacing`, or every
``surface_every`` metres), which stops the rover for ``surface_duration`` seconds. Every absolute fix is kept in
:attr:`SimWorld.fix_events` (time, source, true and measured position, covariance), so a smoother or a revision of
past poses can be checked against the truth.

Everything is deterministic given ``seed``: slip, odometry, fix and reading noise use independent random
streams spawned from it, so changing e.g. the fix rate does not change the slip realisation. Fix dropouts in
the degraded zone draw from a fifth stream, the odometry's scale error from a sixth and the surfacing fixes from
a seventh, so a world without them is bit-for-bit the one before they existed, and none of them changes the slip,
the odometry's white noise or the readings.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from uncertain_bo.parameters.specs import Param, ParameterError, validate
from uncertain_bo.sim.field import DEFAULT_EXTENT, FIELD_NAMES, Field
from uncertain_bo.sim.rover import (FIX_PARAMS, ODOMETRY_PARAMS, ROVER_PARAMS, DiffDriveRover, PositionFix,
                                    RoverState, WheelOdometry)
from uncertain_bo.sim.sensor import SENSOR_PARAMS, FieldSensor, absolute_noise_rule
from uncertain_bo.sim.surfacing import SURFACING_PARAMS, Surfacing

__all__ = ['SIM_PARAMS', 'WORLD_PARAMS', 'SimWorld', 'SimStep', 'OdometryMeasurement', 'FixMeasurement',
           'FixEvent', 'Reading', 'start_outside']

SIM_PARAMS = [
    Param('field', 'jacksboro-smooth', 'ground-truth field (field units, metres of elevation for the named ones): '
          f'a name ({", ".join(FIELD_NAMES)}: real USGS elevation; -rough = the whole DEM, ridges a metre or '
          'two wide on 200 m, -smooth = its central 1/8 zoomed, features about ten metres wide) or a path to a '
          '.npz grid or a .csv of x,y,value measurements', read_only=True),
    Param('field_extent', list(DEFAULT_EXTENT), 'rectangle [xmin, xmax, ymin, ymax] (m, map frame) the '
          'field is mapped onto (built-in and .npz fields) or gridded over (.csv)', range=(-1e7, 1e7),
          length=4, read_only=True),
    Param('sim_rate', 10.0, 'simulation steps per simulated second (Hz); one wheel-odometry message and '
          'one control cycle per step', range=(1.0, 1000.0), read_only=True),
    Param('initial_x', 100.0, 'true initial x of the rover (m, map frame)', range=(-1e7, 1e7),
          read_only=True),
    Param('initial_y', 100.0, 'true initial y of the rover (m, map frame)', range=(-1e7, 1e7),
          read_only=True),
    Param('initial_yaw', 0.0, 'true initial heading (rad, counter-clockwise from +x/east)',
          range=(-math.pi, math.pi), read_only=True),
    Param('seed', 0, 'seed of all simulation noise (slip, odometry, fixes, readings); same seed and '
          'commands give the same run', range=(0, 2 ** 31 - 1), read_only=True),
    Param('localiser', 'ekf', "localisation filter of the simulated rover: 'ekf' (ekf node: odometry/filtered "
          "with covariance) or 'pf' (particle_filter node: particle_cloud, pose and odometry/filtered); chosen "
          'by the graph (uncertain-bo demo, sim.launch.py) and the in-process mission, not used by sim_rover '
          'itself', choices=('ekf', 'pf'), read_only=True),
]

#: fix events a world keeps (about 28 h of fixes at 1 Hz; bounds the memory of a long-running simulation)
MAX_FIX_EVENTS = 100_000

#: every parameter of the simulated world
WORLD_PARAMS = SIM_PARAMS + ROVER_PARAMS + ODOMETRY_PARAMS + FIX_PARAMS + SURFACING_PARAMS + SENSOR_PARAMS


@dataclass
class OdometryMeasurement:
    """Odometry of one step: measured body twist and its covariance.

    Attributes:
        v, w: measured forward speed (m/s) and yaw rate (rad/s).
        vel_cov: (3, 3) covariance over (v, vy, w) of the error w.r.t. the true ground motion.
        twist_cov: (6, 6) covariance over (vx, vy, vz, wx, wy, wz), as in nav_msgs/Odometry.
        vy: measured sideways speed (m/s; 0 but for a ``'ground_velocity'`` source).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> odometry = SimWorld(hill, {'seed': 0}).step(1.0, 0.0).odometry
        >>> round(odometry.v, 1), odometry.vel_cov.shape, odometry.twist_cov.shape     # nav_msgs/Odometry's 6 x 6
        (0.1, (3, 3), (6, 6))
    """

    v: float
    w: float
    vel_cov: np.ndarray
    twist_cov: np.ndarray
    vy: float = 0.0


@dataclass
class FixMeasurement:
    """Absolute position fix: ``xy`` (2,) metres, map frame, with covariance ``cov`` (2, 2) m².

    Example:
        A fix (every second at ``fix_rate`` 1 Hz) with the covariance it is published with:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> world = SimWorld(hill, {'seed': 0, 'fix_std': 0.5})
        >>> steps = [world.step(1.0, 0.0) for _ in range(10)]
        >>> [s.fix is not None for s in steps].count(True), steps[-1].fix.cov.tolist()
        (1, [[0.25, 0.0], [0.0, 0.25]])
    """

    xy: np.ndarray
    cov: np.ndarray


@dataclass
class FixEvent:
    """One absolute fix the world gave.

    Attributes:
        t: its time (s).
        source: ``'gnss'`` (fixes everywhere, ``fix_rate``), ``'beacon'`` (a fix source of ``fix_beacons``) or
            ``'surface'`` (the surfacing action).
        truth: where the rover truly was (2,), m.
        xy: the fix (2,), m.
        cov: its covariance (2, 2), m².

    Example:
        Every absolute fix is kept with the truth, to check a smoother against it:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> world = SimWorld(hill, {'seed': 0, 'fix_std': 0.5})
        >>> for _ in range(20):
        ...     step = world.step(1.0, 0.0)
        >>> [(event.t, event.source) for event in world.fix_events]
        [(1.0, 'gnss'), (2.0, 'gnss')]
        >>> bool(np.linalg.norm(world.fix_events[0].xy - world.fix_events[0].truth) < 3 * 0.5 * 2 ** 0.5)
        True
    """

    t: float
    source: str
    truth: np.ndarray
    xy: np.ndarray
    cov: np.ndarray


@dataclass
class Reading:
    """Field reading ``value`` (field units) with noise ``variance`` (field units²).

    Example:
        The field sensor reads the hill's peak (1.0) at the default start (100, 100) m:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> world = SimWorld(hill, {'seed': 0, 'reading_noise_std': 0.01})
        >>> reading = [world.step(0.0, 0.0) for _ in range(10)][-1].reading
        >>> round(reading.value, 1), round(reading.variance, 6)
        (1.0, 0.0001)
    """

    value: float
    variance: float


@dataclass
class SimStep:
    """Everything that happened in one simulation step.

    Attributes:
        t: simulated time (s) at the end of the step; all measurements are stamped with it.
        step: step index (0 for :meth:`SimWorld.initial_step`).
        truth: true rover state (pose (3,), velocities).
        odometry: wheel odometry over the step (every step).
        fix: position fix when due, else None.
        reading: field reading when due (and not dropped out), else None.
        reading_due: True when a reading was due (even if it dropped out).
        fix_due: True when a fix was due (even if it was lost in the degraded zone or out of every fix
            source's reach).
        surfacing: True while the surfacing action holds the rover (the commands of this step were ignored).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> world = SimWorld(hill, {'seed': 0})
        >>> first, tenth = world.step(1.0, 0.0), [world.step(1.0, 0.0) for _ in range(9)][-1]
        >>> first.t, first.fix_due, first.reading is None, tenth.t, tenth.fix_due, tenth.reading is None
        (0.1, False, True, 1.0, True, False)
    """

    t: float
    step: int
    truth: RoverState
    odometry: OdometryMeasurement
    fix: FixMeasurement | None
    reading: Reading | None
    reading_due: bool
    fix_due: bool = False
    surfacing: bool = False


def start_outside(params: Mapping[str, Any], field: Field) -> str | None:
    """Why the rover's true start ``(initial_x, initial_y)`` of ``params`` lies outside ``field`` (its rectangle,
    sim_rover's ``field_extent``), one line saying what to set; None when it lies inside. A rover outside the field
    reads the value of its nearest edge (a simulated sensor outside a Gazebo world reads nothing)."""
    x, y = float(params['initial_x']), float(params['initial_y'])
    xmin, xmax, ymin, ymax = field.bounds
    if xmin <= x <= xmax and ymin <= y <= ymax:
        return None
    return (f"sim_rover's start (initial_x, initial_y) = ({x:g}, {y:g}) m is outside the field's field_extent "
            f'[{xmin:g}, {xmax:g}, {ymin:g}, {ymax:g}]: set initial_x and initial_y inside it (and the ekf\'s '
            'initial_x, initial_y to match), or set field_extent around the start')


class SimWorld:
    """Simulated rover, its sensors and one sim clock.

    Args:
        field: the ground-truth field (default: ``Field.load(params['field'], params['field_extent'])``).
        params: values for ``WORLD_PARAMS`` (missing names take defaults). A dict holding every name is kept
            by reference, so changing noise parameters in it takes effect at the next step.
        seed: overrides ``params['seed']``.

    Raises:
        ParameterError: a parameter is invalid, or the rover starts outside the field (:func:`start_outside`).
        FieldError: the field specification cannot be loaded.

    Example:
        A rover starting at (100, 100) m drives east at 1.5 m/s for 10 simulated seconds (``sim_rate`` 10 Hz)
        with wheel slip; the odometer counts the true path:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> world = SimWorld(hill, {'seed': 0})
        >>> for _ in range(100):
        ...     step = world.step(1.5, 0.0)
        >>> world.t, world.true_pose[:2].round(0).tolist(), round(world.distance_travelled, 0)
        (10.0, [114.0, 100.0], 14.0)
    """

    def __init__(self, field: Field | None = None, params: Mapping[str, Any] | None = None,
                 seed: int | None = None):
        names = {p.name for p in WORLD_PARAMS}
        checked = validate(WORLD_PARAMS, absolute_noise_rule({k: v for k, v in (params or {}).items() if k in names}))
        self.params = params if params is not None and all(n in params for n in names) else checked
        p = self.params
        if field is None:
            field = Field.load(p['field'], extent=p['field_extent'])
        reason = start_outside(p, field)
        if reason:
            raise ParameterError(reason)
        self.field = field
        self.seed = int(p['seed'] if seed is None else seed)
        ss = np.random.SeedSequence(self.seed)
        self._rng_slip, self._rng_odom, self._rng_fix, self._rng_reading = (
            np.random.default_rng(s) for s in ss.spawn(4))
        self._rng_zone = np.random.default_rng(ss.spawn(1)[0])    # fifth child: fix dropouts in the zone
        rng_scale = np.random.default_rng(ss.spawn(1)[0])         # sixth: the odometry's scale error
        self._rng_surface = np.random.default_rng(ss.spawn(1)[0])  # seventh: the surfacing fixes
        self.dt = 1.0 / float(p['sim_rate'])
        self.rover = DiffDriveRover(self.params, pose=(p['initial_x'], p['initial_y'], p['initial_yaw']))
        self.odometry = WheelOdometry(self.params)
        if p['odom_scale_error_std'] > 0:
            self.odometry.scale_error = float(rng_scale.normal(0.0, p['odom_scale_error_std']))
        self.fix_sensor = PositionFix(self.params)
        self.surfacing = Surfacing(self.params)
        self.sensor = FieldSensor(field, rng=self._rng_reading, params=self.params)
        self.k = 0
        #: odometer: true path length driven so far (m), updated by every :meth:`step`
        self.distance_travelled = 0.0
        #: true path length driven since the last absolute fix (or the start), m
        self.distance_since_fix = 0.0
        #: the absolute fixes given so far, in time order (the last :data:`MAX_FIX_EVENTS`)
        self.fix_events: deque[FixEvent] = deque(maxlen=MAX_FIX_EVENTS)

    @classmethod
    def from_params(cls, params: Mapping[str, Any] | None = None) -> 'SimWorld':
        """World with its field loaded from ``params['field']`` / ``params['field_extent']``."""
        return cls(None, params)

    @property
    def t(self) -> float:
        """Current simulated time (s)."""
        return self.k * self.dt

    @property
    def true_pose(self) -> np.ndarray:
        """True pose ``(x, y, yaw)`` (3,)."""
        return self.rover.pose.copy()

    def initial_step(self) -> SimStep:
        """The state at ``t = 0`` before any command: ground truth and a zero-motion odometry message
        (so a filter and a controller can start the control loop); no fix or reading."""
        state = RoverState(self.rover.pose.copy(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        odom = OdometryMeasurement(0.0, 0.0, self.odometry.velocity_covariance(state),
                                   self.odometry.twist_covariance(state))
        return SimStep(self.t, self.k, state, odom, None, None, False)

    def request_surfacing(self) -> bool:
        """Start the surfacing action now (:mod:`uncertain_bo.sim.surfacing`): the rover is held stopped for
        ``surface_duration`` s and gets one fix (``surface_fix_std``) at its end. Returns False when one is
        already under way."""
        return self.surfacing.request(self.t)

    def step(self, v_cmd: float, w_cmd: float) -> SimStep:
        """Execute ``(v_cmd, w_cmd)`` (m/s, rad/s) for one step of ``1 / sim_rate`` s (zero while the surfacing
        action holds the rover).

        Returns:
            :class:`SimStep` with the ground truth and the measurements due at the new time; the fix carries
            the covariance of the fix noise where the rover truly is (larger in the degraded zone, the source's
            own near a fix source, the surfacing fix's at the end of the action).

        Raises:
            ValueError: a non-finite command.
        """
        held = self.surfacing.active
        if held:
            v_cmd = w_cmd = 0.0
        state = self.rover.step(v_cmd, w_cmd, self.dt, self._rng_slip)
        self.k += 1
        # constant body velocities over the step: the path's speed is constant, its length exact
        step_length = math.hypot(state.v, state.vy) * self.dt
        self.distance_travelled += step_length
        self.distance_since_fix += step_length
        v, vy, w = self.odometry.measure_twist(state, self._rng_odom)
        odom = OdometryMeasurement(v, w, self.odometry.velocity_covariance(state),
                                   self.odometry.twist_covariance(state), vy)
        fix = None
        source = None
        fix_due = self._due(self.params['fix_rate'])
        xy = state.pose[:2]
        if fix_due:
            z = self.fix_sensor.measure(xy, self._rng_fix)      # drawn even if lost: streams stay aligned
            drop = self.fix_sensor.dropout_at(xy)
            if not (drop > 0.0 and self._rng_zone.random() < drop) and self.fix_sensor.available_at(xy):
                fix = FixMeasurement(z, self.fix_sensor.covariance_at(xy))
                source = 'beacon' if len(self.fix_sensor.beacons) else 'gnss'
        if self.surfacing.ends_at(self.t):
            std = self.params['surface_fix_std']
            fix = FixMeasurement(xy + self._rng_surface.normal(0.0, std, 2), std ** 2 * np.eye(2))
            source = 'surface'
        if fix is not None:
            self.distance_since_fix = 0.0
            self.fix_events.append(FixEvent(self.t, source, xy.copy(), fix.xy.copy(), fix.cov.copy()))
        if self.surfacing.due(self.distance_since_fix):
            self.surfacing.request(self.t)
        reading = None
        reading_due = self._due(self.params['reading_rate'])
        if reading_due:
            value = self.sensor.read(self.sensor.position(state.pose))
            if value is not None:
                reading = Reading(value, self.sensor.variance)
        return SimStep(self.t, self.k, state, odom, fix, reading, reading_due, fix_due, held)

    def _due(self, rate: float) -> bool:
        """True when a multiple of ``1 / rate`` lies in ``(t_{k-1}, t_k]`` (exact step arithmetic)."""
        if rate <= 0:
            return False
        return math.floor(self.k * self.dt * rate + 1e-9) > math.floor((self.k - 1) * self.dt * rate + 1e-9)

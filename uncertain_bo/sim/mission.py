"""The simulated exploration in one Python loop, without ROS (for benchmarks and fast tests).

Runs the same pieces as the ROS graph — :class:`~uncertain_bo.sim.world.SimWorld` (rover, wheel odometry,
position fixes, field sensor), :class:`~uncertain_bo.sim.ekf.PlanarEKF` (or, with ``localiser: 'pf'``,
:class:`~uncertain_bo.sim.particle_filter.ParticleFilter`, whose particle cloud reaches the explorer as with
the explorer node's ``pose_source: particle_cloud``),
:class:`~uncertain_bo.sim.pure_pursuit.PurePursuit` and the explorer's measurement cycle
:class:`~uncertain_bo.explorer.Explorer` around a :class:`~uncertain_bo.planning.planner.Planner` — with the same
parameters (``config/sim.yaml``, ``config/explorer.yaml``), stepping them in the order the lockstep graph
does: step the world, fuse the fix and the odometry in the localiser, hand pose and reading to the explorer,
tick it, and compute the next velocity command. Only the message passing is gone, so a 30-measurement
mission takes seconds instead of minutes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..distributions import ExecutionNoise
from ..explorer import (EXPLORER_PARAMS, Explorer, Measurement, PoseEstimate, Reading, State,
                        check_explorer_parameters, planner_from_parameters)
from ..parameters.specs import ParameterError, validate
from ..planning.planner import Planner, Recommendation
from .ekf import EKF_PARAMS, PlanarEKF
from .particle_filter import PF_PARAMS, ParticleFilter
from .field import Field
from .pure_pursuit import PURE_PURSUIT_PARAMS, PurePursuit
from .rover import PositionFix
from .smoothing import revise_stored_readings
from .world import WORLD_PARAMS, SimWorld

__all__ = ['Mission', 'MissionResult', 'MissionHost', 'RoverLoop', 'known_fix_sources',
           'localiser_and_law', 'mission_parameters', 'search_whole_field']


def mission_parameters(overrides: dict[str, dict[str, Any]] | None = None,
                       files: list | None = None) -> dict[str, dict[str, Any]]:
    """Validated ``{'sim_rover', 'ekf', 'particle_filter', 'pure_pursuit', 'explorer'}`` parameters from the
    shipped YAML files
    (plus ``files``), then ``overrides``; only the ROS-free parameters of each node are kept. A
    ``sim_rover.reading_noise_std`` given in ``files`` or ``overrides`` without ``reading_noise_fraction``
    switches the shipped relative reading noise off (the user's absolute value is used).

    Raises:
        ParameterError: an invalid value (also a ``degraded_zone`` or ``fix_beacons`` that is not well formed).
    """
    from ..parameters.specs import config_path
    from ..parameters.files import node_parameters

    paths = [config_path('sim.yaml'), config_path('explorer.yaml'), *(files or [])]
    user_bounds = 'search_bounds' in {**node_parameters(files or [], 'explorer'),
                                      **(overrides or {}).get('explorer', {})}
    user_sim = {**node_parameters(files or [], 'sim_rover'), **(overrides or {}).get('sim_rover', {})}
    if 'reading_noise_std' in user_sim and 'reading_noise_fraction' not in user_sim:
        # an absolute reading noise the user gave replaces the shipped relative default
        overrides = {node: dict(v) for node, v in (overrides or {}).items()}
        overrides.setdefault('sim_rover', {})['reading_noise_fraction'] = 0.0
    specs = {'sim_rover': WORLD_PARAMS, 'ekf': EKF_PARAMS, 'particle_filter': PF_PARAMS,
             'pure_pursuit': PURE_PURSUIT_PARAMS, 'explorer': EXPLORER_PARAMS}
    out = {}
    for node, spec in specs.items():
        names = {p.name for p in spec}
        values = {k: v for k, v in node_parameters(paths, node).items() if k in names}
        values.update((overrides or {}).get(node, {}))
        out[node] = validate(spec, values)
    PositionFix(out['sim_rover'])       # the checks across values: degraded_zone's corners, fix_beacons' quadruples
    reason = check_explorer_parameters(out['explorer'])     # search_bounds' order, fix_sources' quadruples, ...
    if reason is not None:
        raise ParameterError(reason)
    return out if user_bounds else search_whole_field(out)


def known_fix_sources(params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The explorer knows the simulated world's fix sources: ``explorer.fix_sources`` := ``sim_rover.fix_beacons``'
    places and radii (cost 0), and, for a vehicle that surfaces (``surface_every`` > 0: an AUV),
    ``explorer.surface_cost`` := ``surface_duration``. Applied (by the rover benchmarks) only where the explorer's
    own values are their defaults (none); a user's ``fix_sources`` or ``surface_cost`` is kept. They are known places
    (anchors surveyed in, clearings on the map), so a real explorer would be told them too."""
    from .rover import beacon_array

    sim, ex = params['sim_rover'], params['explorer']
    if not np.any(np.asarray(ex['fix_sources'], dtype=float)):
        beacons = beacon_array(sim['fix_beacons'])
        if len(beacons):
            ex['fix_sources'] = np.column_stack([beacons[:, :3], np.zeros(len(beacons))]).ravel().tolist()
    if ex['surface_cost'] == 0 and sim['surface_every'] > 0:
        ex['surface_cost'] = float(sim['surface_duration'])
    return params


def search_whole_field(params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """In simulation the explorer searches the simulated field: ``search_bounds`` := ``field_extent``
    (applied unless the user's own parameter file or overrides set ``search_bounds``; the launch file does
    the same)."""
    params['explorer']['search_bounds'] = list(params['sim_rover']['field_extent'])
    return params


def localiser_and_law(params: dict[str, dict[str, Any]]) -> tuple[Any, PurePursuit]:
    """``(localiser, pure-pursuit law)`` of one simulated rover: the localiser ``params['sim_rover']['localiser']``
    names (an EKF, or a particle filter) from its node's parameters."""
    if params['sim_rover'].get('localiser', 'ekf') == 'pf':
        localiser = ParticleFilter(params.get('particle_filter'))
    else:
        localiser = PlanarEKF(params['ekf'])
    return localiser, PurePursuit(params['pure_pursuit'])


@dataclass
class MissionResult:
    """Outcome of a mission.

    Attributes:
        planner: the planner with every observation.
        measurements: stored measurements in order.
        recommendations: the planner's recommendation after each measurement.
        true_positions: ``(n, 2)`` where each reading was really taken (the sensor's true position), m.
        sim_time: simulated duration, s.
        wall_time: wall-clock duration, s.
        completed: the explorer finished before ``max_sim_time``: all measurements taken, or a budget spent
            (``max_distance``, ``max_mission_time``; see ``stop_reason``).
        rejected: the explorer's rejection counters.
        trajectory: ``(k, 5)`` rows ``(t, true x, true y, estimated x, estimated y)`` at 1 Hz.
        stop_reason: why the explorer ended the mission (None if it did not).
        distance_estimate: distance driven as the explorer measured it on the pose estimates (what
            ``max_distance`` is checked against), m.
        en_route_readings: readings stored on the way (``en_route_spacing``; not in ``measurements``).
        fix_events: the absolute fixes the world gave (:class:`~uncertain_bo.sim.world.FixEvent`), in time order.
        surfacings: surfacing actions taken; their time is part of ``sim_time``.

    Example:
        A mission cut short by ``max_sim_time``: not completed, no measurement yet, the 1 Hz trajectory so far:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> result = Mission(mission_parameters(), field=hill).run(max_sim_time=5.0)
        >>> result.completed, result.stop_reason, result.measurements, result.trajectory.shape
        (False, None, [], (6, 5))
    """

    planner: Planner
    measurements: list[Measurement]
    recommendations: list[Recommendation]
    true_positions: np.ndarray
    sim_time: float
    wall_time: float
    completed: bool
    rejected: dict[str, int]
    trajectory: np.ndarray = field(repr=False)
    stop_reason: str | None = None
    distance_estimate: float = 0.0
    en_route_readings: int = 0
    fix_events: list = field(default_factory=list, repr=False)
    surfacings: int = 0


class MissionHost:
    """ExplorerOutputs for the in-process loop: keeps the current plan for pure pursuit, the measurements and
    recommendations, and where each reading was really taken; ``on_measurement(m, rec)`` is called after each.

    Example:
        The explorer's goal becomes a two-point path from the rover's position for pure pursuit:

        >>> import numpy as np
        >>> host = MissionHost(on_measurement=None)
        >>> host.position = np.array([100.0, 100.0])
        >>> host.send_goal([120.0, 90.0])
        >>> host.path.tolist()
        [[100.0, 100.0], [120.0, 90.0]]
        >>> host.stop(host.position)
        >>> host.path is None
        True
    """

    def __init__(self, on_measurement):
        self.path: np.ndarray | None = None
        self.position = np.zeros(2)
        self.measurements: list[Measurement] = []
        self.recommendations: list[Recommendation] = []
        self.true_positions: list[np.ndarray] = []
        self.truth = np.zeros(2)
        self.on_measurement = on_measurement
        self.done = False
        self.surfacing_requested = False

    def request_surfacing(self) -> bool:
        """The explorer asks for the surfacing action (:mod:`uncertain_bo.explorer.relocalising`): the rover loop
        takes it at this step."""
        self.surfacing_requested = True
        return True

    def send_goal(self, target):
        target = np.asarray(target, float)
        if self.path is not None and np.array_equal(self.path[-1], target):
            return      # the same goal again (re-sent until the rover moves): keep following it, as pure_pursuit does
        self.path = np.array([self.position, target])

    def stop(self, position):
        self.path = None

    def measured(self, m, rec):
        self.measurements.append(m)
        self.recommendations.append(rec)
        self.true_positions.append(self.truth.copy())
        if self.on_measurement is not None:
            self.on_measurement(m, rec)

    def finished(self, rec):
        self.done = True


class Mission:
    """A simulated exploration mission.

    Args:
        params: validated node parameters (see :func:`mission_parameters`).
        field: the true field (default: from ``params['sim_rover']``).
        method: planner method name (overrides ``params['explorer']['method']``).
        execution_noise: the planner's execution-noise model (default
            ``N(x, diag(execution_noise_std²))``).
        journal: optional journal path for the planner (the explorer adds its recommendation records).
        result_file: optional path of the explorer's result JSON (written when the mission ends).
        planner_kwargs: extra :class:`~uncertain_bo.planning.planner.Planner` arguments (e.g. ``beta``).

    Example:
        uGP-UCB on a hill (peak 1.0 at (100, 100) m): two measurements, fixed GP hyperparameters; each reading is
        taken where the rover really was:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> params = mission_parameters({'explorer': {'max_measurements': 2, 'n_initial': 2, 'refit_every': 0}})
        >>> result = Mission(params, field=hill, method='ugp_ucb').run(max_sim_time=3000.0)
        >>> result.completed, result.stop_reason, len(result.measurements)
        (True, 'max_measurements = 2 reached', 2)
        >>> [round(float(hill.value(xy[None])[0]), 1) for xy in result.true_positions]    # the true field there
        [0.9, 0.0]
    """

    def __init__(self, params: dict[str, dict[str, Any]], *, field: Field | None = None,
                 method: str | None = None, execution_noise: ExecutionNoise | None = None,
                 journal=None, planner_kwargs: dict[str, Any] | None = None, result_file=None):
        self.params = params
        self.result_file = result_file
        sim, ex = params['sim_rover'], params['explorer']
        self.world = SimWorld(field, sim)
        self.field = self.world.field
        kwargs = {'journal': journal, **({'method': method} if method else {}),
                  **({'execution_noise': execution_noise} if execution_noise is not None else {}),
                  **(planner_kwargs or {})}
        self.planner = planner_from_parameters(ex, **kwargs)
        self.localiser = sim.get('localiser', 'ekf')
        self.ekf, self.law = localiser_and_law(params)

    def run(self, *, max_sim_time: float = 1e5,
            on_measurement: Callable[[Measurement, Recommendation], None] | None = None,
            relocalise: Callable[['RoverLoop'], bool] | None = None) -> MissionResult:
        """Run until the explorer is done (or ``max_sim_time`` simulated seconds).

        Args:
            max_sim_time: simulated seconds at most.
            on_measurement: called with each stored measurement and the recommendation after it.
            relocalise: the re-localisation hook (:attr:`RoverLoop.relocalise`): called every step; True takes the
                surfacing action now.
        """
        host = MissionHost(on_measurement)
        explorer = Explorer(self.planner, host, self.params['explorer'], result_file=self.result_file)
        wall0 = time.perf_counter()
        rover = RoverLoop(self.world, self.ekf, self.law, explorer, host, self.params['explorer']['global_frame'],
                          relocalise=relocalise)
        while rover.t <= max_sim_time:
            if rover.advance():
                break
        return MissionResult(self.planner, host.measurements, host.recommendations,
                             np.array(host.true_positions).reshape(-1, 2), rover.t,
                             time.perf_counter() - wall0, explorer.state is State.DONE,
                             dict(explorer.rejected), np.array(rover.trajectory), explorer.done_reason,
                             explorer.budget.distance, self.planner.n_en_route, list(self.world.fix_events),
                             self.world.surfacing.count)


class RoverLoop:
    """One simulated rover in the lockstep loop: its world (rover, sensors, clock), localiser, pure-pursuit law and
    explorer measurement cycle, stepped one simulation step at a time (:meth:`advance`). The in-process mission
    runs one; a team (:mod:`uncertain_bo.team.mission`) runs one per rover on the same clock.

    Args:
        world: the rover's :class:`~uncertain_bo.sim.world.SimWorld`.
        localiser: its :class:`~uncertain_bo.sim.ekf.PlanarEKF` or :class:`~uncertain_bo.sim.particle_filter.
            ParticleFilter`.
        law: its :class:`~uncertain_bo.sim.pure_pursuit.PurePursuit`.
        explorer: the measurement cycle receiving its poses and readings.
        host: the explorer's outputs (:class:`MissionHost`: the current plan, measurements, true position).
        frame: the pose estimates' frame id.
        relocalise: the re-localisation hook: called with this loop at every step (after the localiser has
            fused the step's fix and odometry, before the next command); when it returns True the rover takes the
            surfacing action now (:meth:`~uncertain_bo.sim.world.SimWorld.request_surfacing`: stopped for
            ``surface_duration`` s, then one fix). A rule plugs in here; the explorer's own decision
            (``relocalise_kappa``, ``surface_cost``) comes through :meth:`MissionHost.request_surfacing`; the
            world's own ``surface_every`` rule needs neither.

    Attributes:
        t: simulated time of the current step (s).
        trajectory: rows ``(t, true x, true y, estimated x, estimated y)`` at 1 Hz.

    Example:
        One rover stepped by hand for 10 simulated seconds (``sim_rate`` 10 Hz), driving to its first target:

        >>> import numpy as np
        >>> from uncertain_bo.explorer import Explorer
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> params = mission_parameters()
        >>> mission, host = Mission(params, field=hill), MissionHost(on_measurement=None)
        >>> explorer = Explorer(mission.planner, host, params['explorer'])
        >>> loop = RoverLoop(mission.world, mission.ekf, mission.law, explorer, host, frame='map')
        >>> for _ in range(100):
        ...     done = loop.advance()
        >>> loop.t, len(loop.trajectory), host.path is not None         # one trajectory row a second
        (10.0, 10, True)
    """

    def __init__(self, world: SimWorld, localiser, law: PurePursuit, explorer: Explorer, host: 'MissionHost',
                 frame: str, relocalise: Callable[['RoverLoop'], bool] | None = None):
        self.world, self.localiser, self.law, self.explorer, self.host, self.frame = (
            world, localiser, law, explorer, host, frame)
        self.relocalise = relocalise
        self.pf = isinstance(localiser, ParticleFilter)
        self.tick_every = max(1, round(1.0 / (world.dt * 10.0)))  # explorer at 10 Hz, like the node's timer
        self.trajectory: list[tuple[float, ...]] = []
        self._s = world.initial_step()
        localiser.t = self._s.t

    @property
    def t(self) -> float:
        return self._s.t

    def advance(self) -> bool:
        """Hand the current step's fix, odometry, pose and reading on, tick the explorer when due, then command the
        wheels and step the world. Returns True (without stepping) once the explorer is done."""
        s, ekf, explorer, host = self._s, self.localiser, self.explorer, self.host
        if s.fix is not None:
            ekf.add_fix(s.t, s.fix.xy, s.fix.cov)
        ekf.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov, vy=s.odometry.vy)
        revise_stored_readings(ekf, explorer, self.frame)     # ekf.smooth_on_fix: the revised past after a fix
        host.truth = self.world.sensor.position(s.truth.pose)      # where a reading is taken: the sensor
        host.position = ekf.xy.copy()
        if s.reading is not None:
            explorer.on_reading(Reading(s.t, s.reading.value, s.reading.variance))
        if self.pf:
            particles = ekf.particles
            explorer.on_pose(PoseEstimate.from_particles(s.t, self.frame, particles[:, :2], ekf.weights,
                                                         particles[:, 2]))
        else:
            explorer.on_pose(PoseEstimate(s.t, self.frame, ekf.xy.copy(), ekf.cov_xy.copy(), yaw=float(ekf.pose[2]),
                                          yaw_cov=ekf.covariance[2].copy()))
        if s.step % self.tick_every == 0:
            explorer.tick(s.t)
            if explorer.state is State.DONE:
                return True
        if s.step % round(1.0 / self.world.dt) == 0:
            self.trajectory.append((s.t, *s.truth.pose[:2], *ekf.xy))
        if host.surfacing_requested or (self.relocalise is not None and self.relocalise(self)):
            host.surfacing_requested = False
            self.world.request_surfacing()
        v = w = 0.0
        if host.path is not None:
            v, w, arrived = self.law.command(tuple(ekf.pose), host.path)
            if arrived:
                host.path = None
        self._s = self.world.step(v, w)
        return False

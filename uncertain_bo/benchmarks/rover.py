r"""``rover``: the simulated rover exploring the demo's real field (paper §6.3 analogue), in-process.

Each run is one :class:`~uncertain_bo.sim.mission.Mission`: the same simulated rover (diff-drive with wheel
slip, wheel odometry, GNSS-like position fixes), EKF, pure-pursuit controller and explorer measurement cycle
as ``uncertain-bo demo``, without DDS. The explorer drives the planner (targets, arrival or goal timeout,
dwell, reading paired with the EKF pose estimate nearest in time), so the location distributions are the
EKF's heteroscedastic :math:`\mathcal N(\hat{\mathbf x}_t, \Sigma_t)` and the execution noise is whatever the
rover really does. Defaults follow the paper's robot experiment: 30 measurements, GP hyperparameters by
marginal likelihood at every step, :math:`\beta_t = 3`, and the shipped ``config/sim.yaml`` /
``config/explorer.yaml`` (field ``jacksboro-smooth``: a window of real USGS elevation mapped onto
200 m x 200 m; ``--field jacksboro-rough`` for the whole, much rougher grid; execution-noise model
:math:`\hat\Sigma = \mathrm{diag}(0.75^2, 0.75^2)` m²). The seed sets the simulation noise and the
planner's seed.

**Robust objective.** As the demo's report: :math:`g = f * \mathcal N(0, \Sigma_E)` with
:math:`\Sigma_E = \mathrm{diag}(\texttt{execution\_noise\_std}^2)`, by FFT convolution of the field grid
(:meth:`~uncertain_bo.sim.field.Field.convolved`), bilinear between nodes; :math:`g^*` is its largest node
inside ``search_bounds`` and the normaliser's median is taken over the same nodes
(:func:`~uncertain_bo.sim.robust_optimum.robust_optimum`: the whole field when the bounds cover it, as by
default).
The true execution scatter of the simulated rover is close to that model but not exactly Gaussian; the
regret is measured against this Gaussian-smoothed field, like the demo's ``summary.json``.

**``rover-pf``**: the same missions with the particle-filter localiser
(:class:`~uncertain_bo.sim.particle_filter.ParticleFilter`, ``sim_rover.localiser: 'pf'``, seeded by the run's
seed) instead of the EKF. The explorer receives the particle cloud, so the input type follows the method's
kernel: sample-based kernels (``airbo``, ``ugp_kme``) train on empirical location distributions of
``max_particles`` particles, ``ugp_ucb`` on the cloud's moment-matched Gaussian, ``igp_ucb`` on the targets.
Field, robust objective and everything else are those of ``rover``. Any other localiser setting is one more
:class:`Rover` subclass with its own :attr:`Rover.overrides`.

**``rover-degraded``**: the heteroscedastic localisation scenario, ``rover`` with the shipped parameter file
``config/gnss_degraded.yaml`` applied over the defaults (a GNSS-degraded zone where position fixes are much
noisier or lost, so the EKF's covariance — each reading's location distribution — differs strongly between
readings, on a field whose features are as narrow as the localisation error there).

**``rover-denied``**: the GNSS-denied scenario family, ``rover`` with ``config/gnss_denied.yaml`` applied over
the defaults (dead-reckoning drift of a calibrated source, :mod:`uncertain_bo.sim.drift`; absolute fixes only
within reach of a few known sources, ``fix_beacons``, or from the surfacing action, ``surface_every``), the
localisers starting from a draw of their own initial distribution around the true start (consistent from the
first step). ``--suite denied`` runs its scenario family (docs/gnss_denied.md); any other ``--field`` takes the
file's defaults, and ``--sim-param`` changes any of them. Regret and distance are measured as for ``rover``.

**Fields.** ``BenchSettings.field`` (``uncertain-bo bench --field``) replaces ``sim_rover.field`` for every
seed: a named field (:meth:`~uncertain_bo.sim.field.Field.load`) or a ``.npz`` / ``.csv`` path. A field file is
read once per process (:func:`load_field`; a ``.csv`` survey's GP fit takes seconds) and already by
:meth:`Rover.check`, so that a bad file, or a start outside the field, is one error line before any run.

**Baselines.** Every method runs through the same mission, survey baselines (``lawnmower``, ``random``) and
``botorch_robust`` included (:mod:`uncertain_bo.acquisition.survey`, :mod:`~uncertain_bo.acquisition.botorch_robust`).
Records carry the cumulative true path length (``distance_driven``, m) and the simulated time of each reading;
the regrets are also normalised as the demo prints them, :math:`(g^* - g(\mathbf x)) / (g^* - \operatorname{median} g)`.
"""
from __future__ import annotations

from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import Tensor

from ..acquisition import Method
from ..distributions import DTYPE, Gaussian, GaussianExecutionNoise
from ..planning.planner import Planner
from .base import BenchSettings, Instance, Measurement, Problem, World
from .problem_registry import register_problem

__all__ = ['Rover', 'RoverDenied', 'RoverInstance', 'load_field']


def load_field(spec: str, extent) -> Any:
    """:meth:`Field.load <uncertain_bo.sim.field.Field.load>` of ``spec`` onto ``extent`` (m), a field file read once
    per process for as long as it is unchanged (its size and modification time), named fields as ``Field.load``
    caches them. The GP fit of a ``.csv`` is deterministic, so every seed and method sees the same field.

    Raises:
        FieldError: as ``Field.load``.
    """
    from ..sim.field import Field

    path = Path(str(spec).strip())
    try:
        stat = path.stat() if path.is_file() else None
    except OSError:
        stat = None
    if stat is None:     # a name, or a path Field.load explains
        return Field.load(spec, extent=extent)
    return _file_field(str(path.resolve()), stat.st_size, stat.st_mtime_ns, tuple(float(v) for v in extent))


@lru_cache(maxsize=4)
def _file_field(path: str, size: int, mtime_ns: int, extent: tuple[float, ...]) -> Any:
    from ..sim.field import Field

    return Field.load(path, extent=extent)


class RoverInstance(Instance):
    """The demo's field and simulated rover for one seed.

    Example:
        The demo's field: the robust optimum :math:`g^*` (m of elevation, under :math:`\\Sigma_E =
        \\mathrm{diag}(0.75^2, 0.75^2)` m²) and the normaliser of the demo's regret:

        >>> from uncertain_bo.benchmarks import get_problem
        >>> rover = get_problem('rover').instance(seed=0)
        >>> rover.bounds.tolist(), rover.execution_std.tolist()
        ([[0.0, 0.0], [200.0, 200.0]], [0.75, 0.75])
        >>> x_star, g_star = rover.optimum
        >>> x_star.tolist(), round(g_star, 1), round(rover.regret_scale, 1)
        ([0.0, 80.95...], 978.8, 401.1)
    """

    def __init__(self, seed: int, overrides: dict[str, dict[str, Any]] | None = None,
                 files: list | None = None, draw_start: bool = False):
        from ..sim.drift import initial_estimate
        from ..sim.mission import known_fix_sources, mission_parameters

        over = {node: dict(v) for node, v in (overrides or {}).items()}
        over.setdefault('sim_rover', {}).setdefault('seed', seed)
        over.setdefault('explorer', {}).setdefault('seed', seed)
        self.seed = seed
        self.params = known_fix_sources(mission_parameters(over, files=files))
        if draw_start:      # the localiser starts from a draw of its own initial distribution around the truth
            self.params = initial_estimate(self.params, seed)
        sim, ex = self.params['sim_rover'], self.params['explorer']
        self.field = load_field(sim['field'], sim['field_extent'])
        xmin, xmax, ymin, ymax = ex['search_bounds']
        self.bounds = torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE)
        self.execution_std = np.asarray(ex['execution_noise_std'], dtype=float)

    @cached_property
    def robust_field(self):
        return self.field.convolved(np.diag(self.execution_std ** 2))

    def robust_value(self, targets: Tensor) -> Tensor:
        xy = np.asarray(torch.as_tensor(targets, dtype=DTYPE).reshape(-1, 2))
        return torch.as_tensor(np.atleast_1d(self.robust_field.value(xy)), dtype=DTYPE)

    @cached_property
    def _robust_optimum(self) -> tuple[np.ndarray, float, float]:
        from ..sim.robust_optimum import robust_optimum
        return robust_optimum(self.robust_field, self.params['explorer']['search_bounds'])

    @cached_property
    def regret_scale(self) -> float:
        """:math:`g^* - \\operatorname{median} g` over the grid nodes inside ``search_bounds`` (the demo's
        normaliser)."""
        return float(self._robust_optimum[1] - self._robust_optimum[2])

    @cached_property
    def optimum(self) -> tuple[Tensor, float]:
        """:math:`(\\mathbf x^*, g^*)`: the robust optimum within ``search_bounds``."""
        xy, g, _ = self._robust_optimum
        return torch.as_tensor(xy, dtype=DTYPE), float(g)

    def world(self, seed: int) -> World:
        raise NotImplementedError('the rover mission drives the planner itself: use drive()')

    def planner_config(self, method: Method, settings: BenchSettings) -> dict[str, Any]:
        ex = self.params['explorer']
        cfg = {'execution_noise': GaussianExecutionNoise.isotropic(
                   (settings.mismatch * self.execution_std).tolist()),
               'beta': float(settings.beta),
               'n_initial': settings.n_initial or ex['n_initial'],
               'refit_every': ex['refit_every'] if settings.refit_every is None else settings.refit_every,
               'optimizer': settings.optimizer}
        if settings.beta == 'theory':
            raise ValueError('rover: the field is not in a known RKHS ball, so there is no theory beta; give a number')
        return cfg

    def drive(self, method: Method, settings: BenchSettings, seed: int, iterations: int,
              record: Callable[..., None]) -> Planner:
        from ..sim.mission import Mission

        cfg = self.planner_settings(method, settings, None)    # the mission's budget: max_measurements
        noise = cfg.pop('execution_noise')
        params = {node: dict(v) for node, v in self.params.items()}
        params['explorer']['max_measurements'] = iterations
        mission = Mission(params, field=self.field, method=method.name, execution_noise=noise,
                          planner_kwargs=cfg)

        def on_measurement(meas, rec) -> None:
            planner = mission.planner
            decision = [d for d in planner.decisions if d.index == meas.index][-1]
            world = mission.world
            executed = torch.as_tensor(world.sensor.position(world.true_pose), dtype=DTYPE)   # the sensor's
            xy, cov = meas.place                        # where the reading was taken (the sensor)
            location = Gaussian(torch.as_tensor(xy, dtype=DTYPE).reshape(1, 2),
                                torch.as_tensor(cov, dtype=DTYPE).reshape(1, 2, 2))
            m = Measurement(executed, location, float(meas.reading.value),
                            extra={'timed_out': bool(meas.timed_out), 'sim_time': float(meas.reading.stamp),
                                   'distance_driven': float(mission.world.distance_travelled)})
            record(planner, torch.as_tensor(meas.target, dtype=DTYPE), m, decision, rec)

        result = mission.run(on_measurement=on_measurement)
        if not result.completed:
            raise RuntimeError(f'rover mission (seed {seed}) did not complete {iterations} measurements: '
                               f'{len(result.measurements)} taken, rejected {result.rejected}')
        return mission.planner

    def info(self) -> dict[str, Any]:
        return {**super().info(), 'field': self.field.name, 'execution_std': self.execution_std.tolist(),
                'robust_objective': 'field convolved with N(0, diag(execution_noise_std^2)) (FFT on the grid)'}


class Rover(Problem):
    """Paper §6.3 analogue: 30 measurements, ML hyperparameters each step, β = 3, 10 seeds.

    Example:
        How ``--sim-param`` settings reach the simulation nodes, and one that names no node:

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> rover = get_problem('rover')
        >>> rover.overrides_for(seed=0, sim=(('reading_noise_std', 0.5), ('ekf.initial_xy_std', 1.0)))
        {'explorer': {}, 'sim_rover': {'reading_noise_std': 0.5}, 'ekf': {'initial_xy_std': 1.0}}
        >>> rover.check(BenchSettings(sim=(('lidar.range', 5.0),)))
        Traceback (most recent call last):
        ...
        ValueError: --sim-param lidar.range: no simulation node 'lidar'; use NAME for sim_rover or NODE.NAME with ...
    """

    name = 'rover'
    description = 'simulated rover + EKF + pure pursuit on the demo field (Oliveira et al. 2019, §6.3 analogue)'
    default_iterations = 30
    default_seeds = 10
    default_beta = 3.0

    #: node parameters applied over the shipped YAML files for every seed (``{node: {name: value}}``)
    overrides: dict[str, dict[str, Any]] = {}
    #: shipped parameter files (names in ``config/``) applied over the defaults, before :attr:`overrides`
    param_files: tuple[str, ...] = ()
    #: the localisers start from a draw of their initial distribution around the true start
    #: (:func:`~uncertain_bo.sim.drift.initial_estimate`) instead of at it
    draw_start = False
    default_methods = 'ugp_ucb,gp_ucb,lawnmower,random,botorch_robust'

    def overrides_for(self, seed: int, field: str | None = None, explorer: tuple[tuple[str, Any], ...] = (),
                      sim: tuple[tuple[str, Any], ...] = ()) -> dict[str, dict[str, Any]]:
        """Node parameters of a mission, applied over the shipped files and :attr:`param_files`, in this order:
        :attr:`overrides`, the field (a suite field brings its sensor noise and localisation setting,
        :meth:`~uncertain_bo.benchmarks.suite.Suite.sim_overrides`), then ``explorer`` and ``sim``
        (``name`` = a ``sim_rover`` parameter, ``node.name`` another simulation node's)."""
        from ..sim.field_catalogue import suite_of
        from .suite import load_suite

        over = {node: dict(values) for node, values in self.overrides.items()}
        if self.overrides.get('sim_rover', {}).get('localiser') == 'pf':
            over.setdefault('particle_filter', {}).setdefault('seed', seed)
        if field is not None:
            over.setdefault('sim_rover', {})['field'] = field
            suite = suite_of(field)
            if suite is not None:
                _route(over, load_suite(suite).sim_overrides(suite_field_name(field)).items())
        over.setdefault('explorer', {}).update(dict(explorer))
        _route(over, sim)
        return over

    def instance(self, seed: int, field: str | None = None, explorer: tuple[tuple[str, Any], ...] = (),
                 sim: tuple[tuple[str, Any], ...] = ()) -> RoverInstance:
        from ..parameters.specs import config_path

        over = self.overrides_for(seed, field, explorer, sim)
        return RoverInstance(seed, over or None, [config_path(f) for f in self.param_files], self.draw_start)

    def check(self, settings: BenchSettings) -> None:
        """Validate ``settings``' field and node parameters: a named field without building it, a field file by
        reading it (:func:`load_field`, which keeps it for the runs) and the rover's start inside it.

        Raises:
            ValueError: an unknown node (``--sim-param NODE.NAME``), or a parameter the node does not have or
                a value out of its range (:class:`~uncertain_bo.parameters.specs.ParameterError`), a field file that
                cannot be used (:class:`~uncertain_bo.sim.field.FieldError`), a start outside the field's
                ``field_extent`` (ParameterError, :func:`~uncertain_bo.sim.world.start_outside`).
        """
        from ..parameters.specs import ParameterError, config_path
        from ..sim.field import FIELD_NAMES
        from ..sim.field_catalogue import catalogue
        from ..sim.mission import mission_parameters
        from ..sim.world import start_outside

        for name, _ in settings.sim:
            node = name.rpartition('.')[0] or 'sim_rover'
            if node not in SIM_NODES:
                raise ValueError(f'--sim-param {name}: no simulation node {node!r}; use NAME for sim_rover or '
                                 f'NODE.NAME with NODE one of {", ".join(SIM_NODES[1:])}')
        sim = mission_parameters(self.overrides_for(0, settings.field, settings.explorer, settings.sim),
                                 files=[config_path(f) for f in self.param_files])['sim_rover']
        if str(sim['field']).strip().lower() not in {*FIELD_NAMES, *catalogue()}:   # a file: read here, not per run
            reason = start_outside(sim, load_field(sim['field'], sim['field_extent']))
            if reason:
                raise ParameterError(reason)

    def instance_for(self, seed: int, settings: BenchSettings) -> RoverInstance:
        return self.instance(seed, settings.field, settings.explorer, settings.sim)


def _route(over: dict[str, dict[str, Any]], pairs) -> None:
    """Set ``(name, value)`` pairs into ``over``: ``NAME`` for ``sim_rover``, ``NODE.NAME`` for another node."""
    for name, value in pairs:
        node, _, param = name.rpartition('.')
        over.setdefault(node or 'sim_rover', {})[param] = value


def suite_field_name(field: str) -> str:
    """A field specification as the catalogue spells it (lower case, stripped)."""
    return str(field).strip().lower()


#: simulation nodes whose parameters ``--sim-param`` sets (``NAME`` alone is a ``sim_rover`` parameter)
SIM_NODES = ('sim_rover', 'ekf', 'particle_filter', 'pure_pursuit')


class RoverPF(Rover):
    """``rover`` with the particle-filter localiser: particle clouds as location distributions.

    Example:
        >>> from uncertain_bo.benchmarks import get_problem
        >>> get_problem('rover-pf').overrides_for(seed=3)      # the particle filter is seeded by the run
        {'sim_rover': {'localiser': 'pf'}, 'particle_filter': {'seed': 3}, 'explorer': {}}
    """

    name = 'rover-pf'
    description = ('simulated rover + particle-filter localiser + pure pursuit on the demo field: empirical '
                   '(particle) location distributions for sample-based kernels, the Gaussian summary otherwise')
    overrides = {'sim_rover': {'localiser': 'pf'}}


class RoverDegraded(Rover):
    """``rover`` in the heteroscedastic localisation scenario (``config/gnss_degraded.yaml``).

    Example:
        >>> from uncertain_bo.benchmarks import get_problem
        >>> sim = get_problem('rover-degraded').instance(seed=0).params['sim_rover']
        >>> sim['degraded_zone'], sim['degraded_fix_std'], sim['degraded_fix_dropout']   # (xmin, xmax, ymin, ymax) m
        ([100.0, 300.0, -100.0, 300.0], 3.0, 0.5)
    """

    name = 'rover-degraded'
    description = ('simulated rover + EKF + pure pursuit with a GNSS-degraded zone (heteroscedastic location '
                   'distributions) on a field whose features are as narrow as the localisation error')
    param_files = ('gnss_degraded.yaml',)


class RoverDenied(Rover):
    """``rover`` without GNSS: dead-reckoning drift, fixes only near known places or by surfacing
    (``config/gnss_denied.yaml``; docs/gnss_denied.md).

    Example:
        Fixes only near five beacons ``(x, y, reach m, std m)`` each; the EKF starts from a draw around the true
        start:

        >>> from uncertain_bo.benchmarks import get_problem
        >>> params = get_problem('rover-denied').instance(seed=0).params
        >>> params['sim_rover']['fix_beacons'][:4], params['sim_rover']['odometry_source']
        ([100.0, 100.0, 10.0, 0.5], 'wheel_gyro')
        >>> round(params['ekf']['initial_x'], 2), round(params['ekf']['initial_y'], 2)
        (99.66, 100.15)
    """

    name = 'rover-denied'
    description = ('simulated rover + EKF + pure pursuit without GNSS: odometry drift calibrated to published rates '
                   '(default: wheel odometry with slip and a MEMS gyro, 3 %DT), fixes only within 10 m of five '
                   'beacons (config/gnss_denied.yaml); the localiser starts from a draw of its own uncertainty. Any '
                   '--field, --suite denied for the scenario family, --sim-param for the drift, fix sources and '
                   'surfacing (drift presets: docs/gnss_denied.md)')
    param_files = ('gnss_denied.yaml',)
    draw_start = True


register_problem('rover', Rover)
register_problem('rover-pf', RoverPF)
register_problem('rover-degraded', RoverDegraded)
register_problem('rover-denied', RoverDenied)

r"""Dead-reckoning drift calibrated from published error rates: wheel odometry with slip, visual odometry and a
DVL-aided inertial navigation system.

A :class:`DriftSource` is a set of parameters of the simulated rover (``sim_rover``: what its odometry measures,
its white noise, a constant scale-factor error drawn per run) and of its localiser (``ekf`` / ``particle_filter``:
the same scale error as a state, the heading uncertainty at the start, process-noise floors no larger than the
sensor's noise), so that the EKF's covariance grows as the true error does (consistent) and the error after a
straight leg matches a published figure in per cent of distance travelled (%DT).

**Error model.** On a straight leg of length :math:`D` driven at speed :math:`v` from a perfectly known position,
with small heading and scale errors, the dead-reckoned position error has the along-track and cross-track
variances

.. math::

    \sigma_\parallel^2(D) = \sigma_e^2 D^2 + q_v D, \qquad
    \sigma_\perp^2(D) = \sigma_\psi^2 D^2 + q_y D + q_\psi D^3 / 3,

where :math:`\sigma_e` is the std of the odometry's constant scale-factor error (``odom_scale_error_std``, one
draw per run), :math:`\sigma_\psi` the std of the heading error at the start (``ekf.initial_yaw_std``; the true
heading is drawn from it, :func:`initial_estimate`), and the white parts are per metre: :math:`q_v = \sigma_v^2
\Delta t / v` with :math:`\sigma_v^2` the variance of the speed error per step of :math:`\Delta t` s (the slip a
wheel source cannot see, :math:`\sigma_\mathrm{slip}^2 v^2 / 2`, plus ``odom_linear_vel_std²``), :math:`q_y` the same
for the sideways speed (``odom_linear_vel_std²`` for a ``'ground_velocity'`` source, which measures it) and
:math:`q_\psi =
\sigma_w^2 \Delta t / v` with :math:`\sigma_w^2` that of the yaw-rate error (``odom_angular_vel_std²``, plus
:math:`2 \sigma_\mathrm{slip}^2 v^2 / L^2` for a ``'wheel'`` source). The constant parts grow in proportion to the
distance, the white ones more slowly (along track) or faster (cross track, through the heading's random walk).

**Calibration.** The white parts are each sensor's; the constant parts are solved (:meth:`DriftSource.bias_stds`)
so that at the source's reference distance :math:`D_\mathrm{ref}` both variances equal :math:`(r D_\mathrm{ref} /
1.1774)^2`: a circular Gaussian error whose median radius (CEP50 :math:`= 1.1774\,\sigma`) is the published rate
:math:`r` times :math:`D_\mathrm{ref}`. A published mean radial error (the KITTI metric) is within 6 % of the
CEP50 for such an error (mean :math:`= 1.2533\,\sigma`); the difference is ignored.

The figures and where they come from (:data:`DRIFT_SOURCES`; docs/gnss_denied.md lists them with their sources):

===========  =========================================================  ======  =========
name         what                                                       rate    D_ref
===========  =========================================================  ======  =========
``wheel``    wheel odometry with slip on rough terrain, MEMS gyro       3 %     650 m
``vo``       stereo visual odometry                                     1 %     400 m
``dvl_ins``  DVL-aided inertial navigation (navigation-grade INS)       0.2 %   1000 m
===========  =========================================================  ======  =========
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

__all__ = ['DriftSource', 'DRIFT_SOURCES', 'CEP50_PER_SIGMA', 'drift_source', 'initial_estimate', 'straight_legs']

#: median radius of a circular 2-D Gaussian error in units of its per-axis std: sqrt(2 ln 2)
CEP50_PER_SIGMA = math.sqrt(2.0 * math.log(2.0))

#: what a drift source's localiser floors its process noise at (m/s, rad/s): below every sensor's white noise,
#: so that the filter takes the odometry's reported covariance as it is
_FLOOR = 1e-4


@dataclass(frozen=True)
class DriftSource:
    """A dead-reckoning drift source, calibrated to a published rate (module docstring).

    Attributes:
        name: its name (``drift: NAME`` in a suite's localisation setting).
        what: what it is, in words.
        rate: published position error per distance travelled (dimensionless, 0.01 = 1 %DT), taken as CEP50.
        reference_m: distance at which the rate is met (m).
        source: where the figure comes from.
        odometry_source: ``sim_rover.odometry_source``.
        linear_std: white speed noise per step (m/s, ``odom_linear_vel_std``).
        angular_std: white yaw-rate noise per step (rad/s, ``odom_angular_vel_std``).
        wheel_slip_std: the rover's wheel slip (dimensionless; execution noise, seen by a ground-velocity
            source).
        speed: speed the calibration assumes (m/s; the pure-pursuit cruise speed of ``config/sim.yaml``).
        sim_rate: simulation steps per second the calibration assumes (Hz; ``config/sim.yaml``).
        wheel_separation: the rover's (m; for the slip a ``'wheel'`` source cannot see).
        initial_xy_std: std of the start position the localiser is given (m); not part of the calibration.

    Example:
        Wheel-inertial odometry drifting 3 % of the distance (CEP50) over 650 m: the closed-form variances of a
        straight leg meet the rate there, along and across track:

        >>> import numpy as np
        >>> wheel = drift_source('wheel')
        >>> wheel.rate, wheel.reference_m, wheel.odometry_source
        (0.03, 650.0, 'wheel_gyro')
        >>> (CEP50_PER_SIGMA * np.sqrt(wheel.variances(650.0))).round(2).tolist()     # m
        [19.5, 19.5]
        >>> wheel.parameters()['odom_scale_error_std']         # the bias that makes it so
        0.025473
    """

    name: str
    what: str
    rate: float
    reference_m: float
    source: str
    odometry_source: str
    linear_std: float
    angular_std: float
    wheel_slip_std: float = 0.05
    speed: float = 1.5
    sim_rate: float = 10.0
    wheel_separation: float = 0.6
    initial_xy_std: float = 0.3

    def white_per_metre(self, sim_rate: float | None = None) -> tuple[float, float, float]:
        """``(q_v, q_y, q_psi)``: the along-track and cross-track position variances (m²) and the heading variance
        (rad²) the white noise adds per metre driven at :attr:`speed` with ``sim_rate`` (default :attr:`sim_rate`)
        steps per second."""
        dt = 1.0 / (sim_rate or self.sim_rate)
        v = self.speed
        ground = self.odometry_source == 'ground_velocity'
        slip2 = self.wheel_slip_std ** 2 if not ground else 0.0
        var_v = slip2 * v * v / 2.0 + self.linear_std ** 2
        var_y = self.linear_std ** 2 if ground else 0.0
        var_w = self.angular_std ** 2 + (2.0 * slip2 * v * v / self.wheel_separation ** 2
                                         if self.odometry_source == 'wheel' else 0.0)
        return var_v * dt / v, var_y * dt / v, var_w * dt / v

    def bias_stds(self) -> tuple[float, float]:
        """``(scale_error_std, heading_std)`` (dimensionless, rad) that meet :attr:`rate` at :attr:`reference_m`.

        Raises:
            ValueError: the white noise alone exceeds the rate there.
        """
        D = self.reference_m
        target = (self.rate * D / CEP50_PER_SIGMA) ** 2
        q_v, q_y, q_psi = self.white_per_metre()
        along, cross = target - q_v * D, target - q_y * D - q_psi * D ** 3 / 3.0
        if along <= 0 or cross <= 0:
            raise ValueError(f'drift source {self.name!r}: its white noise alone exceeds {self.rate:.2%} of '
                             f'{D:g} m; lower linear_std / angular_std')
        return math.sqrt(along) / D, math.sqrt(cross) / D

    def variances(self, distance, sim_rate: float | None = None, start_xy_var: float = 0.0):
        """Closed-form ``(along-track, cross-track)`` variances (m²) of the dead-reckoned position after a straight
        leg of ``distance`` m (scalar or array), from a start with position variance ``start_xy_var`` (m² per
        axis), with ``sim_rate`` steps per second (default :attr:`sim_rate`)."""
        D = np.asarray(distance, dtype=float)
        s_e, s_psi = self.bias_stds()
        q_v, q_y, q_psi = self.white_per_metre(sim_rate)
        return (start_xy_var + s_e ** 2 * D ** 2 + q_v * D,
                start_xy_var + s_psi ** 2 * D ** 2 + q_y * D + q_psi * D ** 3 / 3.0)

    def parameters(self) -> dict[str, Any]:
        """The parameters that make the simulated rover and its localiser drift so: ``sim_rover`` names bare,
        the localisers' as ``ekf.NAME`` / ``particle_filter.NAME`` (the ``--sim-param`` spelling)."""
        s_e, s_psi = self.bias_stds()
        out: dict[str, Any] = {'odometry_source': self.odometry_source, 'wheel_slip_std': self.wheel_slip_std,
                               'odom_linear_vel_std': self.linear_std, 'odom_angular_vel_std': self.angular_std,
                               'odom_scale_error_std': round(s_e, 6)}
        for node in ('ekf', 'particle_filter'):
            out.update({f'{node}.odom_scale_error_std': round(s_e, 6), f'{node}.initial_yaw_std': round(s_psi, 6),
                        f'{node}.initial_xy_std': self.initial_xy_std, f'{node}.min_linear_vel_std': _FLOOR,
                        f'{node}.min_angular_vel_std': _FLOOR})
        return out


#: the calibrated drift sources (module docstring; sources in docs/gnss_denied.md)
DRIFT_SOURCES: dict[str, DriftSource] = {d.name: d for d in (
    DriftSource('wheel', 'wheel odometry with slip on rough terrain, heading from a MEMS gyro', rate=0.03,
                reference_m=650.0, source='Kilic et al. 2021, IEEE RA-L 6(3), arXiv:2103.07587: wheel-inertial '
                'odometry of a rover on rough terrain, about 97 % accurate (3 %DT) over 650 m drives',
                odometry_source='wheel_gyro', linear_std=0.02, angular_std=0.005),
    DriftSource('vo', 'stereo visual odometry (KITTI-class)', rate=0.01, reference_m=400.0,
                source='KITTI odometry benchmark (translational error averaged over 100-800 m subsequences): '
                'stereo VO/SLAM about 0.85-2.5 %, rotation 0.0024-0.0045 deg/m', odometry_source='ground_velocity',
                linear_std=0.02, angular_std=0.002),
    DriftSource('dvl_ins', 'DVL-aided inertial navigation of an AUV (navigation-grade INS)', rate=0.002,
                reference_m=1000.0, source='Tang et al. 2013, Sensors 13(11) 14583: INS/DVL about 0.1 %DT (CEP) in '
                'a river trial, 0.2 %DT (CEP) at sea', odometry_source='ground_velocity', linear_std=0.01,
                angular_std=1e-4),
)}


def drift_source(name: str) -> DriftSource:
    """A calibrated drift source by name.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    try:
        return DRIFT_SOURCES[name]
    except KeyError:
        raise ValueError(f'unknown drift source {name!r}; use one of {", ".join(DRIFT_SOURCES)}') from None


def initial_estimate(params: Mapping[str, Mapping[str, Any]], seed: int) -> dict[str, dict[str, Any]]:
    """Node parameters whose localisers start from a draw around the true start: ``initial_x/y/yaw`` of ``ekf``
    and ``particle_filter`` := ``sim_rover``'s plus ``N(0, initial_xy_std²)``, ``N(0, initial_xy_std²)``,
    ``N(0, initial_yaw_std²)`` (each node's own stds, one shared draw), so that the true error at the start is
    what the localiser's initial covariance says (a consistent filter from the first step; the heading error is
    part of the dead-reckoning drift). Deterministic given ``seed``, independent of the world's random streams.

    Args:
        params: validated node parameters (:func:`~uncertain_bo.sim.mission.mission_parameters`).
        seed: the run's seed.

    Returns:
        A copy of ``params`` with the drawn starts (m, m, rad; the yaw wrapped to ``[-pi, pi)``).
    """
    from .rover import wrap_angle

    out = {node: dict(values) for node, values in params.items()}
    sim = out['sim_rover']
    z = np.random.default_rng([int(seed), 0x5DEECE66D]).standard_normal(3)
    for node in ('ekf', 'particle_filter'):
        if node not in out:
            continue
        p = out[node]
        p['initial_x'] = float(sim['initial_x'] + p['initial_xy_std'] * z[0])
        p['initial_y'] = float(sim['initial_y'] + p['initial_xy_std'] * z[1])
        p['initial_yaw'] = float(wrap_angle(sim['initial_yaw'] + p['initial_yaw_std'] * z[2]))
    return out


def straight_legs(source: DriftSource, seeds: int, distances, sim_rate: float | None = None,
                  ekf: Mapping[str, Any] | None = None, sim: Mapping[str, Any] | None = None):
    """Measure a drift source in the simulator: each seed's rover drives straight east at ``source.speed`` from
    (0, 0) with the source's odometry, its EKF (the source's parameters, then ``ekf``) started from a draw of its
    own initial covariance with the position known to 1 mm; at each of ``distances`` (true path, m, increasing)
    the EKF's error (truth - estimate) and position covariance are recorded. The yaw-rate command holds the true
    heading at 0 (steering on the truth, which only a measurement may do: slip would otherwise curl the path, and
    the closed form :meth:`DriftSource.variances` is for a straight leg); the odometry still sees, or misses, the
    slip as its source does.

    Args:
        source: the drift source.
        seeds: runs, seeds ``0 .. seeds - 1``.
        distances: where to record (m).
        sim_rate: simulation steps per second (default: the source's).
        ekf, sim: parameters over the source's for the EKF and ``sim_rover`` (e.g. fix sources).

    Returns:
        ``(errors, covariances)``: ``(seeds, len(distances), 2)`` m and ``(seeds, len(distances), 2, 2)`` m².
    """
    from .ekf import PlanarEKF
    from .field import Field
    from .world import SimWorld

    params = source.parameters()
    sim_p = {k: v for k, v in params.items() if '.' not in k}
    ekf_p = {**{k.split('.', 1)[1]: v for k, v in params.items() if k.startswith('ekf.')}, 'initial_xy_std': 1e-3,
             **(ekf or {})}
    far = max(distances) + 100.0
    flat = Field(np.zeros((2, 2)), (-far, far, -far, far), name='flat')
    errs, covs = [], []
    for seed in range(seeds):
        world = SimWorld(flat, {**sim_p, 'seed': seed, 'sim_rate': sim_rate or source.sim_rate, 'fix_rate': 0.0,
                                'reading_rate': 0.0, 'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0,
                                **(sim or {})})
        f = PlanarEKF(initial_estimate({'sim_rover': world.params, 'ekf': dict(PlanarEKF(ekf_p).params)}, seed)['ekf'])
        e_row, c_row = [], []
        for d in distances:
            while world.distance_travelled < d:
                s = world.step(source.speed, -2.0 * world.true_pose[2])
                if s.fix is not None:
                    f.add_fix(s.t, s.fix.xy, s.fix.cov)
                f.add_odometry(s.t, s.odometry.v, s.odometry.w, s.odometry.vel_cov, vy=s.odometry.vy)
            e_row.append(world.true_pose[:2] - f.xy)
            c_row.append(f.cov_xy)
        errs.append(e_row)
        covs.append(c_row)
    return np.array(errs), np.array(covs)

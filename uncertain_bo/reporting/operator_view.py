"""What an operator sees of the explorer, without ROS: ellipse geometry, GP maps, status reports.

The ROS layer (:mod:`uncertain_bo.ros.operator_view`) only copies these numbers into
``visualization_msgs/MarkerArray``, ``nav_msgs/OccupancyGrid`` and ``diagnostic_msgs/DiagnosticArray``.

- :func:`covariance_ellipse`: the ``n_sigma`` contour of a 2-D Gaussian as a centre, two diameters and a
  yaw (what a flat ``CYLINDER`` marker needs).
- :class:`GridSpec` / :func:`grid_over`: a coarse grid over the search area (at most ``max_cells`` cells
  along its longer side), cell centres in ``OccupancyGrid`` order (row-major, rows along +y).
- :func:`scale_to_occupancy`: values to the 0-100 occupancy range (-1 = unknown) and the
  :class:`GridScale` that maps them back.
- :class:`StatusReporter`: the explorer's state as a diagnostics level, a message and key/value pairs.
"""
from __future__ import annotations

import datetime as _dt
import enum
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ['Ellipse', 'covariance_ellipse', 'GridSpec', 'grid_over', 'GridScale', 'scale_to_occupancy',
           'colour_ramp', 'Level', 'StatusReport', 'StatusReporter', 'STATE_TEXT', 'stale_pose_age']

#: explorer state -> what the operator reads (the issue's vocabulary: waiting for pose, driving,
#: measuring, paused, done)
STATE_TEXT = {
    'waiting for pose': 'waiting for pose',
    'deciding': 'deciding',
    'driving': 'driving',
    'relocalising': 're-localising (to a fix source, or surfacing)',
    'dwelling': 'measuring (settling)',
    'measuring': 'measuring',
    'paused': 'paused',
    'done': 'done',
}


# ------------------------------------------------------------------------------------------ ellipses
@dataclass(frozen=True)
class Ellipse:
    """An ellipse in the plane: ``center`` (2,) m, full axis lengths ``diameters`` (major, minor) m, and
    ``yaw`` (rad, counter-clockwise from +x) of the major axis.

    Example:
        The 2-σ contour of a pose covariance of 2 m std east and 1 m north, then of a Dirac (still drawn):

        >>> import numpy as np
        >>> ellipse = covariance_ellipse([10.0, 20.0], np.diag([4.0, 1.0]), n_sigma=2.0)
        >>> ellipse.center.tolist(), ellipse.diameters, ellipse.yaw           # m, m, rad
        ([10.0, 20.0], (8.0, 4.0), 0.0)
        >>> covariance_ellipse([10.0, 20.0], np.zeros((2, 2)), min_diameter=0.3).diameters
        (0.3, 0.3)
    """

    center: np.ndarray
    diameters: tuple[float, float]
    yaw: float


def covariance_ellipse(mean: Sequence[float], cov: np.ndarray, n_sigma: float = 2.0,
                       min_diameter: float = 0.05) -> Ellipse:
    """The ``n_sigma`` contour of ``N(mean, cov)``: semi-axes ``n_sigma * sqrt(eigenvalues)``.

    Args:
        mean: (2,) centre, m.
        cov: (2, 2) covariance, m² (symmetrised; round-off negative eigenvalues count as 0).
        n_sigma: contour in standard deviations (2: about 86 % of the mass of a 2-D Gaussian).
        min_diameter: floor on each diameter, m, so an exactly known location (zero covariance, a Dirac)
            is still drawn.
    """
    c = np.asarray(cov, dtype=float).reshape(2, 2)
    c = 0.5 * (c + c.T)
    w, v = np.linalg.eigh(c)             # ascending
    w = np.clip(w, 0.0, None)
    major = v[:, 1]
    yaw = math.atan2(major[1], major[0])
    yaw = (yaw + math.pi / 2) % math.pi - math.pi / 2  # an axis, not a direction: (-pi/2, pi/2]
    d_major, d_minor = (max(2.0 * n_sigma * math.sqrt(x), min_diameter) for x in (w[1], w[0]))
    return Ellipse(np.asarray(mean, dtype=float).reshape(2), (d_major, d_minor), yaw)


# ------------------------------------------------------------------------------------------ grids
@dataclass(frozen=True)
class GridSpec:
    """A grid of ``width x height`` square cells of ``resolution`` m with its lower-left corner at
    ``(x0, y0)`` (the ``OccupancyGrid`` origin).

    Example:
        A 200 m x 100 m search area with 40 cells along its longer side: 5 m cells, centres in ``OccupancyGrid``
        order (row-major, rows along +y):

        >>> spec = grid_over([0.0, 200.0, 50.0, 150.0], max_cells=40)
        >>> spec.resolution, spec.width, spec.height
        (5.0, 40, 20)
        >>> spec.centers()[[0, 1, 40]].tolist()
        [[2.5, 52.5], [7.5, 52.5], [2.5, 57.5]]
    """

    x0: float
    y0: float
    resolution: float
    width: int
    height: int

    def centers(self) -> np.ndarray:
        """``(height * width, 2)`` cell centres, row-major with rows along +y (``OccupancyGrid.data``
        order: index ``row * width + col``)."""
        xs = self.x0 + (np.arange(self.width) + 0.5) * self.resolution
        ys = self.y0 + (np.arange(self.height) + 0.5) * self.resolution
        gx, gy = np.meshgrid(xs, ys)
        return np.column_stack([gx.ravel(), gy.ravel()])


def grid_over(bounds: Sequence[float], max_cells: int) -> GridSpec:
    """Square-cell grid covering ``bounds`` ``[xmin, xmax, ymin, ymax]`` with ``max_cells`` cells along the
    longer side (the shorter side gets as many as needed to cover it).

    Raises:
        ValueError: empty bounds or ``max_cells < 1``.
    """
    xmin, xmax, ymin, ymax = (float(b) for b in bounds)
    if not (xmax > xmin and ymax > ymin) or max_cells < 1:
        raise ValueError(f'need xmax > xmin, ymax > ymin and max_cells >= 1, got {list(bounds)}, {max_cells}')
    res = max(xmax - xmin, ymax - ymin) / int(max_cells)
    width = max(1, math.ceil((xmax - xmin) / res - 1e-9))
    height = max(1, math.ceil((ymax - ymin) / res - 1e-9))
    return GridSpec(xmin, ymin, res, width, height)


@dataclass(frozen=True)
class GridScale:
    """Cell value 0 is ``lo`` and 100 is ``hi`` (linear; field units).

    Example:
        Temperatures of a GP map to occupancy values 0-100 (unknown: -1) and back:

        >>> import numpy as np
        >>> cells, scale = scale_to_occupancy(np.array([10.0, 15.0, 20.0, np.nan]))
        >>> cells.tolist(), scale
        ([0, 50, 100, -1], GridScale(lo=10.0, hi=20.0))
        >>> scale.value(50), scale.describe('GP mean', '°C')
        (15.0, 'GP mean: 0 = 10 °C, 100 = 20 °C')
    """

    lo: float
    hi: float

    def value(self, cell: float) -> float:
        """Field value of an occupancy cell value (0-100)."""
        return self.lo + (self.hi - self.lo) * cell / 100.0

    def describe(self, name: str, unit: str = '') -> str:
        u = f' {unit}' if unit else ''
        return f'{name}: 0 = {self.lo:.4g}{u}, 100 = {self.hi:.4g}{u}'


def scale_to_occupancy(values: np.ndarray, lo: float | None = None,
                       hi: float | None = None) -> tuple[np.ndarray, GridScale]:
    """Map ``values`` linearly to int8 0-100 (0 = ``lo``, 100 = ``hi``; default: their finite min and max).

    Non-finite values become -1 (unknown). Values outside ``[lo, hi]`` are clipped. A constant field maps
    to 0.

    Returns:
        ``(cells int8 like values, scale)``.
    """
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    if lo is None or hi is None:
        if finite.any():
            lo = float(v[finite].min()) if lo is None else lo
            hi = float(v[finite].max()) if hi is None else hi
        else:
            lo, hi = 0.0, 1.0
    span = hi - lo
    cells = np.full(v.shape, -1, dtype=np.int8)
    if span > 0 and math.isfinite(span):
        cells[finite] = np.clip(np.rint(100.0 * (v[finite] - lo) / span), 0, 100).astype(np.int8)
    else:
        cells[finite] = 0
    return cells, GridScale(float(lo), float(hi))


_RAMP = np.array([[0.267, 0.005, 0.329], [0.231, 0.322, 0.546], [0.128, 0.567, 0.551],
                  [0.369, 0.789, 0.383], [0.993, 0.906, 0.144]])  # viridis at 0, .25, .5, .75, 1


def colour_ramp(t: float) -> tuple[float, float, float]:
    """RGB (0-1) of ``t`` in [0, 1] on a viridis-like ramp (clipped; NaN is grey)."""
    if not math.isfinite(t):
        return (0.5, 0.5, 0.5)
    x = min(max(t, 0.0), 1.0) * (len(_RAMP) - 1)
    i = min(int(x), len(_RAMP) - 2)
    c = _RAMP[i] + (x - i) * (_RAMP[i + 1] - _RAMP[i])
    return float(c[0]), float(c[1]), float(c[2])


# ------------------------------------------------------------------------------------------ status
class Level(enum.IntEnum):
    """Diagnostics levels (``diagnostic_msgs/DiagnosticStatus``).

    Example:
        >>> Level.WARN < Level.ERROR, Level(3).name          # diagnostic_msgs/DiagnosticStatus levels
        (True, 'STALE')
    """

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True)
class StatusReport:
    """One diagnostics entry: level, one-line message and ordered key/value strings.

    Example:
        What the ROS layer copies into a ``diagnostic_msgs/DiagnosticStatus``:

        >>> report = StatusReport(Level.WARN, 'waiting for pose', [('measurements', '0/30'), ('rejected total', '0')])
        >>> int(report.level), report.message, dict(report.values)['measurements']
        (1, 'waiting for pose', '0/30')
    """

    level: Level
    message: str
    values: list[tuple[str, str]]


def stale_pose_age(max_pose_age: float) -> float:
    """Age (s) of the newest valid pose above which the status warns that localisation is silent."""
    return max(1.0, 4.0 * max_pose_age)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f'{v:.4g}' if math.isfinite(v) else str(v)
    if isinstance(v, (list, tuple, np.ndarray)):
        return ', '.join(_fmt(float(x)) for x in v)
    return str(v)


class StatusReporter:
    """Turns an :class:`~uncertain_bo.explorer.Explorer` into :class:`StatusReport` s.

    Level: ERROR while paused (localisation diverged, or the journal cannot write) and, in any state, while the
    journal holds records it could not write (the message says why and how many); WARN while waiting for a valid
    pose, when the newest valid pose is older than :func:`stale_pose_age`, or when inputs were rejected since the
    previous report; OK otherwise (including done). The rejection counters are cumulative values, and so are the
    journal's ``journal faults`` (times writing stopped working) and ``journal write failures`` (failed
    attempts), and the journal records a resume skipped as damaged or found missing
    (:attr:`~uncertain_bo.planning.planner.Planner.journal_damage`); ``journal records pending`` is the number held in
    memory now.

    Example:
        An explorer that has no pose yet warns; its counters are the report's values:

        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, planner_from_parameters
        >>> from uncertain_bo.parameters.specs import validate
        >>> from uncertain_bo.recording.replay import ReplayHost
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 12})
        >>> explorer = Explorer(planner_from_parameters(params), ReplayHost(), params)
        >>> report = StatusReporter().report(explorer, now=None)
        >>> report.level, report.message, dict(report.values)['measurements']
        (<Level.WARN: 1>, 'waiting for pose', '0/12')
    """

    def __init__(self):
        self._rejected_total = 0

    def report(self, explorer, now: float | None, extra: dict[str, Any] | None = None) -> StatusReport:
        """Status of ``explorer`` at ``now`` (host clock, s; None if it is not valid yet).

        Args:
            explorer: the explorer.
            now: current time on the clock of the pose stamps.
            extra: more key/values appended as they are (e.g. journal path, GP map scales).
        """
        from ..explorer import State, execution_noise_summary

        ex, p = explorer, explorer.params
        state = ex.state
        n, n_max = ex.planner.n, p['max_measurements']
        pose = ex.latest_pose
        age = (now - pose.stamp) if (pose is not None and now is not None) else None
        trace = (float(pose.cov[0][0]) + float(pose.cov[1][1])) if pose is not None else None
        total = sum(ex.rejected.values())
        new_rejections = total - self._rejected_total
        self._rejected_total = total

        level, message = Level.OK, STATE_TEXT.get(state.value, state.value)
        if state is State.PAUSED:
            level, message = Level.ERROR, f'paused: {ex.paused_reason}'
        elif state is State.DONE:
            message = f'done: {n}/{n_max} measurements'
            if ex.done_reason and not ex.done_reason.startswith('max_measurements'):
                message += f' ({ex.done_reason})'
        elif state is State.WAITING_FOR_POSE:
            level = Level.WARN
            confirming = ex.inputs.pending_reason   # the pose gate confirms the first place (several poses agree)
            message = 'waiting for pose' + (f' ({confirming})' if confirming else
                                            f' (last rejection: {ex.last_reason})' if ex.last_reason else '')
        else:
            if ex.target is not None and state is State.DRIVING:
                message = f'driving to target {n + 1}/{n_max} ({ex.target[0]:.2f}, {ex.target[1]:.2f})'
            elif state in (State.DWELLING, State.MEASURING):
                message = f'{message} at target {n + 1}/{n_max}'
            if age is not None and age > stale_pose_age(p['max_pose_age']):
                level, message = Level.WARN, f'{message}; no valid pose for {age:.1f} s'
        journal_fault = getattr(ex, 'journal_fault', None)
        if journal_fault is not None and state is not State.PAUSED:
            level, message = Level.ERROR, f'{message}; {journal_fault}'
        if new_rejections > 0 and level < Level.WARN:
            level = Level.WARN
        if new_rejections > 0 and ex.last_reason:
            message = f'{message}; {new_rejections} input(s) rejected, last: {ex.last_reason}'

        damage = ex.planner.journal_damage   # what resuming a damaged journal left out
        values: list[tuple[str, str]] = [
            ('state', STATE_TEXT.get(state.value, state.value)),
            ('measurements', f'{n}/{n_max}'),
            ('en-route readings', str(ex.planner.n_en_route)),
            ('targets skipped', str(getattr(ex, 'skipped_targets', 0))),
            ('keep-out zones', str(len(ex.planner.keep_out))),
            ('journal records skipped (damaged)', str(damage['records_skipped'])),
            ('journal records missing', str(damage['records_missing'])),
            ('target', _fmt(ex.target) if ex.target is not None else ''),
            ('goal sent because', ex.goal_reason if ex.target is not None else ''),
        ]
        if ex.target is not None and pose is not None:
            values.append(('distance to target (m)', _fmt(float(np.linalg.norm(pose.xy - ex.target)))))
        if ex.last_decision_wall_time is not None:
            t = _dt.datetime.fromtimestamp(ex.last_decision_wall_time, _dt.timezone.utc)
            values.append(('last decision (UTC)', t.isoformat(timespec='seconds')))
        if ex.planner.decisions:
            d = ex.planner.decisions[-1]
            values.append(('last decision seconds', _fmt(d.seconds)))
            values.append(('last decision phase', d.phase))
        values += _budget_values(ex, now)
        noise = execution_noise_summary(ex.planner)
        if noise is not None:
            values += [('execution noise model', noise['source']),
                       ('execution noise std x, y (m)', _fmt(noise['std'])),
                       ('execution noise correlation', _fmt(noise['correlation']))]
        values += [
            ('pose age (s)', _fmt(age) if age is not None else 'no valid pose yet'),
            ('position covariance trace (m^2)', _fmt(trace) if trace is not None else ''),
            ('max_covariance_trace (m^2)', _fmt(float(p['max_covariance_trace']))),
            ('poses received', str(ex.received['poses'])),
            ('readings received', str(ex.received['readings'])),
            ('goal timeouts', str(ex.goal_timeouts)),
            ('rejected total', str(total)),
        ]
        gate = ex.inputs.gate      # pose plausibility (explorer/pose_gate.py): bursts of jumps, re-anchorings
        values += [('pose gate bursts', str(gate.bursts)), ('pose gate re-anchored', str(gate.reanchored)),
                   ('pose covariances floored', str(ex.inputs.floored))]
        values += [(f'rejected {k}', str(v)) for k, v in sorted(ex.rejected.items())]
        values.append(('last rejection', ex.last_reason or ''))
        if ex.paused_reason:
            values.append(('paused because', ex.paused_reason))
        journal = ex.planner.journal_file
        if journal is not None:
            values += [('journal records pending', str(journal.held)),
                       ('journal faults', str(journal.faults)),
                       ('journal write failures', str(journal.write_failures)),
                       ('journal fault', journal.fault or '')]
        values += [(k, _fmt(v)) for k, v in (extra or {}).items()]
        return StatusReport(level, message, values)


def _budget_values(ex, now: float | None) -> list[tuple[str, str]]:
    """Distance driven and mission time against their budgets, and why the mission ended."""
    p, budget = ex.params, ex.budget
    out = [('distance driven (m)', _fmt(budget.distance)
            + (f" of max_distance {_fmt(float(p['max_distance']))}" if p['max_distance'] > 0 else ''))]
    if now is not None:
        out.append(('mission time (s)', _fmt(budget.elapsed(now))
                    + (f" of max_mission_time {_fmt(float(p['max_mission_time']))}" if p['max_mission_time'] > 0
                       else '')))
    if ex.done_reason:
        out.append(('stopped because', ex.done_reason))
    return out

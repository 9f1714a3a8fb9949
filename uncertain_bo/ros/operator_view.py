"""Operator-view messages of the explorer: MarkerArray, OccupancyGrid (GP maps), DiagnosticArray.

Geometry, scaling and the state report come from the ROS-free :mod:`uncertain_bo.reporting.operator_view`; this
module only fills messages. Marker namespaces (all in the explorer's ``frame_id``, normally ``map``):

==================  =================================================================================
``search_bounds``   the search area (LINE_STRIP)
``targets``         every past target (SPHERE_LIST, white)
``measurements``    each measured location: a flat CYLINDER spanning its 2σ covariance ellipse, rotated
                    along the ellipse axes, coloured by the reading (GP-mean ramp); id = measurement index
``execution``       target -> measured location of every measurement (LINE_LIST, grey)
``recommendation``  current recommendation (tall green CYLINDER) and its text
``goal``            current goal (orange SPHERE) and the line from the rover's estimate to it
``status``          text: state, progress and the GP maps' colour scales
==================  =================================================================================
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point
from nav_msgs.msg import OccupancyGrid
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from ..reporting.operator_view import (GridScale, GridSpec, Level, StatusReport, colour_ramp, covariance_ellipse,
                                       grid_over, scale_to_occupancy)
from .conversions import make_header, yaw_to_quaternion

__all__ = ['MarkerScene', 'make_markers', 'make_occupancy_grid', 'make_diagnostics', 'ELLIPSE_SIGMA', 'gp_maps',
           'rover_markers']

#: measured-location ellipses are drawn at this many standard deviations
ELLIPSE_SIGMA = 2.0

_LEVEL_BYTES = {Level.OK: DiagnosticStatus.OK, Level.WARN: DiagnosticStatus.WARN,
                Level.ERROR: DiagnosticStatus.ERROR, Level.STALE: DiagnosticStatus.STALE}


def _rgba(r: float, g: float, b: float, a: float = 1.0) -> ColorRGBA:
    return ColorRGBA(r=float(r), g=float(g), b=float(b), a=float(a))


def _point(x: float, y: float, z: float = 0.0) -> Point:
    return Point(x=float(x), y=float(y), z=float(z))


class MarkerScene:
    """Everything the markers show (plain numbers, filled by the node).

    Attributes:
        bounds: search area ``[xmin, xmax, ymin, ymax]``, m.
        targets: ``(n, 2)`` past targets.
        means, covariances, readings: measured locations ``(n, 2)``, ``(n, 2, 2)`` and readings ``(n,)``.
        recommendation: ``(x, y, mean, std)`` or None.
        goal: current goal ``(2,)`` or None (none while done or waiting).
        rover: latest position estimate ``(2,)`` or None.
        status: status text lines.
        reading_scale: colour scale of the readings (the GP-mean map's scale), or None.

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.ros.operator_view import MarkerScene, make_markers
        >>> scene = MarkerScene([0.0, 50.0, 0.0, 50.0])
        >>> scene.goal, scene.status = np.array([10.0, 20.0]), ['explorer: driving, 0/8 measurements']
        >>> markers = make_markers(scene, 'map', stamp=1.0)
        >>> sorted({m.ns for m in markers.markers} & {'search_bounds', 'goal', 'status'})
        ['goal', 'search_bounds', 'status']
    """

    def __init__(self, bounds: Sequence[float]):
        self.bounds = list(bounds)
        self.targets = np.zeros((0, 2))
        self.means = np.zeros((0, 2))
        self.covariances = np.zeros((0, 2, 2))
        self.readings = np.zeros(0)
        self.recommendation: tuple[float, float, float, float] | None = None
        self.goal: np.ndarray | None = None
        self.rover: np.ndarray | None = None
        self.status: list[str] = []
        self.reading_scale: GridScale | None = None

    @classmethod
    def of(cls, bounds: Sequence[float], planner, recommendation=None,
           reading_scale: 'GridScale | None' = None) -> 'MarkerScene':
        """The scene of a planner's measurements (targets, location distributions, readings) and a recommendation
        (:class:`~uncertain_bo.planning.planner.Recommendation` or None); goal, rover and status are the caller's."""
        scene = cls(bounds)
        if planner.n:
            loc = planner.locations
            scene.targets = planner.targets.numpy()
            scene.means = loc.mean.detach().numpy()
            scene.covariances = loc.covariance.detach().numpy()
            scene.readings = planner.y.numpy()
        if recommendation is not None:
            r = recommendation
            scene.recommendation = (float(r.target[0]), float(r.target[1]), r.mean, r.std)
        scene.reading_scale = reading_scale
        return scene


def make_markers(scene: MarkerScene, frame: str, stamp: float) -> MarkerArray:
    """MarkerArray of ``scene`` (see the module docstring for namespaces). Sizes follow the search area
    so the view is legible at any scale."""
    header = make_header(stamp, frame)
    xmin, xmax, ymin, ymax = scene.bounds
    extent = max(xmax - xmin, ymax - ymin)
    size = max(0.2, 0.012 * extent)            # sphere diameter, m
    line = max(0.03, 0.002 * extent)           # line width, m
    out = MarkerArray()

    def marker(ns: str, mid: int, kind: int) -> Marker:
        m = Marker(header=header, ns=ns, id=mid, type=kind, action=Marker.ADD)
        m.pose.orientation.w = 1.0
        m.lifetime = Duration(sec=0, nanosec=0)
        out.markers.append(m)
        return m

    b = marker('search_bounds', 0, Marker.LINE_STRIP)
    b.points = [_point(xmin, ymin), _point(xmax, ymin), _point(xmax, ymax), _point(xmin, ymax), _point(xmin, ymin)]
    b.scale.x = line
    b.color = _rgba(0.7, 0.7, 0.7, 0.8)

    t = marker('targets', 0, Marker.SPHERE_LIST)
    t.points = [_point(x, y, 0.1 * size) for x, y in scene.targets]
    t.scale.x = t.scale.y = t.scale.z = 0.6 * size
    t.color = _rgba(1.0, 1.0, 1.0, 0.9)

    e = marker('execution', 0, Marker.LINE_LIST)
    for tgt, mean in zip(scene.targets, scene.means):
        e.points += [_point(*tgt, 0.05 * size), _point(*mean, 0.05 * size)]
    e.scale.x = 0.5 * line
    e.color = _rgba(0.6, 0.6, 0.6, 0.8)

    scale = scene.reading_scale
    for i, (mean, cov, y) in enumerate(zip(scene.means, scene.covariances, scene.readings)):
        ell = covariance_ellipse(mean, cov, ELLIPSE_SIGMA, min_diameter=0.25 * size)
        m = marker('measurements', i, Marker.CYLINDER)
        m.pose.position = _point(*ell.center, 0.02 * size)
        m.pose.orientation = yaw_to_quaternion(ell.yaw)
        m.scale.x, m.scale.y, m.scale.z = ell.diameters[0], ell.diameters[1], 0.04 * size
        frac = ((y - scale.lo) / (scale.hi - scale.lo)) if (scale and scale.hi > scale.lo) else 0.5
        m.color = _rgba(*colour_ramp(frac), 0.6)

    if scene.recommendation is not None:
        x, y, mu, sd = scene.recommendation
        r = marker('recommendation', 0, Marker.CYLINDER)
        r.pose.position = _point(x, y, 1.5 * size)
        r.scale.x = r.scale.y = 0.8 * size
        r.scale.z = 3.0 * size
        r.color = _rgba(0.1, 0.9, 0.2, 0.9)
        rt = marker('recommendation', 1, Marker.TEXT_VIEW_FACING)
        rt.pose.position = _point(x, y, 3.5 * size)
        rt.scale.z = 1.2 * size
        rt.color = _rgba(0.1, 0.9, 0.2, 1.0)
        rt.text = f'best ({x:.1f}, {y:.1f}): {mu:.4g} ± {sd:.2g}'
    else:
        _delete(out, header, 'recommendation', (0, 1))

    if scene.goal is not None:
        g = marker('goal', 0, Marker.SPHERE)
        g.pose.position = _point(*scene.goal, 0.5 * size)
        g.scale.x = g.scale.y = g.scale.z = size
        g.color = _rgba(1.0, 0.55, 0.0, 0.95)
        if scene.rover is not None:
            gl = marker('goal', 1, Marker.LINE_STRIP)
            gl.points = [_point(*scene.rover, 0.1 * size), _point(*scene.goal, 0.1 * size)]
            gl.scale.x = line
            gl.color = _rgba(1.0, 0.55, 0.0, 0.6)
        else:
            _delete(out, header, 'goal', (1,))
    else:
        _delete(out, header, 'goal', (0, 1))

    s = marker('status', 0, Marker.TEXT_VIEW_FACING)
    s.pose.position = _point(xmin + 0.5 * (xmax - xmin), ymax + 0.06 * extent, 0.0)
    s.scale.z = 1.5 * size
    s.color = _rgba(1.0, 1.0, 1.0, 1.0)
    s.text = '\n'.join(scene.status)
    return out


def _delete(out: MarkerArray, header, ns: str, ids: Sequence[int]) -> None:
    for i in ids:
        out.markers.append(Marker(header=header, ns=ns, id=i, action=Marker.DELETE))


def make_occupancy_grid(spec: GridSpec, cells: np.ndarray, frame: str, stamp: float) -> OccupancyGrid:
    """``nav_msgs/OccupancyGrid`` of int8 ``cells`` (``height * width``, row-major, rows along +y;
    0-100, -1 unknown) on ``spec``."""
    msg = OccupancyGrid(header=make_header(stamp, frame))
    msg.info.map_load_time = msg.header.stamp
    msg.info.resolution = float(spec.resolution)
    msg.info.width, msg.info.height = int(spec.width), int(spec.height)
    msg.info.origin.position = _point(spec.x0, spec.y0)
    msg.info.origin.orientation.w = 1.0
    data = np.asarray(cells, dtype=np.int8).reshape(-1)
    if data.size != spec.width * spec.height:
        raise ValueError(f'{data.size} cells for a {spec.width} x {spec.height} grid')
    msg.data = data
    return msg


def make_diagnostics(report: StatusReport, name: str, hardware_id: str, stamp: float) -> DiagnosticArray:
    """``diagnostic_msgs/DiagnosticArray`` with one status built from ``report``."""
    status = DiagnosticStatus(level=_LEVEL_BYTES[report.level], name=name, message=report.message[:1000],
                              hardware_id=hardware_id)
    status.values = [KeyValue(key=k, value=v[:1000]) for k, v in report.values]
    msg = DiagnosticArray(header=make_header(stamp, ''))
    msg.status = [status]
    return msg


def gp_maps(planner, bounds: Sequence[float], cells: int, frame: str,
            stamp: float) -> tuple[OccupancyGrid, OccupancyGrid, tuple[GridScale, GridScale] | None]:
    """The GP maps of ``planner`` over ``bounds`` (``cells`` along the longer side): ``(robust posterior mean grid,
    its std grid, their scales)``, each scaled to 0-100; all cells -1 and scales None before the first
    measurement."""
    import torch

    from ..distributions import DTYPE

    spec = grid_over(bounds, cells)
    scales = None
    if planner.n == 0:
        mean_cells = std_cells = np.full(spec.width * spec.height, -1, dtype=np.int8)
    else:
        with torch.no_grad():
            mean, std = planner.predict(torch.as_tensor(spec.centers(), dtype=DTYPE))
        mean_cells, mean_scale = scale_to_occupancy(mean.numpy())
        std_cells, std_scale = scale_to_occupancy(std.numpy(), lo=0.0)
        scales = (mean_scale, std_scale)
    stamp = clean_stamp(stamp)
    return (make_occupancy_grid(spec, mean_cells, frame, stamp), make_occupancy_grid(spec, std_cells, frame, stamp),
            scales)


def rover_markers(name: str, index: int, bounds: Sequence[float], path: Sequence[Sequence[float]],
                  rover: Sequence[float] | None, goal: Sequence[float] | None, frame: str,
                  stamp: float) -> MarkerArray:
    """One rover's markers in a team (namespaces ``<name>/path``: its measured locations and current estimate in
    order, LINE_STRIP; ``<name>/goal``: its pending target, SPHERE, and the line to it; ``<name>/label``: its
    name at its estimate), coloured by its ``index``. ``path`` ``(k, 2)``, ``rover``/``goal`` ``(2,)`` or None (m,
    ``frame``)."""
    header = make_header(clean_stamp(stamp), frame)
    xmin, xmax, ymin, ymax = bounds
    extent = max(xmax - xmin, ymax - ymin)
    size, line = max(0.2, 0.012 * extent), max(0.03, 0.002 * extent)
    colour = colour_ramp((0.15 + 0.7 * index / 3.0) % 1.0)
    out = MarkerArray()

    def marker(ns: str, mid: int, kind: int) -> Marker:
        m = Marker(header=header, ns=f'{name}/{ns}', id=mid, type=kind, action=Marker.ADD)
        m.pose.orientation.w = 1.0
        out.markers.append(m)
        return m

    points = [*path, *([rover] if rover is not None else [])]
    p = marker('path', 0, Marker.LINE_STRIP)
    p.points = [_point(x, y, 0.08 * size) for x, y in points]
    p.scale.x = line
    p.color = _rgba(*colour, 0.9)
    if goal is not None:
        g = marker('goal', 0, Marker.SPHERE)
        g.pose.position = _point(*goal, 0.5 * size)
        g.scale.x = g.scale.y = g.scale.z = size
        g.color = _rgba(*colour, 0.95)
        gl = marker('goal', 1, Marker.LINE_STRIP)
        gl.points = [_point(*(rover if rover is not None else goal), 0.1 * size), _point(*goal, 0.1 * size)]
        gl.scale.x = line
        gl.color = _rgba(*colour, 0.6)
    else:
        _delete(out, header, f'{name}/goal', (0, 1))
    if rover is not None:
        t = marker('label', 0, Marker.TEXT_VIEW_FACING)
        t.pose.position = _point(*rover, 1.5 * size)
        t.scale.z = 1.2 * size
        t.color = _rgba(*colour, 1.0)
        t.text = name
    return out


def clean_stamp(seconds: float) -> float:
    """A time usable in a header (non-negative, finite)."""
    return seconds if (math.isfinite(seconds) and seconds >= 0) else 0.0

"""The explorer node's operator view: the GP maps (``~/gp_mean``, ``~/gp_std``, after each measurement), the
markers (``~/markers``) and ``/diagnostics``, each every ``diagnostics_period`` (wall clock) and on a change of the
explorer's state (a flood of rejected inputs re-publishes /diagnostics at most every :data:`_MIN_STATUS_GAP` s).

The messages are filled by :mod:`uncertain_bo.ros.operator_view` from the ROS-free
:mod:`uncertain_bo.operator_view`; the node is :class:`uncertain_bo.ros.explorer.ExplorerNode`.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from ..distributions import DTYPE
from ..explorer import State
from ..operator_view import STATE_TEXT, grid_over, scale_to_occupancy
from .operator_view import ELLIPSE_SIGMA, MarkerScene, clean_stamp, make_diagnostics, make_markers, make_occupancy_grid

__all__ = ['ExplorerView']

#: least wall time between two state-change diagnostics (rejection floods do not flood /diagnostics), s
_MIN_STATUS_GAP = 0.2


class ExplorerView:
    """The operator view of :class:`~uncertain_bo.ros.explorer.ExplorerNode` (a part of it: it reads the node's
    explorer, parameters and publishers, and keeps the maps' scales and the last published status)."""

    def _status_on_change(self) -> None:
        ex = self.explorer
        total = sum(ex.rejected.values())
        state_changed = ex.state is not self._last_state
        if state_changed or total != self._last_rejected:
            wall = time.monotonic()
            if state_changed or wall - self._last_status_wall >= _MIN_STATUS_GAP:
                self._publish_status()
                if state_changed:
                    self._publish_markers()

    def _periodic(self) -> None:
        self._publish_status()
        self._publish_markers()

    def _update_maps(self) -> None:
        """Publish ~/gp_mean and ~/gp_std on a coarse grid (after each measurement only)."""
        self._maps_dirty = False
        t0 = time.perf_counter()
        planner = self.explorer.planner
        spec = grid_over(self.p['search_bounds'], self.p['gp_map_cells'])
        if planner.n == 0:
            mean_cells = std_cells = np.full(spec.width * spec.height, -1, dtype=np.int8)
            self._map_scales = None
        else:
            with torch.no_grad():
                mean, std = planner.predict(torch.as_tensor(spec.centers(), dtype=DTYPE))
            mean_cells, mean_scale = scale_to_occupancy(mean.numpy())
            std_cells, std_scale = scale_to_occupancy(std.numpy(), lo=0.0)
            self._map_scales = (mean_scale, std_scale)
        stamp = clean_stamp(self._now())
        frame = self.p['frame_id']
        self.mean_pub.publish(make_occupancy_grid(spec, mean_cells, frame, stamp))
        self.std_pub.publish(make_occupancy_grid(spec, std_cells, frame, stamp))
        self._map_seconds = time.perf_counter() - t0

    def _scale_texts(self) -> list[str]:
        if self._map_scales is None:
            return []
        m, s = self._map_scales
        return [m.describe('~/gp_mean (robust mean)'), s.describe('~/gp_std')]

    def _publish_status(self) -> None:
        ex = self.explorer
        self._last_state = ex.state
        self._last_rejected = sum(ex.rejected.values())
        self._last_status_wall = time.monotonic()
        extra: dict[str, Any] = {'journal': str(self.run_dir / 'journal.jsonl')}
        extra.update({f'scale {t.split(":")[0]}': t.split(': ', 1)[1] for t in self._scale_texts()})
        if self._map_seconds is not None:
            extra['gp map seconds'] = self._map_seconds
        extra['goal interface'] = self.goal_interface
        if self.nav2 is not None:
            extra.update(self.nav2.values())
        report = self._reporter.report(ex, self._clock_now(), extra)
        self.diag_pub.publish(make_diagnostics(report, f'{self.get_name()}: exploration',
                                               self.get_fully_qualified_name(), clean_stamp(self._now())))

    def _publish_markers(self) -> None:
        ex, planner = self.explorer, self.explorer.planner
        scene = MarkerScene(self.p['search_bounds'])
        if planner.n:
            loc = planner.locations
            scene.targets = planner.targets.numpy()
            scene.means = loc.mean.detach().numpy()
            scene.covariances = loc.covariance.detach().numpy()
            scene.readings = planner.y.numpy()
        if self.recommendation is not None:
            r = self.recommendation
            scene.recommendation = (float(r.target[0]), float(r.target[1]), r.mean, r.std)
        if ex.target is not None and ex.state in (State.DRIVING, State.DWELLING, State.MEASURING, State.PAUSED):
            scene.goal = ex.target
        pose = ex.latest_pose
        scene.rover = pose.xy if pose is not None else None
        if self._map_scales is not None:
            scene.reading_scale = self._map_scales[0]
        text = STATE_TEXT.get(ex.state.value, ex.state.value)
        scene.status = [f"explorer: {text}, {planner.n}/{self.p['max_measurements']} measurements"
                        + (f' ({ex.paused_reason})' if ex.paused_reason else ''),
                        f'ellipses: {ELLIPSE_SIGMA:g} sigma, colour = reading', *self._scale_texts()]
        self.markers_pub.publish(make_markers(scene, self.p['frame_id'], clean_stamp(self._now())))

"""The Foxglove layout shipped as ``config/foxglove_layout.json``: the explorer's map, path, covariance ellipses,
targets and diagnostics, live (``foxglove_bridge`` on a ROS machine; ``uncertain-bo demo --foxglove PORT`` without
one) or from a recording (``record: true``).

The file is Foxglove's layout JSON as its "Layouts > Import from file..." reads and "Export..." writes it: panel
configurations by panel id (``"<panel type>!<name>"``) in ``configById``, and ``layout``, the tree that places them
(a panel id, or ``{"direction": "row" | "column", "first": ..., "second": ..., "splitPercentage": ...}``), with
``globalVariables``, ``userNodes`` and ``playbackConfig``. Panels:

- **3D, GP mean** (``3D!gp_mean``): ``~/gp_mean`` (the robust posterior mean as an OccupancyGrid, dark = low, yellow =
  high), ``~/markers`` (targets, each measured location with its 2-sigma covariance ellipse coloured by the reading,
  the recommendation, the current goal and the status text), ``plan`` (the line to the current target) and
  ``goal_pose``; top-down on the ``map`` frame;
- **3D, GP std** (``3D!gp_std``): ``~/gp_std`` and the markers: where the model is unsure;
- **diagnostics** (``DiagnosticSummary!explorer``, ``DiagnosticStatusPanel!explorer``): ``/diagnostics``, the
  explorer's state, counters and the recording's state;
- **readings** (``Plot!reading``): ``/reading``'s temperature (the simulated sensor's type; edit the path for another
  reading_type);
- **decisions** (``RawMessages!journal``): ``~/journal``, each journal record (decisions with their metadata,
  measurements, recommendations) as JSON text (recordings only: it is the recorder's topic).

Topic names are those of an explorer named ``explorer`` in the root namespace (the demo's, ``ros2 run``'s); for a
namespaced one, change them in Foxglove's panel settings. Regenerate the file with
``python -m uncertain_bo.recording.layout > config/foxglove_layout.json`` after changing this module.
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ['foxglove_layout', 'LAYOUT_TOPICS', 'render']

#: topic -> type of everything the layout shows (explorer 'explorer' in the root namespace)
LAYOUT_TOPICS = {
    '/explorer/gp_mean': 'nav_msgs/msg/OccupancyGrid',
    '/explorer/gp_std': 'nav_msgs/msg/OccupancyGrid',
    '/explorer/markers': 'visualization_msgs/msg/MarkerArray',
    '/plan': 'nav_msgs/msg/Path',
    '/goal_pose': 'geometry_msgs/msg/PoseStamped',
    '/diagnostics': 'diagnostic_msgs/msg/DiagnosticArray',
    '/reading': 'sensor_msgs/msg/Temperature',
    '/explorer/journal': 'std_msgs/msg/String',
}


def _grid(visible: bool, low: str, high: str) -> dict[str, Any]:
    """3D-panel settings of a GP map (an OccupancyGrid scaled to 0-100): a colour ramp from ``low`` to ``high``."""
    return {'visible': visible, 'colorMode': 'custom', 'minColor': low, 'maxColor': high,
            'unknownColor': '#00000000', 'invalidColor': '#ff00ffff', 'frameLocked': False, 'alpha': 0.85}


def _three_d(grid: str) -> dict[str, Any]:
    """A top-down 3D panel on ``map`` with the GP map ``grid`` under the explorer's markers, plan and goal."""
    ramps = {'/explorer/gp_mean': ('#440154ff', '#fde725ff'), '/explorer/gp_std': ('#000004ff', '#fcffa4ff')}
    topics: dict[str, Any] = {topic: _grid(topic == grid, *ramp) for topic, ramp in ramps.items()}
    topics.update({
        '/explorer/markers': {'visible': True},
        '/plan': {'visible': True, 'type': 'line', 'lineWidth': 0.3, 'gradient': ['#ff8c00ff', '#ff8c00ff']},
        '/goal_pose': {'visible': True, 'type': 'arrow', 'color': '#ff8c00ff'},
    })
    return {
        'cameraState': {'perspective': False, 'distance': 160, 'phi': 0, 'thetaOffset': 0,
                        'target': [0, 0, 0], 'targetOffset': [0, 0, 0], 'targetOrientation': [0, 0, 0, 1],
                        'fovy': 45, 'near': 0.5, 'far': 5000},
        'followMode': 'follow-none',
        'followTf': 'map',
        'scene': {'enableStats': False, 'backgroundColor': '#202020'},
        'transforms': {},
        'topics': topics,
        'layers': {'grid': {'layerId': 'foxglove.Grid', 'visible': False, 'frameId': 'map', 'size': 100,
                            'divisions': 10, 'lineWidth': 1, 'color': '#808080ff', 'position': [0, 0, 0],
                            'rotation': [0, 0, 0], 'label': 'Grid', 'instanceId': 'grid'}},
        'publish': {'type': 'point', 'poseTopic': '/move_base_simple/goal', 'pointTopic': '/clicked_point',
                    'poseEstimateTopic': '/initialpose', 'poseEstimateXDeviation': 0.5,
                    'poseEstimateYDeviation': 0.5, 'poseEstimateThetaDeviation': 0.26179939},
        'imageMode': {},
    }


def foxglove_layout() -> dict[str, Any]:
    """The layout (module docstring) as a JSON-ready dict."""
    config = {
        '3D!gp_mean': _three_d('/explorer/gp_mean'),
        '3D!gp_std': _three_d('/explorer/gp_std'),
        'DiagnosticSummary!explorer': {'topicToRender': '/diagnostics', 'minLevel': 0, 'pinnedIds': [],
                                       'hardwareIdFilter': '', 'sortByLevel': True},
        'DiagnosticStatusPanel!explorer': {'topicToRender': '/diagnostics', 'selectedHardwareId': '/explorer',
                                           'selectedName': 'explorer: exploration', 'splitFraction': 0.5},
        'Plot!reading': {'paths': [{'value': '/reading.temperature', 'enabled': True, 'timestampMethod': 'receiveTime',
                                    'label': 'reading', 'showLine': False}],
                         'showXAxisLabels': True, 'showYAxisLabels': True, 'showLegend': True,
                         'legendDisplay': 'floating', 'isSynced': True, 'xAxisVal': 'timestamp'},
        'RawMessages!journal': {'topicPath': '/explorer/journal', 'diffEnabled': False, 'diffMethod': 'custom',
                                'diffTopicPath': '', 'showFullMessageForDiff': False},
    }
    layout = {
        'direction': 'row', 'splitPercentage': 62,
        'first': {'direction': 'column', 'splitPercentage': 70, 'first': '3D!gp_mean', 'second': 'Plot!reading'},
        'second': {'direction': 'column', 'splitPercentage': 45, 'first': '3D!gp_std',
                   'second': {'direction': 'column', 'splitPercentage': 50,
                              'first': {'direction': 'row', 'splitPercentage': 50,
                                        'first': 'DiagnosticSummary!explorer',
                                        'second': 'DiagnosticStatusPanel!explorer'},
                              'second': 'RawMessages!journal'}},
    }
    return {'configById': config, 'globalVariables': {}, 'userNodes': {}, 'playbackConfig': {'speed': 1},
            'layout': layout}


def render() -> str:
    """``config/foxglove_layout.json``'s text."""
    return json.dumps(foxglove_layout(), indent=2) + '\n'


if __name__ == '__main__':
    print(render(), end='')

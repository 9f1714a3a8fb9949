"""What a recording of an explorer's run holds, besides its inputs and operator view (docs/ros2.md, "Recording").

Three topics of the explorer's own namespace make a recording replayable exactly (:mod:`uncertain_bo.ros.replay`):

- :data:`CYCLE_TOPIC` (``std_msgs/msg/Float64``): the node-clock time, in s, of every measurement cycle (``tick``),
  written before the cycle runs. Its inputs are recorded as they are handed to the explorer, with their arrival time
  as the log time, in that order: the MCAP file keeps the order in which the explorer saw inputs and cycles.
- :data:`DECIDER_TOPIC` (``std_msgs/msg/String``, JSON ``{"job": i, "polls": k}``): with ``decide_in_background``,
  at which cycle the explorer took each background job's result (:mod:`uncertain_bo.recording.decider`).
- :data:`JOURNAL_TOPIC` (``std_msgs/msg/String``): every record the run's journal gets while it records, as JSON, the
  journal's header first (the records a restart resumed are not repeated), with the cycle after it was written
  (decisions with their metadata, measurements, recommendations, keep-out zones, revisions, run-time parameter
  changes). A replay compares its own journal with it.

``metadata.yaml``'s ``custom_data`` holds :data:`CUSTOM_DATA_KEY`: JSON with the node, whether it is a team, the
explorer's parameters, each input's topic and type, the three topics above, and how many records a restart had
resumed (:func:`describe`).
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ['CYCLE_TOPIC', 'DECIDER_TOPIC', 'JOURNAL_TOPIC', 'CYCLE_TYPE', 'TEXT_TYPE', 'CUSTOM_DATA_KEY',
           'FORMAT_VERSION', 'describe', 'described']

CYCLE_TOPIC = '~/cycle'
DECIDER_TOPIC = '~/decider'
JOURNAL_TOPIC = '~/journal'
CYCLE_TYPE = 'std_msgs/msg/Float64'
TEXT_TYPE = 'std_msgs/msg/String'
#: ``custom_data`` key of the recording's description
CUSTOM_DATA_KEY = 'uncertain_bo.recording'
#: version of that description
FORMAT_VERSION = 1


def describe(node: str, team: bool, parameters: dict[str, Any], inputs: dict[str, dict[str, dict[str, str]]],
             topics: dict[str, str], resumed: int = 0) -> str:
    """The ``custom_data`` value (JSON) of a recording.

    Args:
        node: the node's fully qualified name.
        team: a team explorer's recording (several rovers, one planner).
        parameters: the explorer's parameters at start-up.
        inputs: rover (``''`` for the explorer's one rover) -> input (``'pose'``, ``'reading'``, ``'revised_path'``)
            -> ``{'topic': resolved name, 'type': 'pkg/msg/Type'}``.
        topics: ``'cycle'``, ``'decider'``, ``'journal'`` -> resolved topic name.
        resumed: records the run's journal held when the recording started (a restart resumed them; they are not
            on the journal topic, and a replay, which starts a new journal, does not have them).
    """
    return json.dumps({'format': FORMAT_VERSION, 'node': node, 'team': team, 'parameters': parameters,
                       'inputs': inputs, 'topics': topics, 'resumed_records': resumed})


def described(custom_data: dict[str, str] | None) -> dict[str, Any] | None:
    """The description :func:`describe` wrote, from a bag's ``custom_data``; None when there is none (a bag recorded
    with ``ros2 bag record``, or one whose ``metadata.yaml`` was rebuilt) or it cannot be read."""
    text = (custom_data or {}).get(CUSTOM_DATA_KEY)
    try:
        out = json.loads(text) if text else None
    except ValueError:
        return None
    return out if isinstance(out, dict) else None

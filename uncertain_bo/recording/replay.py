"""The ROS-free parts of a replay (``uncertain-bo replay``, :mod:`uncertain_bo.ros.replay`): the explorer's host, what
the replay writes, and the comparison of its journal with the journal the recording holds.

**What is identical.** Replaying the explorer's own recording (``record: true``, ``uncertain-bo demo --record``) with
the parameters it recorded hands the explorer the same inputs with the same arrival times, in the same order,
interleaved with the same cycles, and takes each background decision's result at the same cycle
(:mod:`uncertain_bo.recording.decider`); the planner is seeded (decisions, hyperparameter fits, particle resampling,
cloud subsampling), so the journal's measurements (reading, location mean and covariance or particles, target) and
decisions (targets) are the same numbers, not merely close ones: :func:`compare` checks them for equality. What
differs: wall-clock times and durations (``wall_time``, a decision's ``seconds``), the run id, and what the live run
did outside the recorded stream: run-time parameter changes (``ros2 param set``; journaled, not replayed) and a
journal resumed at start-up (the replay starts with an empty one). Where the recording lost messages (a full queue,
a full disk: ``uncertain_bo.messages_dropped`` in its metadata) the replay goes on with what it has and may differ
from then on. A recording made by ``ros2 bag record`` has no cycles: the replay runs a cycle every ``1/tick_rate``
s of the recording's clock, after the messages logged up to then, and decides in the cycle (background decisions
taken at the next one) — the decisions a live explorer with those inputs would make at that rate, not a copy of one
that ran.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ['ReplayHost', 'REPLAY_OUTPUTS', 'compare', 'decider_polls']

#: what a replay writes in its --out folder
REPLAY_OUTPUTS = ('journal.jsonl', 'explorer_result.json', 'replay.json', 'summary.json', 'run.png')


class ReplayHost:
    """The explorer's :class:`~uncertain_bo.explorer.ExplorerOutputs` in a replay: the rover is not driven (the
    recording says where it went), so goals and stops are only kept.

    Attributes:
        goals: every goal sent, ``(2,)`` arrays in order (a goal sent again appears again).
        measurements: the stored measurements.
        done: the mission's end was reported.

    Example:
        The rover is not driven in a replay: goals and stops are kept for the comparison:

        >>> host = ReplayHost()
        >>> host.send_goal([12.0, 30.0]); host.send_goal([12.0, 30.0]); host.stop([11.9, 29.8])
        >>> [goal.tolist() for goal in host.goals], host.stops[0].tolist(), host.done
        ([[12.0, 30.0], [12.0, 30.0]], [11.9, 29.8], False)
    """

    def __init__(self):
        self.goals: list[np.ndarray] = []
        self.stops: list[np.ndarray] = []
        self.measurements: list = []
        self.done = False

    def send_goal(self, target) -> None:
        self.goals.append(np.asarray(target, dtype=float).copy())

    def stop(self, position) -> None:
        self.stops.append(np.asarray(position, dtype=float).copy())

    def measured(self, measurement, recommendation) -> None:
        self.measurements.append(measurement)

    def finished(self, recommendation) -> None:
        self.done = True


def decider_polls(texts: list[str]) -> dict[int, int]:
    """Job index -> polls answered False, from the recorded ``~/decider`` messages (JSON); unreadable ones are
    left out (their jobs are then reported done at once)."""
    out: dict[int, int] = {}
    for text in texts:
        try:
            record = json.loads(text)
            out[int(record['job'])] = int(record['polls'])
        except (ValueError, KeyError, TypeError):
            continue
    return out


#: the fields of a journal record that make it the same measurement / decision
_OBSERVATION_FIELDS = ('index', 'y', 'target', 'location', 'reading_stamp', 'pose_stamp', 'reading_variance')
_DECISION_FIELDS = ('index', 'target', 'phase')


def compare(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> dict[str, Any]:
    """How the replay's journal records compare with the recorded ones: for measurements (``observation``: index,
    reading, target, location, stamps, variance), en-route readings and decisions (index, target, phase), the counts,
    how many are identical (equal numbers, not close ones) in order from the first, and the first that differs."""
    out: dict[str, Any] = {}
    for kind, fields in (('observation', _OBSERVATION_FIELDS), ('en_route', _OBSERVATION_FIELDS),
                         ('decision', _DECISION_FIELDS)):
        a = [_pick(r, fields) for r in recorded if r.get('type') == kind]
        b = [_pick(r, fields) for r in replayed if r.get('type') == kind]
        same = 0
        while same < min(len(a), len(b)) and a[same] == b[same]:
            same += 1
        first = None
        if same < max(len(a), len(b)):
            first = {'recorded': a[same] if same < len(a) else None, 'replayed': b[same] if same < len(b) else None}
        out[kind] = {'recorded': len(a), 'replayed': len(b), 'identical': same,
                     'all_identical': same == len(a) == len(b), 'first_difference': first}
    return out


def _pick(record: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    plain = json.loads(json.dumps(record))      # as the journal file holds it (tuples as lists)
    return {k: plain.get(k) for k in fields}

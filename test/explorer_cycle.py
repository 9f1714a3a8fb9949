"""The measurement-cycle tests' shared driver (ROS-free): an :class:`~uncertain_bo.explorer.Explorer` with a
recording host, synthetic pose and reading streams, and the journal as it is on disk."""
import json

import numpy as np
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.explorer.pose_gate import REANCHOR_SECONDS
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost


def make(tmp_path=None, host=None, planner=None, result_file=None, **overrides):
    """An explorer on a 50 m x 50 m area with the test parameters ``overrides``, its ``host`` (default: a
    :class:`RecordingHost`) and its ``planner`` (default: 5 space-filling targets, journaled under ``tmp_path`` if
    given), writing its result to ``result_file`` (default: none). Returns ``(explorer, host)``."""
    # these synthetic pose streams jump to each goal in one step (no driving): the pose gate (max_speed) would
    # reject the jumps; it is off unless a test turns it on
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 3,
                                        'dwell_time': 1.0, 'goal_timeout': 30.0, 'reading_timeout': 2.0,
                                        'max_speed': 0.0, **overrides})
    if planner is None:
        planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                          n_initial=5, journal=None if tmp_path is None else tmp_path / 'j.jsonl')
    host = RecordingHost() if host is None else host
    return Explorer(planner, host, params, result_file=result_file), host


def pose(t, xy, cov=None, frame='map'):
    return PoseEstimate(t, frame, np.asarray(xy, float), np.eye(2) * 0.25 if cov is None else np.asarray(cov))


def settle(ex, xy, t=0.0, make_pose=None, dt=0.1):
    """Hand in estimates of a rover standing at ``xy`` every ``dt`` s up to ``t`` (with the clock, ticking), for
    REANCHOR_SECONDS: long enough for the pose gate to confirm the first place, so the mission starts at ``t``.
    ``make_pose(t, xy)`` makes the estimates (default: :func:`pose`). Returns ``t``."""
    n = int(round(REANCHOR_SECONDS / dt))
    for k in range(n, -1, -1):
        tk = round(t - k * dt, 6)
        ex.on_pose((make_pose or pose)(tk, np.asarray(xy, float)), now=tk)
        ex.tick(tk)
    return t


def drive_to_goal_and_measure(ex, host, t0, reading_value=5.0, offset=(0.3, -0.2)):
    """Pose stream at 10 Hz sitting near the current goal; readings at 2 Hz. Returns the end time."""
    t = t0
    for _ in range(100):
        goal = host.goals[-1]
        ex.on_pose(pose(t, goal + np.array(offset)))
        if abs((t * 2) - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, reading_value))
        ex.tick(t)
        t = round(t + 0.1, 6)
        if ex.state in (State.DECIDING, State.DONE) or len(host.goals) > 1 + len(host.measurements):
            break
    return t


def at_goal_until(ex, host, t, cond, *, cov=None, readings=True, limit=60.0, dt=0.1):
    """10 Hz poses at the current goal (+ 2 Hz readings) until ``cond()``; returns the time."""
    end = t + limit
    while t < end and not cond():
        t = round(t + dt, 6)
        goal = host.goals[-1] if host.goals else np.array([1.0, 1.0])
        ex.on_pose(pose(t, goal + 0.1, cov=cov), now=t)
        if readings and abs(t * 2 - round(t * 2)) < 1e-9:
            ex.on_reading(Reading(t, 5.0))
        ex.tick(t)
    return t


def journal_on_disk(path):
    """Record types and observation indices in the file; every line must be whole."""
    data = path.read_bytes()
    assert data.endswith(b'\n')
    records = [json.loads(line) for line in data.split(b'\n')[:-1]]
    return records, [r['index'] for r in records if r['type'] == 'observation']

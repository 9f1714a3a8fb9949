"""A run read back from its journal (uncertain_bo/planning/replay.py) for a resume."""
import math

import torch

from uncertain_bo.journal.journal import Journal
from uncertain_bo.planning.observation_log import ObservationLog
from uncertain_bo.planning.replay import replay


def observation(i, target, y, **extra):
    return {'type': 'observation', 'index': i, 'target': target, 'location': {'kind': 'dirac', 'mean': target},
            'y': y, **extra}


def test_replay_gives_the_runs_start_readings_and_decisions_and_skips_what_the_planner_refuses(tmp_path):
    journal = Journal(tmp_path / 'journal.jsonl')
    for rec in [{'type': 'start', 'position': [1.0, 1.0]},
                {'type': 'decision', 'index': 0, 'target': [2.0, 3.0], 'phase': 'initial'},
                observation(0, [2.0, 3.0], 0.5, reading_stamp=12.5, rover='rover0', seq=0),
                {'type': 'en_route', 'index': 0, 'measurements': 1, 'location': {'kind': 'dirac', 'mean': [3.0, 3.0]},
                 'y': 0.4},
                observation(1, [5.0, 5.0], 0.6),               # the planner's check refuses it (below)
                observation(2, [4.0, 4.0], 0.9, goal_timed_out=True)]:
        journal.append(rec)
    log = ObservationLog(2)

    def validate(target, location, y, variance):
        log.validate(target, location, y, variance)
        if y == 0.6:
            raise ValueError('refused')
    run = replay(Journal(journal.path, read_only=True), 2, validate)
    assert torch.equal(run.start, torch.tensor([1.0, 1.0], dtype=run.start.dtype))
    kept = [(None if t is None else t.tolist(), y, reached, reading.key) for t, _, y, _, reached, reading in
            run.observations]
    assert kept == [([2.0, 3.0], 0.5, True, ('observation', 0)), (None, 0.4, False, ('en_route', 0)),
                    ([4.0, 4.0], 0.9, False, ('observation', 2))]
    first = run.observations[0][5]
    assert first.stamp == 12.5 and first.rover == 'rover0' and first.seq == 0
    (decision,) = run.decisions
    assert decision['index'] == 0 and decision['phase'] == 'initial' and decision['rover'] is None
    assert math.isnan(decision['acquisition_value']) and math.isnan(decision['beta']) and decision['seconds'] == 0.0

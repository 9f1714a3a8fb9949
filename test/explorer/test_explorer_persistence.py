"""Crash windows of the explorer's journal (ROS-free): nothing measured is lost or duplicated.

A "crash" drops the explorer and planner without any cleanup (the journal is fsynced per record, so the
file is what a SIGKILL would leave); a torn crash also cuts the last record in half. The resumed explorer
must continue from all earlier observations, send the pending target again instead of deciding anew, and
choose the same targets as a run that never crashed (initial design: fully deterministic).
bench/fault_injection.py does the same with SIGKILL over real ROS topics.
"""
import json
import random

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.explorer.pose_gate import REANCHOR_SECONDS
from uncertain_bo.journal.journal import Journal
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost

BOUNDS = torch.tensor([[0.0, 0.0], [50.0, 50.0]])


def start(path, max_measurements=4):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'dwell_time': 0.5,
                                        'max_measurements': max_measurements, 'reading_timeout': 2.0})
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=5, journal=path)
    host = RecordingHost()
    return Explorer(planner, host, params), host


class Rover:
    """Drives 5 m/s straight at the current goal; publishes poses at 10 Hz and readings at 5 Hz."""

    def __init__(self):
        self.xy = np.array([3.0, 4.0])
        self.t = 0.0
        self.reading_stamps = []

    def step(self, ex, host):
        self.t = round(self.t + 0.1, 6)
        if host.goals:
            d = host.goals[-1] - self.xy
            self.xy = self.xy + d * min(1.0, 0.5 / max(np.linalg.norm(d), 1e-9))
        ex.on_pose(PoseEstimate(self.t, 'map', self.xy.copy(), np.eye(2) * 0.04), now=self.t)
        if round(self.t * 10) % 2 == 0:
            ex.on_reading(Reading(self.t, float(self.xy.sum())))
            self.reading_stamps.append(self.t)
        ex.tick(self.t)


def records(path):
    return [json.loads(s) for s in path.read_text().splitlines()]


def reference_targets(tmp_path, n=4):
    ex, host = start(tmp_path / 'reference' / 'journal.jsonl', n)
    rover = Rover()
    while ex.state is not State.DONE:
        rover.step(ex, host)
    return [np.array(r['target']) for r in records(tmp_path / 'reference' / 'journal.jsonl')
            if r['type'] == 'observation']


def first_measurement(tmp_path):
    """A run's journal path, explorer, host and rover just after the first measurement was stored."""
    path = tmp_path / 'run' / 'journal.jsonl'
    ex, host = start(path)
    rover = Rover()
    while ex.planner.n < 1:
        rover.step(ex, host)
    return path, ex, host, rover


def test_crash_after_observation_before_next_decision(tmp_path):
    path, ex, host, rover = first_measurement(tmp_path)
    assert ex.state is State.DECIDING          # stored, next target not decided yet: crash here
    ex2, host2 = start(path)
    assert ex2.planner.n == 1 and ex2.planner.resumed_target is None
    while not host2.goals:
        rover.step(ex2, host2)
    assert ex2.goal_reason == 'new'
    recs = records(path)
    assert [r['index'] for r in recs if r['type'] == 'decision'] == [0, 1]
    assert [r['index'] for r in recs if r['type'] == 'observation'] == [0]
    assert np.allclose(host2.goals[0], reference_targets(tmp_path)[1])   # same target as without a crash


def test_crash_mid_drive_resends_the_pending_goal_without_a_new_decision(tmp_path):
    path, ex, host, rover = first_measurement(tmp_path)
    for _ in range(3):                          # decided target 2, driving to it: crash
        rover.step(ex, host)
    assert ex.state is State.DRIVING and len(host.goals) == 2
    ex2, host2 = start(path)
    assert torch.allclose(ex2.planner.resumed_target, torch.as_tensor(host.goals[1], dtype=torch.float64))
    while ex2.planner.n < 2:
        rover.step(ex2, host2)
    assert np.allclose(host2.goals[0], host.goals[1]) and ex2.goal_reason in ('resumed', 'new')
    recs = records(path)
    assert [r['index'] for r in recs if r['type'] == 'decision'] == [0, 1]   # not decided twice
    assert [r['index'] for r in recs if r['type'] == 'observation'] == [0, 1]


def test_crash_while_writing_an_observation_loses_only_that_unreported_record(tmp_path, caplog):
    path = tmp_path / 'run' / 'journal.jsonl'
    ex, host = start(path)
    rover = Rover()
    while ex.planner.n < 2:
        rover.step(ex, host)
    # the process dies inside the write of observation 1: only part of the line reaches the disk, and the
    # explorer never reported it as stored
    lines = path.read_bytes().split(b'\n')
    obs1 = next(i for i, s in enumerate(lines) if b'"observation"' in s and b'"index":1,' in s)
    torn = b'\n'.join(lines[:obs1]) + b'\n' + lines[obs1][:57]
    path.write_bytes(torn)
    ex2, host2 = start(path)
    assert 'torn last record' in caplog.text
    assert ex2.planner.n == 1
    assert torch.allclose(ex2.planner.resumed_target, torch.as_tensor(host.goals[1], dtype=torch.float64))
    while ex2.planner.n < 2:
        rover.step(ex2, host2)
    recs = records(path)                      # the file is clean again: every line parses
    assert [r['index'] for r in recs if r['type'] == 'observation'] == [0, 1]


def test_crash_after_the_last_observation_resumes_done(tmp_path):
    path = tmp_path / 'run' / 'journal.jsonl'
    ex, host = start(path, max_measurements=2)
    rover = Rover()
    while ex.state is not State.DONE:
        rover.step(ex, host)
    ex2, host2 = start(path, max_measurements=2)
    assert ex2.state is State.DONE and ex2.planner.n == 2
    for _ in range(20):
        rover.step(ex2, host2)
    assert not host2.goals and len(Journal(path, read_only=True).observations) == 2


def test_torn_header_starts_the_journal_afresh(tmp_path, caplog):
    path = tmp_path / 'journal.jsonl'
    path.write_bytes(b'{"type":"header","format":"uncertain_bo.jou')
    ex, host = start(path)
    assert ex.planner.n == 0 and 'torn header' in caplog.text
    assert records(path)[0]['type'] == 'header'


@pytest.mark.parametrize('seed', [0, 1])
def test_random_crashes_lose_and_duplicate_nothing(tmp_path, seed):
    """A crash after a random number of 0.1 s steps (some torn), again and again, until the run is done. Each
    restarted explorer first confirms where the rover is (the pose gate: REANCHOR_SECONDS of poses, nothing written
    meanwhile); the crash comes 0.1 to 2.5 s after that."""
    rng = random.Random(seed)
    n = 5
    path = tmp_path / 'run' / 'journal.jsonl'
    rover = Rover()
    reported = {}                           # index -> reading the explorer reported as stored
    crashes = torn = 0
    while True:
        ex, host = start(path, max_measurements=n)
        steps = round(REANCHOR_SECONDS / 0.1) + rng.randint(1, 25)
        for _ in range(steps):
            if ex.state is State.DONE:
                break
            rover.step(ex, host)
        for m in host.measurements:
            reported[m.index] = m.reading.value
        if ex.state is State.DONE:
            break
        crashes += 1
        if rng.random() < 0.3:               # killed inside a write: a torn tail
            raw = path.read_bytes()
            cut = rng.randint(1, 40)
            if raw.endswith(b'\n') and raw.count(b'\n') > 1 and cut < len(raw.split(b'\n')[-2]):
                path.write_bytes(raw[:-cut - 1])
                torn += 1
                last = json.loads(raw.split(b'\n')[-2])
                if last['type'] == 'observation':
                    reported.pop(last['index'], None)  # it was being written: never reported
    assert crashes >= 5 and torn >= 1
    obs = [r for r in records(path) if r['type'] == 'observation']
    assert [r['index'] for r in obs] == list(range(n))                      # each exactly once
    assert len({r['reading_stamp'] for r in obs}) == n                     # no reading stored twice
    assert all(obs[i]['y'] == y for i, y in reported.items())              # nothing reported was lost
    assert np.allclose([r['target'] for r in obs], reference_targets(tmp_path, n))

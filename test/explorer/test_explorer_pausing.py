"""Pausing (explorer/pausing.py): diverged localisation and storage faults stop the rover, take no measurement,
and resume towards the same target."""
import numpy as np
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import Reading, State
from uncertain_bo.reporting.operator_view import Level, StatusReporter
from uncertain_bo.planning.planner import Planner

from explorer_cycle import at_goal_until, journal_on_disk, make, pose
from faulty_disk import FaultyDisk


def test_divergence_pauses_stops_and_resumes_to_the_same_target():
    ex, host = make(max_covariance_trace=4.0, goal_timeout=20.0)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    target = host.goals[0].copy()
    far = target + np.array([15.0, 0.0])
    t = 0.0
    for _ in range(5):  # driving, far from the target
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, far), now=t)
        ex.tick(t)
    assert ex.state is State.DRIVING
    # covariance blows up (trace 2 x 3 = 6 > 4): stop and pause
    t = round(t + 0.1, 6)
    ex.on_pose(pose(t, far, cov=np.eye(2) * 3.0), now=t)
    ex.tick(t)
    assert ex.state is State.PAUSED and len(host.stops) == 1 and np.allclose(host.stops[0], far)
    assert 'localisation diverged' in ex.paused_reason
    # still high (3.5 > 0.8 x 4 = 3.2): stays paused for longer than goal_timeout, readings are ignored
    for _ in range(300):
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, target, cov=np.eye(2) * 1.75), now=t)
        ex.on_reading(Reading(t, 9.0))
        ex.tick(t)
    assert ex.state is State.PAUSED and ex.planner.n == 0 and len(host.goals) == 1
    # recovered (trace 2 < 3.2): the same target again, with a fresh goal clock
    t = round(t + 0.1, 6)
    ex.on_pose(pose(t, far), now=t)
    ex.tick(t)
    assert ex.state is State.DRIVING and ex.goal_reason == 'after pause'
    assert len(host.goals) == 2 and np.allclose(host.goals[1], target)
    t = at_goal_until(ex, host, t, lambda: ex.planner.n == 1)
    assert not host.measurements[0].timed_out


def test_divergence_before_the_first_pose_keeps_waiting_then_starts():
    ex, host = make(max_covariance_trace=4.0)
    ex.on_pose(pose(0.0, [1.0, 1.0], cov=np.eye(2) * 10.0), now=0.0)
    ex.tick(0.0)
    assert ex.state is State.PAUSED and not host.goals and not host.stops
    ex.on_pose(pose(0.1, [1.0, 1.0]), now=0.1)
    ex.tick(0.1)
    ex.tick(0.2)
    assert ex.state is State.DRIVING and len(host.goals) == 1


def test_full_disk_pauses_keeps_the_measurement_and_resumes_when_space_is_back(tmp_path, monkeypatch):
    ex, host = make(tmp_path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    reporter = StatusReporter()
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    t = at_goal_until(ex, host, 0.0, lambda: ex.planner.n == 1)
    t = at_goal_until(ex, host, t, lambda: ex.state is State.MEASURING)
    disk.free = 0                                            # the disk fills up while measuring at target 2
    goals = len(host.goals)
    t = at_goal_until(ex, host, t, lambda: ex.planner.n == 2)
    journal = ex.planner.journal_file
    # the measurement is in the planner, its record (and the recommendation's) held; the rover is stopped
    assert ex.state is State.PAUSED and len(host.stops) == 1 and len(host.measurements) == 2
    assert 'journal not writable: [Errno 28] No space left on device' in ex.paused_reason
    assert '2 record(s) held in memory' in ex.paused_reason and journal.held == 2
    report = reporter.report(ex, t)
    assert report.level is Level.ERROR and 'No space left on device' in report.message
    values = dict(report.values)
    assert values['journal records pending'] == '2' and values['journal faults'] == '1'
    # 10 s of poses and readings: no measurement, no goal; the journal is retried once a second
    failures = journal.write_failures
    t = at_goal_until(ex, host, t, lambda: False, limit=10.0)
    assert ex.state is State.PAUSED and ex.planner.n == 2 and len(host.goals) == goals
    assert 9 <= journal.write_failures - failures <= 11
    assert journal_on_disk(tmp_path / 'j.jsonl')[1] == [0]
    disk.heal()                                              # space again: written, then the mission goes on
    t = at_goal_until(ex, host, t, lambda: ex.state is not State.PAUSED, limit=1.5)
    assert ex.state is State.DRIVING and len(host.goals) == goals + 1 and ex.paused_reason is None
    assert journal.fault is None and journal_on_disk(tmp_path / 'j.jsonl')[1] == [0, 1]
    assert reporter.report(ex, t).level is not Level.ERROR
    at_goal_until(ex, host, t, lambda: ex.state is State.DONE)
    records, indices = journal_on_disk(tmp_path / 'j.jsonl')
    assert indices == [0, 1, 2] and records[1:] == journal.records
    back = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                   journal=tmp_path / 'j.jsonl')
    assert torch.equal(back.y, ex.planner.y) and torch.equal(back.locations.mean, ex.planner.locations.mean)


def test_journal_fault_while_driving_stops_and_resends_the_same_target(tmp_path, monkeypatch):
    ex, host = make(tmp_path)
    disk = FaultyDisk(monkeypatch, tmp_path)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    target = host.goals[0].copy()
    disk.fail_fsync = True                                   # EIO: a run-time parameter change cannot be written
    ex.params['beta'] = 2.0
    ex.apply_parameters({'beta': 2.0})
    ex.on_pose(pose(0.1, [2.0, 1.0]), now=0.1)
    ex.tick(0.1)
    assert ex.state is State.PAUSED and 'Input/output error' in ex.paused_reason
    assert len(host.stops) == 1 and np.allclose(host.stops[0], [2.0, 1.0])
    disk.heal()
    t = 0.1
    while ex.state is State.PAUSED and t < 3.0:
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, [2.0, 1.0]), now=t)
        ex.tick(t)
    assert ex.state is State.DRIVING and ex.goal_reason == 'after pause'
    assert len(host.goals) == 2 and np.allclose(host.goals[1], target)
    assert [r['type'] for r in journal_on_disk(tmp_path / 'j.jsonl')[0]].count('parameters') == 1

"""The end of a mission (explorer/mission_end.py): reported once, and only once the journal holds every record."""
from uncertain_bo.explorer import State
from uncertain_bo.reporting.operator_view import Level, StatusReporter

from explorer_cycle import at_goal_until, journal_on_disk, make, pose
from faulty_disk import FaultyDisk


def test_a_mission_that_ends_on_a_full_disk_reports_its_end_once_the_journal_is_written(tmp_path, monkeypatch):
    ex, host = make(tmp_path, result_file=tmp_path / 'result.json', max_measurements=1)
    disk = FaultyDisk(monkeypatch, tmp_path)
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    t = at_goal_until(ex, host, 0.0, lambda: ex.state is State.MEASURING)
    disk.free = 0
    t = at_goal_until(ex, host, t, lambda: ex.planner.n == 1)
    assert ex.state is State.DONE and host.done is None and not ex.result_file.exists()
    report = StatusReporter().report(ex, t)
    assert report.level is Level.ERROR and 'record(s) held in memory' in report.message
    t = at_goal_until(ex, host, t, lambda: False, limit=3.0)
    assert host.done is None
    disk.heal()
    at_goal_until(ex, host, t, lambda: host.done is not None, limit=1.5)
    assert host.done is not None and ex.result_file.exists()
    assert journal_on_disk(tmp_path / 'j.jsonl')[1] == [0]

"""The result file (explorer/result_file.py)."""
from uncertain_bo.explorer import State

from explorer_cycle import at_goal_until, make, pose


def test_a_result_file_that_cannot_be_written_is_logged_and_the_mission_still_ends(tmp_path, caplog):
    ex, host = make(tmp_path, result_file=tmp_path / 'gone' / 'result.json', max_measurements=1)   # its folder vanished
    ex.on_pose(pose(0.0, [1.0, 1.0]), now=0.0)
    ex.tick(0.0)
    at_goal_until(ex, host, 0.0, lambda: ex.state is State.DONE)
    assert host.done is not None and 'could not write the result file' in caplog.text
    assert not (tmp_path / 'gone').exists()

"""Explorer node on a full disk, over real rclpy topics: it stays up, reports ERROR on /diagnostics with the
journal's fault, holds the records and resumes once the disk takes them again (issue 20 item 1).

Own rclpy context on ROS domain 150 + pid % 10 (150..159), apart from the other ROS test modules.
"""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402

from faulty_disk import FaultyDisk  # noqa: E402
from .test_explorer_node import SimRun  # noqa: E402

DOMAIN_ID = 150 + os.getpid() % 10


def test_full_disk_pauses_with_error_diagnostics_and_resumes(context, tmp_path, monkeypatch):
    disk = FaultyDisk(monkeypatch, tmp_path)
    s = SimRun(context, tmp_path)
    try:
        p = s.probe
        assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([1.0, 1.0]))
        target = p.goal_xy()
        disk.free = 0                                          # the disk fills up on the way to target 1

        def at_target():
            p.send_pose(target + 0.1)
            p.publish_reading(42.0)
        assert s.run(lambda: s.explorer.state.value == 'paused', each=at_target)
        assert s.explorer.planner.n == 1                       # the measurement is kept in memory
        assert s.run(lambda: p.diag()[0] == DiagnosticStatus.ERROR, each=at_target)
        level, message, values = p.diag()
        assert message.startswith('paused: journal not writable: [Errno 28] No space left on device')
        assert 'record(s) held in memory' in message and int(values['journal records pending']) >= 1
        assert values['journal faults'] == '1' and int(values['journal write failures']) >= 1
        s.run(lambda: False, each=at_target, timeout=1.0)
        assert s.explorer.state.value == 'paused' and s.explorer.planner.n == 1     # up, and no new measurement
        disk.heal()
        assert s.run(lambda: s.explorer.state.value != 'paused', each=at_target)
        assert s.run(lambda: p.diag()[0] != DiagnosticStatus.ERROR and p.diag()[2]['journal records pending'] == '0',
                     each=at_target)
        observations = [r for r in s.journal() if r['type'] == 'observation']
        assert [r['index'] for r in observations] == [0] and observations[0]['y'] == 42.0
        assert np.allclose(observations[0]['location']['mean'], target + 0.1)
    finally:
        s.close()

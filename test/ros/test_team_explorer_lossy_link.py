"""Team explorer node behind a lossy field radio link (real rclpy topics): each rover's pose estimate and readings
reach the node duplicated, delayed (out of order, stamps in the past) or not at all.

The oracle is the rovers' own record of what they sent (stamp -> place and reading), kept by the link, not the
node's state: every stored measurement must be one reading a rover took, at the place it was at when it took it,
stored once. Own rclpy context on ROS domain 215 (this worktree's range 215-229).
"""
import json
import math

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from ros_spin import spin_until  # noqa: E402
import team_probe  # noqa: E402

DOMAIN_ID = 215
ROVERS = ('rover0', 'rover1')
#: the link: a message is lost with P_DROP; else delivered now and, with P_DUP, again DELAY s later; with P_LATE
#: (of the rest) delivered only DELAY s later (after newer messages: out of order). LONG_DELAY s late copies are
#: older than max_pose_age (0.5 s): stale on arrival.
P_DROP, P_DUP, P_LATE, DELAY, LONG_DELAY = 0.2, 0.4, 0.15, 0.3, 1.2
SEND_PERIOD = 0.05       # s between two messages of one rover's sensor and localisation
MEASUREMENTS = 10


class LossyLink:
    """Each rover's localisation and sensor, publishing through a lossy link; the rovers' record of what they sent.

    Attributes:
        sent: per rover, stamp (s) -> (place ``(2,)`` m, reading value) of every message pair the rover sent.
        delivered, dropped, duplicated, late: message counts of the link.
    """

    def __init__(self, context, rovers, seed):
        self.node = rclpy.create_node('lossy_link', context=context)
        self.rng = np.random.default_rng(seed)
        self.odom = {r: self.node.create_publisher(Odometry, f'{r}/odometry/filtered', 50) for r in rovers}
        self.reading = {r: self.node.create_publisher(Temperature, f'{r}/reading', 50) for r in rovers}
        self.queue = []                                 # (due, publisher, msg) of delayed copies
        self.sent = {r: {} for r in rovers}
        self.delivered = self.dropped = self.duplicated = self.late = 0
        self.count = 0
        self._last = -math.inf

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def transmit(self, pub, msg, now):
        u = self.rng.random()
        if u < P_DROP:
            self.dropped += 1
            return
        delay = DELAY if self.rng.random() < 0.7 else LONG_DELAY
        if u < P_DROP + P_LATE:
            self.late += 1
            self.queue.append((now + delay, pub, msg))
            return
        pub.publish(msg)
        self.delivered += 1
        if u < P_DROP + P_LATE + P_DUP:
            self.duplicated += 1
            self.queue.append((now + delay, pub, msg))

    def step(self, places):
        """Every SEND_PERIOD: each rover (``places``: rover -> its position ``(2,)`` m) sends its pose estimate and
        a reading, both stamped now, through the link; then the delayed copies that are due are delivered."""
        now = self.now()
        if now - self._last >= SEND_PERIOD:
            self._last = now
            for rover, xy in places.items():
                self.count += 1
                value = 1.0 + 1e-3 * self.count            # distinct values: a reading is recognised by it
                self.sent[rover][now] = (np.array(xy, dtype=float), value)
                cov6 = np.zeros((6, 6))
                cov6[:2, :2] = np.eye(2) * 0.04
                self.transmit(self.odom[rover], cv.make_odometry(now, 'map', 'base_link', xy, 0.0, cov6), now)
                self.transmit(self.reading[rover], make_reading('temperature', now, 'base_link', value, 0.01),
                              now)
        due = [q for q in self.queue if q[0] <= now]
        self.queue = [q for q in self.queue if q[0] > now]
        for _, pub, msg in due:
            pub.publish(msg)
            self.delivered += 1


def test_duplicated_delayed_and_dropped_messages_are_measured_once(context, tmp_path):
    node = team_probe.make_team(context, tmp_path, max_measurements=MEASUREMENTS, rovers=list(ROVERS),
                                silence_timeout=5.0, reading_timeout=2.0, diagnostics_period=0.2)
    link = LossyLink(context, ROVERS, seed=7)
    goals = team_probe.TeamProbe(context, ROVERS)     # the goals each rover is sent (its publishers stay unused)
    ex = SingleThreadedExecutor(context=context)
    for n in (node, link.node, goals.node):
        ex.add_node(n)
    starts = {'rover0': np.array([5.0, 5.0]), 'rover1': np.array([15.0, 5.0])}

    def places():      # each rover stands where it was sent last (0.1 m off), at its start before its first goal
        return {r: (goals.goal(r) + 0.1 if goals.goals[r] else starts[r]) for r in ROVERS}

    try:
        assert spin_until(ex, lambda: node.done, timeout=90.0, every=lambda: link.step(places()))
        # a reading stamped in the future (clock skew) reaches rover1's cycle and is counted there only (the link
        # is quiet: the copies it had sent are taken first)
        spin_until(ex, lambda: False, timeout=0.5)
        rejected_before = {r: dict(node.rovers[r].explorer.rejected) for r in ROVERS}
        link.reading['rover1'].publish(make_reading('temperature', link.now() + 60.0, 'base_link', 2.0, 0.01))
        assert spin_until(ex, lambda: node.rovers['rover1'].explorer.rejected['reading: future stamp']
                          > rejected_before['rover1'].get('reading: future stamp', 0), timeout=5.0)
        assert {k: n for k, n in node.rovers['rover0'].explorer.rejected.items() if k.startswith('reading')} == \
            {k: n for k, n in rejected_before['rover0'].items() if k.startswith('reading')}
    finally:
        ex.shutdown()
        node.destroy_node()
        link.node.destroy_node()
        goals.node.destroy_node()
    assert link.dropped > 0 and link.duplicated > 0 and link.late > 0     # the link did what it says
    # the late poses are counted per rover on /diagnostics
    for rover in ROVERS:
        counts = [int(kv.value) for a in goals.diagnostics for st in a.status
                  if st.name.endswith(f'{rover} exploration')
                  for kv in st.values if kv.key == 'rejected pose: out of order']
        assert counts and max(counts) > 0, rover
    assert node.completed and node.team.dropped == []
    obs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    obs = [r for r in obs if r['type'] == 'observation']
    assert len(obs) == MEASUREMENTS == node.planner.n
    assert sorted(node.planner.observations.y.tolist()) == sorted(r['y'] for r in obs)
    for rover in ROVERS:
        mine = [r for r in obs if r['rover'] == rover]
        assert [r['seq'] for r in mine] == list(range(len(mine)))
        stamps = [r['reading_stamp'] for r in mine]
        assert len(set(stamps)) == len(stamps), f'{rover}: a reading stored twice'
        for r in mine:
            # a reading this rover sent, with its value, located at the place the rover was at when it took it
            sent = min(link.sent[rover], key=lambda t: abs(t - r['reading_stamp']))
            assert abs(sent - r['reading_stamp']) < 1e-6, f'{rover}: a reading it never sent'   # (ns stamps)
            xy, value = link.sent[rover][sent]
            assert r['y'] == pytest.approx(value)
            assert abs(r['pose_stamp'] - r['reading_stamp']) <= 0.5                       # max_pose_age
            np.testing.assert_allclose(r['location']['mean'][:2], xy, atol=1e-9)
            # ... and at the target it was measuring (it stands 0.1 m off): not a late copy from the last target
            np.testing.assert_allclose(r['location']['mean'][:2], np.asarray(r['target']) + 0.1, atol=1e-9)
    # no two measurements of the team share a reading: a value is one message of one rover
    assert len({r['y'] for r in obs}) == MEASUREMENTS
    result = json.loads((tmp_path / 'explorer_result.json').read_text())
    assert result['measurements'] == MEASUREMENTS
    assert sum(result['rovers'][r]['measurements'] for r in ROVERS) == MEASUREMENTS
    # a late pose of a place the rover has left is not a drive back there: the odometer counts at most the path
    # the rover took (its places in the order it sent them)
    for rover in ROVERS:
        path = [xy for _, (xy, _) in sorted(link.sent[rover].items())]
        travelled = sum(np.linalg.norm(b - a) for a, b in zip(path, path[1:]))
        assert result['rovers'][rover]['distance_driven_m'] <= travelled + 1e-3      # (rounded to mm)

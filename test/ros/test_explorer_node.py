"""Explorer node over real rclpy topics: pose + reading in -> goal out, bad poses never stored.

Own rclpy context on ROS domain 200 + pid % 30 (200..229, below the 233 limit), apart from the other
ROS test modules.
"""
import contextlib
import json
import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402

from uncertain_bo.parameters.specs import ParameterError  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import make_pose_array  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 200 + os.getpid() % 30


def make_explorer(context, tmp_path, **params):
    # the probes publish poses that jump to each target (no driving): the pose gate (max_speed) is off here
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_measurements': 2, 'dwell_time': 0.2,
              'run_dir': str(tmp_path), 'n_initial': 5, 'tick_rate': 50.0, 'max_speed': 0.0, **params}
    return ExplorerNode(context=context, parameter_overrides=parameter_overrides(values))


class Probe:
    def __init__(self, context):
        self.node = rclpy.create_node('probe', context=context)
        self.goals, self.plans = [], []
        self.node.create_subscription(PoseStamped, 'goal_pose', lambda m: self.goals.append(m), 10)
        self.node.create_subscription(Path, 'plan', lambda m: self.plans.append(m), 10)
        self.odom = self.node.create_publisher(Odometry, 'odometry/filtered', 10)
        self.reading = self.node.create_publisher(Temperature, 'reading', 10)

    def now(self):
        return self.node.get_clock().now().nanoseconds * 1e-9

    def publish_pose(self, xy, cov=None, frame='map'):
        cov6 = np.zeros((6, 6))
        cov6[:2, :2] = np.eye(2) * 0.04 if cov is None else cov
        self.odom.publish(cv.make_odometry(self.now(), frame, 'base_link', xy, 0.0, cov6))

    def publish_reading(self, value):
        self.reading.publish(make_reading('temperature', self.now(), 'base_link', value, 0.01))


@contextlib.contextmanager
def wall_clock_run(context, tmp_path):
    """The explorer node and a Probe on one executor (wall clock); destroyed on exit."""
    node = make_explorer(context, tmp_path)
    probe = Probe(context)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe.node)
    try:
        yield node, probe, ex
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.node.destroy_node()


def test_pose_and_reading_in_goal_out(context, tmp_path):
    # at_target runs on every spin: ~1.7k poses and readings a second flood the executor thread while the
    # decider fits; with Python's default 5 ms GIL switch interval the next goal took over 20 s (the node lowers it)
    with wall_clock_run(context, tmp_path) as (node, probe, ex):
        assert spin_until(ex, lambda: bool(probe.goals and probe.plans),
                          every=lambda: probe.publish_pose([10.0, 10.0]))
        goal = probe.goals[-1]
        target = np.array([goal.pose.position.x, goal.pose.position.y])
        assert goal.header.frame_id == 'map'
        assert np.all((target >= 0) & (target <= 20))
        assert probe.plans and len(probe.plans[-1].poses) == 2

        def at_target():  # the rover "arrives": estimates at the target, sensor publishing
            probe.publish_pose(target + 0.1)
            probe.publish_reading(42.0)
        assert spin_until(ex, lambda: node.explorer.planner.n >= 1, every=at_target)
        assert spin_until(ex, lambda: len(probe.goals) >= 2, every=at_target)
    obs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()
           if '"observation"' in s]
    assert obs[0]['y'] == 42.0
    assert np.allclose(obs[0]['location']['covariance'], [[0.04, 0.0], [0.0, 0.04]])
    assert np.allclose(obs[0]['location']['mean'], target + 0.1)


def test_malformed_poses_are_rejected_over_topics(context, tmp_path):
    bad = [
        {'xy': [1.0, 1.0], 'cov': np.array([[np.nan, 0], [0, 1.0]])},
        {'xy': [1.0, 1.0], 'cov': np.array([[1.0, 3.0], [3.0, 1.0]])},
        {'xy': [1.0, 1.0], 'cov': np.array([[-1.0, 0], [0, 1.0]])},
        {'xy': [1.0, 1.0], 'frame': 'odom'},
    ]
    with wall_clock_run(context, tmp_path) as (node, probe, ex):
        for b in bad:
            probe.publish_pose(**b)
        assert spin_until(ex, lambda: sum(node.explorer.rejected.values()) >= 4, timeout=5.0)
        assert node.explorer.latest_pose is None
        assert not probe.goals  # never started: no valid pose yet


def test_invalid_parameter_fails_at_startup_naming_it(context, tmp_path):
    with pytest.raises(ParameterError, match='beta'):
        make_explorer(context, tmp_path, beta=-1.0)
    with pytest.raises(ParameterError, match='search_bounds'):
        make_explorer(context, tmp_path, search_bounds=[10.0, 0.0, 0.0, 10.0])


# ---------------------------------------------------------------------------------------------------------
# Faults and bad input over real topics, on simulated time (the test owns /clock: timeouts are simulated
# seconds, so a loaded machine makes the test slower, never flaky).
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseArray  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class SimProbe(Probe):
    """Probe on simulated time: publishes /clock, records the operator-view topics."""

    def __init__(self, context, t0=1000.0):
        super().__init__(context)
        self.t = t0
        self.clock = self.node.create_publisher(Clock, '/clock', 10)
        self.particles = self.node.create_publisher(PoseArray, 'particle_cloud', 10)
        self.diags, self.markers, self.means, self.stds = [], [], [], []
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self.diags.append, 50)
        self.node.create_subscription(MarkerArray, '/explorer/markers', self.markers.append, LATCHED)
        self.node.create_subscription(OccupancyGrid, '/explorer/gp_mean', self.means.append, LATCHED)
        self.node.create_subscription(OccupancyGrid, '/explorer/gp_std', self.stds.append, LATCHED)

    def now(self):
        return self.t

    def advance(self, dt=0.1):
        self.t = round(self.t + dt, 6)
        self.clock.publish(Clock(clock=cv.to_time_msg(self.t)))

    def send_pose(self, xy, cov=None, frame='map', stamp=None):
        cov6 = np.zeros((6, 6))
        cov6[:2, :2] = np.eye(2) * 0.04 if cov is None else cov
        msg = cv.make_odometry(self.t if stamp is None else stamp, frame, 'base_link', [0.0, 0.0], 0.0, cov6)
        msg.pose.pose.position.x, msg.pose.pose.position.y = float(xy[0]), float(xy[1])
        self.odom.publish(msg)

    def goal_xy(self, i=-1):
        g = self.goals[i]
        return np.array([g.pose.position.x, g.pose.position.y])

    def diag(self):
        """Latest explorer status: (level, message, values)."""
        for arr in reversed(self.diags):
            for s in arr.status:
                if s.name.startswith('explorer'):
                    return s.level, s.message, {kv.key: kv.value for kv in s.values}
        return None, '', {}


class SimRun:
    """The explorer node + a SimProbe on one executor; ``run`` advances simulated time."""

    def __init__(self, context, tmp_path, **params):
        values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_measurements': 3, 'dwell_time': 0.3,
                  'run_dir': str(tmp_path), 'n_initial': 5, 'tick_rate': 50.0, 'max_pose_age': 1.0,
                  'reading_timeout': 2.0, 'goal_timeout': 30.0, 'diagnostics_period': 0.2,
                  'gp_map_cells': 10, 'max_speed': 0.0, **params}    # poses jump to targets: no pose gate
        overrides = parameter_overrides(values) + [Parameter('use_sim_time', value=True)]
        self.node = ExplorerNode(context=context, parameter_overrides=overrides)
        self.probe = SimProbe(context)
        self.ex = SingleThreadedExecutor(context=context)
        self.ex.add_node(self.node)
        self.ex.add_node(self.probe.node)
        self.explorer = self.node.explorer

    def run(self, cond, each=None, timeout=30.0, dt=0.1):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.probe.advance(dt)
            if each is not None:
                each()
            for _ in range(8):
                self.ex.spin_once(timeout_sec=0.002)
            if cond():
                return True
        return False

    def spin(self, seconds=0.3):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.ex.spin_once(timeout_sec=0.01)

    def close(self):
        self.ex.shutdown()
        self.node.destroy_node()
        self.probe.node.destroy_node()

    def journal(self):
        return [json.loads(s) for s in (self.node.run_dir / 'journal.jsonl').read_text().splitlines()]


@pytest.fixture
def sim(context, tmp_path):
    runs = []

    def make(**params):
        r = SimRun(context, tmp_path, **params)
        runs.append(r)
        return r
    yield make
    for r in runs:
        try:
            r.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass


BAD_POSES = [  # (what is published, rejection counter key)
    (dict(xy=[5.0, 5.0], cov=np.array([[np.nan, 0], [0, 1.0]])), 'pose: covariance contains NaN or inf'),
    (dict(xy=[5.0, 5.0], cov=np.array([[np.inf, 0], [0, 1.0]])), 'pose: covariance contains NaN or inf'),
    (dict(xy=[np.nan, 5.0]), 'pose: non-finite position'),
    (dict(xy=[5.0, -np.inf]), 'pose: non-finite position'),
    (dict(xy=[5.0, 5.0], cov=np.array([[1.0, 3.0], [3.0, 1.0]])), 'pose: covariance not positive semi-definite'),
    (dict(xy=[5.0, 5.0], cov=np.array([[-1.0, 0], [0, 1.0]])), 'pose: covariance negative variance'),
    (dict(xy=[5.0, 5.0], frame='odom'), 'pose: wrong frame_id'),
    (dict(xy=[5.0, 5.0], stamp_offset=-5.0), 'pose: stale stamp'),       # older than max_pose_age = 1 s
    (dict(xy=[5.0, 5.0], cov=np.zeros((2, 2))), 'pose: degenerate covariance'),   # not filled in: not exact
]


def test_every_malformed_pose_class_is_rejected_logged_and_reported(sim, caplog):
    s = sim(max_measurements=1)
    p = s.probe
    for kwargs, key in BAD_POSES:
        kwargs = dict(kwargs)
        offset = kwargs.pop('stamp_offset', 0.0)
        before = s.explorer.rejected[key]
        n_diag = len(p.diags)
        assert s.run(lambda: s.explorer.rejected[key] > before and len(p.diags) > n_diag,
                     each=lambda: p.send_pose(stamp=p.t + offset, **kwargs) if s.explorer.rejected[key] == before
                     else None), key
        assert s.explorer.latest_pose is None, key                      # never buffered
        assert s.run(lambda: p.diag()[2].get(f'rejected {key}') not in (None, '0')), key
        level, message, values = p.diag()
        assert level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR) and values['state'] == 'waiting for pose'
    assert not p.goals                                                     # nothing valid: never started
    for _, key in BAD_POSES:
        assert any(key.split(': ')[1] in r.getMessage() for r in caplog.records), f'no log line for {key}'

    # a valid pose starts the run; at the target, bad poses keep coming around the reading: the stored
    # location is the valid one
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    target = p.goal_xy()

    def at_target_with_noise():
        for kwargs, _ in BAD_POSES[:7]:
            p.send_pose(**{**kwargs, 'xy': target + 5.0 if 'frame' in kwargs else kwargs['xy']})
        p.send_pose(target + 0.2, cov=np.eye(2) * 0.01)
        p.publish_reading(42.0)
    assert s.run(lambda: s.explorer.planner.n == 1, each=at_target_with_noise)
    obs = [r for r in s.journal() if r['type'] == 'observation']
    assert len(obs) == 1 and obs[0]['y'] == 42.0
    assert np.allclose(obs[0]['location']['mean'], target + 0.2)
    assert obs[0]['location']['covariance'] == [[0.01, 0.0], [0.0, 0.01]]


def test_backwards_stamps_reset_the_buffers(sim, caplog):
    s = sim()
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    assert s.explorer.buffered[0] >= 1
    p.t -= 100.0          # simulation reset / bag loop: clock and stamps start over
    key = 'pose: stamp jumped backwards (buffer reset)'
    assert s.run(lambda: s.explorer.rejected[key] == 1, each=lambda: p.send_pose([10.0, 10.0]))
    assert 'clearing the pose and reading buffers' in caplog.text
    assert s.run(lambda: p.diag()[2].get(f'rejected {key}') == '1')
    assert s.explorer.latest_pose.stamp < 1000.0    # the buffer holds the new timeline only


def test_a_pose_stamped_back_after_one_stamped_ahead_cannot_reset_the_gate_over_topics(sim):
    """Issue 31 over real topics: a pose stamped 0.45 s ahead, then a glitch stamped back by more than max_pose_age
    from it, while the node clock goes on: out of order, rejected (it used to clear the buffers and the pose gate,
    and be accepted). The first place is confirmed first: several poses over 2 simulated seconds."""
    s = sim(max_speed=5.0)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    assert p.t - 1000.0 >= 2.0                                   # no goal before the place was confirmed
    sent = []

    def ahead_then_back():
        if not sent:
            p.send_pose([10.0, 10.0], stamp=p.t + 0.45)
            p.send_pose([19.0, 19.0], stamp=p.t - 0.6)        # 1.05 s before the newest: more than max_pose_age
            sent.append(p.t)
        else:
            p.send_pose([10.0, 10.0])
    assert s.run(lambda: s.explorer.rejected['pose: out of order'] >= 1, each=ahead_then_back)
    s.run(lambda: p.t > sent[0] + 1.0, each=ahead_then_back)
    assert not s.explorer.rejected['pose: stamp jumped backwards (buffer reset)']
    poses = s.explorer.inputs.poses           # not cleared: the poses from before the glitch are still there
    assert all(np.allclose(q.xy, [10.0, 10.0]) for q in poses) and poses[0].stamp < sent[0]


def test_localisation_divergence_pauses_with_error_and_resumes(sim):
    s = sim(max_covariance_trace=4.0)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([1.0, 1.0]))
    target = p.goal_xy()
    far = target + np.array([3.0, 3.0]) if target[0] < 15 else target - 3.0
    n_goals = len(p.goals)
    assert s.run(lambda: s.explorer.state.value == 'paused', each=lambda: p.send_pose(far, cov=np.eye(2) * 5.0))
    assert s.run(lambda: p.diag()[0] == DiagnosticStatus.ERROR)
    level, message, values = p.diag()
    assert message.startswith('paused: localisation diverged') and values['state'] == 'paused'
    assert s.run(lambda: len(p.goals) > n_goals)
    assert np.allclose(p.goal_xy(), [1.0, 1.0])       # stop: hold at the last trusted pose, not the diverged mean
    s.run(lambda: False, each=lambda: p.send_pose(far, cov=np.eye(2) * 1.8), timeout=1.0)  # 3.6 > 0.8 x 4
    assert s.explorer.state.value == 'paused'
    n_goals = len(p.goals)
    assert s.run(lambda: len(p.goals) > n_goals, each=lambda: p.send_pose(far))   # recovered
    assert np.allclose(p.goal_xy(), target)                       # the same target again
    assert s.run(lambda: p.diag()[0] == DiagnosticStatus.OK and p.diag()[2]['state'] == 'driving')


def test_controller_never_arrives_measures_at_goal_timeout(sim):
    s = sim(goal_timeout=5.0)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([0.5, 0.5]))
    t_goal, target = p.t, p.goal_xy()
    stuck = np.array([0.5, 0.5]) if np.linalg.norm(target - 0.5) > 3 else np.array([19.5, 19.5])

    def stuck_with_sensor():
        p.send_pose(stuck)
        p.publish_reading(7.0)
    assert s.run(lambda: s.explorer.planner.n == 1, each=stuck_with_sensor)
    stop = [g for g in p.goals if np.allclose([g.pose.position.x, g.pose.position.y], stuck)]
    assert stop, 'no stop command at the rover position'
    obs = [r for r in s.journal() if r['type'] == 'observation'][0]
    assert obs['goal_timed_out'] is True and np.allclose(obs['location']['mean'], stuck)
    assert np.allclose(obs['target'], target)
    assert 5.0 <= p.t - t_goal < 9.0      # simulated seconds: goal_timeout + dwell + reading pairing


def test_silent_sensor_retries_then_skips(sim, caplog):
    s = sim(reading_timeout=1.0, reading_retries=2, dwell_time=0.5)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    t0, target = p.t, p.goal_xy()
    assert s.run(lambda: len(p.goals) >= 2, each=lambda: p.send_pose(target))
    assert s.explorer.planner.n == 0 and s.explorer.rejected['measurement: sensor silent, target skipped'] == 1
    assert 3.5 <= p.t - t0 < 6.0          # dwell 0.5 s + 3 x reading_timeout 1 s (simulated)
    assert 'retry 2/2' in caplog.text and 'skipping it after 2 retries' in caplog.text
    assert s.run(lambda: p.diag()[2].get('rejected measurement: sensor silent, target skipped') == '1')


def test_runtime_parameter_changes_are_validated_and_take_effect(sim):
    from rclpy.parameter_client import AsyncParameterClient

    s = sim()
    client = AsyncParameterClient(s.probe.node, 'explorer')
    assert s.run(lambda: client.services_are_ready(), timeout=10.0)

    def set_params(**values):
        future = client.set_parameters([Parameter(k, value=v) for k, v in values.items()])
        assert s.run(lambda: future.done(), timeout=10.0)
        return future.result().results

    ok = set_params(beta=1.5, goal_timeout=42.0, search_bounds=[5.0, 15.0, 5.0, 15.0], gp_map_cells=8)
    assert all(r.successful for r in ok)
    ex = s.explorer
    assert ex.planner.beta_schedule(10, None) == 1.5 and ex.params['goal_timeout'] == 42.0
    assert ex.planner.bounds.tolist() == [[5.0, 5.0], [15.0, 15.0]]
    bad = set_params(search_bounds=[15.0, 5.0, 5.0, 15.0])         # cross-field: order
    assert not bad[0].successful and 'xmax > xmin' in bad[0].reason
    bad = set_params(max_pose_age=-1.0)                            # range
    assert not bad[0].successful and 'max_pose_age' in bad[0].reason
    bad = set_params(seed=3)                                       # read-only
    assert not bad[0].successful
    assert ex.planner.bounds.tolist() == [[5.0, 5.0], [15.0, 15.0]] and ex.params['seed'] == 0
    # the new bounds take effect: the first target lies in them; the grids follow them
    assert s.run(lambda: bool(s.probe.goals), each=lambda: s.probe.send_pose([10.0, 10.0]))
    g = s.probe.goal_xy()
    assert 5.0 <= g[0] <= 15.0 and 5.0 <= g[1] <= 15.0
    assert s.run(lambda: bool(s.probe.means) and s.probe.means[-1].info.width == 8)
    assert s.probe.means[-1].info.origin.position.x == 5.0
    changes = [r for r in s.journal() if r['type'] == 'parameters']
    assert changes and changes[0]['changed']['beta'] == 1.5


def test_learned_execution_noise_in_diagnostics_and_the_distance_budget_over_ros(sim):
    from rclpy.parameter_client import AsyncParameterClient

    s = sim(max_measurements=4, learn_execution_noise=True, max_distance=1000.0)
    p = s.probe
    client = AsyncParameterClient(p.node, 'explorer')
    assert s.run(lambda: client.services_are_ready(), timeout=10.0)
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    target, offset = p.goal_xy(), np.array([0.3, -0.2])

    def at(xy):
        p.send_pose(xy)
        p.publish_reading(42.0)
    assert s.run(lambda: s.explorer.planner.n == 1, each=lambda: at(target + offset))
    # oracle: the prior diag(0.75²) m² worth 5 measurements, plus one reached goal (offset, covariance 0.04 I)
    sigma = (5.0 * np.diag([0.75 ** 2] * 2) + np.outer(offset, offset) + 0.04 * np.eye(2)) / 6.0
    sx, sy = np.sqrt(np.diag(sigma))
    assert s.run(lambda: p.diag()[2].get('execution noise std x, y (m)') == f'{sx:.4g}, {sy:.4g}',
                 each=lambda: p.send_pose(target + offset))
    values = p.diag()[2]
    assert values['execution noise model'] == 'learned'
    assert values['execution noise correlation'] == f'{sigma[0, 1] / (sx * sy):.4g}'
    # the budget lowered at run time to what has been driven: the next leg spends it, the mission ends
    assert s.run(lambda: len(p.goals) >= 2, each=lambda: p.send_pose(target + offset))
    future = client.set_parameters([Parameter('max_distance', value=s.explorer.budget.distance + 0.5)])
    assert s.run(lambda: future.done(), timeout=10.0) and future.result().results[0].successful
    second = p.goal_xy()
    assert s.run(lambda: s.explorer.state.value == 'done', each=lambda: at(second))
    assert s.explorer.planner.n == 2 and s.explorer.done_reason.startswith('max_distance')
    assert s.run(lambda: p.diag()[2].get('stopped because') == s.explorer.done_reason)
    assert p.diag()[1].startswith('done: 2/4 measurements (max_distance')
    result = json.loads((s.node.run_dir / 'explorer_result.json').read_text())
    assert result['stopped_because'] == s.explorer.done_reason and result['execution_noise']['source'] == 'learned'
    assert [r['changed'] for r in s.journal() if r['type'] == 'parameters'][-1].keys() == {'max_distance'}


def test_restart_mid_drive_resends_the_goal_and_counts_once(context, tmp_path, sim):
    s = sim(max_measurements=2)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([1.0, 1.0]))
    target = p.goal_xy()
    s.run(lambda: False, each=lambda: p.send_pose([2.0, 2.0]), timeout=0.3)   # driving ...
    s.close()                                                             # ... crash
    s2 = sim(max_measurements=2)
    p2 = s2.probe
    assert s2.run(lambda: bool(p2.goals), each=lambda: p2.send_pose([2.5, 2.5]))
    assert np.allclose(p2.goal_xy(), target) and s2.explorer.goal_reason == 'resumed'

    def at_target():
        p2.send_pose(target + 0.1)
        p2.publish_reading(5.0)
    assert s2.run(lambda: s2.explorer.planner.n == 1, each=at_target)
    recs = s2.journal()
    assert [r['index'] for r in recs if r['type'] == 'decision'] == [0]
    assert [r['index'] for r in recs if r['type'] == 'observation'] == [0]
    assert s2.run(lambda: len(p2.goals) >= 2, each=at_target)            # then continues with target 2
    assert [r['index'] for r in s2.journal() if r['type'] == 'decision'] == [0, 1]


def test_operator_view_markers_maps_and_diagnostics(sim, context):
    s = sim(max_measurements=2)
    p = s.probe
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose([10.0, 10.0]))
    target = p.goal_xy()
    cov = np.array([[0.16, 0.0], [0.0, 0.04]])                  # σ = 0.4 m along x, 0.2 m along y

    def at_target():
        p.send_pose(target + 0.1, cov=cov)
        p.publish_reading(42.0)
    assert s.run(lambda: s.explorer.planner.n == 1, each=at_target)
    assert s.run(lambda: len(p.goals) >= 2 and p.means and p.means[-1].data.tolist().count(-1) == 0,
                 each=at_target)
    mean, std = p.means[-1], p.stds[-1]
    assert mean.header.frame_id == 'map' and (mean.info.width, mean.info.height) == (10, 10)
    assert mean.info.resolution == pytest.approx(2.0) and mean.info.origin.position.x == 0.0
    assert 0 <= min(mean.data) and max(mean.data) <= 100 and 0 <= min(std.data) and max(std.data) <= 100
    assert s.run(lambda: any(m.ns == 'measurements' for m in p.markers[-1].markers) if p.markers else False)
    ms = {(m.ns, m.id): m for m in p.markers[-1].markers}
    ell = ms[('measurements', 0)]
    assert ell.type == ell.CYLINDER and ell.scale.x == pytest.approx(1.6) and ell.scale.y == pytest.approx(0.8)
    assert ell.pose.position.x == pytest.approx(target[0] + 0.1)
    assert ('recommendation', 0) in ms and ('goal', 0) in ms and ('targets', 0) in ms
    assert 'gp_mean' in ms[('status', 0)].text
    level, message, values = p.diag()
    assert values['measurements'].startswith('1/') and 'last decision (UTC)' in values
    assert 'scale ~/gp_mean (robust mean)' in values
    # a late subscriber (RViz started later) still gets the maps: transient_local
    late = rclpy.create_node('late_viewer', context=context)
    got = []
    late.create_subscription(OccupancyGrid, '/explorer/gp_mean', got.append, LATCHED)
    s.ex.add_node(late)
    try:
        s.spin(0.1)
        assert s.run(lambda: bool(got), timeout=10.0)
    finally:
        s.ex.remove_node(late)
        late.destroy_node()


def test_particle_cloud_pose_source(sim):
    s = sim(pose_source='particle_cloud', max_measurements=1)
    p = s.probe
    pts = np.array([[-0.3, 0.0], [0.3, 0.0], [0.0, -0.1], [0.0, 0.1]])

    def cloud(center):
        p.particles.publish(make_pose_array(p.t, 'map', center + pts))
    assert s.run(lambda: bool(p.goals), each=lambda: cloud(np.array([10.0, 10.0])))
    target = p.goal_xy()

    def at_target():
        cloud(target)
        p.publish_reading(3.0)
    assert s.run(lambda: s.explorer.planner.n == 1, each=at_target)
    loc = [r for r in s.journal() if r['type'] == 'observation'][0]['location']
    assert np.allclose(loc['mean'], target) and np.allclose(loc['covariance'], [[0.045, 0.0], [0.0, 0.005]])
    s.run(lambda: False, each=lambda: p.particles.publish(make_pose_array(p.t, 'map', np.zeros((0, 2)))),
          timeout=0.5)
    assert s.explorer.rejected['pose: malformed message'] >= 1          # empty cloud: rejected, no crash


def test_en_route_readings_over_ros(sim):
    s = sim(max_measurements=1, en_route_spacing=2.0)
    p = s.probe
    start = np.array([10.0, 10.0])
    assert s.run(lambda: bool(p.goals), each=lambda: p.send_pose(start))
    target = p.goal_xy()
    state = {'xy': start.copy()}

    def drive():   # 1 m/s straight to the target; the sensor streams with every pose estimate
        step = target - state['xy']
        dist = float(np.linalg.norm(step))
        state['xy'] = state['xy'] + (step / dist * min(0.1, dist) if dist > 0 else 0.0)
        p.send_pose(state['xy'])
        p.publish_reading(float(state['xy'][0]))
    assert s.run(lambda: s.explorer.state.value == 'done', each=drive, timeout=60.0)
    planner = s.explorer.planner
    assert planner.n == 1 and planner.n_en_route >= int(np.linalg.norm(target - start) // 2.0) - 1
    records = [r for r in s.journal() if r['type'] == 'en_route']
    assert len(records) == planner.n_en_route
    for r in records:   # paired with the pose at the reading's own stamp
        assert r['pose_stamp'] == pytest.approx(r['reading_stamp'], abs=0.05)
        assert r['y'] == pytest.approx(r['location']['mean'][0], abs=0.2)
    assert s.run(lambda: p.diag()[2].get('en-route readings') == str(planner.n_en_route))
    result = json.loads((s.node.run_dir / 'explorer_result.json').read_text())
    assert result['en_route_readings'] == planner.n_en_route and result['measurements'] == 1


def test_the_surfacing_request_goes_out_on_surface_only_when_something_listens(context, tmp_path):
    """The explorer node's surfacing action (explorer/relocalising.py, surface_cost > 0): std_msgs/Empty on
    surface; with nothing subscribed it says it cannot (the explorer then does not wait for a fix)."""
    from std_msgs.msg import Empty
    with wall_clock_run(context, tmp_path) as (node, probe, ex):
        assert node.request_surfacing() is False
        asked = []
        probe.node.create_subscription(Empty, 'surface', lambda m: asked.append(m), 10)
        assert spin_until(ex, lambda: node.surface_pub.get_subscription_count() > 0)
        assert node.request_surfacing() is True
        assert spin_until(ex, lambda: len(asked) == 1)

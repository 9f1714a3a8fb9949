"""Particle clouds over real rclpy topics: the particle_filter node's outputs, and the explorer node turning
a particle cloud into an empirical observation in its journal (airbo) with bad clouds never stored.

Own rclpy context on ROS domain 230 + pid % 3 (230..232, below the 233 limit), apart from the other ROS
test modules.
"""
import json
import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseArray, PoseStamped, PoseWithCovarianceStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import Temperature  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import make_pose_array, pose_array_to_particles  # noqa: E402
from uncertain_bo.ros.reading_messages import make_reading  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.ros.particle_filter import ParticleFilterNode  # noqa: E402

DOMAIN_ID = 230 + os.getpid() % 3


def spin_until(ex, cond, timeout=10.0, each=None):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if each is not None:
            each()
        for _ in range(5):
            ex.spin_once(timeout_sec=0.002)
        if cond():
            return True
    return False


def test_particle_filter_node_publishes_cloud_pose_and_odometry(context):
    node = ParticleFilterNode(context=context, parameter_overrides=parameter_overrides(
        {'particles': 300, 'published_particles': 50, 'cloud_every': 2, 'seed': 3}))
    probe = rclpy.create_node('pf_probe', context=context)
    clouds, poses, odoms = [], [], []
    probe.create_subscription(PoseArray, 'particle_cloud', clouds.append, qos_profile_sensor_data)  # as AMCL's
    probe.create_subscription(PoseWithCovarianceStamped, 'pose', poses.append, 50)
    probe.create_subscription(Odometry, 'odometry/filtered', odoms.append, 50)
    wheel = probe.create_publisher(Odometry, 'wheel/odometry', 50)
    fix = probe.create_publisher(PoseWithCovarianceStamped, 'position_fix', 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    twist_cov = np.diag([0.01, 0.0, 0.0, 0.0, 0.0, 0.01])
    k = [0]

    def publish():
        k[0] += 1
        t = 0.1 * k[0]
        if k[0] % 10 == 0:
            cov = np.zeros((6, 6))
            cov[:2, :2] = np.eye(2) * 4.0
            fix.publish(cv.make_pose_with_covariance(t, 'map', [100.0 + t, 100.0], 0.0, cov))
        wheel.publish(cv.make_odometry(t, 'odom', 'base_link', [0.0, 0.0], 0.0, v=1.0, w=0.0,
                                       twist_cov6x6=twist_cov))
    try:
        assert spin_until(ex, lambda: len(odoms) >= 20 and len(clouds) >= 5, timeout=15.0, each=publish)
        assert spin_until(ex, lambda: len(poses) >= 20, timeout=5.0)
        c = clouds[-1]
        assert c.header.frame_id == 'map' and len(c.poses) == 50
        pts = pose_array_to_particles(c).samples
        p = cv.pose_with_covariance_to_pose(poses[-1])
        assert p.frame_id == 'map' and cv.validate_position_covariance(p.cov_xy) is None
        # the summary is the cloud's moments: the published resample agrees within its Monte Carlo error
        sd = np.sqrt(np.diag(p.cov_xy))
        assert np.all(np.abs(pts.mean(0) - p.xy) < 4 * sd / np.sqrt(50) + 1e-6)
        assert np.allclose(cv.odometry_to_pose(odoms[-1]).cov_xy, p.cov_xy) or \
            odoms[-1].header.stamp != poses[-1].header.stamp
        assert node.ekf.n_fixes_accepted >= 2 and node.n_clouds * 2 >= node.n_published - 1
        assert 0.2 < sd.max() < 2.0
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()


def test_explorer_node_stores_particle_clouds_as_empirical_locations(context, tmp_path):
    values = {'search_bounds': [0.0, 20.0, 0.0, 20.0], 'max_measurements': 1, 'dwell_time': 0.3,
              'run_dir': str(tmp_path), 'n_initial': 5, 'tick_rate': 50.0, 'max_pose_age': 1.0,
              'reading_timeout': 2.0, 'goal_timeout': 30.0, 'gp_map_cells': 5, 'method': 'airbo',
              'pose_source': 'particle_cloud', 'max_particles': 30, 'refit_every': 0}
    node = ExplorerNode(context=context, parameter_overrides=parameter_overrides(values)
                        + [Parameter('use_sim_time', value=True)])
    probe = rclpy.create_node('explorer_probe', context=context)
    goals = []
    probe.create_subscription(PoseStamped, 'goal_pose', goals.append, 10)
    markers = []
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    probe.create_subscription(MarkerArray, '/explorer/markers', markers.append, latched)
    clock = probe.create_publisher(Clock, '/clock', 10)
    particles = probe.create_publisher(PoseArray, 'particle_cloud', 10)
    reading = probe.create_publisher(Temperature, 'reading', 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    rng = np.random.default_rng(0)
    t = [1000.0]
    bad = {'nan': False}

    def step(center):
        t[0] = round(t[0] + 0.1, 6)
        clock.publish(Clock(clock=cv.to_time_msg(t[0])))
        pts = center + np.column_stack([np.abs(rng.normal(0, 0.8, 200)), rng.normal(0, 0.2, 200)])
        if bad['nan']:
            pts[3, 0] = np.nan
            particles.publish(make_pose_array(t[0], 'map', pts))
            particles.publish(make_pose_array(t[0], 'odom', pts[4:]))
            return
        particles.publish(make_pose_array(t[0], 'map', pts))
        if goals:
            reading.publish(make_reading('temperature', t[0], 'base_link', 7.0))
    try:
        assert spin_until(ex, lambda: bool(goals), each=lambda: step(np.array([10.0, 10.0])))
        target = np.array([goals[-1].pose.position.x, goals[-1].pose.position.y])
        # while measuring, first only bad clouds (NaN particle, wrong frame): nothing may be stored
        assert spin_until(ex, lambda: node.explorer.state.value == 'measuring', each=lambda: step(target))
        bad['nan'] = True
        spin_until(ex, lambda: False, timeout=0.5, each=lambda: step(target))
        assert node.explorer.planner.n == 0
        assert node.explorer.rejected['pose: non-finite position'] >= 1
        assert node.explorer.rejected['pose: wrong frame_id'] >= 1
        bad['nan'] = False
        assert spin_until(ex, lambda: node.explorer.planner.n == 1, each=lambda: step(target))
        obs = [json.loads(s) for s in (tmp_path / 'journal.jsonl').read_text().splitlines()
               if '"observation"' in s]
        assert len(obs) == 1 and obs[0]['location']['kind'] == 'empirical' and obs[0]['y'] == 7.0
        s = np.array(obs[0]['location']['samples'])
        assert s.shape == (30, 2) and np.all(np.isfinite(s))
        assert np.all(s[:, 0] >= target[0] - 1e-9)          # the cloud's one-sided spread survives
        # the operator view draws the empirical location as the ellipse of its moments
        node._publish_markers()

        def ellipse():
            found = [m for arr in markers for m in arr.markers if m.ns == 'measurements' and m.id == 0]
            return found[-1] if found else None
        assert spin_until(ex, lambda: ellipse() is not None, timeout=5.0)
        e = ellipse()
        mean = s.mean(0)
        assert np.allclose([e.pose.position.x, e.pose.position.y], mean, atol=1e-6)
        sd = np.sqrt(np.linalg.eigvalsh(np.cov(s.T, bias=True)))
        assert sorted([e.scale.x, e.scale.y]) == pytest.approx(sorted(np.maximum(2 * 2 * sd, 0.06)), rel=1e-6)  # 2σ
    finally:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()

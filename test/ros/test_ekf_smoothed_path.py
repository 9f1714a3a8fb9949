"""The ekf node's revised past on ROS: with smooth_on_fix it publishes the fixed-lag smoothed steps as nav_msgs/Path on
smoothed_path after a fix that ends a dead-reckoning stretch, and an explorer configured by config/gnss_denied.yaml
listens there (revised_path_topic)."""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseWithCovarianceStamped  # noqa: E402
from nav_msgs.msg import Odometry, Path  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402

from uncertain_bo.parameters.specs import config_path  # noqa: E402
from uncertain_bo.parameters.files import node_parameters  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.ekf import EkfNode  # noqa: E402
from uncertain_bo.ros.explorer import ExplorerNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 40 + os.getpid() % 20
FILES = [config_path('sim.yaml'), config_path('gnss_denied.yaml')]


def test_the_ekf_node_publishes_its_smoothed_past_to_the_explorer_after_a_fix(context, tmp_path):
    ekf = EkfNode(context=context, parameter_overrides=parameter_overrides(
        {**node_parameters(FILES, 'ekf'), 'use_sim_time': False, 'smooth_on_fix': True, 'smoothing_lag': 20.0}))
    explorer = ExplorerNode(context=context, parameter_overrides=parameter_overrides({
        'revised_path_topic': node_parameters(FILES, 'explorer')['revised_path_topic'],
        'search_bounds': [0.0, 200.0, 0.0, 200.0], 'run_dir': str(tmp_path)}))
    probe = rclpy.create_node('probe', context=context)
    ex = SingleThreadedExecutor(context=context)
    for n in (ekf, explorer, probe):
        ex.add_node(n)
    try:
        odom = probe.create_publisher(Odometry, 'wheel/odometry', 50)
        fix = probe.create_publisher(PoseWithCovarianceStamped, 'position_fix', 10)
        paths = []
        probe.create_subscription(Path, 'smoothed_path', paths.append, 10)
        assert spin_until(ex, lambda: ekf.count_subscribers('smoothed_path') == 2 and odom.get_subscription_count())
        x0 = np.array([100.0, 100.0])

        def step(k):                       # 10 Hz odometry, 1 m/s east from the configured start
            msg = cv.make_odometry(k * 0.1, 'odom', 'base_link', x0 + [k * 0.1, 0.0], 0.0, np.eye(6) * 1e-6, v=1.0)
            msg.twist.covariance = list((np.eye(6) * 1e-4).ravel())
            odom.publish(msg)
            return spin_until(ex, lambda: ekf.ekf.t >= k * 0.1 - 1e-9, timeout=5.0)
        for k in range(1, 301):            # 30 s of dead reckoning: nothing revised
            assert step(k)
        assert paths == []
        cov6 = np.diag([0.25, 0.25, 1e6, 1e6, 1e6, 1e6])
        fix.publish(cv.make_pose_with_covariance(30.0, 'map', x0 + [30.0, 0.0], cov6x6=cov6))
        assert spin_until(ex, lambda: ekf.ekf.n_fixes_accepted == 1)
        assert step(301) and spin_until(ex, lambda: paths, timeout=5.0)
        msg = paths[0]
        stamps = [cv.from_time_msg(p.header.stamp) for p in msg.poses]
        assert msg.header.frame_id == 'map' and cv.from_time_msg(msg.header.stamp) == pytest.approx(30.1)
        assert stamps == sorted(stamps) and stamps[-1] == pytest.approx(30.1)
        assert 19.8 < stamps[-1] - stamps[0] <= 20.0 and len(stamps) in (200, 201)    # the 20 s lag at 10 Hz
        last = msg.poses[-1].pose.position
        assert np.allclose([last.x, last.y], ekf.ekf.xy)
    finally:
        ex.shutdown()
        for n in (ekf, explorer, probe):
            n.destroy_node()

"""ros/particle_clouds.py: particle clouds (PoseArray, ParticleCloud) <-> NumPy, read from their serialised bytes."""
import math

import numpy as np
import pytest

pytest.importorskip('rclpy')

from geometry_msgs.msg import Quaternion  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import make_pose_array, pose_array_from_cdr, pose_array_to_particles  # noqa: E402


def test_each_particle_keeps_its_heading():
    from rclpy.serialization import serialize_message
    rng = np.random.default_rng(0)
    pts, yaws = rng.normal(size=(200, 2)) * 5.0, rng.uniform(-math.pi, math.pi, 200)
    msg = make_pose_array(2.0, 'map', pts)
    for p, yaw in zip(msg.poses, yaws):
        p.orientation = cv.yaw_to_quaternion(yaw)
    msg.poses[7].orientation = Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)          # no rotation: no heading
    want = yaws.copy()
    want[7] = np.nan
    raw = serialize_message(msg)
    for cloud in (pose_array_to_particles(msg), pose_array_from_cdr(raw)):
        assert np.allclose(cloud.yaws, want, rtol=0, atol=1e-12, equal_nan=True)
    sub = pose_array_from_cdr(raw, limit=50, rng=rng)
    heading = {tuple(p): y for p, y in zip(pts, want)}
    assert all(np.allclose(heading[tuple(p)], y, equal_nan=True) for p, y in zip(sub.samples, sub.yaws))

"""field_sensor node over real rclpy topics: a reading of the field at the ground-truth pose, stamped with
the pose's time and carrying its noise variance; silence outside the field or when ground truth stops."""
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from sensor_msgs.msg import FluidPressure, Temperature  # noqa: E402

from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.field_sensor import FieldSensorNode  # noqa: E402
from uncertain_bo.ros.params import parameter_overrides  # noqa: E402
from uncertain_bo.sim.field import Field  # noqa: E402
from ros_spin import spin_until  # noqa: E402

DOMAIN_ID = 110 + os.getpid() % 30


@pytest.fixture
def graph(context):
    made = []

    def make(pose_type='odometry', reading_type='temperature', **params):
        node = FieldSensorNode(context=context, parameter_overrides=parameter_overrides(
            {'reading_rate': 50.0, 'pose_type': pose_type, 'reading_type': reading_type, **params}))
        probe = rclpy.create_node('gt_probe', context=context)
        readings = []
        msg_cls = {'temperature': Temperature, 'fluid_pressure': FluidPressure}[reading_type]
        probe.create_subscription(msg_cls, 'reading', readings.append, 50)
        pub = probe.create_publisher(Odometry if pose_type == 'odometry' else PoseStamped, 'ground_truth', 10)
        ex = SingleThreadedExecutor(context=context)
        ex.add_node(node)
        ex.add_node(probe)
        made.append((ex, node, probe))
        return node, probe, pub, readings, ex
    yield make
    for ex, node, probe in made:
        ex.shutdown()
        node.destroy_node()
        probe.destroy_node()


def now_of(node):
    return node.get_clock().now().nanoseconds * 1e-9


def test_reads_the_field_at_the_ground_truth_pose(graph):
    node, probe, pub, readings, ex = graph(noise_std=0.0)
    xy = np.array([120.0, 60.0])

    def publish():
        pub.publish(cv.make_odometry(now_of(probe), 'world', 'base_link', xy, 0.0, np.zeros((6, 6))))
    assert spin_until(ex, lambda: len(readings) >= 3, every=publish)
    expected = float(Field.default().value(xy))
    assert readings[-1].temperature == pytest.approx(expected, rel=1e-9)
    assert readings[-1].variance == 0.0 and readings[-1].header.frame_id == 'base_link'
    stamp = cv.from_time_msg(readings[-1].header.stamp)
    assert abs(stamp - now_of(probe)) < 1.0               # the ground-truth pose's stamp


def test_noise_variance_offset_and_pose_stamped(graph):
    node, probe, pub, readings, ex = graph(pose_type='pose_stamped', reading_type='fluid_pressure',
                                           noise_std=2.0, world_offset=[100.0, 100.0])

    def publish():
        pub.publish(cv.make_pose_stamped(now_of(probe), 'world', np.array([10.0, -20.0])))
    assert spin_until(ex, lambda: len(readings) >= 40, every=publish, timeout=20.0)
    values = np.array([r.fluid_pressure for r in readings])
    truth = float(Field.default().value(np.array([110.0, 80.0])))     # offset applied
    assert all(r.variance == 4.0 for r in readings)
    assert abs(values.mean() - truth) < 4 * 2.0 / np.sqrt(len(values))
    assert 1.0 < values.std(ddof=1) < 3.5


def test_silent_outside_the_field_and_when_ground_truth_stops(graph):
    node, probe, pub, readings, ex = graph(noise_std=0.0, max_pose_age=0.2)

    def outside():
        pub.publish(cv.make_odometry(now_of(probe), 'world', 'base_link', [500.0, 5.0], 0.0, np.zeros((6, 6))))
    assert spin_until(ex, lambda: node.outside >= 5, every=outside)
    assert not readings
    pub.publish(cv.make_odometry(now_of(probe), 'world', 'base_link', [50.0, 50.0], 0.0, np.zeros((6, 6))))
    assert spin_until(ex, lambda: len(readings) >= 1)
    n = len(readings)
    spin_until(ex, lambda: False, timeout=0.6)              # ground truth stopped: stale after 0.2 s
    assert len(readings) - n <= 12                           # at most 0.2 s of 50 Hz readings
    count = len(readings)
    spin_until(ex, lambda: False, timeout=0.3)
    assert len(readings) == count


def test_bad_field_is_a_one_line_error(tmp_path, context):
    from uncertain_bo.sim.field import FieldError
    with pytest.raises(FieldError):
        FieldSensorNode(context=context, parameter_overrides=parameter_overrides(
            {'field': str(tmp_path / 'missing.npz')}))

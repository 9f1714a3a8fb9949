"""Nav2 AMCL's weighted particle cloud (``nav2_msgs/msg/ParticleCloud`` on ``particle_cloud``) over real DDS.

``nav2_msgs`` does not install here: the type is a stand-in generated at test time from Nav2's definitions of
``msg/Particle.msg`` (``geometry_msgs/Pose pose``, ``float64 weight``) and ``msg/ParticleCloud.msg`` (``std_msgs/Header
header``, ``Particle[] particles``), see ``nav2_stand_in``. The explorer subscribes with ``particle_cloud_type:
nav2_msgs/msg/ParticleCloud`` and reads the serialised clouds with NumPy; the tests check the reader against rclpy's
own deserialisation and that the published weights reach the stored location distribution.
"""
import sys

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from uncertain_bo.parameters.specs import ParameterError  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import particle_cloud_from_cdr  # noqa: E402
from uncertain_bo.ros import rover_inputs  # noqa: E402


@pytest.fixture(scope='module')
def nav2_msg():
    import nav2_stand_in
    try:
        return nav2_stand_in.load('msg')
    except nav2_stand_in.Unavailable as exc:
        pytest.skip(f'stand-in nav2_msgs: {exc}')


def make_cloud(msg, stamp, frame, xy, weights):
    """A ``nav2_msgs/msg/ParticleCloud`` as AMCL fills it: positions, yaw 0, one weight per particle."""
    cloud = msg.ParticleCloud(header=cv.make_header(stamp, frame))
    for (x, y), w in zip(xy, weights):
        p = msg.Particle(weight=float(w))
        p.pose.position.x, p.pose.position.y = float(x), float(y)
        p.pose.orientation.w = 1.0
        cloud.particles.append(p)
    return cloud


def test_nav2_cloud_type_without_nav2_msgs_fails_at_startup_writing_nothing(context, tmp_path, monkeypatch):
    for name in ('nav2_msgs', 'nav2_msgs.msg'):          # importing it fails, as where it is not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ParameterError, match="particle_cloud_type.*needs nav2_msgs.*apt install"):
        rover_inputs.pose_message_type('particle_cloud', 'nav2_msgs/msg/ParticleCloud')
    assert rover_inputs.pose_message_type('particle_cloud', 'geometry_msgs/msg/PoseArray').__name__ == 'PoseArray'
    from uncertain_bo.ros.explorer import ExplorerNode
    from uncertain_bo.ros.params import parameter_overrides
    from uncertain_bo.ros.team_explorer import TeamExplorerNode

    for node in (ExplorerNode, TeamExplorerNode):
        with pytest.raises(ParameterError, match='needs nav2_msgs'):
            node(context=context, parameter_overrides=parameter_overrides({
                'pose_source': 'particle_cloud', 'particle_cloud_type': 'nav2_msgs/msg/ParticleCloud',
                'run_dir': str(tmp_path / node.__name__)}))
        assert not (tmp_path / node.__name__).exists()         # no run folder, no journal


def test_serialised_particle_cloud_reader_matches_rclpy(nav2_msg):
    rng = np.random.default_rng(0)
    xy = rng.normal(size=(300, 2)) * 4.0
    w = rng.random(300)
    for frame in ('', 'm', 'map', 'a_longer_frame'):
        raw = serialize_message(make_cloud(nav2_msg, 12.5, frame, xy, w))
        ref = deserialize_message(raw, nav2_msg.ParticleCloud)                    # rclpy, independently
        ref_xy = np.array([[p.pose.position.x, p.pose.position.y] for p in ref.particles])
        ref_w = np.array([p.weight for p in ref.particles])
        cloud = particle_cloud_from_cdr(raw)
        assert cloud.frame_id == ref.header.frame_id == frame and cloud.stamp == 12.5
        assert np.array_equal(cloud.samples, ref_xy) and np.array_equal(cloud.weights, ref_w)
        sub = particle_cloud_from_cdr(raw, limit=50, rng=rng)
        pairs = {(x, y, v) for (x, y), v in zip(ref_xy, ref_w)}
        kept = {(x, y, v) for (x, y), v in zip(sub.samples, sub.weights)}
        assert len(kept) == 50 and kept <= pairs                                  # each particle keeps its weight
    with pytest.raises(ValueError, match='ParticleCloud is truncated'):
        particle_cloud_from_cdr(raw[:-10])


def test_weighted_cloud_over_dds_reaches_the_stored_location(nav2_msg, context, tmp_path, monkeypatch, caplog):
    """A cloud of two equal clusters whose particles carry 90 % / 10 % of the weight: the explorer's estimate and
    the stored empirical location distribution follow the weights (unweighted, they would split 50/50)."""
    from . import test_explorer_node
    # the simulated-time probe publishes its particle cloud as AMCL does: nav2_msgs/msg/ParticleCloud
    monkeypatch.setattr(test_explorer_node, 'PoseArray', nav2_msg.ParticleCloud)
    s = test_explorer_node.SimRun(context, tmp_path, pose_source='particle_cloud',
                                  particle_cloud_type='nav2_msgs/msg/ParticleCloud', method='ugp_kme',
                                  max_measurements=1, max_particles=100)
    p = s.probe
    pub = p.particles
    offsets = np.array([[dx, dy] for dx in (-0.1, 0.0, 0.1) for dy in (-0.1, 0.0, 0.1)])
    weights = np.r_[np.full(9, 0.9 / 9), np.full(9, 0.1 / 9)]

    def cloud(centre):
        xy = np.r_[centre + offsets, centre + [2.0, 0.0] + offsets]       # cluster A at centre, B 2 m east
        pub.publish(make_cloud(nav2_msg, p.t, 'map', xy, weights))
    try:
        assert s.run(lambda: bool(p.goals), each=lambda: cloud(np.array([10.0, 10.0])))
        assert np.allclose(s.explorer.latest_pose.xy, [10.2, 10.0], atol=1e-9)    # 0.9 * 10 + 0.1 * 12
        target = p.goal_xy()
        assert s.run(lambda: s.explorer.planner.n == 1, each=lambda: (cloud(target), p.publish_reading(3.0)))
        rec = next(r for r in s.journal() if r['type'] == 'observation')['location']
        assert rec['kind'] == 'empirical'
        samples = np.array(rec['samples'])
        near_a = np.linalg.norm(samples - target, axis=1) < 0.5
        assert len(samples) == 100 and abs(near_a.mean() - 0.9) <= 0.02      # systematic resampling: 90 of 100
        bad = np.r_[weights[:-1], -1.0]                                        # a negative weight: refused
        s.run(lambda: False, each=lambda: pub.publish(make_cloud(
            nav2_msg, p.t, 'map', np.r_[target + offsets, target + offsets], bad)), timeout=0.5)
        assert s.explorer.rejected['pose: malformed message'] >= 1
        assert 'particle weights must be finite and non-negative' in caplog.text
    finally:
        s.close()

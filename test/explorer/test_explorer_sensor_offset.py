"""A sensor away from base_link (``sensor_offset``, uncertain_bo.distributions.lever_arm) in the ROS-free explorer:
every reading (measurements, en-route readings, revised locations) is placed at the sensor for the pose's heading, the
heading's uncertainty enters its covariance as a Monte Carlo oracle says, each particle is moved by its own heading, the
offset [0, 0] changes nothing, poses without a usable heading are refused only where an offset needs one, and the pose
gate and the odometer keep judging base_link."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost
from distributions.test_lever_arm import monte_carlo

OFFSET = (0.8, 0.3)      # forward and left of base_link, m
#: a pose's (x, y, yaw) covariance with the heading correlated with the position
POSE_COV = np.array([[0.09, 0.01, 0.02], [0.01, 0.04, -0.01], [0.02, -0.01, 0.16]])


def make(tmp_path, method='ugp_ucb', offset=OFFSET, **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
                                        'dwell_time': 0.5, 'goal_timeout': 200.0, 'reading_timeout': 2.0,
                                        'n_initial': 5, 'method': method, 'max_particles': 40, 'refit_every': 0,
                                        'sensor_offset': list(offset), **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5, refit_every=0, journal=tmp_path / 'j.jsonl', method=method)
    return Explorer(planner, RecordingHost(), params)


def at_sensor(xy, yaw, offset=OFFSET):
    """The sensor for base_link at ``xy`` with heading ``yaw``, the rotation written out (the oracle)."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.asarray(xy, float) + np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]])


def gaussian_pose(t, xy, yaw, yaw_cov=None):
    return PoseEstimate(t, 'map', xy.copy(), np.diag([0.09, 0.04]) if yaw_cov is None else POSE_COV[:2, :2].copy(),
                        yaw=yaw, yaw_cov=yaw_cov)


def run(ex, make_pose, until=600.0):
    """A rover starting at (5, 5) driving at 1 m/s to each goal, heading along its way; a pose every 0.1 s, a reading
    every second 0.03 s after a pose. Returns the poses handed in by stamp."""
    t, xy, yaw = 0.0, np.array([5.0, 5.0]), 0.3
    host, poses = ex.outputs, {}
    while ex.state is not State.DONE and t < until:
        if ex.state is State.DRIVING:
            step = host.goals[-1] - xy
            dist = float(np.linalg.norm(step))
            if dist > 0:
                yaw = math.atan2(step[1], step[0])
                xy = xy + step / dist * min(0.1, dist)
        p = make_pose(t, xy, yaw)
        poses[round(t, 6)] = p
        ex.on_pose(p, t)
        if abs(t - round(t)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, float(xy.sum())), t + 0.03)
        ex.tick(t)
        t = round(t + 0.1, 6)
    return poses


def stored(ex):
    """``(record, pose stamp)`` of every stored reading (measurements and en-route readings)."""
    journal = ex.planner.journal_file
    return [(r, r['pose_stamp']) for r in journal.observations + journal.en_route]


def test_each_reading_is_placed_at_the_sensor_for_its_heading(tmp_path):
    ex = make(tmp_path, en_route_spacing=3.0)
    poses = run(ex, gaussian_pose)
    assert ex.state is State.DONE and ex.planner.n == 2 and ex.planner.n_en_route >= 3
    for record, stamp in stored(ex):
        p = poses[round(stamp, 6)]
        # heading known exactly: the mean moved by R(yaw) r, the covariance the position's
        assert np.allclose(record['location']['mean'], at_sensor(p.xy, p.yaw), rtol=0, atol=1e-12)
        assert np.allclose(record['location']['covariance'], p.cov, rtol=0, atol=1e-15)
        assert record['location_source'].endswith('at sensor_offset [0.8, 0.3] m')
    # the measurements the host hears of are placed there too
    for m in ex.outputs.measurements:
        assert np.allclose(m.place[0], at_sensor(m.pose.xy, m.pose.yaw))


def test_heading_uncertainty_enters_the_covariance_as_monte_carlo_says(tmp_path):
    ex = make(tmp_path, en_route_spacing=3.0)
    poses = run(ex, lambda t, xy, yaw: gaussian_pose(t, xy, yaw, POSE_COV[2].copy()))
    records = stored(ex)
    assert len(records) >= 4 and {r['type'] for r, _ in records} == {'observation', 'en_route'}
    for record, stamp in records[:4]:
        p = poses[round(stamp, 6)]
        m, k, se_m, se_k = monte_carlo(np.array([*p.xy, p.yaw]), POSE_COV, OFFSET, n=100_000)
        assert np.all(np.abs(np.array(record['location']['mean']) - m) < 5 * se_m)
        assert np.all(np.abs(np.array(record['location']['covariance']) - k) < 5 * se_k)
        # more than the position's own uncertainty: the arm swings with the heading
        assert np.trace(record['location']['covariance']) > np.trace(POSE_COV[:2, :2]) + 0.05


def cloud_pose(rng, n=300):
    """A cloud drawn from a Gaussian over (x, y, yaw) around the rover, random weights: each particle its own heading
    (0.5 rad apart, so that moving them all by the mean heading would be visibly wrong)."""
    def make_pose(t, xy, yaw):
        draws = rng.multivariate_normal([*xy, yaw], np.diag([0.04, 0.04, 0.25]), size=n)
        return PoseEstimate.from_particles(t, 'map', draws[:, :2], rng.uniform(0.2, 1.0, n), draws[:, 2])
    return make_pose


def test_each_particle_is_moved_by_its_own_heading(tmp_path):
    ex = make(tmp_path, 'airbo')
    poses = run(ex, cloud_pose(np.random.default_rng(0)))
    assert ex.planner.n == 2
    for record, stamp in stored(ex):
        cloud = poses[round(stamp, 6)]
        moved = np.array([at_sensor(x, t) for x, t in zip(cloud.samples, cloud.sample_yaw)])
        shifted = cloud.samples + (at_sensor((0.0, 0.0), cloud.yaw))        # all by the mean heading
        samples = np.array(record['location']['samples'])
        assert samples.shape == (40, 2)
        nearest = np.min(np.linalg.norm(samples[:, None, :] - moved[None], axis=-1), axis=1)
        assert np.all(nearest < 1e-12)                                     # each one a particle moved exactly
        assert np.min(np.linalg.norm(samples[:, None, :] - shifted[None], axis=-1), axis=1).max() > 0.1


def test_a_cloud_in_a_run_of_gaussians_is_placed_by_its_moments(tmp_path):
    # the cloud's particles are dropped on arrival; its (x, y, yaw) moments place the sensor: the moments of the
    # particles moved one by one, up to the cloud's sampling noise
    ex = make(tmp_path, 'ugp_ucb')
    poses = run(ex, cloud_pose(np.random.default_rng(1), n=4000))
    assert ex.latest_pose.samples is None and ex.latest_pose.sample_yaw is None    # dropped on arrival
    for record, stamp in stored(ex):
        p = poses[round(stamp, 6)]
        mean, cov = np.array(record['location']['mean']), np.array(record['location']['covariance'])
        m, k, se_m, se_k = monte_carlo(np.array([*p.xy, p.yaw]), p.pose_covariance, OFFSET, n=100_000)
        assert np.all(np.abs(mean - m) < 5 * se_m + 0.02) and np.all(np.abs(cov - k) < 5 * se_k + 0.02)


@pytest.mark.parametrize('method, make_pose', [
    ('ugp_ucb', lambda rng: lambda t, xy, yaw: gaussian_pose(t, xy, yaw, POSE_COV[2].copy())),
    ('airbo', cloud_pose),
])
def test_no_offset_changes_nothing(tmp_path, method, make_pose):
    # the same poses with their headings and without them (what the inputs were before sensor_offset existed), the
    # offset [0, 0]: the same journal, and every location the pose's own
    journals = []
    for i, strip in enumerate((False, True)):
        folder = tmp_path / str(i)
        folder.mkdir()
        ex = make(folder, method, offset=(0.0, 0.0))
        poses = make_pose(np.random.default_rng(5))

        def handed(t, xy, yaw):
            p = poses(t, xy, yaw)
            return PoseEstimate(p.stamp, p.frame_id, p.xy, p.cov, p.samples, p.weights) if strip else p
        run(ex, handed)
        assert ex.planner.n == 2 and not any('heading' in k for k in ex.rejected)
        journals.append([r['location'] for r, _ in stored(ex)])
    assert journals[0] == journals[1]


def test_the_offset_zero_stores_the_pose_itself(tmp_path):
    ex = make(tmp_path, offset=(0.0, 0.0))
    poses = run(ex, lambda t, xy, yaw: gaussian_pose(t, xy, yaw, POSE_COV[2].copy()))
    for record, stamp in stored(ex):
        p = poses[round(stamp, 6)]
        assert record['location']['mean'] == p.xy.tolist() and record['location']['covariance'] == p.cov.tolist()
        assert 'sensor_offset' not in record['location_source']


def test_poses_without_a_usable_heading_are_refused_only_where_an_offset_needs_one(tmp_path):
    no_heading = PoseEstimate(0.0, 'map', np.array([5.0, 5.0]), np.eye(2) * 0.1)
    nan_heading = PoseEstimate(0.0, 'map', np.array([5.0, 5.0]), np.eye(2) * 0.1, yaw=float('nan'))
    bad_cov = PoseEstimate(0.0, 'map', np.array([5.0, 5.0]), np.eye(2) * 0.1, yaw=0.2,
                           yaw_cov=np.array([1.0, 0.0, 0.01]))          # |cov(x, yaw)| > sd(x) sd(yaw)
    negative = PoseEstimate(0.0, 'map', np.array([5.0, 5.0]), np.eye(2) * 0.1, yaw=0.2,
                            yaw_cov=np.array([0.0, 0.0, -0.5]))
    bare_cloud = PoseEstimate.from_particles(0.0, 'map', np.random.default_rng(0).normal(5.0, 0.3, (50, 2)))
    nan_cloud = PoseEstimate.from_particles(0.0, 'map', bare_cloud.samples, yaws=np.r_[np.nan, np.zeros(49)])
    poses = {'no heading': no_heading, 'no heading ': nan_heading, 'heading covariance not positive '
             'semi-definite': bad_cov, 'heading covariance negative variance': negative,
             'particles without headings': bare_cloud, 'non-finite particle headings': nan_cloud}
    ex = make(tmp_path)
    for category, p in poses.items():
        assert not ex.inputs.add_pose(p, None, ex.locations.on_arrival)
        assert ex.rejected[f'pose: {category.strip()}'] >= 1, category
        assert 'sensor_offset = [0.8, 0.3] m' in ex.last_reason or 'covariance' in ex.last_reason
    assert ex.rejected['pose: no heading'] == 2
    (tmp_path / 'zero').mkdir()
    zero = make(tmp_path / 'zero', offset=(0.0, 0.0))
    for p in poses.values():
        assert zero.inputs.pose_problem(p) is None


def test_the_pose_gate_and_the_odometer_judge_base_link(tmp_path):
    # turning on the spot at 2 rad/s with the sensor 10 m out: the sensor moves 20 m/s, beyond max_speed (5 m/s), and
    # a full circle is 63 m of it; base_link does not move at all
    ex = make(tmp_path, offset=(10.0, 0.0), max_measurements=1)
    t = 0.0
    while t < 20.0:
        assert ex.on_pose(gaussian_pose(t, np.array([25.0, 25.0]), 2.0 * t), t) or t < 2.5
        ex.tick(t)
        t = round(t + 0.1, 6)
    assert ex.rejected['pose: implausible jump'] == 0 and ex.budget.distance == pytest.approx(0.0, abs=1e-9)


def test_revised_locations_are_placed_at_the_sensor_for_the_revised_heading(tmp_path):
    ex = make(tmp_path, en_route_spacing=3.0)
    run(ex, gaussian_pose)
    readings = [r for r, _ in stored(ex)]
    # a smoother's path through each reading's stamp: its pose moved by (1, -2) m and turned to face +y, as a
    # nav_msgs/Path gives it (no covariance: keep_covariance keeps the stored one, the sensor's already)
    trajectory = [PoseEstimate(r['reading_stamp'], 'map', np.array(r['location']['mean']) + (1.0, -2.0),
                               np.zeros((2, 2)), yaw=math.pi / 2) for r in readings]
    outcome = ex.on_revised_trajectory(trajectory, 1000.0, 'test', keep_covariance=True)
    assert len(outcome.applied) == len(readings) >= 4 and not outcome.rejections
    log = ex.planner.observations
    now = {r.stamp: row[1] for r, row in zip(log.readings, log.rows)}
    for record, p in zip(readings, trajectory):
        location = now[record['reading_stamp']]
        assert np.allclose(location.mean[0].numpy(), at_sensor(p.xy, math.pi / 2), rtol=0, atol=1e-12)
        assert np.allclose(location.covariance[0].numpy(), record['location']['covariance'], rtol=0, atol=1e-15)
    # a revised pose without a heading cannot place the sensor: refused and counted, nothing moves
    bare = [PoseEstimate(p.stamp, 'map', p.xy + 1.0, p.cov) for p in trajectory]
    outcome = ex.on_revised_trajectory(bare, 1001.0, 'test', keep_covariance=True)
    assert not outcome.applied and ex.rejected['revision: no heading'] == len(bare)

"""Fuzzing the pose / covariance / particle parsers and the explorer's validation (hypothesis).

Arbitrary floats — NaN, ±inf, huge, subnormal, negative zero — in positions, 6x6 covariances, particle
clouds and stamps must never crash the message path (parsers raise ValueError at most; the explorer
never raises) and must never produce a stored location that is not a valid distribution: finite mean
within range, symmetric PSD covariance (re-checked by the journal's own loader), within
max_covariance_trace.
"""
import json
import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

pytest.importorskip('rclpy')
pytestmark = pytest.mark.ros

from geometry_msgs.msg import PoseWithCovarianceStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402

from uncertain_bo.distributions.covariance import covariance_problem  # noqa: E402
from uncertain_bo.distributions import GaussianExecutionNoise, check_covariance  # noqa: E402
from uncertain_bo.explorer import (EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State,  # noqa: E402
                                   position_trace, psd_projection)
from uncertain_bo.journal.journal import location_from_record  # noqa: E402
from uncertain_bo.parameters.specs import validate  # noqa: E402
from uncertain_bo.planning.planner import Planner  # noqa: E402
from uncertain_bo.ros import conversions as cv  # noqa: E402
from uncertain_bo.ros.particle_clouds import StampedParticles, make_pose_array, particles_to_pose  # noqa: E402
from uncertain_bo.ros.explorer import pose_estimate_from_msg  # noqa: E402

from recording_host import RecordingHost  # noqa: E402

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
nasty = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0, 1e-12,
                         -1e-12, 1e154, 2.0 ** 1023])
sane = st.floats(-1e3, 1e3, allow_nan=False)
value = st.one_of(sane, nasty, any_float)
position = st.one_of(sane, sane, sane, sane, nasty, any_float)   # mostly plausible: reach the store path


@st.composite
def covariances(draw):
    """Flat 6x6 ROS covariances: arbitrary, or valid (L Lᵀ) with some entries corrupted."""
    if draw(st.booleans()):
        return np.array(draw(st.lists(value, min_size=36, max_size=36)), dtype=float)
    lower = np.array(draw(st.lists(st.floats(-3, 3), min_size=4, max_size=4))).reshape(2, 2)
    c = np.zeros((6, 6))
    c[:2, :2] = lower @ lower.T * draw(st.sampled_from([0.0, 1e-300, 1e-6, 1.0, 1e6, 1e150]))
    c[5, 5] = 0.1
    flat = c.reshape(36)
    for _ in range(draw(st.integers(0, 2))):
        flat[draw(st.sampled_from([0, 1, 6, 7, 35]))] = draw(value)
    return flat


stamps = st.tuples(st.integers(0, 2 ** 31 - 1), st.integers(0, 999_999_999))
frames = st.one_of(st.just('map'), st.just('map'), st.just('map'), st.text(max_size=20))


def explorer_measuring():
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_pose_age': 1.0,
                                        'refit_every': 0})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      refit_every=0)
    ex = Explorer(planner, RecordingHost(), params)
    ex.leg.target, ex.state = np.array([25.0, 25.0]), State.MEASURING   # the measuring window opened at 0 s
    return ex


def feed_and_check(pose_or_error, stamp):
    """The explorer path for one parsed pose plus a reading at its stamp; checks what is stored."""
    ex = explorer_measuring()
    if isinstance(pose_or_error, Exception):
        ex.reject('pose', 'malformed message', str(pose_or_error))
        return
    pose = pose_or_error
    accepted = ex.on_pose(pose, now=stamp)
    ex.on_reading(Reading(stamp, 1.0))
    ex.tick(stamp + 1e-3)
    if not accepted:
        assert ex.planner.n == 0 and ex.latest_pose is None
        return
    assert covariance_problem(pose.cov) is None and np.all(np.isfinite(pose.xy))
    if ex.planner.n == 0:       # accepted but not stored: only when localisation is too uncertain
        assert position_trace(pose.cov) > ex.params['max_covariance_trace']
        return
    loc = ex.planner.locations
    mean, cov = loc.mean[0].numpy(), loc.covariance[0].numpy()
    assert np.all(np.isfinite(mean)) and np.all(np.abs(mean) <= 1e7)
    assert exactly_psd_2x2(cov)
    assert position_trace(cov) <= ex.params['max_covariance_trace']
    assert check_covariance(torch.as_tensor(cov)) is None
    rec = json.loads(json.dumps({'kind': 'gaussian', 'mean': mean.tolist(), 'covariance': cov.tolist()},
                                allow_nan=False))
    location_from_record(rec)                      # the journal's loader validates it again


def exactly_psd_2x2(c):
    """Symmetric, non-negative diagonal, |xy| <= sqrt(xx) sqrt(yy): PSD up to the rounding of one product."""
    return (np.array_equal(c, c.T) and c[0, 0] >= 0 and c[1, 1] >= 0
            and abs(c[0, 1]) <= math.sqrt(c[0, 0]) * math.sqrt(c[1, 1]))


def parse(msg, source):
    try:
        return pose_estimate_from_msg(msg, source)
    except ValueError as exc:   # the only allowed failure
        return exc


@FUZZ
@given(x=position, y=position, cov=covariances(), stamp=stamps, frame=frames,
       quat=st.lists(value, min_size=4, max_size=4))
def test_odometry_parsing_and_validation(x, y, cov, stamp, frame, quat):
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    msg.header.frame_id = frame
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = quat                       # garbage orientation: irrelevant to the explorer
    msg.pose.covariance = cov
    # the general parser refuses exactly the quaternions without a yaw (zero or non-finite), else keeps the message
    if all(v == 0.0 for v in quat) or not all(math.isfinite(v) for v in quat):
        with pytest.raises(ValueError, match='invalid orientation quaternion'):
            cv.odometry_to_pose(msg)
    else:
        pose = cv.odometry_to_pose(msg)
        assert pose.frame_id == frame
        assert np.array_equal(pose.xy, [msg.pose.pose.position.x, msg.pose.pose.position.y], equal_nan=True)
        assert np.array_equal(pose.cov_xy, np.asarray(msg.pose.covariance).reshape(6, 6)[:2, :2], equal_nan=True)
    parsed = parse(msg, 'odometry')
    feed_and_check(parsed, cv.from_time_msg(msg.header.stamp))


@FUZZ
@given(x=position, y=position, cov=covariances(), stamp=stamps)
def test_pose_with_covariance_parsing_and_validation(x, y, cov, stamp):
    msg = PoseWithCovarianceStamped()
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.w = 1.0
    msg.pose.covariance = cov
    feed_and_check(parse(msg, 'pose_with_covariance'), cv.from_time_msg(msg.header.stamp))


@FUZZ
@given(points=st.lists(st.tuples(position, position), max_size=30).filter(lambda p: len(p) < 3 or any(
       math.isfinite(a) and math.isfinite(b) for a, b in p)),
       stamp=stamps)
def test_particle_cloud_parsing_and_validation(points, stamp):
    t = cv.from_time_msg(cv.to_time_msg(stamp[0] + stamp[1] * 1e-9))
    msg = make_pose_array(t, 'map', np.array(points, dtype=float).reshape(-1, 2))
    parsed = parse(msg, 'particle_cloud')
    if not points:
        assert isinstance(parsed, ValueError)
    feed_and_check(parsed, t)


@FUZZ
@given(points=st.lists(st.tuples(sane, sane), min_size=1, max_size=20),
       weights=st.one_of(st.none(), st.lists(value, min_size=1, max_size=20)))
def test_weighted_particles_moment_match_or_refuse(points, weights):
    pts = np.array(points)
    if weights is not None:
        weights = (weights * len(points))[:len(points)]
    cloud = StampedParticles(1.0, 'map', pts, None if weights is None else np.array(weights))
    try:
        p = particles_to_pose(cloud)
    except ValueError:
        w = np.array(weights, dtype=float)
        with np.errstate(over='ignore'):
            assert not (np.all(np.isfinite(w)) and np.all(w >= 0) and 0 < w.sum() < np.inf)
        return
    assert covariance_problem(p.cov_xy, atol=1e-6) is None
    lo, hi = pts.min(0) - 1e-9, pts.max(0) + 1e-9
    assert np.all(p.xy >= lo) and np.all(p.xy <= hi)         # the mean is inside the cloud's box


@FUZZ
@given(c=st.lists(value, min_size=4, max_size=4))
@example(c=[248.0, 0.0078125, 0.0078125, 0.0])   # clipping xy alone moved it by 3e-5 of the scale
def test_covariance_checks_agree_and_never_raise(c):
    m = np.array(c, dtype=float).reshape(2, 2)
    fast = covariance_problem(m)                  # closed form (2x2)
    general = covariance_problem(m[None])         # batched eigvalsh path
    msg_level = cv.validate_position_covariance(m)
    assert (fast is None) == (msg_level is None)
    if (fast is None) != (general is None):      # only on the tolerance boundary of the PSD test
        scale = np.abs(m).max()
        u = m / scale
        emin = np.linalg.eigvalsh(0.5 * (u + u.T)).min()
        assume(abs(emin + 1e-9 * max(scale, 1.0) / scale) < 1e-12)
        return
    if fast is None:
        p = psd_projection(m)
        assert exactly_psd_2x2(p) and covariance_problem(p) is None
        scale = max(np.abs(m).max(), 1.0)
        assert np.all(np.abs(p - (0.5 * m + 0.5 * m.T)) <= 1e-8 * scale)   # a repair, not a change


def test_pose_estimate_ignores_a_zero_quaternion():
    msg = Odometry()
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x = 3.0
    msg.pose.pose.orientation.w = 0.0              # all-zero: invalid for yaw, irrelevant here
    p = pose_estimate_from_msg(msg, 'odometry')
    assert isinstance(p, PoseEstimate) and p.xy.tolist() == [3.0, 0.0] and p.stamp == 0.0
    assert np.array_equal(p.cov, np.zeros((2, 2)))                     # the message's (x, y) covariance block

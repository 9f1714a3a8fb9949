"""explorer/input_checks.py: one pose estimate or stamp judged on its own (category and reason)."""
import numpy as np
import pytest

from uncertain_bo.explorer import EXPLORER_PARAMS
from uncertain_bo.explorer.estimates import PoseEstimate
from uncertain_bo.explorer.input_checks import MAX_ABS_COORDINATE, pose_problem, stamp_problem
from uncertain_bo.parameters.specs import validate

PARAMS = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'area_margin': 5.0})


def pose(xy=(10.0, 10.0), cov=np.eye(2) * 0.25, frame='map', **kw):
    return PoseEstimate(1.0, frame, np.asarray(xy, dtype=float), np.asarray(cov, dtype=float), **kw)


@pytest.mark.parametrize('estimate, category', [
    (pose(frame='odom'), 'wrong frame_id'),
    (pose(xy=(np.nan, 1.0)), 'non-finite position'),
    (pose(xy=(2 * MAX_ABS_COORDINATE, 1.0)), 'position out of range'),
    (pose(xy=(56.0, 10.0)), 'outside the area'),                 # 6 m beyond the bounds, margin 5 m
    (pose(cov=[[1.0, 0.0], [0.0, -1.0]]), 'covariance negative variance'),
    (pose(samples=np.zeros((3, 3))), 'particles wrong shape'),
    (pose(samples=np.zeros((3, 2)), weights=np.array([1.0, -1.0, 1.0])), 'invalid particle weights'),
])
def test_what_is_wrong_with_a_pose_is_named_by_its_category(estimate, category):
    found = pose_problem(estimate, PARAMS)
    assert found is not None and found[0] == category, found


def test_a_valid_pose_within_the_margin_passes_and_a_sensor_offset_asks_for_its_heading():
    assert pose_problem(pose(xy=(54.0, 10.0)), PARAMS) is None
    offset = {**PARAMS, 'sensor_offset': [0.5, 0.0]}
    assert pose_problem(pose(), offset)[0] == 'no heading'
    assert pose_problem(pose(yaw=0.3), offset) is None


@pytest.mark.parametrize('stamp, cause', [
    (2e4 + 0.5, 'ahead of the clock'),
    (0.0, 'stamped 0'),
    (1e4, 'a clock that is not the node clock'),   # older than STALE_REPLAY_AGE (1 h)
    (2e4 - 2.0, 'arrived late'),
])
def test_a_stamp_too_far_from_the_clock_says_the_likely_cause(stamp, cause):
    found = stamp_problem(stamp, now=2e4, max_age=1.0, tolerance=0.2)
    assert found is not None and cause in found[1], found


def test_a_stamp_within_both_limits_passes():
    assert stamp_problem(99.5, now=100.0, max_age=1.0, tolerance=0.2) is None
    assert stamp_problem(100.1, now=100.0, max_age=1.0, tolerance=0.2) is None

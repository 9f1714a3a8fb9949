"""Operator view without ROS: covariance ellipses, GP grids and their scaling, status reports."""
import math

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate
from uncertain_bo.reporting.operator_view import (GridScale, Level, StatusReporter, colour_ramp, covariance_ellipse,
                                                  grid_over, scale_to_occupancy)
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from explorer_cycle import settle
from recording_host import RecordingHost


def test_ellipse_axis_aligned_rotated_and_dirac():
    e = covariance_ellipse([1.0, 2.0], np.diag([4.0, 1.0]), n_sigma=2.0)
    assert e.diameters == pytest.approx((8.0, 4.0)) and e.yaw == pytest.approx(0.0)
    e = covariance_ellipse([0, 0], np.diag([1.0, 9.0]), n_sigma=1.0)
    assert e.diameters == pytest.approx((6.0, 2.0)) and abs(e.yaw) == pytest.approx(math.pi / 2)
    # 45°: cov = R diag(4, 1) Rᵀ
    r = np.array([[1, -1], [1, 1]]) / math.sqrt(2)
    e = covariance_ellipse([0, 0], r @ np.diag([4.0, 1.0]) @ r.T, n_sigma=2.0)
    assert e.diameters == pytest.approx((8.0, 4.0)) and e.yaw == pytest.approx(math.pi / 4)
    e = covariance_ellipse([5, 5], np.zeros((2, 2)), min_diameter=0.3)   # Dirac: still drawn
    assert e.diameters == (0.3, 0.3) and np.allclose(e.center, [5, 5])


def test_grid_covers_bounds_with_square_cells_in_occupancy_order():
    spec = grid_over([0.0, 200.0, 50.0, 150.0], 40)
    assert spec.resolution == 5.0 and (spec.width, spec.height) == (40, 20)
    c = spec.centers()
    assert c.shape == (800, 2)
    assert np.allclose(c[0], [2.5, 52.5]) and np.allclose(c[1], [7.5, 52.5])   # row-major, rows along +y
    assert np.allclose(c[40], [2.5, 57.5]) and np.allclose(c[-1], [197.5, 147.5])
    odd = grid_over([0.0, 10.0, 0.0, 3.0], 4)
    assert odd.height * odd.resolution >= 3.0 and odd.width == 4
    with pytest.raises(ValueError):
        grid_over([1.0, 0.0, 0.0, 1.0], 10)


def test_scale_to_occupancy():
    cells, scale = scale_to_occupancy(np.array([10.0, 15.0, 20.0, np.nan, np.inf]))
    assert cells.tolist() == [0, 50, 100, -1, -1] and cells.dtype == np.int8
    assert scale == GridScale(10.0, 20.0) and scale.value(50) == 15.0
    cells, scale = scale_to_occupancy(np.array([1.0, 3.0]), lo=0.0)
    assert cells.tolist() == [33, 100] and scale.lo == 0.0
    assert scale_to_occupancy(np.array([7.0, 7.0]))[0].tolist() == [0, 0]        # constant
    assert scale_to_occupancy(np.array([-5.0, 50.0]), lo=0.0, hi=10.0)[0].tolist() == [0, 100]  # clipped
    assert '0 = 10, 100 = 20' in GridScale(10.0, 20.0).describe('mean')
    assert colour_ramp(0.0) != colour_ramp(1.0) and colour_ramp(float('nan')) == (0.5, 0.5, 0.5)


def test_status_levels_follow_the_explorer_state():
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 10.0, 0.0, 10.0], 'max_covariance_trace': 4.0})
    ex = Explorer(Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(1.0, 2)),
                  RecordingHost(), params)
    rep = StatusReporter()
    r = rep.report(ex, None)
    assert r.level is Level.WARN and r.message.startswith('waiting for pose')
    ex.on_pose(PoseEstimate(1.0, 'odom', np.zeros(2), np.eye(2)))               # rejected input
    r = rep.report(ex, 1.0)
    values = dict(r.values)
    assert r.level is Level.WARN and values['rejected pose: wrong frame_id'] == '1'
    assert 'rejected' in r.message and "'odom'" in values['last rejection']
    ex.on_pose(PoseEstimate(0.0, 'map', np.ones(2), np.eye(2) * 0.1), now=0.0)
    r = rep.report(ex, 0.0)              # the pose gate confirms the first place: several poses must agree
    assert r.level is Level.WARN and 'confirming the first place: 1 of 5' in r.message
    settle(ex, np.ones(2), 2.1, make_pose=lambda t, xy: PoseEstimate(t, 'map', xy, np.eye(2) * 0.1))
    r = rep.report(ex, 2.2)
    assert r.level is Level.OK and r.message.startswith('driving to target 1/')
    assert dict(r.values)['state'] == 'driving' and 'last decision (UTC)' in dict(r.values)
    r = rep.report(ex, 10.0)                                                      # no pose for 9 s
    assert r.level is Level.WARN and 'no valid pose' in r.message
    ex.on_pose(PoseEstimate(10.0, 'map', np.ones(2), np.eye(2) * 5.0), now=10.0)  # diverged
    ex.tick(10.0)
    r = rep.report(ex, 10.0, extra={'journal': 'x.jsonl'})
    assert r.level is Level.ERROR and r.message.startswith('paused: localisation diverged')
    assert dict(r.values)['journal'] == 'x.jsonl' and dict(r.values)['state'] == 'paused'


def test_status_shows_the_learned_execution_noise_and_the_budgets():
    prior = np.diag([0.75 ** 2, 0.5 ** 2])
    planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise(torch.as_tensor(prior)),
                      execution_noise_prior_weight=2.0)
    offsets = np.array([[1.0, 0.6], [-0.4, -0.5], [0.8, 1.1]])
    cov_l = np.array([[0.04, 0.01], [0.01, 0.09]])
    for i, e in enumerate(offsets):
        target = np.array([2.0 + i, 5.0])
        planner.observe(torch.as_tensor(target), Gaussian(torch.as_tensor(target + e)[None],
                                                          torch.as_tensor(cov_l)[None]), float(i))
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 10.0, 0.0, 10.0], 'max_distance': 500.0})
    ex = Explorer(planner, RecordingHost(), params)
    values = dict(StatusReporter().report(ex, None).values)
    # oracle: (nu0 Sigma0 + sum(e e^T + Sigma_L)) / (nu0 + n), written out
    sigma = (2.0 * prior + offsets.T @ offsets + 3 * cov_l) / (2.0 + 3)
    sx, sy = np.sqrt(np.diag(sigma))
    assert values['execution noise model'] == 'learned'
    assert values['execution noise std x, y (m)'] == f'{sx:.4g}, {sy:.4g}'
    assert values['execution noise correlation'] == f'{sigma[0, 1] / (sx * sy):.4g}'
    assert values['distance driven (m)'] == '0 of max_distance 500'
    fixed = Explorer(Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.75, 2)),
                     RecordingHost(), params)
    values = dict(StatusReporter().report(fixed, None).values)
    assert values['execution noise model'] == 'configured' and values['execution noise std x, y (m)'] == '0.75, 0.75'


def test_status_counts_skipped_targets_and_keep_out_zones():
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 10.0, 0.0, 10.0]})
    ex = Explorer(Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(1.0, 2)),
                  RecordingHost(), params)
    settle(ex, np.ones(2), 0.0, make_pose=lambda t, xy: PoseEstimate(t, 'map', xy, np.eye(2) * 0.01))
    ex.goal_failed('aborted by the controller', 'no valid path', 0.5)
    values = dict(StatusReporter().report(ex, 0.5).values)
    assert values['targets skipped'] == '1' and values['keep-out zones'] == '1'
    assert values['rejected goal: aborted by the controller'] == '1'

"""Revised trajectories in the ROS-free explorer (explorer/revisions.py): each stored reading (measurements and
en-route readings) is re-placed at the revised pose at its own stamp (interpolated between the poses around it within
max_pose_age); invalid poses, stale trajectories and unchanged paths re-place nothing and are counted or skipped."""
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from uncertain_bo.distributions import GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State
from uncertain_bo.explorer.revisions import pose_at
from uncertain_bo.journal.journal import Journal
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost


def make(tmp_path, decider=None, method='ugp_ucb', **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
                                        'dwell_time': 0.5, 'goal_timeout': 200.0, 'reading_timeout': 2.0,
                                        'en_route_spacing': 3.0, 'n_initial': 5, 'method': method, **overrides})
    planner = Planner(torch.tensor([[0.0, 0.0], [50.0, 50.0]]), GaussianExecutionNoise.isotropic(1.0, 2),
                      n_initial=5, journal=tmp_path / 'j.jsonl', method=method)
    return Explorer(planner, RecordingHost(), params, decider=decider)


def run(ex, until=None, particles=False, start=(0.0, (1.0, 1.0))):
    """Poses at 10 Hz driving at 1 m/s to the goal (``particles``: particle clouds), readings at 1 Hz stamped 0.03 s
    after a pose, from ``start`` (time, position) until done or ``until(t)``; returns where it stopped."""
    t, xy = start[0], np.array(start[1])
    host = ex.outputs
    rng = np.random.default_rng(0)
    while ex.state is not State.DONE and t < 600.0 and not (until and until(t)):
        while ex.deciding_in_background:        # the simulated clock waits for the decider thread
            time.sleep(0.002)
        if ex.state is State.DRIVING:
            step = host.goals[-1] - xy
            dist = np.linalg.norm(step)
            xy = xy + (step / dist * min(0.1, dist) if dist > 0 else 0.0)
        ex.on_pose(PoseEstimate.from_particles(t, 'map', xy + 0.5 * rng.standard_normal((200, 2))) if particles
                   else PoseEstimate(t, 'map', xy.copy(), np.eye(2) * 0.25), t)
        if abs(t - round(t)) < 1e-9:
            ex.on_reading(Reading(t + 0.03, float(xy.sum())), t + 0.03)
        ex.tick(t)
        t = round(t + 0.1, 6)
    return t, xy


def revised(t):
    """The revised trajectory used below: a straight line in time, covariance growing linearly (an oracle of the
    interpolation: linear in the stamp)."""
    return np.array([5.0 + 0.5 * t, 40.0 - 0.25 * t]), np.array([[0.01 + 0.002 * t, 0.001], [0.001, 0.02]])


def trajectory(stamps, frame='map'):
    return [PoseEstimate(s, frame, *revised(s)) for s in stamps]


def means(ex):
    return {r.key: row[1].mean[0].numpy() for r, row in zip(ex.planner.readings, ex.planner.observations.rows)}


def test_every_stored_reading_is_re_placed_at_the_revised_pose_at_its_stamp(tmp_path):
    ex = make(tmp_path)
    run(ex)
    readings = ex.planner.readings
    assert {r.kind for r in readings} == {'observation', 'en_route'} and all(r.stamp is not None for r in readings)
    before = means(ex)
    covered = [r for r in readings if r.stamp < 20.0]            # the trajectory covers the first 20 s only
    stamps = np.arange(0.0, 20.0, 0.4) + 0.05                    # never a reading's stamp: interpolated
    outcome = ex.on_revised_trajectory(trajectory(stamps), stamp=1000.0, source='test')
    assert sorted(outcome.applied) == sorted(r.key for r in covered) and covered
    after = means(ex)
    for r in readings:
        if r in covered:
            want_mean, want_cov = revised(r.stamp)
            row = ex.planner.observations.rows[ex.planner.observations.row_of(*r.key)][1]
            assert np.allclose(after[r.key], want_mean, atol=1e-12)
            assert np.allclose(row.covariance[0].numpy(), want_cov, atol=1e-12)
        else:
            assert np.array_equal(after[r.key], before[r.key])
    recs = [r for r in Journal(tmp_path / 'j.jsonl', read_only=True).records if r['type'] == 'revision']
    assert len(recs) == len(covered) and {r['source'] for r in recs} == {'test'} and recs[0]['stamp'] == 1000.0
    assert not ex.rejected


def test_the_revised_pose_at_a_stamp_interpolates_within_max_pose_age_only():
    poses = trajectory([0.0, 0.6, 2.0, 10.0])
    assert np.allclose(pose_at(poses, 0.25, 0.5).xy, revised(0.25)[0])       # both within 0.5 s: interpolated
    assert np.allclose(pose_at(poses, 0.25, 0.5).cov, revised(0.25)[1])
    assert np.allclose(pose_at(poses, 2.4, 0.5).xy, revised(2.0)[0])         # only the one before
    assert np.allclose(pose_at(poses, 9.7, 0.5).xy, revised(10.0)[0])        # only the one after
    assert pose_at(poses, 1.3, 0.5) is None and pose_at(poses, 5.0, 0.5) is None   # between distant keyframes
    assert pose_at(poses, -0.6, 0.5) is None and pose_at(poses, 10.6, 0.5) is None


def test_invalid_poses_wrong_frames_stale_and_unchanged_trajectories_re_place_nothing(tmp_path):
    ex = make(tmp_path)
    run(ex)
    stamps = [r.stamp for r in ex.planner.readings]
    bad = [PoseEstimate(s, 'map', revised(s)[0], np.array([[1.0, 2.0], [2.0, 1.0]])) for s in stamps]
    bad += [PoseEstimate(s, 'odom', *revised(s)) for s in stamps]
    bad += [PoseEstimate(s, 'map', np.array([np.nan, 1.0]), np.eye(2)) for s in stamps]
    before = means(ex)
    assert ex.on_revised_trajectory(bad, stamp=1000.0).applied == []
    assert all(np.array_equal(before[k], v) for k, v in means(ex).items())
    n = len(stamps)
    assert ex.rejected['revision: covariance not positive semi-definite'] == n
    assert ex.rejected['revision: wrong frame_id'] == n and ex.rejected['revision: non-finite position'] == n
    good = trajectory(stamps)
    assert len(ex.on_revised_trajectory(good, stamp=1000.0).applied) == n
    journal = tmp_path / 'j.jsonl'
    lines = journal.read_text().count('\n')
    # the same path again (a back end republishing it): nothing moved, nothing journaled, nothing rejected
    assert ex.on_revised_trajectory(good, stamp=1001.0).applied == [] and journal.read_text().count('\n') == lines
    # a stale trajectory (older than the revisions applied): every reading it would re-place is out of order
    shifted = [PoseEstimate(p.stamp, 'map', p.xy + 3.0, p.cov) for p in good]
    out = ex.on_revised_trajectory(shifted, stamp=999.0)
    assert out.applied == [] and ex.rejected['revision: out of order'] == n
    assert ex.planner.revisions_rejected == {'out of order': n}
    assert ex.on_revised_trajectory(shifted, stamp=1002.0).applied                  # a newer one is applied


def test_a_trajectory_arriving_while_the_decider_works_is_applied_after_the_decision(tmp_path):
    with ThreadPoolExecutor(1) as decider:
        ex = make(tmp_path, decider=decider, max_measurements=3, n_initial=2)
        where = run(ex, until=lambda t: ex.planner.n == 2 and ex.deciding_in_background)
        assert ex.deciding_in_background           # the recommendation after the second measurement runs
        stamps = [r.stamp for r in ex.planner.readings]
        held = ex.on_revised_trajectory(trajectory(stamps), stamp=1000.0)
        assert held.applied == [] and ex.planner.revisions_applied == 0
        run(ex, start=where)
    assert ex.planner.revisions_applied == len(stamps)
    assert all(np.allclose(means(ex)[r.key], revised(r.stamp)[0]) for r in ex.planner.readings
               if r.stamp in stamps)


def test_a_run_of_particles_takes_draws_of_the_revised_pose(tmp_path):
    ex = make(tmp_path, method='airbo', max_measurements=2, en_route_spacing=0.0, max_particles=64)
    run(ex, particles=True)
    assert ex.planner.locations.samples.shape[1] == 64
    stamps = [r.stamp for r in ex.planner.readings]
    assert len(ex.on_revised_trajectory(trajectory(stamps), stamp=1000.0).applied) == len(stamps)
    locs = ex.planner.locations
    assert locs.samples.shape[1] == ex.params['max_particles']
    want = np.stack([revised(s)[0] for s in stamps])
    assert np.allclose(locs.mean.numpy(), want, atol=0.05)          # 64 draws of a 0.1-0.15 m spread


def test_the_result_file_counts_revisions_applied_and_rejected(tmp_path):
    ex = make(tmp_path)
    run(ex)
    stamps = [r.stamp for r in ex.planner.readings]
    ex.on_revised_trajectory(trajectory(stamps), stamp=1000.0)
    ex.on_revised_trajectory([PoseEstimate(p.stamp, 'map', p.xy + 1.0, p.cov) for p in trajectory(stamps)], 900.0)
    assert ex.result(None)['revisions'] == {'applied': len(stamps), 'rejected': {'out of order': len(stamps)}}

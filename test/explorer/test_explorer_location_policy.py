"""Explorer (ROS-free) with particle-cloud poses: the stored location distribution follows the method's
kernel (Empirical for sample-set kernels, the moment-matched Gaussian otherwise), invalid clouds never
reach the journal, and runs resume from journals of empirical records."""
import itertools
import json

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Empirical, Gaussian, GaussianExecutionNoise
from uncertain_bo.explorer import (EXPLORER_PARAMS, Explorer, PoseEstimate, Reading, State, resample_particles,
                                   takes_sample_sets)
from uncertain_bo.parameters.specs import ParameterError, validate
from uncertain_bo.planning.planner import Planner

from recording_host import RecordingHost

BOUNDS = torch.tensor([[0.0, 0.0], [50.0, 50.0]])


def make(tmp_path, method, **overrides):
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_measurements': 2,
                                        'dwell_time': 0.5, 'reading_timeout': 2.0, 'method': method,
                                        'max_particles': 40, 'refit_every': 0, **overrides})
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), method=method, n_initial=5, refit_every=0,
                      journal=tmp_path / 'journal.jsonl')
    host = RecordingHost()
    return Explorer(planner, host, params), host


def cloud(t, center, rng, n=300, weighted=True, frame='map'):
    """A skewed (non-Gaussian) cloud: half-normal along x, normal along y, random weights."""
    pts = np.column_stack([np.abs(rng.normal(0, 1.0, n)), rng.normal(0, 0.3, n)]) + center
    w = rng.uniform(0.2, 1.0, n) if weighted else None
    return PoseEstimate.from_particles(t, frame, pts, w)


def measure_all(ex, host, rng, weighted=True, make_pose=None):
    t = 0.0
    make_pose = make_pose or (lambda t, c: cloud(t, c, rng, weighted=weighted))
    while ex.state is not State.DONE and t < 200:
        center = host.goals[-1] if host.goals else np.array([25.0, 25.0])
        ex.on_pose(make_pose(t, center))
        if round(t * 10) % 5 == 0:
            ex.on_reading(Reading(t + 0.02, 3.0))
        ex.tick(t)
        t = round(t + 0.1, 6)
    assert ex.state is State.DONE


def observations(tmp_path):
    lines = (tmp_path / 'journal.jsonl').read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get('type') == 'observation']


def test_airbo_stores_empirical_locations_of_max_particles(tmp_path):
    ex, host = make(tmp_path, 'airbo')
    assert takes_sample_sets(ex.planner) and ex.location_particles == 40
    measure_all(ex, host, np.random.default_rng(0))
    locs = ex.planner.locations
    assert isinstance(locs, Empirical) and locs.samples.shape == (2, 40, 2)
    obs = observations(tmp_path)
    assert [r['location']['kind'] for r in obs] == ['empirical', 'empirical']
    assert all(len(r['location']['samples']) == 40 and 'weights' not in r['location'] for r in obs)
    # the samples come from the cloud: skewed to +x of the target (half-normal), unlike a Gaussian
    for m, r in zip(host.measurements, obs):
        s = np.array(r['location']['samples'])
        assert np.all(s[:, 0] >= m.target[0] - 1e-9) and np.all(s[:, 0] <= m.target[0] + 6.0)
        assert m.pose.xy[0] > m.target[0] + 0.3          # the moments came from the whole weighted cloud
    # the moments still give an ellipse (operator view, markers)
    assert locs.covariance.shape == (2, 2, 2) and torch.all(torch.linalg.eigvalsh(locs.covariance) > 0)


@pytest.mark.parametrize('method', ['ugp_ucb', 'igp_ucb'])
def test_gaussian_methods_store_the_moment_matched_gaussian(tmp_path, method):
    ex, host = make(tmp_path, method)
    assert not takes_sample_sets(ex.planner) and ex.location_particles == 0
    measure_all(ex, host, np.random.default_rng(1))
    assert isinstance(ex.planner.locations, Gaussian)
    obs = observations(tmp_path)
    assert [r['location']['kind'] for r in obs] == ['gaussian', 'gaussian']
    m = host.measurements[0]
    assert np.allclose(obs[0]['location']['mean'], m.pose.xy) and m.pose.samples is None   # particles dropped


BAD_CLOUDS = [
    (lambda t: PoseEstimate.from_particles(t, 'map', [[1.0, np.nan], [2.0, 2.0]]), 'pose: non-finite position'),
    (lambda t: PoseEstimate(t, 'map', np.array([1.5, 1.5]), np.eye(2) * 0.25,
                            np.array([[1.0, np.inf], [2.0, 2.0]])), 'pose: non-finite particles'),
    (lambda t: PoseEstimate(t, 'map', np.array([1.5, 1.5]), np.eye(2) * 0.25,
                            np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([1.0, -1.0])),
     'pose: invalid particle weights'),
    (lambda t: PoseEstimate(t, 'map', np.array([1.5, 1.5]), np.eye(2) * 0.25,
                            np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([1.0])), 'pose: invalid particle weights'),
    (lambda t: PoseEstimate(t, 'map', np.array([1.5, 1.5]), np.eye(2) * 0.25,
                            np.array([[1.0, 1.0], [2e7, 2.0]])), 'pose: particles out of range'),
    (lambda t: PoseEstimate(t, 'map', np.array([1.5, 1.5]), np.eye(2) * 0.25, np.zeros((0, 2))),
     'pose: particles wrong shape'),
    (lambda t: PoseEstimate.from_particles(t, 'odom', [[1.0, 1.0], [2.0, 2.0]]), 'pose: wrong frame_id'),
    (lambda t: PoseEstimate.from_particles(t - 5.0, 'map', [[1.0, 1.0], [2.0, 2.0], [1.0, 2.0]]), 'pose: stale stamp'),
]


@pytest.mark.parametrize('bad, key', BAD_CLOUDS)
def test_invalid_particle_clouds_never_reach_the_journal(tmp_path, bad, key):
    ex, host = make(tmp_path, 'airbo', max_pose_age=1.0)
    rng = np.random.default_rng(2)
    good = True

    def make_pose(t, c):
        return cloud(t, c, rng) if good else bad(t)
    # drive to the first goal and dwell with good clouds, then only bad ones while measuring
    t = 0.0
    while ex.state is not State.MEASURING:
        ex.on_pose(make_pose(t, host.goals[-1] if host.goals else np.array([25.0, 25.0])), now=t)
        ex.tick(t)
        t = round(t + 0.1, 6)
    good = False
    for _ in range(30):
        assert ex.on_pose(bad(t), now=t) is False
        ex.on_reading(Reading(t + 0.02, 3.0))
        ex.tick(t)
        t = round(t + 0.1, 6)
    assert ex.rejected[key] >= 30
    assert all(np.all(np.isfinite(p.xy)) for p in ex.inputs.poses)
    assert ex.planner.n == 0 and not observations(tmp_path)
    for t_, w in ((0.0, [1.0, np.nan]), (0.0, [0.0, 0.0]), (0.0, [1e308, 1e308])):
        with pytest.raises(ValueError, match='weights'):
            PoseEstimate.from_particles(t_, 'map', [[0.0, 0.0], [1.0, 1.0]], w)
    with pytest.raises(ValueError, match='empty'):
        PoseEstimate.from_particles(0.0, 'map', np.zeros((0, 2)))


def test_resume_from_a_journal_of_empirical_locations(tmp_path):
    ex, host = make(tmp_path, 'airbo', max_measurements=2)
    measure_all(ex, host, np.random.default_rng(3))
    first = ex.planner.locations.samples.clone()
    # restart with more measurements and a different max_particles: the journal's 40 particles are kept
    ex2, host2 = make(tmp_path, 'airbo', max_measurements=3, max_particles=25)
    assert ex2.planner.n == 2 and ex2.location_particles == 40
    assert torch.equal(ex2.planner.locations.samples, first)
    measure_all(ex2, host2, np.random.default_rng(4))
    assert ex2.planner.locations.samples.shape == (3, 40, 2)
    # a pose without particles in an empirical run becomes draws of its Gaussian (never a mixed batch)
    ex3, host3 = make(tmp_path, 'airbo', max_measurements=4)
    measure_all(ex3, host3, None, make_pose=lambda t, c: PoseEstimate(t, 'map', c + 0.2, np.eye(2) * 0.04))
    locs = ex3.planner.locations
    assert isinstance(locs, Empirical) and locs.samples.shape == (4, 40, 2)
    assert torch.allclose(locs.mean[3], torch.as_tensor(host3.measurements[0].pose.xy), atol=0.15)
    assert ex3.planner.recommend() is not None


def test_gaussian_journal_keeps_gaussian_locations_with_airbo(tmp_path):
    ex, host = make(tmp_path, 'ugp_ucb', max_measurements=1)
    measure_all(ex, host, np.random.default_rng(5))
    ex2, host2 = make(tmp_path, 'airbo', max_measurements=2)   # resumed: journal holds a Gaussian
    assert ex2.location_particles == 0
    measure_all(ex2, host2, np.random.default_rng(6))
    assert isinstance(ex2.planner.locations, Gaussian)


def test_resample_particles_is_a_fair_systematic_resample():
    rng = np.random.default_rng(0)
    x = np.arange(4.0).reshape(4, 1)
    w = np.array([0.5, 0.25, 0.25, 0.0])
    out = resample_particles(x, w, 8, rng)
    assert sorted(out[:, 0].tolist()) == [0, 0, 0, 0, 1, 1, 2, 2]          # exact proportions, no zero weight
    pts = rng.normal(size=(5000, 2))
    sub = resample_particles(pts, None, 400, rng)
    assert sub.shape == (400, 2) and np.allclose(sub.mean(0), 0, atol=0.15)
    assert abs(sub[:50, 0].mean() - sub[:, 0].mean()) < 0.5                 # random order: prefixes are fair
    with pytest.raises(ParameterError, match='max_particles'):
        validate(EXPLORER_PARAMS, {'max_particles': 0})


# ------------------------------------------------------------------ fuzzing the empirical path
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from uncertain_bo.journal.journal import location_from_record, location_to_record  # noqa: E402

_nasty = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, 0.0, -0.0, 1e154, 2e7])
_value = st.one_of(st.floats(-30, 30), st.floats(-30, 30), _nasty, st.floats(allow_nan=True, allow_infinity=True))


_runs = itertools.count()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(points=st.lists(st.tuples(_value, _value), min_size=1, max_size=12),
       weights=st.one_of(st.none(), st.lists(_value, min_size=1, max_size=12)))
def test_fuzzed_particle_clouds_never_crash_or_store_invalid_empirical_locations(tmp_path, points, weights):
    run_dir = tmp_path / str(next(_runs))          # a fresh journal per example
    run_dir.mkdir()
    ex, _ = make(run_dir, 'airbo', max_particles=8, max_covariance_trace=1e12)
    ex.leg.target, ex.state = np.array([25.0, 25.0]), State.MEASURING   # the measuring window opened at 0 s
    try:
        pose = PoseEstimate.from_particles(1.0, 'map', np.array(points, dtype=float), weights)
    except ValueError:
        return                                       # the only allowed failure: refused before the explorer
    accepted = ex.on_pose(pose, now=1.0)
    ex.on_reading(Reading(1.0, 2.0))
    ex.tick(1.001)
    if not accepted:
        assert ex.planner.n == 0 and ex.latest_pose is None
        return
    if ex.planner.n == 0:        # accepted but not stored: only when localisation is too uncertain
        assert np.trace(pose.cov) > ex.params['max_covariance_trace']
        return
    loc = ex.planner.locations
    assert isinstance(loc, Empirical) and loc.samples.shape == (1, 8, 2)
    s = loc.samples[0].numpy()
    assert np.all(np.isfinite(s)) and np.all(np.abs(s) <= 1e7)
    assert all(any(np.array_equal(row, p) for p in np.array(points, dtype=float)) for row in s)   # real particles
    rec = json.loads(json.dumps(location_to_record(loc), allow_nan=False))
    assert torch.equal(location_from_record(rec).samples, loc.samples)     # the journal's loader accepts it

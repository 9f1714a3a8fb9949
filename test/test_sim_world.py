"""Tests for uncertain_bo.sim.world.SimWorld and uncertain_bo.sim.sensor.FieldSensor."""
import numpy as np
import pytest

from uncertain_bo.parameters import ParameterError, defaults
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.sensor import FieldSensor
from uncertain_bo.sim.world import WORLD_PARAMS, SimWorld


@pytest.fixture(scope='module')
def plane():
    xs = np.linspace(0, 200, 41)
    X, Y = np.meshgrid(xs, xs)
    return Field(3.0 * X - 2.0 * Y + 7.0, (0, 200, 0, 200))      # bilinear interpolation is exact


def drive(world, n, v=0.6, w=0.2):
    return [world.step(v, w * np.sin(0.01 * k)) for k in range(n)]


def test_deterministic_given_seed(plane):
    a = drive(SimWorld(plane, {'seed': 7}), 300)
    b = drive(SimWorld(plane, {'seed': 7}), 300)
    c = drive(SimWorld(plane, seed=8), 300)
    for sa, sb in zip(a, b):
        assert np.array_equal(sa.truth.pose, sb.truth.pose)
        assert (sa.odometry.v, sa.odometry.w) == (sb.odometry.v, sb.odometry.w)
        assert (sa.fix is None) == (sb.fix is None)
        if sa.fix is not None:
            assert np.array_equal(sa.fix.xy, sb.fix.xy)
        if sa.reading is not None:
            assert sa.reading.value == sb.reading.value
    assert not np.array_equal(a[-1].truth.pose, c[-1].truth.pose)


def test_measurement_schedule(plane):
    w = SimWorld(plane, {'sim_rate': 20.0, 'fix_rate': 1.0, 'reading_rate': 2.0})
    steps = drive(w, 200)                         # 10 simulated seconds
    assert steps[-1].t == pytest.approx(10.0)
    fix_times = [s.t for s in steps if s.fix is not None]
    read_times = [s.t for s in steps if s.reading is not None]
    assert fix_times == pytest.approx(list(np.arange(1, 11) * 1.0))
    assert read_times == pytest.approx(list(np.arange(1, 21) * 0.5))
    w2 = SimWorld(plane, {'sim_rate': 30.0, 'fix_rate': 0.0, 'reading_rate': 7.0})
    steps = drive(w2, 300)
    assert all(s.fix is None for s in steps)
    assert sum(s.reading is not None for s in steps) == 70


def test_reading_is_field_at_true_position(plane):
    w = SimWorld(plane, {'reading_noise_std': 0.0, 'reading_rate': 20.0, 'fix_std': 5.0})
    for s in drive(w, 100):
        x, y = s.truth.pose[:2]
        assert s.reading.value == pytest.approx(3.0 * x - 2.0 * y + 7.0, abs=1e-9)
        assert s.reading.variance == 0.0


def test_reading_noise_and_dropout(plane):
    rng = np.random.default_rng(0)
    sensor = FieldSensor(plane, noise_std=0.5, rng=rng)
    vals = np.array([sensor.read([50.0, 20.0]) for _ in range(20000)])
    assert vals.mean() == pytest.approx(3 * 50 - 2 * 20 + 7, abs=0.02)
    assert vals.std() == pytest.approx(0.5, rel=0.03)
    assert sensor.variance == pytest.approx(0.25)
    lossy = FieldSensor(plane, noise_std=0.0, rng=rng, dropout_prob=0.3)
    got = [lossy.read([1.0, 1.0]) for _ in range(10000)]
    assert np.mean([g is None for g in got]) == pytest.approx(0.3, abs=0.02)
    w = SimWorld(plane, {'reading_dropout_prob': 1.0, 'reading_rate': 20.0})
    s = w.step(0.0, 0.0)
    assert s.reading_due and s.reading is None


def test_fix_error_statistics(plane):
    w = SimWorld(plane, {'fix_rate': 20.0, 'fix_std': 1.2, 'seed': 3})
    err = np.array([s.fix.xy - s.truth.pose[:2] for s in drive(w, 4000)])
    assert err.mean(axis=0) == pytest.approx([0, 0], abs=0.06)
    assert err.std(axis=0) == pytest.approx([1.2, 1.2], rel=0.04)


def test_noise_streams_are_independent(plane):
    # changing how often fixes come must not change the physical (slip) realisation
    a = drive(SimWorld(plane, {'fix_rate': 1.0, 'seed': 4}), 200)
    b = drive(SimWorld(plane, {'fix_rate': 5.0, 'seed': 4}), 200)
    assert np.array_equal(a[-1].truth.pose, b[-1].truth.pose)


def test_initial_step_and_params(plane):
    w = SimWorld(plane, {'initial_x': 12.0, 'initial_y': 34.0, 'initial_yaw': 1.0})
    s0 = w.initial_step()
    assert s0.t == 0.0 and s0.fix is None and s0.reading is None
    assert np.allclose(s0.truth.pose, [12.0, 34.0, 1.0])
    assert (s0.odometry.v, s0.odometry.w) == (0.0, 0.0)
    assert np.all(np.linalg.eigvalsh(s0.odometry.twist_cov) > 0)
    with pytest.raises(ParameterError, match='sim_rate'):
        SimWorld(plane, {'sim_rate': 0.0})


def test_live_params_dict_and_field_loading():
    params = defaults(WORLD_PARAMS)
    params.update(field_extent=[0.0, 50.0, 0.0, 50.0], fix_rate=0.0, sim_rate=20.0)
    w = SimWorld.from_params(params)
    assert w.field.name == 'jacksboro' and w.field.bounds == (0.0, 50.0, 0.0, 50.0)
    assert all(s.fix is None for s in drive(w, 40))
    params['fix_rate'] = 10.0                    # e.g. a ROS parameter update
    assert sum(s.fix is not None for s in drive(w, 40)) == 20

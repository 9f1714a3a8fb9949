"""Tests for uncertain_bo.sim.world.SimWorld and uncertain_bo.sim.sensor.FieldSensor."""
import numpy as np
import pytest

from uncertain_bo.parameters.specs import ParameterError, defaults
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


def test_a_sensor_on_an_arm_reads_the_field_where_the_arm_holds_it(plane):
    # sensor_offset (1.5, -0.5): 1.5 m forward, 0.5 m to the right of base_link, turned by the true heading
    w = SimWorld(plane, {'reading_noise_std': 0.0, 'reading_rate': 20.0, 'sensor_offset': [1.5, -0.5]})
    headings = []
    for s in drive(w, 200, w=0.8):
        x, y, yaw = s.truth.pose
        sx, sy = x + 1.5 * np.cos(yaw) + 0.5 * np.sin(yaw), y + 1.5 * np.sin(yaw) - 0.5 * np.cos(yaw)
        assert s.reading.value == pytest.approx(3.0 * sx - 2.0 * sy + 7.0, abs=1e-9)
        headings.append(yaw)
    assert np.ptp(headings) > 1.0           # the arm really turned


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
    params.update(field_extent=[0.0, 50.0, 0.0, 50.0], initial_x=25.0, initial_y=25.0, fix_rate=0.0, sim_rate=20.0)
    w = SimWorld.from_params(params)
    assert w.field.name == 'jacksboro-smooth' and w.field.bounds == (0.0, 50.0, 0.0, 50.0)
    assert all(s.fix is None for s in drive(w, 40))
    params['fix_rate'] = 10.0                    # e.g. a ROS parameter update
    assert sum(s.fix is not None for s in drive(w, 40)) == 20


# ------------------------------------------------------------------ GNSS-degraded zone
ZONE = {'fix_std': 0.3, 'degraded_zone': [100.0, 300.0, -100.0, 300.0], 'degraded_fix_std': 3.0,
        'degraded_ramp': 20.0}


def smoothstep_std(depth, fix_std=0.3, deep=3.0, ramp=20.0):
    """Oracle for the documented ramp: 0 outside, smoothstep 3u² - 2u³ of u = depth / ramp, 1 beyond."""
    u = min(max(depth / ramp, 0.0), 1.0)
    return fix_std + (3 * u ** 2 - 2 * u ** 3) * (deep - fix_std)


@pytest.mark.parametrize('x, depth', [(60.0, -40.0), (110.0, 10.0), (150.0, 50.0)])
def test_degraded_zone_fix_std_outside_on_the_ramp_and_inside(plane, x, depth):
    # a parked rover (no motion without wheel speed) gets n fixes at one true position; the sample std of the
    # 2n coordinates has a standard error of about std / sqrt(4n): 4 of those is the tolerance
    n = 4000
    w = SimWorld(plane, {**ZONE, 'fix_rate': 10.0, 'initial_x': x, 'initial_y': 50.0, 'seed': 5})
    steps = [w.step(0.0, 0.0) for _ in range(n)]
    truth = steps[-1].truth.pose[:2]
    assert np.array_equal(truth, [x, 50.0])
    err = np.array([s.fix.xy - truth for s in steps])
    std = smoothstep_std(depth)
    assert std == pytest.approx({-40.0: 0.3, 10.0: 1.65, 50.0: 3.0}[depth])
    assert np.sqrt(np.mean(err ** 2)) == pytest.approx(std, rel=4 / np.sqrt(4 * n))
    assert np.abs(err.mean(axis=0)).max() < 4 * std / np.sqrt(n)
    for s in steps:                      # the published covariance is the true one
        assert np.allclose(s.fix.cov, std ** 2 * np.eye(2), rtol=1e-12, atol=0.0)


def test_covariance_follows_the_true_position_across_the_zone_edge(plane):
    w = SimWorld(plane, {**ZONE, 'fix_rate': 10.0, 'initial_x': 80.0, 'initial_y': 50.0, 'wheel_slip_std': 0.0})
    covs = []
    for _ in range(600):                 # east at up to 1 m/s from x = 80 m across the edge at x = 100 m
        s = w.step(1.0, 0.0)
        expected = smoothstep_std(s.truth.pose[0] - 100.0) ** 2
        assert np.allclose(s.fix.cov, expected * np.eye(2), rtol=1e-12, atol=0.0)
        covs.append(s.fix.cov[0, 0])
    assert covs[0] == pytest.approx(0.09) and covs[-1] == pytest.approx(9.0)
    assert np.all(np.diff(covs) >= 0.0)  # rises monotonically along the ramp


def test_degraded_zone_dropout_rate(plane):
    n = 5000
    for x, expected in [(150.0, 0.4), (110.0, 0.2), (60.0, 0.0)]:    # deep inside, half-way up the ramp, outside
        w = SimWorld(plane, {**ZONE, 'degraded_fix_dropout': 0.4, 'fix_rate': 10.0, 'initial_x': x, 'seed': 2})
        steps = [w.step(0.0, 0.0) for _ in range(n)]
        assert all(s.fix_due for s in steps)
        lost = np.mean([s.fix is None for s in steps])
        assert lost == pytest.approx(expected, abs=4 * np.sqrt(0.25 / n)), x


def test_zone_free_world_is_bit_for_bit_the_one_before_zones(plane):
    # golden values printed by the code before degraded zones existed (git 2b3a0d7), same field and commands
    def run(extra):
        w = SimWorld(plane, {'seed': 11, 'fix_rate': 2.0, 'fix_outlier_prob': 0.1, 'reading_dropout_prob': 0.2,
                             'reading_noise_std': 1.0, **extra})      # the absolute noise of the time
        fixes, readings, yaw_rates, steps = [], [], [], []
        for k in range(300):
            s = w.step(0.8, 0.3 * np.sin(0.02 * k))
            steps.append(s)
            if s.fix is not None:
                fixes.append(s.fix.xy)
            if s.reading is not None:
                readings.append(s.reading.value)
            yaw_rates.append(s.odometry.w)
        return steps, fixes, readings, yaw_rates

    for extra in [{}, {'degraded_zone': [0.0, 0.0, 0.0, 0.0], 'degraded_fix_dropout': 0.9},
                  {'degraded_zone': [1e6, 1e6 + 10.0, 1e6, 1e6 + 10.0], 'degraded_fix_std': 50.0,
                   'degraded_fix_dropout': 0.9}]:
        steps, fixes, readings, yaw_rates = run(extra)
        assert steps[-1].truth.pose.tolist() == [100.73296856384243, 113.22653649121904, -0.0526392923164094]
        assert len(fixes) == 60 and fixes[0].tolist() == [101.46125342445393, 98.72515006451134]
        assert fixes[-1].tolist() == [102.2759089594036, 116.95276724956746]
        assert float(np.sum(fixes)) == 12565.020954395608
        assert len(readings) == 23 and float(np.sum(readings)) == 2217.6319292224453
        assert float(np.sum(yaw_rates)) == 1.0786899317183725
        assert all(np.array_equal(s.fix.cov, 4.0 * np.eye(2)) for s in steps if s.fix is not None)
    # a zone the rover drives through changes the fixes only: slip, odometry and readings stay the same
    base = run({})[0]
    zoned = run({'degraded_zone': [0.0, 200.0, 0.0, 200.0], 'degraded_fix_dropout': 0.5})[0]
    assert sum(s.fix is None and s.fix_due for s in zoned) > 10
    for a, b in zip(base, zoned):
        assert np.array_equal(a.truth.pose, b.truth.pose) and a.odometry.w == b.odometry.w
        assert (a.reading is None) == (b.reading is None) and (a.reading is None or a.reading.value == b.reading.value)


def test_degraded_zone_must_be_a_rectangle_or_zeros(plane):
    with pytest.raises(ParameterError, match=r"degraded_zone.*xmin < xmax and ymin < ymax, or all zeros"):
        SimWorld(plane, {'degraded_zone': [100.0, 50.0, 0.0, 10.0]})
    with pytest.raises(ParameterError, match='degraded_zone'):
        SimWorld(plane, {'degraded_zone': [0.0, 1.0, 2.0]})
    with pytest.raises(ParameterError, match='degraded_fix_dropout'):
        SimWorld(plane, {'degraded_fix_dropout': 1.5})


# ------------------------------------------------------------------ odometer
def test_odometer_on_a_straight_drive_and_a_circle(plane):
    w = SimWorld(plane, {'wheel_slip_std': 0.0, 'initial_yaw': 0.7})
    assert w.distance_travelled == 0.0
    start = w.true_pose[:2]
    for _ in range(250):
        w.step(1.0, 0.0)
    # straight: the path length is the displacement; accelerating at 1 m/s² to 1 m/s in 1 s covers
    # 0.1 (1 + 2 + ... + 10) x 0.1 = 5.5 m, then 24 s at 1 m/s
    assert w.distance_travelled == pytest.approx(np.hypot(*(w.true_pose[:2] - start)), abs=1e-9)
    assert w.distance_travelled == pytest.approx(5.5 * 0.1 + 24.0, abs=1e-9)
    w.step(0.0, 0.0)
    w.step(0.0, 0.0)                                   # decelerating, still moving a little
    d0, r = w.distance_travelled, 4.0
    poses = [w.true_pose[:2]]
    for _ in range(400):                               # v = 1 m/s, w = 0.25 rad/s: a circle of radius 4 m
        w.step(1.0, 1.0 / r)
        poses.append(w.true_pose[:2])
    chords = np.sum(np.hypot(*np.diff(np.array(poses), axis=0).T))
    assert w.distance_travelled - d0 == pytest.approx(chords, rel=1e-4)    # chords undershoot arcs by ~1e-5
    assert w.distance_travelled - d0 > chords


def test_relative_reading_noise_scales_with_the_field(plane):
    """reading_noise_fraction > 0: std = fraction x (max - min) of the field, whatever its units."""
    rng = np.random.default_rng(1)
    span = 3.0 * 200 + 2.0 * 200                      # the plane's range over its grid: 1000 field units
    sensor = FieldSensor(plane, rng=rng, params={'reading_noise_std': 1.0, 'reading_noise_fraction': 0.02})
    vals = np.array([sensor.read([50.0, 20.0]) for _ in range(20000)])
    assert sensor.noise_std == pytest.approx(0.02 * span)
    assert vals.std() == pytest.approx(0.02 * span, rel=0.03)
    assert sensor.variance == pytest.approx((0.02 * span) ** 2)
    small = Field((3.0 * plane.grid()[2]) / 1000.0, (0, 200, 0, 200))     # the same shape in other units
    assert FieldSensor(small, params={'reading_noise_fraction': 0.02}).noise_std == pytest.approx(0.02 * 3.0)
    # fraction 0 = the absolute std; an explicit noise_std switches the fraction off
    assert FieldSensor(plane, params={'reading_noise_std': 0.7, 'reading_noise_fraction': 0.0}).noise_std == 0.7
    assert FieldSensor(plane, noise_std=0.3, params={'reading_noise_fraction': 0.5}).noise_std == 0.3


def test_fixes_only_within_reach_of_a_fix_source(plane):
    beacons = [60.0, 0.0, 10.0, 0.5, 140.0, 0.0, 5.0, 0.5]
    w = SimWorld(plane, {'fix_rate': 2.0, 'fix_beacons': beacons, 'reading_rate': 0.0, 'wheel_slip_std': 0.0,
                         'initial_x': 0.0, 'initial_y': 0.0, 'initial_yaw': 0.0, 'seed': 2})
    steps = drive(w, 1500, v=1.5, w=0.0)                     # 150 s east along y = 0, past both sources
    fixed = [s for s in steps if s.fix is not None]
    due = [s for s in steps if s.fix_due]
    inside = [s for s in due if abs(s.truth.pose[0] - 60.0) <= 10.0 or abs(s.truth.pose[0] - 140.0) <= 5.0]
    assert len(fixed) == len(inside) > 10                   # every due fix within reach, and only those
    assert all(s.fix_due for s in fixed)
    assert [e.source for e in w.fix_events] == ['beacon'] * len(fixed)
    assert [e.t for e in w.fix_events] == [s.t for s in fixed]
    assert all(np.array_equal(e.xy, s.fix.xy) and np.array_equal(e.truth, s.truth.pose[:2])
               for e, s in zip(w.fix_events, fixed))
    assert w.distance_since_fix == pytest.approx(w.true_pose[0] - max(s.truth.pose[0] for s in fixed), abs=0.2)
    # a rover parked inside a source gets its fixes with its std; parked outside, none
    park = SimWorld(plane, {'fix_rate': 20.0, 'fix_beacons': beacons, 'initial_x': 62.0, 'initial_y': 3.0,
                            'seed': 5, 'wheel_slip_std': 0.0})
    err = np.array([s.fix.xy - s.truth.pose[:2] for s in (park.step(0.0, 0.0) for _ in range(4000))])
    assert err.std(axis=0) == pytest.approx([0.5, 0.5], rel=0.05)
    away = SimWorld(plane, {'fix_rate': 20.0, 'fix_beacons': beacons, 'initial_x': 100.0, 'initial_y': 100.0})
    assert all(s.fix is None and s.fix_due for s in (away.step(0.0, 0.0) for _ in range(100)))


def test_surfacing_costs_its_time_and_gives_one_fix(plane):
    w = SimWorld(plane, {'fix_rate': 0.0, 'surface_duration': 30.0, 'surface_fix_std': 2.0, 'reading_rate': 0.0,
                         'sim_rate': 10.0, 'seed': 1})
    drive(w, 100, v=1.5, w=0.0)                              # 10 s under way
    t0 = w.t
    assert w.request_surfacing() is True and w.request_surfacing() is False
    steps = [w.step(1.5, 0.3) for _ in range(300)]          # turning while surfaced: ignored
    steps += [w.step(1.5, 0.0) for _ in range(100)]
    held = [s for s in steps if s.surfacing]
    assert len(held) == 300 and held[-1].t == pytest.approx(t0 + 30.0)
    still = [s.truth.pose for s in held if s.t > t0 + 2.0]  # stopped within its acceleration limits (1.5 s)
    assert np.ptp(np.array(still), axis=0) == pytest.approx([0, 0, 0], abs=1e-9)
    fixes = [s for s in steps if s.fix is not None]
    assert len(fixes) == 1 and fixes[0].t == pytest.approx(t0 + 30.0)
    assert np.allclose(fixes[0].fix.cov, 4.0 * np.eye(2)) and w.fix_events[-1].source == 'surface'
    assert w.surfacing.count == 1 and w.surfacing.time_spent == pytest.approx(30.0)
    assert np.hypot(*(steps[-1].truth.pose[:2] - still[-1][:2])) > 10.0    # under way again


def test_surface_every_takes_the_action_after_that_much_path(plane):
    w = SimWorld(plane, {'fix_rate': 0.0, 'surface_every': 50.0, 'surface_duration': 10.0, 'reading_rate': 0.0,
                         'initial_x': 10.0, 'initial_y': 100.0, 'wheel_slip_std': 0.0})
    steps = drive(w, 1800, v=1.5, w=0.0)                     # 180 s
    events = list(w.fix_events)
    n = w.surfacing.count
    assert n == 4 and [e.source for e in events] == ['surface'] * n
    starts = [s.truth.pose[0] for s, nxt in zip(steps, steps[1:]) if nxt.surfacing and not s.surfacing]
    fixed_at = [10.0] + [e.truth[0] for e in events]
    assert np.array(starts) - fixed_at[:-1] == pytest.approx([50.0] * n, abs=0.2)   # 50 m of path after each fix
    # stopping from 1.5 m/s at 1 m/s² takes 1.125 m (and 1.5 s); the fix is where the rover stopped
    assert np.array(fixed_at[1:]) - starts == pytest.approx([1.125] * n, abs=0.2)
    # the time it costs: 10 s held per action, in which it rolls 1.125 m while stopping; each start from rest
    # (n + 1) costs 0.75 s at full speed
    assert w.distance_travelled == pytest.approx(1.5 * (w.t - n * 10.0 - (n + 1) * 0.75) + n * 1.125, abs=0.3)

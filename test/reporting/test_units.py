"""The unit of a run's readings and the precision of printed field values (uncertain_bo/reporting/units.py), and the
demo's final block printed with them."""
import math
import re

import numpy as np
import pytest

from uncertain_bo.reporting.units import NO_UNIT, ValueFormat, reading_unit, simulated_reading_unit


@pytest.mark.parametrize('low, spread', [(0.3, 0.015), (0.2, 0.8), (25.0, 12.0), (318.0, 663.0), (1e5, 3e4),
                                         (-2e-5, 4e-5)])
def test_values_print_to_a_ten_thousandth_of_the_spread_and_a_std_to_two_significant_digits(low, spread):
    rng = np.random.default_rng(1)
    readings = low + spread * rng.random(30)
    fmt = ValueFormat.of(readings)
    true_spread = float(np.ptp(readings))
    for v in readings[:5]:
        assert abs(float(fmt(v)) - v) <= 0.5e-4 * 10 ** math.ceil(math.log10(true_spread)) + 1e-15
    for std in (spread * 0.003, spread * 0.2, spread * 3.0):
        mean_text, std_text = fmt.pm(float(readings[0]), std).split(' ± ')
        assert abs(float(std_text) - std) <= 0.05 * std                  # two significant digits of the std
        assert abs(float(mean_text) - readings[0]) <= max(0.05 * std, 1e-4 * true_spread)


def test_soil_moisture_and_elevation_print_as_a_reader_expects():
    soil = ValueFormat.of([0.2993, 0.3138, 0.3021, 0.3102])
    assert soil.pm(0.30121, 0.00412) == '0.30121 ± 0.00412'           # was 0.30 ± 0.00
    elevation = ValueFormat.of([318.2, 702.5, 931.1])
    assert elevation.pm(930.6117, 0.4263) == '930.61 ± 0.43' and elevation(978.84) == '978.8'
    assert ValueFormat.of([]).pm(0.30121, 0.00412) == '0.3012 ± 0.0041' and ValueFormat(None)(math.nan) == '–'


def test_a_runs_unit_is_its_own_or_its_reading_types_and_never_a_wrong_one():
    assert reading_unit({'reading_type': 'float64', 'reading_unit': 'm³/m³'}) == 'm³/m³'
    assert reading_unit({'reading_type': 'float64', 'reading_unit': ''}) is None
    assert reading_unit({'reading_type': 'temperature'}) == '°C'
    assert reading_unit({'reading_type': 'temperature', 'reading_unit': NO_UNIT}) is None
    assert reading_unit({}) is None
    assert simulated_reading_unit('jacksboro-smooth') == 'm (elevation)'
    assert simulated_reading_unit('coal-ash') == '% coal ash'
    assert simulated_reading_unit('/data/my_field.csv') == NO_UNIT


def _soil_summary():
    per = [{'y': y} for y in (0.2993, 0.3138, 0.3021, 0.3102)]
    return {'recommended_target': [28.51, 23.70], 'predicted_robust_value': 0.31054, 'predicted_std': 0.00412,
            'recommended_robust_value': 0.30877, 'reading_unit': None, 'final_regret': 0.08712,
            'final_normalised_regret': 0.84, 'per_measurement': per,
            'robust_optimum': {'value': 0.39589, 'target': [40.2, 20.3], 'field_median_of_g': 0.29213},
            'decision_seconds_median_acquisition': None}


def test_the_demos_final_block_prints_soil_moisture_with_the_fields_precision(tmp_path, capsys):
    """Before: 'predicted E[f] = 0.3, true g = 0.3', 'regret g* - g(x_rec) = 0.1' (one decimal whatever the field)."""
    from uncertain_bo.ros.graph import _print_result
    _print_result(_soil_summary(), tmp_path, tmp_path / 'run.png')
    out = capsys.readouterr().out
    m = re.search(r'predicted E\[f\] = ([\d.]+) ± ([\d.]+), true g = ([\d.]+)', out)
    assert m and abs(float(m[1]) - 0.31054) < 1e-5 and abs(float(m[2]) - 0.00412) < 1e-4
    assert abs(float(m[3]) - 0.30877) < 1e-5
    regret = re.search(r'regret g\* - g\(x_rec\) = ([\d.]+)', out)
    assert abs(float(regret[1]) - 0.08712) < 1e-5


def test_the_teams_final_block_prints_soil_moisture_with_the_fields_precision(tmp_path, capsys):
    from uncertain_bo.ros.team_graph import _print_team_result
    summary = {**_soil_summary(), 'measurements': 4, 'wall_time_s': 12.0,
               'rovers': {'rover0': {'measurements': 4, 'distance_driven_m': 120.0, 'dropped': None,
                                     'stopped_because': None}}}
    _print_team_result(summary, tmp_path)
    out = capsys.readouterr().out
    m = re.search(r'predicted E\[f\] = ([\d.]+) ± ([\d.]+)', out)
    assert m and abs(float(m[1]) - 0.31054) < 1e-5
    assert re.search(r"team's regret g\* - g\(x_rec\) = 0\.0871", out)

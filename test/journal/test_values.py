"""The values a journal record's fields may take (uncertain_bo/journal/values.py), one check per kind."""
import pytest

from uncertain_bo.journal.values import (COORDS, INDEX, MAX_ABS_COORDINATE, READING, VARIANCE, FieldProblem, describe,
                                         location)


@pytest.mark.parametrize('check,value,message', [
    (READING, True, "'y' is True, not a number"),
    (READING, float('inf'), "'y' is Infinity"),
    (READING, 2e12, "'y' is 2e+12, beyond ±1e+12"),
    (VARIANCE, -0.5, "'y' is -0.5, below 0"),
    (INDEX, 1.0, "'y' is 1.0, not an integer"),
    (READING, 10 ** 400, "'y' is an integer of 401 digits, too large"),
])
def test_a_value_of_the_wrong_kind_is_named(check, value, message):
    with pytest.raises(FieldProblem) as raised:
        check(value, "'y'", 2)
    assert str(raised.value) == message


def test_coordinates_have_the_journals_dimension_and_a_sane_magnitude():
    assert COORDS([1.0, 2.0], "'target'", 2) == [1.0, 2.0]
    with pytest.raises(FieldProblem, match='has 3 coordinates, the journal 2'):
        COORDS([1.0, 2.0, 3.0], "'target'", 2)
    with pytest.raises(FieldProblem, match='beyond'):
        COORDS([2 * MAX_ABS_COORDINATE, 0.0], "'target'", 2)


@pytest.mark.parametrize('record,message', [
    ({'kind': 'gaussian', 'mean': [0.0, 0.0], 'covariance': [[1.0, 2.0], [2.0, 1.0]]}, 'positive semi-definite'),
    ({'kind': 'empirical', 'samples': [[0.0, 0.0], [1.0, 1.0]], 'weights': [0.0, 0.0]}, 'positive, finite sum'),
    ({'kind': 'polygon', 'mean': [0.0, 0.0]}, 'not dirac, gaussian or empirical'),
    ({'kind': 'dirac'}, "has no 'mean'"),
])
def test_an_invalid_location_distribution_is_refused(record, message):
    with pytest.raises(FieldProblem, match=message):
        location(record, "'location'", 2)
    location({'kind': 'empirical', 'samples': [[0.0, 0.0], [1.0, 1.0]], 'weights': [0.2, 0.8]}, "'location'", 2)


def test_a_message_shows_values_short():
    assert describe(float('nan')) == 'NaN' and describe(-float('inf')) == '-Infinity'
    assert describe('x' * 100) == repr('x' * 100)[:37] + '...'

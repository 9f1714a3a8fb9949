"""ros/reading_messages.py: sensor reading messages <-> (stamp, value, variance)."""
import pytest

pytest.importorskip('rclpy')

from sensor_msgs.msg import FluidPressure, Temperature  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

from uncertain_bo.ros.reading_messages import READING_TYPES, make_reading, reading_from_msg  # noqa: E402


@pytest.mark.parametrize('name', list(READING_TYPES))
def test_reading_round_trip(name):
    msg = make_reading(name, 7.25, 'base_link', 21.5, 0.09)
    stamp, value, var = reading_from_msg(msg, name)
    assert value == 21.5
    if name == 'float64':
        assert isinstance(msg, Float64) and stamp is None and var == 0.0
    else:
        assert stamp == pytest.approx(7.25) and var == pytest.approx(0.09)
        assert msg.header.frame_id == 'base_link'


def test_reading_errors():
    assert READING_TYPES['temperature'] == (Temperature, 'temperature')
    with pytest.raises(ValueError, match="unknown reading_type 'co2'"):
        reading_from_msg(Temperature(), 'co2')
    with pytest.raises(ValueError, match='expects FluidPressure, got Temperature'):
        reading_from_msg(Temperature(), 'fluid_pressure')
    assert isinstance(make_reading('fluid_pressure', 0.0, 'x', 1e5), FluidPressure)

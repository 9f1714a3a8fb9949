"""Sensor reading messages <-> ``(stamp, value, variance)``: ``sensor_msgs`` ``Temperature``, ``FluidPressure``,
``Illuminance``, ``RelativeHumidity`` (stamped, with a variance; 0 = unknown) and ``std_msgs/Float64`` (a bare value:
no stamp, no variance), chosen by the ``reading_type`` parameter (:data:`READING_TYPES`). Stateless.
"""
from __future__ import annotations

from sensor_msgs.msg import FluidPressure, Illuminance, RelativeHumidity, Temperature
from std_msgs.msg import Float64

from .conversions import from_time_msg, make_header

__all__ = ['READING_TYPES', 'reading_from_msg', 'make_reading']

#: reading type name -> (message class, value field); Float64 has no header (no stamp).
READING_TYPES = {
    'temperature': (Temperature, 'temperature'),
    'fluid_pressure': (FluidPressure, 'fluid_pressure'),
    'illuminance': (Illuminance, 'illuminance'),
    'relative_humidity': (RelativeHumidity, 'relative_humidity'),
    'float64': (Float64, 'data'),
}


def _reading_type(reading_type: str):
    try:
        return READING_TYPES[reading_type]
    except KeyError:
        raise ValueError(f'unknown reading_type {reading_type!r}; '
                         f'one of {", ".join(READING_TYPES)}') from None


def reading_from_msg(msg, reading_type: str) -> tuple[float | None, float, float]:
    """``(stamp s or None, value, variance)`` of a scalar reading message.

    ``std_msgs/Float64`` has no header: stamp None and variance 0 (unknown). For the sensor_msgs types a
    variance of 0 means unknown (as the message definitions say).

    Raises:
        ValueError: unknown ``reading_type`` or a message of another type.
    """
    cls, attr = _reading_type(reading_type)
    if not isinstance(msg, cls):
        raise ValueError(f'reading_type {reading_type!r} expects {cls.__name__}, got {type(msg).__name__}')
    value = float(getattr(msg, attr))
    if cls is Float64:
        return None, value, 0.0
    return from_time_msg(msg.header.stamp), value, float(msg.variance)


def make_reading(reading_type: str, stamp: float, frame: str, value: float, variance: float = 0.0):
    """Reading message of ``reading_type`` (see :data:`READING_TYPES`); Float64 drops stamp and variance."""
    cls, attr = _reading_type(reading_type)
    if cls is Float64:
        return Float64(data=float(value))
    msg = cls(header=make_header(stamp, frame))
    setattr(msg, attr, float(value))
    msg.variance = float(variance)
    return msg

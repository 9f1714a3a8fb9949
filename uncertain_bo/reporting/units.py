"""The unit of a run's readings, and how its field values are printed.

**Unit.** The explorer's ``reading_unit`` parameter says what the readings are in, for the journal's header and the
reports (:func:`reading_unit`): empty, the unit the reading type's message defines (sensor_msgs: Temperature in
°C, FluidPressure in Pa, Illuminance in lx, RelativeHumidity as a fraction 0-1; std_msgs/Float64 defines none);
``'none'`` (:data:`NO_UNIT`), no known unit; any other text is the unit (``'m³/m³'`` for a soil-moisture probe on
``float64``). A simulated graph (``uncertain-bo demo``, ``sim.launch.py``, ``team.launch.py``) sets it from its
field (:func:`simulated_reading_unit`), since its simulated sensor carries any field in a Temperature message:
elevation is not in °C. A report never prints a unit the run did not give: without one it names the reading type,
or nothing.

**Precision.** :class:`ValueFormat` prints a field's values with as many decimals as its scale asks for (a
ten-thousandth of the spread of the readings shows), and a value with its standard deviation to the std's second
significant digit: soil moisture in m³/m³ as ``0.3012 ± 0.0041``, not ``0.30 ± 0.00``; elevation in m as
``930.61 ± 0.43``. The explorer's log lines, the demo's and the team's final block and ``uncertain-bo report`` use it.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

__all__ = ['READING_UNITS', 'NO_UNIT', 'reading_unit', 'simulated_reading_unit', 'ValueFormat']

#: reading_type -> the unit its message defines (sensor_msgs); std_msgs/Float64 (``'float64'``) defines none
READING_UNITS = {'temperature': '°C', 'fluid_pressure': 'Pa', 'illuminance': 'lx',
                 'relative_humidity': 'relative humidity, 0-1'}

#: the ``reading_unit`` that says the readings have no known unit
NO_UNIT = 'none'


def reading_unit(params: Mapping[str, Any]) -> str | None:
    """The unit of a run's readings from the explorer's parameters (a journal header's ``parameters``): its
    ``reading_unit``, else the unit its ``reading_type``'s message defines; None when neither gives one
    (``reading_unit: 'none'``, ``float64``, a run that recorded neither)."""
    unit = str(params.get('reading_unit') or '').strip()
    if unit.lower() == NO_UNIT:
        return None
    return unit or READING_UNITS.get(params.get('reading_type'))


def simulated_reading_unit(field_spec: Any) -> str:
    """The explorer's ``reading_unit`` in a simulated graph whose sim_rover simulates ``field_spec``: the field's
    unit (:func:`~uncertain_bo.sim.field_spec.field_unit`), or :data:`NO_UNIT` for a field whose unit is not known (a
    file). The simulated sensor publishes any field in the message of its ``reading_type`` (Temperature by default),
    whose own unit would be wrong."""
    from ..sim.field_spec import field_unit

    return field_unit(field_spec) or NO_UNIT


class ValueFormat:
    """Prints values of one field with the precision its scale asks for.

    Args:
        scale: the field's scale in its units (the spread of its readings: range, else magnitude), > 0; None or
            not positive: 4 significant digits per value.

    Attributes:
        decimals: decimals of a value alone (:data:`SCALE_DIGITS` significant digits of ``scale`` show; never below
            0), or None without a scale.

    Example:
        Soil moisture spread over 0.1 m³/m³ and elevation over 280 m, each with a standard deviation:

        >>> moisture = ValueFormat.of([0.25, 0.35])
        >>> moisture(0.30123), moisture.pm(0.30123, 0.0041)
        ('0.3012', '0.3012 ± 0.0041')
        >>> ValueFormat.of([700.0, 980.0]).pm(930.612, 0.431)
        '930.61 ± 0.43'
    """

    #: significant digits of the scale that show (4: a ten-thousandth of the spread; elevation over a few hundred m
    #: in tenths of a metre, soil moisture over 0.1 m³/m³ in 1e-4 m³/m³)
    SCALE_DIGITS = 4
    #: significant digits of a standard deviation
    STD_DIGITS = 2

    def __init__(self, scale: float | None):
        ok = scale is not None and math.isfinite(scale) and scale > 0
        self.decimals = max(0, self.SCALE_DIGITS - 1 - _exponent(scale)) if ok else None

    @classmethod
    def of(cls, values: Iterable[float]) -> 'ValueFormat':
        """The format of a field whose readings (or grid values) are ``values``: scale their range, else (all
        equal, or one) their largest magnitude."""
        v = [float(x) for x in values if math.isfinite(float(x))]
        if not v:
            return cls(None)
        spread = max(v) - min(v)
        return cls(spread if spread > 0 else max(abs(x) for x in v))

    def __call__(self, value: float | None) -> str:
        """``value`` with :attr:`decimals` decimals (``'–'`` for None or NaN)."""
        if value is None or not math.isfinite(value):
            return '–'
        if self.decimals is None:
            return f'{value:.4g}'
        return f'{value:.{self.decimals}f}'

    def pm(self, mean: float | None, std: float | None) -> str:
        """``'mean ± std'``: the std to :data:`STD_DIGITS` significant digits and the mean to the same decimal,
        at least :attr:`decimals` (``'mean'`` alone without a finite std)."""
        if std is None or not math.isfinite(std) or std < 0:
            return self(mean)
        decimals = self.decimals if self.decimals is not None else 0
        if std > 0:
            decimals = max(decimals, self.STD_DIGITS - 1 - _exponent(std))
        decimals = min(decimals, 12)
        mean_text = '–' if mean is None or not math.isfinite(mean) else f'{mean:.{decimals}f}'
        return f'{mean_text} ± {std:.{decimals}f}'


def _exponent(x: float) -> int:
    """The decimal exponent of ``x`` > 0 (``floor(log10(x))``)."""
    return math.floor(math.log10(x))

"""Scalar field sensor: reads the field at the sensor's **true** position, plus reading noise.

The explorer only ever knows the location distribution from its filter; the reading itself is taken where
the sensor really is: at the rover's reference point (``base_link``), or with ``sensor_offset`` on an arm or a mast
away from it, at the true pose's position plus the offset turned by the true heading
(:func:`uncertain_bo.distributions.lever_arm.sensor_position`). This gap is the input uncertainty the BO methods model.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from uncertain_bo.distributions.lever_arm import sensor_position
from uncertain_bo.parameters.specs import Param
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.rover import _ensure, _has_all

__all__ = ['SENSOR_PARAMS', 'FieldSensor', 'absolute_noise_rule']

SENSOR_PARAMS = [
    Param('reading_noise_std', 1.0, 'standard deviation of the additive Gaussian reading noise (field '
          'units, e.g. metres of elevation for the built-in field); used when reading_noise_fraction is 0',
          range=(0.0, 1e6)),
    Param('reading_noise_fraction', 0.0015, 'reading-noise standard deviation as a fraction of the field\'s value '
          'range (max - min over its grid; dimensionless); when > 0 it replaces reading_noise_std, so the noise '
          'scales with whatever field is loaded (0.0015: 1.0 m on jacksboro-smooth)', range=(0.0, 1.0)),
    Param('reading_rate', 1.0, 'readings per simulated second (Hz); 0 disables readings', range=(0.0, 100.0)),
    Param('reading_dropout_prob', 0.0, 'probability that a due reading is lost (not published) '
          '(probability in [0, 1])', range=(0.0, 1.0)),
    Param('sensor_offset', [0.0, 0.0], "where the simulated sensor is on the rover: [x, y] in base_link (x forward, y "
          "left), m; it reads the field there, at the true position plus this offset turned by the true heading. Give "
          "the explorer's sensor_offset the same value to tell it (0, 0: at base_link)", range=(-1000.0, 1000.0),
          length=2, read_only=True),
]


def absolute_noise_rule(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with ``reading_noise_fraction = 0`` added where they give ``reading_noise_std`` without a
    fraction: an absolute noise the caller states replaces the relative default (a copy; nothing else
    changes)."""
    out = dict(params)
    if 'reading_noise_std' in out and 'reading_noise_fraction' not in out:
        out['reading_noise_fraction'] = 0.0
    return out


class FieldSensor:
    """Point sensor of a :class:`~uncertain_bo.sim.field.Field`.

    Args:
        field: the ground-truth field.
        noise_std: reading noise standard deviation (field units); overrides ``params['reading_noise_std']``
            (and switches ``reading_noise_fraction`` off).
        rng: random generator for noise and dropouts.
        dropout_prob: probability that a reading is lost; overrides ``params['reading_dropout_prob']``.
        params: values for ``SENSOR_PARAMS`` (a live dict is read at every reading).

    Example:
        A noiseless sensor reads the field at the true position; a reading may drop out:

        >>> import numpy as np
        >>> from uncertain_bo.sim.field import Field
        >>> hill = Field(np.outer(np.hanning(21), np.hanning(21)), extent=(0, 200, 0, 200), name='hill')
        >>> FieldSensor(hill, noise_std=0.0).read([100.0, 100.0]), FieldSensor(hill, noise_std=0.0).read([50.0, 100.0])
        (1.0, 0.5)
        >>> FieldSensor(hill, noise_std=0.05, dropout_prob=1.0).read([100.0, 100.0]) is None
        True
        >>> FieldSensor(hill, noise_std=0.05).variance          # published with each reading (field units²)
        0.0025...
    """

    def __init__(self, field: Field, noise_std: float | None = None, rng: np.random.Generator | None = None,
                 dropout_prob: float | None = None, params: Mapping[str, Any] | None = None):
        given = dict(params or {})
        if noise_std is not None:
            given['reading_noise_std'] = noise_std
            given['reading_noise_fraction'] = 0.0
        if dropout_prob is not None:
            given['reading_dropout_prob'] = dropout_prob
        partial = noise_std is not None or dropout_prob is not None or not _has_all(params or {}, SENSOR_PARAMS)
        self.params = _ensure(absolute_noise_rule(given) if partial else params, SENSOR_PARAMS)
        self.field = field
        self.rng = rng if rng is not None else np.random.default_rng()
        _, _, z = field.grid()
        self._range = float(z.max() - z.min())

    @property
    def noise_std(self) -> float:
        """Reading noise std (field units): ``reading_noise_fraction`` x the field's value range where the
        fraction is > 0, else ``reading_noise_std``."""
        frac = float(self.params.get('reading_noise_fraction', 0.0))
        return frac * self._range if frac > 0 else float(self.params['reading_noise_std'])

    @property
    def variance(self) -> float:
        """Reading noise variance (field units²), published with each reading."""
        return self.noise_std ** 2

    def position(self, pose_true) -> np.ndarray:
        """Where the sensor truly is, ``(2,)`` m, for the rover's true pose ``(x, y, yaw)`` (m, m, rad)."""
        pose = np.asarray(pose_true, dtype=float)
        offset = self.params.get('sensor_offset', (0.0, 0.0))
        if not any(offset):
            return pose[:2]
        return sensor_position(pose[:2], pose[2], offset)

    def read(self, xy_true) -> float | None:
        """A noisy reading at the true position ``xy_true`` (2,) metres, or None if it dropped out."""
        p = self.params
        if p['reading_dropout_prob'] > 0 and self.rng.random() < p['reading_dropout_prob']:
            return None
        value = float(self.field.value(np.asarray(xy_true, dtype=float)[:2]))
        std = self.noise_std
        if std > 0:
            value += float(self.rng.normal(0.0, std))
        return value

"""Scalar field sensor: reads the field at the rover's **true** position, plus reading noise.

The explorer only ever knows the location distribution from its filter; the reading itself is taken where
the rover really is. This gap is the input uncertainty the BO methods model.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from uncertain_bo.parameters import Param
from uncertain_bo.sim.field import Field
from uncertain_bo.sim.rover import _ensure

__all__ = ['SENSOR_PARAMS', 'FieldSensor']

SENSOR_PARAMS = [
    Param('reading_noise_std', 1.0, 'standard deviation of the additive Gaussian reading noise (field '
          'units, e.g. metres of elevation for the built-in field)', range=(0.0, 1e6)),
    Param('reading_rate', 1.0, 'readings per simulated second (Hz); 0 disables readings', range=(0.0, 100.0)),
    Param('reading_dropout_prob', 0.0, 'probability that a due reading is lost (not published) '
          '(probability in [0, 1])', range=(0.0, 1.0)),
]


class FieldSensor:
    """Point sensor of a :class:`~uncertain_bo.sim.field.Field`.

    Args:
        field: the ground-truth field.
        noise_std: reading noise standard deviation (field units); overrides ``params['reading_noise_std']``.
        rng: random generator for noise and dropouts.
        dropout_prob: probability that a reading is lost; overrides ``params['reading_dropout_prob']``.
        params: values for ``SENSOR_PARAMS`` (a live dict is read at every reading).
    """

    def __init__(self, field: Field, noise_std: float | None = None, rng: np.random.Generator | None = None,
                 dropout_prob: float | None = None, params: Mapping[str, Any] | None = None):
        given = dict(params or {})
        if noise_std is not None:
            given['reading_noise_std'] = noise_std
        if dropout_prob is not None:
            given['reading_dropout_prob'] = dropout_prob
        self.params = _ensure(given if (noise_std is not None or dropout_prob is not None) else params,
                              SENSOR_PARAMS)
        self.field = field
        self.rng = rng if rng is not None else np.random.default_rng()

    @property
    def variance(self) -> float:
        """Reading noise variance (field units²), published with each reading."""
        return float(self.params['reading_noise_std']) ** 2

    def read(self, xy_true) -> float | None:
        """A noisy reading at the true position ``xy_true`` (2,) metres, or None if it dropped out."""
        p = self.params
        if p['reading_dropout_prob'] > 0 and self.rng.random() < p['reading_dropout_prob']:
            return None
        value = float(self.field.value(np.asarray(xy_true, dtype=float)[:2]))
        if p['reading_noise_std'] > 0:
            value += float(self.rng.normal(0.0, p['reading_noise_std']))
        return value

"""Field suites: fields with a sensor noise and a localisation setting each, split into a tuning set and a
held-out set (``uncertain_bo/data/suites/<name>.yaml``; ``uncertain-bo bench --suite NAME``).

A suite file holds ``extent`` (the rover's area, m), ``localisation`` (named settings: simulator parameters
applied over ``config/sim.yaml`` and the problem's own files; ``NODE.NAME`` for the localisers and the
controller, as ``--sim-param`` spells them; ``drift: NAME`` for a calibrated dead-reckoning drift source,
:data:`~uncertain_bo.sim.drift.DRIFT_SOURCES`), ``split`` (``tuning`` and ``held_out`` field lists) and
``fields``: per field its ``source`` (see :mod:`uncertain_bo.sim.field_catalogue`), ``noise_fraction``
(reading-noise std as a fraction of the field's value range), ``localisation`` (a setting's name), optionally its
own ``extent`` (m; else the suite's) and, for settings with a GNSS-degraded zone, ``degraded_zone`` ``[xmin,
xmax, ymin, ymax]`` (m). :meth:`Suite.sim_overrides` turns one field's entry into the parameters of a rover
mission.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ['Suite', 'SuiteError', 'load_suite', 'expand_setting', 'SPLITS']

#: the parts of a suite ``--suite NAME:PART`` selects
SPLITS = ('tuning', 'held_out')


class SuiteError(ValueError):
    """A suite name, part or file that cannot be used; the message is one line saying what to do.

    Example:
        >>> load_suite('denied').field_names('test')
        Traceback (most recent call last):
        ...
        uncertain_bo.benchmarks.suite.SuiteError: suite 'denied' has no part 'test'; use one of tuning, held_out
    """


@dataclass(frozen=True)
class Suite:
    """A parsed suite file.

    Attributes:
        name: the suite's name (its file's stem).
        extent: ``(xmin, xmax, ymin, ymax)`` m of the area every field is mapped onto.
        fields: ``{field name: entry}`` in file order.
        split: ``{'tuning': [...], 'held_out': [...]}``.
        localisation: ``{setting name: {sim_rover parameter: value}}``.

    Example:
        The GNSS-denied scenario family (``--suite denied:held_out``): which fields, and the localisation setting a
        mission on one of them gets:

        >>> denied = load_suite('denied')
        >>> denied.field_names('held_out')
        ['leak-plume-c', 'pipeline-leaks', 'seeps-canyon', 'terrain-denied-west', 'cool-dome']
        >>> denied.part_of('leak-plume-c'), denied.fields['leak-plume-c']['localisation']
        ('held_out', 'wheel_beacons')
        >>> denied.sim_overrides('leak-plume-c')['odometry_source']
        'wheel_gyro'
    """

    name: str
    extent: tuple[float, float, float, float]
    fields: dict[str, dict[str, Any]]
    split: dict[str, list[str]]
    localisation: dict[str, dict[str, Any]]

    def field_names(self, part: str | None = None) -> list[str]:
        """Every field (``part=None``: tuning set, then held-out set) or one part's fields."""
        if part is None:
            return [f for p in SPLITS for f in self.split.get(p, [])]
        if part not in SPLITS:
            raise SuiteError(f'suite {self.name!r} has no part {part!r}; use one of {", ".join(SPLITS)}')
        return list(self.split.get(part, []))

    def part_of(self, field: str) -> str:
        """``'tuning'`` or ``'held_out'``."""
        return next(p for p in SPLITS if field in self.split.get(p, []))

    def extent_of(self, field: str) -> tuple[float, float, float, float]:
        """The area ``(xmin, xmax, ymin, ymax)`` (m) ``field`` is mapped onto: its own ``extent``, else the suite's."""
        from ..sim.field_spec import _check_extent

        own = self.fields[field].get('extent')
        return self.extent if own is None else _check_extent(own, f'suite {self.name!r}, field {field!r}')

    def noise_std(self, field: str) -> float:
        """Reading-noise std (field units): ``noise_fraction`` x the field's value range (max - min)."""
        from ..sim.field import Field
        from ..sim.field_catalogue import catalogue_field

        _, _, z = catalogue_field(field, self.extent_of(field), field_type=Field).grid()
        return float(self.fields[field]['noise_fraction']) * float(z.max() - z.min())

    def sim_overrides(self, field: str) -> dict[str, Any]:
        """The parameters of a mission on ``field``: the field and its extent, the absolute reading-noise std
        (:meth:`noise_std`; the relative default is switched off), and the field's localisation setting (its
        ``drift`` source expanded, with its ``degraded_zone``). ``sim_rover`` names bare, other nodes' as
        ``NODE.NAME``."""
        entry = self.fields[field]
        over: dict[str, Any] = {'field': field, 'field_extent': list(self.extent_of(field)),
                                'reading_noise_std': self.noise_std(field), 'reading_noise_fraction': 0.0}
        over.update(expand_setting(self.localisation[entry['localisation']]))
        if 'degraded_zone' in entry:
            over['degraded_zone'] = [float(v) for v in entry['degraded_zone']]
        return over


def expand_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """A localisation setting with its ``drift: NAME`` replaced by that drift source's parameters
    (:meth:`~uncertain_bo.sim.drift.DriftSource.parameters`); the setting's own values apply over them.

    Raises:
        ValueError: an unknown drift source.
    """
    from ..sim.drift import drift_source

    out = dict(setting)
    name = out.pop('drift', None)
    return out if name is None else {**drift_source(str(name)).parameters(), **out}


def _check(name: str, spec: dict[str, Any]) -> Suite:
    from ..sim.field_spec import FieldError, _check_extent

    try:
        extent = _check_extent(spec.get('extent', (0.0, 200.0, 0.0, 200.0)), f'suite {name!r}')
    except FieldError as exc:
        raise SuiteError(str(exc)) from None
    fields = dict(spec.get('fields') or {})
    split = {p: list((spec.get('split') or {}).get(p) or []) for p in SPLITS}
    loc = {k: dict(v or {}) for k, v in (spec.get('localisation') or {}).items()}
    listed = [f for p in SPLITS for f in split[p]]
    if not listed:
        raise SuiteError(f'suite {name!r} lists no fields under split: tuning / held_out')
    if len(set(listed)) != len(listed):
        raise SuiteError(f'suite {name!r}: a field is listed twice in its split')
    for f in listed:
        entry = fields.get(f)
        if entry is None:
            raise SuiteError(f'suite {name!r}: split lists {f!r}, which has no entry under fields')
        frac = entry.get('noise_fraction')
        if not isinstance(frac, (int, float)) or not 0.0 < float(frac) <= 1.0:
            raise SuiteError(f'suite {name!r}, field {f!r}: noise_fraction must be a number in (0, 1], got {frac!r}')
        if entry.get('localisation') not in loc:
            raise SuiteError(f'suite {name!r}, field {f!r}: localisation {entry.get("localisation")!r} is not '
                             f'one of {", ".join(loc)}')
    for setting, values in loc.items():
        try:
            expand_setting(values)
        except ValueError as exc:
            raise SuiteError(f'suite {name!r}, localisation {setting!r}: {exc}') from None
    suite = Suite(name, extent, fields, split, loc)
    for f in listed:
        try:
            suite.extent_of(f)
        except FieldError as exc:
            raise SuiteError(str(exc)) from None
    return suite


@lru_cache(maxsize=None)
def load_suite(name: str) -> Suite:
    """A shipped suite by name (``uncertain_bo/data/suites/<name>.yaml``).

    Raises:
        SuiteError: no such suite (the message lists the shipped ones) or a malformed file.
    """
    import yaml

    from ..data import DATA_DIR, suite_names

    path = DATA_DIR / 'suites' / f'{name}.yaml'
    if not path.is_file():
        raise SuiteError(f'unknown suite {name!r}; shipped suites: {", ".join(suite_names()) or "none"}')
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise SuiteError(f'suite file {path} is not valid YAML ({exc})') from None
    return _check(name, spec)

"""Parameter specifications shared by the ROS nodes and the ROS-free runners.

Every tunable of a node (noise levels, rates, tolerances, ...) is declared once as a :class:`Param`
with its default, unit-bearing description and allowed range. The ROS nodes turn these specs into
``ParameterDescriptor`` s (so rclpy enforces the ranges, see ``uncertain_bo.ros.params``); the in-process
runners and the YAML loader use :func:`validate` so that a bad value fails the same way with or without
ROS: the error names the parameter, the offending value and the allowed range.

Parameter files use the ROS 2 layout, so the same file works with ``--ros-args --params-file``,
``ros2 launch ... params_file:=``, ``uncertain-bo demo`` and ``uncertain-bo check``; they are read as rcl reads
them (:mod:`uncertain_bo.parameters.rcl_yaml`, :mod:`uncertain_bo.parameters.files`)::

    sim_rover:
      ros__parameters:
        fix_rate: 1.0
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..user_errors import user_error

__all__ = ['Param', 'ParameterError', 'validate', 'defaults', 'config_path', 'RENAMED_PARAMETERS', 'renamed_parameter',
           'renamed_message']


@user_error
class ParameterError(ValueError):
    """A parameter value is missing its type, outside its range, or unknown.

    Example:
        >>> from uncertain_bo.parameters.specs import Param, ParameterError, validate
        >>> specs = [Param('fix_rate', 1.0, 'position fixes per second, Hz', range=(0.01, 100.0))]
        >>> try:
        ...     validate(specs, {'fix_rte': 2.0})
        ... except ParameterError as exc:
        ...     print(exc)
        unknown parameter 'fix_rte' (did you mean fix_rate?); known: fix_rate
    """


@dataclass(frozen=True)
class Param:
    """Specification of one node parameter.

    Attributes:
        name: parameter name (ROS naming rules: ``[a-z_][a-z0-9_.]*``).
        default: default value; its Python type fixes the parameter type (float, int, bool, str, or a list
            of floats / strings).
        description: what it does, **with its unit**: the parameter's whole documentation, shown by the node's
            ``--help``, by ``ros2 param describe`` and as the comment of the shipped parameter file generated from
            the specs (:mod:`uncertain_bo.parameters.yaml_source`, which adds ``Read-only.`` for ``read_only`` specs).
            No trailing full stop.
        range: inclusive ``(low, high)`` for float/int parameters and for each element of a float list.
        choices: allowed values for string parameters.
        read_only: True for things that cannot change after start-up (topic names, frames).
        length: required length for list parameters (None: any non-empty length).

    Example:
        >>> from uncertain_bo.parameters.specs import Param, ParameterError
        >>> std = Param('position_std', [0.75, 0.75], 'position noise std along x and y, m',
        ...             range=(0.0, 1000.0), length=2)
        >>> std.kind, std.allowed()
        ('float_list', 'a list of 2 numbers each in [0, 1000]')
        >>> std.check([1, 0.5])          # coerced to the parameter's type
        [1.0, 0.5]
        >>> try:
        ...     std.check([-1.0, 0.5])
        ... except ParameterError as exc:
        ...     print(exc)
        parameter 'position_std' = [-1.0, 0.5] is invalid: out of range; allowed: a list of 2 numbers each in [0, 1000]
    """

    name: str
    default: Any
    description: str
    range: tuple[float, float] | None = None
    choices: tuple[str, ...] | None = None
    read_only: bool = False
    length: int | None = None

    @property
    def kind(self) -> str:
        d = self.default
        if isinstance(d, bool):
            return 'bool'
        if isinstance(d, int):
            return 'int'
        if isinstance(d, float):
            return 'float'
        if isinstance(d, str):
            return 'str'
        if isinstance(d, (list, tuple)):
            if d and all(isinstance(v, str) for v in d):
                return 'str_list'
            return 'float_list'
        raise TypeError(f'unsupported default type for parameter {self.name!r}: {type(d).__name__}')

    def allowed(self) -> str:
        """Human-readable allowed set, used in error messages and descriptors."""
        if self.choices is not None:
            return 'one of ' + ', '.join(repr(c) for c in self.choices)
        if self.range is not None:
            lo, hi = self.range
            what = f'[{lo:g}, {hi:g}]'
            if self.kind == 'float_list':
                n = f'{self.length} ' if self.length else ''
                return f'a list of {n}numbers each in {what}'
            return f'a {self.kind} in {what}'
        return f'a {self.kind}'

    def check(self, value: Any) -> Any:
        """Return ``value`` coerced to this parameter's type, or raise :class:`ParameterError`."""
        kind = self.kind

        def fail(reason: str) -> ParameterError:
            return ParameterError(
                f'parameter {self.name!r} = {value!r} is invalid: {reason}; allowed: {self.allowed()}')

        if kind == 'bool':
            if not isinstance(value, bool):
                raise fail('expected true or false')
            return value
        if kind in ('int', 'float'):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail('expected a number')
            if _overflows(value):
                raise fail('not a finite number')
            if kind == 'int' and not float(value).is_integer():
                raise fail('expected an integer')
            value = int(value) if kind == 'int' else float(value)
            self._check_range(value, fail)
            return value
        if kind == 'str':
            if not isinstance(value, str):
                raise fail('expected a string')
            if self.choices is not None and value not in self.choices:
                raise fail('not an allowed choice')
            return value
        if not isinstance(value, (list, tuple)) or len(value) == 0:
            raise fail('expected a non-empty list')
        if self.length is not None and len(value) != self.length:
            raise fail(f'expected {self.length} elements, got {len(value)}')
        if kind == 'str_list':
            if not all(isinstance(v, str) for v in value):
                raise fail('expected a list of strings')
            return list(value)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise fail('expected a list of numbers')
        if any(_overflows(v) for v in value):
            raise fail('not a finite number')
        out = [float(v) for v in value]
        for v in out:
            self._check_range(v, fail)
        return out

    def _check_range(self, value: float, fail) -> None:
        if not math.isfinite(value):
            raise fail('not a finite number')
        if self.range is not None:
            lo, hi = self.range
            if not (lo <= value <= hi or math.isclose(value, lo) or math.isclose(value, hi)):
                raise fail('out of range')


def _overflows(value: int | float) -> bool:
    """An integer beyond any float (a 400-digit number in a YAML or JSON file): ``float()`` would raise."""
    return isinstance(value, int) and abs(value) > sys.float_info.max


def defaults(specs: Iterable[Param]) -> dict[str, Any]:
    """Default values of ``specs`` as a dict (lists copied)."""
    return {p.name: (list(p.default) if isinstance(p.default, (list, tuple)) else p.default)
            for p in specs}


#: parameters renamed to the field's terms, old name -> new name (Nav2: the goal checker's ``xy_goal_tolerance``,
#: the costmaps' and BT navigator's ``global_frame``). A node given an old name it no longer declares refuses it
#: with the new one (:func:`renamed_parameter`), wherever unknown names are refused.
RENAMED_PARAMETERS = {'arrival_tolerance': 'xy_goal_tolerance', 'frame_id': 'global_frame'}


def renamed_parameter(name: str, known: Iterable[str]) -> str | None:
    """The name parameter ``name`` was renamed to (:data:`RENAMED_PARAMETERS`) when the node declares it
    (``known``: the node's parameter names), else None."""
    new = RENAMED_PARAMETERS.get(name)
    return new if new is not None and new in set(known) else None


def renamed_message(name: str, new: str) -> str:
    """``parameter 'OLD' was renamed to 'NEW'`` (the start of the one-line error for an old name)."""
    return f'parameter {name!r} was renamed to {new!r}'


def validate(specs: Sequence[Param], values: Mapping[str, Any] | None = None, *,
             allow_unknown: Iterable[str] = ('use_sim_time',)) -> dict[str, Any]:
    """Fill defaults and check every value against its spec.

    Args:
        specs: the node's parameter specs.
        values: user-supplied values (e.g. from a YAML file); missing names take their defaults.
        allow_unknown: names accepted without a spec (ROS built-ins such as ``use_sim_time``).

    Returns:
        dict name -> validated value for every spec (unknown-but-allowed names are passed through).

    Raises:
        ParameterError: a value has the wrong type or is out of range, or a name is not a parameter of the
            node (typos in YAML files would otherwise be silently ignored; an old name says its new one:
            :data:`RENAMED_PARAMETERS`).
    """
    by_name = {p.name: p for p in specs}
    out = defaults(specs)
    allow = set(allow_unknown)
    for name, value in (values or {}).items():
        if name in by_name:
            out[name] = by_name[name].check(value)
        elif name in allow:
            out[name] = value
        elif renamed_parameter(name, by_name) is not None:
            raise ParameterError(f'{renamed_message(name, renamed_parameter(name, by_name))}: use the new name')
        else:
            close = [n for n in by_name if n.split('_')[0] == name.split('_')[0]]
            hint = f' (did you mean {", ".join(close)}?)' if close else ''
            raise ParameterError(f'unknown parameter {name!r}{hint}; known: {", ".join(sorted(by_name))}')
    return out


def config_path(name: str) -> Path:
    """Path of a shipped parameter file (``config/<name>``).

    Looks in the installed package share directory (``ament_index`` on a colcon/apt install, or
    ``<prefix>/share/uncertain_bo`` after ``pip install``) and then in the source tree.

    Raises:
        FileNotFoundError: the file is in none of them; the message lists where it looked.
    """
    import sys

    candidates = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
        try:
            candidates.append(Path(get_package_share_directory('uncertain_bo')) / 'config' / name)
        except (PackageNotFoundError, ValueError, LookupError, OSError):  # OSError: no AMENT_PREFIX_PATH
            pass
    except ImportError:
        pass
    candidates.append(Path(sys.prefix) / 'share' / 'uncertain_bo' / 'config' / name)
    candidates.append(Path(__file__).resolve().parents[2] / 'config' / name)
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f'config file {name!r} not found; looked in: ' + ', '.join(map(str, candidates)))

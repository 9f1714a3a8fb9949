"""Declare node parameters from :class:`~uncertain_bo.parameters.Param` specs, with validation.

Each spec becomes a declared ROS parameter with a ``ParameterDescriptor`` (description with unit,
``FloatingPointRange`` / ``IntegerRange``, allowed choices in ``additional_constraints``, ``read_only``),
so ``ros2 param describe`` shows the same information as the YAML comments. Values are validated by the
spec both at start-up (overrides from ``--params-file`` or ``parameter_overrides``) and at run time
(``ros2 param set``): a bad value fails with a message naming the parameter, the value and the allowed
range, at start-up as :class:`~uncertain_bo.parameters.ParameterError`, at run time as a rejected
``SetParametersResult``.

Float parameters are declared with ``dynamic_typing`` so that an integer written in YAML (``1`` instead of
``1.0``) is accepted rather than failing with a type error; the spec still checks the value. Integers given
for float parameters (a start-up override, or ``ros2 param set /explorer beta 2``) are stored as doubles
(a pre-set callback converts them), so a float parameter never turns into an integer one.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType,
                                SetParametersResult)
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter

from uncertain_bo.parameters import Param, ParameterError

__all__ = ['declare_parameters', 'make_descriptor', 'parameter_overrides', 'ParameterError']

_STATIC_TYPES = {
    'bool': ParameterType.PARAMETER_BOOL,
    'int': ParameterType.PARAMETER_INTEGER,
    'str': ParameterType.PARAMETER_STRING,
    'str_list': ParameterType.PARAMETER_STRING_ARRAY,
}


def make_descriptor(spec: Param) -> ParameterDescriptor:
    """``ParameterDescriptor`` for a spec (description, range, choices, read-only, typing)."""
    d = ParameterDescriptor(name=spec.name, description=spec.description, read_only=spec.read_only)
    kind = spec.kind
    if kind in ('float', 'float_list'):
        d.dynamic_typing = True
    else:
        d.type = _STATIC_TYPES[kind]
    if spec.range is not None:
        lo, hi = spec.range
        if kind == 'float':
            d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]
        elif kind == 'int':
            d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=0)]
    constraints = [f'allowed: {spec.allowed()}']
    if spec.length is not None:
        constraints.append(f'length {spec.length}')
    d.additional_constraints = '; '.join(constraints)
    return d


def _default_value(spec: Param) -> Any:
    d = spec.default
    if spec.kind == 'float_list':
        return [float(v) for v in d]
    if spec.kind == 'str_list':
        return list(d)
    return d


def declare_parameters(node: Node, specs: Sequence[Param],
                       on_change: Callable[[dict[str, Any]], None] | None = None,
                       cross_check: Callable[[Mapping[str, Any]], str | None] | None = None) -> dict[str, Any]:
    """Declare every spec on ``node`` and return the live, validated values.

    Args:
        node: the node.
        specs: parameter specs (names must be unique).
        on_change: called with ``{name: new_value}`` after a run-time change was accepted and applied.
        cross_check: run-time check across parameters: called with the values as they would be after the
            change (all of them), returns None or the reason to reject the change (e.g. bounds out of
            order). Start-up values are not cross-checked here: the node does that once all are declared.

    Returns:
        dict name -> validated value (floats as float, float lists as lists of float). The dict is kept up
        to date when parameters change at run time, so components holding it see the new values.

    Raises:
        ParameterError: a start-up value (override) is invalid; the message names the node, the parameter,
            the value and the allowed range.
    """
    by_name = {s.name: s for s in specs}
    values: dict[str, Any] = {}

    def on_set(params: list[Parameter]) -> SetParametersResult:
        for p in params:
            spec = by_name.get(p.name)
            if spec is None:
                continue
            if p.type_ == Parameter.Type.NOT_SET:
                return SetParametersResult(successful=False,
                                           reason=f'parameter {p.name!r} cannot be undeclared')
            try:
                spec.check(_plain(p.value))
            except ParameterError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        if cross_check is not None and declared[0]:
            candidate = dict(values)
            candidate.update({p.name: by_name[p.name].check(_plain(p.value)) for p in params if p.name in by_name})
            reason = cross_check(candidate)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def post_set(params: list[Parameter]) -> None:
        changed = {}
        for p in params:
            spec = by_name.get(p.name)
            if spec is not None and p.type_ != Parameter.Type.NOT_SET:
                values[p.name] = changed[p.name] = spec.check(_plain(p.value))
        if changed and on_change is not None and declared[0]:
            on_change(changed)

    def pre_set(params: list[Parameter]) -> list[Parameter]:
        return [_as_double(p, by_name.get(p.name)) for p in params]

    declared = [False]
    node.add_pre_set_parameters_callback(pre_set)
    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(post_set)
    overrides = getattr(node, '_parameter_overrides', {})
    for spec in specs:
        if spec.name in overrides:   # an integer override of a float parameter is declared as a double
            overrides[spec.name] = _as_double(overrides[spec.name], spec)
        try:
            node.declare_parameter(spec.name, _default_value(spec), make_descriptor(spec))
        except (InvalidParameterValueException, InvalidParameterTypeException) as exc:
            given = overrides.get(spec.name)
            value = _plain(given.value) if given is not None else '?'
            try:
                spec.check(value)
                reason = str(exc)
            except ParameterError as perr:
                reason = str(perr)
            raise ParameterError(f'node {node.get_name()!r}: {reason}') from exc
        values[spec.name] = spec.check(_plain(node.get_parameter(spec.name).value))
    declared[0] = True
    return values


def _as_double(p: Parameter, spec: Param | None) -> Parameter:
    """``p`` with an integer (array) value turned into a double (array) when ``spec`` is a float (list)."""
    if spec is None:
        return p
    if spec.kind == 'float' and p.type_ == Parameter.Type.INTEGER:
        return Parameter(p.name, Parameter.Type.DOUBLE, float(p.value))
    if spec.kind == 'float_list' and p.type_ == Parameter.Type.INTEGER_ARRAY:
        return Parameter(p.name, Parameter.Type.DOUBLE_ARRAY, [float(v) for v in p.value])
    return p


def _plain(value: Any) -> Any:
    """rclpy array values (array.array / numpy) -> plain lists."""
    if isinstance(value, (str, bytes, bool, int, float)) or value is None:
        return value
    try:
        return [v.item() if hasattr(v, 'item') else v for v in value]
    except TypeError:
        return value


def parameter_overrides(values: Mapping[str, Any] | Iterable[tuple[str, Any]],
                        specs: Sequence[Param] | None = None) -> list[Parameter]:
    """rclpy ``Parameter`` list for ``Node(..., parameter_overrides=...)`` from a name -> value mapping.

    Use this for in-process composition from YAML-loaded dicts
    (:func:`uncertain_bo.parameters.node_parameters`).

    Args:
        values: name -> value (tuples become lists).
        specs: when given, values of spec'd names are validated and coerced first (e.g. ``[0, 200.5]``
            becomes ``[0.0, 200.5]``, which rclpy could not type otherwise); other names pass unchanged.

    Raises:
        ParameterError: a spec'd value is invalid.
    """
    by_name = {s.name: s for s in (specs or ())}
    items = values.items() if isinstance(values, Mapping) else values
    out = []
    for name, value in items:
        if isinstance(value, tuple):
            value = list(value)
        if name in by_name:
            value = by_name[name].check(value)
        out.append(Parameter(name, value=value))
    return out

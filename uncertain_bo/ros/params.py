"""Declare node parameters from :class:`~uncertain_bo.parameters.specs.Param` specs, with validation.

Each spec becomes a declared ROS parameter with a ``ParameterDescriptor`` (description with unit, the allowed
values in ``additional_constraints`` - type, range, choices, length -, ``read_only``), so ``ros2 param describe``
shows the same information as the YAML comments. Values are validated by the spec alone, both at start-up
(overrides from ``--params-file``, ``-p`` or ``parameter_overrides``) and at run time (``ros2 param set``): a bad
value fails with a message naming the parameter, the value and what is allowed (``parameter 'max_measurements' =
'abc' is invalid: expected a number; allowed: a int in [1, 1e+06]``), at start-up as
:class:`~uncertain_bo.parameters.specs.ParameterError`, at run time as the rejected ``SetParametersResult``'s reason
(what ``ros2 param set`` prints). The descriptors therefore declare every parameter with ``dynamic_typing`` and
without rclpy's ``integer_range`` / ``floating_point_range``: rclpy applies those before any callback, with
messages that name neither the value nor the parameter (``Wrong parameter type, expected 'Type.INTEGER' got
'Type.STRING'``). A value is stored with its spec's type all the same: integers given for float parameters (a
start-up override, ``ros2 param set /explorer beta 2``) become doubles and whole doubles given for integer ones
become integers (a pre-set callback, and the overrides before declaration).

A node is refused at start-up when it is given a parameter it does not declare (:func:`declare_parameters`):
rclpy itself ignores such an override silently, so a misspelt ``max_measurement: 8`` would run with the default
of ``max_measurements``. A name set in a parameter-file section that names the node, by ``-p NAME:=VALUE`` or by
``parameter_overrides`` is judged; a wildcard section's (``/**``) is not, as it may hold other nodes' parameters,
nor are rclpy's own (``use_sim_time``, ``qos_overrides.*``). The parameter files are those of the command line
the node's context was initialised with (:func:`set_command_line`, which :func:`uncertain_bo.ros.spin.run_node`
calls); that command line is forgotten when the context shuts down.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Iterable, Mapping, Sequence

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.context import Context
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.utilities import get_default_context

from uncertain_bo.parameters.files import UnknownParameter, is_ros_parameter, unknown_parameters
from uncertain_bo.parameters.specs import Param, ParameterError

__all__ = ['declare_parameters', 'make_descriptor', 'parameter_overrides', 'undeclared_overrides',
           'set_command_line', 'params_files_in', 'parameter_rules_in', 'ParameterError']

#: context -> the command line its rcl global arguments came from (:func:`set_command_line`), until the context
#: shuts down; its ``--params-file`` files tell a wildcard section's parameter from a node's own
_COMMAND_LINES: weakref.WeakKeyDictionary[Context, _CommandLine] = weakref.WeakKeyDictionary()


class _CommandLine:
    """One context's command line; :meth:`forget` is its context's shutdown callback (rclpy holds such callbacks
    as weak methods: this object lives in ``_COMMAND_LINES`` until then)."""

    def __init__(self, context: Context, args: Sequence[str]):
        self.context = weakref.ref(context)
        self.args = list(args)

    def forget(self) -> None:
        context = self.context()
        if context is not None and _COMMAND_LINES.get(context) is self:
            del _COMMAND_LINES[context]


def _ros_option_values(args: Sequence[str], options: tuple[str, ...]) -> list[str]:
    """The values of the ``options`` (``--params-file FILE``, ``-p RULE``) inside the ``--ros-args`` parts of a
    command line, in order."""
    values, in_ros = [], False
    it = iter(args)
    for a in it:
        if a == '--ros-args':
            in_ros = True
        elif a == '--':
            in_ros = False
        elif in_ros and a in options:
            value = next(it, None)
            if value is not None:
                values.append(value)
    return values


def params_files_in(args: Sequence[str]) -> list[str]:
    """The ``--params-file FILE`` arguments inside the ``--ros-args`` parts of a command line."""
    return _ros_option_values(args, ('--params-file',))


def parameter_rules_in(args: Sequence[str]) -> dict[str, str]:
    """The ``-p`` / ``--param`` rules inside the ``--ros-args`` parts of a command line: parameter name (without a
    ``node:`` prefix) -> the rule as given (``NAME:=VALUE``); the last rule of a name wins, as in rcl."""
    return {rule.split(':=', 1)[0].rsplit(':', 1)[-1]: rule for rule in _ros_option_values(args, ('-p', '--param'))
            if ':=' in rule}


def set_command_line(args: Sequence[str], context: Context | None = None) -> None:
    """Record the command line ``rclpy.init`` was given for ``context`` (default: rclpy's default context), for
    :func:`undeclared_overrides` on that context's nodes: :func:`uncertain_bo.ros.spin.run_node` calls it. It is
    forgotten when the context shuts down (a later node of the process, in this or another context, is not judged
    by an earlier run's files). Without it no parameter file is known, and every undeclared override counts as given
    by ``-p`` or ``parameter_overrides``."""
    context = context if context is not None else get_default_context()
    line = _COMMAND_LINES[context] = _CommandLine(context, args)
    context.on_shutdown(line.forget)


def make_descriptor(spec: Param) -> ParameterDescriptor:
    """``ParameterDescriptor`` for a spec: description, read-only, and what is allowed (type, range, choices,
    length) as ``additional_constraints``; dynamically typed, so that the spec, not rclpy, judges a value
    (module docstring)."""
    d = ParameterDescriptor(name=spec.name, description=spec.description, read_only=spec.read_only,
                            dynamic_typing=True)
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
        ParameterError: a start-up value (override) is invalid, the message naming the node, the parameter, the
            value and the allowed range; or the node is given parameters it does not declare
            (:func:`undeclared_overrides`: every one of them, with where it was given and the closest name).
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
        return [_as_spec_type(p, by_name.get(p.name)) for p in params]

    declared = [False]
    node.add_pre_set_parameters_callback(pre_set)
    node.add_on_set_parameters_callback(on_set)
    node.add_post_set_parameters_callback(post_set)
    overrides = getattr(node, '_parameter_overrides', {})
    unknown = undeclared_overrides(node, by_name)
    if unknown:   # before any value is judged: a misspelt name explains the default it would have run with
        raise ParameterError('; '.join(map(str, unknown)))
    for spec in specs:
        if spec.name in overrides:   # an integer override of a float parameter is declared as a double
            overrides[spec.name] = _as_spec_type(overrides[spec.name], spec)
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


def _as_spec_type(p: Parameter, spec: Param | None) -> Parameter:
    """``p`` stored with ``spec``'s type: an integer (array) as a double (array) for a float (list) spec, a whole
    finite double as an integer for an integer spec; any other value unchanged (the spec judges it)."""
    if spec is None:
        return p
    if spec.kind == 'float' and p.type_ == Parameter.Type.INTEGER:
        return Parameter(p.name, Parameter.Type.DOUBLE, float(p.value))
    if spec.kind == 'float_list' and p.type_ == Parameter.Type.INTEGER_ARRAY:
        return Parameter(p.name, Parameter.Type.DOUBLE_ARRAY, [float(v) for v in p.value])
    if spec.kind == 'int' and p.type_ == Parameter.Type.DOUBLE and math.isfinite(p.value) and p.value.is_integer():
        return Parameter(p.name, Parameter.Type.INTEGER, int(p.value))
    return p


def undeclared_overrides(node: Node, declared: Iterable[str]) -> list[UnknownParameter]:
    """The overrides rcl handed ``node`` (``--params-file``, ``-p``) or its constructor got (``parameter_overrides``)
    that name none of the ``declared`` parameters, nor rclpy's own: a misspelling that rclpy would silently ignore.
    A name that only a wildcard section (``/**``) of the command line's parameter files sets is left out (it may be
    another node's). Each is reported with where it was given (the file and line, or the command line) and the
    declared name it most likely misspells.

    Raises:
        ParameterError: a parameter file of the command line cannot be read (it was read by rcl a moment ago).
    """
    declared = list(declared)
    names = [n for n in getattr(node, '_parameter_overrides', {}) if n not in declared and not is_ros_parameter(n)]
    if not names:
        return []
    fqn = node.get_fully_qualified_name()
    line = _COMMAND_LINES.get(node.context)
    command_line = line.args if line is not None else []
    files = params_files_in(command_line)
    rules = parameter_rules_in(command_line)
    in_files = {}   # name -> its first place in a section naming the node (file order)
    for u in unknown_parameters(files, fqn, declared):
        if u.name in names and u.name not in rules:   # a -p rule is what the node got (rcl applies it last)
            in_files.setdefault(u.name, u)
    out = list(in_files.values())
    for name in names:
        if name in rules:
            where = f'the command line (-p {rules[name]})'
            out.append(UnknownParameter.of(name, fqn, where, declared))
        elif name not in in_files and not (files and _set_by_wildcard(files, fqn, name)):
            out.append(UnknownParameter.of(name, fqn, 'parameter_overrides', declared))
    return out


def _set_by_wildcard(files: Sequence[str], fqn: str, name: str) -> bool:
    from uncertain_bo.parameters.files import merged_sections, names_node, section_applies
    return any(name in s.parameters for s in merged_sections(files)
               if section_applies(s.key, fqn) and not names_node(s.key, fqn))


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
    (:func:`uncertain_bo.parameters.files.node_parameters`).

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

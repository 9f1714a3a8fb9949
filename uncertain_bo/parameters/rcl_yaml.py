"""ROS 2 parameter files as text: read as rcl's YAML parser reads them, and written so that it reads them back.

A node started with ``--params-file`` gets its values from rcl's YAML parser (``rcl_yaml_param_parser``), not
from a Python YAML loader, and rcl reads a file differently from ``yaml.safe_load``:

- **Tags are ignored** except ``!!str``: ``launch_ros`` writes list overrides as ``!!python/tuple`` sequences
  (``yaml.dump`` of the tuples its substitutions produce), which rcl reads as plain arrays and ``safe_load``
  refuses. Aliases (``*name``) are refused.
- **Scalars are typed by rcl's rules**, not YAML 1.1's: unquoted ``true/yes/on/y`` (any of rcl's spellings) are
  booleans, integers are whatever ``strtoll(s, 0)`` reads in full (``0x10`` = 16, ``010`` = 8, ``+5``), floats
  whatever ``strtod`` reads in full without overflow (``1e3``, ``.5``, ``inf``, ``.nan``, ``0x1p3``),
  everything else is a string (``~``, ``null``, ``1_000``, ``2019-01-01``, ``1e400``); quoted scalars are
  strings. An empty value is an error.
- **Arrays hold one type**: ``[1.0, 2]`` is an error (write ``[1.0, 2.0]``).
- **Node sections** are keyed by a node name, a namespaced name (``/ns/explorer``, ``ns/explorer`` - the
  same), nested namespace keys (``ns: {explorer: {ros__parameters: ...}}``) or a wildcard (``/**``, ``/*``,
  ``/**/explorer``); nested parameter maps become dotted names (``a: {b: 1}`` is ``a.b``). A key repeated within
  a file is one section, at its first place.

:func:`read_param_file` is that reader (:class:`Section` s in file order), :func:`parameter_rule_value` types a
command-line rule (``-p NAME:=VALUE``) the same way, and :func:`write_param_file` writes sections that rcl reads
back to the same values (strings always quoted). Which sections reach which node, and how several files merge, is
:mod:`uncertain_bo.parameters.files`. The tests compare every rule above with rcl itself (through rclpy). Errors are
:class:`~uncertain_bo.parameters.specs.ParameterError` naming the file and line.
"""
from __future__ import annotations

import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from .specs import ParameterError

__all__ = ['Section', 'read_param_file', 'parameter_rule_value', 'rcl_scalar', 'no_parameters_warning',
           'load_param_file', 'format_param_file', 'write_param_file', 'PARAMS_KEY', 'MAX_FILE_BYTES']

PARAMS_KEY = 'ros__parameters'
#: largest parameter file read, bytes (the shipped config/explorer.yaml has about 15 kB)
MAX_FILE_BYTES = 2 ** 20
_WILDCARDS = ('/**', '/*')
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_BOOL = {**dict.fromkeys(('Y', 'y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'), True),
         **dict.fromkeys(('N', 'n', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'), False)}
_SPACE = '[ \t\n\v\f\r]*'
_INT = re.compile(_SPACE + r'([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\Z')
_DEC_FLOAT = re.compile(_SPACE + r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf(inity)?|nan(\([0-9A-Za-z_]*\))?)\Z',
                        re.IGNORECASE)
_HEX_FLOAT = re.compile(_SPACE + r'[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?\Z')
_YAML_SPECIAL = {'.nan': math.nan, '.NaN': math.nan, '.NAN': math.nan, '.inf': math.inf, '.Inf': math.inf,
                 '.INF': math.inf, '+.inf': math.inf, '+.Inf': math.inf, '+.INF': math.inf,
                 '-.inf': -math.inf, '-.Inf': -math.inf, '-.INF': -math.inf}
_STR_TAG = 'tag:yaml.org,2002:str'


@dataclass
class Section:
    r"""One node section of a parameter file.

    Attributes:
        key: the node name as rcl keeps it (``'explorer'``, ``'/rover1/explorer'``, ``'rover1/explorer'``,
            ``'/**'``): nested namespace keys joined with ``/``.
        parameters: parameter name (dotted for nested maps) -> value (bool, int, float, str or a list of one
            of them), in file order.
        line: line of the section's ``ros__parameters`` key (1-based).
        lines: parameter name -> the line of its key (1-based; its last place when repeated).

    Example:
        A launch_ros tuple, a nested map and rcl's own scalar typing (``yes`` is true, ``010`` is 8):

        >>> import os, tempfile
        >>> from uncertain_bo.parameters.rcl_yaml import read_param_file
        >>> text = ('/rover1/explorer:\n  ros__parameters:\n    execution_noise_std: !!python/tuple [0.5, 0.5]\n'
        ...         '    gp: {refit: yes}\n    seed: 010\n')
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = os.path.join(d, 'rover.yaml')
        ...     with open(path, 'w') as f:
        ...         _ = f.write(text)
        ...     [section] = read_param_file(path)
        >>> section.key, section.line
        ('/rover1/explorer', 2)
        >>> section.parameters
        {'execution_noise_std': [0.5, 0.5], 'gp.refit': True, 'seed': 8}
    """

    key: str
    parameters: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


def rcl_scalar(value: str, style: str | None = None, tag: str | None = None) -> bool | int | float | str:
    """The value rcl gives a YAML scalar (``rcl_yaml_param_parser``'s ``get_value``).

    Args:
        value: the scalar's text.
        style: PyYAML's scalar style (None or ``''`` plain, ``"'"``/``'"'`` quoted, ``'|'``/``'>'`` block).
        tag: the scalar's resolved tag (only ``!!str`` matters to rcl).
    """
    if tag == _STR_TAG:
        return value
    if style in ("'", '"'):
        return value
    if value in _BOOL:
        return _BOOL[value]
    m = _INT.match(value)
    if m:
        n = int(m.group(2), 0) if not re.fullmatch('0[0-7]+', m.group(2)) else int(m.group(2), 8)
        n = -n if m.group(1) == '-' else n
        if -2 ** 63 <= n < 2 ** 63:
            return n
    if value in _YAML_SPECIAL:
        return _YAML_SPECIAL[value]
    text = value.strip(' \t\n\v\f\r')
    if _DEC_FLOAT.match(value):
        x = math.nan if 'nan' in text.lower() else float(text)
        mantissa = re.split('[eE]', text)[0]
    elif _HEX_FLOAT.match(value):
        body = text.lstrip('+-')
        x = float.fromhex(body if 'p' in body.lower() else body + 'p0')
        x = -x if text.startswith('-') else x
        mantissa = re.split('[pP]', body[2:])[0]
    else:
        return value
    if math.isinf(x) and 'inf' not in text.lower():   # strtod overflows (ERANGE): rcl keeps the text
        return value
    if x == 0.0 and mantissa.strip('+-.0') and 'nan' not in text.lower():   # underflow to 0: ERANGE too
        return value
    if x != 0.0 and abs(x) < 2.2250738585072014e-308:   # a subnormal result: glibc's strtod sets ERANGE
        return value
    return x


def _fail(path, line: int, reason: str) -> ParameterError:
    """The error at ``line`` of the parameter file ``path`` (None: a ``-p`` rule's value, which has no file)."""
    return ParameterError(f'parameter file {path} line {line}: {reason}' if path is not None else reason)


def _valid_node_key(key: str) -> str | None:
    """Why ``key`` is not a node name rcl accepts (rcl's ``_validate_name``), or None."""
    if key in _WILDCARDS:
        return None
    tokens = key.split('/')
    if key.startswith('/'):
        tokens = tokens[1:]
    if any(t == '' for t in tokens):
        return f'node name {key!r} has an empty namespace token (repeated or trailing /)'
    *ns, name = tokens
    for t in ns:
        if t not in ('*', '**') and not _TOKEN.match(t):
            return f'namespace token {t!r} of {key!r} is not a valid ROS name'
    if name not in ('*', '**'):
        if name[:1].isdigit():
            return f'node name {key!r} must not start with a number'
        if not _TOKEN.match(name):
            return f'node name {key!r} is not a valid ROS name (letters, digits and _)'
    return None


class _Events:
    """PyYAML events with one-event look-ahead."""

    def __init__(self, events: Iterator[yaml.Event]):
        self._it = events
        self._next: yaml.Event | None = None

    def peek(self) -> yaml.Event:
        if self._next is None:
            self._next = next(self._it)
        return self._next

    def pop(self) -> yaml.Event:
        e = self.peek()
        self._next = None
        return e


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1


def read_param_file(path: str | Path) -> list[Section]:
    """The node sections of a ROS 2 parameter file, read as rcl reads it (see the module docstring).

    Args:
        path: the file.

    Returns:
        The sections in file order (a key repeated within the file is one section, at its first place, its
        later values overwriting). An empty file, or one without any mapping, has none (rcl accepts both).

    Raises:
        ParameterError: the file cannot be read, is not valid YAML, or rcl would refuse it (aliases, values
            outside ``ros__parameters``, mixed-type or nested arrays, an empty value, an invalid node name);
            the message names the file and the line.
    """
    path = Path(path)
    text = _file_text(path)
    loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
    sections: dict[str, Section] = {}
    try:
        events = _Events(iter(list(yaml.parse(text, Loader=loader))))   # a syntax error first, wherever it is
        while not isinstance(events.peek(), yaml.StreamEndEvent):
            e = events.pop()
            if isinstance(e, yaml.MappingStartEvent):
                _node_level(events, [], sections, path)
            elif isinstance(e, yaml.SequenceStartEvent):
                raise _fail(path, _line(e), 'the top level is a list: a parameter file maps node names to '
                                            f"'{PARAMS_KEY}' sections")
            elif isinstance(e, yaml.AliasEvent):
                raise _fail(path, _line(e), 'aliases (*name) are not supported by rcl')
    except yaml.YAMLError as exc:
        raise ParameterError(f'parameter file {path} is not valid YAML: {exc}') from exc
    return list(sections.values())


def _file_text(path: Path) -> str:
    """The text of a parameter file: a regular file of at most :data:`MAX_FILE_BYTES` (a device such as
    ``/dev/zero``, a named pipe or a folder is refused before it is opened: reading one never ends, or fills the
    memory)."""
    try:
        st = path.stat()
    except OSError as exc:
        raise ParameterError(f'cannot read parameter file {path}: {exc.strerror}') from exc
    if not stat.S_ISREG(st.st_mode):
        raise ParameterError(f'parameter file {path} is not a regular file ({_file_kind(st.st_mode)}): name a '
                             'YAML file')
    if st.st_size > MAX_FILE_BYTES:
        raise ParameterError(f'parameter file {path} is {st.st_size / 2 ** 20:.1f} MiB: a parameter file holds at '
                             f'most {MAX_FILE_BYTES // 2 ** 20} MiB (is it the right file?)')
    try:
        with open(path, 'rb') as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f'cannot read parameter file {path}: {exc.strerror}') from exc
    if len(data) > MAX_FILE_BYTES:
        raise ParameterError(f'parameter file {path} grew beyond {MAX_FILE_BYTES // 2 ** 20} MiB while it was read')
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ParameterError(f'parameter file {path} is not text: {exc.reason}') from exc


def _file_kind(mode: int) -> str:
    for test, what in ((stat.S_ISDIR, 'a folder'), (stat.S_ISCHR, 'a character device'),
                       (stat.S_ISBLK, 'a block device'), (stat.S_ISFIFO, 'a named pipe'), (stat.S_ISSOCK, 'a socket')):
        if test(mode):
            return what
    return 'not a plain file'


def _keys(events: _Events, path, what: str) -> Iterator[yaml.ScalarEvent]:
    """The keys of a mapping (its start already read) until its end, each before its value is read (the caller
    reads the value): a key that is an alias, a list or a map is refused (``what``: ``'a node name'``, ...)."""
    while True:
        e = events.pop()
        if isinstance(e, yaml.MappingEndEvent):
            return
        if isinstance(e, yaml.AliasEvent):
            raise _fail(path, _line(e), 'aliases (*name) are not supported by rcl')
        if not isinstance(e, yaml.ScalarEvent):
            raise _fail(path, _line(e), f'{what} must be a plain key, not a list or a map')
        yield e


def _node_level(events: _Events, ns: list[str], sections: dict[str, Section], path) -> None:
    """A mapping at node-name level (its start already read): namespace keys until ``ros__parameters``."""
    for e in _keys(events, path, 'a node name'):
        key, line = e.value, _line(e)
        if key.startswith(PARAMS_KEY):
            if not ns:
                raise _fail(path, line, f"'{PARAMS_KEY}' needs a node name above it (e.g. explorer:)")
            name = '/'.join(ns)
            problem = _valid_node_key(name)
            if problem:
                raise _fail(path, line, problem)
            value = events.pop()
            if not isinstance(value, yaml.MappingStartEvent):
                raise _fail(path, _line(value), f"node {name!r}: '{PARAMS_KEY}' must hold a map of parameters "
                                                '(name: value), not a single value or a list')
            section = sections.setdefault(name, Section(name, line=line))
            _params_level(events, '', section.parameters, path, section.lines)
            ns = ns[:-1]   # rcl drops the node name here: later keys of this map name other nodes
            continue
        value = events.pop()
        if isinstance(value, yaml.MappingStartEvent):
            _node_level(events, [*ns, key], sections, path)
        elif isinstance(value, yaml.SequenceStartEvent):
            raise _fail(path, _line(value), f"{'/'.join([*ns, key])!r} holds a list outside any '{PARAMS_KEY}' "
                                            'section (layout: NODE_NAME: {ros__parameters: {NAME: VALUE}})')
        else:
            where = '/'.join(ns) if ns else key
            raise _fail(path, _line(value), f"node {where!r} has no '{PARAMS_KEY}' section: {key!r} has a value "
                                            "outside it (layout: NODE_NAME: {ros__parameters: {NAME: VALUE}})")


def _params_level(events: _Events, prefix: str, out: dict[str, Any], path, lines: dict[str, int]) -> None:
    """A mapping of parameters (its start already read): values, arrays and nested (dotted) names (their key's
    line in ``lines``)."""
    for e in _keys(events, path, 'a parameter name'):
        name = prefix + e.value
        value = events.pop()
        lines[name] = _line(e)
        if isinstance(value, yaml.ScalarEvent):
            out[name] = _value(value, name, path)
        elif isinstance(value, yaml.MappingStartEvent):
            _params_level(events, name + '.', out, path, lines)
        elif isinstance(value, yaml.SequenceStartEvent):
            out[name] = _array(events, name, path)
        else:
            raise _fail(path, _line(value), f'parameter {name!r}: aliases (*name) are not supported by rcl')


def _value(e: yaml.ScalarEvent, name: str, path) -> Any:
    if not e.style and e.value == '':   # plain (PyYAML's C parser says '', the Python one None)
        raise _fail(path, _line(e), f'parameter {name!r} has no value (write a value, or quote an empty '
                                    "string: '')")
    return rcl_scalar(e.value, e.style, e.tag)


_KIND = {bool: 'bool', int: 'integer', float: 'double', str: 'string'}


def _array(events: _Events, name: str, path) -> list[Any]:
    out: list[Any] = []
    kind = None
    while True:
        e = events.pop()
        if isinstance(e, yaml.SequenceEndEvent):
            return out
        if not isinstance(e, yaml.ScalarEvent):
            raise _fail(path, _line(e), f'parameter {name!r}: an array holds plain values, not lists, maps or '
                                        'aliases')
        v = _value(e, name, path)
        if kind is None:
            kind = type(v)
        elif type(v) is not kind:
            hint = ' (write every number with a decimal point, e.g. 2.0)' if {kind, type(v)} == {int, float} else ''
            raise _fail(path, _line(e), f'parameter {name!r}: an array holds values of one type, but {e.value!r} '
                                        f'is a {_KIND[type(v)]} among {_KIND[kind]}s{hint}')
        out.append(v)


def parameter_rule_value(rule: str) -> bool | int | float | str | list:
    """The value rcl gives a command-line parameter rule ``NAME:=VALUE`` (``-p``; a ``node:`` prefix allowed):
    ``VALUE`` is YAML typed by rcl's rules, as in a file (an array of one type, ...). It explains a rule rcl
    refused (rcl decides; its parser also flattens a nested array, ``[[1.0]]``, which this refuses).

    Raises:
        ParameterError: rcl would refuse the rule; the message names it and says why (rcl's own says "Couldn't
            parse parameter override rule ... Sequence should be of same type").
    """
    name, sep, text = rule.partition(':=')
    name = name.rsplit(':', 1)[-1]
    try:
        if not sep or not name:
            raise ParameterError('a parameter rule is NAME:=VALUE')
        loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
        events = _Events(e for e in yaml.parse(text, Loader=loader)
                         if not isinstance(e, (yaml.StreamStartEvent, yaml.DocumentStartEvent)))
        e = events.pop()
        if isinstance(e, yaml.ScalarEvent):
            return _value(e, name, None)
        if isinstance(e, yaml.SequenceStartEvent):
            return _array(events, name, None)
        if isinstance(e, yaml.StreamEndEvent):
            raise ParameterError(f'parameter {name!r} has no value')
        raise ParameterError(f'parameter {name!r}: a value is a scalar or an array of one type, not a map')
    except yaml.YAMLError as exc:
        raise ParameterError(f'-p {rule}: the value is not valid YAML ({" ".join(str(exc).split())})') from exc
    except ParameterError as exc:
        raise ParameterError(f'-p {rule}: {exc}') from None


def no_parameters_warning(path: str | Path) -> str | None:
    """The one-line warning for a parameter file without any parameters (empty, or comments only: rcl accepts it
    and the nodes run with their defaults, which is rarely what was meant), or None when it has some.

    Raises:
        ParameterError: the file cannot be read or rcl would refuse it (:func:`read_param_file`).
    """
    if read_param_file(path):
        return None
    return f'{path} has no parameters (empty, or comments only): every node keeps its defaults'


def load_param_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """The sections of one file by key (leading ``/`` stripped, except from the wildcards ``/**`` and ``/*``).

    Raises:
        ParameterError: see :func:`read_param_file`.
    """
    return {(s.key if s.key in _WILDCARDS else s.key.lstrip('/')): dict(s.parameters)
            for s in read_param_file(path)}


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return '.nan'
        if math.isinf(value):
            return '.inf' if value > 0 else '-.inf'
        text = repr(value)
        return text if any(c in text for c in '.en') else text + '.0'
    if isinstance(value, str):
        return json.dumps(value)   # double-quoted: rcl reads a quoted scalar as a string, whatever it holds
    raise TypeError(f'{type(value).__name__} is not a parameter value')


def format_param_file(sections: Iterable[Section] | Iterable[tuple[str, dict[str, Any]]]) -> str:
    """YAML text of ``sections`` that rcl (and :func:`read_param_file`) reads back to the same values.

    Raises:
        TypeError: a value is not a bool, int, float, str or a list of one of them.
    """
    lines = []
    for s in sections:
        key, params = (s.key, s.parameters) if isinstance(s, Section) else s
        lines += [f'{json.dumps(key)}:', f'  {PARAMS_KEY}:']
        if not params:
            lines[-1] += ' {}'
        for name, value in params.items():
            if isinstance(value, (list, tuple)):
                text = '[' + ', '.join(_scalar_text(v) for v in value) + ']'
            else:
                text = _scalar_text(value)
            lines.append(f'    {json.dumps(name)}: {text}')
    return '\n'.join(lines) + '\n'


def write_param_file(sections: Iterable[Section] | Iterable[tuple[str, dict[str, Any]]], path: str | Path) -> Path:
    """Write :func:`format_param_file` of ``sections`` to ``path``; returns ``path``."""
    path = Path(path)
    path.write_text(format_param_file(sections))
    return path

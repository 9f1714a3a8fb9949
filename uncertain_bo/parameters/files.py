"""ROS 2 parameter files: what each node gets from them, as rcl merges their sections and matches them to nodes.

A node started with ``--params-file`` (one or several) gets the values of every section of those files
(:func:`~uncertain_bo.parameters.rcl_yaml.read_param_file`, which reads a file as rcl does) that matches its fully
qualified name:

- **Section keys match as rcl matches them**: a bare name is absolute (``explorer`` is ``/explorer``, which a node in a
  namespace does not match), ``/**`` matches every node, ``*`` one name token and ``**`` any number of them
  (:func:`section_applies`).
- **Several files merge by section key**: a section key keeps the place where it first appeared, later files
  overwrite its values, and a node gets every section that matches its fully qualified name, in that order
  (so a later file's ``/**`` does not override an earlier file's ``explorer:``, as with rcl;
  :func:`node_parameters`).
- **rclpy ignores what a node does not declare**: a wildcard section may hold other nodes' parameters
  (:func:`declared_parameters`), while an undeclared name in a section that names the node is a mistake worth a
  message (:func:`unknown_parameters`, :class:`UnknownParameter`); a section that reaches no node is one too
  (:func:`unknown_sections`).

Files are given as paths or as :class:`ParamFile` (read already, or re-keyed into a namespace:
:func:`namespaced_sections`). Errors are :class:`~uncertain_bo.parameters.specs.ParameterError` naming the file and
line.
"""
from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from .rcl_yaml import Section, read_param_file
from .specs import renamed_message, renamed_parameter

__all__ = ['ParamFile', 'file_sections', 'namespaced_sections', 'merged_sections', 'node_parameters',
           'declared_parameters', 'section_applies', 'unknown_sections', 'absolute_name', 'names_node',
           'is_ros_parameter', 'closest_name', 'UnknownParameter', 'unknown_parameters', 'ROS_PARAMETERS']

#: parameters rclpy declares on every node itself, and the prefix of its QoS overrides (``qos_overrides./topic.
#: publisher.depth``, declared by nodes that allow them): accepted in any section without being a node's spec
ROS_PARAMETERS = ('use_sim_time', 'start_type_description_service')
ROS_PARAMETER_PREFIXES = ('qos_overrides.',)


@dataclass(frozen=True)
class ParamFile:
    """A parameter file already read (or its sections changed, e.g. re-keyed into a namespace): the functions
    below that take files take one of these too, and name it ``path`` in their messages.

    Attributes:
        path: the file the sections come from (for messages).
        sections: its sections (:func:`read_param_file`), lines included.

    Example:
        A file's ``explorer:`` section re-keyed into the namespace ``/rover1``, as nav2_common's ``RewrittenYaml``
        does; a node ``/rover1/explorer`` then gets its values:

        >>> from uncertain_bo.parameters.files import ParamFile, namespaced_sections, node_parameters
        >>> from uncertain_bo.parameters.rcl_yaml import Section
        >>> shipped = ParamFile('explorer.yaml', (Section('explorer', {'beta': 2.0}), Section('/**', {'seed': 3})))
        >>> [s.key for s in namespaced_sections(shipped, 'rover1', ['explorer']).sections]
        ['/rover1/explorer', '/**']
        >>> node_parameters([namespaced_sections(shipped, 'rover1', ['explorer'])], '/rover1/explorer')
        {'beta': 2.0, 'seed': 3}
    """

    path: str
    sections: tuple[Section, ...]


def file_sections(f: str | Path | ParamFile) -> ParamFile:
    """``f`` read (:func:`read_param_file`) unless it already is a :class:`ParamFile`.

    Raises:
        ParameterError: see :func:`read_param_file`.
    """
    return f if isinstance(f, ParamFile) else ParamFile(str(f), tuple(read_param_file(f)))


def namespaced_sections(f: str | Path | ParamFile, namespace: str, nodes: Iterable[str]) -> ParamFile:
    """``f`` with its sections keyed by one of the bare node names ``nodes`` (``explorer:``, ``/explorer:``)
    re-keyed ``/<namespace>/<node>`` (as nav2_common's ``RewrittenYaml(root_key=...)`` does), every other section
    (``/**``, already qualified names, other nodes) as it is; lines and the file's name kept.

    Raises:
        ParameterError: see :func:`read_param_file`.
    """
    f = file_sections(f)
    ns, nodes = namespace.strip('/'), set(nodes)
    if not ns:
        return f
    return ParamFile(f.path, tuple(Section(f'/{ns}/{s.key.lstrip("/")}', s.parameters, s.line, s.lines)
                                   if s.key.lstrip('/') in nodes else s for s in f.sections))


def merged_sections(files: Sequence[str | Path | ParamFile]) -> list[Section]:
    """The sections of several files merged as rcl merges them (one rcl_params_t for every ``--params-file``):
    a key keeps the place where it first appeared, later files overwrite its values.

    Raises:
        ParameterError: a file cannot be read (:func:`read_param_file`).
    """
    merged: dict[str, Section] = {}
    for f in files:
        for s in file_sections(f).sections:
            m = merged.setdefault(s.key, Section(s.key, line=s.line))
            m.parameters.update(s.parameters)
    return list(merged.values())


def absolute_name(node: str) -> str:
    """A node name as a fully qualified one: ``'explorer'`` -> ``'/explorer'``; ``'/ns/explorer'`` unchanged."""
    return node if node.startswith('/') else '/' + node


def node_parameters(files: Sequence[str | Path], node: str) -> dict[str, Any]:
    """What a node gets from several parameter files, as rclpy gives it its overrides.

    Args:
        files: parameter files, in command-line order.
        node: the node's fully qualified name (``/rover1/explorer``); a bare name means the root namespace.

    Returns:
        name -> value: every matching section (:func:`section_applies`) of :func:`merged_sections`, in order.

    Raises:
        ParameterError: a file cannot be read.
    """
    fqn = absolute_name(node)
    out: dict[str, Any] = {}
    for s in merged_sections(files):
        if section_applies(s.key, fqn):
            out.update(s.parameters)
    return out


def declared_parameters(files: Sequence[str | Path | ParamFile], node: str, names: Iterable[str]) -> dict[str, Any]:
    """What a node that declares ``names`` takes from several parameter files.

    rclpy ignores an override the node does not declare, so a wildcard section (``/**``, ``/*``,
    ``/**/explorer``-like patterns) may hold other nodes' parameters. This is :func:`node_parameters` less the
    undeclared names that only such sections set; an undeclared name in a section that names this node (a
    misspelling, ``serch_bounds``) is kept for the caller's validation to report.

    Args:
        files: parameter files, in command-line order.
        node: the node's fully qualified name (a bare name: the root namespace).
        names: the parameters the node declares.

    Raises:
        ParameterError: a file cannot be read.
    """
    fqn = absolute_name(node)
    declared = set(names)
    out: dict[str, Any] = {}
    for s in merged_sections(files):
        if not section_applies(s.key, fqn):
            continue
        own = names_node(s.key, fqn)
        out.update({k: v for k, v in s.parameters.items() if own or k in declared})
    return out


def names_node(key: str, node_fqn: str) -> bool:
    """Whether the section ``key`` names the node ``node_fqn`` itself (its last token is the node's name:
    ``explorer``, ``/rover1/explorer``, ``/**/explorer``) rather than every node (``/**``, ``/*``, ``/rover1/*``).
    Only such a section's names are the node's own: a wildcard section may hold other nodes' parameters."""
    return key.rstrip('/').rsplit('/', 1)[-1] == node_fqn.rstrip('/').rsplit('/', 1)[-1]


def is_ros_parameter(name: str) -> bool:
    """Whether ``name`` is one of rclpy's own parameters (:data:`ROS_PARAMETERS`, ``qos_overrides.*``)."""
    return name in ROS_PARAMETERS or name.startswith(ROS_PARAMETER_PREFIXES)


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` most likely misspells (difflib's closest, similarity >= 0.6), or None."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass(frozen=True)
class UnknownParameter:
    """A parameter a node is given that it does not declare.

    Attributes:
        name: the parameter's name.
        node: the node's fully qualified name.
        source: where it was given: a parameter file, or ``'the command line'`` (``-p NAME:=VALUE``).
        closest: the node's parameter it most likely misspells, or None.
        line: its line in the file (0: not from a file).
        renamed: the node's parameter it was renamed to (:data:`~uncertain_bo.parameters.specs.RENAMED_PARAMETERS`), or
            None.

    Example:
        >>> from uncertain_bo.parameters.files import UnknownParameter
        >>> print(UnknownParameter.of('serch_bounds', '/explorer', 'robot.yaml', ['search_bounds', 'beta'], line=4))
        robot.yaml line 4: 'serch_bounds' is not a parameter of node /explorer (did you mean 'search_bounds'?)
        >>> print(UnknownParameter.of('frame_id', '/explorer', 'robot.yaml', ['global_frame']))
        parameter 'frame_id' was renamed to 'global_frame' (node /explorer, robot.yaml): use the new name there
    """

    name: str
    node: str
    source: str
    closest: str | None = None
    line: int = 0
    renamed: str | None = None

    @classmethod
    def of(cls, name: str, node: str, source: str, known: Iterable[str], line: int = 0) -> 'UnknownParameter':
        """``name``, given to ``node`` (which declares ``known``) at ``source`` (``line``), with the name it was
        renamed to, else the one it most likely misspells."""
        known = list(known)
        renamed = renamed_parameter(name, known)
        return cls(name, node, source, None if renamed else closest_name(name, known), line, renamed)

    def __str__(self) -> str:
        where = f'{self.source} line {self.line}' if self.line else self.source
        if self.renamed:
            return f'{renamed_message(self.name, self.renamed)} (node {self.node}, {where}): use the new name there'
        hint = f' (did you mean {self.closest!r}?)' if self.closest else ''
        return f'{where}: {self.name!r} is not a parameter of node {self.node}{hint}'


def unknown_parameters(files: Sequence[str | Path | ParamFile], node: str,
                       known: Iterable[str]) -> list[UnknownParameter]:
    """Every parameter that a section naming ``node`` (:func:`names_node`) sets in ``files`` and the node does
    not declare, in file order: a misspelling (``max_measurement``) that rcl would hand over and rclpy silently
    ignore. Wildcard sections (``/**``) are not judged (they may hold other nodes' parameters), nor rclpy's own
    parameters (:func:`is_ros_parameter`).

    Args:
        files: parameter files (each reported under its own name).
        node: the node's fully qualified name (a bare name: the root namespace).
        known: the parameters the node declares.

    Raises:
        ParameterError: a file cannot be read (:func:`read_param_file`).
    """
    fqn = absolute_name(node)
    known = list(known)
    out = []
    for f in map(file_sections, files):
        for s in f.sections:
            if not (section_applies(s.key, fqn) and names_node(s.key, fqn)):
                continue
            out += [UnknownParameter.of(k, fqn, f.path, known, s.lines.get(k, s.line))
                    for k in s.parameters if k not in known and not is_ros_parameter(k)]
    return out


def section_applies(key: str, node_fqn: str) -> bool:
    """Whether a parameter-file section ``key`` applies to the node ``node_fqn`` (``/ns/name``), as rcl
    matches them: ``/**`` applies to every node, ``*`` stands for one name token, ``**`` for any number
    of them, and a key without a leading ``/`` is absolute all the same (``explorer`` is ``/explorer``,
    which a node in a namespace does not match)."""
    if key == '/**':
        return True
    want = [t for t in ('/' + key.lstrip('/')).split('/') if t]
    have = [t for t in node_fqn.split('/') if t]

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(have)
        if want[i] == '**':
            return any(match(i + 1, k) for k in range(j, len(have) + 1))
        return j < len(have) and fnmatch.fnmatchcase(have[j], want[i]) and match(i + 1, j + 1)

    return match(0, 0)


def unknown_sections(files: Sequence[str | Path], known: Iterable[str]) -> list[tuple[str, str]]:
    """``(file, section)`` of every section of ``files`` that applies to none of the nodes ``known``
    (fully qualified names such as ``/explorer``): a misspelt node name (``explorerr``) or a bare name
    under a namespace, whose values would silently not be applied.

    Raises:
        ParameterError: a file cannot be read (see :func:`read_param_file`).
    """
    known = list(known)
    out = []
    for f in files:
        for s in read_param_file(f):
            if not any(section_applies(s.key, fqn) for fqn in known):
                out.append((str(f), s.key))
    return out

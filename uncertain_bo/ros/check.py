"""``uncertain-bo check PARAMS.yaml``: validate a robot's parameter file without starting anything.

The file is read as rcl reads it (:mod:`uncertain_bo.param_files`: launch_ros's ``!!python/tuple`` lists, ``/**``
wildcards, namespaced and nested section keys), and every section that names one of the package's nodes
(explorer, pure_pursuit, sim_rover, ekf, particle_filter, field_sensor, sensor_covariance;
:data:`uncertain_bo.ros.nodes.NODES`), or whose parameters are all one such node's (a node started under another
name, ``-r __node:=navsat_covariance``), is resolved as rclpy would give that node its overrides and validated
against the node's own parameter specs (types, ranges, choices, unknown names with a suggestion) and
cross-checks (``search_bounds`` order, a field file that loads, a usable ``run_dir``). Then the checks that
concern a mission rather than one value:

- the explorer's ``reading_type`` against the type a simulated sensor in the same file publishes on the same
  ``reading`` topic (an error: the explorer would never receive a reading);
- a header-less ``std_msgs/Float64`` probe without ``reading_noise_std`` (warning: the GP learns the noise alone);
- ``execution_noise_std`` against ``search_bounds`` (warning: a robust objective nearly flat over the area);
- the sensor noise against ``reading_range`` (warning: readings mostly noise, or a range too narrow);
- ``search_bounds`` against a simulated field's extent in the same file (an error);
- an empty file, and sections of no node of the package (warnings; a shared file may hold other packages'
  nodes, e.g. robot_localization's ``ekf_filter_node``).

A mistake is :class:`~uncertain_bo.parameters.ParameterError` (the command prints one ``error:`` line and exits
2); the command creates no file or folder. ``uncertain-bo demo --params`` runs the same checks before anything
starts (:func:`check_graph`).
"""
from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..parameters import ParameterError, validate
from ..param_files import Section, declared_parameters, no_parameters_warning, read_param_file, section_applies
from .nodes import NODES

__all__ = ['NodeCheck', 'CheckResult', 'check_parameter_files', 'check_node_values', 'mission_warnings',
           'check_graph', 'add_parser']

#: nodes that publish readings on ``reading`` (simulated sensors) -> their noise-std parameter
SENSOR_NOISE = {'sim_rover': 'reading_noise_std', 'field_sensor': 'noise_std'}
#: a warning when the execution-noise std exceeds this share of the search area's shorter side
EXECUTION_NOISE_SHARE = 0.25
#: a warning when the reading-noise std exceeds this share of reading_range's width
READING_NOISE_SHARE = 0.25
#: parameters every node has (rclpy's)
BUILT_IN = ('use_sim_time', 'start_type_description_service')


@dataclass
class NodeCheck:
    """One node as the file configures it.

    Attributes:
        node: the package's node (:data:`~uncertain_bo.ros.nodes.NODES` key).
        fqn: the fully qualified name the file's sections were resolved for (``/rover1/explorer``).
        given: what the file sets for it (after rcl's merge of every matching section), validated.
        values: every parameter of the node (``given`` over the defaults), validated.
    """

    node: str
    fqn: str
    given: dict[str, Any]
    values: dict[str, Any]


@dataclass
class CheckResult:
    """What :func:`check_parameter_files` found: the nodes, the warnings and the sections it did not check."""

    files: list[str]
    nodes: list[NodeCheck] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)


def _split(key: str) -> tuple[str, str]:
    """Section key -> (namespace, node token): ``'/rover1/explorer'`` -> ``('/rover1', 'explorer')``."""
    tokens = [t for t in key.strip('/').split('/') if t]
    if not tokens:
        return '', ''
    return ('/' + '/'.join(tokens[:-1])) if len(tokens) > 1 else '', tokens[-1]


def _is_pattern(token: str) -> bool:
    return any(c in token for c in '*?[')


def _fqn(namespace: str, node: str) -> str:
    return f"{namespace.rstrip('/')}/{node}" if namespace.strip('/') else f'/{node}'


def _known_somewhere(name: str, specs: Mapping[str, Mapping[str, Any]]) -> bool:
    return name in BUILT_IN or any(name in s for s in specs.values())


def check_parameter_files(files: Sequence[str | Path], *, namespace: str | None = None,
                          base_files: Sequence[str | Path] = ()) -> CheckResult:
    """Validate parameter files for the package's nodes, as those nodes would receive them.

    Args:
        files: the files to check (command-line order: later files win, as with several ``--params-file``).
        namespace: the namespace the nodes will run in (``/rover1``); None: as the sections name it (a bare
            ``explorer:`` is ``/explorer``).
        base_files: files applied before ``files`` (e.g. the shipped config/sim.yaml for ``demo``); their
            values count as defaults, not as what ``files`` set.

    Returns:
        :class:`CheckResult`.

    Raises:
        ParameterError: a file cannot be read or rcl would refuse it, a value is invalid, a name is not a
            parameter of its node, a section meant for a node does not reach it, or two nodes disagree in a way
            that breaks the mission (see the module docstring). The message names the file, node and parameter.
    """
    files = [str(f) for f in files]
    result = CheckResult(files)
    sections: list[tuple[str, Section]] = []
    for f in files:
        found = read_param_file(f)
        if not found:
            result.warnings.append(no_parameters_warning(f))
        sections += [(f, s) for s in found]
    specs = {name: {p.name: p for p in entry.parameter_specs()} for name, entry in NODES.items()}
    targets: dict[str, str] = {}   # fqn -> node
    wildcards = []
    for f, s in sections:
        ns, token = _split(s.key)
        if token in NODES and not _is_pattern(ns):
            fqn = _fqn(ns, token)
            if namespace is not None and not section_applies(s.key, _fqn(namespace, token)):
                raise ParameterError(
                    f"{f}: section {s.key!r} does not reach the node {_fqn(namespace, token)} (namespace "
                    f"{namespace}): key it {_fqn(namespace, token)!r} or '/**/{token}'")
            if namespace is not None:
                fqn = _fqn(namespace, token)
            if _foreign(s, specs[token]):
                result.not_checked.append(f"{f}: section {s.key!r} (most of its parameters are not uncertain_bo's "
                                          f"{token}'s: another package's node?)")
                continue
            targets.setdefault(fqn, token)
        elif token in NODES or _is_pattern(token) or s.key in ('/**', '/*'):
            wildcards.append((f, s))
        else:
            close = difflib.get_close_matches(token, NODES, n=1, cutoff=0.8)
            if close:
                raise ParameterError(f'{f}: section {s.key!r} names no node of uncertain_bo; did you mean '
                                     f'{close[0]!r}? (nodes: {", ".join(NODES)})')
            renamed = _renamed_node(s, specs)
            if renamed and not _is_pattern(ns):
                targets.setdefault(_fqn(namespace if namespace is not None else ns, token), renamed)
                continue
            result.not_checked.append(f'{f}: section {s.key!r} (not a node of uncertain_bo)')
    for f, s in wildcards:
        for name in NODES:
            fqn = _fqn(namespace or '', name)
            if fqn in targets or name in targets.values() or not section_applies(s.key, fqn):
                continue
            if any(k in specs[name] for k in s.parameters):
                targets[fqn] = name
        for k in s.parameters:
            if not _known_somewhere(k, specs):
                result.warnings.append(f'{f}: section {s.key!r}: {k!r} is a parameter of no node of uncertain_bo '
                                       '(ignored by them)')
    all_files = [*map(str, base_files), *files]
    for fqn, name in targets.items():
        declared = [*specs[name], *BUILT_IN]
        given = declared_parameters(files, fqn, declared)
        merged = declared_parameters(all_files, fqn, declared)
        for k in merged:
            if k not in declared:   # set in a section naming this node: a misspelling
                close = difflib.get_close_matches(k, specs[name], n=3, cutoff=0.6)
                hint = f' (did you mean {", ".join(close)}?)' if close else ''
                raise ParameterError(f"{', '.join(files)}: node {fqn}: {k!r} is not a parameter of {name}{hint}; "
                                     f'see `{name} --help`')
        try:
            values = validate(list(specs[name].values()), merged, allow_unknown=BUILT_IN)
        except ParameterError as exc:
            raise ParameterError(f"{', '.join(files)}: node {fqn}: {exc}") from None
        given = {k: values[k] for k in given if k in values}
        check_node_values(name, values, given, where=f"{', '.join(files)}: node {fqn}")
        result.nodes.append(NodeCheck(name, fqn, given, values))
    by_ns: dict[str, dict[str, NodeCheck]] = {}
    for n in result.nodes:
        by_ns.setdefault(n.fqn.rsplit('/', 1)[0], {})[n.node] = n
    for group in by_ns.values():
        result.warnings += mission_warnings({k: v.values for k, v in group.items()},
                                            {k: set(v.given) for k, v in group.items()})
    return result


def _renamed_node(section: Section, specs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one node of the package that declares every parameter of ``section`` (a node started under another
    name, ``-r __node:=navsat_covariance``), or None."""
    keys = [k for k in section.parameters if k not in BUILT_IN]
    fits = [name for name, spec in specs.items() if keys and all(k in spec for k in keys)]
    return fits[0] if len(fits) == 1 else None


def _foreign(section: Section, specs: Mapping[str, Any]) -> bool:
    """A section named like one of our nodes whose parameters are mostly not that node's, nor misspellings of
    them (robot_localization's ``ekf:``, say)."""
    keys = [k for k in section.parameters if k not in BUILT_IN]
    ours = [k for k in keys if k in specs or difflib.get_close_matches(k, specs, n=1, cutoff=0.8)]
    return 2 * len(ours) < len(keys)


def check_node_values(node: str, values: Mapping[str, Any], given: Mapping[str, Any] | None = None, *,
                      where: str = '') -> None:
    """Cross-checks of one node's validated values (what each value alone cannot show).

    Args:
        node: the package's node.
        values: every parameter, validated.
        given: the parameters a user set (fields are loaded only when ``field``/``field_extent`` are among them;
            None: always).
        where: prefix of the error message (file and node).

    Raises:
        ParameterError: ``search_bounds`` or ``reading_range`` out of order, a field that cannot be loaded, a
            ``run_dir`` that is a file.
    """
    prefix = f'{where}: ' if where else ''
    if node == 'explorer':
        from ..explorer.parameters import check_explorer_parameters
        from ..user_errors import UsageError, check_run_dir
        reason = check_explorer_parameters(values)
        if reason:
            raise ParameterError(prefix + reason)
        if values.get('run_dir'):
            try:
                check_run_dir(values['run_dir'], "parameter 'run_dir'")
            except UsageError as exc:
                raise ParameterError(prefix + str(exc)) from None
    if node in ('sim_rover', 'field_sensor') and (given is None or {'field', 'field_extent'} & set(given)):
        from ..sim.field import Field, FieldError
        try:
            Field.load(values['field'], extent=values['field_extent'])
        except FieldError as exc:
            raise ParameterError(prefix + str(exc)) from None


def mission_warnings(values: Mapping[str, Mapping[str, Any]],
                     given: Mapping[str, set[str]] | None = None, *, field_bounds: bool = True) -> list[str]:
    """Checks across the nodes of one mission (one namespace).

    Args:
        values: node -> its validated parameters (only the nodes present).
        given: node -> the names a user set (for the reading type: a simulated sensor follows the explorer's
            type unless both are set; None: all set).
        field_bounds: check ``search_bounds`` against sim_rover's ``field_extent`` (``demo`` checks them
            against the loaded field itself).

    Returns:
        Warnings (one line each).

    Raises:
        ParameterError: the explorer's ``reading_type`` differs from the type a simulated sensor publishes on
            the same topic (both set), or ``search_bounds`` leave a simulated field's extent.
    """
    out = []
    explorer = values.get('explorer')
    if explorer is None:
        return out
    for sensor in SENSOR_NOISE:
        if sensor in values and explorer['reading_type'] != values[sensor]['reading_type']:
            both = given is None or all('reading_type' in given.get(n, set()) for n in ('explorer', sensor))
            if both:
                raise ParameterError(
                    f"reading_type is {values[sensor]['reading_type']!r} for {sensor} but "
                    f"{explorer['reading_type']!r} for explorer: both use the topic 'reading', so the explorer "
                    'would receive no reading; set it once, for explorer')
    if 'sim_rover' in values and field_bounds:
        from .launch_args import bounds_outside
        reason = bounds_outside(explorer['search_bounds'], values['sim_rover']['field_extent'],
                                "sim_rover's field_extent")
        if reason and (given is None or 'search_bounds' in given.get('explorer', set())):
            raise ParameterError(reason)
    xmin, xmax, ymin, ymax = explorer['search_bounds']
    side = min(xmax - xmin, ymax - ymin)
    std = max(explorer['execution_noise_std'])
    if std > EXECUTION_NOISE_SHARE * side:
        out.append(f"explorer: execution_noise_std {explorer['execution_noise_std']} m is more than "
                   f'{EXECUTION_NOISE_SHARE:g} of the search area\'s shorter side ({side:g} m): the robust '
                   'objective is nearly flat over search_bounds; check the units (m) and the bounds')
    if explorer['reading_type'] == 'float64' and explorer['reading_noise_std'] == 0:
        out.append('explorer: reading_type float64 (std_msgs/Float64) carries no variance and reading_noise_std '
                   "is 0: set reading_noise_std to the sensor's noise std (field units), else the GP learns "
                   'the noise alone')
    low, high = explorer['reading_range']
    noises = {'explorer reading_noise_std': explorer['reading_noise_std'],
              **{f'{s} {p}': values[s][p] for s, p in SENSOR_NOISE.items() if s in values}}
    for what, noise in noises.items():
        if noise > READING_NOISE_SHARE * (high - low):
            out.append(f'{what} = {noise:g} is more than {READING_NOISE_SHARE:g} of explorer reading_range '
                       f'{[low, high]}: the readings would be mostly noise, or reading_range is too narrow '
                       '(readings outside it are rejected)')
    return out


def check_graph(params: dict[str, dict[str, Any]]) -> list[str]:
    """The checks of ``check`` for the simulated graph's validated parameters (``uncertain-bo demo``), before
    anything starts or is written.

    Returns:
        Warnings.

    Raises:
        ParameterError: see :func:`check_node_values` and :func:`mission_warnings`.
    """
    for node, values in params.items():
        check_node_values(node, values, given={})   # the field is loaded by demo itself
    return mission_warnings(params, field_bounds=False)


# ----------------------------------------------------------------------------- command line
def add_parser(sub) -> None:
    p = sub.add_parser(
        'check', help="validate a robot's ROS 2 parameter file without starting anything",
        description='Read PARAMS.yaml as rcl reads it (launch_ros tuples, /** wildcards, namespaced keys), '
                    'validate every section of the package\'s nodes (explorer, pure_pursuit, sim_rover, ekf, '
                    'particle_filter, field_sensor) against their parameters, print the values each node gets and '
                    'the warnings that matter (reading type vs the topic\'s publisher, execution noise vs '
                    'search_bounds, sensor noise vs reading_range, an empty file, sections of other packages). '
                    'Exit 0 when usable, 2 with one error line otherwise. Writes nothing.')
    p.add_argument('params', nargs='+', type=Path, metavar='PARAMS.yaml',
                   help='parameter file(s), in --params-file order (later files win)')
    p.add_argument('--namespace', default=None, metavar='NS',
                   help='namespace the nodes run in (e.g. /rover1): sections must reach /NS/<node>')
    p.add_argument('--all', action='store_true', help='print every parameter, not only those the file sets')
    p.set_defaults(func=_cli)


def _cli(args) -> int:
    ns = None if args.namespace is None else '/' + args.namespace.strip('/')
    result = check_parameter_files(args.params, namespace=ns)
    lines = []
    for n in result.nodes:
        shown = n.values if args.all else n.given
        lines.append(f'{n.fqn} ({n.node}): {len(n.given)} set by the file, '
                     f'{len(n.values) - len(n.given)} at their defaults')
        lines += [f'  {k} = {v!r}' + ('' if k in n.given else '   (default)') for k, v in shown.items()]
    for text in result.not_checked:
        lines.append(f'not checked: {text}')
    if lines:
        print('\n'.join(lines))
    for w in result.warnings:
        print(f'warning: {w}', file=sys.stderr)
    names = ', '.join(n.fqn for n in result.nodes) or 'none of the package'
    print(f"ok: {', '.join(result.files)}: nodes {names}; {len(result.warnings)} warning(s)")
    return 0

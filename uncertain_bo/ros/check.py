"""``uncertain-bo check PARAMS.yaml``: validate a robot's parameter file without starting anything.

The file is read as rcl reads it (:mod:`uncertain_bo.parameters.rcl_yaml`: launch_ros's ``!!python/tuple`` lists,
``/**`` wildcards, namespaced and nested section keys), and every section that names one of the package's nodes
(explorer, pure_pursuit, sim_rover, ekf, particle_filter, field_sensor, sensor_covariance;
:data:`uncertain_bo.ros.nodes.NODES`), or whose parameters are all one such node's (a node started under another
name, ``-r __node:=navsat_covariance``), is resolved as rclpy would give that node its overrides and validated
against the node's own parameter specs (types, ranges, choices, unknown names with the closest known one) and
the cross-checks the node itself runs at start-up (:func:`check_node_values`: ``search_bounds`` order and area, a
team's ``rovers``, a field file that loads, a ``run_dir`` that can be written, ``goal_interface: nav2_action`` where
nav2_msgs is installed). Then the checks that concern a mission rather than one value:

- the explorer's ``reading_type`` against the type a simulated sensor in the same file publishes on the same
  ``reading`` topic (an error: the explorer would never receive a reading);
- a header-less ``std_msgs/Float64`` probe without ``reading_noise_std`` (warning: the GP learns the noise alone);
- ``execution_noise_std`` against ``search_bounds`` (warning: a robust objective nearly flat over the area);
- the sensor noise against ``reading_range`` (warning: readings mostly noise, or a range too narrow);
- ``search_bounds`` against a simulated field's extent in the same file (an error);
- an empty file, and sections of no node of the package (warnings; a shared file may hold other packages'
  nodes, e.g. robot_localization's ``ekf_filter_node``).

Every mistake is found, not only the first (:attr:`CheckResult.errors`): the command prints one ``error:`` line
for each and exits 2; it creates no file or folder. ``uncertain-bo demo --params`` runs the same checks before
anything starts (its one ``error:`` line holds them all; :func:`check_graph`), and the launch files run
:func:`check_node_parameters` on what each node they start gets.
"""
from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..registries import node_specs
from ..parameters.run_area import bounds_outside
from ..parameters.specs import ParameterError, defaults, renamed_parameter
from ..parameters.files import (ROS_PARAMETERS, ParamFile, UnknownParameter, absolute_name, declared_parameters,
                                file_sections, is_ros_parameter, section_applies, unknown_parameters)
from ..parameters.rcl_yaml import Section, no_parameters_warning, read_param_file
from ..user_errors import EXIT_USAGE, report
from .nodes import NODES

__all__ = ['NodeCheck', 'CheckResult', 'check_rovers', 'check_parameter_files', 'check_node_parameters',
           'check_node_values', 'node_value_problems', 'mission_warnings', 'check_graph', 'add_parser']

#: nodes that publish readings on ``reading`` (simulated sensors) -> their noise-std parameter
SENSOR_NOISE = {'sim_rover': 'reading_noise_std', 'field_sensor': 'noise_std'}
#: a warning when the execution-noise std exceeds this share of the search area's shorter side
EXECUTION_NOISE_SHARE = 0.25
#: a warning when the reading-noise std exceeds this share of reading_range's width
READING_NOISE_SHARE = 0.25


_NAMESPACE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$')


def check_rovers(rovers: list[str]) -> str | None:
    """None if ``rovers`` are distinct, valid relative namespaces, else the reason."""
    for name in rovers:
        if not _NAMESPACE.match(name):
            return (f"parameter 'rovers': {name!r} is not a valid namespace (letters, digits, '_', "
                    "'/'-separated, no leading '/' or digit)")
    if len(set(rovers)) != len(rovers):
        return f"parameter 'rovers' = {rovers} names a rover twice"
    return None


@dataclass
class NodeCheck:
    """One node as the file configures it.

    Attributes:
        node: the package's node (:data:`~uncertain_bo.ros.nodes.NODES` key).
        fqn: the fully qualified name the file's sections were resolved for (``/rover1/explorer``).
        given: what the file sets for it (after rcl's merge of every matching section), validated.
        values: every parameter of the node (``given`` over the defaults), validated.
        problems: what the node would refuse at start-up (one line each); empty when it would start.

    Example:
        A rover's explorer section, as the node would receive it:

        >>> import pathlib, tempfile
        >>> from uncertain_bo.ros.check import check_parameter_files
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / 'rover.yaml'
        ...     _ = path.write_text('/rover1/explorer:\\n  ros__parameters:\\n    max_measurements: 12\\n')
        ...     (explorer,) = check_parameter_files([path]).nodes
        >>> explorer.fqn, explorer.given, explorer.values['max_measurements'], explorer.problems
        ('/rover1/explorer', {'max_measurements': 12}, 12, [])
    """

    node: str
    fqn: str
    given: dict[str, Any]
    values: dict[str, Any]
    problems: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    """What :func:`check_parameter_files` found: the nodes, the errors (one line each), the warnings and the
    sections it did not check.

    Example:
        A misspelled parameter is an error naming the closest parameter; :meth:`raise_errors` raises them as one line:

        >>> import pathlib, tempfile
        >>> from uncertain_bo.ros.check import check_parameter_files
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = pathlib.Path(folder) / 'rover.yaml'
        ...     _ = path.write_text('explorer:\\n  ros__parameters:\\n    measurements: 12\\n')
        ...     result = check_parameter_files([path])
        >>> print(result.errors[0].split(': ', 1)[1])
        'measurements' is not a parameter of node /explorer (did you mean 'max_measurements'?)
        >>> result.raise_errors()
        Traceback (most recent call last):
        ...
        uncertain_bo.parameters.specs.ParameterError: ... (did you mean 'max_measurements'?)
    """

    files: list[str]
    nodes: list[NodeCheck] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def raise_errors(self) -> 'CheckResult':
        """Raise the errors as one :class:`~uncertain_bo.parameters.specs.ParameterError` (one line, every error); else
        return self."""
        if self.errors:
            raise ParameterError('; '.join(self.errors))
        return self


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
    return is_ros_parameter(name) or any(name in s for s in specs.values())


def check_parameter_files(files: Sequence[str | Path], *, namespace: str | None = None,
                          base_files: Sequence[str | Path] = ()) -> CheckResult:
    """Validate parameter files for the package's nodes, as those nodes would receive them, and find every
    problem (not only the first).

    Args:
        files: the files to check (command-line order: later files win, as with several ``--params-file``).
        namespace: the namespace the nodes will run in (``/rover1``); None: as the sections name it (a bare
            ``explorer:`` is ``/explorer``).
        base_files: files applied before ``files`` (e.g. the shipped config/sim.yaml for ``demo``); their
            values count as defaults, not as what ``files`` set.

    Returns:
        :class:`CheckResult`; its ``errors`` (one line each, naming the file, node and parameter) are every file
        that cannot be read or that rcl would refuse, every name that is not a parameter of its node, every invalid
        value, a section meant for a node that does not reach it, a node's cross-checks (the ones the node runs at
        start-up: :func:`check_node_values`), and two nodes that disagree in a way that breaks the mission (see the
        module docstring). :meth:`CheckResult.raise_errors` raises them as one.
    """
    files = [str(f) for f in files]
    result = CheckResult(files)
    sections: list[tuple[str, Section]] = []
    readable = []
    for f in files:
        try:
            found = read_param_file(f)
        except ParameterError as exc:
            result.errors.append(str(exc))
            continue
        readable.append(ParamFile(f, tuple(found)))
        if not found:
            result.warnings.append(no_parameters_warning(f))
        sections += [(f, s) for s in found]
    specs = {name: {p.name: p for p in node_specs(name)} for name in NODES}
    targets: dict[str, str] = {}   # fqn -> node
    wildcards = []
    for f, s in sections:
        ns, token = _split(s.key)
        if token in NODES and not _is_pattern(ns):
            fqn = _fqn(ns, token)
            if namespace is not None and not section_applies(s.key, _fqn(namespace, token)):
                result.errors.append(
                    f"{f}: section {s.key!r} does not reach the node {_fqn(namespace, token)} (namespace "
                    f"{namespace}): key it {_fqn(namespace, token)!r} or '/**/{token}'")
                continue
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
                result.errors.append(f'{f}: section {s.key!r} names no node of uncertain_bo; did you mean '
                                     f'{close[0]!r}? (nodes: {", ".join(NODES)})')
                continue
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
    try:
        base = [file_sections(f) for f in base_files]
    except ParameterError as exc:
        result.errors.append(str(exc))
        return result
    for fqn, name in targets.items():
        checked = check_node_parameters(name, fqn, [*base, *readable], given_files=readable)
        result.errors += checked.problems
        if not checked.problems:
            result.nodes.append(checked)
    by_ns: dict[str, dict[str, NodeCheck]] = {}
    for n in result.nodes:
        by_ns.setdefault(n.fqn.rsplit('/', 1)[0], {})[n.node] = n
    for group in by_ns.values():
        try:
            result.warnings += mission_warnings({k: v.values for k, v in group.items()},
                                                {k: set(v.given) for k, v in group.items()})
        except ParameterError as exc:
            result.errors.append(str(exc))
    return result


def check_node_parameters(node: str, fqn: str, parameters: Sequence[str | Path | ParamFile | Mapping[str, Any]], *,
                          given_files: Sequence[str | Path | ParamFile] | None = None) -> NodeCheck:
    """Every problem of what one node of the package gets: the parameter list a launch file hands it (files in
    order, then dicts of overrides, as ``launch_ros.actions.Node(parameters=...)``) or a check's files.

    Args:
        node: the package's node (:data:`~uncertain_bo.ros.nodes.NODES` key).
        fqn: the node's fully qualified name (which sections reach it; a bare name: the root namespace).
        parameters: parameter files (paths, or :class:`~uncertain_bo.parameters.files.ParamFile` such as a file
            re-keyed into a namespace) and override dicts, later ones winning.
        given_files: the files whose values count as set by the user (:attr:`NodeCheck.given`, with every dict's;
            the messages name them); None: all.

    Returns:
        :class:`NodeCheck` with ``problems``: a file that cannot be read or that rcl would refuse
        (:func:`~uncertain_bo.parameters.rcl_yaml.read_param_file`; then nothing else), every name the node does not
        declare (in a section naming it, or in a dict; with the file, line and closest name), every invalid value,
        then - when every value is valid - the node's own start-up cross-checks (:func:`node_value_problems`: a
        field that loads, a usable ``run_dir``, ...). Nothing is written.
    """
    fqn = absolute_name(fqn)
    specs = {p.name: p for p in node_specs(node)}
    declared = [*specs, *ROS_PARAMETERS]
    try:
        files = [file_sections(e) for e in parameters if not isinstance(e, Mapping)]   # each read once
        user = files if given_files is None else [file_sections(f) for f in given_files]
    except ParameterError as exc:
        return NodeCheck(node, fqn, {}, {}, [str(exc)])
    problems = [str(u) for u in unknown_parameters(files, fqn, declared)]
    merged = declared_parameters(files, fqn, declared)
    dict_names = set()
    for entry in parameters:
        if isinstance(entry, Mapping):
            problems += [str(UnknownParameter.of(k, fqn, 'launch overrides', declared))
                         for k in entry if k not in declared and not is_ros_parameter(k)]
            merged.update(entry)
            dict_names.update(entry)
    given_names = set(declared_parameters(user, fqn, declared)) | dict_names
    where = f"{', '.join(f.path for f in user)}: node {fqn}" if user else f'node {fqn}'
    values = defaults(specs.values())
    for k, v in merged.items():
        if k in specs:
            try:
                values[k] = specs[k].check(v)
            except ParameterError as exc:
                problems.append(f'{where}: {exc}')
        elif k in declared or is_ros_parameter(k):
            values[k] = v
    given = {k: values[k] for k in merged if k in given_names and k in values}
    if not problems:
        problems += node_value_problems(node, values, given, where=where)
    return NodeCheck(node, fqn, given, values, problems)


def _renamed_node(section: Section, specs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The one node of the package that declares every parameter of ``section`` (a node started under another
    name, ``-r __node:=navsat_covariance``), or None."""
    keys = [k for k in section.parameters if not is_ros_parameter(k)]
    fits = [name for name, spec in specs.items() if keys and all(k in spec for k in keys)]
    return fits[0] if len(fits) == 1 else None


def _foreign(section: Section, specs: Mapping[str, Any]) -> bool:
    """A section named like one of our nodes whose parameters are mostly not that node's, nor their old names
    (:data:`~uncertain_bo.parameters.specs.RENAMED_PARAMETERS`) or misspellings of them (robot_localization's ``ekf:``,
    say)."""
    keys = [k for k in section.parameters if not is_ros_parameter(k)]
    ours = [k for k in keys if k in specs or renamed_parameter(k, specs)
            or difflib.get_close_matches(k, specs, n=1, cutoff=0.8)]
    return 2 * len(ours) < len(keys)


def check_node_values(node: str, values: Mapping[str, Any], given: Mapping[str, Any] | None = None, *,
                      where: str = '') -> None:
    """Raise :func:`node_value_problems` (all of them, in one line), if any.

    Raises:
        ParameterError: see :func:`node_value_problems`.
    """
    problems = node_value_problems(node, values, given, where=where)
    if problems:
        raise ParameterError('; '.join(problems))


def node_value_problems(node: str, values: Mapping[str, Any], given: Mapping[str, Any] | None = None, *,
                        where: str = '') -> list[str]:
    """Cross-checks of one node's validated values (what each value alone cannot show, and what this machine
    lacks): the checks the explorer and the team explorer run at start-up themselves (``check_node_values``), so
    that ``check`` and the node agree. Nothing is written.

    Args:
        node: the package's node.
        values: every parameter, validated.
        given: the parameters a user set (fields are loaded only when ``field``/``field_extent`` are among them;
            None: always).
        where: prefix of each message (file and node).

    Returns:
        One line for each problem: ``search_bounds`` (out of order, or of zero area) or ``reading_range`` out of
        order, a team's ``rovers`` invalid or repeated, ``goal_interface: nav2_action`` or ``particle_cloud_type:
        nav2_msgs/msg/ParticleCloud`` where nav2_msgs is not importable, a ``run_dir`` that is a file or cannot be
        written (read-only, a kernel file system such as /proc), a field that cannot be loaded.
    """
    prefix = f'{where}: ' if where else ''
    reasons = []
    if node in ('explorer', 'team_explorer'):
        from ..parameters.explorer_checks import check_explorer_parameters
        from ..user_errors import UsageError, check_run_dir
        from .optional_messages import goal_interface_problem, particle_cloud_problem
        reasons.append(check_explorer_parameters(values))
        if node == 'team_explorer':
            reasons.append(check_rovers(list(values['rovers'])))
        reasons.append(particle_cloud_problem(values))
        if 'goal_interface' in values:
            reasons.append(goal_interface_problem(values['goal_interface']))
        if values.get('run_dir'):
            try:
                check_run_dir(values['run_dir'], "parameter 'run_dir'")
            except UsageError as exc:
                reasons.append(str(exc))
    if node in ('sim_rover', 'field_sensor') and (given is None or {'field', 'field_extent'} & set(given)):
        from ..sim.field import Field, FieldError
        try:
            Field.load(values['field'], extent=values['field_extent'])
        except FieldError as exc:
            reasons.append(str(exc))
    return [prefix + r for r in reasons if r]


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
                    'Exit 0 when usable; otherwise one error line for each problem found (all of them) and exit '
                    '2. Writes nothing.')
    p.add_argument('params', nargs='+', type=Path, metavar='PARAMS.yaml',
                   help='parameter file(s), in --params-file order (later files win)')
    p.add_argument('--namespace', default=None, metavar='NS',
                   help='namespace the nodes run in (e.g. /rover1): sections must reach /NS/<node>')
    p.add_argument('--all', action='store_true', help='print every parameter, not only those the file sets')
    p.set_defaults(func=_cli, uses_torch=False)


def _cli(args) -> int:
    ns = None if args.namespace is None else '/' + args.namespace.strip('/')
    result = check_parameter_files(args.params, namespace=ns)
    if result.errors:   # every problem, one line each
        for text in result.errors:
            report(text)
        return EXIT_USAGE
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

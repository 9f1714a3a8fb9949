"""The package's registries as plain data, so that ``uncertain-bo bench --help`` and ``uncertain-bo check`` answer
without importing torch, BoTorch or rclpy (issue 34).

What a command shows or checks before it runs anything (every node's parameter specs, every method's and benchmark
problem's name and description, a problem's defaults) is declared in the modules that implement it, which import
torch or rclpy. :data:`REGISTRIES` says where each registry lives and how to read it as plain data (names, strings,
numbers, :class:`~uncertain_bo.parameters.specs.Param` fields); :func:`write_snapshot` reads them all once and
writes the result to :data:`SNAPSHOT` (``uncertain_bo/data/registries.json``: ``python -m uncertain_bo.registries``
rewrites it; test/test_registries.py fails while it differs from the registries). A
command asks :meth:`Registry.data`: the registry itself when its module is already imported (a script's
:func:`~uncertain_bo.benchmarks.register_problem`, a test's stand-in) or must be (an installed package declares
problems as entry points), else the snapshot; the implementations are imported only when a run needs them.

Example:
    >>> from uncertain_bo.registries import method_descriptions, node_specs
    >>> 'ugp_ucb' in method_descriptions()
    True
    >>> beta = {p.name: p for p in node_specs('explorer')}['beta']
    >>> beta.allowed()
    'a float in [0, 100]'
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path
from functools import lru_cache
from types import ModuleType
from typing import Any, Callable

from .parameters.specs import Param

__all__ = ['Registry', 'REGISTRIES', 'node_specs', 'method_descriptions', 'problems', 'read_all', 'snapshot',
           'write_snapshot', 'SNAPSHOT']

#: the snapshot: every registry's plain data as JSON (generated: :func:`write_snapshot`)
SNAPSHOT = Path(__file__).resolve().parent / 'data' / 'registries.json'

#: a problem's plain data: what ``bench --help``, ``--list-problems`` and ``--describe`` show
PROBLEM_FIELDS = ('description', 'default_iterations', 'default_seeds', 'default_beta', 'default_methods', 'params')


@dataclasses.dataclass(frozen=True)
class Registry:
    """One registry of the package, readable as plain data without importing its module.

    Attributes:
        key: its name in the snapshot (``'methods'``, ``'problems'``, ``'nodes/explorer'``).
        module: the module whose import fills it.
        read: ``read(module) -> plain data`` (names, strings, numbers, lists and dicts of them).
        must_load: ``() -> bool``: True when the registry may hold more than the snapshot knows without importing
            anything of the package's (an installed package's entry points); None: never.

    Example:
        >>> from uncertain_bo.registries import REGISTRIES
        >>> methods = REGISTRIES['methods']
        >>> methods.module
        'uncertain_bo.acquisition'
        >>> sorted(methods.data())[:3]
        ['airbo', 'airbo_empirical', 'bo_uu_ei']
    """

    key: str
    module: str
    read: Callable[[ModuleType], Any]
    must_load: Callable[[], bool] | None = None

    def data(self) -> Any:
        """The registry's plain data: read from its module when that is imported (or must be), else the
        snapshot's."""
        module = sys.modules.get(self.module)
        if module is None and self.must_load is not None and self.must_load():
            module = importlib.import_module(self.module)
        if module is not None:
            return self.read(module)
        return snapshot()[self.key]

    def load(self) -> Any:
        """The registry's plain data read from its module (imported now)."""
        return self.read(importlib.import_module(self.module))


def _spec_fields(specs) -> list[dict[str, Any]]:
    return [dataclasses.asdict(p) for p in specs]


def _node_registry(name: str, module: str, attribute: str) -> Registry:
    return Registry(f'nodes/{name}', module, lambda m: _spec_fields(getattr(m, attribute)))


def _problems(registry: ModuleType) -> dict[str, dict[str, Any]]:
    out = {}
    for name in registry.problem_names():
        problem = registry.get_problem(name)
        out[name] = {f: getattr(problem, f) for f in PROBLEM_FIELDS}
    return out


def _entry_points_declared() -> bool:
    """An installed package declares problems (``uncertain_bo.problems`` entry points): loading them imports its
    module (and with it the benchmarks)."""
    from importlib.metadata import entry_points
    return bool(entry_points(group='uncertain_bo.problems'))


def _registries() -> dict[str, Registry]:
    from .ros.nodes import NODES     # the node table itself imports nothing heavy

    out = {'methods': Registry('methods', 'uncertain_bo.acquisition',
                               lambda m: {name: m.METHODS[name].description for name in sorted(m.METHODS)}),
           'problems': Registry('problems', 'uncertain_bo.benchmarks.problem_registry', _problems,
                                must_load=_entry_points_declared)}
    for entry in NODES.values():
        out[f'nodes/{entry.name}'] = _node_registry(entry.name, entry.module, entry.specs)
    return out


#: every registry the snapshot holds, by key
REGISTRIES: dict[str, Registry] = _registries()


def node_specs(node: str) -> list[Param]:
    """Every parameter spec the package's node ``node`` declares (:data:`~uncertain_bo.ros.nodes.NODES`), without
    importing its module unless it is imported already.

    Raises:
        KeyError: ``node`` is not a node of the package.
    """
    return [Param(**{**d, 'range': _tuple(d['range']), 'choices': _tuple(d['choices'])})
            for d in REGISTRIES[f'nodes/{node}'].data()]


def _tuple(value):
    return None if value is None else tuple(value)


def method_descriptions() -> dict[str, str]:
    """Every registered method's name -> its one-line description, sorted by name."""
    return REGISTRIES['methods'].data()


def problems() -> dict[str, dict[str, Any]]:
    """Every registered benchmark problem's name -> its :data:`PROBLEM_FIELDS`, sorted by name (an installed
    package's entry points included: reading them imports the benchmarks)."""
    return REGISTRIES['problems'].data()


def read_all() -> dict[str, Any]:
    """Every registry's plain data, read from its module (imports them all: torch, BoTorch, rclpy), as the snapshot
    holds it (JSON: tuples are lists)."""
    return json.loads(json.dumps({key: registry.load() for key, registry in REGISTRIES.items()}))


@lru_cache(maxsize=None)
def snapshot() -> dict[str, Any]:
    """The snapshot's plain data (:data:`SNAPSHOT`), read once."""
    return json.loads(SNAPSHOT.read_text(encoding='utf-8'))


def write_snapshot(path: Path | None = None) -> Path:
    """Write :func:`read_all` to ``path`` (default :data:`SNAPSHOT`) and return the path."""
    path = Path(path) if path is not None else SNAPSHOT
    path.write_text(json.dumps(read_all(), indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
    return path


if __name__ == '__main__':
    print(f'wrote {write_snapshot(Path(sys.argv[1]) if len(sys.argv) > 1 else None)}')

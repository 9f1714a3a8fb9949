"""The optional dependencies: which extra of pyproject.toml brings each optional module, and the one line a command
says when one it needs is missing (instead of an import traceback).

A ``pip install .`` without extras has the library and every command that needs no ROS; ``uncertain-bo demo``,
``check``, ``params``, ``replay`` and the nodes need the ``ros`` extra (or a ROS 2 installation), recordings the
``recording`` extra, Dask clusters ``dask``, GeoTIFF maps ``geo``, the DRBQO cross-validation problems ``bench``.
"""
from __future__ import annotations

__all__ = ['EXTRAS', 'extra_for', 'install_hint', 'missing_dependency']

#: top-level module -> the pyproject.toml extra that installs it (every ``*_msgs`` package: ``ros``)
EXTRAS = {
    'rclpy': 'ros', 'rosidl_runtime_py': 'ros', 'rosbags': 'recording', 'mcap': 'recording',
    'foxglove': 'recording', 'dask': 'dask', 'distributed': 'dask', 'rasterio': 'geo', 'pyproj': 'geo',
    'sklearn': 'bench',
}


def extra_for(module: str | None) -> str | None:
    """The extra that brings ``module`` (a dotted name: its top-level package counts), or None."""
    top = (module or '').split('.')[0]
    return 'ros' if top.endswith('_msgs') else EXTRAS.get(top)


def install_hint(module: str | None) -> str | None:
    """Where ``module`` comes from, in words (``"the ros extra: pip install '.[ros]' from the source tree, or a
    sourced ROS 2 installation"``), or None for a module that is no optional dependency."""
    extra = extra_for(module)
    if extra is None:
        return None
    return f"the {extra} extra: pip install '.[{extra}]' from the source tree" + (
        ', or a sourced ROS 2 installation' if extra == 'ros' else '')


def missing_dependency(exc: ImportError) -> str | None:
    """The one-line message for an ``ImportError`` of an optional dependency (None for any other import error,
    which is a bug to show in full): ``geometry_msgs is not installed; this needs the ros extra: ...``."""
    name = getattr(exc, 'name', None)
    hint = install_hint(name) if isinstance(exc, ModuleNotFoundError) else None
    return None if hint is None else f'{name.split(".")[0]} is not installed; this needs {hint}'

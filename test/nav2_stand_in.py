"""A stand-in ``nav2_msgs`` (``action/NavigateToPose``, ``msg/Particle`` and ``msg/ParticleCloud``) generated and
compiled at test time.

Nav2's message package does not install from PyPI. To test the explorer's ``NavigateToPose`` client against an
action server with the same interface, and its subscription to AMCL's weighted particle cloud, this helper writes
the interface definitions (the fields of ``nav2_msgs/action/NavigateToPose.action`` as Nav2 defines them: goal
``pose``, ``behavior_tree``; result ``error_code`` with its constants and ``error_msg``; feedback ``current_pose``,
``navigation_time``, ``estimated_time_remaining``, ``number_of_recoveries``, ``distance_remaining``,
``position_tracking_error``, ``heading_tracking_error``; ``msg/Particle.msg``: ``geometry_msgs/Pose pose``,
``float64 weight``; ``msg/ParticleCloud.msg``: ``std_msgs/Header header``, ``Particle[] particles``) as ROS IDL,
generates its C, Python and type-support sources with the rosidl
generators that the PyPI ROS wheels ship (``rosidl_generator_c``/``_py``, ``rosidl_typesupport_c``,
``_introspection_c``, ``_fastrtps_c``), and compiles them with the system C/C++ compiler into a cache folder
outside the repository (about 20 s once; reused while the definition and the wheels are unchanged).

:func:`build` returns the folder to put on ``PYTHONPATH`` and the library folder, or raises :class:`Unavailable`
with the reason (no compiler, generators missing) so that a test can skip with it. A process that uses the
type must load the libraries first (:func:`load_libraries`, in-process) or have the library folder on
``LD_LIBRARY_PATH`` from its start (a subprocess): rosidl's type-support dispatch opens them by name.
:func:`navigate_to_pose` does all of it for a test: the action type in this process and the environment a
subprocess needs.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile

__all__ = ['build', 'load', 'load_libraries', 'navigate_to_pose', 'Unavailable', 'NAVIGATE_TO_POSE_IDL',
           'PARTICLE_IDL', 'PARTICLE_CLOUD_IDL']

NAVIGATE_TO_POSE_IDL = '''\
#include "builtin_interfaces/msg/Duration.idl"
#include "geometry_msgs/msg/PoseStamped.idl"

module nav2_msgs {
  module action {
    struct NavigateToPose_Goal {
      geometry_msgs::msg::PoseStamped pose;
      string behavior_tree;
    };
    module NavigateToPose_Result_Constants {
      const uint16 NONE = 0;
      const uint16 GOAL_REJECTED = 1;
      const uint16 SEND_GOAL_FAILURE = 2;
      const uint16 UNKNOWN = 9000;
      const uint16 FAILED_TO_LOAD_BEHAVIOR_TREE = 9001;
      const uint16 TF_ERROR = 9002;
      const uint16 TIMEOUT = 9003;
    };
    struct NavigateToPose_Result {
      uint16 error_code;
      string error_msg;
    };
    struct NavigateToPose_Feedback {
      geometry_msgs::msg::PoseStamped current_pose;
      builtin_interfaces::msg::Duration navigation_time;
      builtin_interfaces::msg::Duration estimated_time_remaining;
      int16 number_of_recoveries;
      float distance_remaining;
      float position_tracking_error;
      float heading_tracking_error;
    };
  };
};
'''

PARTICLE_IDL = '''\
#include "geometry_msgs/msg/Pose.idl"

module nav2_msgs {
  module msg {
    struct Particle {
      geometry_msgs::msg::Pose pose;
      double weight;
    };
  };
};
'''

PARTICLE_CLOUD_IDL = '''\
#include "nav2_msgs/msg/Particle.idl"
#include "std_msgs/msg/Header.idl"

module nav2_msgs {
  module msg {
    struct ParticleCloud {
      std_msgs::msg::Header header;
      sequence<nav2_msgs::msg::Particle> particles;
    };
  };
};
'''

#: interface files of the stand-in: path inside the package -> IDL
_INTERFACES = {'action/NavigateToPose.idl': NAVIGATE_TO_POSE_IDL, 'msg/Particle.idl': PARTICLE_IDL,
               'msg/ParticleCloud.idl': PARTICLE_CLOUD_IDL}

_DEPS = ('builtin_interfaces', 'geometry_msgs', 'std_msgs', 'action_msgs', 'unique_identifier_msgs', 'service_msgs')
_TYPESUPPORTS = ('rosidl_typesupport_c', 'rosidl_typesupport_fastrtps_c', 'rosidl_typesupport_introspection_c')


class Unavailable(RuntimeError):
    """The stand-in cannot be built here (the reason says why)."""


def _cache_root() -> pathlib.Path:
    base = os.environ.get('UNCERTAIN_BO_TEST_CACHE') or os.path.join(tempfile.gettempdir(), 'uncertain_bo_test_cache')
    return pathlib.Path(base)


def build() -> tuple[pathlib.Path, pathlib.Path]:
    """``(python folder, library folder)`` of the stand-in ``nav2_msgs``, built if not cached.

    Raises:
        Unavailable: no C/C++ compiler, or the rosidl generators are not installed.
    """
    prefix = pathlib.Path(sys.prefix)
    for tool in ('gcc', 'g++'):
        if shutil.which(tool) is None:
            raise Unavailable(f'no {tool} to compile the stand-in nav2_msgs')
    if not (prefix / 'share' / 'geometry_msgs' / 'msg' / 'PoseStamped.idl').is_file():
        raise Unavailable(f'no ROS interface definitions under {prefix / "share"}')
    try:
        import rclpy
        key = hashlib.sha256((''.join(_INTERFACES.values()) + sys.version + str(prefix) + rclpy.__file__).encode()
                             ).hexdigest()
    except ImportError as exc:
        raise Unavailable(f'rclpy: {exc}') from None
    out = _cache_root() / f'nav2_msgs-{key[:16]}'
    if (out / 'done').is_file():
        return out / 'python', out / 'lib'
    out.parent.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix='nav2_msgs-', dir=out.parent))
    try:
        _generate_and_compile(prefix, work)
        (work / 'done').write_text('ok\n')
        try:
            work.rename(out)
        except OSError:               # built meanwhile by another process: use that one
            shutil.rmtree(work, ignore_errors=True)
    except Exception:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out / 'python', out / 'lib'


def load(subpackage: str):
    """The stand-in's ``nav2_msgs.<subpackage>`` module (``'msg'``, ``'action'``), built, its libraries loaded.

    Raises:
        Unavailable: as :func:`build`.
    """
    import importlib

    python_dir, lib_dir = build()
    load_libraries(lib_dir)
    sys.path.insert(0, str(python_dir))
    try:
        return importlib.import_module(f'nav2_msgs.{subpackage}')
    finally:
        sys.path.remove(str(python_dir))


def load_libraries(lib: pathlib.Path) -> None:
    """Load the stand-in's libraries into this process, so that rosidl's dispatch finds them by name."""
    for name in ('generator_c', 'typesupport_introspection_c', 'typesupport_fastrtps_c', 'typesupport_c',
                 'generator_py'):
        ctypes.CDLL(str(lib / f'libnav2_msgs__rosidl_{name}.so'), mode=ctypes.RTLD_GLOBAL)


def navigate_to_pose() -> tuple[type, dict[str, str]]:
    """``(NavigateToPose, env)``: the stand-in's action type, importable in this process (:func:`load`), and the
    environment variables (``PYTHONPATH``, ``LD_LIBRARY_PATH``) a subprocess needs to use it.

    Raises:
        Unavailable: as :func:`build`.
    """
    action = load('action')
    python_dir, lib_dir = build()     # built once: the paths of the build load() used
    env = {'PYTHONPATH': os.pathsep.join([str(python_dir), os.environ.get('PYTHONPATH', '')]),
           'LD_LIBRARY_PATH': os.pathsep.join([str(lib_dir), os.environ.get('LD_LIBRARY_PATH', '')])}
    return action.NavigateToPose, env


def _generate_and_compile(prefix: pathlib.Path, work: pathlib.Path) -> None:
    idl_dir = work / 'idl'
    for rel, idl in _INTERFACES.items():
        (idl_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (idl_dir / rel).write_text(idl)
    env_before = os.environ.get('AMENT_PREFIX_PATH')
    os.environ['AMENT_PREFIX_PATH'] = str(prefix)     # the generators look their templates up there
    try:
        from rosidl_generator_c.cli import GenerateC
        from rosidl_generator_py.cli import GeneratePython
        from rosidl_typesupport_c.cli import GenerateCTypesupport
        from rosidl_typesupport_fastrtps_c.cli import GenerateFastRTPSCTypesupport
        from rosidl_typesupport_introspection_c.cli import GenerateIntrospectionCTypesupport
    except ImportError as exc:
        raise Unavailable(f'rosidl generators: {exc}') from None
    gen = work / 'gen'
    files = [f'{idl_dir}:{rel}' for rel in _INTERFACES]
    try:
        for ext, sub in ((GenerateC('c'), 'c'), (GenerateCTypesupport('c'), 'ts_c'),
                         (GenerateIntrospectionCTypesupport('introspection_c'), 'ts_intro'),
                         (GenerateFastRTPSCTypesupport('fastrtps_c'), 'ts_fast'), (GeneratePython('py'), 'py')):
            ext.generate('nav2_msgs', files, [str(prefix / 'share')], gen / sub / 'nav2_msgs')
    finally:
        if env_before is None:
            os.environ.pop('AMENT_PREFIX_PATH', None)
        else:
            os.environ['AMENT_PREFIX_PATH'] = env_before
    import numpy
    inc = [f'-I{gen / d}' for d in ('c', 'ts_c', 'ts_intro', 'ts_fast', 'py')]
    inc += [f'-I{prefix / "include"}'] + [f'-I{p}' for p in sorted((prefix / 'include').iterdir()) if p.is_dir()]
    inc += [f'-I{sysconfig.get_paths()["include"]}', f'-I{numpy.get_include()}']
    lib = work / 'lib'
    lib.mkdir()
    link = [f'-L{prefix / "lib"}', f'-L{lib}', f'-Wl,-rpath,{prefix / "lib"}:{lib}']

    def compile_(out: pathlib.Path, sources, libs, cxx=False) -> None:
        cmd = (['g++', '-std=c++17'] if cxx else ['gcc']) + ['-shared', '-fPIC', '-O1', '-w',
                                                             f'-Wl,-soname,{out.name}']
        cmd += inc + [str(s) for s in sources] + link + [f'-l{x}' for x in libs] + ['-o', str(out)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise Unavailable(f'compiling {out.name} failed: {done.stderr[-2000:]}')

    def sources(sub):
        return sorted((gen / sub).rglob('*.c')) + sorted((gen / sub).rglob('*.cpp'))

    gen_c = [f'{d}__rosidl_generator_c' for d in _DEPS]
    compile_(lib / 'libnav2_msgs__rosidl_generator_c.so', sources('c'), ['rosidl_runtime_c', 'rcutils', *gen_c])
    compile_(lib / 'libnav2_msgs__rosidl_typesupport_introspection_c.so', sources('ts_intro'),
             ['nav2_msgs__rosidl_generator_c', 'rosidl_typesupport_introspection_c',
              *[f'{d}__rosidl_typesupport_introspection_c' for d in _DEPS]])
    compile_(lib / 'libnav2_msgs__rosidl_typesupport_fastrtps_c.so', sources('ts_fast'),
             ['nav2_msgs__rosidl_generator_c', 'rosidl_typesupport_fastrtps_c', 'rosidl_typesupport_fastrtps_cpp',
              'fastcdr', 'rmw', 'rosidl_runtime_c', 'rcutils', *[f'{d}__rosidl_typesupport_fastrtps_c' for d in _DEPS],
              *gen_c], cxx=True)
    compile_(lib / 'libnav2_msgs__rosidl_typesupport_c.so', sources('ts_c'),
             ['nav2_msgs__rosidl_generator_c', 'rosidl_typesupport_c', 'rosidl_runtime_c', 'rcutils', 'rcpputils',
              *[f'{d}__rosidl_typesupport_c' for d in _DEPS]], cxx=True)
    py_src = gen / 'py' / 'nav2_msgs'
    compile_(lib / 'libnav2_msgs__rosidl_generator_py.so', sorted(py_src.rglob('_*_s.c')),
             ['nav2_msgs__rosidl_generator_c', 'nav2_msgs__rosidl_typesupport_c', 'rosidl_runtime_c',
              *[f'{d}__rosidl_generator_py' for d in _DEPS], *gen_c])
    pkg = work / 'python' / 'nav2_msgs'
    shutil.copytree(py_src, pkg, ignore=shutil.ignore_patterns('*.c'))
    (pkg / '__init__.py').touch()
    suffix = sysconfig.get_config_var('EXT_SUFFIX')
    for ts in _TYPESUPPORTS:
        compile_(pkg / f'nav2_msgs_s__{ts}{suffix}', [py_src / f'_nav2_msgs_s.ep.{ts}.c'],
                 ['nav2_msgs__rosidl_generator_py', f'nav2_msgs__{ts}', 'nav2_msgs__rosidl_typesupport_c',
                  'nav2_msgs__rosidl_generator_c', 'rosidl_runtime_c', 'rosidl_typesupport_c'])

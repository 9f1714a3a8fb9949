"""The ``uncertain-bo`` command line: help from the registries, ``--version``, one-line mistakes, and ``demo``'s
checks before anything starts or is written."""
import argparse
import importlib
import re
import subprocess
import sys

import pytest

from uncertain_bo.cli import COMMANDS, main

SUBCOMMANDS = ['demo', 'sim', 'report', 'bench', 'plot', 'export', 'check', 'params']


def run(argv, tmp_path, monkeypatch, capsys):
    """``uncertain-bo ARGV`` in ``tmp_path``: (exit status, stdout, stderr); asserts nothing was created."""
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:          # argparse's --help / --version / mistakes
        code = exc.code
    out, err = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == before, 'the command wrote something'
    assert 'Traceback' not in out + err
    return code, out, err


@pytest.mark.parametrize('argv', [['--help'], *[[c, '--help'] for c in SUBCOMMANDS]], ids=' '.join)
def test_every_help_exits_0_without_side_effects(argv, tmp_path, monkeypatch, capsys):
    code, out, err = run(argv, tmp_path, monkeypatch, capsys)
    assert code == 0 and out.startswith('usage: uncertain-bo') and not err


def test_the_command_table_says_what_each_module_registers():
    """``uncertain-bo --help`` lists the commands from COMMANDS without importing their modules: its names and help
    lines are the ones the modules' ``add_parser`` give."""
    for module in sorted({m for m, _ in COMMANDS.values()}):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).add_parser(sub)
        registered = {action.dest: (module, action.help) for action in sub._choices_actions}
        assert registered == {name: entry for name, entry in COMMANDS.items() if entry[0] == module}


HEAVY_IMPORTS = """
import sys
from uncertain_bo.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print('imported:', *[m for m in ('torch', 'rclpy', 'botorch', 'matplotlib') if m in sys.modules], file=sys.stderr)
"""


def test_top_level_help_and_version_import_neither_torch_nor_rclpy():
    """``uncertain-bo --help`` imported every command's module, torch and BoTorch with them (2-3 s before the first
    line; rclpy too)."""
    for argv in (['--help'], ['--version'], ['frobnicate']):
        out = subprocess.run([sys.executable, '-c', HEAVY_IMPORTS.format(argv=argv)], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0 and out.stderr.splitlines()[-1] == 'imported:', (argv, out.stderr[-1000:])


def test_version(tmp_path, monkeypatch, capsys):
    from uncertain_bo import __version__
    code, out, _ = run(['--version'], tmp_path, monkeypatch, capsys)
    assert code == 0 and out.strip() == f'uncertain-bo {__version__}'


@pytest.mark.parametrize('argv, expect', [
    (['demo', '--measurements', 'abc'], r"argument --measurements: invalid int value: 'abc'"),
    (['demo', '--timeout', '-1'], r"argument --timeout: '-1' is not a number of seconds > 0"),
    (['demo', '--timeout', '0'], r"argument --timeout: '0' is not a number of seconds > 0"),
    (['demo', '--timeout', 'nan'], r"argument --timeout: 'nan' is not a number of seconds > 0"),
    (['demo', '--localiser', 'ukf'], r'argument --localiser: invalid choice'),
    (['bench', '--problem', 'nope', '--out', 'b'], r"argument --problem: invalid choice: 'nope'"),
    (['bench', '--problem', 'rkhs2d'], r'--out is required to run a benchmark'),
    (['bench', '--problem', 'rkhs2d', '--out', 'b', '--n-initial', '0'],
     r"argument --n-initial: '0' is not a int in \[1, 1000\]"),
    (['bench', '--problem', 'rkhs2d', '--out', 'b', '--beta', '1,-2'],
     r"argument --beta: '-2' is not a float in \[0, 100\] or 'theory'"),
    (['bench', '--problem', 'rkhs2d', '--out', 'b', '--restarts', '0'], r"argument --restarts: '0' is not a int in"),
    (['bench', '--problem', 'rkhs2d', '--out', 'b', '--raw-samples', 'many'], r"argument --raw-samples: 'many'"),
    (['bench', '--problem', 'rkhs2d', '--out', 'b', '--refit-every', '-1'], r"argument --refit-every: '-1'"),
    (['frobnicate'], r'invalid choice'),
])
def test_command_line_mistakes_are_one_line(argv, expect, tmp_path, monkeypatch, capsys):
    """argparse used to print its usage and then the error (5 lines); ``demo --timeout -1`` ran an empty mission
    and wrote a journal, a summary and a plot."""
    code, out, err = run(argv, tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith('error: '), err
    assert re.search(expect, lines[0]), lines[0]


def test_demo_help_names_the_default_field_the_demo_runs(tmp_path, monkeypatch, capsys):
    from uncertain_bo.parameters.specs import config_path
    from uncertain_bo.parameters.files import node_parameters
    shipped = node_parameters([config_path('sim.yaml')], 'sim_rover')['field']
    code, out, _ = run(['demo', '--help'], tmp_path, monkeypatch, capsys)
    assert shipped == 'jacksboro-smooth'
    assert f"field (default {shipped!r}" in ' '.join(out.split())


def test_bench_help_lists_every_problem_method_and_field(tmp_path, monkeypatch, capsys):
    from uncertain_bo.acquisition import METHODS
    from uncertain_bo.benchmarks import PROBLEMS
    from uncertain_bo.sim.field import FIELD_NAMES
    code, out, _ = run(['bench', '--help'], tmp_path, monkeypatch, capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line.startswith('  ') and not line.startswith('   ')
              and not line.lstrip().startswith('-')}
    assert set(PROBLEMS) <= listed and set(METHODS) <= listed and set(FIELD_NAMES) <= listed
    assert {p for p in PROBLEMS if p.startswith('drbqo-')} and 'nes-gravity-assist' in listed


def test_bench_lists_and_describes_problems(tmp_path, monkeypatch, capsys):
    from uncertain_bo.benchmarks import PROBLEMS, get_problem
    code, out, _ = run(['bench', '--list-problems'], tmp_path, monkeypatch, capsys)
    assert code == 0 and [line.split(':')[0] for line in out.splitlines()] == sorted(PROBLEMS)
    code, out, _ = run(['bench', '--describe', 'drbqo-logistic'], tmp_path, monkeypatch, capsys)
    p = get_problem('drbqo-logistic')
    assert code == 0 and out.startswith('drbqo-logistic: ')
    assert f'iterations {p.default_iterations}, seeds {p.default_seeds}' in out
    assert f'methods: {p.default_methods}' in out
    assert '    rho = 1.0' in out
    code, out, _ = run(['bench', '--describe', 'rkhs2d'], tmp_path, monkeypatch, capsys)
    assert '    learn_execution_noise = False' in out


@pytest.mark.parametrize('text, expect', [
    ('explorer:\n  ros__parameters:\n    search_bounds: [60.0, 0.0, 0.0, 40.0]\n',
     r"'search_bounds' = \[60.0, 0.0, 0.0, 40.0\] is invalid: need xmax > xmin"),
    ('explorer:\n  ros__parameters:\n    reading_type: float64\nsim_rover:\n  ros__parameters:\n'
     '    reading_type: temperature\n', r"reading_type is 'temperature' for sim_rover but 'float64' for explorer"),
    ('explorer:\n  ros__parameters:\n    serch_bounds: [0.0, 1.0, 0.0, 1.0]\n', r"did you mean 'search_bounds'\?"),
    ('explorer:\n  ros__parameters:\n    arrival_tolerance: 0.5\n',
     r"^error: parameter 'arrival_tolerance' was renamed to 'xy_goal_tolerance'"),
], ids=['reversed bounds', 'reading type', 'unknown key', 'renamed key'])
def test_demo_checks_its_params_before_anything_starts_or_is_written(text, expect, tmp_path, monkeypatch, capsys):
    """A reversed search_bounds used to fail only once the simulation had started, leaving parameters.json; a
    reading type the simulator does not publish ended in an RCLError traceback."""
    pytest.importorskip('rclpy')
    f = tmp_path / 'robot.yaml'
    f.write_text(text)
    code, out, err = run(['demo', '--params', f, '--out', tmp_path / 'run'], tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.startswith('error: ')]
    assert code == 2 and len(lines) == 1 and re.search(expect, lines[0]), err
    assert not (tmp_path / 'run').exists()


def test_demo_warns_about_an_empty_params_file(tmp_path, monkeypatch, capsys, caplog):
    """An empty params file ran silently with the defaults; the warning comes before anything starts (here the
    run then stops at a mistake of its own: --out is a file)."""
    pytest.importorskip('rclpy')
    f = tmp_path / 'empty.yaml'
    f.write_text('')
    blocker = tmp_path / 'a_file'
    blocker.write_text('x')
    code, out, err = run(['demo', '--params', f, '--out', blocker], tmp_path, monkeypatch, capsys)
    assert code == 2 and 'is a file, not a folder' in err
    assert any('has no parameters (empty, or comments only)' in r.getMessage() for r in caplog.records)


def test_demo_reads_a_params_file_as_launch_ros_writes_it(tmp_path, monkeypatch, capsys):
    """``!!python/tuple`` lists and a ``/**`` section (yaml.dump of launch_ros's tuples): demo used to refuse the
    file as "not valid YAML". Here the parameters pass and the run stops at the next check (the field file)."""
    pytest.importorskip('rclpy')
    import yaml
    f = tmp_path / 'launch_params_x'
    f.write_text(yaml.dump({'/**': {'ros__parameters': {'search_bounds': (20.0, 180.0, 20.0, 180.0)}},
                            '/explorer': {'ros__parameters': {'execution_noise_std': (1.0, 1.0)}}},
                           default_flow_style=False))
    code, out, err = run(['demo', '--params', f, '--field', tmp_path / 'nope.npz', '--out', tmp_path / 'run'],
                         tmp_path, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.startswith('error: ')]
    assert code == 2 and len(lines) == 1 and 'nope.npz does not exist' in lines[0], err
    assert not (tmp_path / 'run').exists()


def test_bench_flags_of_explorer_parameters_follow_their_specs(tmp_path, monkeypatch, capsys):
    """bench's --beta, --n-initial, --refit-every, --restarts and --raw-samples take range, help and (where bench
    does not deliberately use the problem's) default from the explorer's parameter specs."""
    import argparse
    from uncertain_bo.benchmarks.cli import EXPLORER_FLAGS, add_parser
    from uncertain_bo.explorer import EXPLORER_PARAMS
    spec = {p.name: p for p in EXPLORER_PARAMS}
    assert set(EXPLORER_FLAGS) <= set(spec)
    code, out, _ = run(['bench', '--help'], tmp_path, monkeypatch, capsys)
    text = ' '.join(out.split())
    for name in ('beta', 'n_initial', 'refit_every', 'num_restarts', 'raw_samples'):
        assert f"the explorer's {name}: {spec[name].allowed()}" in text, name
    sub = argparse.ArgumentParser().add_subparsers()
    add_parser(sub)
    bench = sub.choices['bench']
    assert bench.get_default('restarts') == spec['num_restarts'].default == 10
    assert bench.get_default('raw_samples') == spec['raw_samples'].default == 512
    args = bench.parse_args(['--beta', 'theory, 3', '--n-initial', '1000', '--refit-every', '0'])
    assert (args.beta, args.n_initial, args.refit_every) == ('theory, 3', 1000, 0)


def test_bench_warns_about_explorer_values_its_own_flags_replace():
    """The rover problems take beta, num_restarts, raw_samples and max_measurements from bench's flags (and
    n_initial, refit_every when given): an --explorer-param / --params value for them used to be dropped silently."""
    import argparse
    from uncertain_bo.benchmarks.cli import _flag_overrides
    args = argparse.Namespace(restarts=10, raw_samples=512, n_initial=None, refit_every=4)
    explorer = (('beta', 2.0), ('n_initial', 8), ('refit_every', 4), ('num_restarts', 10), ('raw_samples', 64),
                ('max_measurements', 30), ('travel_weight', 1.0))
    warnings = _flag_overrides(explorer, args, [3.0], 30)
    assert warnings == ['explorer parameter beta=2.0 is not used: bench sets it with --beta (3.0)',
                        'explorer parameter raw_samples=64 is not used: bench sets it with --raw-samples (512)']
    assert _flag_overrides((('beta', 3),), args, [3.0], 30) == []

"""A researcher's own benchmark problem: registered in a script (:func:`register_problem`) or declared by an
installed package (entry-point group ``uncertain_bo.problems``), it runs as the package's own problems do:
parallel runs in worker processes, run files, tables, the command line."""
import doctest
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from uncertain_bo.benchmarks import PROBLEMS, get_problem, problem_registry, register_problem
from uncertain_bo.benchmarks.rkhs2d import RKHS2D

#: a 1-D function with Gaussian input noise, as docs/research.md writes one (small: 3 measurements, 16 samples)
TOY_MODULE = '''
import torch
from uncertain_bo.benchmarks.sampled import RobustProblem, SampledNoiseProblem


def bumps(x):
    """A wide bump at 0.2 and a higher, narrow one at 0.7, which input noise of std 0.05 makes the worse."""
    x = x[..., 0]
    return torch.exp(-(x - 0.2) ** 2 / 0.02) + 1.3 * torch.exp(-(x - 0.7) ** 2 / 0.0008)


class Bumps(SampledNoiseProblem):
    def __init__(self):
        super().__init__(RobustProblem('toy-bumps', bumps, ((0.0,), (1.0,)), {'kind': 'gaussian', 'std': 0.05,
                                                                             'dim': 1}),
                         default_methods='gp_ucb', default_iterations=3, default_seeds=2, default_beta=2.0,
                         n_initial=2, n_model_samples=16)
'''


@pytest.fixture
def registry():
    """The registry as it was before the test (what a test registers is removed)."""
    before = dict(PROBLEMS)
    yield PROBLEMS
    PROBLEMS.clear()
    PROBLEMS.update(before)


def test_the_docstring_example_runs(registry):
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(register_problem, 'register_problem', globs={}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0 and runner.summarize(verbose=False).attempted >= 5


def test_names_and_duplicates_are_checked(registry):
    for bad in ('', 'my problem', 'a/b', '-x', 3):
        with pytest.raises(ValueError, match='use letters, digits'):
            register_problem(bad, RKHS2D)
    with pytest.raises(ValueError, match='must be callable'):
        register_problem('mine', RKHS2D())
    with pytest.raises(ValueError, match="'rkhs2d' is already registered .*replace=True"):
        register_problem('rkhs2d', lambda: RKHS2D())
    register_problem('mine', RKHS2D)
    register_problem('mine', RKHS2D)                   # the same factory again (a module imported twice): fine
    register_problem('mine', lambda: RKHS2D(), replace=True)
    assert isinstance(get_problem('mine'), RKHS2D)
    # the package's own problems are in every worker; the others travel with each run
    external_factory = problem_registry.external_factory
    assert external_factory('rkhs2d') is None and external_factory('mine') is registry['mine']


@pytest.mark.slow   # two worker processes start (each imports torch and BoTorch): 10 s of CPU
def test_a_problem_registered_in_a_script_runs_on_worker_processes(tmp_path):
    """The workers (joblib's processes, Dask's) looked the problem up by name in their own registry, where a
    problem registered by the calling script is not: every run failed with KeyError: unknown problem."""
    script = tmp_path / 'study.py'
    script.write_text(TOY_MODULE + textwrap.dedent('''
        if __name__ == '__main__':
            import sys
            from uncertain_bo.benchmarks import BenchSettings, expand, register_problem, run_many
            register_problem('toy-bumps', Bumps)
            specs = expand('toy-bumps', ['gp_ucb'], range(2), 3, [BenchSettings(beta=2.0)])
            results = run_many(specs, sys.argv[1], n_jobs=2, progress=False)
            print([len(r['records']) for r in results])
        '''))
    out = subprocess.run([sys.executable, str(script), str(tmp_path / 'out')], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ['[3,', '3]']
    runs = sorted((tmp_path / 'out' / 'runs').glob('*.json'))
    assert [p.name.split('__')[0] for p in runs] == ['toy-bumps', 'toy-bumps']
    assert json.loads(runs[0].read_text())['instance']['optimum'][0] == pytest.approx(0.2, abs=0.02)


def test_an_installed_package_declares_a_problem_for_the_command_line(registry, tmp_path, monkeypatch, capsys):
    """``[project.entry-points."uncertain_bo.problems"] toy-bumps = "toyproblems:Bumps"`` in a package's
    pyproject.toml: here the installed package's module and metadata are written by hand."""
    (tmp_path / 'toyproblems.py').write_text(TOY_MODULE)
    info = tmp_path / 'toyproblems-0.1.dist-info'
    info.mkdir()
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: toyproblems\nVersion: 0.1\n')
    (info / 'entry_points.txt').write_text('[uncertain_bo.problems]\ntoy-bumps = toyproblems:Bumps\n'
                                           'broken = toyproblems:NoSuchThing\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(problem_registry, "_entry_points_loaded", False)
    from uncertain_bo.cli import main

    assert main(['bench', '--list-problems']) == 0
    listed = capsys.readouterr().out
    assert 'toy-bumps: toy-bumps: a registered RobustProblem' in listed and 'broken' not in listed
    out = tmp_path / 'bench'
    assert main(['bench', '--problem', 'toy-bumps', '--n-jobs', '1', '--out', str(out)]) == 0
    assert len(list((out / 'runs').glob('toy-bumps__gp_ucb__*.json'))) == 2
    assert (out / 'summary.csv').read_text().count('toy-bumps') == 1


def test_the_research_pages_example_runs(registry, tmp_path):
    """docs/research.md's first Python example, with 1 seed of 4 measurements instead of 16 of 40."""
    text = (Path(__file__).resolve().parents[2] / 'docs' / 'research.md').read_text()
    code = re.findall(r'```python\n(.*?)```', text, re.S)[0]
    small = code.replace('seeds=range(16), iterations=40', 'seeds=range(1), iterations=4').replace(
        "out_dir='runs/my-ridge', n_jobs=4", 'out_dir=OUT, n_jobs=1')
    assert small.count('OUT') == 1 and 'iterations=4' in small, 'docs/research.md: update this test'
    namespace = {'OUT': str(tmp_path)}
    exec(compile(small, 'docs/research.md', 'exec'), namespace)
    assert sorted(r['spec']['method'] for r in namespace['results']) == ['botorch_robust', 'gp_ucb', 'ugp_ucb']
    assert json.loads((tmp_path / 'summary.json').read_text())['comparisons']

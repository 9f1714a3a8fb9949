"""docs/tutorial.ipynb runs from top to bottom: executed in a Jupyter kernel (nbclient, ipykernel: the ``test``
extra), or, where those are not installed, its code cells one after another in this process; either way it must
print the robust optimum that the closed form gives and a final robust regret for each method."""
import contextlib
import importlib.util
import io
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / 'docs' / 'tutorial.ipynb'


def _run_in_kernel(tmp_path, monkeypatch) -> tuple[str, int]:
    import nbformat
    from nbclient import NotebookClient

    # the kernel imports the package from this checkout, as the tests do
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(filter(None, [str(ROOT), os.environ.get('PYTHONPATH')])))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name='python3', resources={'metadata': {'path': str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == 'code' for o in c.outputs]
    text = ''.join(o.get('text', '') for o in outputs if o.output_type == 'stream')
    return text, sum('image/png' in o.get('data', {}) for o in outputs)


def _run_cells(tmp_path, monkeypatch) -> tuple[str, int]:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    cells = [c for c in json.loads(NOTEBOOK.read_text())['cells'] if c['cell_type'] == 'code']
    out, namespace = io.StringIO(), {'__name__': '__main__'}
    plt.close('all')
    with contextlib.redirect_stdout(out):
        for i, cell in enumerate(cells):
            exec(compile(''.join(cell['source']), f'{NOTEBOOK.name} cell {i}', 'exec'), namespace)
    figures = len(plt.get_fignums())
    plt.close('all')
    return out.getvalue(), figures


def _robust_objective(x: np.ndarray, std: float = 0.05) -> np.ndarray:
    """g(x) = E f(x + N(0, std^2)) of the tutorial's f in closed form: a Gaussian bump exp(-(x - c)^2 / (2 s^2))
    convolved with the noise is s / sqrt(s^2 + std^2) exp(-(x - c)^2 / (2 (s^2 + std^2)))."""
    g = np.zeros_like(x)
    for weight, centre, s2 in ((1.0, 0.2, 0.01), (1.3, 0.7, 0.0004)):
        v = s2 + std ** 2
        g += weight * math.sqrt(s2 / v) * np.exp(-(x - centre) ** 2 / (2 * v))
    return g


@pytest.mark.slow   # 20 runs of a GP loop, 14 s of CPU (most of it BoTorch's robust loop)
def test_the_tutorial_runs_and_prints_the_robust_optimum_and_each_methods_regret(tmp_path, monkeypatch):
    kernel = all(importlib.util.find_spec(m) for m in ('nbformat', 'nbclient', 'ipykernel'))
    text, figures = (_run_in_kernel if kernel else _run_cells)(tmp_path, monkeypatch)
    assert figures == 2, text
    grid = np.linspace(0, 1, 100001)
    g = _robust_objective(grid)
    found = re.search(r'robust optimum is x\* = ([\d.]+), g\* = ([\d.]+)', text)
    assert found, text
    assert abs(float(found.group(1)) - grid[g.argmax()]) < 0.005
    assert abs(float(found.group(2)) - g.max()) < 0.02           # Monte Carlo with 500 draws against the closed form
    regrets = dict(re.findall(r'^(\w+): final robust regret ([\d.eE+-]+)', text, re.M))
    assert set(regrets) == {'ugp_ucb', 'botorch_robust'}, text
    assert all(0 <= float(v) <= g.max() - g.min() for v in regrets.values()), regrets

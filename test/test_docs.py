"""The repository's own documents: every relative link resolves inside the repo, and README's list of where the
library's Planner defaults differ from the explorer's is the true list."""
import dataclasses
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
LINK = re.compile(r'\]\(([^)#\s]+)(?:#[^)]*)?\)')


@pytest.mark.parametrize('doc', DOCS, ids=lambda p: p.name)
def test_relative_links_resolve_inside_the_repo(doc):
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r'[a-z]+://|mailto:', target):
            continue
        path = (doc.parent / target).resolve()
        if not path.exists() or ROOT not in path.parents:
            broken.append(target)
    assert not broken, f'{doc.name}: links to missing or outside files: {broken}'


def test_readme_names_every_planner_default_the_explorer_changes():
    from uncertain_bo.explorer import EXPLORER_PARAMS
    from uncertain_bo.explorer.parameters import planner_from_parameters
    from uncertain_bo.parameters.specs import defaults
    from uncertain_bo.planning.settings import ModelSettings, PlannerSettings

    planner = planner_from_parameters({**defaults(EXPLORER_PARAMS), 'search_bounds': [0.0, 20.0, 0.0, 20.0]})
    differ = set()
    for f in dataclasses.fields(PlannerSettings) + dataclasses.fields(ModelSettings):   # Planner's options
        if f.name in ('model', 'model_factory') or (
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING):
            continue
        library = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if library != getattr(planner, f.name):
            differ.add(f.name)
    assert differ, 'the explorer changes no Planner default: drop the README paragraph'
    paragraph = (ROOT / 'README.md').read_text().split("`Planner`'s defaults are a library's")[1].split('\n\n')[0]
    assert differ == set(re.findall(r'`(\w+)`\s+\(', paragraph)), 'README: update the list of differing defaults'


def test_make_test_says_how_long_it_takes_as_the_readme_does():
    """Before: neither `make test` nor README said how long the suite takes."""
    makefile = (ROOT / 'Makefile').read_text()
    minutes = re.search(r'^TEST_MINUTES := ([\d.]+)$', makefile, re.M)[1]
    recipe = makefile.split('\ntest:')[1].split('\n\n')[0]
    assert '$(TEST_MINUTES) min' in recipe and '--durations=' in recipe
    tests = (ROOT / 'README.md').read_text().split('## Tests')[1].split('\n## ')[0]
    assert f'about {minutes} min on 2 cores' in tests


def test_the_suites_configuration_prints_why_each_test_was_skipped(tmp_path):
    """Before: `make test` printed only 's' for a skipped test; the reason (a missing launch_ros, ...) was hidden."""
    import subprocess
    import sys
    (tmp_path / 'test_one.py').write_text("import pytest\n\n\ndef test_x():\n    pytest.skip('needs launch_ros')\n")
    out = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-c', str(ROOT / 'pytest.ini'), '-p',
                          'no:cacheprovider', '--rootdir', str(tmp_path), str(tmp_path / 'test_one.py')],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'SKIPPED' in out and 'needs launch_ros' in out

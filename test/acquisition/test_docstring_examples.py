"""The ``Example:`` sections of the model's and the acquisitions' public classes run as written."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize('name', ['uncertain_bo.models.distribution_gp', 'uncertain_bo.models.conditioned',
                                  'uncertain_bo.models.target_model', 'uncertain_bo.acquisition.ucb',
                                  'uncertain_bo.acquisition.risk_measures'])
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0

"""Routine warnings are caught, counted and logged once per kind, in the thread that raised them only; others pass;
the jitter warnings of a posterior's Cholesky do not escape through the public model path."""
import logging
import threading
import warnings

import torch
from linear_operator.utils.warnings import NumericalWarning

from uncertain_bo.caught_warnings import caught_counts, logged_warnings
from uncertain_bo.distributions import DTYPE, Dirac
from uncertain_bo.models import DistributionGP

log = logging.getLogger('test_caught_warnings')


def near_duplicates(n=30):
    """``n`` inputs 1e-9 apart in the unit square: their kernel matrix is singular to working precision."""
    return torch.full((n, 2), 0.5, dtype=DTYPE) + 1e-9 * torch.arange(n, dtype=DTYPE).unsqueeze(-1)


def test_jitter_warnings_of_a_posterior_do_not_escape_and_are_counted(caplog):
    x = near_duplicates()
    bounds = torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=DTYPE)
    exact = DistributionGP(bounds, standardize=False, priors=False, noise_lower_bound=1e-30)
    exact.set_data(Dirac(x), torch.zeros(len(x), dtype=DTYPE))
    exact.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=2e-30, mean=0.0)
    sparse = DistributionGP(bounds, standardize=False, priors=False)     # inducing inputs: no noise on K_uu
    sparse.set_data(Dirac(x), torch.zeros(len(x), dtype=DTYPE))
    sparse.set_hyperparameters(lengthscale=0.3, outputscale=1.0, noise=1e-4, mean=0.0)
    sparse.inducing = torch.arange(10)
    before = caught_counts().get('NumericalWarning', 0)
    with warnings.catch_warnings(record=True) as escaped, caplog.at_level(logging.DEBUG, logger='uncertain_bo'):
        warnings.simplefilter('always')
        for gp in (exact, sparse):
            mean, var = gp.marginals(Dirac(x[:2]))                   # builds the posterior: a jittered Cholesky
            assert torch.isfinite(mean).all() and torch.isfinite(var).all()
            gp.posterior_covariance(Dirac(x[:1]), Dirac(x[1:3]))
    assert not [w for w in escaped if issubclass(w.category, NumericalWarning)], [str(w.message) for w in escaped]
    assert caught_counts().get('NumericalWarning', 0) >= before + 2
    assert any('added jitter' in r.getMessage() for r in caplog.records)


def test_once_per_kind_per_block_and_other_warnings_pass(caplog):
    before = caught_counts().get('NumericalWarning', 0)
    with warnings.catch_warnings(record=True) as shown, caplog.at_level(logging.DEBUG, logger=log.name):
        warnings.simplefilter('default')     # once per location: the block still sees every occurrence
        with logged_warnings(log, NumericalWarning) as caught:
            for _ in range(3):
                warnings.warn('A not p.d., added jitter of 1.0e-08 to the diagonal', NumericalWarning)
            warnings.warn('A not p.d., added jitter of 1.0e-07 to the diagonal', NumericalWarning)
            warnings.warn('something else', UserWarning)
            assert [str(w.message) for w in shown] == ['something else']   # passed on at once
    assert len(caught) == 4
    assert caught_counts()['NumericalWarning'] == before + 4
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == [
        'NumericalWarning: A not p.d., added jitter of 1.0e-08 to the diagonal',
        'NumericalWarning: A not p.d., added jitter of 1.0e-07 to the diagonal']
    assert [str(w.message) for w in shown] == ['something else']


def test_innermost_matching_block_takes_the_warning():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter('always')
        with logged_warnings(log, RuntimeWarning) as outer:
            with logged_warnings(log, NumericalWarning) as inner:
                warnings.warn('jitter', NumericalWarning)
                warnings.warn('other runtime', RuntimeWarning)
    assert [str(w.message) for w in inner] == ['jitter']
    assert [str(w.message) for w in outer] == ['other runtime']
    assert shown == []


def test_blocks_in_two_threads_do_not_undo_each_other():
    """The interleaving that breaks ``warnings.catch_warnings``: thread A opens a block, the main thread opens one,
    A closes its block first; the main thread's block must still catch, and a warning raised in A outside any
    block must reach the caller's recorder instead of the main thread's block."""
    a_open, main_open, a_closed, a_warned = (threading.Event() for _ in range(4))
    a_caught: list = []

    def thread_a():
        with logged_warnings(log, NumericalWarning) as caught:
            a_open.set()
            main_open.wait(10)
            warnings.warn('from A, inside its block', NumericalWarning)
        a_caught.extend(caught)
        a_closed.set()
        main_open.wait(10)
        warnings.warn('from A, no block', NumericalWarning)
        a_warned.set()

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter('always')
        t = threading.Thread(target=thread_a)
        t.start()
        assert a_open.wait(10)
        with logged_warnings(log, NumericalWarning) as main_caught:
            main_open.set()
            assert a_closed.wait(10)
            warnings.warn('from main, after A closed its block', NumericalWarning)
            assert a_warned.wait(10)
        t.join(10)
    assert [str(w.message) for w in a_caught] == ['from A, inside its block']
    assert [str(w.message) for w in main_caught] == ['from main, after A closed its block']
    assert [str(w.message) for w in shown] == ['from A, no block']
    assert warnings.showwarning is not None and not any(f[2] is NumericalWarning and f[0] == 'always'
                                                        for f in warnings.filters)

"""Acquisition functions and the registry of methods.

Every method is an object behind one protocol (:mod:`uncertain_bo.acquisition.method`, docs/architecture.md
"The method protocol"): what the shared :class:`~uncertain_bo.models.DistributionGP` trains on, with which
kernel, in which space it decides, how it scores candidates from a decision context and how it recommends. The
:class:`~uncertain_bo.planning.planner.Planner`, the explorer and the benchmark runner look methods up by name in
:data:`METHODS`; a method registers itself with the :func:`register` class decorator in its own module, imported
below.

**Examples.** Each method's ``Example:`` runs one decision of it as ``uncertain-bo bench`` would, on a registered
problem with a small budget: :meth:`~uncertain_bo.benchmarks.base.Problem.planner` with
:meth:`~uncertain_bo.benchmarks.base.BenchSettings.quick` takes three space-filling measurements and then the
method's first decision, with fixed hyperparameters (no marginal-likelihood fit) and a quick maximiser, and returns
the planner, whose last :attr:`~uncertain_bo.planning.planner.Planner.decisions` entry is that decision (the examples
of acquisition objects stop after the three measurements and take the method's acquisition from the planner's
snapshot, ``planner.method_object.acquisition(planner.snapshot())``)::

    from uncertain_bo.benchmarks import BenchSettings, get_problem
    planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=4, settings=BenchSettings.quick(beta=2.0))
    planner.decisions[-1]          # phase 'acquisition', the target, its acquisition value and beta_t
"""
from __future__ import annotations

from .base import TargetAcquisition
from .beta import FixedBeta, TheoryBeta, make_beta
from .method import (INPUT_KINDS, METHODS, DecisionContext, Method, Proposal, Recommendation, UCBMethod,
                     get_method, register)
from .ucb import TargetUpperConfidenceBound

__all__ = ['Method', 'UCBMethod', 'DecisionContext', 'Proposal', 'Recommendation', 'METHODS', 'INPUT_KINDS',
           'register', 'get_method', 'TargetAcquisition', 'TargetUpperConfidenceBound', 'FixedBeta', 'TheoryBeta',
           'make_beta']

# each module registers its methods
from . import ugp_ucb  # noqa: E402,F401  ('ugp_ucb', 'ugp_bucb')
from . import igp_ucb  # noqa: E402,F401  ('igp_ucb')
from . import uei  # noqa: E402,F401  ('uei')
from . import airbo  # noqa: E402,F401  ('airbo', 'airbo_empirical', 'ugp_kme', 'skl', 'erbf', 'gp_ucb')
from . import survey  # noqa: E402,F401  (baselines 'lawnmower', 'lawnmower_fixed', 'random')
from . import botorch_robust  # noqa: E402,F401  (baseline 'botorch_robust')
from . import quadrature  # noqa: E402,F401  (DRBQO, its baselines)
from . import mtbo  # noqa: E402,F401  ('mtbo')
from . import nes  # noqa: E402,F401  ('nes_ep')
from . import nes_rs  # noqa: E402,F401  ('nes_rs')
from . import bo_uu  # noqa: E402,F401  ('bo_uu_ei', 'bo_uu_ucb', 'bo_uu_mes', 'ei')
from . import risk_measures  # noqa: E402,F401  ('ugp_risk')
from . import local_penalisation  # noqa: E402,F401  ('ugp_lp')
from . import thompson  # noqa: E402,F401  ('ugp_ts')

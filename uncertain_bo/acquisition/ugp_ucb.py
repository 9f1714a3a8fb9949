r"""uGP-UCB: upper confidence bound over location distributions (Oliveira et al. 2019, Algorithm 1).

.. math::
    \mathbf x_t = \operatorname{argmax}_{\mathbf x \in S}\ \hat\mu_{t-1}(\hat P_{\mathbf x})
    + \beta_t\, \hat\sigma_{t-1}(\hat P_{\mathbf x}),

where :math:`\hat P_{\mathbf x}` is the execution-noise model centred on the candidate target and the GP
is trained on the location estimates :math:`P^L_t`.

**Batches** (``ugp_bucb``): GP-BUCB (Desautels, Krause & Burdick 2014, JMLR 15, Alg. 1 and Eq. 6) over
:math:`\hat P_{\mathbf x}`: the ``q`` targets of a batch are picked one after the other, each by uGP-UCB on the model
conditioned on the earlier picks (and any pending targets) with readings hallucinated at the posterior mean, so
:math:`\hat\mu` is unchanged and :math:`\hat\sigma` shrinks where a pick will measure. It is deterministic, has a
regret bound of the batch size's order (Desautels et al., Thm. 2, with an inflated :math:`\beta_t`; here the planner's
:math:`\beta_t` as it is) and costs one :math:`O(n^2)` fantasy update per pick on the shared model's prediction
strategy. With ``q = 1`` it is uGP-UCB exactly.
:meth:`~uncertain_bo.acquisition.ucb.TargetUpperConfidenceBound.joint_score` gives the same batch value in closed
form for a joint maximisation over ``q x d``.

Two other rules for deciding with pending targets are registered beside it: local penalisation of the robust
objective (``ugp_lp``, :mod:`~uncertain_bo.acquisition.local_penalisation`) and pathwise Thompson sampling of it
(``ugp_ts``, :mod:`~uncertain_bo.acquisition.thompson`). Measured on the 3-rover team bench (docs/benchmarks.md,
"Which batch rule": 16 paired seeds on each of three fields), neither is better than fantasies in final regret or in
regret at equal team mission time: local penalisation differs in no comparison (Wilcoxon p >= 0.17); Thompson
sampling's missions are 25-50 % longer in time and distance (p <= 0.015) and its regret at equal time is worse in one
of 12 comparisons (p = 0.011). Fantasies stay the default on those grounds (no measured gain from another rule, no
randomness, the regret bound).
"""
from __future__ import annotations

from typing import ClassVar

from .method import UCBMethod, register

__all__ = ['UGPUCB', 'UGPBUCB']


@register
class UGPUCB(UCBMethod):
    """uGP-UCB: the GP on the location distributions :math:`P^L_t`, UCB over :math:`\\hat P_{\\mathbf x}`.

    Example:
        uGP-UCB's first decision on the paper's 2-D RKHS problem, with :math:`\\beta_t = 2` (the method examples'
        set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ucb', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> decision = planner.decisions[-1]
        >>> decision.phase, decision.target.shape, decision.beta
        ('acquisition', torch.Size([2]), 2.0)
    """

    name = 'ugp_ucb'
    description = ('uGP-UCB: GP over location distributions, UCB over the execution-noise model '
                   '(Oliveira et al. 2019)')


@register
class UGPBUCB(UGPUCB):
    """uGP-UCB deciding ``batch_size`` targets at a time by GP-BUCB (module docstring); the rover visits them along
    the shortest route from where it is (:mod:`uncertain_bo.planning.route`). ``Planner.suggest(q=...)`` decides batches
    of any size with any UCB method; this name makes the batch the default, for the explorer and ``uncertain-bo
    bench``.

    Example:
        The first batch of three targets is decided at measurement 4 and handed out one per call (the method
        examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_bucb', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> [d.phase for d in planner.decisions], planner.queued.shape
        (['initial', 'initial', 'initial', 'acquisition', 'acquisition', 'acquisition'], torch.Size([2, 2]))
    """

    name = 'ugp_bucb'
    description = ('uGP-UCB in batches of 3 targets by GP-BUCB (hallucinated readings at the posterior mean; '
                   'Desautels et al. 2014); the rover visits each batch along its shortest route')
    batch_size: ClassVar[int] = 3

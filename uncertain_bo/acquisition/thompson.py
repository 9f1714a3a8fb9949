r"""Pathwise Thompson sampling of the robust objective: a batch rule that decides with pending targets by
randomness alone (asynchronous parallel Thompson sampling, Kandasamy, Krishnamurthy, Schneider & Póczos, AISTATS
2018, Alg. 2 "asyTS").

Each decision draws one posterior sample path :math:`\tilde f` of the field from the shared model
(:class:`~uncertain_bo.models.sample_paths.PosteriorSamplePaths`: random Fourier features for the prior, Matheron's
rule on the model's own prediction strategy for the data; Wilson et al. 2020, Eq. 13) and sends the rover to the
maximiser of that path averaged over the execution-noise model,

.. math::
    \mathbf x_t = \operatorname{argmax}_{\mathbf x\in S}\ \tilde f(\hat P_{\mathbf x}), \qquad
    \tilde f(\hat P_{\mathbf x}) = \mathbb E_{\boldsymbol\xi\sim\hat P_{\mathbf x}}\tilde f(\boldsymbol\xi),

in closed form: the expected random features under the Gaussian :math:`\hat P_{\mathbf x}` (Fröhlich et al. 2020,
Eq. 6) and the expected SE kernel of the update term, so :math:`\tilde f(\hat P_{\mathbf x})` is a sample of the
robust objective's posterior (mean :math:`\hat\mu(\hat P_{\mathbf x})`, variance :math:`\hat\sigma^2(\hat P_{\mathbf
x})` up to the random-feature error of the prior term) — the objective uGP-UCB scores by its upper bound.

**Pending targets** (other rovers', earlier picks of a batch) enter only through the sample's randomness, as in
Kandasamy et al.: the model is not conditioned on them (:attr:`RobustThompson.fantasize_pending` is False) and each
decision draws a fresh path, so two rovers deciding with the same data still go to different maxima with
probability one. Conditioning the path on hallucinated readings would make it the fantasy model's sample and mix the
two rules this method is measured against.

**Reproducible**: the path is drawn from a generator seeded by the decision's seed (the planner's seed and the
decision's index, :attr:`~uncertain_bo.acquisition.DecisionContext.seed`), so a run resumed from its journal draws
the same path at the same decision.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar

import torch
from botorch.acquisition import AcquisitionFunction
from torch import Tensor

from ..distributions import LocationDistributions
from ..models import DistributionGP
from ..models.sample_paths import PosteriorSamplePaths
from .base import TargetAcquisition
from .method import DecisionContext, Method, register

__all__ = ['RobustPathSample', 'path_generator', 'RobustThompson']


def path_generator(seed: int, device: torch.device | None = None) -> torch.Generator:
    """The random stream of one decision's sample path: seeded by ``seed`` (the decision's seed) alone."""
    return torch.Generator(device=device or 'cpu').manual_seed((int(seed) * 1_000_003 + 11) % (2 ** 63))


class RobustPathSample(TargetAcquisition):
    r"""Score of a target: one posterior sample path averaged over the target's execution-noise distribution,
    :math:`\tilde f(\hat P_{\mathbf x})` (module docstring), in field units; differentiable in the targets.

    Args:
        model: the shared GP (expected SE kernel, with data).
        candidates: targets ``(q, d)`` -> location distributions (the execution-noise model).
        paths: the :class:`~uncertain_bo.models.sample_paths.PosteriorSamplePaths` (its first path is scored).

    Example:
        The sample path ``ugp_ts`` maximises at its first decision (after three measurements, the method examples'
        set-up of :mod:`uncertain_bo.acquisition`):

        >>> import torch
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ts', measurements=3, settings=BenchSettings.quick(beta=2.0))
        >>> acq = planner.method_object.acquisition(planner.snapshot())
        >>> type(acq).__name__, acq(torch.rand(5, 1, 2, dtype=torch.float64)).shape
        ('RobustPathSample', torch.Size([5]))
    """

    def __init__(self, model: DistributionGP, candidates: Callable[[Tensor], LocationDistributions],
                 paths: PosteriorSamplePaths):
        super().__init__(model, candidates)
        self.paths = paths

    def score(self, targets: Tensor) -> Tensor:
        return self.paths(self.candidates(targets))[:, 0]


@register
class RobustThompson(Method):
    """Thompson sampling of the robust objective with one posterior sample path per decision (module docstring).

    Args:
        n_features: random Fourier features of the path's prior term (default 1000, as DRBQO's).

    Raises:
        TypeError: unknown settings. ValueError: ``n_features < 1``.

    Example:
        The first decision by a robust sample path (the method examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs2d').planner('ugp_ts', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> target, (lower, upper) = planner.targets[-1], planner.bounds
        >>> planner.decisions[-1].phase, target.shape, bool(((lower <= target) & (target <= upper)).all())
        ('acquisition', torch.Size([2]), True)
    """

    name = 'ugp_ts'
    description = ('Thompson sampling of the robust objective: one posterior sample path per decision averaged over '
                   'the execution-noise model; pending targets enter by the sample\'s randomness (Kandasamy et al. '
                   '2018)')
    fantasize_pending: ClassVar[bool] = False

    def __init__(self, n_features: int = 1000, **settings: Any):
        super().__init__(**settings)
        self.n_features = self.count_setting('n_features', n_features)

    def acquisition(self, ctx: DecisionContext) -> AcquisitionFunction:
        model = ctx.model
        paths = PosteriorSamplePaths(model, 1, self.n_features, path_generator(ctx.seed, model.bounds.device))
        return RobustPathSample(model, ctx.candidates, paths)

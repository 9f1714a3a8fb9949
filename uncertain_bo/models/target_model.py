r"""The shared GP seen as a BoTorch model over **commanded targets**, for stock BoTorch acquisitions.

BoTorch's acquisitions pass tensors ``batch x q x d``. :class:`TargetModel` maps each target to the location
distribution it is scored through and asks the shared :class:`~uncertain_bo.models.DistributionGP` for the joint
posterior there; it holds no data and no posterior of its own.

- ``TargetModel(gp, execution_noise)``: targets -> :math:`\hat P_{\mathbf x}`; the posterior of the robust objective
  :math:`g(\mathbf x) = \mathbb E[f(\mathbf x + \boldsymbol\xi)]` (closed form with the expected SE kernel);
- ``TargetModel(gp)``: targets as points; the posterior of :math:`f`;
- ``TargetModel(gp, perturbation=InputPerturbation(...))``: each target replaced by ``n_w`` perturbed points
  (BoTorch's one-to-many input transform), the joint posterior of :math:`f` there, for BoTorch's risk measures
  (``Expectation``, ``CVaR``, ``VaR``) over the execution noise; :func:`perturbation_set` draws the set from an
  execution-noise model.

::

    acq = qLogNoisyExpectedImprovement(TargetModel(planner.model, planner.candidates), X_baseline=planner.targets)
    risk = qLogNoisyExpectedImprovement(
        TargetModel(planner.model, perturbation=InputPerturbation(perturbation_set(noise, 16, seed=0))),
        X_baseline=planner.targets, objective=CVaR(alpha=0.8, n_w=16))
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from botorch.models.model import FantasizeMixin, Model
from botorch.models.transforms.input import InputPerturbation
from botorch.posteriors.gpytorch import GPyTorchPosterior
from torch import Tensor

from ..distributions import Dirac, LocationDistributions

__all__ = ['TargetModel', 'perturbation_set']


class TargetModel(Model, FantasizeMixin):
    """A view of ``gp`` whose inputs are targets (module docstring).

    Args:
        gp: the shared :class:`~uncertain_bo.models.DistributionGP` (not copied: the view follows its data).
        candidates: targets ``(N, d)`` -> their location distributions (an execution-noise model, or the planner's
            ``candidates``); None: Dirac points.
        perturbation: BoTorch ``InputPerturbation`` applied to the targets first (risk measures over its
            perturbation set); only with ``candidates=None`` (a perturbation set and an execution-noise model are two
            models of the same noise).

    Raises:
        ValueError: both ``candidates`` and ``perturbation``.

    Example:
        BoTorch's noisy expected improvement of the robust objective (each target scored through its execution-noise
        distribution):

        >>> import torch
        >>> from botorch.acquisition import qLogNoisyExpectedImprovement
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP, TargetModel
        >>> X = torch.rand(10, 2, dtype=torch.float64)
        >>> gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]], dtype=torch.float64))
        >>> gp.set_data(Dirac(X), (3 * X).sin().sum(-1))
        >>> view = TargetModel(gp, GaussianExecutionNoise(0.01 * torch.eye(2, dtype=torch.float64)))
        >>> acq = qLogNoisyExpectedImprovement(view, X_baseline=X)
        >>> acq(torch.rand(4, 1, 2, dtype=torch.float64)).shape
        torch.Size([4])
    """

    def __init__(self, gp: Model, candidates: Callable[[Tensor], LocationDistributions] | None = None,
                 perturbation: InputPerturbation | None = None):
        super().__init__()
        if candidates is not None and perturbation is not None:
            raise ValueError('give candidates (an execution-noise model) or a perturbation set, not both: they are '
                             'two models of the same execution noise')
        object.__setattr__(self, 'gp', gp)   # not a submodule: train()/eval() of the view leave the GP alone
        self.candidates = candidates
        object.__setattr__(self, 'perturbation', perturbation)

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def likelihood(self) -> Any:
        """The model's likelihood (BoTorch's ``fantasize`` reads its kind)."""
        return self.gp.likelihood

    @property
    def batch_shape(self) -> torch.Size:
        """The model's batch shape (a fantasy model's ``S x batch``)."""
        return self.gp.batch_shape

    def locations(self, X: Tensor) -> tuple[LocationDistributions, torch.Size]:
        """The distributions of targets ``batch x q x d`` (after the perturbation) and the batch shape."""
        if self.perturbation is not None:
            X = self.perturbation.transform(X)
        flat = X.reshape(-1, X.shape[-1])
        dists = Dirac(flat) if self.candidates is None else self.candidates(flat)
        return dists, X.shape[:-2]

    def posterior(self, X: Tensor, output_indices: list[int] | None = None, observation_noise: bool | Tensor = False,
                  posterior_transform: Any = None, **kwargs: Any) -> GPyTorchPosterior:
        """Joint posterior at targets ``batch x q x d`` (``batch x q·n_w`` with a perturbation), as
        :meth:`DistributionGP.posterior <uncertain_bo.models.DistributionGP.posterior>`."""
        dists, batch = self.locations(X)
        return self.gp.posterior(dists, output_indices=output_indices, observation_noise=observation_noise,
                                 posterior_transform=posterior_transform, batch_shape=batch)

    def condition_on_observations(self, X: Tensor, Y: Tensor, **kwargs: Any) -> 'TargetModel':
        """The view of ``gp.condition_on_observations`` at the targets' distributions (readings ``Y`` there): targets
        ``(k, d)`` with readings ``(k,)``, or BoTorch's fantasies, targets ``batch x k x d`` with readings
        ``batch_shape x k x 1`` (so ``fantasize``, ``qKnowledgeGradient`` and ``qNegIntegratedPosteriorVariance`` run
        on the view: the look-ahead of the robust objective with ``candidates``).

        Raises:
            NotImplementedError: with a perturbation (a reading is of one executed point, not of ``n_w``).
        """
        if self.perturbation is not None:
            raise NotImplementedError('conditioning a perturbed view: a reading is taken at one executed point')
        if torch.as_tensor(Y).ndim > 2:
            dists, batch = self.locations(X)
            return TargetModel(self.gp.condition_on_observations(dists, Y, batch_shape=batch, **kwargs),
                               self.candidates)
        dists, _ = self.locations(X.reshape(-1, X.shape[-1]).unsqueeze(0))
        return TargetModel(self.gp.condition_on_observations(dists, Y, **kwargs), self.candidates)


def perturbation_set(execution_noise: Any, n_w: int, seed: int = 0, at: Tensor | None = None,
                     like: Tensor | None = None) -> Tensor:
    """``(n_w, d)`` draws of the execution noise :math:`\\boldsymbol\\xi` (physical units), for an
    ``InputPerturbation``.

    Gaussian noise (:class:`~uncertain_bo.distributions.GaussianExecutionNoise`) uses scrambled Sobol normal samples
    (BoTorch's ``draw_sobol_normal_samples``) times the Cholesky factor of :math:`\\hat\\Sigma`; any other model is
    resampled from its distribution at the point ``at`` (default the origin; its offsets may depend on the target,
    this set does not), minus ``at``.

    Args:
        execution_noise: the execution-noise model.
        n_w: size of the set.
        seed: seed of the draws.
        at: ``(d,)`` where a target-dependent model is sampled.
        like: dtype and device of the result (default float64 on the CPU).
    """
    from botorch.utils.sampling import draw_sobol_normal_samples

    from ..distributions import DTYPE, GaussianExecutionNoise

    like = torch.zeros((), dtype=DTYPE) if like is None else like
    if isinstance(execution_noise, GaussianExecutionNoise):
        cov = execution_noise.covariance.to(like)
        d = cov.shape[-1]
        chol = torch.linalg.cholesky(cov + 1e-12 * torch.eye(d, dtype=like.dtype, device=like.device))
        z = draw_sobol_normal_samples(d, n_w, device=like.device, dtype=like.dtype, seed=seed)
        return z @ chol.T
    d = execution_noise.dim
    at = torch.zeros(d, dtype=like.dtype, device=like.device) if at is None else at.to(like)
    at = at.reshape(1, d)
    gen = torch.Generator(device=like.device).manual_seed(seed)
    return execution_noise(at).sample(n_w, generator=gen).reshape(n_w, d).to(like) - at

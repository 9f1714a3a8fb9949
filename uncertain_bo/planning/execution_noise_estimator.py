r"""Learning the execution-noise model :math:`\hat P_{\mathbf x}` online from the goals the rover reached.

:class:`ExecutionNoiseEstimator` holds the prior :math:`\Sigma_0` (the configured ``execution_noise_std``), the
running sum of the arrivals' evidence and their count; :class:`~uncertain_bo.planning.planner.Planner` feeds it each
measurement whose goal was reached and uses :meth:`ExecutionNoiseEstimator.noise` for candidates and the
recommendation. The estimate (the form of an inverse-Wishart posterior mean) is derived in
:meth:`ExecutionNoiseEstimator.covariance`. The uGP-UCB paper (Oliveira et al. 2019, §7) names learning
:math:`\hat P_{\mathbf x}` online as future work.
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..distributions import ExecutionNoise, GaussianExecutionNoise, LocationDistributions
from ..linalg import psd_sqrt

__all__ = ['ExecutionNoiseEstimator', 'EXECUTION_FEEDBACK']

#: execution models of the learned execution noise (:meth:`ExecutionNoiseEstimator.covariance`): the sign
#: with which the localisation covariance :math:`\Sigma^L` of an arrival enters the moment estimate
EXECUTION_FEEDBACK = {'closed_loop': 1.0, 'open_loop': -1.0}


class ExecutionNoiseEstimator:
    """The learned Gaussian execution-noise model: a prior worth ``prior_weight`` pseudo-arrivals, shrunk towards
    the arrivals' offsets.

    Args:
        prior: the prior model (its covariance is :math:`\\Sigma_0`, ``(d, d)``, m²; its sampling settings are
            kept for the learned model).
        prior_weight: :math:`\\nu_0 \\ge 0`, the prior's worth in arrivals.
        feedback: a key of :data:`EXECUTION_FEEDBACK` (how the rover executes a target).

    Raises:
        ValueError: ``prior`` is not a :class:`~uncertain_bo.distributions.GaussianExecutionNoise`,
            ``prior_weight`` is negative or NaN, or ``feedback`` is unknown.

    Example:
        A prior of 1 m std worth 2 arrivals, and two arrivals 0.1 m off their targets, exactly localised:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> estimator = ExecutionNoiseEstimator(GaussianExecutionNoise.isotropic(1.0, 2), prior_weight=2.0)
        >>> for target in (torch.tensor([1.0, 1.0]), torch.tensor([5.0, 3.0])):
        ...     estimator.add(target, Dirac((target + torch.tensor([0.1, 0.0])).reshape(1, 2)))
        >>> estimator.n, estimator.covariance().diagonal().tolist() < [1.0, 1.0]
        (2, True)
    """

    def __init__(self, prior: ExecutionNoise, prior_weight: float, feedback: str = 'closed_loop'):
        if feedback not in EXECUTION_FEEDBACK:
            raise ValueError(f'execution_feedback must be one of {", ".join(EXECUTION_FEEDBACK)}, got {feedback!r}')
        if not isinstance(prior, GaussianExecutionNoise) or not prior_weight >= 0:
            raise ValueError('learning the execution noise needs a GaussianExecutionNoise prior and '
                             f'execution_noise_prior_weight >= 0, got {prior!r}, {prior_weight!r}')
        self.prior_weight = float(prior_weight)
        self.feedback = feedback
        self._prior_noise = prior
        self._prior = prior.covariance.clone()
        self._sum = torch.zeros_like(self._prior)   # sum of e eᵀ ± Σ^L over reached goals
        self.n = 0                                  # reached goals seen

    @property
    def prior(self) -> Tensor:
        """:math:`\\Sigma_0`, ``(d, d)``, m²."""
        return self._prior

    def set_prior(self, prior: ExecutionNoise) -> None:
        """Replace the prior (an operator's run-time ``execution_noise_std``), keeping the arrivals seen so far.

        Raises:
            ValueError: not a :class:`~uncertain_bo.distributions.GaussianExecutionNoise` of the same dimension.
        """
        if not isinstance(prior, GaussianExecutionNoise) or prior.covariance.shape != self._prior.shape:
            raise ValueError('learning the execution noise needs a GaussianExecutionNoise prior of shape '
                             f'{tuple(self._prior.shape)}, got {prior!r}')
        self._prior_noise = prior
        self._prior = prior.covariance.clone().to(self._sum)

    def add(self, target: Tensor, location: LocationDistributions) -> None:
        """One reached goal: the commanded ``target`` (``(d,)``, m) and the location distribution the measurement
        was taken with (batch of 1; its mean and covariance)."""
        self._sum += self._evidence(target, location)
        self.n += 1

    def revise(self, target: Tensor, old: LocationDistributions, new: LocationDistributions) -> None:
        """A reached goal's location estimate was revised (a smoother, a loop closure:
        :mod:`uncertain_bo.planning.revisions`): its evidence is that of ``new`` instead of ``old`` (the distribution
        :meth:`add` or an earlier revision gave), as if the arrival had been localised so from the start. Why the
        revised pair belongs in the same formula: :meth:`covariance`."""
        self._sum += self._evidence(target, new) - self._evidence(target, old)

    def _evidence(self, target: Tensor, location: LocationDistributions) -> Tensor:
        """:math:`\\mathbf e \\mathbf e^\\top + s\\,\\Sigma^L` of one arrival, ``(d, d)``."""
        e = (location.mean[0] - target).to(self._sum)
        return torch.outer(e, e) + EXECUTION_FEEDBACK[self.feedback] * location.covariance[0].to(self._sum)

    def covariance(self) -> Tensor:
        r"""The learned execution-noise covariance :math:`\hat\Sigma` (``(d, d)``, m²).

        Each measurement whose goal was reached gives a commanded target :math:`\mathbf x_i`, the mean
        :math:`\hat{\mathbf x}_i` of its location distribution and that distribution's covariance
        :math:`\Sigma^L_i`; write :math:`\mathbf e_i = \hat{\mathbf x}_i - \mathbf x_i` and let
        :math:`\tilde{\mathbf x}_i` be the true executed position, :math:`\boldsymbol\eta_i = \hat{\mathbf x}_i
        - \tilde{\mathbf x}_i \sim \mathcal N(0, \Sigma^L_i)` the estimate's error. The execution noise is
        :math:`\boldsymbol\xi_i = \tilde{\mathbf x}_i - \mathbf x_i = \mathbf e_i - \boldsymbol\eta_i`, and
        how :math:`\mathbf e_i` and :math:`\boldsymbol\eta_i` relate depends on :attr:`feedback`:

        - ``'closed_loop'``: the controller steers on the estimate and stops when :math:`\hat{\mathbf x}_i`
          reaches the target up to its tolerance, so the residual :math:`\mathbf e_i` is independent of
          :math:`\boldsymbol\eta_i` and :math:`\operatorname{Cov}\boldsymbol\xi_i = \mathbb E[\mathbf e_i
          \mathbf e_i^\top] + \Sigma^L_i`;
        - ``'open_loop'``: the target is executed blind, :math:`\tilde{\mathbf x}_i = \mathbf x_i +
          \boldsymbol\xi_i`, and localised afterwards, :math:`\hat{\mathbf x}_i = \tilde{\mathbf x}_i +
          \boldsymbol\eta_i` with :math:`\boldsymbol\eta_i` independent of :math:`\boldsymbol\xi_i`, so
          :math:`\mathbb E[\mathbf e_i \mathbf e_i^\top] = \operatorname{Cov}\boldsymbol\xi_i + \Sigma^L_i`
          and :math:`\operatorname{Cov}\boldsymbol\xi_i = \mathbb E[\mathbf e_i \mathbf e_i^\top] -
          \Sigma^L_i` (the synthetic worlds of Oliveira et al. 2019, §6.1).

        With :math:`s = +1` (closed loop) or :math:`-1` (open loop), the moment estimate over the :math:`n`
        reached goals, shrunk towards the prior :math:`\Sigma_0` worth :math:`\nu_0` pseudo-observations (the
        form of an inverse-Wishart posterior mean), is

        .. math::
            \hat\Sigma = \Pi_{\succeq 0}\!\left(\frac{\nu_0 \Sigma_0 + \sum_i (\mathbf e_i \mathbf e_i^\top
            + s\,\Sigma^L_i)}{\nu_0 + n}\right),

        where :math:`\Pi_{\succeq 0}` is the nearest PSD matrix in the Frobenius norm (negative eigenvalues set to
        zero, :func:`~uncertain_bo.linalg.psd_sqrt`): the open-loop difference can be indefinite when few
        arrivals are averaged or the localisation covariance is overstated. Each form is unbiased (for
        :math:`\nu_0 = 0`, before the projection) only under its own execution model; the other is off by
        :math:`2\,\overline{\Sigma^L}`.

        **Revised estimates** (:meth:`revise`). The closed-loop form holds for any location estimate that is the
        conditional mean given the localiser's data, not only the filter's at arrival: the error :math:`\boldsymbol
        \eta` of such an estimate is uncorrelated with every function of the data (the orthogonality principle),
        the estimate and the target among them, so :math:`\boldsymbol\xi = \mathbf e - \boldsymbol\eta` gives
        :math:`\operatorname{Cov}\boldsymbol\xi = \mathbb E[\mathbf e \mathbf e^\top] + \Sigma^L` for the
        filtered pair and for a smoothed one alike. A smoother's pair (later data, smaller :math:`\Sigma^L`) is the
        better evidence, so a revised arrival re-teaches the estimate with its revised pair. In the open-loop model
        the estimate is a measurement of the executed position with independent error, which a revision of it stays.
        """
        nu0, n = self.prior_weight, self.n
        if nu0 + n == 0:
            return self._prior.clone()
        cov = (nu0 * self._prior + self._sum) / (nu0 + n)
        root = psd_sqrt(0.5 * (cov + cov.T))
        cov = root @ root.T
        return 0.5 * (cov + cov.T)

    def noise(self) -> GaussianExecutionNoise:
        """The learned model :math:`\\hat P_{\\mathbf x} = \\mathcal N(\\mathbf x, \\hat\\Sigma)` with the prior's
        sampling settings."""
        prior = self._prior_noise
        return GaussianExecutionNoise(self.covariance(), n_samples=None if prior.closed_form else prior.n_samples,
                                      seed=prior.seed)

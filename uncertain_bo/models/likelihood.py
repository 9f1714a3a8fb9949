"""The likelihood of the readings: a learned homoscedastic noise :math:`\\lambda` plus each reading's reported
variance, and the priors on :math:`\\lambda`."""
from __future__ import annotations

import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.priors import GammaPrior, LogNormalPrior, Prior
from linear_operator.operators import DiagLinearOperator

from ..distributions import DTYPE

__all__ = ['NOISE_PRIORS', 'make_noise_prior', 'ReadingNoiseLikelihood']

#: priors on the learned noise :math:`\lambda` (standardised output units; :func:`make_noise_prior`)
NOISE_PRIORS = {
    'gamma': "Gamma(1.1, 0.05): BoTorch's classic prior (mean 22, mode 2 in standardised units)",
    'lognormal': "LogNormal(-4, 1): BoTorch's current SingleTaskGP default (median 0.018, i.e. a noise std of about "
                 '0.13 data standard deviations)',
}


def make_noise_prior(name: str) -> Prior:
    """The prior :data:`NOISE_PRIORS` names, on :math:`\\lambda` in standardised output units.

    Raises:
        ValueError: unknown name.
    """
    if name == 'gamma':
        return GammaPrior(1.1, 0.05)
    if name == 'lognormal':
        return LogNormalPrior(-4.0, 1.0)
    raise ValueError(f'unknown noise prior {name!r}; known: {", ".join(NOISE_PRIORS)}')


class ReadingNoiseLikelihood(GaussianLikelihood):
    """Gaussian likelihood with a learned homoscedastic noise :math:`\\lambda` plus known per-reading variances.

    ``known_noise`` (buffer, ``(n,)``, the model's standardised units) is added to the diagonal of the
    training marginal when its length matches (the marginal likelihood's training call); zeros change nothing.

    Example:
        >>> import torch
        >>> from gpytorch.distributions import MultivariateNormal
        >>> from uncertain_bo.models import ReadingNoiseLikelihood
        >>> likelihood = ReadingNoiseLikelihood()
        >>> likelihood.noise = torch.tensor([0.01], dtype=torch.float64)             # the learned λ
        >>> likelihood.known_noise = torch.tensor([0.0, 0.04], dtype=torch.float64)  # reading 2 reported 0.04
        >>> f = MultivariateNormal(torch.zeros(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
        >>> [round(v, 6) for v in likelihood.marginal(f).covariance_matrix.diagonal().tolist()]   # 1 + λ, 1 + λ + 0.04
        [1.01, 1.05]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.register_buffer('known_noise', torch.zeros(0, dtype=DTYPE))

    def marginal(self, function_dist: MultivariateNormal, *args, **kwargs) -> MultivariateNormal:
        out = super().marginal(function_dist, *args, **kwargs)
        known = self.known_noise
        if known.numel() and known.numel() == out.mean.shape[-1] and bool((known > 0).any()):
            out = MultivariateNormal(out.mean, out.lazy_covariance_matrix + DiagLinearOperator(known.to(out.mean)))
        return out

r"""The exact marginal likelihood of :class:`~uncertain_bo.models.DistributionGP` with the expected SE kernel, its
gradient in closed form: what the hyperparameter fit (BoTorch's ``fit_gpytorch_mll``, L-BFGS-B) evaluates.

With training inputs :math:`P_i = \mathcal N(\mathbf m_i, \Sigma_i)` (unit-cube units; Dirac inputs have
:math:`\Sigma_i = 0`), lengthscales :math:`\ell`, signal variance :math:`\sigma_f^2`, each reading's noise
:math:`D_{ii}` and constant mean :math:`c`, the kernel (:class:`~uncertain_bo.kernels.ExpectedRBFKernel`, Oliveira et
al. 2019 Eq. 80) is, with :math:`A_{ij} = I + (\Sigma_i + \Sigma_j) / \ell\ell^\top` and
:math:`\tilde\delta_{ij} = (\mathbf m_i - \mathbf m_j) / \ell`,

.. math::
    k_{ij} = |A_{ij}|^{-1/2} \exp(-\tfrac12 \tilde\delta_{ij}^\top A_{ij}^{-1} \tilde\delta_{ij}), \qquad
    \frac{\partial \log k_{ij}}{\partial \ell_m} = \frac{1 - (A_{ij}^{-1})_{mm} + (A_{ij}^{-1}\tilde\delta_{ij})_m^2}
    {\ell_m},

and the log marginal likelihood of the readings :math:`\mathbf y` under :math:`C = \sigma_f^2 K + D` is
(Rasmussen & Williams 2006, Eqs. 2.30 and 5.9)

.. math::
    \log p(\mathbf y) = -\tfrac12 \mathbf r^\top C^{-1} \mathbf r - \tfrac12 \log|C| - \tfrac n2 \log 2\pi, \quad
    \mathbf r = \mathbf y - c, \qquad
    \frac{\partial \log p}{\partial C} = \tfrac12 (\boldsymbol\alpha\boldsymbol\alpha^\top - C^{-1}), \quad
    \boldsymbol\alpha = C^{-1}\mathbf r.

:class:`ExactMarginalLogLikelihoodFunction` computes :math:`\log p` and that gradient for :math:`\ell`,
:math:`\sigma_f^2`, :math:`D` and :math:`c` in one pass (one Cholesky factor, its inverse, a few :math:`n \times n`
products), instead of recording GPyTorch's graph of the kernel and the Cholesky factorisation and replaying it
backwards; the differences :math:`\mathbf m_i - \mathbf m_j` and the covariance sums, which do not depend on the
hyperparameters, are computed once per fit (:class:`PairwiseInputs`). The constraint transforms, the priors and the
input-induced variances (functions of the hyperparameters with ``input_induced_noise``) stay in autograd: they are a
few operations on vectors. :func:`negative_marginal_log_likelihood` is the model's ``compute_custom_loss`` (BoTorch's
hook for ``fit_gpytorch_mll``'s loss): the same value as GPyTorch's ``ExactMarginalLogLikelihood`` (to rounding),
and GPyTorch's own computation for kernels other than the expected SE kernel.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import torch
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.priors import GammaPrior
from linear_operator.utils.cholesky import psd_safe_cholesky
from torch import Tensor

from .. import linalg
from ..kernels import ExpectedRBFKernel

if TYPE_CHECKING:  # pragma: no cover
    from .distribution_gp import DistributionGP

__all__ = ['PairwiseInputs', 'expected_se_kernel_and_lengthscale_derivative', 'ExactMarginalLogLikelihoodFunction',
           'FitTerms', 'negative_marginal_log_likelihood', 'log_density']


@dataclass(frozen=True)
class PairwiseInputs:
    r"""What the expected SE kernel matrix of ``n`` Gaussian inputs needs that does not depend on the hyperparameters,
    for the ``P = n (n + 1) / 2`` pairs ``i <= j`` (the matrix is symmetric).

    Attributes:
        rows, cols: ``(P,)`` the pairs' indices ``i <= j``.
        delta: ``(P, d)`` differences of the means :math:`\mathbf m_i - \mathbf m_j`.
        spread: None when every covariance is zero (Dirac inputs: the plain SE kernel); ``(d, d)``
            :math:`\Sigma_i + \Sigma_j` when every input has the same covariance; else the entries
            :math:`(\Sigma_i + \Sigma_j)_{ab}`, ``b <= a``, as a nested list of ``(P,)`` tensors (``spread[a][b]``;
            :func:`~uncertain_bo.linalg.unrolled_cholesky`'s form), or ``(P, d, d)`` beyond
            :data:`~uncertain_bo.linalg.UNROLL_MAX_DIM`.

    Example:
        >>> import torch
        >>> from uncertain_bo.models.marginal_likelihood import PairwiseInputs
        >>> means = torch.tensor([[0.1, 0.2], [0.4, 0.8]], dtype=torch.float64)
        >>> pairs = PairwiseInputs.of(means, torch.zeros(2, 2, 2, dtype=torch.float64))
        >>> pairs.rows.tolist(), pairs.cols.tolist(), pairs.delta[1].tolist(), pairs.spread is None
        ([0, 0, 1], [0, 1, 1], [-0.30000000000000004, -0.6000000000000001], True)
    """

    rows: Tensor
    cols: Tensor
    delta: Tensor
    spread: Tensor | list[list[Tensor | None]] | None

    @classmethod
    def of(cls, means: Tensor, covariances: Tensor) -> 'PairwiseInputs':
        """From ``(n, d)`` means and ``(n, d, d)`` covariances."""
        n, d = means.shape
        rows, cols = torch.triu_indices(n, n, device=means.device)
        delta = means[rows] - means[cols]
        if not bool(covariances.any()):
            return cls(rows, cols, delta, None)
        if bool((covariances == covariances[:1]).all()):
            return cls(rows, cols, delta, covariances[0] + covariances[0])
        spread = covariances[rows] + covariances[cols]
        if d > linalg.UNROLL_MAX_DIM:
            return cls(rows, cols, delta, spread)
        return cls(rows, cols, delta, [[spread[:, a, b].contiguous() if b <= a else None for b in range(d)]
                                       for a in range(d)])

    @property
    def weight(self) -> Tensor:
        """``(P,)`` how many entries of the matrix each pair stands for: 1 on the diagonal, 2 off it."""
        return torch.where(self.rows == self.cols, 1.0, 2.0).to(self.delta)

    def matrix(self, values: Tensor, n: int) -> Tensor:
        """The symmetric ``(n, n)`` matrix whose pairs ``(i, j)`` and ``(j, i)`` hold ``values`` ``(P,)``."""
        out = values.new_empty(n, n)
        out[self.rows, self.cols] = values
        out[self.cols, self.rows] = values
        return out


def expected_se_kernel_and_lengthscale_derivative(pairs: PairwiseInputs, lengthscale: Tensor) -> tuple[Tensor, Tensor]:
    r"""The expected SE kernel (module docstring, without the signal variance) :math:`k_{ij}` and
    :math:`\partial \log k_{ij} / \partial \ell_m` of the pairs ``i <= j``.

    Args:
        pairs: the inputs' hyperparameter-free part.
        lengthscale: ``(d,)`` lengthscales (the inputs' units).

    Returns:
        ``(k (P,), dlogk (P, d))``.
    """
    inv_ell = lengthscale.reciprocal()
    scaled = pairs.delta * inv_ell                                          # δ̃ (P, d)
    spread = pairs.spread
    if spread is None:                                                      # A = I
        kernel = torch.exp(-0.5 * scaled.pow(2).sum(-1))
        return kernel, scaled.pow(2) * inv_ell
    if isinstance(spread, list):                                            # one A per pair, entry by entry
        a = [[None if s is None else s * (inv_ell[i] * inv_ell[j]) + float(i == j) for j, s in enumerate(row)]
             for i, row in enumerate(spread)]
        a_inv_diagonal, solved, half_logdet = linalg.unrolled_inverse_terms(linalg.unrolled_cholesky(a), scaled)
    else:
        eye = torch.eye(lengthscale.shape[-1], dtype=lengthscale.dtype, device=lengthscale.device)
        chol = torch.linalg.cholesky(eye + spread * (inv_ell.unsqueeze(-1) * inv_ell.unsqueeze(-2)))
        a_inv = torch.cholesky_inverse(chol)
        solved = (a_inv @ scaled.unsqueeze(-1)).squeeze(-1) if chol.ndim > 2 else scaled @ a_inv   # A⁻¹δ̃
        a_inv_diagonal = torch.diagonal(a_inv, dim1=-2, dim2=-1)
        half_logdet = torch.diagonal(chol, dim1=-2, dim2=-1).log().sum(-1)
    kernel = torch.exp(-0.5 * (scaled * solved).sum(-1) - half_logdet)
    return kernel, (1.0 - a_inv_diagonal + solved.pow(2)) * inv_ell


class ExactMarginalLogLikelihoodFunction(torch.autograd.Function):
    r""":math:`\log p(\mathbf y)` of the exact GP with the expected SE kernel (module docstring), its gradient in closed
    form: ``apply(lengthscale (d,), outputscale (), noise (n,), mean (), pairs, y (n,))`` -> a scalar,
    differentiable in the first four. A Cholesky factorisation that fails gets GPyTorch's jitter
    (``psd_safe_cholesky``), as in its ``ExactMarginalLogLikelihood``.

    Example:
        Against autograd through a dense Gaussian log density:

        >>> import math, torch
        >>> from uncertain_bo.models.marginal_likelihood import ExactMarginalLogLikelihoodFunction, PairwiseInputs
        >>> x = torch.rand(6, 2, dtype=torch.float64)
        >>> pairs = PairwiseInputs.of(x, torch.zeros(6, 2, 2, dtype=torch.float64))
        >>> y = torch.sin(5 * x[:, 0])
        >>> ell = torch.tensor([0.3, 0.5], dtype=torch.float64, requires_grad=True)
        >>> value = ExactMarginalLogLikelihoodFunction.apply(ell, torch.tensor(1.0, dtype=torch.float64),
        ...     torch.full((6,), 0.1, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64), pairs, y)
        >>> K = torch.exp(-0.5 * (((x[:, None] - x[None]) / ell) ** 2).sum(-1)) + 0.1 * torch.eye(6)
        >>> dense = torch.distributions.MultivariateNormal(torch.zeros(6, dtype=torch.float64), K).log_prob(y)
        >>> bool(torch.isclose(value, dense)), torch.allclose(torch.autograd.grad(value, ell)[0],
        ...                                                   torch.autograd.grad(dense, ell)[0])
        (True, True)
    """

    @staticmethod
    def forward(ctx: Any, lengthscale: Tensor, outputscale: Tensor, noise: Tensor, mean: Tensor,
                pairs: PairwiseInputs, y: Tensor) -> Tensor:
        kernel, dlogk = expected_se_kernel_and_lengthscale_derivative(pairs, lengthscale)
        kernel = pairs.matrix(kernel, y.shape[-1])
        cov = outputscale * kernel + torch.diag_embed(noise)
        chol = psd_safe_cholesky(cov)
        residual = (y - mean).unsqueeze(-1)
        alpha = torch.cholesky_solve(residual, chol)
        value = (-0.5 * (residual * alpha).sum() - torch.diagonal(chol).log().sum()
                 - 0.5 * y.shape[-1] * math.log(2 * math.pi))
        ctx.pairs = pairs
        ctx.save_for_backward(kernel, dlogk, chol, alpha.squeeze(-1), outputscale)
        return value

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        kernel, dlogk, chol, alpha, outputscale = ctx.saved_tensors
        d_cov = 0.5 * (alpha.unsqueeze(-1) * alpha.unsqueeze(-2) - torch.cholesky_inverse(chol))   # ∂ log p / ∂C
        d_kernel = d_cov * kernel                                  # ∂ log p / ∂σ_f², pair by pair
        pairs = ctx.pairs       # each pair i < j stands for (i, j) and (j, i): ∂C is symmetric
        d_lengthscale = outputscale * ((pairs.weight * d_kernel[pairs.rows, pairs.cols]) @ dlogk)
        return (grad * d_lengthscale, grad * d_kernel.sum(), grad * torch.diagonal(d_cov), grad * alpha.sum(),
                None, None)


class FitTerms:
    """What one hyperparameter fit evaluates again and again and computes once: the training inputs' pairwise part
    (:class:`PairwiseInputs`, O(n²) memory) and the list of the model's priors with their log densities
    (:func:`log_density`). The model owns one for the length of a fit and drops it after.

    Example:
        >>> import torch
        >>> from uncertain_bo.models.marginal_likelihood import FitTerms
        >>> terms = FitTerms()
        >>> inputs = torch.tensor([[0.1, 0.2, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)   # one Dirac input
        >>> split = lambda x: (x[:, :2], x[:, 2:].reshape(-1, 2, 2))
        >>> terms.pairs(inputs, split) is terms.pairs(inputs, split)     # computed once for the same inputs
        True
    """

    def __init__(self) -> None:
        self._pairs: tuple[Tensor, PairwiseInputs] | None = None
        self._priors: tuple[weakref.ref, list] | None = None

    def pairs(self, inputs: Tensor, split: Callable[[Tensor], tuple[Tensor, Tensor]]) -> PairwiseInputs:
        """The :class:`PairwiseInputs` of ``inputs`` (the kernel's encoding; ``split`` gives its ``(n, d)`` means and
        ``(n, d, d)`` covariances), computed again only when the inputs are another tensor."""
        if self._pairs is None or self._pairs[0] is not inputs:
            with torch.no_grad():
                self._pairs = (inputs, PairwiseInputs.of(*split(inputs)))
        return self._pairs[1]

    def priors(self, model: 'DistributionGP', mll: ExactMarginalLogLikelihood) -> list:
        """``(module, log density, closure)`` of each of the model's priors, listed once per ``mll`` (one per fit)."""
        if self._priors is None or self._priors[0]() is not mll:
            self._priors = (weakref.ref(mll), [(module, log_density(prior), closure)
                                               for _, module, prior, closure, _ in model.named_priors()])
        return self._priors[1]


def negative_marginal_log_likelihood(model: 'DistributionGP', mll: ExactMarginalLogLikelihood,
                                     terms: FitTerms | None = None) -> Tensor:
    """``-mll(model(*train_inputs), train_targets)``: GPyTorch's ``ExactMarginalLogLikelihood`` (log density plus the
    priors' log densities, divided by ``n``) negated, the loss of BoTorch's ``fit_gpytorch_mll``; for the expected SE
    kernel through :class:`ExactMarginalLogLikelihoodFunction`, else GPyTorch's own computation.

    Args:
        model: a ``DistributionGP`` in training mode with its training data given to GPyTorch.
        mll: its ``ExactMarginalLogLikelihood``.
        terms: the fit's :class:`FitTerms` (default: computed for this call only).

    Returns:
        The loss, a scalar differentiable in the model's hyperparameters.
    """
    kernel = model.kernel
    inputs, y = model.train_inputs[0], model.train_targets
    if type(kernel) is not ExpectedRBFKernel or kernel.lengthscale.shape[:-2] or inputs.ndim != 2:
        return -mll(model(*model.train_inputs), y)
    terms = terms if terms is not None else FitTerms()
    noise = model.likelihood.noise.reshape(()).expand(y.shape[-1])
    known = model.likelihood.known_noise
    if known.numel() == y.shape[-1]:
        noise = noise + known.to(noise)
    if model.input_induced_noise and model._train_locations_given is not None:
        noise = noise + model.input_variance(model._train_locations_given)
    value = ExactMarginalLogLikelihoodFunction.apply(
        kernel.lengthscale.reshape(-1), model.covar_module.outputscale, noise, model.mean_module.constant.reshape(()),
        terms.pairs(inputs, kernel._split), y)
    for module, log_prob, closure in terms.priors(model, mll):    # as GPyTorch's (the model's priors)
        value = value + log_prob(closure(module)).sum()
    return -value / y.shape[-1]


def log_density(prior: Any) -> Callable[[Tensor], Tensor]:
    r"""``prior.log_prob``, for a ``GammaPrior`` with its hyperparameter-free terms computed once: torch's
    :math:`\alpha \log\beta + (\alpha - 1)\log x - \beta x - \log\Gamma(\alpha)`, term by term in its order, so the
    values and gradients are torch's to the bit at a third of the cost (a fit evaluates it 3 times per evaluation).
    Other priors, a prior with a transform or with torch's support check on: their own ``log_prob``.

    Example:
        >>> import torch
        >>> from gpytorch.priors import GammaPrior
        >>> prior = GammaPrior(3.0, 6.0).to(torch.float64)
        >>> x = torch.tensor([0.2, 0.7], dtype=torch.float64)
        >>> bool(torch.equal(log_density(prior)(x), prior.log_prob(x)))
        True
    """
    if type(prior) is not GammaPrior or prior._transform is not None or prior._validate_args:
        return prior.log_prob
    concentration, rate = prior.concentration, prior.rate
    first, shape, last = torch.xlogy(concentration, rate), concentration - 1, torch.lgamma(concentration)

    def gamma_log_prob(value: Tensor) -> Tensor:
        value = torch.as_tensor(value, dtype=rate.dtype, device=rate.device)
        return first + torch.xlogy(shape, value) - rate * value - last
    return gamma_log_prob

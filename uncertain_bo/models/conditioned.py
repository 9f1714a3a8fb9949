r"""A :class:`~uncertain_bo.models.DistributionGP` conditioned on a **batch** of fantasised readings: what BoTorch's
``fantasize`` returns, so that look-ahead acquisitions (``qKnowledgeGradient``, ``qNegIntegratedPosteriorVariance``)
run on the model.

BoTorch's ``FantasizeMixin.fantasize`` samples ``S`` sets of readings ``Y`` (``S x batch x k x 1``) at ``k`` inputs per
batch element (``batch x k x d``) and conditions the model on each: the result is a model of batch shape
``S x batch``. Each of its posteriors is Gaussian conditioning of the fitted model's joint posterior, with the same
hyperparameters and output standardisation: for queries :math:`x` and the fantasy inputs :math:`F` with readings
:math:`\mathbf y_F` and noise :math:`N_F` (:math:`\lambda`, plus the reported variances, plus the input-induced
variances with ``input_induced_noise``),

.. math::
    \mu'(x) = \mu(x) + C(x, F)\,(C(F, F) + N_F)^{-1} (\mathbf y_F - \mu(F)), \qquad
    C'(x, x') = C(x, x') - C(x, F)\,(C(F, F) + N_F)^{-1} C(F, x'),

which is the posterior of the model refitted on the readings plus the fantasies with fixed hyperparameters (the
test of :mod:`test.models.test_conditioned`). It costs the fitted model's joint posterior over ``k + q`` inputs per
batch element and holds no factor of its own, so ``S`` fantasies of a batch are as cheap to build as one. One set of
readings without a batch (``Y`` ``k`` or ``k x 1``: the kriging believer of the pending targets) is instead grown into
the prediction strategy (:meth:`DistributionGP.condition_on_observations
<uncertain_bo.models.DistributionGP.condition_on_observations>`), which keeps the model's other methods.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator.operators import DenseLinearOperator
from torch import Tensor

from ..distributions import LocationDistributions, cat

if TYPE_CHECKING:
    from .distribution_gp import DistributionGP

__all__ = ['ConditionedGP']


class ConditionedGP(Model):
    """``gp`` conditioned on ``S x batch`` sets of ``k`` readings each (module docstring); read-only.

    Args:
        gp: the fitted :class:`~uncertain_bo.models.DistributionGP` (not copied).
        inputs: ``prod(input_batch) * k`` location distributions where the readings are taken, batch-major.
        input_batch: the batch shape of ``inputs`` in front of ``k``.
        Y: ``batch_shape x k x 1`` readings (output units); ``input_batch`` broadcasts to ``batch_shape``.
        noise: reported variances of the readings (output units², broadcastable to ``batch_shape x k x 1`` as BoTorch's
            ``fantasize`` passes them; None = none), added to :math:`\\lambda` and the input-induced variance as for
            a real reading.

    Raises:
        ValueError: shapes that do not match.

    Example:
        >>> import torch
        >>> from botorch.sampling import SobolQMCNormalSampler
        >>> from uncertain_bo.distributions import Dirac
        >>> from uncertain_bo.models import DistributionGP
        >>> gp = DistributionGP(torch.tensor([[0.0, 0.0], [1.0, 1.0]]))
        >>> X = torch.rand(8, 2, dtype=torch.float64)
        >>> gp.set_data(Dirac(X), X.sum(-1).sin())
        >>> fantasy = gp.fantasize(torch.rand(3, 1, 2, dtype=torch.float64),
        ...                        SobolQMCNormalSampler(torch.Size([4])))
        >>> fantasy.batch_shape, fantasy.posterior(torch.rand(4, 3, 5, 2, dtype=torch.float64)).mean.shape
        (torch.Size([4, 3]), torch.Size([4, 3, 5, 1]))
    """

    def __init__(self, gp: 'DistributionGP', inputs: LocationDistributions, input_batch: torch.Size, Y: Tensor,
                 noise: Tensor | None = None):
        super().__init__()
        k = len(inputs) // max(math.prod(input_batch), 1)
        if Y.ndim < 2 or Y.shape[-1] != 1 or Y.shape[-2] != k:
            raise ValueError(f'readings must be batch x {k} x 1 for {k} inputs per batch, got {tuple(Y.shape)}')
        self._batch = torch.broadcast_shapes(Y.shape[:-2], input_batch)
        object.__setattr__(self, 'gp', gp)     # not a submodule: the view neither trains nor moves the model
        self.inputs, self.input_batch, self.k = inputs, torch.Size(input_batch), k
        self.Y = Y[..., 0].to(gp.bounds)
        known = gp.noise_at(inputs).reshape(*input_batch, k)
        self.noise = known if noise is None else known + torch.as_tensor(noise).to(known)[..., 0]

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        """``S x batch``: the fantasies' batch shape."""
        return self._batch

    def transform_inputs(self, X: Tensor, input_transform: Any = None) -> Tensor:
        return X

    def posterior(self, X: Tensor | LocationDistributions, output_indices: list[int] | None = None,
                  observation_noise: bool | Tensor = False, posterior_transform: Any = None,
                  batch_shape: Sequence[int] | None = None, **kwargs: Any) -> GPyTorchPosterior:
        """Joint posterior of the latent over each batch of ``q`` inputs, given the fantasies.

        Args:
            X: points ``batch' x q x d`` (physical units) or a distribution batch with ``batch_shape`` in front of
                ``q``, as for :meth:`DistributionGP.posterior <uncertain_bo.models.DistributionGP.posterior>`;
                ``batch'`` broadcasts with :attr:`batch_shape`.
            output_indices, observation_noise, posterior_transform: as for ``DistributionGP.posterior``.

        Returns:
            ``GPyTorchPosterior`` with mean ``broadcast(batch', S x batch) x q x 1`` (output units).
        """
        gp = self.gp
        dists, xb = gp._as_batch(X, batch_shape)
        if output_indices is not None and list(output_indices) != [0]:
            raise ValueError(f'one output; output_indices must be None or [0], got {output_indices}')
        q = len(dists) // max(math.prod(xb), 1)
        shape = torch.broadcast_shapes(xb, self._batch)
        nf = len(self.inputs)
        device = gp.bounds.device
        rows_f = torch.arange(nf, device=device).reshape(*self.input_batch, self.k).expand(*shape, self.k)
        rows_x = nf + torch.arange(len(dists), device=device).reshape(*xb, q).expand(*shape, q)
        joint = cat([self.inputs, dists])[torch.cat([rows_f, rows_x], -1).reshape(-1)]
        post = gp.posterior(joint, batch_shape=shape)
        mean, cov = post.mean[..., 0], post.distribution.covariance_matrix
        k = self.k
        cff = cov[..., :k, :k] + torch.diag_embed(self.noise.expand(*shape, k))
        cfx = cov[..., :k, k:]
        chol = torch.linalg.cholesky(cff)
        a = torch.cholesky_solve(torch.cat([(self.Y.expand(*shape, k) - mean[..., :k]).unsqueeze(-1), cfx], -1), chol)
        mean_x = mean[..., k:] + (cfx.transpose(-1, -2) @ a[..., :1])[..., 0]
        cov_x = cov[..., k:, k:] - cfx.transpose(-1, -2) @ a[..., 1:]
        cov_x = (cov_x + cov_x.transpose(-1, -2)) / 2
        if observation_noise is not False:
            extra = (observation_noise.to(cov_x).expand(*shape, q) if isinstance(observation_noise, Tensor)
                     else gp.noise_at(dists).to(cov_x).reshape(*xb, q).expand(*shape, q))
            cov_x = cov_x + torch.diag_embed(extra)
        out = GPyTorchPosterior(MultivariateNormal(mean_x, DenseLinearOperator(cov_x)))
        return out if posterior_transform is None else posterior_transform(out)

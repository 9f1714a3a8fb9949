r"""Kernels over location distributions, as GPyTorch kernels; one module per family, as in GPyTorch's
``gpytorch.kernels``:

=============================  ================================================================================
module                         contents
=============================  ================================================================================
``distribution_kernel``        base classes :class:`DistributionKernel`, :class:`SampleDistributionKernel`
``expected_rbf``               :class:`ExpectedRBFKernel`: expected SE kernel of Gaussians in closed form
                               (Oliveira et al. 2019, Eq. 80); :func:`se_kernel`, the SE kernel on points
``additive_rq``                :class:`AdditiveRQKernel`: AIRBO's base kernel on points (Eq. 32)
``kernel_mean_embedding``      embedding inner products from samples, :class:`KernelMeanEmbeddingKernel` (uGP)
``mmd``                        :class:`MMDKernel`: AIRBO's MMD kernel, empirical and Nyström estimators
``skl``                        :class:`SymmetrizedKLKernel`: symmetrised-KL baseline
=============================  ================================================================================

Every public name is importable from ``uncertain_bo.kernels``.
"""
from .additive_rq import AdditiveRQKernel, squared_distances
from .distribution_kernel import DEFAULT_MAX_BLOCK, DistributionKernel, SampleDistributionKernel
from .expected_rbf import ExpectedRBFKernel, gaussian_quadratic_and_logdet, se_kernel
from .kernel_mean_embedding import (KernelMeanEmbeddingKernel, embedding_inner_products,
                                    embedding_paired_inner_products, embedding_self_inner_products)
from .mmd import MMD_MAX_BLOCK, MMDKernel
from .skl import SymmetrizedKLKernel

__all__ = ['DistributionKernel', 'ExpectedRBFKernel', 'se_kernel', 'squared_distances', 'AdditiveRQKernel',
           'SampleDistributionKernel', 'KernelMeanEmbeddingKernel', 'MMDKernel', 'SymmetrizedKLKernel',
           'embedding_inner_products', 'embedding_self_inner_products', 'embedding_paired_inner_products',
           'gaussian_quadratic_and_logdet', 'DEFAULT_MAX_BLOCK', 'MMD_MAX_BLOCK']

r"""Location distributions: batches of probability distributions over :math:`\mathbb R^d`.

A measurement taken by a rover is a pair (location distribution :math:`P^L_t`, reading :math:`y_t`): the
rover's localisation filter only knows *where* the reading was taken up to a distribution (Oliveira et
al. 2019, §3). Candidate targets during acquisition are also distributions: the execution-noise model
:math:`\hat P_{\mathbf x}` centred on the commanded target (paper Algorithm 1).

Three batched types share one interface (:class:`LocationDistributions`):

- :class:`Dirac` — exactly known points, ``mean (n, d)``;
- :class:`Gaussian` — per-point mean and covariance, ``mean (n, d)``, ``covariance (n, d, d)``;
  each point carries its own covariance (heteroscedastic, e.g. from an EKF);
- :class:`Empirical` — sample-based (optionally weighted), ``samples (n, m, d)``, ``weights (n, m)``
  (particle filters, arbitrary execution noise).

Kernels over distributions (``uncertain_bo.kernels``) turn a batch into the flat tensor they consume with
their own ``encode`` method, so every model and acquisition works on these types only.


The package, one module per concept (every public name is importable from ``uncertain_bo.distributions``):

=====================  =========================================================================================
module                 contents
=====================  =========================================================================================
``batches``            :class:`LocationDistributions`, :class:`Dirac`, :class:`Gaussian`, :class:`Empirical`,
                       :func:`cat`, :func:`replace_rows`
``execution_noise``    the execution-noise models :math:`\hat P_{\mathbf x}`: :class:`ExecutionNoise`,
                       :class:`SampledExecutionNoise` (fixed base samples), :class:`GaussianExecutionNoise`
                       (the one Gaussian model; the other sampled models are in :mod:`uncertain_bo.noise`),
                       :class:`NoiseConfigError`, :data:`DEFAULT_N_SAMPLES`
``checks``             the checks shared with the NumPy (torch-free) layer: :func:`check_covariance`,
                       :func:`weights_problem`, :class:`InvalidDistributionError`; the conversion from the
                       ROS 2 covariance layout (:func:`ros_covariance_to_xy`); :data:`DTYPE`
=====================  =========================================================================================

The moment matching of particle clouds (:func:`particle_moments`) is :mod:`uncertain_bo.distributions.covariance`'s,
re-exported here.
"""
from .covariance import particle_moments
from .batches import Dirac, Empirical, Gaussian, LocationDistributions, cat, replace_rows
from .checks import DTYPE  # noqa: F401  (float64, imported from here across the library)
from .checks import InvalidDistributionError, check_covariance, ros_covariance_to_xy, weights_problem
from .execution_noise import (DEFAULT_N_SAMPLES, ExecutionNoise, GaussianExecutionNoise, NoiseConfigError,
                              SampledExecutionNoise)

__all__ = [
    'InvalidDistributionError', 'LocationDistributions', 'Dirac', 'Gaussian', 'Empirical',
    'ExecutionNoise', 'SampledExecutionNoise', 'GaussianExecutionNoise', 'NoiseConfigError', 'check_covariance',
    'ros_covariance_to_xy', 'cat', 'replace_rows', 'DEFAULT_N_SAMPLES', 'weights_problem', 'particle_moments',
]

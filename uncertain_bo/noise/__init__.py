r"""Sample-based execution-noise models :math:`P_{\mathbf x}`: the law of :math:`\mathbf x + \delta(\mathbf x)`.

AIRBO (Yang et al., NeurIPS 2023, §1 and §5) only needs to *sample* the distribution of the executed input,
so the noise may be non-Gaussian, multimodal, one-sided or depend on the target. This module holds the
paper's set of noise models (AIRBO §5 and App. C; scipy parametrisation with ``loc = 0``, i.e. a
beta or :math:`\chi^2` perturbation is a one-sided shift, not zero-mean):

=====================  ===============================================================  ====================
kind                   :math:`\delta` (per axis unless stated)                          paper use
=====================  ===============================================================  ====================
``gaussian``           :math:`\mathcal N(0, \Sigma)`                                     Fig. 2a, 4a (RKHS)
``beta``               ``scale`` :math:`\cdot\,\mathrm{Beta}(\alpha, \beta)`               Fig. 3, 4c (double peak)
``step_chi2``          ``scale`` :math:`\cdot\,\chi^2(g(x))`, :math:`g` steps at           Fig. 2d, Fig. 7
                       ``threshold``
``varying_beta``       :math:`a(\sin(2\pi f x) + 1)\,\mathrm{Beta}(\alpha, \beta)`         Fig. 2c (``a = 0.09``,
                                                                                        ``f = 2``: the code's
                                                                                        value; the paper's 0.9
                                                                                        is a typo)
``gaussian_mixture``   :math:`\sum_k w_k \mathcal N(\mu_k, \Sigma_k)`                      App. D (GMM input)
``circular``           :math:`r(\cos\theta, \sin\theta)`, :math:`\theta\sim U[0, 2\pi)`     App. D.3 (2-D part)
``circular_gaussian``  circular (first 2 axes) :math:`\times\ \mathcal N(0, s^2 I)` (rest)  App. D.3 (10-D bowl)
``concat``             independent components on consecutive axes                       general products
=====================  ===============================================================  ====================

The ``gaussian`` kind is :class:`~uncertain_bo.distributions.GaussianExecutionNoise` (re-exported here), the
one Gaussian model of the library: closed form by default, sampled with ``n_samples`` (the configuration's
default, 160, as every kind here).

**Common random numbers.** Each model keeps fixed *base samples* (``n_samples`` draws of the
standardised randomness). Calling the model on targets ``(q, d)`` returns an
:class:`~uncertain_bo.distributions.Empirical` batch whose samples are :math:`\mathbf x_i + \delta(\mathbf
x_i; \xi_j)` with the *same* :math:`\xi_j` for every target and every call, so the acquisition is a
deterministic, smooth function of the targets during one maximisation and its gradient flows through
:math:`\mathbf x + \delta` (AIRBO's code redraws on every call, which makes its acquisition
stochastic). :meth:`SampledExecutionNoise.refresh` draws new base samples.

:meth:`SampledExecutionNoise.sample_executed` draws one fresh executed position per target (what a
simulated world uses); :meth:`SampledExecutionNoise.sample_locations` draws fresh Monte Carlo samples
(robust-objective oracles).

Configuration: :func:`noise_from_config` builds a model from a dict (e.g. a YAML mapping); every model
has :meth:`~SampledExecutionNoise.to_config` and ``noise_from_config(n.to_config())`` rebuilds it with
identical base samples.

The package, one module per concept: ``models`` (the models of the table but ``gaussian``) and ``config``
(:func:`noise_from_config`, :func:`noise_from_yaml`, :data:`NOISE_KINDS`); the base class and the Gaussian model
are :mod:`uncertain_bo.distributions.execution_noise`'s. Every public name is importable from ``uncertain_bo.noise``.
"""
from ..distributions import DEFAULT_N_SAMPLES, GaussianExecutionNoise, NoiseConfigError, SampledExecutionNoise
from .config import NOISE_KINDS, noise_from_config, noise_from_yaml
from .models import (BetaNoise, CircularNoise, ConcatNoise, GaussianMixtureNoise, StepChi2Noise, VaryingBetaNoise,
                     circular_gaussian)

__all__ = [
    'NoiseConfigError', 'SampledExecutionNoise', 'GaussianExecutionNoise', 'BetaNoise', 'StepChi2Noise',
    'VaryingBetaNoise', 'GaussianMixtureNoise', 'CircularNoise', 'ConcatNoise', 'circular_gaussian',
    'noise_from_config', 'noise_from_yaml', 'NOISE_KINDS', 'DEFAULT_N_SAMPLES',
]

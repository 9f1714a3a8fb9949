r"""AIRBO and the surrogate baselines of its experiments (Yang et al., NeurIPS 2023, §5.3), as registry methods.

Each method is a kernel choice for the shared :class:`~uncertain_bo.models.DistributionGP` plus the UCB
acquisition :math:`\hat\mu(P_{\mathbf x}) + \beta\,\hat\sigma(P_{\mathbf x})` (paper Eq. 5; App. C.1 uses
:math:`\beta = 2`, i.e. ``beta=2.0`` here since ``beta`` multiplies :math:`\sigma` directly, and
``beta=4.0`` in BoTorch's convention). Candidates are scored through the execution-noise model
:math:`P_{\mathbf x}` given to the :class:`~uncertain_bo.planning.planner.Planner` (for AIRBO's experiments a
sample-based model from :mod:`uncertain_bo.noise`, whose fixed base samples make the acquisition
deterministic), and the recommendation is the past target with the best posterior mean (the
Planner's ``recommend``; the reference code's ``OPTIMUM_BE``).

In AIRBO's setting the executed input is never observed: pass the target's own distribution
:math:`P_{\mathbf x_t}` (``noise(target[None])``) as the location to ``Planner.observe``. A location
estimate from a localisation filter (e.g. a particle cloud as an ``Empirical``) works the same way.

=====================  =====================================================================================
method                 kernel
=====================  =====================================================================================
``airbo``              MMD kernel, Nyström estimator (``h = 10`` landmarks, the reference code's default with
                       160 samples per input), additive-RQ base kernel (Eqs. 9, 12, 32)
``airbo_empirical``    MMD kernel, empirical U-statistic (Eq. 8) — the "MMDGP-raw" ablation of App. D.2
``ugp_kme``            sample-based kernel mean embedding (uGP, Oliveira et al. 2019), SE base kernel,
                       at most 40 samples per input (:math:`\lfloor\sqrt{160 \cdot 10}\rfloor`, AIRBO's
                       cost-matched budget)
``skl``                symmetrised KL between moment-matched diagonal Gaussians (GPyTorch's kernel)
``erbf``               closed-form expected SE kernel of moment-matched Gaussians (Eq. 80, done right; the
                       reference code's ERBF mis-scales the covariances it is given): an **alias** of
                       ``ugp_ucb``, whose kernel and acquisition these are, kept under AIRBO's name for its
                       baseline tables
``gp_ucb``             plain GP on the commanded targets (Dirac inputs, SE kernel), points as candidates;
                       an **alias** of ``igp_ucb`` (the same model and acquisition) under the paper's name
=====================  =====================================================================================
"""
from __future__ import annotations

import math

from gpytorch.priors import GammaPrior

from ..kernels import AdditiveRQKernel, KernelMeanEmbeddingKernel, MMDKernel, SymmetrizedKLKernel
from .igp_ucb import IGPUCB
from .method import UCBMethod, register
from .ugp_ucb import UGPUCB

__all__ = ['AIRBO_BETA', 'AIRBO_N_LANDMARKS', 'UGP_MAX_SAMPLES', 'mmd_kernel', 'kme_kernel', 'skl_kernel']

AIRBO_BETA = 2.0
r""":math:`\beta` of AIRBO's UCB (App. C.1: :math:`\mu + 2\sigma`); pass it as the Planner's ``beta``."""

AIRBO_N_LANDMARKS = 10
"""Nyström landmarks ``h`` (reference code default, with 160 samples per input)."""

UGP_MAX_SAMPLES = 40
"""Samples per input for the uGP baseline (AIRBO's cost-matched budget)."""


def mmd_kernel(dim: int, estimator: str = 'nystrom', n_landmarks: int = AIRBO_N_LANDMARKS) -> MMDKernel:
    r"""AIRBO's kernel: ``MMDKernel`` with the additive-RQ base kernel (wrapped in ``ScaleKernel`` by the GP).

    Priors (ours; the paper does not say how it regularises, the reference code relies on 100 Adam steps
    from :math:`l_i = 1`, :math:`\ell \approx 0.69`): for a shift :math:`s` between two distributions of the
    same shape, :math:`\mathrm{MMD}^2 \approx s^2 \sum_i l_i^{-2}`, so only :math:`\ell^2 \sum_i l_i^{-2}`
    is identified by small shifts and unregularised maximum likelihood drifts to :math:`l_i \gg 1`,
    :math:`\ell \ll 1` or to a flat kernel. Gamma(3, 3) on each :math:`l_i` (mean 1, unit-cube units) keeps
    the base kernel at the reference's scale, and Gamma(3, 6/\sqrt 5) on :math:`\ell` is the GP's default
    Gamma(3, 6) lengthscale prior expressed for the equivalent SE lengthscale :math:`\ell/\sqrt 5`.

    Args:
        dim: input dimension.
        estimator: ``'nystrom'`` (AIRBO) or ``'empirical'`` (U-statistic).
        n_landmarks: Nyström landmarks ``h``.
    """
    base = AdditiveRQKernel(lengthscale_prior=GammaPrior(3.0, 3.0))
    return MMDKernel(dim, estimator=estimator, n_landmarks=n_landmarks, base_kernel=base,
                     lengthscale_prior=GammaPrior(3.0, 6.0 / math.sqrt(5.0)))


def kme_kernel(dim: int, max_samples: int | None = UGP_MAX_SAMPLES) -> KernelMeanEmbeddingKernel:
    """uGP's integral kernel with the SE base kernel and the GP's default lengthscale prior (Gamma(3, 6))."""
    return KernelMeanEmbeddingKernel(dim, max_samples=max_samples, lengthscale_prior=GammaPrior(3.0, 6.0))


def skl_kernel(dim: int) -> SymmetrizedKLKernel:
    """Symmetrised-KL baseline on moment-matched diagonal Gaussians (median-heuristic initial lengthscale)."""
    return SymmetrizedKLKernel(dim)


@register
class AIRBO(UCBMethod):
    """AIRBO: MMD kernel with the Nystrom estimator over sampled input distributions, UCB (Yang et al. 2023; use
    beta=2).

    Example:
        AIRBO's first decision on AIRBO's 1-D RKHS problem, its GP on the input samples (the method examples'
        set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('airbo', measurements=4,
        ...                                               settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('samples', 'acquisition', torch.Size([1]))
    """

    name = 'airbo'
    description = ('AIRBO: MMD kernel with the Nystrom estimator over sampled input distributions, UCB '
                   '(Yang et al. 2023; use beta=2)')
    inputs = 'samples'

    def kernel(self, dim: int) -> MMDKernel:
        return mmd_kernel(dim)


@register
class AIRBOEmpirical(UCBMethod):
    """AIRBO ablation "MMDGP-raw": MMD kernel with the empirical U-statistic, UCB.

    Example:
        AIRBOEmpirical's first decision on AIRBO's 1-D RKHS problem, its GP on the input samples (the method
        examples' set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('airbo_empirical', measurements=4,
        ...                                               settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('samples', 'acquisition', torch.Size([1]))
    """

    name = 'airbo_empirical'
    description = 'AIRBO ablation "MMDGP-raw": MMD kernel with the empirical U-statistic, UCB'
    inputs = 'samples'

    def kernel(self, dim: int) -> MMDKernel:
        return mmd_kernel(dim, estimator='empirical')


@register
class UGPKME(UCBMethod):
    """uGP-UCB with the sample-based kernel mean embedding (SE base kernel, <= 40 samples/input).

    Example:
        UGPKME's first decision on AIRBO's 1-D RKHS problem, its GP on the input samples (the method examples'
        set-up, :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('ugp_kme', measurements=4,
        ...                                               settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('samples', 'acquisition', torch.Size([1]))
    """

    name = 'ugp_kme'
    description = 'uGP-UCB with the sample-based kernel mean embedding (SE base kernel, <= 40 samples/input)'
    inputs = 'samples'

    def kernel(self, dim: int) -> KernelMeanEmbeddingKernel:
        return kme_kernel(dim)


@register
class SKL(UCBMethod):
    """SKL-UCB: symmetrised-KL kernel on moment-matched diagonal Gaussians (Moreno et al. 2003).

    Example:
        SKL's first decision on AIRBO's 1-D RKHS problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('skl', measurements=4, settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('gaussian', 'acquisition', torch.Size([1]))
    """

    name = 'skl'
    description = 'SKL-UCB: symmetrised-KL kernel on moment-matched diagonal Gaussians (Moreno et al. 2003)'

    def kernel(self, dim: int) -> SymmetrizedKLKernel:
        return skl_kernel(dim)


@register
class ERBF(UGPUCB):
    """Alias of ``ugp_ucb`` (module docstring): the expected SE kernel on (moment-matched) Gaussians is uGP-UCB's
    default kernel, and the acquisition is the same UCB.

    Example:
        ERBF's first decision on AIRBO's 1-D RKHS problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('erbf', measurements=4,
        ...                                               settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('gaussian', 'acquisition', torch.Size([1]))
    """

    name = 'erbf'
    alias_of = 'ugp_ucb'
    description = ('ERBF-UCB (alias of ugp_ucb): closed-form expected SE kernel on moment-matched Gaussians '
                   '(Dallaire et al. 2011)')


@register
class GPUCB(IGPUCB):
    """Alias of ``igp_ucb``: GP-UCB on the commanded targets, AIRBO's name for it.

    Example:
        GP-UCB's first decision on AIRBO's 1-D RKHS problem (the method examples' set-up,
        :mod:`uncertain_bo.acquisition`):

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> planner = get_problem('rkhs1d-gauss').planner('gp_ucb', measurements=4,
        ...                                               settings=BenchSettings.quick(beta=2.0))
        >>> planner.input_kind, planner.decisions[-1].phase, planner.targets[-1].shape
        ('target', 'acquisition', torch.Size([1]))
    """

    name = 'gp_ucb'
    alias_of = 'igp_ucb'
    description = ('GP-UCB (alias of igp_ucb): standard GP on the commanded targets, ignoring input noise '
                   '(AIRBO baseline)')

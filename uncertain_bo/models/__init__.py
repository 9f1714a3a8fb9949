"""The one model of the package: :class:`DistributionGP`, a GP over location distributions that is a BoTorch ``Model``
(:mod:`.distribution_gp`); its prediction strategies (:mod:`.prediction`), its likelihood (:mod:`.likelihood`), the
marginal likelihood its fit evaluates (:mod:`.marginal_likelihood`), its view over commanded targets for stock
BoTorch acquisitions (:mod:`.target_model`), its fantasy models (:mod:`.conditioned`) and its posterior sample paths
(:mod:`.sample_paths`)."""
from botorch.exceptions.errors import ModelFittingError

from .conditioned import ConditionedGP
from .distribution_gp import DistributionGP
from .likelihood import NOISE_PRIORS, ReadingNoiseLikelihood, make_noise_prior
from .target_model import TargetModel

__all__ = ['DistributionGP', 'ConditionedGP', 'TargetModel', 'ReadingNoiseLikelihood', 'ModelFittingError',
           'NOISE_PRIORS', 'make_noise_prior']

"""Tests for uncertain_bo.noise.config: every kind builds from a mapping or YAML, errors name the field."""
import pytest
import torch

from uncertain_bo.distributions import Empirical, Gaussian, GaussianExecutionNoise
from uncertain_bo.noise import (BetaNoise, CircularNoise, NoiseConfigError, StepChi2Noise, noise_from_config,
                                noise_from_yaml)


def test_config_kinds_build():
    assert isinstance(noise_from_config({'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 0.1}), BetaNoise)
    n = noise_from_config({'kind': 'gaussian', 'std': [0.1, 0.2], 'n_samples': 7, 'seed': 3})
    assert n.dim == 2 and n.n_samples == 7 and n.seed == 3
    assert torch.allclose(n.covariance, torch.diag(torch.tensor([0.01, 0.04])))
    c = noise_from_config({'kind': 'concat', 'components': [{'kind': 'circular'},
                                                            {'kind': 'beta', 'alpha': 1, 'beta': 1, 'scale': 1}]})
    assert c.dim == 3
    assert isinstance(noise_from_config({'kind': 'circular'}), CircularNoise)
    assert noise_from_config({'kind': 'circular_gaussian'}).dim == 10


def test_yaml_string():
    n = noise_from_yaml('kind: step_chi2\nthreshold: 0.5\nscale: 0.02\n')
    assert isinstance(n, StepChi2Noise) and n.threshold == 0.5 and n.scale == 0.02


@pytest.mark.parametrize('cfg, field', [
    ({'alpha': 1}, 'kind'),
    ({'kind': 'betta'}, 'kind'),
    ({'kind': 'beta', 'alpha': 0.4, 'beta': 0.2}, 'scale'),
    ({'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 0.1, 'sclae': 1}, 'sclae'),
    ({'kind': 'beta', 'alpha': -0.4, 'beta': 0.2, 'scale': 0.1}, 'alpha'),
    ({'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 'big'}, 'scale'),
    ({'kind': 'step_chi2', 'df_above': 0}, 'df_above'),
    ({'kind': 'gaussian'}, 'std'),
    ({'kind': 'gaussian', 'std': 0.1}, 'dim'),
    ({'kind': 'gaussian', 'covariance': [[1.0, 2.0], [2.0, 1.0]]}, 'covariance'),
    ({'kind': 'gaussian', 'std': 0.1, 'dim': 1, 'n_samples': 0}, 'n_samples'),
    ({'kind': 'gaussian', 'std': 0.1, 'dim': 1, 'seed': 1.5}, 'seed'),
    ({'kind': 'gaussian_mixture', 'weights': [0.5, 0.5], 'means': [[0, 0], [-1, 1]],
      'covariances': [[[0.01, -0.09], [-0.09, 0.01]]] * 2}, 'covariances'),  # AIRBO Eq. 34: indefinite
    ({'kind': 'gaussian_mixture', 'weights': [0.5, 0.5], 'means': [0.0], 'stds': [0.1, 0.1]}, 'means'),
    ({'kind': 'circular', 'radius': -1}, 'radius'),
    ({'kind': 'concat', 'components': [{'kind': 'beta', 'alpha': 1}]}, 'components[0]'),
])
def test_config_errors_name_the_field(cfg, field):
    with pytest.raises(NoiseConfigError, match=field.replace('[', r'\[').replace(']', r'\]')):
        noise_from_config(cfg)


def test_config_rejects_non_mapping():
    with pytest.raises(NoiseConfigError, match='mapping'):
        noise_from_config([('kind', 'beta')])


def test_gaussian_noise_configuration_is_the_one_gaussian_class():
    """``kind: gaussian`` builds :class:`GaussianExecutionNoise`, sampled with 160 base samples unless the
    configuration says ``n_samples: null`` (closed form)."""
    sampled = noise_from_config({'kind': 'gaussian', 'std': 0.1, 'dim': 2})
    closed = noise_from_config({'kind': 'gaussian', 'std': 0.1, 'dim': 2, 'n_samples': None})
    assert type(sampled) is GaussianExecutionNoise and type(closed) is GaussianExecutionNoise
    x = torch.tensor([[0.3, 0.4]], dtype=torch.float64)
    assert isinstance(sampled(x), Empirical) and sampled(x).samples.shape == (1, 160, 2)
    assert isinstance(closed(x), Gaussian)
    direct = GaussianExecutionNoise.isotropic(0.1, 2, n_samples=160)
    assert torch.equal(sampled(x).samples, direct(x).samples)

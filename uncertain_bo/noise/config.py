"""Execution-noise models from configuration: :func:`noise_from_config` builds any model of
:mod:`uncertain_bo.noise` from a mapping (e.g. parsed YAML), :func:`noise_from_yaml` from a YAML file or string;
every model's ``to_config()`` is accepted back (same base samples). Every problem raises a
:class:`~uncertain_bo.distributions.NoiseConfigError` naming the field.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..distributions import DEFAULT_N_SAMPLES, GaussianExecutionNoise, NoiseConfigError, SampledExecutionNoise
from .models import (BetaNoise, CircularNoise, ConcatNoise, GaussianMixtureNoise, StepChi2Noise, VaryingBetaNoise,
                     circular_gaussian)

__all__ = ['noise_from_config', 'noise_from_yaml', 'NOISE_KINDS']


def _gaussian(cfg: dict[str, Any], common: dict[str, Any]) -> GaussianExecutionNoise:
    if ('std' in cfg) == ('covariance' in cfg):
        raise NoiseConfigError("kind 'gaussian' needs exactly one of the fields std, covariance")
    common = {'n_samples': DEFAULT_N_SAMPLES, **common}   # sampled unless the configuration says null
    if 'covariance' in cfg:
        return GaussianExecutionNoise(cfg['covariance'], **common)
    return GaussianExecutionNoise.isotropic(cfg['std'], cfg.get('dim'), **common)


def _mixture(cfg: dict[str, Any], common: dict[str, Any]) -> GaussianMixtureNoise:
    if ('stds' in cfg) == ('covariances' in cfg):
        raise NoiseConfigError("kind 'gaussian_mixture' needs exactly one of the fields stds, covariances")
    if 'stds' in cfg:
        return GaussianMixtureNoise.from_stds(cfg['weights'], cfg['means'], cfg['stds'], **common)
    return GaussianMixtureNoise(cfg['weights'], cfg['means'], cfg['covariances'], **common)


def _concat(cfg: dict[str, Any], common: dict[str, Any]) -> ConcatNoise:
    comps = cfg['components']
    if not isinstance(comps, (list, tuple)):
        raise NoiseConfigError('field components must be a list of noise configurations')
    built = []
    for i, c in enumerate(comps):
        try:
            built.append(noise_from_config(c))
        except NoiseConfigError as exc:
            raise NoiseConfigError(f'components[{i}]: {exc}') from None
    return ConcatNoise(built, **common)


# kind -> (required fields, optional fields, builder(cfg, common))
_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], Callable[..., SampledExecutionNoise]]] = {
    'gaussian': ((), ('std', 'covariance', 'dim'), _gaussian),
    'beta': (('alpha', 'beta', 'scale'), ('dim', 'loc'),
             lambda c, k: BetaNoise(c['alpha'], c['beta'], c['scale'], c.get('dim', 1), c.get('loc', 0.0), **k)),
    'step_chi2': ((), ('df_below', 'df_above', 'threshold', 'scale', 'dim'),
                  lambda c, k: StepChi2Noise(**c, **k)),
    'varying_beta': ((), ('alpha', 'beta', 'amplitude', 'frequency', 'dim'),
                     lambda c, k: VaryingBetaNoise(**c, **k)),
    'gaussian_mixture': (('weights', 'means'), ('stds', 'covariances'), _mixture),
    'circular': ((), ('radius', 'center'), lambda c, k: CircularNoise(**c, **k)),
    'circular_gaussian': ((), ('dim', 'radius', 'std'), lambda c, k: circular_gaussian(**c, **k)),
    'concat': (('components',), (), _concat),
}
NOISE_KINDS: tuple[str, ...] = tuple(_KINDS)
"""Kinds accepted by :func:`noise_from_config`."""


def noise_from_config(config: Mapping[str, Any]) -> SampledExecutionNoise:
    """Build an execution-noise model from a configuration mapping (e.g. parsed YAML).

    Example::

        noise_from_config({'kind': 'beta', 'alpha': 0.4, 'beta': 0.2, 'scale': 0.1, 'n_samples': 100})

    Every kind accepts ``n_samples`` (samples per distribution, default 160) and ``seed`` (seed of the
    fixed base samples, default 0). Kind-specific fields (units: those of the targets):

    - ``gaussian``: ``std`` (scalar with ``dim``, or per-axis list) or ``covariance`` (``d x d``);
      ``n_samples: null`` gives the closed-form model (calls return Gaussian batches).
    - ``beta``: ``alpha``, ``beta``, ``scale``; optional ``dim`` (1), ``loc`` (0).
    - ``step_chi2``: ``df_below`` (0.5), ``df_above`` (7.0), ``threshold`` (0.6), ``scale`` (0.01), ``dim``.
    - ``varying_beta``: ``alpha`` (0.5), ``beta`` (0.5), ``amplitude`` (0.09), ``frequency`` (2), ``dim``.
    - ``gaussian_mixture``: ``weights``, ``means``, and ``stds`` or ``covariances``.
    - ``circular``: ``radius`` (0.5), ``center`` ([0, 0]).
    - ``circular_gaussian``: ``dim`` (10), ``radius`` (0.5), ``std`` (0.1).
    - ``concat``: ``components``, a list of configurations (their ``n_samples``/``seed`` are ignored).

    Raises:
        NoiseConfigError: not a mapping, missing or unknown ``kind``, a missing required field, an unknown
            field, or an invalid value; the message names the field.
    """
    if not isinstance(config, Mapping):
        raise NoiseConfigError(f'a noise configuration must be a mapping, got {type(config).__name__}')
    cfg = dict(config)
    kind = cfg.pop('kind', None)
    if kind is None:
        raise NoiseConfigError(f'field kind is required; one of {", ".join(NOISE_KINDS)}')
    if kind not in _KINDS:
        raise NoiseConfigError(f'unknown noise kind {kind!r} (field kind); known: {", ".join(NOISE_KINDS)}')
    required, optional, build = _KINDS[kind]
    common = {}
    for name in ('n_samples', 'seed'):
        if name in cfg:
            value = cfg.pop(name)
            if name == 'n_samples' and value is None and kind == 'gaussian':
                common[name] = None  # the closed-form Gaussian (GaussianExecutionNoise.to_config)
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise NoiseConfigError(f'field {name} must be an integer, got {value!r}')
            common[name] = int(value)
    missing = [f for f in required if f not in cfg]
    if missing:
        raise NoiseConfigError(f'field {missing[0]} is required for kind {kind!r}')
    unknown = [f for f in cfg if f not in required + optional]
    if unknown:
        raise NoiseConfigError(f'unknown field {unknown[0]!r} for kind {kind!r}; allowed: '
                               f'{", ".join(required + optional + ("n_samples", "seed"))}')
    try:
        return build(cfg, common)
    except NoiseConfigError:
        raise
    except (TypeError, ValueError, RuntimeError) as exc:
        raise NoiseConfigError(f'invalid configuration for kind {kind!r}: {exc}') from exc


def noise_from_yaml(source: str | Path) -> SampledExecutionNoise:
    """:func:`noise_from_config` on a YAML file path or a YAML string (one mapping).

    Raises:
        NoiseConfigError: as :func:`noise_from_config`, or the YAML does not hold a mapping.
    """
    import yaml

    text = Path(source).read_text() if isinstance(source, Path) or (
        isinstance(source, str) and '\n' not in source and Path(source).is_file()) else source
    data = yaml.safe_load(text)
    if not isinstance(data, Mapping):
        raise NoiseConfigError(f'the YAML must hold one mapping, got {type(data).__name__}')
    return noise_from_config(data)

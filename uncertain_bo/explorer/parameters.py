"""The explorer's parameters and the planner they configure.

:data:`EXPLORER_PARAMS` are the explorer's settings, shared by the ROS node (``config/explorer.yaml``) and the
in-process mission (:mod:`uncertain_bo.sim.mission`). :func:`planner_from_parameters` builds the
:class:`~uncertain_bo.planner.Planner` from them and :func:`update_planner` applies run-time changes to it:
the one place that maps parameters onto planner settings, for both hosts.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Mapping

import torch

from ..acquisition import METHODS
from ..distributions import DTYPE, GaussianExecutionNoise
from ..models import NOISE_PRIORS
from ..optim import OptimizerSettings
from ..parameters import Param, ParameterError
from ..acquisition.recommendation import RECOMMENDATION_RULES
from ..planner import Planner
from ..user_errors import UsageError, check_run_dir

__all__ = ['EXPLORER_PARAMS', 'RESUME_FRACTION', 'MAX_ABS_READING', 'check_explorer_parameters',
           'planner_from_parameters', 'update_planner', 'PLANNER_SETTINGS', 'run_folder', 'RESUME_CHECKED']

#: after a divergence pause, resume when the covariance trace is below this fraction of the threshold
RESUME_FRACTION = 0.8
#: outermost bound of the ``reading_range`` parameter (keeps the GP's standardisation of the readings from
#: overflowing whatever the configuration)
MAX_ABS_READING = 1e12

EXPLORER_PARAMS = [
    Param('search_bounds', [0.0, 200.0, 0.0, 200.0],
          'search area [xmin, xmax, ymin, ymax] in the map frame, m; targets never leave it (a change at '
          'run time applies from the next decision)', range=(-1e7, 1e7), length=4),
    Param('frame_id', 'map', 'world-fixed frame of poses and goals (a map-frame estimate with absolute '
          'corrections: an odom-frame covariance grows without bound)', read_only=True),
    Param('method', 'ugp_ucb', 'BO method (registry name); the GP kernel follows the input type: sample-based '
          'kernels (airbo, airbo_empirical, ugp_kme) get empirical location distributions from a particle cloud',
          choices=tuple(sorted(METHODS)), read_only=True),
    Param('execution_noise_std', [0.75, 0.75],
          'std of the execution-noise model P̂_x = N(x, diag(std²)) along x and y, m (with '
          'learn_execution_noise: the learned model\'s prior)', range=(0.0, 1000.0), length=2),
    Param('beta', 3.0, 'UCB exploration weight β (μ + β σ), dimensionless', range=(0.0, 100.0)),
    Param('recommendation', 'highest_reading', 'where the robust peak is reported: ' + '; '.join(
          f'{k}: {v}' for k, v in RECOMMENDATION_RULES.items()), choices=tuple(RECOMMENDATION_RULES),
          read_only=True),
    Param('travel_weight', 0.0, 'travel-aware acquisition: subtract w x (GP signal std) x (distance to the target '
          '/ diagonal of search_bounds) from the acquisition, i.e. crossing the whole area costs w prior standard '
          'deviations of the field; 0 = off (dimensionless)', range=(0.0, 100.0), read_only=True),
    Param('in_box_exploration', True, "weight UCB's exploration term by the share of the kernel footprint "
          'inside search_bounds (against targets piling up on the edge of the area; UCB methods only)',
          read_only=True),
    Param('gp_noise_prior', 'lognormal', 'prior on the GP noise the sensor does not report (standardised '
          'readings): ' + '; '.join(f'{k}: {v}' for k, v in NOISE_PRIORS.items()), choices=tuple(NOISE_PRIORS),
          read_only=True),
    Param('gp_input_noise', False, "add each reading's input-induced variance (how much the field varies over its "
          'location distribution, from the current kernel) to its noise in the GP', read_only=True),
    Param('reading_noise_std', 0.0, "the sensor's noise std, field units, for readings that carry no variance "
          '(std_msgs/Float64, or a variance of 0); a variance in the message wins. It is the floor of the '
          "reading's noise in the GP; 0 = unknown (the learned noise alone)", range=(0.0, 1e12)),
    Param('learn_execution_noise', False, 'learn the execution-noise covariance online from (target, location '
          'estimate) pairs of reached goals, with execution_noise_std as the prior', read_only=True),
    Param('execution_noise_prior_weight', 5.0, 'weight of execution_noise_std as the prior of the learned '
          'execution noise, in pseudo-measurements', range=(0.0, 1e6), read_only=True),
    Param('n_initial', 5, 'space-filling targets before the acquisition takes over', range=(1, 10000),
          read_only=True),
    Param('max_measurements', 30, 'stop after this many measurements', range=(1, 1000000)),
    Param('max_distance', 0.0, 'travel budget: the mission ends when the next target is further (straight '
          'line) than the distance left, or once this much has been driven (distance along the estimated '
          'path), m; 0 = no limit', range=(0.0, 1e9)),
    Param('max_mission_time', 0.0, 'time budget from the first pose: the mission ends when the next target '
          'cannot be reached and measured in the time left (at the mean driving speed so far), or once this '
          'much time has passed (a measurement under way is abandoned), s; 0 = no limit', range=(0.0, 1e9)),
    Param('en_route_spacing', 0.0, 'en-route readings: while driving to a target, each time the position estimate '
          'is this far (straight line) from where the last reading was stored, the next sensor reading is paired '
          'with the pose estimate at its stamp and added to the GP (streaming sensors: gas, temperature, '
          'humidity); they do not count toward max_measurements; 0 = off, m', range=(0.0, 1e6)),
    Param('fit_max_points', 150, 'hyperparameter fits use at most this many readings: every measurement and an '
          'evenly thinned share of the en-route readings (the posterior always uses all of them); 0 = no cap',
          range=(0, 1000000), read_only=True),
    Param('sparse_above', 1000, 'beyond this many readings (measurements and en-route readings) the GP posterior '
          'is sparse (SGPR with inducing_points inducing inputs): O(m²) per candidate instead of O(n²); 0 = always '
          'exact', range=(0, 100000000), read_only=True),
    Param('inducing_points', 500, 'inducing inputs of the sparse posterior: every measurement and evenly thinned '
          'en-route readings', range=(1, 1000000), read_only=True),
    Param('refit_every', 1, 'refit GP hyperparameters every N measurements (0 = never)', range=(0, 1000000)),
    Param('num_restarts', 10, 'L-BFGS-B restarts of the acquisition maximiser', range=(1, 1000)),
    Param('raw_samples', 512, 'quasi-random candidates scored to choose the restarts', range=(1, 100000)),
    Param('arrival_tolerance', 1.0, 'distance from the estimated position to the target that counts as '
          'arrived, m', range=(0.01, 1000.0)),
    Param('goal_timeout', 300.0, 'time allowed to reach a target before measuring wherever the rover is, s',
          range=(1.0, 1e6)),
    Param('goal_resend_period', 5.0, 'send the current goal again every this many seconds until the controller is '
          'seen to act on it (the position estimate 0.5 m closer to the target): a goal published before the '
          'controller matched is not lost; 0 = send once, s', range=(0.0, 3600.0)),
    Param('dwell_time', 2.0, 'wait after arrival before taking the reading (rover settles), s',
          range=(0.0, 3600.0)),
    Param('max_pose_age', 0.5, 'largest |t_reading - t_pose| for pairing a reading with a pose, and largest '
          'age of an arriving pose relative to the node clock (older ones are stale and rejected), s',
          range=(0.001, 60.0)),
    Param('reading_timeout', 10.0, 'wait this long for a reading before retrying, s', range=(0.1, 3600.0)),
    Param('reading_retries', 2, 'retries when no usable reading arrived before skipping the target',
          range=(0, 100)),
    Param('keep_out_radius', 0.0, 'a target that could not be measured after reading_retries (sensor silent, or '
          'every reading refused) is never proposed again: no later target within this radius of it (every method; '
          'kept on resume), m; 0 = twice the largest execution_noise_std, at least arrival_tolerance',
          range=(0.0, 1e6)),
    Param('max_consecutive_skips', 3, 'end the mission when this many targets in a row could not be measured (a '
          'sensor that is unplugged, or a reading_range that refuses every reading); 0 = no limit',
          range=(0, 1000000)),
    Param('future_stamp_tolerance', 0.5, 'poses and readings stamped further than this ahead of the node '
          'clock are rejected (clock skew between machines, or a broken driver clock), s', range=(0.0, 3600.0)),
    Param('reading_range', [-1e6, 1e6], 'plausible readings [low, high] in the sensor\'s unit; readings '
          'outside are rejected and counted (sentinels such as 1e12, overflowed or unscaled values)',
          range=(-MAX_ABS_READING, MAX_ABS_READING), length=2),
    Param('pose_buffer_size', 500, 'pose estimates kept for pairing (bounds memory at any input rate)',
          range=(10, 1000000)),
    Param('max_particles', 160, 'particles kept per empirical location distribution (particle-cloud poses with '
          'a sample-based kernel): the cloud is resampled to this many equally weighted particles; bounds '
          'memory, journal size and kernel cost', range=(1, 100000), read_only=True),
    Param('max_speed', 5.0, 'pose plausibility: a pose estimate further from the last accepted one than the rover can '
          'have driven at this speed since, given both covariances (a chi-square gate), is rejected as a glitch and '
          'counted; estimates that stay at the new place are accepted there after a couple of seconds '
          '(localisation re-initialised); set it above the rover\'s top speed; 0 = off, m/s', range=(0.0, 1000.0)),
    Param('max_covariance_trace', 25.0, 'localisation divergence: when the trace of the position covariance '
          f'exceeds this the rover is stopped and the explorer pauses; it resumes below '
          f'{RESUME_FRACTION:g} x this, m²', range=(1e-6, 1e12)),
    Param('seed', 0, 'seed of the initial design and the acquisition maximiser', range=(0, 2 ** 31 - 1),
          read_only=True),
    Param('run_dir', '', 'output folder for the journal (empty: runs/<date-time>); an existing journal '
          'there is resumed', read_only=True),
]

#: parameters that change planner settings (:func:`update_planner`); the read-only ones are set once, by
#: :func:`planner_from_parameters`
PLANNER_SETTINGS = ('search_bounds', 'execution_noise_std', 'beta', 'refit_every', 'num_restarts', 'raw_samples')


def check_explorer_parameters(values: Mapping[str, Any]) -> str | None:
    """Cross-field checks of explorer parameters (each value is already valid on its own).

    Returns:
        None if consistent, else the reason (names the parameter).
    """
    b = values.get('search_bounds')
    if b is not None:
        xmin, xmax, ymin, ymax = b
        if not (xmax > xmin and ymax > ymin):
            return (f"parameter 'search_bounds' = {list(b)} is invalid: need xmax > xmin and ymax > ymin "
                    '(order [xmin, xmax, ymin, ymax])')
    r = values.get('reading_range')
    if r is not None and not r[1] > r[0]:
        return f"parameter 'reading_range' = {list(r)} is invalid: need [low, high] with high > low"
    return None


#: parameters whose change between a journal's run and its resumption is worth a warning
RESUME_CHECKED = ('search_bounds', 'method', 'seed', 'n_initial', 'execution_noise_std')


def run_folder(params: Mapping[str, Any]) -> Path:
    """The run folder named by ``run_dir`` (empty: ``runs/<date-time>``), created if needed.

    Raises:
        ParameterError: ``run_dir`` (or a parent of it) is a file, or it cannot be created (permissions, a
            read-only or full disk).
    """
    run_dir = Path(params['run_dir'] or Path('runs') / _dt.datetime.now().strftime('%Y%m%d-%H%M%S'))
    try:
        check_run_dir(run_dir, "parameter 'run_dir'")
    except UsageError as exc:
        raise ParameterError(str(exc)) from None
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"parameter 'run_dir': cannot create {run_dir}: {exc}") from None
    return run_dir


def _bounds(params: Mapping[str, Any]) -> torch.Tensor:
    """``(2, 2)`` search box ``[[xmin, ymin], [xmax, ymax]]`` of ``search_bounds``, m."""
    xmin, xmax, ymin, ymax = params['search_bounds']
    return torch.tensor([[xmin, ymin], [xmax, ymax]], dtype=DTYPE)


def _execution_noise(params: Mapping[str, Any]) -> GaussianExecutionNoise:
    """The configured execution-noise model ``N(x, diag(execution_noise_std²))``."""
    return GaussianExecutionNoise.isotropic(params['execution_noise_std'])


def _optimizer(params: Mapping[str, Any]) -> OptimizerSettings:
    return OptimizerSettings(params['num_restarts'], params['raw_samples'])


def planner_from_parameters(params: Mapping[str, Any], **overrides) -> Planner:
    """The explorer's :class:`~uncertain_bo.planner.Planner` from validated explorer parameters (one place for
    the ROS node and the in-process mission).

    Args:
        params: validated ``EXPLORER_PARAMS`` values (``search_bounds`` in m, ``execution_noise_std`` in m, ...).
        **overrides: Planner arguments that replace the parameters' (``execution_noise``, ``journal``,
            ``metadata``, ``beta``, ...).

    Raises:
        ValueError, KeyError: see :class:`~uncertain_bo.planner.Planner`.
    """
    kwargs = dict(execution_noise=_execution_noise(params),
                  method=params['method'], beta=params['beta'], n_initial=params['n_initial'],
                  refit_every=params['refit_every'], seed=params['seed'], budget=params['max_measurements'],
                  recommendation=params['recommendation'], travel_weight=params['travel_weight'],
                  in_box_exploration=params['in_box_exploration'], noise_prior=params['gp_noise_prior'],
                  fit_max_points=params['fit_max_points'], sparse_above=params['sparse_above'],
                  inducing_points=params['inducing_points'],
                  input_noise=params['gp_input_noise'],
                  execution_noise_prior_weight=(params['execution_noise_prior_weight']
                                                if params['learn_execution_noise'] else None),
                  execution_feedback='closed_loop',   # the controller steers on the location estimate
                  optimizer=_optimizer(params))
    kwargs.update(overrides)
    return Planner(_bounds(params), **kwargs)


def update_planner(planner: Planner, params: Mapping[str, Any], changed: Mapping[str, Any]) -> list[str]:
    """Apply run-time changes of explorer parameters to ``planner`` (the one way planner settings change at run
    time; the caller makes sure no decision is running).

    Args:
        planner: the planner built by :func:`planner_from_parameters`.
        params: the current (validated) parameter values, ``changed`` already included.
        changed: the names (and new values) that changed; names outside :data:`PLANNER_SETTINGS` are ignored.

    Returns:
        The planner settings that were changed (names from :data:`PLANNER_SETTINGS`).
    """
    if 'beta' in changed:
        planner.set_beta(params['beta'])
    if 'refit_every' in changed:
        planner.refit_every = int(params['refit_every'])
    if 'num_restarts' in changed or 'raw_samples' in changed:
        planner.optimizer = _optimizer(params)
    if 'execution_noise_std' in changed:
        planner.set_execution_noise(_execution_noise(params))  # with learning on: the new prior
    if 'search_bounds' in changed:
        planner.set_bounds(_bounds(params))
    return [k for k in PLANNER_SETTINGS if k in changed]

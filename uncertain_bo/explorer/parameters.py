"""The explorer's parameters and the planner they configure.

:data:`EXPLORER_PARAMS` are the explorer's settings, shared by the ROS node (``config/explorer.yaml``) and the
in-process mission (:mod:`uncertain_bo.sim.mission`). :func:`planner_from_parameters` builds the
:class:`~uncertain_bo.planning.planner.Planner` from them and :func:`update_planner` applies run-time changes to it:
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
from ..acquisition.optimize import OptimizerSettings
from ..parameters.explorer_checks import check_explorer_parameters
from ..parameters.run_area import EXECUTION_NOISE_STD, SEARCH_BOUNDS
from ..parameters.specs import Param, ParameterError
from ..acquisition.recommendation import RECOMMENDATION_RULES
from ..planning.planner import Planner
from ..user_errors import UsageError, check_run_dir

__all__ = ['EXPLORER_PARAMS', 'RESUME_FRACTION', 'MAX_ABS_READING', 'check_explorer_parameters',
           'planner_from_parameters', 'update_planner', 'PLANNER_SETTINGS', 'run_folder', 'RESUME_CHECKED']

#: after a divergence pause, resume when the covariance trace is below this fraction of the threshold
RESUME_FRACTION = 0.8
#: outermost bound of the ``reading_range`` parameter (keeps the GP's standardisation of the readings from
#: overflowing whatever the configuration)
MAX_ABS_READING = 1e12

EXPLORER_PARAMS = [
    SEARCH_BOUNDS,
    Param('global_frame', 'map', 'world-fixed frame of pose estimates and goals (Nav2\'s term). Poses in any other '
          'frame are rejected. '
          'A map-frame estimate with absolute corrections: an odom-frame covariance grows without bound',
          read_only=True),
    Param('sensor_offset', [0.0, 0.0], 'where the sensor (probe) is on the rover: [x, y] in base_link (REP-103: x '
          'forward, y left), m. Each reading is placed at the sensor, not at base_link: the pose estimate\'s position '
          'plus this offset turned by its heading, with the heading\'s uncertainty times the offset in its location '
          'covariance (exact moments of a Gaussian pose over x, y and yaw; each particle of a cloud moved by its own '
          'heading). [0, 0]: the sensor at base_link. Non-zero: pose estimates must carry a heading (orientation) '
          'and are otherwise rejected. Goals and the pose gate stay base_link\'s: where the sensor measures around a '
          'target depends on the heading the rover arrives with (docs/field_robots.md, "A sensor away from '
          'base_link")', range=(-1000.0, 1000.0), length=2, read_only=True),
    Param('method', 'ugp_ucb', "BO method (registry name). 'ugp_ucb': GP over location distributions (Oliveira et "
          "al. 2019); 'igp_ucb': GP-UCB on the commanded targets; 'airbo': MMD kernel over sample sets (Yang et al. "
          "2023). The GP kernel follows the input type: with pose_source 'particle_cloud' a sample-based method "
          '(airbo, airbo_empirical, ugp_kme) stores each location as the particle cloud itself (an empirical '
          'distribution of max_particles particles), the others its moment-matched Gaussian',
          choices=tuple(sorted(METHODS)), read_only=True),
    EXECUTION_NOISE_STD,
    Param('beta', 3.0, "UCB exploration weight β in μ̂(P̂_x) + β σ̂(P̂_x) (dimensionless; the paper's robot "
          'experiment: 3)', range=(0.0, 100.0)),
    Param('recommendation', 'highest_reading', 'where the robust peak is reported after each measurement: '
          + '; '.join(f"'{k}': {v}" for k, v in RECOMMENDATION_RULES.items())
          + '. Chosen on the tuning set of the field suite (docs/field_suite.md, 16 seeds per field): no other '
          'rule was better over its 80 runs; a posterior rule pays only with a noisy sensor on a broad peak',
          choices=tuple(RECOMMENDATION_RULES), read_only=True),
    Param('confirmation_readings', 0, 'confirmation phase: the last this many of max_measurements re-measure the '
          'measured place with the best posterior mean or its challenger (the best upper bound mu + 2 sigma among the '
          'others), whichever is the more uncertain, instead of exploring; for a noisy sensor, with a posterior-mean '
          'recommendation (past_mean). 0 = off. Measured on the denied suite: docs/gnss_denied.md',
          range=(0, 1000000), read_only=True),
    Param('travel_weight', 0.0, 'travel-aware acquisition (Marchant & Ramos 2012): subtract w x (GP signal std) x '
          '(distance from the rover to the target / diagonal of search_bounds) from the acquisition, so crossing '
          'the whole area costs w prior standard deviations of the field (dimensionless; 0 = off)',
          range=(0.0, 100.0), read_only=True),
    Param('route_horizon', 3, 'travel-aware receding-horizon route: each decision plans this many targets ahead (the '
          "method's batch rule: GP-BUCB for the UCB methods), sends the rover to the first stop of their shortest "
          'route from where it is, and plans again after measuring there; 1 = the single best target. Chosen on the '
          'tuning set of the field suite (docs/field_suite.md, 16 seeds per field): 3 drove a third less than 1 with '
          'no significant regret change (a fifth less once the initial design was visited in full), 5 halved the '
          'distance but lost regret. Each decision costs this many '
          'acquisition maximisations. It starts after the initial design, which keeps its own tour; batch methods '
          '(ugp_bucb) route their own batches; surveys keep their tour; '
          'a rover of a team decides one target at a time (the others\' targets pending). Without en-route '
          'readings only: with them (en_route_spacing) 1 was better on the same fields',
          range=(1, 100), read_only=True),
    Param('in_box_exploration', True, "weight UCB's exploration term β σ̂ by the share of the kernel's footprint "
          'inside search_bounds (1 inside, 1/2 on an edge, 1/4 in a corner): without it uncertainty grows towards '
          'the edge, where half of what a measurement teaches lies outside the area, and targets pile up on the '
          'edge. UCB methods only', read_only=True),
    Param('gp_noise_prior', 'lognormal', "prior on the GP's learned noise (standardised readings): "
          + '; '.join(f"'{k}' = {v}" for k, v in NOISE_PRIORS.items())
          + ". 'gamma' is the library's default; 'lognormal' was chosen over 16 seeds of the simulated rover "
          '(README, "Exploration benchmarks")', choices=tuple(NOISE_PRIORS), read_only=True),
    Param('gp_input_noise', False, "add each reading's input-induced variance to its noise in the GP: how much the "
          "field varies over the reading's location distribution under the current kernel, sigma_f^2 (1 - |I + 2 "
          'W^-1 Sigma_L|^-1/2) for the expected SE kernel. It matters where the localisation error is not small '
          "against the field's lengthscale, and differs per reading where the localisation does (GNSS-degraded "
          'zones)', read_only=True),
    Param('reading_noise_std', 0.0, "the sensor's noise std, field units, for readings that carry no variance "
          '(std_msgs/Float64, or a variance of 0); a variance in the message wins. Each reading\'s noise in the GP '
          'is this variance plus the learned noise (0 = unknown: the learned noise alone)', range=(0.0, 1e12)),
    Param('learn_execution_noise', False, 'learn the execution-noise covariance online from the offsets between '
          'targets and location estimates of reached goals, plus each estimate\'s own covariance (the controller '
          'steers on the estimate: closed loop), with execution_noise_std as the prior worth '
          'execution_noise_prior_weight pseudo-measurements (a run-time change of execution_noise_std replaces that '
          'prior; the evidence so far is kept)', read_only=True),
    Param('execution_noise_prior_weight', 5.0, 'weight of execution_noise_std as the prior of the learned '
          'execution noise (learn_execution_noise), in pseudo-measurements', range=(0.0, 1e6), read_only=True),
    Param('n_initial', 5, "space-filling (scrambled Sobol) targets before the acquisition takes over, visited as a "
          "short tour from the rover's first pose, each once, in that order (the route horizon starts after it). "
          'At most 1000: the tour is computed when the first pose arrives (0.04 s of CPU for 1000 targets; it grows '
          'with the square: 2.5 s for 10000)', range=(1, 1000), read_only=True),
    Param('max_measurements', 30, 'stop after this many measurements', range=(1, 1000000)),
    Param('max_distance', 0.0, 'travel budget, m (0 = no limit). The mission ends before a target that lies '
          'further (straight line from the current position estimate) than the distance left; should the path '
          'driven (measured on the pose estimates) reach it on the way all the same, the rover stops and measures '
          'where it stands, and the mission ends. Whichever of max_measurements, max_distance and max_mission_time '
          'comes first ends it', range=(0.0, 1e9)),
    Param('max_mission_time', 0.0, 'time budget from the first pose, s (0 = no limit). The mission ends before a '
          'target it cannot reach and measure in the time left (its distance at the mean driving speed so far, '
          'plus the mean time a stop at a target has taken: dwell and reading); when the time runs out anyway the '
          'rover is stopped (a measurement under way is abandoned) and the mission ends at once. A resumed journal '
          'continues both budgets where they stood at its last measurement', range=(0.0, 1e9)),
    Param('en_route_spacing', 0.0, 'en-route readings, m (0 = off): while driving to a target, each time the '
          'position estimate is this far (straight line) from where the last reading was stored, the next sensor '
          'reading is paired with the pose estimate at its stamp (the same checks as a measurement) and added to '
          'the GP. For sensors that stream while the rover drives (gas, temperature, humidity); they do not count '
          'toward max_measurements. With them set route_horizon: 1 (field suite, 16 seeds per field: with en-route '
          'readings route_horizon 3 drove a third less but lost regret, 23 better / 54 worse)', range=(0.0, 1e6)),
    Param('fit_max_points', 150, 'hyperparameter fits use at most this many readings: every measurement plus an '
          "evenly thinned share of the en-route readings; the GP's posterior always uses all of them (0 = no cap)",
          range=(0, 1000000), read_only=True),
    Param('sparse_above', 1000, "beyond this many readings (measurements and en-route readings) the GP's posterior "
          'is sparse (SGPR with inducing_points inducing inputs: O(m²) per candidate instead of O(n²)), so a '
          'decision stays fast with thousands of readings; 0 = always exact', range=(0, 100000000), read_only=True),
    Param('inducing_points', 500, 'inducing inputs of the sparse posterior (sparse_above): the measurements and '
          'evenly thinned en-route readings', range=(1, 1000000), read_only=True),
    Param('refit_every', 1, 'refit GP hyperparameters by marginal likelihood every N measurements (1 = every '
          'step; 0 = never)', range=(0, 1000000)),
    Param('num_restarts', 10, 'acquisition maximiser: L-BFGS-B restarts, chosen among the raw_samples '
          'candidates', range=(1, 1000)),
    Param('raw_samples', 512, 'acquisition maximiser: quasi-random candidates scored to choose the num_restarts '
          'restarts', range=(1, 100000)),
    Param('xy_goal_tolerance', 1.0, 'distance between the estimated position and the target that counts as '
          'arrived (Nav2\'s goal checker term), m', range=(0.01, 1000.0)),
    Param('goal_timeout', 300.0, 'time allowed to reach a target, s. Then the rover is stopped and measures where '
          'it is (a valid measurement: its location distribution says where it was taken)', range=(1.0, 1e6)),
    Param('goal_resend_period', 5.0, 'send the current goal again every this many seconds until the controller is '
          'seen to act on it (the position estimate 0.5 m closer to the target), so a goal published before the '
          'controller matched is not lost; 0 = send once, s', range=(0.0, 3600.0)),
    Param('dwell_time', 2.0, 'wait after arrival before reading (rover settles, sensor equilibrates), s',
          range=(0.0, 3600.0)),
    Param('max_pose_age', 0.5, 'largest |t_reading - t_pose| for pairing a reading with the pose estimate nearest '
          'in time, s. A reading with no pose that close is held until one arrives, else dropped with a warning. '
          'Also the largest age of an arriving pose relative to the node clock: older poses are stale and rejected '
          '(localisation lagging; a bag replayed without use_sim_time), and a pose stamped this much before the '
          'newest one while the node clock also jumped back this much (bag loop, simulation reset) clears the pose '
          'and reading buffers (the place is then confirmed again: max_speed); without the clock jump it is out of '
          'order and rejected', range=(0.001, 60.0)),
    Param('revision_min_shift', 0.05, 'a revised trajectory (a smoother after a fix, a loop closure) re-places a '
          'stored reading only when it moves its location mean, or its position standard deviation, by more than '
          'this, m: a back end republishing an unchanged path journals nothing new', range=(0.0, 1000.0)),
    Param('reading_timeout', 10.0, 'wait this long for a valid reading after dwelling, s; then retry, and skip the '
          'target after reading_retries retries (with a warning)', range=(0.1, 3600.0)),
    Param('reading_retries', 2, 'retries (each waiting reading_timeout) when no usable reading arrived, before '
          'skipping the target', range=(0, 100)),
    Param('keep_out_radius', 0.0, 'a target skipped after reading_retries (sensor silent, or every reading '
          'refused) is never proposed again: no later target within this radius of it (every method; journaled, '
          'so a resume keeps it), m. 0 = twice the largest execution_noise_std, at least xy_goal_tolerance (with '
          'the defaults 1.5 m)', range=(0.0, 1e6)),
    Param('max_consecutive_skips', 3, 'end the mission when this many targets in a row could not be measured '
          '(sensor unplugged, or a reading_range that refuses every reading); 0 = no limit', range=(0, 1000000)),
    Param('future_stamp_tolerance', 0.5, 'poses and readings stamped more than this ahead of the node clock are '
          'rejected and counted (clock skew between machines; a driver stamping with another clock). Readings '
          'older than reading_timeout (stamped 0, another clock, a backed-up queue) are rejected as stale, s',
          range=(0.0, 3600.0)),
    Param('reading_range', [-1e6, 1e6], "plausible readings [low, high] in the sensor's unit. Readings outside are "
          'rejected and counted (sentinels such as 1e12, overflowed or unscaled values would wreck the GP). Set it '
          "to your sensor's physical range", range=(-MAX_ABS_READING, MAX_ABS_READING), length=2),
    Param('pose_buffer_size', 500, 'pose estimates kept for pairing (bounds memory at any input rate)',
          range=(10, 1000000)),
    Param('max_particles', 160, "particles kept per empirical location distribution (pose_source 'particle_cloud' "
          'with a sample-based method): each cloud is resampled (systematic) to this many equally weighted '
          'particles on arrival. Bounds memory, journal size (about 6 kB per measurement at 160) and kernel cost. '
          'A resumed journal keeps its own count', range=(1, 100000), read_only=True),
    Param('max_speed', 5.0, 'pose plausibility, m/s (0 = off): a pose estimate further from the accepted ones (the '
          'last, and those 0.25 to 16 s before it) than the rover can have driven at this speed since, given both '
          "covariances (a Mahalanobis/chi-square gate like robot_localization's *_rejection_threshold, with the "
          "possible motion taken out), is a glitch or a drift: rejected and counted in /diagnostics ('pose: "
          "implausible jump'), so it reaches no measurement, no en-route reading and not the distance driven. No pose "
          'is used before 5 consistent poses over 2 s agree on a place (at the start, and after the clock and the '
          'stamps jumped back); when the estimates stay at a new place (5 consistent poses over 2 s: set_pose, '
          'initialpose, the rover carried) the new place is accepted, with a warning. Set it above the rover\'s top '
          'speed (docs/field_robots.md, "Pose glitches")', range=(0.0, 1000.0)),
    Param('area_margin', 50.0, 'how far outside search_bounds a pose estimate may lie, m, on every side: poses beyond '
          "are rejected and counted ('pose: outside the area'), so no measurement, en-route reading, distance driven "
          "or 'hold here' stop ever uses a place beyond it, and the rover must start within it. Goals always lie "
          'inside search_bounds', range=(0.0, 1e7)),
    Param('degenerate_pose_covariance', 'reject', "a pose estimate whose position standard deviation is below "
          'min_position_std along some direction (an all-zero covariance: the publisher does not fill it in; a '
          "singular one) is 'reject': rejected and counted ('pose: degenerate covariance'), or 'floor': used with "
          "that standard deviation raised to min_position_std, with a warning, counted ('pose covariances floored' "
          'in /diagnostics). Particle clouds: their moment-matched covariance', choices=('reject', 'floor')),
    Param('min_position_std', 0.01, 'smallest credible position standard deviation of a pose estimate along any '
          'direction, m (see degenerate_pose_covariance): below what the localisation can know (RTK GNSS: about '
          '0.02 m)', range=(1e-6, 1000.0)),
    Param('max_covariance_trace', 25.0, 'localisation divergence: when the trace of the position covariance (var x '
          '+ var y) exceeds this the rover is stopped, the explorer pauses (diagnostics ERROR, no measurements) and '
          f'resumes towards the same target once the trace is below {RESUME_FRACTION:g} x this, m². 25 m² ≈ 3.5 m '
          'standard deviation per axis', range=(1e-6, 1e12)),
    Param('relocalise_kappa', 0.0, 're-localisation as a decision (0 = off): before a new target is sent, when the '
          "position std sigma_L (per axis) exceeds this fraction of the model's smallest fitted lengthscale, the "
          'rover first drives to the fix source of fix_sources with the smallest detour plus cost within '
          'relocalise_max_detour and waits there until the covariance has dropped, else takes the surfacing action '
          '(surface_cost), else goes on as it is (dimensionless; docs/gnss_denied.md, "Re-localisation as a '
          'decision")', range=(0.0, 100.0)),
    Param('fix_sources', [0.0, 0.0, 0.0, 0.0], 'known places where the localisation gets absolute fixes (UWB '
          'anchors, fiducials, open-sky clearings): a flat list x, y, radius, cost for each source (map frame, m; '
          'cost: metres of detour charged for using it, e.g. the time a fix takes there times the speed). All zeros '
          '= none. Used by relocalise_kappa', range=(-1e7, 1e7)),
    Param('relocalise_max_detour', 100.0, 'the longest detour a re-localisation at a fix source may add to the way '
          'to the next target (distance via the source minus the direct one, plus the source\'s cost), m',
          range=(0.0, 1e7)),
    Param('surface_cost', 0.0, 'time the surfacing action costs, s (an AUV rising for a GNSS fix); 0 = the vehicle '
          'has none. Used by relocalise_kappa when no fix source is within the detour budget; the host must offer '
          'the action (the in-process mission does, through the simulated world)', range=(0.0, 1e6)),
    Param('relocalise_max_time', 300.0, 'the longest wait for the covariance to drop at a fix source, s; the '
          'surfacing action is taken only when its surface_cost is within it', range=(0.0, 1e6)),
    Param('seed', 0, 'seed of the initial design and the acquisition maximiser (same seed + same data = same '
          'targets)', range=(0, 2 ** 31 - 1), read_only=True),
    Param('run_dir', '', 'output folder for journal.jsonl (+ explorer_result.json). Empty: runs/<date-time>. An '
          'existing journal there is resumed: the next target is chosen from all earlier observations, and a '
          'target decided before a restart but not yet measured is sent again. `uncertain-bo export RUN_DIR` '
          'writes the observations as CSV', read_only=True),
]

#: parameters that change planner settings (:func:`update_planner`); the read-only ones are set once, by
#: :func:`planner_from_parameters`
PLANNER_SETTINGS = ('search_bounds', 'execution_noise_std', 'beta', 'refit_every', 'num_restarts', 'raw_samples')


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
    """The explorer's :class:`~uncertain_bo.planning.planner.Planner` from validated explorer parameters (one place for
    the ROS node and the in-process mission).

    Args:
        params: validated ``EXPLORER_PARAMS`` values (``search_bounds`` in m, ``execution_noise_std`` in m, ...).
        **overrides: Planner arguments that replace the parameters' (``execution_noise``, ``journal``,
            ``metadata``, ``beta``, ...).

    Raises:
        ValueError, KeyError: see :class:`~uncertain_bo.planning.planner.Planner`.
    """
    kwargs = dict(execution_noise=_execution_noise(params),
                  method=params['method'], beta=params['beta'], n_initial=params['n_initial'],
                  refit_every=params['refit_every'], seed=params['seed'], budget=params['max_measurements'],
                  recommendation=params['recommendation'],
                  confirmation_readings=params['confirmation_readings'], travel_weight=params['travel_weight'],
                  route_horizon=params['route_horizon'],
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

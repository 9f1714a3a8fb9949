"""A localisation-aware explorer without ROS: turns pose estimates (with covariance or particles) and sensor
readings into measurements (location distribution :math:`P^L_t`, reading :math:`y_t`) for a
:class:`~uncertain_bo.planning.planner.Planner` and sends the rover to the planner's targets (docs/architecture.md,
"The measurement cycle").

Modules, one concept each:

- :mod:`~uncertain_bo.explorer.parameters` — the explorer's parameters (:data:`EXPLORER_PARAMS`) and the
  planner they configure (:func:`planner_from_parameters`, shared by the ROS node and the in-process mission;
  :func:`update_planner` for run-time changes).
- :mod:`~uncertain_bo.explorer.estimates` — what the explorer is handed: pose estimates (location distributions:
  Gaussian, particle cloud, heading) and readings, and the position-covariance helpers.
- :mod:`~uncertain_bo.explorer.input_checks` — one input judged on its own: frame, finite values, range, area,
  covariance, particles, heading, stamps.
- :mod:`~uncertain_bo.explorer.inputs` — the bounded pose and reading buffers: arrival in order (time-base
  restarts, the gate, degenerate covariances), rejections counted, and pairing a reading with the pose nearest in
  time.
- :mod:`~uncertain_bo.explorer.leg` — the current leg: the target the rover is sent to, why, and since when
  (``goal_timeout``).
- :mod:`~uncertain_bo.explorer.pose_gate` — pose plausibility: a pose that moved further than the rover can have
  driven (``max_speed``, both covariances; the last accepted estimate and windows up to 16 s) is a glitch or a
  drift and reaches nothing; a place is believed once several poses agree (the first, a relocation).
- :mod:`~uncertain_bo.explorer.area` — ``search_bounds`` widened by ``area_margin``: where poses may be.
- :mod:`~uncertain_bo.explorer.commands` — the one place goals and stops leave the explorer, and the invariant
  they keep (goals inside ``search_bounds``, stops inside the area at the trusted position).
- :mod:`~uncertain_bo.explorer.location_policy` — which location distribution a measurement gets: a Gaussian,
  the particle cloud, or (for the GP) the commanded target, as the method asks.
- :mod:`~uncertain_bo.explorer.budget` — the distance and time budgets beside ``max_measurements``.
- :mod:`~uncertain_bo.explorer.goal_resend` — goals that cannot be lost: re-sent until the controller acts.
- :mod:`~uncertain_bo.explorer.state_machine` — the measurement cycle (:class:`Explorer`): the state, every
  transition, inputs and driving; it owns one object per stage, each in its module, with explicit inputs:
  :mod:`~uncertain_bo.explorer.deciding` (the planner's work, inline or on the decider; run-time parameter changes),
  :mod:`~uncertain_bo.explorer.en_route` (readings while driving), :mod:`~uncertain_bo.explorer.measuring`
  (dwelling, pairing, skipping), :mod:`~uncertain_bo.explorer.storing` (a paired reading into the planner),
  :mod:`~uncertain_bo.explorer.pausing` (diverged localisation, storage faults),
  :mod:`~uncertain_bo.explorer.mission_end` (limits and the end's report),
  :mod:`~uncertain_bo.explorer.relocalising` (re-localisation as a decision), :mod:`~uncertain_bo.explorer.revisions`
  (revised trajectories) and :mod:`~uncertain_bo.explorer.result_file` (the result file).
- :mod:`~uncertain_bo.explorer.states` — the stages (:class:`State`); :mod:`~uncertain_bo.explorer.outputs` —
  what the explorer hands its host (:class:`ExplorerOutputs`, :class:`Measurement`).

The ROS node (:mod:`uncertain_bo.ros.explorer`) and the in-process mission (:mod:`uncertain_bo.sim.mission`)
drive the same :class:`Explorer` through :meth:`Explorer.on_pose`, :meth:`Explorer.on_reading` and
:meth:`Explorer.tick`, and receive its actions through an :class:`ExplorerOutputs` implementation.
"""
from .budget import ODOMETER_STEP, TravelBudget
from .estimates import PoseEstimate, Reading, position_std, position_trace, psd_projection
from .input_checks import MAX_ABS_COORDINATE
from .inputs import READING_QUEUE, InputStreams
from .location_policy import LocationPolicy, resample_particles, takes_sample_sets
from .pose_gate import PoseGate
from .parameters import (EXPLORER_PARAMS, MAX_ABS_READING, RESUME_FRACTION, check_explorer_parameters,
                         planner_from_parameters, run_folder, update_planner)
from .outputs import ExplorerOutputs, Measurement
from .result_file import execution_noise_summary
from .state_machine import Explorer
from .states import State

__all__ = ['Explorer', 'ExplorerOutputs', 'State', 'PoseEstimate', 'Reading', 'Measurement',
           'EXPLORER_PARAMS', 'RESUME_FRACTION', 'READING_QUEUE', 'MAX_ABS_COORDINATE', 'MAX_ABS_READING',
           'check_explorer_parameters', 'psd_projection', 'position_std', 'position_trace', 'resample_particles',
           'takes_sample_sets', 'planner_from_parameters', 'update_planner', 'run_folder', 'InputStreams',
           'LocationPolicy', 'TravelBudget', 'ODOMETER_STEP', 'execution_noise_summary', 'PoseGate']

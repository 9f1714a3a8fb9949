"""Where a validated reading is kept: one place that stores it consistently in the observation log
(:class:`~uncertain_bo.planning.observation_log.ObservationLog`), the shared GP's queue
(:class:`~uncertain_bo.planning.model_schedule.ModelSchedule`) and, for a measurement whose goal was reached, the
learned execution noise (:class:`~uncertain_bo.planning.execution_noise_estimator.ExecutionNoiseEstimator`), and that
re-places it there when its location is revised (:mod:`uncertain_bo.planning.revisions`) or the GP is rebuilt (new
search bounds).

What the GP trains on follows the method (:attr:`~uncertain_bo.acquisition.Method.inputs`): the location distribution
itself, or for a method that trains on the commanded targets a Dirac at the target (an en-route reading, which has no
target, at its location mean). An en-route reading never teaches the execution noise.
"""
from __future__ import annotations

from torch import Tensor

from ..distributions import Dirac, ExecutionNoise, LocationDistributions
from .execution_noise_estimator import ExecutionNoiseEstimator
from .model_schedule import ModelSchedule
from ..models import DistributionGP
from .observation_log import ObservationLog, StoredReading

__all__ = ['ReadingStore']


class ReadingStore:
    """The readings of one run, in the log, the GP and the learned execution noise.

    Args:
        observations: the run's observation log.
        schedule: the GP's schedule (it queues the GP inputs).
        execution_noise: the configured execution-noise model (the current one while nothing is learned).
        estimator: the learned execution noise, or None when it is fixed.
        inputs: what the GP trains on (:data:`~uncertain_bo.acquisition.INPUT_KINDS`).

    Example:
        A method that trains on targets gets a measurement at its commanded target, an en-route reading at its location:

        >>> import torch
        >>> from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP
        >>> from uncertain_bo.planning.model_schedule import ModelSchedule
        >>> from uncertain_bo.planning.observation_log import ObservationLog
        >>> log = ObservationLog(2)
        >>> store = ReadingStore(log, ModelSchedule(DistributionGP(torch.tensor([[0.0, 0.0], [10.0, 10.0]])), log),
        ...                      GaussianExecutionNoise.isotropic(0.5, 2), None, inputs='target')
        >>> taken = Gaussian(torch.tensor([[4.2, 3.9]]), 0.01 * torch.eye(2).unsqueeze(0))
        >>> store.add(torch.tensor([4.0, 4.0]), taken, 0.7)
        >>> log.n, store.gp_input(torch.tensor([4.0, 4.0]), taken).mean.tolist()
        (1, [[4.0, 4.0]])
    """

    def __init__(self, observations: ObservationLog, schedule: ModelSchedule, execution_noise: ExecutionNoise,
                 estimator: ExecutionNoiseEstimator | None, inputs: str):
        self.observations = observations
        self.schedule = schedule
        self.estimator = estimator
        self.inputs = inputs
        #: the execution-noise model decisions use now: the configured one, or the learned one
        self.execution_noise = execution_noise

    def add(self, target: Tensor | None, location: LocationDistributions, y: float, reading_variance: float = 0.0,
            reached: bool = True, reading: StoredReading | None = None) -> None:
        """Store a validated reading: a measurement at ``target`` ``(d,)`` (``reached``: the rover arrived there), or
        an en-route reading (``target`` None), which joins the GP only."""
        self.observations.add(target, location, y, reading_variance, reached, reading)
        self.schedule.add(self.gp_input(target, location), y, reading_variance, stop=target is not None)
        if target is not None and reached and self.estimator is not None:
            self.estimator.add(target, location)
            self.execution_noise = self.estimator.noise()

    def gp_input(self, target: Tensor | None, location: LocationDistributions) -> LocationDistributions:
        """The GP's input for a reading at ``location`` (batch of 1) commanded to ``target`` ``(d,)`` (None: en
        route)."""
        if self.inputs != 'target':
            return location
        # a method that trains on targets puts an en-route reading at its location estimate (it has no target)
        return Dirac((location.mean if target is None else target).reshape(1, -1))

    def relocate(self, revised: list[tuple[int, LocationDistributions]]) -> None:
        """Put each revised location (validated, batch of 1) in place of row ``row``'s: in the log, in the GP (a
        measurement of a method that trains on targets keeps its target as input) and, for a reached measurement, in
        the learned execution noise (the revised pair re-teaches it)."""
        for row, location in revised:
            target = self.observations.rows[row][0]
            old = self.observations.replace_location(row, location)
            if target is None or self.inputs != 'target':
                self.schedule.revise(row, self.gp_input(target, location))
            if self.observations.reached_at(row) and self.estimator is not None:
                self.estimator.revise(target, old, location)
        if revised and self.estimator is not None:
            self.execution_noise = self.estimator.noise()

    def set_execution_noise(self, execution_noise: ExecutionNoise) -> None:
        """A new configured execution-noise model: the current one, or with learning on the new prior of the learned
        one (the evidence so far is kept and combined with it at once).

        Raises:
            ValueError: learning is on and ``execution_noise`` is not a Gaussian execution noise of its dimension.
        """
        if self.estimator is None:
            self.execution_noise = execution_noise
            return
        self.estimator.set_prior(execution_noise)
        self.execution_noise = self.estimator.noise()

    def rebuild(self, model: DistributionGP) -> None:
        """Hand every stored reading to a new (empty) ``model``, refitted at its next update."""
        rows = self.observations.rows
        self.schedule.restart(model, [(self.gp_input(t, loc), y, v) for t, loc, y, v in rows], self.observations.n)

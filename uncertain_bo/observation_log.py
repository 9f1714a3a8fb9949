r"""The observations of a run, in the order they arrived: measurements (stops with a commanded target
:math:`\mathbf x_t`, its location distribution :math:`P^L_t` and reading :math:`y_t`) and en-route readings
(taken while driving: a location distribution and a reading, no target).

:class:`ObservationLog` validates an observation before anything is stored (:meth:`ObservationLog.validate`), keeps
both kinds apart (the planner's :attr:`~uncertain_bo.planner.Planner.n`, targets, readings and location batches
count the stops only) and in one arrival order (:attr:`ObservationLog.rows`, the GP's row order), and picks the
subset a capped hyperparameter fit or the sparse posterior's inducing inputs use (:meth:`ObservationLog.fit_subset`).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from .distributions import DTYPE, Gaussian, LocationDistributions, cat, check_covariance

__all__ = ['ObservationLog', 'InvalidObservationError']


class InvalidObservationError(ValueError):
    """An observation was rejected (nothing was stored)."""


class ObservationLog:
    """Measurements and en-route readings of one run over :math:`\\mathbb R^d`.

    Args:
        dim: :math:`d`, the dimension of targets and locations.
    """

    def __init__(self, dim: int):
        self.dim = dim
        self._targets = torch.zeros(0, dim, dtype=DTYPE)
        self._inputs: list[LocationDistributions] = []
        self._y: list[float] = []
        self._noise: list[float] = []  # reported reading variances (field units², 0 = not reported)
        self._reached: list[bool] = []  # whether each measurement's rover reached its target
        # en-route readings (no target): location, reading, reported variance
        self.en_route: list[tuple[LocationDistributions, float, float]] = []
        #: every observation in arrival order (the GP's row order): (target or None, location, reading, variance)
        self.rows: list[tuple[Tensor | None, LocationDistributions, float, float]] = []

    @property
    def n(self) -> int:
        """Number of measurements (stops with a commanded target)."""
        return len(self._y)

    @property
    def n_en_route(self) -> int:
        """Number of en-route readings."""
        return len(self.en_route)

    @property
    def targets(self) -> Tensor:
        """``(n, d)`` commanded targets."""
        return self._targets

    @property
    def y(self) -> Tensor:
        """``(n,)`` readings of the measurements (field units)."""
        return torch.tensor(self._y, dtype=DTYPE)

    @property
    def reading_variances(self) -> Tensor:
        """``(n,)`` variances the sensor reported with the measurements' readings (field units², 0 = none)."""
        return torch.tensor(self._noise, dtype=DTYPE)

    @property
    def reached(self) -> Tensor:
        """``(n,)`` bool: whether each measurement was taken at its target (the rover arrived; False for a goal
        that timed out or a stop on the way, e.g. by a budget)."""
        return torch.tensor(self._reached, dtype=torch.bool)

    @property
    def locations(self) -> LocationDistributions | None:
        """The measurements' location distributions as one batch (None before any)."""
        return cat(self._inputs) if self._inputs else None

    def last_location_mean(self) -> Tensor:
        """``(d,)`` the mean of the last measurement's location distribution.

        Raises:
            IndexError: no measurement yet.
        """
        return self._inputs[-1].mean[0]

    @property
    def en_route_locations(self) -> LocationDistributions | None:
        """The en-route readings' location distributions as one batch (None if there are none)."""
        return cat([r[0] for r in self.en_route]) if self.en_route else None

    @property
    def en_route_y(self) -> Tensor:
        """``(n_en_route,)`` en-route readings (field units)."""
        return torch.tensor([r[1] for r in self.en_route], dtype=DTYPE)

    def validate(self, target: Tensor | None, location: LocationDistributions, y: float,
                 reading_variance: float = 0.0) -> None:
        """Check one observation before anything is stored.

        Raises:
            InvalidObservationError: ``target`` not ``d`` finite numbers; a non-finite reading; a negative or
                non-finite reading variance; ``location`` not one distribution over :math:`\\mathbb R^d`, with a
                non-finite mean or (Gaussian) an invalid covariance (:func:`~uncertain_bo.distributions.
                check_covariance`).
        """
        def bad(msg: str) -> InvalidObservationError:
            return InvalidObservationError(f'observation rejected, nothing stored: {msg}')

        if target is not None and (target.numel() != self.dim or not torch.isfinite(target).all()):
            raise bad(f'target must be {self.dim} finite numbers, got {target.tolist()}')
        if not isinstance(y, (int, float)) or isinstance(y, bool) or not math.isfinite(y):
            raise bad(f'reading must be a finite number, got {y!r}')
        if (not isinstance(reading_variance, (int, float)) or isinstance(reading_variance, bool)
                or not math.isfinite(reading_variance) or reading_variance < 0):
            raise bad(f'reading variance must be a finite number >= 0, got {reading_variance!r}')
        if not isinstance(location, LocationDistributions) or len(location) != 1:
            raise bad('location must be a single LocationDistributions (batch of 1)')
        if location.dim != self.dim:
            raise bad(f'location is over R^{location.dim}, search space is R^{self.dim}')
        if not torch.isfinite(location.mean).all():
            raise bad('location mean contains NaN or inf')
        if isinstance(location, Gaussian):
            reason = check_covariance(location.covariance[0])
            if reason:
                raise bad(f'location covariance {reason}')

    def add(self, target: Tensor | None, location: LocationDistributions, y: float,
            reading_variance: float = 0.0, reached: bool = True) -> None:
        """Store a validated observation: a measurement at ``target`` ``(d,)`` (``reached``: the rover arrived
        there), or an en-route reading (None)."""
        self.rows.append((target, location, y, reading_variance))
        if target is None:
            self.en_route.append((location, y, reading_variance))
            return
        self._targets = torch.cat([self._targets, target.reshape(1, -1)])
        self._inputs.append(location)
        self._y.append(y)
        self._noise.append(reading_variance)
        self._reached.append(bool(reached))

    def fit_subset(self, cap: int) -> Tensor | None:
        """Indices (row order) of at most ``cap`` observations, or None for all.

        All when ``cap`` is 0 or not exceeded; otherwise every measurement (stop) and, in the room left (at least a
        tenth of the cap), en-route readings evenly spaced along the stream (so the subset spans the whole path).
        """
        total = len(self.rows)
        if cap <= 0 or total <= cap:
            return None
        is_stop = torch.tensor([r[0] is not None for r in self.rows])
        stops = is_stop.nonzero().reshape(-1)
        en_route = (~is_stop).nonzero().reshape(-1)
        room = max(cap - stops.numel(), cap // 10, 1)
        if en_route.numel() > room:
            pick = torch.linspace(0, en_route.numel() - 1, room, dtype=DTYPE).round().long().unique()
            en_route = en_route[pick]
        return torch.cat([stops, en_route]).sort().values

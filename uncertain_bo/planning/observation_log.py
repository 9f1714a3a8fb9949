r"""The observations of a run, in the order they arrived: measurements (stops with a commanded target
:math:`\mathbf x_t`, its location distribution :math:`P^L_t` and reading :math:`y_t`) and en-route readings
(taken while driving: a location distribution and a reading, no target).

:class:`ObservationLog` validates an observation before anything is stored (:meth:`ObservationLog.validate`), keeps
both kinds apart (the planner's :attr:`~uncertain_bo.planning.planner.Planner.n`, targets, readings and location batches
count the stops only) and in one arrival order (:attr:`ObservationLog.rows`, the GP's row order), and picks the
subset a capped hyperparameter fit or the sparse posterior's inducing inputs use (:meth:`ObservationLog.fit_subset`).

Each row also knows which reading it is (:class:`StoredReading`: its journal index among the measurements or the
en-route readings, its stamps, the team rover and sequence number that delivered it), so a revised location
distribution (:mod:`uncertain_bo.planning.revisions`) finds its row (:meth:`ObservationLog.row_of`) and replaces the
location in place (:meth:`ObservationLog.replace_location`): the GP's row order and every count stay as they were.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor

from ..distributions import DTYPE, Gaussian, LocationDistributions, cat, check_covariance

__all__ = ['ObservationLog', 'ObservedData', 'InvalidObservationError', 'StoredReading', 'READING_KINDS']

#: the two kinds of stored reading, as the journal names their records
READING_KINDS = ('observation', 'en_route')


class InvalidObservationError(ValueError):
    """An observation was rejected (nothing was stored).

    Example:
        >>> import math, torch
        >>> from uncertain_bo.distributions import Dirac
        >>> try:
        ...     ObservationLog(2).validate(torch.tensor([1.0, 2.0]), Dirac(torch.tensor([[1.0, 2.0]])), math.nan)
        ... except InvalidObservationError as exc:
        ...     print(exc)
        observation rejected, nothing stored: reading must be a finite number, got nan
    """


@dataclass(frozen=True)
class StoredReading:
    """Which reading a row of the log is.

    Attributes:
        kind: ``'observation'`` (a measurement at a commanded target) or ``'en_route'`` (a reading taken while
            driving), as the journal names its record.
        index: its journal index (among the measurements, or among the en-route readings).
        stamp: when the reading was taken (the sensor's stamp, s), None when unknown: what a revised trajectory is
            matched against (:mod:`uncertain_bo.explorer.revisions`).
        pose_stamp: the stamp of the pose estimate its location distribution came from (s), None when unknown: a
            revision stamped before it is older than the location it would revise.
        rover: the team rover that took it (None: a lone rover).
        seq: that rover's sequence number of it (None: a lone rover).

    Example:
        >>> reading = StoredReading.of('observation', 3, {'reading_stamp': 1712.5, 'rover': 'rover1', 'seq': 'x'})
        >>> reading.key, reading.stamp, reading.rover, reading.seq
        (('observation', 3), 1712.5, 'rover1', None)
    """

    kind: str
    index: int
    stamp: float | None = None
    pose_stamp: float | None = None
    rover: str | None = None
    seq: int | None = None

    @classmethod
    def of(cls, kind: str, index: int, fields: dict) -> 'StoredReading':
        """The reading ``(kind, index)`` with the stamps and team keys of ``fields`` (an ``observe`` call's extras
        or its journal record: ``reading_stamp``, ``pose_stamp``, ``rover``, ``seq``; values of another type, or
        stamps that are not finite, are left out)."""
        def stamp(v):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            return float(v) if ok else None

        rover, seq = fields.get('rover'), fields.get('seq')
        return cls(kind, int(index), stamp(fields.get('reading_stamp')), stamp(fields.get('pose_stamp')),
                   rover if isinstance(rover, str) else None,
                   int(seq) if isinstance(seq, int) and not isinstance(seq, bool) else None)

    @property
    def key(self) -> tuple[str, int]:
        """``(kind, index)``: how the journal and :meth:`~uncertain_bo.planning.planner.Planner.revise` name the
        reading."""
        return self.kind, self.index


@dataclass(frozen=True)
class ObservedData:
    """A read-only view of the observations at one moment (what a decision or a recommendation sees,
    :class:`~uncertain_bo.acquisition.DecisionContext`): later observations and revisions do not change it.

    Attributes:
        targets: ``(n, d)`` commanded targets of the measurements.
        y: ``(n,)`` their readings (field units); ``reading_variances``: ``(n,)`` the variances their sensor reported
            (field units², 0 = none); ``reached``: ``(n,)`` bool, whether the rover reached each target.
        bounds: ``(2, d)`` the search box (:attr:`places` are clamped into it; dtype and device to follow).
        inputs: the measurements' location distributions, one each; ``en_route``: ``(location, reading, variance)``
            of each en-route reading.

    Example:
        A measurement whose goal timed out counts where its reading was taken:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> log = ObservationLog(2)
        >>> log.add(torch.tensor([1.0, 1.0]), Dirac(torch.tensor([[1.2, 1.0]])), 0.5)
        >>> log.add(torch.tensor([9.0, 9.0]), Dirac(torch.tensor([[6.0, 7.0]])), 0.8, reached=False)
        >>> data = log.snapshot(torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64))
        >>> data.n, data.places.tolist()
        (2, [[1.0, 1.0], [6.0, 7.0]])
    """

    targets: Tensor
    y: Tensor
    reading_variances: Tensor
    reached: Tensor
    bounds: Tensor
    inputs: tuple[LocationDistributions, ...]
    en_route: tuple[tuple[LocationDistributions, float, float], ...]

    @property
    def n(self) -> int:
        return len(self.inputs)

    @cached_property
    def locations(self) -> LocationDistributions | None:
        """The measurements' location distributions as one batch (built on first use; None before any)."""
        return cat(list(self.inputs)) if self.inputs else None

    @property
    def en_route_y(self) -> Tensor:
        """``(n_en_route,)`` en-route readings (field units)."""
        return torch.tensor([r[1] for r in self.en_route], dtype=DTYPE)

    @cached_property
    def places(self) -> Tensor:
        """``(n, d)`` the place each measurement measured, as a target to send the rover to: its commanded target
        where the rover reached it, else where its reading was taken (the mean of its location distribution, clamped
        into :attr:`bounds`); what the recommendation rules over past measurements rank."""
        bounds = self.bounds
        if self.locations is None:
            return bounds.new_zeros(0, bounds.shape[1])
        taken = self.locations.mean.to(bounds).clamp(bounds[0], bounds[1])
        return torch.where(self.reached.to(bounds.device).unsqueeze(-1), self.targets.to(bounds), taken)


class ObservationLog:
    """Measurements and en-route readings of one run over :math:`\\mathbb R^d`.

    Args:
        dim: :math:`d`, the dimension of targets and locations.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> log = ObservationLog(2)
        >>> log.add(torch.tensor([1.0, 2.0]), Dirac(torch.tensor([[1.1, 2.0]])), 0.7)
        >>> log.add(None, Dirac(torch.tensor([[3.0, 2.0]])), 0.4)      # an en-route reading
        >>> log.n, log.n_en_route, log.row_of('en_route', 0), log.y.tolist()
        (1, 1, 1, [0.7])
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
        #: which reading each row is (:class:`StoredReading`), in row order
        self.readings: list[StoredReading] = []
        self._slot: list[int] = []       # each row's position among its kind (the measurements' or en-route lists)
        self._row_of: dict[tuple[str, int], int] = {}
        self._row_of_seq: dict[tuple[str, int], int] = {}   # (rover, seq) -> row

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

    def snapshot(self, bounds: Tensor) -> ObservedData:
        """The observations as they are now, read-only (:class:`ObservedData`; ``bounds`` ``(2, d)``: the search
        box)."""
        return ObservedData(self._targets, self.y, self.reading_variances, self.reached, bounds, tuple(self._inputs),
                            tuple(self.en_route))

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
        reason = self.location_problem(location)
        if reason:
            raise bad(reason)

    def location_problem(self, location: LocationDistributions) -> str | None:
        """Why ``location`` cannot be a stored reading's location distribution (one distribution over
        :math:`\\mathbb R^d` with a finite mean and, a Gaussian, a valid covariance:
        :func:`~uncertain_bo.distributions.check_covariance`), or None."""
        if not isinstance(location, LocationDistributions) or len(location) != 1:
            return 'location must be a single LocationDistributions (batch of 1)'
        if location.dim != self.dim:
            return f'location is over R^{location.dim}, search space is R^{self.dim}'
        if not torch.isfinite(location.mean).all():
            return 'location mean contains NaN or inf'
        if isinstance(location, Gaussian):
            reason = check_covariance(location.covariance[0])
            if reason:
                return f'location covariance {reason}'
        return None

    def add(self, target: Tensor | None, location: LocationDistributions, y: float,
            reading_variance: float = 0.0, reached: bool = True, reading: StoredReading | None = None) -> None:
        """Store a validated observation: a measurement at ``target`` ``(d,)`` (``reached``: the rover arrived
        there), or an en-route reading (None); ``reading`` says which it is (default: numbered on among its kind,
        no stamps)."""
        kind = 'en_route' if target is None else 'observation'
        slot = self.n_en_route if target is None else self.n
        if reading is None:
            reading = StoredReading(kind, slot)
        row = len(self.rows)
        self.rows.append((target, location, y, reading_variance))
        self.readings.append(reading)
        self._slot.append(slot)
        self._row_of[reading.key] = row
        if reading.rover is not None and reading.seq is not None:
            self._row_of_seq[(reading.rover, reading.seq)] = row
        if target is None:
            self.en_route.append((location, y, reading_variance))
            return
        self._targets = torch.cat([self._targets, target.reshape(1, -1)])
        self._inputs.append(location)
        self._y.append(y)
        self._noise.append(reading_variance)
        self._reached.append(bool(reached))

    def row_of(self, kind: str, index: int) -> int | None:
        """The row (GP row order) of the stored reading ``(kind, index)`` (:class:`StoredReading`), or None when
        no such reading is stored."""
        return self._row_of.get((kind, index))

    def row_of_seq(self, rover: str, seq: int) -> int | None:
        """The row of team rover ``rover``'s reading number ``seq``, or None when no such reading is stored."""
        return self._row_of_seq.get((rover, seq))

    def reached_at(self, row: int) -> bool:
        """Whether row ``row`` is a measurement whose rover reached its target (False for an en-route reading)."""
        return self.rows[row][0] is not None and self._reached[self._slot[row]]

    def replace_location(self, row: int, location: LocationDistributions) -> LocationDistributions:
        """Put ``location`` (validated, batch of 1) in place of row ``row``'s location distribution; returns the
        one it replaces. Nothing else of the row changes (its reading, target, kind, place in the GP's order)."""
        target, old, y, variance = self.rows[row]
        self.rows[row] = (target, location, y, variance)
        slot = self._slot[row]
        if target is None:
            self.en_route[slot] = (location, y, variance)
        else:
            self._inputs[slot] = location
        return old

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

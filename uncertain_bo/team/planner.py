"""The planner's side of a team (:mod:`uncertain_bo.team.mission`): each rover's :class:`RoverView` of the shared
planner, each measurement merged once (:meth:`TeamPlanner.merge`), the pending targets, rovers dropped, joining
mid-mission (:meth:`TeamPlanner.add_rover` at any time) and resuming the team's journal
(:mod:`uncertain_bo.team.journal`). Used by the in-process :class:`~uncertain_bo.team.mission.Team` and the ROS node
``team_explorer``."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch
from torch import Tensor

from ..distributions import DTYPE, LocationDistributions
from ..planning.observation_log import StoredReading
from ..planning.planner import Decision, LocationRevision, Planner, Recommendation, RevisionOutcome
from .journal import TeamResume, team_resume

__all__ = ['TeamPlanner', 'RoverView', 'SeqRevision']

log = logging.getLogger('uncertain_bo.team.mission')


@dataclass(frozen=True)
class SeqRevision:
    """A revised location distribution of a team rover's reading, named by the rover's sequence number ``seq``
    (:meth:`TeamPlanner.revise`); ``location``, ``stamp`` and ``source`` as in
    :class:`~uncertain_bo.planning.revisions.LocationRevision`.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> team = TeamPlanner()
        >>> view = team.add_rover('rover0', Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]),
        ...                                         GaussianExecutionNoise.isotropic(0.5, 2)))
        >>> target = view.suggest()
        >>> index = view.observe(target, Dirac(target.reshape(1, 2)), 0.7)            # rover0's seq 0
        >>> outcome = team.revise('rover0', [SeqRevision(0, Dirac(target.reshape(1, 2) + 0.25), stamp=12.0)])
        >>> outcome.applied, torch.equal(view.planner.locations.mean[0], target + 0.25)
        ([('observation', 0)], True)
    """

    seq: int
    location: LocationDistributions
    stamp: float
    source: str = ''


class RoverView:
    """What one rover's measurement cycle sees of the team's planner: the planner itself (every attribute not
    defined here is the planner's), except that

    - :meth:`suggest` decides with the other rovers' current targets pending, from this rover's :attr:`position`,
      and records the rover with the decision;
    - :meth:`observe` hands the measurement to :meth:`Team.merge` with this rover's name and next sequence number;
    - :attr:`n` is the planner's (the team's measurements), so every rover ends once the team's budget is reached,
      and a rover keeps deciding while the other rovers' pending targets would cover the budget (one of them may
      be dropped before it measures; the targets left unmeasured when the budget is reached are abandoned);
    - :attr:`start` and :meth:`set_start` are this rover's (the planner's start is the first rover's);
    - :attr:`resumed_target` / :meth:`take_resumed_target` are this rover's pending target from a resumed team
      journal (:mod:`uncertain_bo.team.journal`), which its measurement cycle drives to before deciding anew; its
      :attr:`seq` numbers on after the journal's;
    - :meth:`stored_readings` are this rover's readings only, and :meth:`revise` hands revisions of them to
      :meth:`TeamPlanner.revise` by ``(rover, seq)`` (its revised trajectory re-places its own readings).

    Attributes:
        name: the rover's name.
        target: ``(d,)`` the target it is driving to and has not measured yet, or None.
        decision: the planner's :class:`~uncertain_bo.planning.planner.Decision` of that target.
        pending_at_decision: how many other rovers' targets were pending when it was decided.
        measurements_at_decision: how many measurements the planner held when it was decided.

    Example:
        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2))
        >>> view = TeamPlanner().add_rover('rover0', planner)
        >>> target = view.suggest()
        >>> planner.decisions[-1].rover, view.target is target
        ('rover0', True)
        >>> view.observe(target, Dirac(target.reshape(1, 2)), 0.7), view.seq, view.target, view.n
        (0, 1, None, 1)
    """

    def __init__(self, team: 'TeamPlanner', name: str, planner: Planner):
        self._team, self.name, self._planner = team, name, planner
        self._start: Tensor | None = None
        self._last_location: Tensor | None = None
        self.seq = 0
        self._resumed: Tensor | None = None
        self.target: Tensor | None = None
        self.decision: Decision | None = None
        self.pending_at_decision = self.measurements_at_decision = 0

    def __getattr__(self, name: str) -> Any:
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._planner, name)

    @property
    def planner(self) -> Planner:
        return self._planner

    @property
    def start(self) -> Tensor | None:
        return self._start

    def set_start(self, position: Tensor) -> None:
        """This rover's start ``(d,)``; the planner's too when none is set (it orders the planner's design)."""
        self._start = torch.as_tensor(position, dtype=DTYPE).reshape(-1)
        if self._planner.start is None and self._planner.n == 0 and not self._planner.decisions:
            self._planner.set_start(self._start)

    @property
    def position(self) -> Tensor:
        """``(d,)`` where this rover believes it is: the mean of its latest location distribution, else its start,
        else the planner's position."""
        if self._last_location is not None:
            return self._last_location
        return self._start if self._start is not None else self._planner.position

    @property
    def resumed_target(self) -> Tensor | None:
        """``(d,)`` this rover's pending target from the resumed journal, not taken yet (None otherwise)."""
        return self._resumed

    def take_resumed_target(self) -> Tensor | None:
        """This rover's pending target from the resumed journal, once: it is its :attr:`target` again (pending for
        the other rovers' decisions) and is forgotten here; later calls return None."""
        target, self._resumed = self._resumed, None
        if target is not None:
            self.target = target
        return target

    def suggest(self) -> Tensor:
        """The rover's next target ``(d,)``: decided by the planner with the other rovers' targets pending and the
        travel cost from :attr:`position` (see :meth:`~uncertain_bo.planning.planner.Planner.suggest`)."""
        pending = self._team.pending(exclude=self.name, planner=self._planner)
        if not self._team.pending_targets:
            pending = pending[:0]          # the ablation: as if no other rover were on its way
        self.measurements_at_decision = self._planner.n
        target = self._planner.suggest(pending=pending if len(pending) else None, position=self.position,
                                       rover=self.name)
        self.target, self.decision, self.pending_at_decision = target, self._planner.decisions[-1], len(pending)
        return target

    def stored_readings(self) -> list[StoredReading]:
        """This rover's stored readings (:meth:`~uncertain_bo.planning.planner.Planner.stored_readings`):
        its revised trajectory re-places these only."""
        return [r for r in self._planner.readings if r.rover == self.name]

    def revise(self, revisions: Iterable[LocationRevision]) -> RevisionOutcome:
        """Hand revisions of this rover's readings to :meth:`TeamPlanner.revise` by ``(rover, seq)``, the key a
        rover's messages carry across the team (its measurement cycle names readings by the planner's ``(kind,
        index)``, :meth:`stored_readings`); a revision of a reading that is not this rover's is rejected as an
        unknown reading."""
        own = {r.key: r.seq for r in self.stored_readings()}
        outcome = RevisionOutcome()
        by_seq = []
        for rev in revisions:
            seq = own.get(rev.reading)
            if seq is None:
                self._planner.reject_revision(f'{self.name}: {rev.reading}', 'unknown reading', 'not a reading of '
                                              'this rover')
                outcome.reject(f'{rev.reading[0]} {rev.reading[1]}', 'unknown reading', f'not a reading of {self.name}')
            else:
                by_seq.append(SeqRevision(seq, rev.location, rev.stamp, rev.source))
        done = self._team.revise(self.name, by_seq)
        outcome.applied += done.applied
        outcome.rejections += done.rejections
        return outcome

    def observe(self, target: Tensor | None, location: LocationDistributions, y: float,
                reading_variance: float = 0.0, **meta: Any) -> int:
        """Hand one measurement (or en-route reading, ``target`` None) to :meth:`Team.merge` with this rover's next
        sequence number; returns the planner's index. Raises what :meth:`~uncertain_bo.planning.planner.Planner.observe`
        raises (the sequence number is then not used)."""
        index = self._team.merge(self.name, self.seq, target, location, y, reading_variance, **meta)
        self.seq += 1
        self._last_location = location.mean.reshape(-1).to(DTYPE)
        if target is not None:
            self.target = None
        return index


class TeamPlanner:
    """The planner's side of a team: the rovers' :class:`RoverView` s of their planner(s), each measurement stored
    once (:meth:`merge`), the targets pending (:meth:`pending`), rovers dropped (:meth:`drop`) and the team's
    recommendation. Used as is by the ROS node ``team_explorer`` and, with the simulation around it, by
    :class:`Team`.

    Args:
        pending_targets: decide with the other rovers' targets pending (True); False is the ablation that decides as
            if no other rover were on its way.

    **Resuming.** A planner opened on an existing journal (the team's, with each record's rover) is resumed for the
    team when its first rover is added (:func:`~uncertain_bo.team.journal.team_resume`): the ``(rover, seq)`` keys
    the journal holds are merged already (a re-sent measurement is stored once), and each rover added gets its
    pending target back (:meth:`RoverView.take_resumed_target`) and numbers on after its journaled ``seq``.
    :meth:`release_absent` releases the pending targets of the journal's rovers that are not in the team.

    **Revisions.** :meth:`revise` re-places a rover's readings, named by ``(rover, seq)``, at revised location
    distributions in the shared planner (:mod:`uncertain_bo.planning.revisions`: journaled with ``rover`` and ``seq``,
    replayed when the team resumes); a ``(rover, seq)`` never merged is rejected and counted.

    **Joining.** :meth:`add_rover` may be called at any time: the rover's first target is decided with the other
    rovers' pending targets, its measurements enter the same planner.

    Attributes:
        views: rover name -> its :class:`RoverView`, in the order the rovers were added.
        planners: the distinct planners of the rovers (one when they share it).
        dropped: names of the rovers dropped, in order.
        duplicates: measurements delivered again and merged once.
        resumed: id(planner) -> what its journal said about the team (:class:`~uncertain_bo.team.journal.
            TeamResume`; empty for a new journal).
        released: rover -> the resumed pending target released because the rover is not in the team.

    Example:
        Two rovers share one planner; a measurement delivered twice is stored once:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2))
        >>> team = TeamPlanner()
        >>> first, second = team.add_rover('rover0', planner), team.add_rover('rover1', planner)
        >>> target = first.suggest()
        >>> torch.equal(team.pending(exclude='rover1'), target.reshape(1, 2))     # pending for rover1's decision
        True
        >>> indices = [team.merge('rover0', 0, target, Dirac(target.reshape(1, 2)), 0.7) for _ in range(2)]
        >>> indices, team.duplicates, planner.n
        ([0, 0], 1, 1)
    """

    def __init__(self, *, pending_targets: bool = True):
        self.pending_targets = bool(pending_targets)
        self.duplicates = 0
        self.dropped: list[str] = []
        self.planners: list[Planner] = []
        self.views: dict[str, RoverView] = {}
        self._done: dict[str, Callable[[], bool]] = {}
        self._merged: dict[tuple[str, int], int] = {}
        self._latest: dict[int, tuple[Planner, Recommendation]] = {}   # id(planner) -> it, its latest recommendation
        self.resumed: dict[int, TeamResume] = {}
        self.released: dict[str, Tensor] = {}

    def add_rover(self, name: str, planner: Planner, done: Callable[[], bool] | None = None) -> RoverView:
        """Add rover ``name`` deciding with ``planner`` (at the start or mid-mission: a rover joining); ``done()``
        says whether its mission has ended (its target is then no longer pending). Returns its view (hand it to the
        rover's :class:`~uncertain_bo.explorer.Explorer` as its planner). A rover the planner's resumed journal
        names gets its pending target back and numbers its measurements on (see the class docstring).

        Raises:
            ValueError: ``name`` is already in the team.
        """
        if name in self.views:
            raise ValueError(f'rover {name!r} is already in the team')
        if not any(p is planner for p in self.planners):
            self.planners.append(planner)
            resume = self.resumed[id(planner)] = team_resume(planner)
            self._merged.update(resume.merged)
        resume = self.resumed[id(planner)]
        view = RoverView(self, name, planner)
        view.seq = resume.seqs.get(name, 0)
        view._resumed = view.target = resume.pending.pop(name, None)    # pending for the others at once
        view._last_location = resume.last_location.get(name)
        if view._resumed is not None:
            log.info('%s: resumes its pending target (%s) from the journal', name,
                     ', '.join(f'{v:.2f}' for v in view._resumed.tolist()))
        self.views[name] = view
        self._done[name] = done if done is not None else (lambda: False)
        return view

    def release_absent(self) -> dict[str, Tensor]:
        """Release the resumed pending targets of the journal's rovers that are not in the team (call it once the
        restarted team's rovers are added): they are no longer anyone's (logged); such a rover joining later decides
        anew. Returns rover -> the target released (also in :attr:`released`)."""
        out = {}
        for resume in self.resumed.values():
            for rover in [r for r in resume.pending if r not in self.views]:
                target = out[rover] = resume.pending.pop(rover)
                log.warning('%s is in the journal but not in the team: its pending target (%s) is released', rover,
                            ', '.join(f'{v:.2f}' for v in target.tolist()))
        self.released.update(out)
        return out

    def rover_records(self, rover: str) -> list[dict[str, Any]]:
        """``rover``'s ``observation`` and ``en_route`` records in its planner's resumed journal (its travel
        budget goes on from their totals: :meth:`~uncertain_bo.explorer.TravelBudget.resumed`).

        Raises:
            KeyError: an unknown rover.
        """
        return list(self.resumed[id(self.views[rover].planner)].records.get(rover, []))

    def active(self, rover: str) -> bool:
        """``rover`` is neither dropped nor done."""
        return rover not in self.dropped and not self._done[rover]()

    def pending(self, exclude: str | None = None, planner: Planner | None = None) -> Tensor:
        """``(p, d)`` the targets rovers are driving to and have not measured (those of ``planner``'s rovers only,
        when given), leaving out ``exclude``, dropped rovers and rovers whose mission ended."""
        targets = [v.target for name, v in self.views.items()
                   if name != exclude and v.target is not None and self.active(name)
                   and (planner is None or v.planner is planner)]
        if targets:
            return torch.stack([t.reshape(-1) for t in targets]).to(DTYPE)
        return torch.zeros(0, self.planners[0].dim, dtype=DTYPE)

    def merge(self, rover: str, seq: int, target: Tensor | None, location: LocationDistributions, y: float,
              reading_variance: float = 0.0, **meta: Any) -> int:
        """Store rover ``rover``'s measurement number ``seq`` (``target`` None: an en-route reading) in its planner,
        exactly once: a ``(rover, seq)`` merged before is not stored again (counted in :attr:`duplicates`; its
        index is returned), whenever it arrives. The journal records carry ``rover`` and ``seq``.

        Returns:
            The planner's index of the measurement (of the en-route reading among en-route readings).

        Raises:
            KeyError: an unknown rover.
            InvalidObservationError: what :meth:`~uncertain_bo.planning.planner.Planner.observe` refuses (nothing
            stored).
        """
        if rover not in self.views:
            raise KeyError(f'unknown rover {rover!r}; the team has {", ".join(self.views)}')
        key = (rover, int(seq))
        if key in self._merged:
            self.duplicates += 1
            log.info('%s: measurement %d delivered again: already merged, not stored twice', rover, seq)
            return self._merged[key]
        index = self.views[rover].planner.observe(target, location, y, reading_variance, rover=rover,
                                                  seq=int(seq), **meta)
        self._merged[key] = index
        return index

    def revise(self, rover: str, revisions: Iterable['SeqRevision']) -> RevisionOutcome:
        """Re-place rover ``rover``'s readings, each named by the rover's sequence number, at revised location
        distributions (:meth:`~uncertain_bo.planning.planner.Planner.revise` of its planner: checked, journaled with
        ``rover`` and ``seq``, applied; :mod:`uncertain_bo.planning.revisions`). A ``(rover, seq)`` the planner does not
        hold (never merged, or lost) is rejected as an unknown reading and counted; so is an unknown rover's.

        Returns:
            What was applied and rejected.
        """
        outcome = RevisionOutcome()
        view = self.views.get(rover)
        planner = view.planner if view is not None else self.planners[0]
        known = []
        for rev in revisions:
            row = planner.observations.row_of_seq(rover, int(rev.seq)) if view is not None else None
            if row is None:
                detail = 'no such rover in the team' if view is None else 'never merged, or lost'
                planner.reject_revision(f'{rover} seq {rev.seq}', 'unknown reading', detail)
                outcome.reject(f'{rover} seq {rev.seq}', 'unknown reading', detail)
                continue
            known.append(LocationRevision(planner.observations.readings[row].key, rev.location, rev.stamp, rev.source))
        done = planner.revise(known)
        outcome.applied += done.applied
        outcome.rejections += done.rejections
        return outcome

    def drop(self, rover: str, reason: str = 'stopped reporting') -> None:
        """Take ``rover`` out of the team: its pending target is released, it gets no more targets; what it
        measured stays in the model. Dropping a dropped rover does nothing.

        Raises:
            KeyError: an unknown rover.
        """
        view = self.views[rover]
        if rover in self.dropped:
            return
        self.dropped.append(rover)
        released, view.target, view._resumed = view.target, None, None
        log.warning('%s dropped (%s)%s; %d rover(s) go on', rover, reason,
                    '' if released is None else f': its target ({released[0]:.1f}, {released[1]:.1f}) is released',
                    sum(name not in self.dropped for name in self.views))

    def record(self, rover: str, rec: Recommendation) -> Recommendation:
        """Note ``rec``, the recommendation of ``rover``'s planner after its measurement; returns the team's."""
        planner = self.views[rover].planner
        self._latest[id(planner)] = (planner, rec)
        return self.recommend()

    def recommend(self) -> Recommendation:
        """The team's recommendation: the shared planner's latest, or without sharing the rovers' latest
        recommendation with the highest predicted robust value.

        Raises:
            RuntimeError: no measurement yet.
        """
        return self._best()[1]

    def recommending_planner(self) -> Planner:
        """The planner whose recommendation is the team's (:meth:`recommend`).

        Raises:
            RuntimeError: no measurement yet.
        """
        return self._best()[0]

    def _best(self) -> tuple[Planner, Recommendation]:
        if not self._latest:
            raise RuntimeError('nothing to recommend before the first measurement')
        return max(self._latest.values(), key=lambda pr: pr[1].mean)

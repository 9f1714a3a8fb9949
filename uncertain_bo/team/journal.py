"""Resuming a team from its journal: each rover's pending target, its sequence numbers and what was merged.

A team's one journal (:mod:`uncertain_bo.team.mission`) already holds what a restart needs: every ``observation`` (and
``en_route`` reading) with the ``rover`` that took it and its ``seq``, and every ``decision`` with the rover it was
for. The planner resumes the journal as a lone rover's does (:mod:`uncertain_bo.planning.journal_writer`: the schema's
lenient check skips and counts damaged records, the numbering goes on after the highest index, records a storage
fault held are in :attr:`~uncertain_bo.journal.journal.Journal.records`); :func:`team_resume` then reads, from the same
records the planner replayed, what is the team's:

- a rover's **pending target**: its last decision with no observation of that rover after it (in journal order;
  a rover's decisions and measurements alternate, whatever the other rovers did in between), unless it lies
  outside the search bounds or in a keep-out zone (then it decides anew, logged);
- its **next sequence number**: one past the highest ``seq`` journaled for it, so the rover numbers on;
- the **merged keys** ``(rover, seq) -> index``: a measurement re-sent after the restart is recognised and stored
  once (:meth:`~uncertain_bo.team.mission.TeamPlanner.merge`);
- its last measured location (the mean, where it is believed to be) and its records (its travel budget).

The planner's own single-rover resumed target (and the batch queued after it) is dropped
(:meth:`~uncertain_bo.planning.planner.Planner.forget_resumed`): in a team it is one rover's, handed back
here per rover.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from ..distributions import DTYPE, InvalidDistributionError
from ..journal.journal import location_from_record

__all__ = ['TeamResume', 'team_resume']

log = logging.getLogger(__name__)


@dataclass
class TeamResume:
    """What a team's journal says about its rovers (see :func:`team_resume`).

    Attributes:
        rovers: every rover the journal names (decisions, measurements), in order of first appearance.
        pending: rover -> ``(d,)`` its decided, not yet measured target (usable ones only).
        seqs: rover -> its next sequence number (0 for a rover with no measurement).
        merged: ``(rover, seq)`` -> the planner's index of that measurement (of an en-route reading among them).
        last_location: rover -> ``(d,)`` the mean of its last journaled location.
        records: rover -> its ``observation`` and ``en_route`` records, in order.

    Example:
        A team stopped while rover0 drove to its target; the restarted planner hands it back:

        >>> import tempfile, torch
        >>> from pathlib import Path
        >>> from uncertain_bo.distributions import GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> from uncertain_bo.team.planner import TeamPlanner
        >>> bounds, noise = torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2)
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     path = Path(run_dir) / 'journal.jsonl'
        ...     target = TeamPlanner().add_rover('rover0', Planner(bounds, noise, n_initial=2, journal=path)).suggest()
        ...     resumed = team_resume(Planner(bounds, noise, n_initial=2, journal=path))
        >>> resumed.rovers, torch.equal(resumed.pending['rover0'], target), resumed.seqs
        (['rover0'], True, {'rover0': 0})
    """

    rovers: list[str] = field(default_factory=list)
    pending: dict[str, Tensor] = field(default_factory=dict)
    seqs: dict[str, int] = field(default_factory=dict)
    merged: dict[tuple[str, int], int] = field(default_factory=dict)
    last_location: dict[str, Tensor] = field(default_factory=dict)
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def team_resume(planner: Any) -> TeamResume:
    """Read ``planner``'s resumed journal (:attr:`~uncertain_bo.planning.planner.Planner.journal_file`) for a team, and
    make the planner forget its single-rover resumed target (see the module docstring).

    Args:
        planner: a :class:`~uncertain_bo.planning.planner.Planner`; without a journal, an empty :class:`TeamResume`.

    Returns:
        The team's state at the restart. Records without a string ``rover`` (a lone rover's) are not any rover's.
    """
    out = TeamResume()
    journal = planner.journal_file
    if journal is None:
        return out
    planner.forget_resumed()
    decided: dict[str, Tensor] = {}

    def seen(rover: str) -> None:
        if rover not in out.seqs:
            out.rovers.append(rover)
            out.seqs[rover] = 0

    for rec in journal.records:     # the schema's lenient check already left out damaged records
        kind, rover = rec.get('type'), rec.get('rover')
        if kind not in ('decision', 'observation', 'en_route') or not isinstance(rover, str):
            continue
        seen(rover)
        if kind == 'decision':
            decided[rover] = torch.tensor(rec['target'], dtype=DTYPE).reshape(-1)
            continue
        if kind == 'observation':
            decided.pop(rover, None)
        out.records.setdefault(rover, []).append(rec)
        seq = rec.get('seq')
        if isinstance(seq, int) and not isinstance(seq, bool):
            out.merged[(rover, seq)] = int(rec['index'])
            out.seqs[rover] = max(out.seqs[rover], seq + 1)
        try:
            out.last_location[rover] = location_from_record(rec['location']).mean.reshape(-1).to(DTYPE)
        except (KeyError, TypeError, ValueError, InvalidDistributionError):
            pass
    bounds = planner.bounds
    for rover, target in decided.items():
        where = f'({", ".join(f"{v:.2f}" for v in target.tolist())})'
        if not (target.numel() == planner.dim and bool(torch.isfinite(target).all())
                and bool(((target >= bounds[0]) & (target <= bounds[1])).all())):
            log.warning('journal %s: %s\'s pending target %s is outside the search bounds: it decides anew',
                        journal.path, rover, where)
        elif bool(planner.keep_out.inside(target.reshape(1, -1))[0]):
            log.info('journal %s: %s\'s pending target %s was kept out: it decides anew', journal.path, rover, where)
        else:
            out.pending[rover] = target
    if out.rovers:
        log.info('journal %s: resumed a team of %s; pending targets: %s', journal.path, ', '.join(out.rovers),
                 ', '.join(out.pending) or 'none')
    return out

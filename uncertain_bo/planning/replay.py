"""A run read back from its journal (:func:`replay`): the start, the stored readings and the decisions a
:class:`~uncertain_bo.planning.planner.Planner` resumes from, each validated as the planner validates a new one (a
record it rejects is skipped with a warning, nothing is guessed); revisions come back as the schema kept them, for
:mod:`uncertain_bo.planning.revisions` to apply.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..distributions import DTYPE, InvalidDistributionError, LocationDistributions
from ..journal.journal import Journal, location_from_record
from .observation_log import StoredReading

__all__ = ['Replay', 'replay']

log = logging.getLogger(__name__)


@dataclass
class Replay:
    """What a journal says about a run, validated record by record (see :func:`replay`).

    Attributes:
        start: ``(d,)`` the last start position recorded, or None.
        observations: ``(target (d,), location, reading, reading variance, goal_reached, reading)`` in journal
            order (the variance is 0 where the journal has none; ``reading`` says which it is: its index, stamps and
            team keys, :class:`~uncertain_bo.planning.observation_log.StoredReading`); en-route readings (``'en_route'``
            records) are among them, in their place, with target None and goal_reached False. Each has the location
            it was stored with: its revisions are in ``revisions``.
        revisions: the ``revision`` records the schema kept, in journal order
            (:mod:`uncertain_bo.planning.revisions` applies them).
        decisions: decision records with ``index``, ``target`` ``(d,)``, ``phase``, ``seconds``,
            ``acquisition_value``, ``beta`` (NaN where absent), ``fit_seconds`` and ``rover`` (None where absent).

    Example:
        >>> import tempfile, torch
        >>> from pathlib import Path
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.planning.planner import Planner
        >>> with tempfile.TemporaryDirectory() as run_dir:
        ...     path = Path(run_dir) / 'journal.jsonl'
        ...     planner = Planner(torch.tensor([[0.0, 0.0], [10.0, 10.0]]), GaussianExecutionNoise.isotropic(0.5, 2),
        ...                       n_initial=2, journal=path)
        ...     target = planner.suggest()
        ...     index = planner.observe(target, Dirac(target.reshape(1, 2)), 0.7)
        ...     run = replay(planner.journal_file, 2, planner.observations.validate)
        >>> len(run.observations), len(run.decisions), run.observations[0][2]
        (1, 1, 0.7)
    """

    start: torch.Tensor | None = None
    observations: list[tuple[torch.Tensor | None, LocationDistributions, float, float, bool, StoredReading]] = field(
        default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    revisions: list[dict[str, Any]] = field(default_factory=list)


def replay(journal: Journal, dim: int,
           validate: Callable[[torch.Tensor, LocationDistributions, float, float], None]) -> Replay:
    """Read a journal back into a run's start, observations and decisions.

    A record that does not parse, or that ``validate(target, location, y, reading_variance)`` rejects (it raises
    ``ValueError``), is skipped with a warning naming it; nothing is guessed. ``dim`` is the search space's
    dimension (a start of another dimension is ignored).
    """
    out = Replay()
    starts = [r for r in journal.records if r.get('type') == 'start' and 'position' in r]
    if starts:
        try:
            start = torch.tensor(starts[-1]['position'], dtype=DTYPE).reshape(-1)
            if start.numel() == dim and torch.isfinite(start).all():
                out.start = start
        except (TypeError, ValueError) as exc:
            log.warning('journal %s: ignoring invalid start record: %s', journal.path, exc)
    for rec in journal.records:
        kind = rec.get('type')
        if kind not in ('observation', 'en_route'):
            continue
        try:
            loc = location_from_record(rec['location'])
            target = torch.tensor(rec['target'], dtype=DTYPE) if kind == 'observation' else None
            variance = rec.get('reading_variance', 0.0)
            validate(target, loc, rec['y'], variance)
        except (KeyError, TypeError, ValueError, InvalidDistributionError) as exc:
            log.warning('journal %s: skipping invalid %s %s: %s', journal.path,
                        'observation' if kind == 'observation' else 'en-route reading', rec.get('index'), exc)
            continue
        out.observations.append((target, loc, float(rec['y']), float(variance),
                                 kind == 'observation' and not rec.get('goal_timed_out', False),
                                 StoredReading.of(kind, rec['index'], rec)))
    out.revisions = [r for r in journal.records if r.get('type') == 'revision']
    for rec in journal.records:
        if rec.get('type') != 'decision':
            continue
        try:
            out.decisions.append({
                'index': int(rec['index']), 'target': torch.tensor(rec['target'], dtype=DTYPE).reshape(-1),
                'phase': str(rec.get('phase', '')), 'seconds': float(rec.get('seconds') or 0.0),
                'acquisition_value': _nan_if_none(rec.get('acquisition_value')),
                'beta': _nan_if_none(rec.get('beta')), 'fit_seconds': float(rec.get('fit_seconds') or 0.0),
                'rover': rec['rover'] if isinstance(rec.get('rover'), str) else None})
        except (KeyError, TypeError, ValueError) as exc:
            log.warning('journal %s: skipping invalid decision record: %s', journal.path, exc)
    return out


def _nan_if_none(v: Any) -> float:
    return math.nan if v is None else float(v)

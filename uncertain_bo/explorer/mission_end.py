"""The end of a mission: ``max_measurements`` or a budget (``max_distance``, ``max_mission_time``:
:mod:`~uncertain_bo.explorer.budget`), whichever is first; :attr:`~uncertain_bo.explorer.state_machine.Explorer.
done_reason` says which. Raising a limit at run time continues the mission. The end is reported once (result
file, host's ``finished``), after the work still running on the decider and once the journal holds every record.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from ..planning.planner import Planner, Recommendation
from .outputs import ExplorerOutputs
from .result_file import write_result

__all__ = ['MissionEnd', 'LIMITS']

log = logging.getLogger('uncertain_bo.explorer.state_machine')

#: the parameters that end a mission (a change at run time re-evaluates a finished one)
LIMITS = ('max_measurements', 'max_distance', 'max_mission_time')


class MissionEnd:
    """Why the mission ended, whether a raised limit continues it, and the end's report (module docstring).

    Args:
        planner: the planner (its measurements count against ``max_measurements``; the final recommendation).
        params: the explorer's parameters, read live (:data:`LIMITS`).
        outputs: the host, told :meth:`~uncertain_bo.explorer.outputs.ExplorerOutputs.finished`.
        result_file: where the result is written when the mission ends (None: not written).

    Attributes:
        done_reason: why the mission ended (None until it does, and again once a raised limit continues it).
        reported: the end was reported (result file, host).
        log_end: log the end (info, ``'mission ends: <reason>'``); False where the host logs it itself (the team
            explorer: each rover's end with its name, the team's end once).

    Example:
        >>> import numpy as np
        >>> from uncertain_bo.explorer import EXPLORER_PARAMS, planner_from_parameters
        >>> from uncertain_bo.explorer.mission_end import MissionEnd
        >>> from uncertain_bo.parameters.specs import validate
        >>> params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0], 'max_speed': 0.0,
        ...                                     'max_measurements': 1})
        >>> planner = planner_from_parameters(params)
        >>> ending = MissionEnd(planner, params, outputs=None, result_file=None)
        >>> ending.measurements_reached() is None
        True
        >>> import torch
        >>> from uncertain_bo.distributions import Dirac
        >>> _ = planner.observe(torch.tensor([10.0, 10.0]), Dirac(torch.tensor([[10.0, 10.0]])), 21.3)
        >>> ending.end(ending.measurements_reached()); ending.done_reason
        'max_measurements = 1 reached'
        >>> params['max_measurements'] = 5                # raised at run time: the mission continues
        >>> ending.limits_raised(budget_spent=None), ending.done_reason
        (True, None)
    """

    def __init__(self, planner: Planner, params: dict[str, Any], outputs: ExplorerOutputs,
                 result_file: str | Path | None):
        self.planner = planner
        self.params = params
        self.outputs = outputs
        self.result_file = result_file
        self.done_reason: str | None = None
        self.reported = False
        self.log_end = True
        self._done_limits: tuple | None = None

    def _limits(self) -> tuple:
        return tuple(self.params[k] for k in LIMITS)

    def measurements_reached(self) -> str | None:
        """Why ``max_measurements`` ends the mission, or None."""
        if self.planner.n >= self.params['max_measurements']:
            return f"max_measurements = {self.params['max_measurements']} reached"
        return None

    def end(self, reason: str, announce: bool = False) -> None:
        """The mission ends for ``reason`` (``announce``: logged, unless :attr:`log_end` is off)."""
        self.done_reason = reason
        self._done_limits = self._limits()
        if announce and self.log_end:
            log.info('mission ends: %s', reason)

    def limits_raised(self, budget_spent: str | None) -> bool:
        """Ended, but a limit changed at run time and none is reached any more (``budget_spent``: why a budget is
        spent now, or None): the mission continues (True; :attr:`done_reason` is cleared)."""
        if self._done_limits is None or self._limits() == self._done_limits:
            return False
        if self.measurements_reached() is not None or budget_spent is not None:
            self._done_limits = self._limits()
            return False
        log.info('limits raised (%s): continuing', ', '.join(f'{k} = {self.params[k]}' for k in LIMITS))
        self.done_reason = None
        self.reported = False
        self._done_limits = None
        return True

    def report(self, rec: Recommendation | None, result: Callable[[Recommendation | None], dict[str, Any]]) -> None:
        """Report the end once: write the result file (``result(rec)``) and tell the host. A mission that a budget
        ended before its first measurement has no recommendation: the result file says so, the host is not
        called; else ``rec`` is the final recommendation (None: asked of the planner now)."""
        self.reported = True
        if self.planner.n:
            rec = rec if rec is not None else self.planner.recommend()
        if self.result_file is not None:
            try:
                write_result(self.result_file, result(rec))
            except OSError as exc:               # a full disk at the very end: the journal holds the run
                log.error('could not write the result file %s: %s (the journal holds every measurement)',
                          self.result_file, exc)
        if rec is not None:
            self.outputs.finished(rec)

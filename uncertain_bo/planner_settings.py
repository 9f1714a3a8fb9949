"""A planner's settings: checked when it is built, and changed during a run (an operator's run-time parameters,
the rover's first pose): the start, :math:`\\beta_t`, the execution-noise model and the search bounds, each from
the next decision on.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any

import torch
from torch import Tensor

from .acquisition import make_beta
from .distributions import DTYPE, ExecutionNoise
from .execution_noise_estimator import EXECUTION_FEEDBACK

__all__ = ['PlannerSettings']

log = logging.getLogger('uncertain_bo.planner')   # the planner's log, as before the split


class PlannerSettings:
    """The settings of :class:`~uncertain_bo.planner.Planner` (a part of it: it checks the planner's fields,
    rebuilds its model, method and initial design after a change and journals the changes a resumed run needs)."""

    def _check_settings(self) -> None:
        """Check the planner's fields as constructed (``bounds`` becomes a float64 tensor; the recommendation
        rule is checked by the planner, after its execution-noise estimator).

        Raises:
            ValueError: see :class:`~uncertain_bo.planner.Planner`.
        """
        self.bounds = torch.as_tensor(self.bounds, dtype=DTYPE)
        if self.bounds.ndim != 2 or self.bounds.shape[0] != 2 or not (self.bounds[1] > self.bounds[0]).all():
            raise ValueError(f'bounds must be (2, d) with upper > lower, got {self.bounds.tolist()}')
        if self.n_initial < 1:
            raise ValueError(f'n_initial must be >= 1, got {self.n_initial}')
        if self.refit_every < 0:
            raise ValueError(f'refit_every must be >= 0, got {self.refit_every}')
        for name in ('fit_max_points', 'sparse_above', 'inducing_points', 'confirmation_readings'):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
                raise ValueError(f'{name} must be an integer >= 0, got {value!r}')
        if not self.travel_weight >= 0:
            raise ValueError(f'travel_weight must be >= 0, got {self.travel_weight}')
        if isinstance(self.route_horizon, bool) or not isinstance(self.route_horizon, int) or self.route_horizon < 1:
            raise ValueError(f'route_horizon must be an integer >= 1, got {self.route_horizon!r}')
        if self.pending_radius is not None and not 0.0 <= self.pending_radius < math.inf:
            raise ValueError(f'pending_radius must be None or a finite number >= 0, got {self.pending_radius!r}')
        if self.execution_feedback not in EXECUTION_FEEDBACK:
            raise ValueError(f'execution_feedback must be one of {", ".join(EXECUTION_FEEDBACK)}, '
                             f'got {self.execution_feedback!r}')

    def set_start(self, position: Tensor) -> None:
        """Order the initial design as a short tour from ``position`` ``(d,)`` (e.g. the rover's first pose).

        Raises:
            RuntimeError: observations exist already (the design is partly used).
        """
        if self.n:
            raise RuntimeError('set_start() must be called before the first observation')
        self.start = torch.as_tensor(position, dtype=DTYPE).reshape(-1)
        self._queue = []
        self._design = self._initial_design()
        self._method = self._new_method()  # a survey re-plans its tour from the start
        if self._journal is not None:  # a resumed run orders its initial design the same way
            self._journal.append({'type': 'start', 'position': self.start.tolist(), 'wall_time': time.time()})

    def set_beta(self, beta: Any) -> None:
        """Change :math:`\\beta_t` (a number or a schedule) from the next decision on."""
        self.beta = beta
        self._beta = make_beta(beta)

    def set_execution_noise(self, execution_noise: ExecutionNoise) -> None:
        """Change the execution-noise model :math:`\\hat P_{\\mathbf x}` from the next decision on (an operator's
        run-time ``execution_noise_std``).

        When the execution noise is learned (``execution_noise_prior_weight`` set), ``execution_noise`` becomes
        the new prior :math:`\\Sigma_0` of :meth:`learned_execution_covariance`: the evidence of the goals reached
        so far is kept and combined with it at once (before, the next reached goal silently put the old prior
        back).

        Raises:
            ValueError: learning is on and ``execution_noise`` is not a :class:`GaussianExecutionNoise` of the
                planner's dimension.
        """
        if self.execution_estimator is None:
            self.execution_noise = execution_noise
            return
        self.execution_estimator.set_prior(execution_noise)
        self.execution_noise = self.execution_estimator.noise()

    def set_bounds(self, bounds: Tensor) -> None:
        """Change the search box from the next decision on (e.g. an operator narrows the area).

        The GP is rebuilt on all observations in the new box (hyperparameters are refitted at the next
        decision) and the remaining initial-design targets are redrawn in it. The change is journaled
        for the record; a resumed run uses the bounds it is constructed with.

        Raises:
            ValueError: not ``(2, d)`` with upper > lower, or a different dimension.
        """
        bounds = torch.as_tensor(bounds, dtype=DTYPE)
        if bounds.shape != self.bounds.shape or not (bounds[1] > bounds[0]).all():
            raise ValueError(f'bounds must be {tuple(self.bounds.shape)} with upper > lower, '
                             f'got {bounds.tolist()}')
        self.bounds = bounds
        if self._queue:
            log.info('search bounds changed: dropping %d queued targets of the current batch', len(self._queue))
        self._queue = []
        self.model = self._new_model()
        self.schedule.restart([(self._gp_input(t, loc), y, v) for t, loc, y, v in self.observations.rows], self.n)
        self._method = self._new_method()  # a survey re-plans in the new box
        self._design = self._initial_design()
        if self._journal is not None:
            self._journal.append({'type': 'bounds', 'bounds': bounds.tolist(), 'index': self.next_index,
                                  'wall_time': time.time()})

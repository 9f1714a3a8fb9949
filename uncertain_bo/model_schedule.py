"""When the shared GP takes new readings and refits its hyperparameters, and when it switches to the sparse posterior.

Observations reach the GP lazily: :meth:`ModelSchedule.add` queues them and :meth:`ModelSchedule.update` (called
before a decision, a recommendation or a prediction) moves the queue into the model, refits the hyperparameters
by marginal likelihood when the schedule says so and re-chooses the sparse posterior's inducing inputs. The
schedule: after every measurement while the initial design is under way (``n <= n_initial``: the fits are cheap
and the first decision must not rest on a fit to the first point alone), then every ``refit_every`` measurements
(en-route readings do not count); ``refit_every = 0`` never refits (fixed hyperparameters, rank-one updates).

Revised location distributions (:mod:`uncertain_bo.planner_revisions`) reach the GP the same lazy way:
:meth:`ModelSchedule.revise` replaces a queued reading's input, or notes the revised input of a reading the GP holds,
and :meth:`ModelSchedule.update` hands the GP every noted revision at once (:meth:`~uncertain_bo.models.
DistributionGP.revise`: one refactorisation of the posterior from the first revised row on, however many revisions
arrived since the last decision). A revision does not refit by itself: the next scheduled fit sees the revised inputs.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch

from .distributions import DTYPE, LocationDistributions, cat

if TYPE_CHECKING:
    from .planner import Planner

__all__ = ['ModelSchedule']


class ModelSchedule:
    """The refit schedule of one planner's GP.

    Args:
        planner: the planner whose model (``planner.model``), observations and settings (``n_initial``,
            ``refit_every``, ``seed``, ``fit_max_points``, ``sparse_above``, ``inducing_points``; read live, so
            run-time changes apply) it schedules.
    """

    def __init__(self, planner: 'Planner'):
        self.planner = planner
        self.pending: list[tuple[LocationDistributions, float, float]] = []  # observed, not yet in the GP
        self.pending_stops = 0
        self.since_fit = 0          # measurements since the last hyperparameter fit
        self.fitted = False
        self.fitted_on: int | None = None  # observations in the GP at its last hyperparameter fit
        self.revised: dict[int, LocationDistributions] = {}   # GP row -> its revised input, not yet in the GP

    def add(self, gp_input: LocationDistributions, y: float, variance: float, stop: bool) -> None:
        """Queue one observation for the GP (``stop``: a measurement, which the schedule counts)."""
        self.pending.append((gp_input, y, variance))
        self.pending_stops += int(stop)

    def revise(self, row: int, gp_input: LocationDistributions) -> None:
        """Row ``row`` (GP row order) has a revised input: replaced in the queue if the GP does not hold it yet,
        else noted for the next :meth:`update` (a later revision of the same row replaces an earlier one)."""
        held = self.planner.model.n
        if row >= held:
            _, y, variance = self.pending[row - held]
            self.pending[row - held] = (gp_input, y, variance)
        else:
            self.revised[row] = gp_input

    def restart(self, gp_inputs: list[tuple[LocationDistributions, float, float]], stops: int) -> None:
        """A new (empty) model: queue every observation again and refit at the next update."""
        self.pending, self.pending_stops = list(gp_inputs), stops
        self.revised = {}
        self.since_fit, self.fitted, self.fitted_on = 0, False, None

    def update(self, refit: bool = True) -> float:
        """Move queued observations into the GP; refit hyperparameters when due (always if never fitted, e.g.
        after resuming from a journal) unless ``refit`` is False. Returns the fit's wall time, s."""
        p = self.planner
        model = p.model
        if self.pending or self.revised:
            self.since_fit += self.pending_stops
            self.pending_stops = 0
            period = 1 if p.n <= p.n_initial else p.refit_every
            if refit and p.refit_every > 0 and self.since_fit >= period:
                model.clear_posterior()  # a fit follows: growing (or refactoring) the posterior first would be wasted
        if self.revised:
            rows = sorted(self.revised)
            model.revise(torch.tensor(rows), cat([self.revised[r] for r in rows]))
            self.revised = {}
        if self.pending:
            new_locs = cat([q[0] for q in self.pending])
            new_y = torch.tensor([q[1] for q in self.pending], dtype=DTYPE)
            new_noise = torch.tensor([q[2] for q in self.pending], dtype=DTYPE)
            self.pending = []
            if model.n == 0:
                model.set_data(new_locs, new_y, new_noise)
                self.since_fit = max(self.since_fit, 1)
            else:
                model.append(new_locs, new_y, new_noise)
        period = 1 if p.n <= p.n_initial else p.refit_every
        due = p.refit_every > 0 and ((refit and self.since_fit >= period) or not self.fitted)
        if due and model.n > 0:
            t0 = time.perf_counter()
            # the fit's retries draw from the global torch stream (BoTorch samples restarts from the priors):
            # seed it from the run's seed and n so equal runs fit equally, whatever ran before in the process
            cuda = p.bounds.is_cuda
            with torch.random.fork_rng(devices=[p.bounds.device] if cuda else []):
                seed = p.seed * 100_003 + model.n
                if cuda:
                    torch.manual_seed(seed)
                else:   # torch.manual_seed would also queue a CUDA seed with a formatted stack trace, every fit
                    torch.default_generator.manual_seed(seed)
                model.fit(subset=p.fit_subset())
            self.fitted = True
            self.fitted_on = model.n
            self.since_fit = 0
            self._choose_inducing(refitted=True)
            return time.perf_counter() - t0
        self._choose_inducing(refitted=False)
        return 0.0

    def _choose_inducing(self, refitted: bool) -> None:
        """Switch the GP to the sparse posterior beyond ``sparse_above`` readings (inducing inputs re-chosen at
        each fit, kept between fits), back to the exact one below it."""
        p = self.planner
        model = p.model
        sparse = 0 < p.sparse_above < model.n
        if not sparse:
            if model.inducing is not None:
                model.inducing = None
            return
        if refitted or model.inducing is None:
            chosen = p.fit_subset(p.inducing_points)
            model.inducing = torch.arange(model.n) if chosen is None else chosen

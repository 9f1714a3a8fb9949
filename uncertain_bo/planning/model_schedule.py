"""When the shared GP takes new readings and refits its hyperparameters, and when it switches to the sparse posterior.

The schedule owns the planner's GP (:attr:`ModelSchedule.model`) and reads the observation log it was given; its
settings come with each call (the planner's frozen :class:`~uncertain_bo.planning.settings.PlannerSettings`), it
holds no planner. :meth:`ModelSchedule.add` queues an observation; :meth:`ModelSchedule.current` moves the queue into
the model (rank-one updates, no fit: what :attr:`~uncertain_bo.planning.planner.Planner.model` shows, never lagging
``observe()``); :meth:`ModelSchedule.update` (the model a decision or a recommendation reads, on first use) also
refits the hyperparameters by marginal likelihood when the schedule says so and re-chooses the sparse posterior's
inducing inputs, and keeps the fit's wall time until :meth:`ModelSchedule.take_fit_seconds` bills it to a decision. The
schedule: after every measurement while the initial design is under way (``n <= n_initial``: the fits are cheap
and the first decision must not rest on a fit to the first point alone), then every ``refit_every`` measurements
(en-route readings do not count); ``refit_every = 0`` never refits (fixed hyperparameters, rank-one updates).

Revised location distributions (:mod:`uncertain_bo.planning.revisions`) reach the GP the same lazy way:
:meth:`ModelSchedule.revise` replaces a queued reading's input, or notes the revised input of a reading the GP holds,
and :meth:`ModelSchedule.update` hands the GP every noted revision at once (:meth:`~uncertain_bo.models.
DistributionGP.revise`: one refactorisation of the posterior from the first revised row on, however many revisions
arrived since the last decision). A revision does not refit by itself: the next scheduled fit sees the revised inputs.
"""
from __future__ import annotations

import time

import torch

from ..distributions import DTYPE, LocationDistributions, cat
from ..models import DistributionGP
from .observation_log import ObservationLog
from .settings import PlannerSettings
from ..seeds import decision_seed

__all__ = ['ModelSchedule']


class ModelSchedule:
    """The refit schedule of one planner's GP.

    Args:
        model: the (empty) GP it brings up to date.
        observations: the run's observation log (for the capped fit's subset and the sparse posterior's inducing
            inputs, :meth:`~uncertain_bo.planning.observation_log.ObservationLog.fit_subset`; its count of measurements
            decides the refit period).

    Example:
        Readings are queued and moved into the GP when it is read; with ``refit_every=0`` nothing is fitted:

        >>> import torch
        >>> from uncertain_bo.distributions import Dirac, GaussianExecutionNoise
        >>> from uncertain_bo.models import DistributionGP
        >>> from uncertain_bo.planning.observation_log import ObservationLog
        >>> from uncertain_bo.planning.settings import PlannerSettings
        >>> noise = GaussianExecutionNoise.isotropic(0.1, 2)
        >>> settings = PlannerSettings.of(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), noise, refit_every=0)
        >>> schedule = ModelSchedule(DistributionGP(settings.bounds), ObservationLog(2))
        >>> schedule.add(Dirac(torch.tensor([[0.2, 0.3]], dtype=torch.float64)), 1.5, 0.0, stop=True)
        >>> schedule.model.n, schedule.update(settings).n, schedule.fitted_on
        (0, 1, None)
    """

    def __init__(self, model: DistributionGP, observations: ObservationLog):
        self.model = model
        self.observations = observations
        self.pending: list[tuple[LocationDistributions, float, float]] = []  # observed, not yet in the GP
        self.since_fit = 0          # measurements since the last hyperparameter fit
        self.fitted = False
        self.fitted_on: int | None = None  # observations in the GP at its last hyperparameter fit
        self.revised: dict[int, LocationDistributions] = {}   # GP row -> its revised input, not yet in the GP
        self.fit_seconds = 0.0      # wall time of the fits not billed to a decision yet (take_fit_seconds)

    def add(self, gp_input: LocationDistributions, y: float, variance: float, stop: bool) -> None:
        """Queue one observation for the GP (``stop``: a measurement, which the schedule counts)."""
        self.pending.append((gp_input, y, variance))
        self.since_fit += int(stop)

    def revise(self, row: int, gp_input: LocationDistributions) -> None:
        """Row ``row`` (GP row order) has a revised input: replaced in the queue if the GP does not hold it yet,
        else noted for the next :meth:`current` (a later revision of the same row replaces an earlier one)."""
        held = self.model.n
        if row >= held:
            _, y, variance = self.pending[row - held]
            self.pending[row - held] = (gp_input, y, variance)
        else:
            self.revised[row] = gp_input

    def restart(self, model: DistributionGP, gp_inputs: list[tuple[LocationDistributions, float, float]],
                stops: int) -> None:
        """A new (empty) ``model``: queue every observation again and refit at the next update."""
        self.model = model
        self.pending = list(gp_inputs)
        self.revised = {}
        self.since_fit, self.fitted, self.fitted_on = stops, False, None

    def take_fit_seconds(self) -> float:
        """The wall time of the fits since the last call (s), to bill to a decision."""
        seconds, self.fit_seconds = self.fit_seconds, 0.0
        return seconds

    def current(self, fit_due: bool = False) -> DistributionGP:
        """The GP with every observation and revision (queued ones moved in: rank-one updates of its cached
        posterior, or, when ``fit_due``, none, since a fit rebuilds it); no hyperparameter fit."""
        model = self.model
        if fit_due and (self.pending or self.revised):
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
        return model

    def update(self, settings: PlannerSettings, refit: bool = True) -> DistributionGP:
        """:meth:`current`, then a hyperparameter fit when due under ``settings`` (after every measurement while
        ``n <= n_initial``, then every ``refit_every``; always if never fitted, e.g. after resuming from a journal)
        unless ``refit`` is False or ``refit_every`` is 0. Returns the model; the fit's wall time is kept
        (:meth:`take_fit_seconds`)."""
        every = settings.model.refit_every
        period = 1 if self.observations.n <= settings.n_initial else every
        model = self.current(fit_due=refit and every > 0 and self.since_fit >= period)
        due = every > 0 and ((refit and self.since_fit >= period) or not self.fitted)
        if due and model.n > 0:
            t0 = time.perf_counter()
            # the fit's retries draw from the global torch stream (BoTorch samples restarts from the priors):
            # seed it from the run's seed and n so equal runs fit equally, whatever ran before in the process
            cuda = model.bounds.is_cuda
            # (with autograd on: the first read of a snapshot's model may come inside a caller's torch.no_grad())
            with torch.random.fork_rng(devices=[model.bounds.device] if cuda else []), torch.enable_grad():
                seed = decision_seed(settings.seed, model.n)
                if cuda:
                    torch.manual_seed(seed)
                else:   # torch.manual_seed would also queue a CUDA seed with a formatted stack trace, every fit
                    torch.default_generator.manual_seed(seed)
                model.fit(subset=self.observations.fit_subset(settings.model.fit_max_points))
            self.fitted = True
            self.fitted_on = model.n
            self.since_fit = 0
            self._choose_inducing(settings, refitted=True)
            self.fit_seconds += time.perf_counter() - t0
            return model
        self._choose_inducing(settings, refitted=False)
        return model

    def _choose_inducing(self, settings: PlannerSettings, refitted: bool) -> None:
        """Switch the GP to the sparse posterior beyond ``sparse_above`` readings (inducing inputs re-chosen at
        each fit, kept between fits), back to the exact one below it."""
        model = self.model
        sparse = 0 < settings.model.sparse_above < model.n
        if not sparse:
            if model.inducing is not None:
                model.inducing = None
            return
        if refitted or model.inducing is None:
            chosen = self.observations.fit_subset(settings.model.inducing_points)
            model.inducing = torch.arange(model.n) if chosen is None else chosen

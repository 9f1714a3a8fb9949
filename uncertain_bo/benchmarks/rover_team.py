r"""``rover-team``: N simulated rovers exploring the ``rover`` field together (issue 23, phase 1), in-process.

Each run is one :class:`~uncertain_bo.team.mission.Team`: N copies of the ``rover`` problem's simulated rover
(diff-drive with slip, EKF, pure pursuit, the explorer's measurement cycle) on one simulated clock, with the field,
robust objective, regret oracle and planner settings of :mod:`~uncertain_bo.benchmarks.rover` (``--field``,
``--explorer-param``, ``--sim-param`` apply to every rover). ``--iterations`` is the **team's** measurement budget (30
by default, shared or split between the rovers).

Problem parameters (``--problem-param NAME=VALUE``):

- ``rovers`` (default 1): N;
- ``sharing`` (default true): one planner (one GP, one journal) for the team; each rover's next target is decided
  with the others' targets pending and the travel cost from its own position. ``false``: N independent explorers,
  each with its own planner, seed and share of the budget (no sharing: they may measure the same hill twice);
- ``spacing`` (default 10): distance between the rovers' starts along x (m);
- ``pending`` (default true): decide each target with the other rovers' targets pending; ``false`` is the ablation
  (shared model, no pending targets: rovers may be sent where another is already going);
- ``fail_at`` (default 0: none): the last rover stops reporting at this simulated time (s) and is dropped 30 s later
  (:meth:`~uncertain_bo.team.mission.Team.fail`); the others finish the team's budget.

The survey baselines never share: ``lawnmower`` (and ``lawnmower_fixed``) run N lawnmowers, rover ``i`` on the
``i``-th of N strips along x of the search area with its share of the budget; ``random`` runs N random tours over the
whole area. Without sharing the team's recommendation is the rovers' recommendation with the highest predicted robust
value (:meth:`~uncertain_bo.team.mission.Team.recommend`).

Records: one per stored measurement in the order the team stored them, with ``sim_time`` the team's mission time at
that reading (simulated s since the start: the wall-clock of the slowest rover) and ``distance_driven`` the total
true distance of the whole team (m); the run's extras add ``rover`` (who measured), ``pending`` (targets of other
rovers pending when its target was decided), ``measurements_at_decision`` (measurements the planner held then) and
``rover_distance`` (that rover's own distance, m).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from ..acquisition import Method
from ..distributions import DTYPE, Gaussian
from ..planning.planner import Planner
from .base import BenchSettings, Measurement
from .problem_registry import register_problem
from .rover import Rover, RoverInstance

__all__ = ['RoverTeam', 'RoverTeamInstance', 'PARTITIONED_METHODS']

#: methods whose rovers each survey their own strip of the area
PARTITIONED_METHODS = ('lawnmower', 'lawnmower_fixed')


class RoverTeamInstance(RoverInstance):
    """The ``rover`` field and simulated rovers for one seed, explored by a team.

    Args:
        seed: the run's seed (rover 0's simulation and the planner's, as in ``rover``).
        rovers: N >= 1.
        sharing: one shared planner (True) or N independent ones.
        spacing: distance between the starts (m).
        fail_at: simulated time (s) at which the last rover stops reporting; 0 = never.
        pending: decide with the other rovers' targets pending (False: the ablation).
        overrides, files: as :class:`~uncertain_bo.benchmarks.rover.RoverInstance`.

    Example:
        Three independent rovers (``--problem-param rovers=3 sharing=false``) on the ``rover`` field:

        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> team = get_problem('rover-team').instance_for(0, BenchSettings(problem=(('rovers', 3), ('sharing', False))))
        >>> team.rovers, team.sharing, team.spacing, round(team.optimum[1], 1)
        (3, False, 10.0, 978.8)
    """

    def __init__(self, seed: int, rovers: int = 1, sharing: bool = True, spacing: float = 10.0,
                 overrides: dict[str, dict[str, Any]] | None = None, files: list | None = None, fail_at: float = 0.0,
                 pending: bool = True):
        super().__init__(seed, overrides, files)
        self.rovers, self.sharing, self.spacing, self.fail_at = int(rovers), bool(sharing), float(spacing), fail_at
        self.pending = bool(pending)

    def drive(self, method: Method, settings: BenchSettings, seed: int, iterations: int,
              record: Callable[..., None]) -> Planner:
        from ..team.mission import Team

        cfg = self.planner_settings(method, settings, None)    # the mission's budget: max_measurements
        noise = cfg.pop('execution_noise')
        params = {node: dict(v) for node, v in self.params.items()}
        params['explorer']['max_measurements'] = iterations
        survey = getattr(method, 'baseline', False)
        team = Team(params, rovers=self.rovers, sharing=self.sharing and not survey,
                    partition=method.name in PARTITIONED_METHODS, spacing=self.spacing, field=self.field,
                    method=method.name, execution_noise=noise, planner_kwargs=cfg, pending_targets=self.pending)
        if self.fail_at > 0:
            team.fail(list(team.members)[-1], self.fail_at)

        def on_measurement(rover: str, meas, rec) -> None:
            member = team.members[rover]
            view = member.view
            executed = torch.as_tensor(member.host.truth, dtype=DTYPE)
            xy, cov = meas.place                        # where the reading was taken (the sensor)
            location = Gaussian(torch.as_tensor(xy, dtype=DTYPE).reshape(1, 2),
                                torch.as_tensor(cov, dtype=DTYPE).reshape(1, 2, 2))
            m = Measurement(executed, location, float(meas.reading.value),
                            extra={'timed_out': bool(meas.timed_out), 'sim_time': float(meas.reading.stamp),
                                   'distance_driven': team.distance(), 'rover': rover,
                                   'pending': view.pending_at_decision,
                                   'measurements_at_decision': view.measurements_at_decision,
                                   'rover_distance': float(member.world.distance_travelled),
                                   'rovers_dropped': len(team.dropped)})
            record(view.planner, torch.as_tensor(meas.target, dtype=DTYPE), m, view.decision, rec)

        result = team.run(on_measurement=on_measurement)
        if not result.completed or len(result.measurements) < iterations:
            raise RuntimeError(f'rover team (seed {seed}, {self.rovers} rovers) did not complete {iterations} '
                               f'measurements: {len(result.measurements)} taken')
        return team.recommending_planner()

    def info(self) -> dict[str, Any]:
        return {**super().info(), 'rovers': self.rovers, 'sharing': self.sharing, 'spacing': self.spacing,
                'fail_at': self.fail_at, 'pending': self.pending}


class RoverTeam(Rover):
    """N rovers on the ``rover`` field: 30 measurements for the team, β = 3.

    Example:
        >>> from uncertain_bo.benchmarks import BenchSettings, get_problem
        >>> get_problem('rover-team').param_values(BenchSettings(problem=(('rovers', 0),)))
        Traceback (most recent call last):
        ...
        ValueError: problem 'rover-team': rovers must be an integer >= 1, got 0
    """

    name = 'rover-team'
    description = ('N simulated rovers (EKF + pure pursuit each) on the demo field, one shared planner or N '
                   'independent ones (issue 23); --problem-param rovers=N, sharing=true|false')
    default_seeds = 4
    default_methods = 'ugp_ucb,lawnmower,random'
    params = {'rovers': 1, 'sharing': True, 'spacing': 10.0, 'fail_at': 0.0, 'pending': True}

    def param_values(self, settings: BenchSettings) -> dict[str, Any]:
        """The team's parameters with ``settings.problem`` applied, checked (``bench`` checks them before it runs
        anything).

        Raises:
            ValueError: an unknown parameter, ``rovers`` not an integer >= 1, ``sharing`` or ``pending`` not a
                boolean, a negative ``spacing`` or ``fail_at``.
        """
        values = super().param_values(settings)
        rovers, sharing, spacing = values['rovers'], values['sharing'], values['spacing']
        if isinstance(rovers, bool) or not isinstance(rovers, int) or rovers < 1:
            raise ValueError(f'problem {self.name!r}: rovers must be an integer >= 1, got {rovers!r}')
        if not isinstance(sharing, bool):
            raise ValueError(f'problem {self.name!r}: sharing must be true or false, got {sharing!r}')
        if isinstance(spacing, bool) or not isinstance(spacing, (int, float)) or not spacing >= 0:
            raise ValueError(f'problem {self.name!r}: spacing must be a number >= 0 (m), got {spacing!r}')
        fail_at = values['fail_at']
        if isinstance(fail_at, bool) or not isinstance(fail_at, (int, float)) or not fail_at >= 0:
            raise ValueError(f'problem {self.name!r}: fail_at must be a simulated time >= 0 (s), got {fail_at!r}')
        if not isinstance(values['pending'], bool):
            raise ValueError(f'problem {self.name!r}: pending must be true or false, got {values["pending"]!r}')
        return {'rovers': rovers, 'sharing': sharing, 'spacing': float(spacing), 'fail_at': float(fail_at),
                'pending': values['pending']}

    def instance_for(self, seed: int, settings: BenchSettings) -> RoverTeamInstance:
        from ..parameters.specs import config_path

        team = self.param_values(settings)
        over = self.overrides_for(seed, settings.field, settings.explorer, settings.sim)
        return RoverTeamInstance(seed, team['rovers'], team['sharing'], team['spacing'], over or None,
                                 [config_path(f) for f in self.param_files], team['fail_at'], team['pending'])


register_problem('rover-team', RoverTeam)

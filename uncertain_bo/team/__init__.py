"""Several rovers, one map: the in-process team (:mod:`~uncertain_bo.team.mission`), the planner's side of a team
(:mod:`~uncertain_bo.team.planner`) and a team's resume from its journal (:mod:`~uncertain_bo.team.journal`)."""

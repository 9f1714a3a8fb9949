"""The planner (:class:`~uncertain_bo.planning.planner.Planner`, the ask/tell loop) and the components it composes:
its settings, the GP's schedule, where readings are kept, the journal writer, revisions, keep-out zones, the initial
design and routes. Import from the module that defines a name (``uncertain_bo.planning.planner`` and so on)."""

"""A run's journal: the durable JSON-lines store (:mod:`~uncertain_bo.journal.journal`), its schema
(:mod:`~uncertain_bo.journal.schema`), storage faults (:mod:`~uncertain_bo.journal.storage_faults`) and
``uncertain-bo export`` (:mod:`~uncertain_bo.journal.export_cli`)."""

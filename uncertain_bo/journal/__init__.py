"""A run's journal: the durable JSON-lines store (:mod:`~uncertain_bo.journal.journal`), its schema
(:mod:`~uncertain_bo.journal.schema`, the values of its fields :mod:`~uncertain_bo.journal.values`), the check of a
whole journal (:mod:`~uncertain_bo.journal.check`), storage faults (:mod:`~uncertain_bo.journal.storage_faults`) and
``uncertain-bo export`` (:mod:`~uncertain_bo.journal.export_cli`)."""

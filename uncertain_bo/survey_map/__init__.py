"""``uncertain-bo map``: the posterior map of any survey (a CSV of points or a run's journal) as a GeoTIFF, a PNG and
``peak.json``, fitted on the project's shared GP with each reading's location uncertainty.

One module per concept: :mod:`~.georeference` (the projected or engineering CRS), :mod:`~.sources` (reading a CSV or a
journal into a :class:`~.sources.Survey`), :mod:`~.posterior` (the planner's model fitted to the readings, on a grid),
:mod:`~.peak` (the robust peak, its credible interval and region), :mod:`~.files` (the files written) and
:mod:`~.cli` (the subcommand).
"""

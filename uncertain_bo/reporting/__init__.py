"""What a run shows and writes: the operator's view (:mod:`~uncertain_bo.reporting.operator_view`), the report of a
field run (:mod:`~uncertain_bo.reporting.run_report`), output files written whole (:mod:`~uncertain_bo.reporting.
output_files`), units and number precision (:mod:`~uncertain_bo.reporting.units`) and the plots' style
(:mod:`~uncertain_bo.reporting.plot_style`)."""

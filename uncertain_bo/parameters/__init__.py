"""Parameters of the nodes and the runners: specs and validation (:mod:`~uncertain_bo.parameters.specs`), ROS 2
parameter files read and written as rcl reads them (:mod:`~uncertain_bo.parameters.rcl_yaml`), what each node gets
from them (:mod:`~uncertain_bo.parameters.files`), the explorer's cross-checks
(:mod:`~uncertain_bo.parameters.explorer_checks`), the generated config/explorer.yaml
(:mod:`~uncertain_bo.parameters.yaml_source`), command-line flags (:mod:`~uncertain_bo.parameters.flags`) and the
search area shared with the journal (:mod:`~uncertain_bo.parameters.run_area`)."""

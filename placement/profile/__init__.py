"""Job profiles: the format the planner reads (:mod:`placement.profile.format`) and the pipeline that makes them."""

"""``placement watch``: a closed loop over the existing stages (collect -> profile -> plan -> apply).

Pure parts, tested on recorded and constructed windows without a cluster:

* :mod:`~placement.watch.signals` — what one window showed (:class:`Window`, built from the window's profile priced
  under the placement that ran) and drift detection against the plan in effect;
* :mod:`~placement.watch.policy` — when a re-plan is acted on: predicted gain, cooldown, stabilization, blockers;
* :mod:`~placement.watch.record` — the JSON-lines decision log.

World-touching, composing the stages and owning none: :mod:`~placement.watch.loop` (a rolling collector in a
thread per job, window snapshots, one Spark session for every profile, the planner and ``placement apply``'s runner —
for several jobs, the joint planner and the fleet's apply).
"""

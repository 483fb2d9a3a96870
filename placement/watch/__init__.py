"""``placement watch``: a closed loop over the existing stages (collect -> profile -> plan -> apply).

Pure parts, tested on recorded and constructed windows without a cluster:

* :mod:`~placement.watch.signals` — what one window showed (:class:`Window`, built from the window's profile priced
  under the placement that ran) and drift detection against the plan in effect;
* :mod:`~placement.watch.policy` — when a re-plan is acted on: predicted gain, cooldown, stabilization, blockers;
* :mod:`~placement.watch.record` — the JSON-lines decision log.

:mod:`~placement.watch.loop`'s :class:`Watch` composes the rest and owns none of it: the observer
(:mod:`~placement.watch.observing`: each job's blockers and profiled window, over Flink's REST port), the assessment
(:mod:`~placement.watch.assessing`: pricing, drifts, contingencies), the re-planner (:mod:`~placement.watch.replanning`:
the planner callable the CLI gives) and the actor (:mod:`~placement.watch.acting`: ``placement apply``'s runner — for
several jobs, the fleet's apply). Its decisions are tested on ``tests/support``'s fakes in simulated time.
"""

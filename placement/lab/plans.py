"""A plan directory written for the lab's benchmarks and scenarios as ``placement plan`` writes one: plan.json with
the inventory's and profile's references (path and digest, so ``placement apply`` checks them), the schedulercfg and
the rest of the bundle. The callers choose the placement (the ILP, a baseline such as all-on-server, a rescale);
this only writes it, with planning's own writer (:func:`placement.planning.write.write_plan`)."""

from __future__ import annotations

from placement.planning.write import write_plan as write_lab_plan

__all__ = ["write_lab_plan"]

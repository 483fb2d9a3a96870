"""Relieve what an infeasible plan says is short, as a user would in the inventory (issue #49).

Each row of the "What is short" table is relieved by its own "short by" figure, through the inventory field that
holds it: a thread that cannot keep up by a faster host (``speed``: the thread needs ``c(s)/σ_h``, so ``σ_h`` grows
by ``needed/usable``), a host's CPU by more ``cores`` (``short by / ρ``: the usable cores are ``ρ·cores`` less the
TaskManager's own), memory by more ``memory`` (``/ μ``), task slots by more ``task_slots``, a link by more
``bandwidth`` (``/ η``). Nothing else changes, so a sufficient table gives a plan once relieved.
"""

from __future__ import annotations

import math

from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory

MARGIN = 1e-6  # relative: the re-solve's slack meets its row to the solver's feasibility tolerance


def relieve(inv: Inventory, problem: PlacementProblem, shortages) -> Inventory:
    """``inv`` with every shortage of ``shortages`` (:class:`placement.solver.result.Shortage` rows) relieved by its
    short-by figure (plus :data:`MARGIN`). Raises on a kind the inventory cannot relieve here (latency, budget)."""
    doc = inv.model_dump(mode="json", by_alias=True, exclude_none=True)
    hosts = {h["name"]: h for h in doc["hosts"]}
    links = {link["from"]: link for link in doc["links"]}
    policy = problem.policy
    speed_factor: dict[str, float] = {}
    for s in shortages:
        over = (s.needed - s.usable) * (1 + MARGIN) + 1e-9
        if s.kind == "thread":
            speed_factor[s.resource] = max(speed_factor.get(s.resource, 1.0), s.needed / s.usable * (1 + MARGIN))
        elif s.kind == "cpu":
            h = hosts[s.resource]
            h["cores"] = problem.host_by_name[s.resource].cores + over / policy.cpu_utilisation_target
        elif s.kind == "memory":
            h = hosts[s.resource]
            h["memory"] = problem.host_by_name[s.resource].memory_mib + over / policy.memory_utilisation_target
        elif s.kind == "slots":
            h = hosts[s.resource]
            h["task_slots"] = max(problem.host_by_name[s.resource].slots, math.ceil(s.needed - 1e-6))
        elif s.kind == "link":
            edge = s.resource.split("→")[0]
            links[edge]["bandwidth"] = (problem.host_by_name[edge].uplink_mbit or 0.0) + over / policy.wan_headroom
        else:
            raise ValueError(f"no inventory relief for a {s.kind} shortage here: {s.message}")
    for name, factor in speed_factor.items():
        hosts[name]["speed"] = problem.host_by_name[name].speed * factor
    return type(inv).model_validate(doc)

"""A plan directory written for the lab's benchmarks and scenarios as ``placement plan`` writes one: plan.json with
the inventory's and profile's references (path and digest, so ``placement apply`` checks them), the schedulercfg and
the rest of the bundle. The callers choose the placement (the ILP, a baseline such as all-on-server, a rescale);
this only writes it, with planning's own writer (:func:`placement.planning.write.write_plan`)."""

from __future__ import annotations

from pathlib import Path

from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory
from placement.planning.write import write_plan
from placement.profile.format import JobProfile
from placement.solver.result import PlanResult


def write_lab_plan(
    out: Path,
    problem: PlacementProblem,
    result: PlanResult,
    *,
    job: str,
    inventory: Inventory,
    inventory_path: str | Path,
    profile: JobProfile,
    profile_path: str | Path,
    placement_mode: str = "custom",
    **document,
) -> Path:
    """``result`` on ``problem`` written to ``out`` (``document``: more of the plan document's fields, e.g.
    ``warnings`` or ``rescale``)."""
    return write_plan(
        out,
        problem,
        result,
        job=job,
        inventory=inventory,
        inventory_path=inventory_path,
        profile=profile,
        profile_path=profile_path,
        placement_mode=placement_mode,
        **document,
    )

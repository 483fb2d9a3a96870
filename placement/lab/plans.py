"""A plan directory written for the lab's benchmarks and scenarios as ``placement plan`` writes one: plan.json with
the inventory's and profile's references (path and digest, so ``placement apply`` checks them), the schedulercfg and
the rest of the bundle. The callers choose the placement (the ILP, a baseline such as all-on-server, a rescale);
this only writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory
from placement.profile.format import JobProfile
from placement.solver.result import PlanResult
from placement.writers.bundle import render_artifacts, write_plan_dir
from placement.writers.planjson import SourceRef, build_plan_document


def write_lab_plan(out: Path, problem: PlacementProblem, result: PlanResult, *, job: str,
                   inventory: Inventory, inventory_path: str | Path, profile: JobProfile, profile_path: str | Path,
                   placement_mode: Literal["custom", "vanilla"] = "custom", **document) -> Path:
    """``result`` on ``problem`` written to ``out`` (``document``: more of :func:`build_plan_document`'s fields,
    e.g. ``warnings`` or ``rescale``)."""
    doc = build_plan_document(problem, result, job=job, placement_mode=placement_mode,
                              inventory=SourceRef(path=str(inventory_path), digest=inventory.digest(), name=inventory.name),
                              profile=SourceRef(path=str(profile_path), digest=profile.digest(), name=profile.job.name),
                              **document)
    write_plan_dir(out, render_artifacts(problem, doc, inventory))
    return out

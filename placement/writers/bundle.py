"""The plan directory: every artifact of one plan, rendered purely and then written in one place.

``plan.json``, ``schedulercfg``, ``redeploy.sh`` (executable), ``placement.json`` (the vanilla-mode mapping),
``vanilla/<host>.yaml`` (TaskManager keys for vanilla placement), ``plan.dot``/``plan.svg``/``plan.png``. The
directory is written whole or not at all (:mod:`placement.writers.plandir`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory
from placement.writers.picture import plan_graph, render_images
from placement.writers.planjson import PlanDocument, render_plan_json
from placement.writers.plandir import write_whole
from placement.writers.redeploy import render_redeploy
from placement.writers.schedulercfg import label_collisions, render_schedulercfg
from placement.writers.vanilla import render_taskmanager_configs


@dataclass(frozen=True)
class Artifacts:
    files: dict[str, bytes]  # file name -> content
    executable: frozenset[str]
    warnings: tuple[str, ...]


def render_artifacts(problem: PlacementProblem, plan: PlanDocument, inv: Inventory) -> Artifacts:
    """Every file of the plan directory, in memory (pure apart from Graphviz's renderer)."""
    warnings: list[str] = []
    clashes = label_collisions(plan.assignment)
    if clashes:
        label, other = clashes[0]
        warnings.append(f"schedulercfg: label {label!r} is part of task name {other!r}: the placement scheduler "
                        "extension matches exactly and places both right; the seed projects' patched Flink (contains()) "
                        "would not")
    files = {
        "schedulercfg": render_schedulercfg(plan.assignment, problem.vertex_order).encode(),
        "redeploy.sh": render_redeploy(plan, inv).encode(),
        "placement.json": (json.dumps(plan.mapping(), indent=2, ensure_ascii=False) + "\n").encode(),
        **{name: text.encode() for name, text in render_taskmanager_configs(plan, inv).items()},
    }
    title = f"{plan.job}: {plan.objective.wan_mbit:.2f} Mbit/s over the WAN ({plan.solver.status})"
    assignment = {(a.vertex_id, a.subtask): a.host for a in plan.assignment}
    images, warning = render_images(plan_graph(problem, assignment, title))
    if warning:
        warnings.append(warning)
    files.update({f"plan.{fmt}": data for fmt, data in images.items()})
    plan = plan.model_copy(update={"warnings": plan.warnings + warnings})
    files["plan.json"] = render_plan_json(plan).encode()
    return Artifacts(files=files, executable=frozenset({"redeploy.sh"}), warnings=tuple(warnings))


def write_plan_dir(out_dir: Path, artifacts: Artifacts) -> list[Path]:
    """Write the plan directory whole, replacing a previous plan there (:mod:`placement.writers.plandir`)."""
    return write_whole(out_dir, artifacts.files, artifacts.executable)

"""The plan directory: every artifact of one plan, rendered purely and then written in one place.

``plan.json``, ``schedulercfg``, ``redeploy.sh`` (executable), ``placement.json`` (the vanilla-mode mapping),
``vanilla/<host>.yaml`` (TaskManager keys for vanilla placement), ``plan.dot``/``plan.svg``/``plan.png``. The
directory is written whole or not at all (:mod:`placement.writers.plandir`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from placement.costmodel.model import Assignment, PlacementProblem
from placement.inventory import Inventory
from placement.writers.picture import contingency_lines, plan_graph, render_images
from placement.writers.plandir import PLAN_ARTIFACTS, write_whole
from placement.writers.planjson import PlanDocument, render_plan_json
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
        warnings.append(
            f"schedulercfg: label {label!r} is part of task name {other!r}: the placement scheduler "
            "extension matches exactly and places both right; the seed projects' patched Flink (contains()) "
            "would not"
        )
    files = {
        "schedulercfg": render_schedulercfg(plan.assignment, problem.vertex_order, plan.contingencies or ()).encode(),
        "redeploy.sh": render_redeploy(plan, inv.for_job(plan.job)).encode(),
        "placement.json": (json.dumps(plan.mapping(), indent=2, ensure_ascii=False) + "\n").encode(),
        **{name: text.encode() for name, text in render_taskmanager_configs(plan, inv).items()},
    }
    title = f"{plan.job}: {plan.objective.wan_mbit:.2f} Mbit/s over the WAN ({plan.solver.status})"
    assignment = {(a.vertex_id, a.subtask): a.host for a in plan.assignment}
    images, warning = render_images(plan_graph(problem, assignment, title, contingency_lines(plan.contingencies or ())))
    if warning:
        warnings.append(warning)
    files.update({f"plan.{fmt}": data for fmt, data in images.items()})
    plan = plan.model_copy(update={"warnings": plan.warnings + warnings})
    files["plan.json"] = render_plan_json(plan).encode()
    return Artifacts(files=files, executable=frozenset({"redeploy.sh"}), warnings=tuple(warnings))


def write_plan_dir(out_dir: Path, artifacts: Artifacts) -> list[Path]:
    """Write the plan directory whole, replacing a previous plan there (:mod:`placement.writers.plandir`)."""
    return write_whole(out_dir, artifacts.files, artifacts.executable)


FLEET_ARTIFACTS = frozenset({"fleet.json", "fleet.dot", "fleet.svg", "fleet.png"})


def render_fleet_artifacts(
    jobs: dict[str, Artifacts],
    fleet_json: str,
    picture_problem: PlacementProblem,
    assignment: Assignment,
    title: str,
    contingencies: Sequence[str] = (),
) -> Artifacts:
    """Several jobs planned together: each job's plan directory as :func:`render_artifacts` makes it, under its
    directory name (``jobs``: directory -> artifacts), ``fleet.json``, and one picture with every job."""
    files: dict[str, bytes] = {}
    executable: set[str] = set()
    warnings: list[str] = []
    for directory, art in jobs.items():
        files.update({f"{directory}/{name}": data for name, data in art.files.items()})
        executable.update(f"{directory}/{name}" for name in art.executable)
        warnings.extend(w for w in art.warnings if w not in warnings)
    images, warning = render_images(plan_graph(picture_problem, assignment, title, contingencies))
    if warning and warning not in warnings:
        warnings.append(warning)
    files.update({f"fleet.{fmt}": data for fmt, data in images.items()})
    files["fleet.json"] = fleet_json.encode()
    return Artifacts(files=files, executable=frozenset(executable), warnings=tuple(warnings))


def write_fleet_dir(out_dir: Path, artifacts: Artifacts) -> list[Path]:
    """Write the fleet's directory whole (every job's plan directory and the fleet files, or nothing); a job's
    ``apply-audit.jsonl`` and other files that are no plan artifact are kept."""
    return write_whole(out_dir, artifacts.files, artifacts.executable, PLAN_ARTIFACTS | FLEET_ARTIFACTS)

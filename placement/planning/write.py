"""Writing a plan's directory, the step after planning: one job's ``OUT/plan.json`` and its bundle, or several jobs'
``OUT/<job>/`` (each the bundle planning it alone would write for its part), ``OUT/fleet.json`` and one picture of
them all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory
from placement.planning import contingency
from placement.planning.outcome import PlanOutcome
from placement.planning.summary import RECORDED_LATENCY_TERM, compare_json
from placement.profile.format import JobProfile
from placement.solver.result import PlanResult
from placement.writers.bundle import (
    Artifacts,
    render_artifacts,
    render_fleet_artifacts,
    write_fleet_dir,
    write_plan_dir,
)
from placement.writers.picture import contingency_lines
from placement.writers.planjson import SourceRef, build_plan_document


@dataclass(frozen=True)
class Written:
    paths: list[Path]
    warnings: list[str] = field(default_factory=list)  # what rendering one job's bundle had to say (a picture left out)


def write_outcome(outcome: PlanOutcome, out_dir: str | Path) -> Written:
    """``outcome``'s plan directory, replaced whole (other files in it are kept); only a plan that places every
    subtask can be written."""
    assert outcome.result.assignment is not None, "nothing fits: there is no plan to write"
    if outcome.several:
        return Written(_write_fleet(outcome, Path(out_dir)))
    artifacts = _job_artifacts(outcome)
    return Written(write_plan_dir(Path(out_dir), artifacts), list(artifacts.warnings))


def write_plan(
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
    """One job's plan directory of any placement of ``problem`` (the lab's baselines, a rescale's), as ``placement
    plan`` writes one; ``document``: more of :func:`build_plan_document`'s fields (``warnings``, ``rescale``)."""
    write_plan_dir(
        out,
        _artifacts(
            problem,
            result,
            job=job,
            inventory=inventory,
            inventory_path=inventory_path,
            profile=profile,
            profile_path=profile_path,
            placement_mode=placement_mode,
            **document,
        ),
    )
    return out


def _artifacts(
    problem: PlacementProblem,
    result: PlanResult,
    *,
    job: str,
    inventory: Inventory,
    inventory_path: str | Path,
    profile: JobProfile,
    profile_path: str | Path,
    placement_mode: str,
    **document,
) -> Artifacts:
    doc = build_plan_document(
        problem,
        result,
        job=job,
        placement_mode=placement_mode,  # type: ignore[arg-type]
        inventory=_inventory_ref(inventory, inventory_path),
        profile=SourceRef(path=str(profile_path), digest=profile.digest(), name=profile.job.name),
        **document,
    )
    return render_artifacts(problem, doc, inventory)


def _inventory_ref(inventory: Inventory, path: str | Path) -> SourceRef:
    return SourceRef(path=str(path), digest=inventory.digest(), name=inventory.name)


def _job_artifacts(outcome: PlanOutcome) -> Artifacts:
    problem, result, rescaled = outcome.problem, outcome.result, outcome.rescaled
    return _artifacts(
        problem,
        result,
        job=outcome.profiles[0].job.name,
        inventory=outcome.inventory,
        inventory_path=outcome.request.inventory,
        profile=outcome.profiles[0],
        profile_path=outcome.request.profiles[0],
        placement_mode=outcome.placement_mode,
        warnings=outcome.plan_notes,
        rescale=rescaled.info() if rescaled else None,
        contingencies=contingency.records(
            problem,
            result.assignment,  # type: ignore[arg-type]
            outcome.contingencies,
        ),
    )


def _write_fleet(outcome: PlanOutcome, out: Path) -> list[Path]:
    from placement.writers.fleetjson import RunningJob, build_fleet_document, render_fleet_json  # several jobs only

    joint, result, parts, notes = outcome.joint, outcome.result, outcome.parts, outcome.plan_notes
    inventory = _inventory_ref(outcome.inventory, outcome.request.inventory)
    refs = {
        job.name: SourceRef(path=path, digest=p.digest(), name=p.job.name)
        for job, path, p in zip(joint.jobs, outcome.request.profiles, outcome.profiles)
    }
    artifacts = {}
    for job, p in zip(joint.jobs, outcome.profiles):
        mine = [n[len(job.name) + 2 :] for n in notes if n.startswith(f"{job.name}: ")]  # its own notes, as alone
        together = (
            f"planned together with {', '.join(j.name for j in joint.jobs if j is not job)} (../fleet.json): "
            "the solver's stages and gap are the joint model's, the objective, links and hosts this job's"
        )
        mine.append(together)
        # job: the profile's name, what apply matches the running job by (not the name made unique for the fleet)
        doc = build_plan_document(
            job.problem,
            parts[job.name],
            job=p.job.name,
            placement_mode=outcome.placement_mode,  # type: ignore[arg-type]
            inventory=inventory,
            profile=refs[job.name],
            budget=outcome.budgets[job.name],
            contingencies=contingency.job_records(
                job.problem,
                parts[job.name].assignment,  # type: ignore[arg-type]
                outcome.contingencies,
                joint.split,
                job.name,
            ),
            warnings=mine + [n for n in notes if not _of_a_job(n, joint.jobs)],
        )
        artifacts[outcome.dirs[job.name]] = render_artifacts(job.problem, doc, outcome.inventory)
    fleet = build_fleet_document(
        joint,
        result,
        {name: p.cost for name, p in parts.items() if p.cost is not None},
        dirs=outcome.dirs,
        inventory=inventory,
        profiles=refs,
        running=[RunningJob(job=j, plan=p) for j, p in outcome.running.jobs],
        warnings=notes,
        compare=compare_json(outcome.one_by_one, RECORDED_LATENCY_TERM) if outcome.one_by_one else None,
        budgets=outcome.budgets,
    )
    assert result.cost is not None and result.assignment is not None
    title = f"{', '.join(j.name for j in joint.jobs)}: {result.cost.wan_mbit:.2f} Mbit/s over the WAN ({result.status})"
    lines = contingency_lines(contingency.records(joint.problem, result.assignment, outcome.contingencies) or ())
    bundle = render_fleet_artifacts(artifacts, render_fleet_json(fleet), joint.problem, result.assignment, title, lines)
    return write_fleet_dir(out, bundle)


def _of_a_job(note: str, jobs: Sequence) -> bool:
    return any(note.startswith(f"{j.name}: ") for j in jobs)

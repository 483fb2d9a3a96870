"""``placement plan`` with several ``--profile``: the jobs placed together on one fleet (issue 24).

Each job's problem is built as for one job, the problems are combined into one (:mod:`placement.costmodel.jobs`) and
solved by the planner ``--method`` picks; the joint assignment is split back, and each job gets the plan directory
planning it alone would write for its part (``OUT/<job>/``, what ``apply`` of that job reads), beside ``fleet.json``
and one picture with every job (``fleet.svg``). ``--running`` plans are fixed load for all of them; ``--compare`` sets
the joint plan beside planning the jobs one by one.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from placement.cli import capacity_plan, contingency_plan, jobs_tables, plan_tables
from placement.cli.fit import print_table
from placement.cli.plan_notes import input_warnings, report_warnings
from placement.cli.running_cluster import ClusterRead, running_load
from placement.cli.running_plans import RunningPlans, running_json
from placement.costmodel.evaluate import PlanCost
from placement.costmodel.jobs import (
    JointProblem,
    build_joint,
    check_rate_scale,
    dir_names,
    job_costs,
    job_policies,
    unique_names,
)
from placement.costmodel.model import JobPolicy
from placement.costmodel.running import with_running
from placement.errors import BadInput, Infeasible
from placement.inventory import Inventory, load_inventory
from placement.inventory.whatif import apply_whatif, parse_add_host, parse_link
from placement.profile.format import JobProfile, load_profile
from placement.solver import PlanResult, SolverOptions
from placement.solver.methods import solve_with
from placement.solver.one_by_one import OneByOne, all_jobs_on_server, each_alone, in_sequence
from placement.writers.bundle import render_artifacts, render_fleet_artifacts, write_fleet_dir
from placement.writers.fleetjson import RunningJob, build_fleet_document, render_fleet_json
from placement.writers.picture import contingency_lines
from placement.writers.planjson import JobBudgetRecord, SourceRef, budget_record, build_plan_document
from placement.writers.plandir import check_writable


def _whatif(inv: Inventory, profiles: list[JobProfile], add_host: tuple[str, ...],
            link: tuple[str, ...]) -> tuple[Inventory, list[str]]:
    """:func:`capacity_plan.whatif` over every job's sources."""
    sources = {key: v.parallelism for p in profiles for v in p.sources() for key in (v.name, v.id)}
    return apply_whatif(inv, [parse_add_host(t) for t in add_host], [parse_link(t) for t in link], sources)


def _joint_builder(inv: Inventory, profiles: list[JobProfile], names: list[str], running: RunningPlans, *,
                   placement_mode: str, inventory_source: str, policies: dict[str, JobPolicy],
                   job_scales: dict[str, float]):
    """The joint problem at a fleet rate scale (:func:`build_joint`: each job at that scale, or its own
    ``--rate-scale JOB=X``, or its ``min_rate_scale`` when higher — what ``--max-rate`` searches over; a plain plan
    below a minimum is refused before), every job around the running ones."""
    named = list(zip(names, profiles))

    def build(scale: float) -> JointProblem:
        return build_joint(inv, named, scale, placement_mode=placement_mode, inventory_source=inventory_source,
                           policies=policies, known=running.vertices, adjust=lambda p: with_running(p, running.uses),
                           job_scales=job_scales)
    return build


def _check_job_scales(job_scales: dict[str, float], names: list[str]) -> None:
    """``--rate-scale JOB=X`` names a job planned here (by its name in the fleet: a second copy is ``job-2``)."""
    for job in job_scales:
        if job not in names:
            raise BadInput(f"{job}={job_scales[job]:g}: no job {job!r} is planned here (the jobs: {', '.join(names)})",
                           field="--rate-scale")


def _held_at_minimum(joint: JointProblem) -> list[str]:
    """The jobs planned above the fleet's rate scale, held at their ``budget.min_rate_scale`` (``--max-rate``)."""
    fleet = joint.problem.rate_scale
    return [f"job {job.name} is held at its budget.min_rate_scale {job.problem.rate_scale:g} (the fleet's scale is "
            f"{fleet:.4g})" for job in joint.jobs if job.problem.rate_scale > fleet]


def _check_options(rescale: bool, target_rate: str | None) -> None:
    if rescale or target_rate:
        raise BadInput("chooses one job's parallelism; with several --profile the jobs are placed at their profiled "
                       "parallelism: plan without --rescale", field="--rescale")


def run_jobs(inventory_path: str, profile_path: tuple[str, ...], out_dir: str, solver: str, time_limit: float,
             gap: float, objective: str | None, mode: str | None, rate_scale: float, rescale: bool,
             target_rate: str | None, compare: bool, as_json: bool, method: str = "auto", max_rate: bool = False,
             add_host: tuple[str, ...] = (), link: tuple[str, ...] = (), verbose: bool = False, quiet: bool = False,
             strict: bool = False, running: tuple[str, ...] = (), cluster: ClusterRead | None = None,
             job_rate_scales: dict[str, float] | None = None, contingency: str = "on") -> None:
    """``placement plan`` with several profiles (see the module doc); ``job_rate_scales``: job -> its own rate scale
    (``--rate-scale JOB=X``), the others at ``rate_scale``."""
    job_scales = dict(job_rate_scales or {})
    _check_options(rescale, target_rate)
    capacity_plan.check_options(max_rate, False, rate_scale, method, per_job=bool(job_scales))
    inv = load_inventory(inventory_path)
    profiles = [load_profile(p) for p in profile_path]
    check_writable(Path(out_dir))
    inv, whatif_notes = _whatif(inv, profiles, add_host, link)
    names = unique_names([p.job.name for p in profiles])
    _check_job_scales(job_scales, names)
    dirs = dict(zip(names, dir_names(names)))
    runs = running_load(running, cluster, inv, names, inventory_path)
    options = SolverOptions(solver=solver, time_limit=time_limit, gap=gap, objective=objective,  # type: ignore[arg-type]
                            verbose=verbose)
    placement_mode = mode or inv.flink.placement_mode
    policies = job_policies(inv, [(name, p.job.name) for name, p in zip(names, profiles)])
    if not max_rate:
        check_rate_scale(policies, rate_scale, job_scales)
    build = _joint_builder(inv, profiles, names, runs, placement_mode=placement_mode, inventory_source=inventory_path,
                           policies=policies, job_scales=job_scales)
    joint = build(rate_scale)
    # the inventory's job block is one job's submission: a job with neither it nor a jobs: entry would be
    # resubmitted (redeploy.sh, apply) as that job — said as for one job
    warnings = [w for p in profiles for w in input_warnings(inv, p, inventory_path, link)]
    warnings += [f"--profile {path}: job {p.job.name!r} is planned more than once (this copy as {name!r}): each copy's "
                 "plan.json names the same Flink job, so apply can run only one of them"
                 for path, p, name in zip(profile_path, profiles, names) if name != p.job.name]
    report_warnings([*dict.fromkeys(warnings), *runs.warnings,
                     *(f"{inventory_path}: {w}" for w in joint.problem.input_warnings)], strict=strict)
    capped = None
    if max_rate:  # every job's rates scaled together; running jobs stay as they are
        capped = _max_rate(build, options, method, policies)
        if capped.problem is not None:
            joint = build(capped.capacity.scale)  # type: ignore[arg-type]
            whatif_notes = [*whatif_notes, *_held_at_minimum(joint)]
    problem = joint.problem
    result = capped.result if capped is not None and capped.result is not None else \
        solve_with(problem, options, method)  # type: ignore[arg-type]
    parts = _per_job(joint, result)
    contingencies = contingency_plan.plan_for(problem, result, options, method, placement_mode) \
        if contingency != "off" else ()
    contingency_plan.require(contingencies, contingency == "required")
    others = [in_sequence(joint, options, method), each_alone(joint, options, method),  # type: ignore[arg-type]
              all_jobs_on_server(joint)] if compare else []

    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 140)
    if not as_json and not quiet:
        _print(console, inv, joint, runs, result, parts, others, whatif_notes, capped)
        contingency_plan.print_all(console, problem, contingencies, placement_mode, contingency)

    budgets = _budgets(joint, parts)
    summary: dict = {"jobs": [{"job": n, "dir": dirs[n], **_budget_json(budgets.get(n))} for n in names],
                     "inventory": inv.name,
                     "results": [_result_json(result, parts)],
                     "running": running_json(runs), **({"running_notes": runs.notes} if runs.notes else {})}
    if compare:
        summary["compare"] = [_one_by_one_json(o) for o in others]
    if capped is not None:
        summary["max_rate"] = capped.json()
    if whatif_notes:
        summary["what_if"] = whatif_notes
    if contingencies:
        summary["contingencies"] = contingency_plan.summary(contingencies)
    if result.assignment is not None:
        written = _write(Path(out_dir), inv, inventory_path, profile_path, profiles, joint, result, parts, budgets,
                         dirs, runs, placement_mode, [*whatif_notes, *joint.problem.warnings, *result.notes],
                         summary.get("compare"), contingencies)
        summary["out"] = [str(p) for p in written]
        if not as_json and not quiet:
            console.print(f"wrote {', '.join(f'{dirs[n]}/' for n in names)}, fleet.json and the fleet picture to "
                          f"{out_dir}")
    plan_tables.finish(summary, result, as_json)


def _max_rate(build, options: SolverOptions, method: str, policies: dict[str, JobPolicy]) -> capacity_plan.MaxRate:
    """``--max-rate`` over the jobs scaled together, each held at its ``min_rate_scale`` at least; when even the
    minima do not fit, the error names them."""
    minima = ", ".join(f"{name} {p.min_rate_scale:g}" for name, p in policies.items() if p.min_rate_scale is not None)
    try:
        return capacity_plan.max_rate_of(lambda x: build(x).problem, options=options,
                                         method=method)  # type: ignore[arg-type]
    except Infeasible as exc:
        if not minima:
            raise
        raise Infeasible(f"{exc} (with the jobs' budget.min_rate_scale held: {minima})") from exc


def _per_job(joint: JointProblem, result: PlanResult) -> dict[str, PlanResult]:
    """Each job's part of the joint plan as a result of its own: its assignment, its own evaluation (paths queued
    behind every job's traffic, :func:`job_costs`), the joint solve's status and stages (the proof is of the joint
    plan)."""
    if result.assignment is None:
        return {}
    split = joint.split(result.assignment)
    costs = job_costs(joint, result.assignment, result.cost)
    return {job.name: replace(result, assignment=split[job.name], cost=costs[job.name]) for job in joint.jobs}


def _result_json(r: PlanResult, parts: dict[str, PlanResult]) -> dict:
    out: dict = {"strategy": "joint", "status": r.status, "reason": r.reason}
    if r.cost is not None:
        out.update(wan_mbit=r.cost.wan_mbit, server_cores=r.cost.server_cores, edge_cores=r.cost.edge_cores,
                   latency_ms=r.cost.latency_ms, feasible=r.cost.feasible,
                   links={link.name: link.mbit for link in r.cost.links},
                   jobs={name: _cost_json(p.cost) for name, p in parts.items() if p.cost is not None})
    if r.shortages:
        out["shortages"] = [{"kind": s.kind, "resource": s.resource, "needed": s.needed, "usable": s.usable,
                             "capacity": s.capacity, "message": s.message} for s in r.shortages]
    if r.causes:
        out["causes"] = list(r.causes)
    return out


def _cost_json(c: PlanCost) -> dict:
    return {"wan_mbit": c.wan_mbit, "server_cores": c.server_cores, "edge_cores": c.edge_cores,
            "latency_ms": c.latency_ms, "links": {link.name: link.mbit for link in c.links}}


def _one_by_one_json(o: OneByOne) -> dict:
    out: dict = {"strategy": o.strategy, **({"order": list(o.order)} if o.order else {}), "feasible": o.feasible,
                 "failed": o.failed, "reason": o.reason or None,
                 "jobs": {name: {"status": r.status, **(_cost_json(r.cost) if r.cost is not None else {})}
                          for name, r in o.results.items()}}
    if o.cost is not None:
        out.update(wan_mbit=o.cost.wan_mbit, server_cores=o.cost.server_cores, latency_ms=o.cost.latency_ms,
                   links={link.name: link.mbit for link in o.cost.links}, violations=list(o.cost.violations))
    return out


def _write(out: Path, inv: Inventory, inventory_path: str, profile_paths: tuple[str, ...], profiles: list[JobProfile],
           joint: JointProblem, result: PlanResult, parts: dict[str, PlanResult],
           budgets: dict[str, JobBudgetRecord | None], dirs: dict[str, str], runs: RunningPlans, placement_mode: str,
           notes: list[str], compare: list[dict] | None, contingencies=()) -> list[Path]:
    inventory = SourceRef(path=inventory_path, digest=inv.digest(), name=inv.name)
    refs = {job.name: SourceRef(path=path, digest=p.digest(), name=p.job.name)
            for job, path, p in zip(joint.jobs, profile_paths, profiles)}
    artifacts = {}
    for job, p in zip(joint.jobs, profiles):
        mine = [n[len(job.name) + 2:] for n in notes if n.startswith(f"{job.name}: ")]  # its own notes, as alone
        # job: the profile's name, what apply matches the running job by (not the name made unique for the fleet)
        together = (f"planned together with {', '.join(j.name for j in joint.jobs if j is not job)} (../fleet.json): "
                    "the solver's stages and gap are the joint model's, the objective, links and hosts this job's")
        mine.append(together)
        doc = build_plan_document(job.problem, parts[job.name], job=p.job.name,
                                  placement_mode=placement_mode, inventory=inventory,  # type: ignore[arg-type]
                                  profile=refs[job.name], budget=budgets[job.name],
                                  contingencies=contingency_plan.job_records(
                                      job.problem, parts[job.name].assignment, contingencies, joint.split, job.name),
                                  warnings=mine + [n for n in notes if not any(n.startswith(f"{j.name}: ")
                                                                               for j in joint.jobs)])
        artifacts[dirs[job.name]] = render_artifacts(job.problem, doc, inv)
    fleet = build_fleet_document(
        joint, result, {name: p.cost for name, p in parts.items() if p.cost is not None}, dirs=dirs,
        inventory=inventory, profiles=refs, running=[RunningJob(job=j, plan=p) for j, p in runs.jobs],
        warnings=notes, compare=compare, budgets=budgets)
    title = (f"{', '.join(j.name for j in joint.jobs)}: {result.cost.wan_mbit:.2f} Mbit/s over the WAN "  # type: ignore[union-attr]
             f"({result.status})")
    lines = contingency_lines(contingency_plan.records(joint.problem, result.assignment, contingencies) or ())  # type: ignore[arg-type]
    bundle = render_fleet_artifacts(artifacts, render_fleet_json(fleet), joint.problem, result.assignment, title,  # type: ignore[arg-type]
                                    lines)
    return write_fleet_dir(out, bundle)


def _budgets(joint: JointProblem, parts: dict[str, PlanResult]) -> dict[str, JobBudgetRecord | None]:
    """Each job's priority and budget with its use of them (None for a job that sets neither); {} with no plan."""
    return {job.name: budget_record(joint.problem.job_policies.get(job.name), job.problem, part.cost)
            for job in joint.jobs if (part := parts.get(job.name)) is not None and part.cost is not None}


def _budget_json(record: JobBudgetRecord | None) -> dict:
    return {"budget": record.model_dump(mode="json")} if record is not None else {}


def _print(console: Console, inv: Inventory, joint: JointProblem, runs: RunningPlans, result: PlanResult,
           parts: dict[str, PlanResult], others: list[OneByOne], whatif_notes: list[str], capped) -> None:
    problem = joint.problem
    console.print(f"[bold]{len(joint.jobs)} jobs[/] ({escape(', '.join(j.name for j in joint.jobs))}) on "
                  f"[bold]{inv.name}[/] — {len(problem.subtasks)} subtasks, {len(problem.hosts)} hosts")
    plan_tables.print_preamble(console, problem, runs.jobs, [*whatif_notes, *runs.notes], capped)
    plan_tables.print_outcome(console, result)
    if result.cost is not None:
        scales = {job.name: job.problem.rate_scale for job in joint.jobs}
        if len(set(scales.values())) == 1:  # one scale for the set: the preamble says it
            scales = {}
        print_table(console, jobs_tables.jobs_table(parts, problem, scales))
        print_table(console, jobs_tables.shared_links_table(problem, result.cost, parts))
        print_table(console, plan_tables.hosts_table(result))
        print_table(console, plan_tables.placement_table(problem, result))
    if others:
        print_table(console, jobs_tables.compare_jobs_table(problem, result, parts, others))
        for o in others[:2]:  # all on server: its violations are the table's "no"
            if o.failed:
                console.print(f"{o.strategy}: {escape(o.failed)} does not fit: {escape(o.reason)}", overflow="ignore",
                              crop=False)
            elif o.cost is not None and not o.cost.feasible:
                console.print(f"{o.strategy}: the plans together oversubscribe: {escape(o.cost.violations[0])}"
                              + (f" (and {len(o.cost.violations) - 1} more)" if len(o.cost.violations) > 1 else ""),
                              overflow="ignore", crop=False)

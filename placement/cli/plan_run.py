"""What ``placement plan`` does once its options are parsed: load, solve, print, write the plan directory.

Kept apart from :mod:`placement.cli.plan_cmd` (the options) so that ``placement plan --help`` and a mistyped option
answer without importing the solver, networkx and the writers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from placement.cli import capacity_plan, contingency_plan, plan_tables, rescale_plan
from placement.cli.fit import print_table
from placement.cli.plan_notes import alone_policy_notes, input_warnings, report_warnings
from placement.cli.running_cluster import ClusterRead, running_load
from placement.cli.running_plans import running_json
from placement.costmodel.model import PlanOptions, build_problem
from placement.costmodel.running import with_running
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.profile.format import load_profile
from placement.solver import PlanResult, SolverOptions
from placement.solver.baselines import all_on_server, greedy
from placement.solver.methods import solve_with
from placement.writers.bundle import render_artifacts, write_plan_dir
from placement.writers.planjson import SourceRef, build_plan_document
from placement.writers.plandir import check_writable


def _result_json(r: PlanResult) -> dict:
    out: dict = {"strategy": r.strategy, "status": r.status, "reason": r.reason}
    if r.cost is not None:
        out.update(wan_mbit=r.cost.wan_mbit, server_cores=r.cost.server_cores, edge_cores=r.cost.edge_cores,
                   latency_ms=r.cost.latency_ms, feasible=r.cost.feasible,
                   links={link.name: link.mbit for link in r.cost.links})
        if r.cost.paths:
            worst = r.cost.worst_path
            finite = lambda x: x if math.isfinite(x) else None  # noqa: E731 (JSON has no infinity: null, saturated)
            # the upper bound under the keys they always had; the expected figure beside it
            out.update(worst_path_ms=finite(worst.latency_ms), worst_path=worst.name,
                       worst_path_expected_ms=finite(worst.expected_ms),
                       paths={p.name: finite(p.latency_ms) for p in r.cost.paths},
                       paths_expected={p.name: finite(p.expected_ms) for p in r.cost.paths})
    if r.shortages:
        out["shortages"] = [{"kind": s.kind, "resource": s.resource, "needed": s.needed, "usable": s.usable,
                             "capacity": s.capacity, "message": s.message} for s in r.shortages]
    if r.causes:
        out["causes"] = list(r.causes)
    return out


def run_plan(inventory_path: str, profile_path: str, out_dir: str, solver: str, time_limit: float, gap: float,
             objective: str | None, mode: str | None, rate_scale: float, rescale: bool, target_rate: str | None,
             compare: bool, as_json: bool, method: str = "auto", max_rate: bool = False,
             add_host: tuple[str, ...] = (), link: tuple[str, ...] = (), verbose: bool = False, quiet: bool = False,
             strict: bool = False, running: tuple[str, ...] = (), cluster: ClusterRead | None = None,
             contingency: str = "on") -> None:
    """``placement plan`` with its parsed options (see :func:`placement.cli.plan_cmd.plan`)."""
    rescale_plan.check_options(rescale, target_rate)
    if rescale and (running or cluster):
        raise BadInput("chooses parallelism against the whole fleet's capacities; plan without --rescale around "
                       "running jobs", field="--running" if running else "--running-cluster")
    capacity_plan.check_options(max_rate, rescale, rate_scale, method)
    inv = load_inventory(inventory_path)
    profile = load_profile(profile_path)
    check_writable(Path(out_dir))  # before solving: an unwritable --out is bad input, not a traceback after the tables
    inv, whatif_notes = capacity_plan.whatif(inv, profile, add_host, link)
    notes = alone_policy_notes(inv, profile.job.name)  # said with the plan, beside the what-if's
    options = SolverOptions(solver=solver, time_limit=time_limit, gap=gap, objective=objective,  # type: ignore[arg-type]
                            verbose=verbose)
    placement_mode = mode or inv.flink.placement_mode  # vanilla mode keeps operators after the source chain whole
    # the problem at the asked scale, built before any solve: its pins' warnings come before the work (--strict)
    runs = running_load(running, cluster, inv, [profile.job.name], inventory_path)  # jobs that keep running: fixed load
    problem = with_running(build_problem(inv, profile, PlanOptions(rate_scale=rate_scale, placement_mode=placement_mode),
                                         inventory_source=inventory_path, other_jobs=runs.vertices), runs.uses)
    report_warnings([*input_warnings(inv, profile, inventory_path, link), *runs.warnings,
                     *(f"{inventory_path}: {w}" for w in problem.input_warnings)], strict=strict)
    if problem.latency_bounds and (rescale or max_rate):  # only the exact model and --method exact/auto have the rows
        raise BadInput(f"{'--rescale' if rescale else '--max-rate'} does not honour a latency bound yet: plan without it, "
                       "or drop policy.max_latency_ms", source=inventory_path, field="policy.max_latency_ms")
    rescaled = capped = None
    if rescale:
        rescaled = rescale_plan.plan_rescaled(inv, profile, inventory_source=inventory_path, rate_scale=rate_scale,
                                              target_rate=target_rate, options=options, compare=compare,
                                              placement_mode=placement_mode)
        problem, result, results = rescaled.problem, rescaled.joint.plan, rescaled.results
    else:
        capped = capacity_plan.plan_max_rate(inv, profile, placement_mode=placement_mode, inventory_source=inventory_path,
                                             options=options, method=method,  # type: ignore[arg-type]
                                             running=runs.uses, other_jobs=runs.vertices) if max_rate else None
        if capped is not None and capped.problem is not None and capped.result is not None:
            problem, result = capped.problem, capped.result
        else:
            result = solve_with(problem, options, method)  # type: ignore[arg-type]
        results = [result, all_on_server(problem), greedy(problem)] if compare else [result]
    contingencies = contingency_plan.plan_for(problem, result, options, method, placement_mode) \
        if contingency != "off" else ()
    contingency_plan.require(contingencies, contingency == "required")
    # wide enough for the comparison table when output goes to a file or CI log
    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 140)

    if not as_json and not quiet:
        console.print(f"[bold]{profile.job.name}[/] on [bold]{inv.name}[/] — {len(problem.subtasks)} subtasks, "
                      f"{len(problem.hosts)} hosts")
        plan_tables.print_preamble(console, problem, runs.jobs, [*whatif_notes, *notes, *runs.notes], capped)
        if rescaled:
            console.print(escape(rescale_plan.targets_line(rescaled.space)), overflow="ignore", crop=False)
        plan_tables.print_outcome(console, result)
        if result.cost is not None:
            print_table(console, plan_tables.links_table(result))
            print_table(console, plan_tables.hosts_table(result))
            if result.cost.paths:
                print_table(console, plan_tables.paths_table(result))
            print_table(console, plan_tables.placement_table(problem, result))
            contingency_plan.print_all(console, problem, contingencies, placement_mode, contingency)
        if rescaled:
            print_table(console, rescale_plan.parallelism_table(rescaled))
        if compare:
            print_table(console, plan_tables.compare_table(problem, results))

    summary: dict = {"job": profile.job.name, "inventory": inv.name, "results": [_result_json(r) for r in results]}
    if rescaled:
        summary["parallelism"] = rescale_plan.result_parallelism(rescaled)
    if capped is not None:
        summary["max_rate"] = capped.json()
    if whatif_notes:
        summary["what_if"] = whatif_notes
    if runs.jobs:
        summary["running"] = running_json(runs)
    if runs.notes:
        summary["running_notes"] = runs.notes
    if contingencies:
        summary["contingencies"] = contingency_plan.summary(contingencies)
    if result.assignment is not None:
        doc = build_plan_document(
            problem, result, job=profile.job.name, placement_mode=placement_mode,  # type: ignore[arg-type]
            inventory=SourceRef(path=inventory_path, digest=inv.digest(), name=inv.name),
            profile=SourceRef(path=profile_path, digest=profile.digest(), name=profile.job.name),
            warnings=whatif_notes + notes + list(problem.warnings) + list(result.notes),
            rescale=rescaled.info() if rescaled else None,
            contingencies=contingency_plan.records(problem, result.assignment, contingencies),
        )
        artifacts = render_artifacts(problem, doc, inv)
        written = write_plan_dir(Path(out_dir), artifacts)
        summary["out"] = [str(p) for p in written]
        if not as_json and not quiet:
            for w in artifacts.warnings:
                console.print(f"[yellow]warning: {escape(w)}[/]")
            console.print(f"wrote {', '.join(p.name for p in written)} to {out_dir}")
    plan_tables.finish(summary, result, as_json)

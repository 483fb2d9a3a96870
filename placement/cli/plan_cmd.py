"""``placement plan``: inventory + profile -> optimal placement and its artifacts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from placement.cli import capacity_plan, plan_tables, rescale_plan
from placement.costmodel.model import PlanOptions, build_problem
from placement.errors import EXIT_INFEASIBLE, Infeasible
from placement.inventory import load_inventory
from placement.profile.format import load_profile
from placement.solver import PlanResult, SolverOptions
from placement.solver.baselines import all_on_server, greedy
from placement.solver.methods import solve_with
from placement.writers.bundle import render_artifacts, write_plan_dir
from placement.writers.planjson import SourceRef, build_plan_document


def _result_json(r: PlanResult) -> dict:
    out: dict = {"strategy": r.strategy, "status": r.status, "reason": r.reason}
    if r.cost is not None:
        out.update(wan_mbit=r.cost.wan_mbit, server_cores=r.cost.server_cores, edge_cores=r.cost.edge_cores,
                   latency_ms=r.cost.latency_ms, feasible=r.cost.feasible,
                   links={link.name: link.mbit for link in r.cost.links})
    if r.shortages:
        out["shortages"] = [{"kind": s.kind, "resource": s.resource, "needed": s.needed, "usable": s.usable,
                             "capacity": s.capacity, "message": s.message} for s in r.shortages]
    if r.causes:
        out["causes"] = list(r.causes)
    return out


@click.command()
@click.option("--inventory", "inventory_path", required=True, type=click.Path(dir_okay=False),
              help="inventory YAML (inventory/README.md)")
@click.option("--profile", "profile_path", required=True, type=click.Path(dir_okay=False),
              help="job profile JSON (examples/profiles/README.md)")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="directory for the plan files")
@click.option("--solver", type=click.Choice(["highs", "cbc"]), default="highs", show_default=True,
              help="MILP solver; highs falls back to cbc when it is unavailable")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="seconds for all solver stages together")
@click.option("--gap", type=click.FloatRange(min=0, max=1, max_open=True), default=1e-4, show_default=True,
              help="relative MIP gap at which a stage counts as solved")
@click.option("--objective", type=click.Choice(["lexicographic", "weighted"]), default=None,
              help="override the inventory policy's objective")
@click.option("--mode", type=click.Choice(["custom", "vanilla"]), default=None,
              help="override flink.placement_mode of the inventory")
@click.option("--rate-scale", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="plan for this multiple of the profiled rates")
@click.option("--rescale", is_flag=True,
              help="choose every operator's parallelism together with the placement, for the target rate "
                   "(--rate-scale or --target-rate)")
@click.option("--target-rate", default=None, metavar='"SOURCE=records/s,..."',
              help="with --rescale: target records/s per source vertex (others: --rate-scale × measured)")
@click.option("--compare", is_flag=True,
              help="also evaluate all-on-server and the greedy heuristic (with --rescale: placement alone at today's "
                   "parallelism, and DS2's parallelism then placement)")
@click.option("--method", type=click.Choice(["auto", "exact", "decompose"]), default="auto", show_default=True,
              help="exact model, or the fleet decomposition (Pi-local model over server pools); auto: decompose "
                   "above 5000 subtasks or 500 hosts")
@click.option("--max-rate", is_flag=True,
              help="find the highest uniform scale of the profiled source rates that fits, what runs out first, "
                   "and the plan at that scale")
@click.option("--add-host", multiple=True, metavar="TEMPLATE=N",
              help="what-if: N more hosts like TEMPLATE (a host, or a model such as rpi4b); the file is not changed")
@click.option("--link", multiple=True, metavar="HOST:BANDWIDTH[:DELAY]",
              help="what-if: an edge host's uplink at another bandwidth (and delay), e.g. rpi1:10mbit")
@click.option("--json", "as_json", is_flag=True, help="machine-readable summary on stdout instead of tables")
@click.option("--verbose", is_flag=True, help="show the solver's own log (on stderr, so --json stays JSON)")
def plan(inventory_path: str, profile_path: str, out_dir: str, solver: str, time_limit: float, gap: float,
         objective: str | None, mode: str | None, rate_scale: float, rescale: bool, target_rate: str | None,
         compare: bool, as_json: bool, method: str = "auto", max_rate: bool = False, add_host: tuple[str, ...] = (),
         link: tuple[str, ...] = (), verbose: bool = False) -> None:
    """Place a job's subtasks on the inventory's hosts, optimally, and write the plan directory.

    Writes OUT/plan.json, OUT/schedulercfg, OUT/redeploy.sh, OUT/placement.json and OUT/plan.{svg,png,dot}.
    Exit codes: 0 placed, 2 bad input, 3 no placement fits (the shortfall is named).
    """
    rescale_plan.check_options(rescale, target_rate)
    capacity_plan.check_options(max_rate, rescale, rate_scale, method)
    inv = load_inventory(inventory_path)
    profile = load_profile(profile_path)
    inv, whatif_notes = capacity_plan.whatif(inv, profile, add_host, link)
    options = SolverOptions(solver=solver, time_limit=time_limit, gap=gap, objective=objective,  # type: ignore[arg-type]
                            verbose=verbose)
    placement_mode = mode or inv.flink.placement_mode  # vanilla mode keeps operators after the source chain whole
    rescaled = capped = None
    if rescale:
        rescaled = rescale_plan.plan_rescaled(inv, profile, inventory_source=inventory_path, rate_scale=rate_scale,
                                              target_rate=target_rate, options=options, compare=compare,
                                              placement_mode=placement_mode)
        problem, result, results = rescaled.problem, rescaled.joint.plan, rescaled.results
    else:
        capped = capacity_plan.plan_max_rate(inv, profile, placement_mode=placement_mode, inventory_source=inventory_path,
                                             options=options, method=method) if max_rate else None  # type: ignore[arg-type]
        if capped is not None and capped.problem is not None and capped.result is not None:
            problem, result = capped.problem, capped.result
        else:
            problem = build_problem(inv, profile, PlanOptions(rate_scale=rate_scale, placement_mode=placement_mode),
                                    inventory_source=inventory_path)
            result = solve_with(problem, options, method)  # type: ignore[arg-type]
        results = [result, all_on_server(problem), greedy(problem)] if compare else [result]
    # wide enough for the comparison table when output goes to a file or CI log
    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 140)

    if not as_json:
        console.print(f"[bold]{profile.job.name}[/] on [bold]{inv.name}[/] — {len(problem.subtasks)} subtasks, "
                      f"{len(problem.hosts)} hosts")
        for w in [*whatif_notes, *problem.warnings]:  # escape(): vertex names such as "Writer[out_t]" are not markup
            console.print(f"[dim]note: {escape(w)}[/]", overflow="ignore", crop=False)
        if capped is not None:
            console.print(escape(capped.line), overflow="ignore", crop=False)
        if rescaled:
            console.print(escape(rescale_plan.targets_line(rescaled.space)), overflow="ignore", crop=False)
        console.print(plan_tables.summary_line(result))
        for note in result.notes:
            console.print(f"[dim]note: {escape(note)}[/]")
        if result.shortages:
            console.print(plan_tables.shortfalls_table(result))
        for cause in result.causes:
            console.print(f"why: {escape(cause)}", overflow="ignore", crop=False)
        if result.cost is not None:
            console.print(plan_tables.links_table(result))
            console.print(plan_tables.hosts_table(result))
            console.print(plan_tables.placement_table(problem, result))
        if rescaled:
            console.print(rescale_plan.parallelism_table(rescaled))
        if compare:
            console.print(plan_tables.compare_table(problem, results))

    summary: dict = {"job": profile.job.name, "inventory": inv.name, "results": [_result_json(r) for r in results]}
    if rescaled:
        summary["parallelism"] = rescale_plan.result_parallelism(rescaled)
    if capped is not None:
        summary["max_rate"] = capped.json()
    if whatif_notes:
        summary["what_if"] = whatif_notes
    if result.assignment is not None:
        doc = build_plan_document(
            problem, result, job=profile.job.name, placement_mode=placement_mode,  # type: ignore[arg-type]
            inventory=SourceRef(path=inventory_path, digest=inv.digest(), name=inv.name),
            profile=SourceRef(path=profile_path, digest=profile.digest(), name=profile.job.name),
            warnings=whatif_notes + list(problem.warnings) + list(result.notes),
            rescale=rescaled.info() if rescaled else None,
        )
        artifacts = render_artifacts(problem, doc, inv)
        written = write_plan_dir(Path(out_dir), artifacts)
        summary["out"] = [str(p) for p in written]
        if not as_json:
            for w in artifacts.warnings:
                console.print(f"[yellow]warning: {escape(w)}[/]")
            console.print(f"wrote {', '.join(p.name for p in written)} to {out_dir}")
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    if result.status == "infeasible":
        if as_json:
            sys.exit(EXIT_INFEASIBLE)
        raise Infeasible(plan_tables.infeasible_error(result))
